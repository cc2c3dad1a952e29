"""Benchmark: one training step of a small ResNet, burnpy vs torch CPU eager, steps/s.

A CIFAR-style ResNet on 32x32x3 inputs, batch 32, float32: a 3x3 conv stem (16 channels),
BatchNorm and ReLU, a 2x2 max pool, then three stages of two basic blocks each (16, 32,
64 channels; the first block of the 2nd and 3rd has stride 2 and a 1x1 conv + BatchNorm
shortcut): conv-bn-relu-conv-bn, the residual added, ReLU. A global average pool, dropout 0.2
and a linear classifier to 10 classes; cross entropy; SGD with momentum. The same weights in
both (torch's initialisation copied into burnpy), training mode. Steps alternate burnpy /
torch (the order rotating each round); medians of the timed steps; one BLAS/OpenMP thread.
Prints steps/s, the ratio (target >= 1.0) and minor page faults per step.
Run: ``.venv/bin/python benchmarks/resnet_step.py``.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import functools  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402

import _timing  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

import burnpy.nn as nn  # noqa: E402
import burnpy.nn.functional as F  # noqa: E402
from burnpy import Tensor, optim  # noqa: E402
from burnpy.autodiff import Autodiff  # noqa: E402
from burnpy_cpu import CpuBackend  # noqa: E402

BATCH, SIZE, CLASSES = 32, 32, 10
WIDTHS = (16, 32, 64)
BLOCKS = 2
LR, MOMENTUM = 0.05, 0.9
B = Autodiff(CpuBackend)


def _layout() -> list[tuple[int, int, int]]:
    """``(in_channels, out_channels, stride)`` of every block, stage by stage."""
    blocks, c_in = [], WIDTHS[0]
    for stage, width in enumerate(WIDTHS):
        for i in range(BLOCKS):
            blocks.append((c_in, width, 2 if stage and not i else 1))
            c_in = width
    return blocks


class Block(nn.Module):
    """Basic residual block: conv-bn-relu-conv-bn plus the (projected) input, then ReLU."""

    def __init__(self, c_in: int, c_out: int, stride: int) -> None:
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False, backend=B)
        self.bn1 = nn.BatchNorm2d(c_out, backend=B)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, padding=1, bias=False, backend=B)
        self.bn2 = nn.BatchNorm2d(c_out, backend=B)
        self.proj = (nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride=stride, bias=False, backend=B),
                                   nn.BatchNorm2d(c_out, backend=B))
                     if stride != 1 or c_in != c_out else None)

    def forward(self, x: Tensor) -> Tensor:
        y = self.bn2(self.conv2(self.bn1(self.conv1(x)).relu()))
        return (y + (x if self.proj is None else self.proj(x))).relu()


class ResNet(nn.Module):
    """Stem, max pool, three residual stages, global average pool, dropout, linear."""

    def __init__(self) -> None:
        self.stem = nn.Conv2d(3, WIDTHS[0], 3, padding=1, bias=False, backend=B)
        self.bn = nn.BatchNorm2d(WIDTHS[0], backend=B)
        self.pool = nn.MaxPool2d(2)
        self.stages = nn.Sequential(*(Block(c_in, c_out, stride) for c_in, c_out, stride
                                      in _layout()))
        self.avg = nn.AdaptiveAvgPool2d(1)
        self.dropout = nn.Dropout(0.2)
        self.fc = nn.Linear(WIDTHS[-1], CLASSES, backend=B)

    def forward(self, x: Tensor) -> Tensor:
        x = self.pool(self.bn(self.stem(x)).relu())
        x = self.avg(self.stages(x)).flatten(1)
        return self.fc(self.dropout(x))


class TorchBlock(torch.nn.Module):
    """The same block in torch."""

    def __init__(self, c_in: int, c_out: int, stride: int) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(c_out)
        self.conv2 = torch.nn.Conv2d(c_out, c_out, 3, padding=1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(c_out)
        self.proj = (torch.nn.Sequential(torch.nn.Conv2d(c_in, c_out, 1, stride=stride,
                                                         bias=False),
                                         torch.nn.BatchNorm2d(c_out))
                     if stride != 1 or c_in != c_out else None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.bn2(self.conv2(self.bn1(self.conv1(x)).relu()))
        return (y + (x if self.proj is None else self.proj(x))).relu()


class TorchResNet(torch.nn.Module):
    """The same network in torch."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = torch.nn.Conv2d(3, WIDTHS[0], 3, padding=1, bias=False)
        self.bn = torch.nn.BatchNorm2d(WIDTHS[0])
        self.pool = torch.nn.MaxPool2d(2)
        self.stages = torch.nn.Sequential(*(TorchBlock(c_in, c_out, stride)
                                            for c_in, c_out, stride in _layout()))
        self.avg = torch.nn.AdaptiveAvgPool2d(1)
        self.dropout = torch.nn.Dropout(0.2)
        self.fc = torch.nn.Linear(WIDTHS[-1], CLASSES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(self.bn(self.stem(x)).relu())
        x = self.avg(self.stages(x)).flatten(1)
        return self.fc(self.dropout(x))


Batch = tuple[np.ndarray, np.ndarray]


def burnpy_step(model: ResNet) -> Callable[[Batch], float]:
    """Forward, cross entropy, backward and an SGD-with-momentum update on burnpy."""
    opt = optim.SGD(lr=LR, momentum=MOMENTUM)

    def step(batch: Batch) -> float:
        x = Tensor.from_data(batch[0], backend=B)
        y = Tensor.from_data(batch[1], backend=B)
        loss = F.cross_entropy(model(x), y)
        opt.step(model, loss.backward())
        return loss.item()

    return step


def torch_step(model: TorchResNet) -> Callable[[Batch], float]:
    """The same step in torch eager mode."""
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)

    def step(batch: Batch) -> float:
        x, y = torch.from_numpy(batch[0]), torch.from_numpy(batch[1])
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30, help="timed steps per contender")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    theirs = TorchResNet()
    ours = ResNet()
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    rng = np.random.default_rng(0)
    batches = [(rng.standard_normal((BATCH, 3, SIZE, SIZE), dtype=np.float32),
                rng.integers(0, CLASSES, BATCH)) for _ in range(4)]
    # Same weights: the eval-mode logits agree (dropout masks differ, so checked in eval).
    ours.eval()
    theirs.eval()
    x0 = batches[0][0]
    with torch.no_grad():
        ref = theirs(torch.from_numpy(x0)).numpy()
    got = ours(Tensor.from_data(x0, backend=B)).to_numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)
    ours.train()
    theirs.train()
    steps = {"burnpy": burnpy_step(ours), "torch": torch_step(theirs)}
    for step in steps.values():
        for batch in batches[:3]:
            step(batch)
    times: dict[str, list[float]] = {name: [] for name in steps}
    names = list(steps)
    for r in range(args.rounds):
        batch = batches[r % len(batches)]
        for name in names[r % 2:] + names[:r % 2]:
            start = time.perf_counter()
            steps[name](batch)
            times[name].append(time.perf_counter() - start)
    med = {name: statistics.median(t) for name, t in times.items()}
    print(f"ResNet {'/'.join(map(str, WIDTHS))} on {SIZE}x{SIZE}x3, batch {BATCH}, SGD momentum, "
          f"float32, 1 thread, median of {args.rounds} steps")
    for name, seconds in med.items():
        print(f"  {name:7s} {seconds * 1e3:8.2f} ms/step  {1 / seconds:7.2f} steps/s")
    print(f"  steps/s burnpy / torch: {med['torch'] / med['burnpy']:.2f}x (target >= 1.0); "
          f"{_timing.allocator_note()}")
    for name, step in steps.items():
        faults = _timing.faults_per_call(functools.partial(step, batches[0]), 5)
        print(f"  {name:7s} {faults:8.0f} minor page faults/step")


if __name__ == "__main__":
    main()
