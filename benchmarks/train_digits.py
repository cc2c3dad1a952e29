"""Benchmark: training throughput (samples/s) of the digits demo's CNN, burnpy vs torch CPU.

The model of ``burnpy.examples.digits`` (conv-bn-relu-pool twice, linear, dropout, linear)
with Adam and cross entropy, batch 32 (the demo's default), float32, on the demo's training
split. Each contender runs a few warm-up steps, then timed epochs of steps (forward, loss,
backward, update) over pre-built batches, the two alternating epoch by epoch (the order
rotating) so machine noise hits both alike; the median epoch counts. burnpy runs on
``Autodiff(CpuBackend)``; torch on CPU eager. One BLAS/OpenMP thread for both. Prints
samples/s and the ratio (target >= 1).
Run: ``.venv/bin/python benchmarks/train_digits.py``.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

import burnpy.nn.functional as F  # noqa: E402
from burnpy import Tensor, optim  # noqa: E402
from burnpy.autodiff import Autodiff  # noqa: E402
from burnpy.backend.base import Backend  # noqa: E402
from burnpy.examples.digits import DigitsCNN, digits_splits  # noqa: E402
from burnpy_cpu import CpuBackend  # noqa: E402

WARMUP = 5
LR = 1e-2

Batch = tuple[np.ndarray, np.ndarray]


def _batches(batch_size: int) -> list[Batch]:
    """The training split in shuffled batches (last partial batch dropped)."""
    train = digits_splits(seed=0).train
    order = np.random.default_rng(0).permutation(len(train))
    n = len(train) // batch_size
    return [train.get_batch(order[i * batch_size:(i + 1) * batch_size]) for i in range(n)]


def burnpy_step(inner: type[Backend] = CpuBackend) -> Callable[[Batch], None]:
    """One training step of the demo's CNN on ``Autodiff(inner)`` (the CUDA benchmark passes
    CudaBackend)."""
    backend = Autodiff(inner)
    inner.seed(inner.default_device(), 0)
    model = DigitsCNN(backend=backend)
    opt = optim.Adam(lr=LR)

    def step(batch: Batch) -> None:
        x = Tensor.from_data(batch[0], backend=backend)
        y = Tensor.from_data(batch[1], backend=backend)
        loss = F.cross_entropy(model(x), y)
        opt.step(model, loss.backward())

    return step


class TorchCNN(torch.nn.Module):
    """The same architecture in torch."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 16, 3, padding=1)
        self.bn1 = torch.nn.BatchNorm2d(16)
        self.conv2 = torch.nn.Conv2d(16, 32, 3, padding=1)
        self.bn2 = torch.nn.BatchNorm2d(32)
        self.pool = torch.nn.MaxPool2d(2)
        self.fc1 = torch.nn.Linear(128, 64)
        self.dropout = torch.nn.Dropout(0.2)
        self.fc2 = torch.nn.Linear(64, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(self.bn1(self.conv1(x)).relu())
        x = self.pool(self.bn2(self.conv2(x)).relu())
        return self.fc2(self.dropout(self.fc1(x.flatten(1)).relu()))


def torch_step() -> Callable[[Batch], None]:
    torch.manual_seed(0)
    model = TorchCNN()
    opt = torch.optim.Adam(model.parameters(), lr=LR)

    def step(batch: Batch) -> None:
        x, y = torch.from_numpy(batch[0]), torch.from_numpy(batch[1])
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    return step


def epoch_seconds(step: Callable[[Batch], None], batches: list[Batch]) -> float:
    start = time.perf_counter()
    for batch in batches:
        step(batch)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=9, help="timed epochs per contender")
    args = parser.parse_args()
    torch.set_num_threads(1)
    batches = _batches(args.batch_size)
    steps = {"burnpy": burnpy_step(), "torch": torch_step()}
    times: dict[str, list[float]] = {name: [] for name in steps}
    for step in steps.values():
        for batch in batches[:WARMUP]:
            step(batch)
    names = list(steps)
    for r in range(args.epochs):  # the order rotates: neither always runs on the other's heels
        for name in names[r % 2:] + names[:r % 2]:
            times[name].append(epoch_seconds(steps[name], batches))
    samples = sum(len(b[1]) for b in batches)
    ours, theirs = (samples / statistics.median(times[n]) for n in ("burnpy", "torch"))
    print(f"digits CNN training, batch {args.batch_size}, {len(batches)} steps/epoch, "
          f"median of {args.epochs} epochs, 1 thread")
    print(f"  burnpy Autodiff(CpuBackend): {ours:9.0f} samples/s")
    print(f"  torch CPU:                   {theirs:9.0f} samples/s")
    print(f"  ratio burnpy / torch:        {ours / theirs:9.2f} (target >= 1)")


if __name__ == "__main__":
    main()
