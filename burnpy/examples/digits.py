"""Train a small CNN on scikit-learn's handwritten digits (8x8 images, no download).

``python -m burnpy.examples.digits`` trains on ``Autodiff(CpuBackend)`` with a progress bar,
saves the model, reloads it on ``CpuBackend`` for inference, checks both give the same test
accuracy and writes a training plot. ``--help`` lists the options.

``mpiexec -n 2 python -m burnpy.examples.digits --distributed`` trains data-parallel: each rank
a shard of every epoch (``DistributedSampler``), gradients averaged by
``DistributedDataParallel``; rank 0 reports, evaluates and saves.

``--compile`` builds the model on ``Autodiff(Capture(backend))`` and runs each training step
through ``bp.compile`` (``Learner(compile=True)``): the same numbers, recorded once and
replayed.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

import burnpy.nn as nn
from burnpy import distributed as dist
from burnpy.autodiff import Autodiff, BalancedCheckpointing, NoCheckpointing
from burnpy.backend.errors import InvalidArgumentError
from burnpy.backend.registry import BackendNotFoundError, backend_named
from burnpy.capture import Capture
from burnpy.data import ArrayDataset, DataLoader
from burnpy.fusion import Fusion
from burnpy.optim import Adam, CosineAnnealingLR
from burnpy.quantization import QuantScheme
from burnpy.tensor import Tensor
from burnpy.train import Accuracy, Learner

if TYPE_CHECKING:
    from burnpy.backend.base import Backend

#: The ``--backend`` choices: names of ``burnpy.backends`` entry points.
BACKENDS = ("cpu", "cuda", "wgpu")
CHECKPOINTING = {"none": NoCheckpointing, "balanced": BalancedCheckpointing}


class DigitsCNN(nn.Module):
    """conv-bn(1->16) -> pool -> conv-bn(16->32) -> pool -> linear(128->64) -> linear(64->10)."""

    def __init__(self, *, backend: type[Backend] | None = None, dropout: float = 0.2) -> None:
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1, backend=backend)
        self.bn1 = nn.BatchNorm2d(16, backend=backend)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1, backend=backend)
        self.bn2 = nn.BatchNorm2d(32, backend=backend)
        self.pool = nn.MaxPool2d(2)
        self.fc1 = nn.Linear(32 * 2 * 2, 64, backend=backend)
        self.dropout = nn.Dropout(dropout)
        self.fc2 = nn.Linear(64, 10, backend=backend)

    def forward(self, x: Tensor) -> Tensor:
        """``[batch, 1, 8, 8]`` images -> ``[batch, 10]`` class logits."""
        x = self.pool(self.bn1(self.conv1(x)).relu())
        x = self.pool(self.bn2(self.conv2(x)).relu())
        x = self.fc1(x.flatten(1)).relu()
        return self.fc2(self.dropout(x))


def load_backend(name: str) -> type[Backend]:
    """The backend class for ``--backend``, imported only when asked for."""
    try:
        return backend_named(name)
    except BackendNotFoundError as exc:
        raise SystemExit(f"--backend {name}: {exc}; or use --backend cpu") from None


@dataclass
class Splits:
    train: ArrayDataset
    valid: ArrayDataset
    test: ArrayDataset


def digits_splits(seed: int, limit: int | None = None) -> Splits:
    """Images scaled to [0, 1] as ``[n, 1, 8, 8]`` float32: 20% test, 10% of the rest valid.

    The data set comes with scikit-learn, which only this demo needs (the ``examples`` extra).
    """
    try:
        from sklearn.datasets import load_digits
    except ImportError as exc:
        raise SystemExit("the digits demo needs scikit-learn for its data set: "
                         "pip install 'burnpy[examples]'") from exc

    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)[:, None, :, :]
    labels = digits.target.astype(np.int64)
    data = ArrayDataset(images, labels)
    if limit is not None:
        data = data.subset(np.random.default_rng(seed).permutation(len(data))[:limit])
    rest, test = data.split(0.8, seed)
    train, valid = rest.split(0.9, seed + 1)
    return Splits(train, valid, test)


def test_accuracy(model: nn.Module, test: DataLoader) -> float:
    """Top-1 accuracy of an inference model (on a plain backend) over ``test``."""
    metric = Accuracy()
    backend = model.backend
    if backend is None:
        raise InvalidArgumentError("test_accuracy: the model has no tensors")
    for images, labels in test:
        metric.update(model(images.to_backend(backend)), labels.to_backend(backend))
    return metric.value()


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m burnpy.examples.digits", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", choices=sorted(BACKENDS), default="cpu")
    p.add_argument("--checkpointing", choices=sorted(CHECKPOINTING), default="none",
                   help="autodiff checkpointing strategy (balanced recomputes cheap ops)")
    p.add_argument("--epochs", type=int, default=15)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=1e-2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=Path("runs/digits"),
                   help="folder for the model, checkpoints and plot")
    p.add_argument("--limit", type=int, default=None, help="use only this many samples")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    add_execution_options(p)
    args = p.parse_args(argv)
    check_execution_options(p, args)
    return args


def add_execution_options(p: argparse.ArgumentParser) -> None:
    """How the examples' training runs: ``--distributed``, ``--fusion`` and ``--compile``."""
    p.add_argument("--distributed", action="store_true",
                   help="data-parallel over the ranks of mpiexec (burnpy.distributed)")
    p.add_argument("--fusion", action="store_true",
                   help="run on Fusion(backend): elementwise chains fused into compiled kernels")
    p.add_argument("--compile", action="store_true",
                   help="record the training step once and replay it (bp.compile on "
                        "Autodiff(Capture(backend)))")


def check_execution_options(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse ``--compile`` with ``--distributed`` (``add_execution_options``)."""
    if args.compile and args.distributed:
        p.error("--compile does not combine with --distributed: DDP's all-reduce goes "
                "through the host, outside a recorded graph")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    began = time.perf_counter()
    inner = load_backend(args.backend)
    if args.fusion:
        inner = Fusion(inner)
    if args.compile:
        inner = Capture(inner)
    backend = Autodiff[inner, CHECKPOINTING[args.checkpointing]]
    device = inner.default_device()
    inner.seed(device, args.seed)
    splits = digits_splits(args.seed, args.limit)
    rank, sampler = 0, None
    if args.distributed:
        dist.init_process_group()
        rank = dist.get_rank()
        sampler = dist.DistributedSampler(len(splits.train), seed=args.seed)
    if rank == 0:
        print(f"digits: {len(splits.train)} train, {len(splits.valid)} valid, "
              f"{len(splits.test)} test images; backend {backend.name()}"
              + (f"; {dist.get_world_size()} ranks" if args.distributed else ""))

    model = DigitsCNN(backend=backend)
    trained = dist.DistributedDataParallel(model) if args.distributed else model
    shard = len(splits.train) if sampler is None else len(sampler)
    steps = args.epochs * -(-shard // args.batch_size)
    learner = Learner(trained, Adam(lr=args.lr), scheduler=CosineAnnealingLR(args.lr, steps),
                      metrics=[Accuracy()], checkpoint_dir=args.out / "checkpoints",
                      plot_path=args.out / "training.png", seed=args.seed,
                      progress=not args.no_progress, compile=args.compile)
    train = DataLoader(splits.train, args.batch_size, shuffle=True, seed=args.seed,
                       backend=inner, sampler=sampler)
    valid = DataLoader(splits.valid, 256, backend=inner)
    test = DataLoader(splits.test, 256, backend=inner)
    learner.fit(train, valid, epochs=args.epochs)
    if args.distributed:
        dist.destroy_process_group()
        if rank != 0:
            return 0

    accuracy = test_accuracy(model.valid(), test)
    print(f"test accuracy: {accuracy * 100:.2f}%")
    model_path = model.save(args.out / "digits-cnn.safetensors")
    cpu = load_backend("cpu")
    reloaded = DigitsCNN(backend=cpu).load(model_path).eval()
    reloaded_accuracy = test_accuracy(reloaded, test)
    print(f"reloaded {model_path} on {cpu.name()}: test accuracy "
          f"{reloaded_accuracy * 100:.2f}%")
    if reloaded_accuracy != accuracy:
        print("error: the reloaded model disagrees with the trained one", file=sys.stderr)
        return 1
    int8 = reloaded.quantize_weights(QuantScheme.int8())
    int8_path = int8.save(args.out / "digits-cnn-int8.safetensors")
    print(f"int8 test accuracy: {test_accuracy(int8, test) * 100:.2f}% (weights quantized to "
          f"int8 per tensor, saved to {int8_path})")
    print(f"done in {time.perf_counter() - began:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
