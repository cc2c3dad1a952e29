"""Benchmark: training throughput (samples/s) of the digits demo's CNN on the GPU, burnpy
``Autodiff(CudaBackend)`` vs torch CUDA eager.

``benchmarks/train_digits.py``'s setting on a GPU: the model of ``burnpy.examples.digits``
(conv-bn-relu-pool twice, linear, dropout, linear; conv as im2col + cuBLAS matmul on burnpy's
side, cuDNN on torch's) with Adam and cross entropy, the same pre-built batches, each step
copying its batch to the device as a data loader would. A few warm-up steps, then timed
epochs alternating between the two, each ending when the device is done; the median counts.
Run: ``.venv/bin/python benchmarks/cuda_train_digits.py [--batch-size 32] [--epochs 5]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch
from cuda_timing import Sync, record, require_gpu
from train_digits import LR, WARMUP, Batch, TorchCNN, _batches, burnpy_step

from burnpy_cuda import CudaBackend


def torch_step() -> Callable[[Batch], None]:
    torch.manual_seed(0)
    model = TorchCNN().cuda()
    opt = torch.optim.Adam(model.parameters(), lr=LR)

    def step(batch: Batch) -> None:
        x, y = torch.from_numpy(batch[0]).cuda(), torch.from_numpy(batch[1]).cuda()
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    return step


def epoch_seconds(step: Callable[[Batch], None], sync: Sync, batches: list[Batch]) -> float:
    sync()
    start = time.perf_counter()
    for batch in batches:
        step(batch)
    sync()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=5, help="timed epochs per contender")
    args = parser.parse_args()
    require_gpu("cuda_train_digits")
    device = CudaBackend.default_device()
    batches = _batches(args.batch_size)
    steps: dict[str, tuple[Callable[[Batch], None], Sync]] = {
        "burnpy": (burnpy_step(CudaBackend), lambda: CudaBackend.sync(device)),
        "torch": (torch_step(), torch.cuda.synchronize),
    }
    times: dict[str, list[float]] = {name: [] for name in steps}
    for step, sync in steps.values():
        for batch in batches[:WARMUP]:
            step(batch)
        sync()
    for _ in range(args.epochs):
        for name, (step, sync) in steps.items():
            times[name].append(epoch_seconds(step, sync, batches))
    samples = sum(len(b[1]) for b in batches)
    ours, theirs = (samples / statistics.median(times[n]) for n in ("burnpy", "torch"))
    print(f"digits CNN training on {torch.cuda.get_device_name()}, batch {args.batch_size}, "
          f"{len(batches)} steps/epoch, median of {args.epochs} epochs")
    print(f"  burnpy Autodiff(CudaBackend): {ours:9.0f} samples/s")
    print(f"  torch CUDA:                   {theirs:9.0f} samples/s")
    print(f"  ratio burnpy / torch:         {ours / theirs:9.2f}")
    record("cuda_train_digits", batch=args.batch_size, burnpy_samples_per_s=ours,
           torch_samples_per_s=theirs, ratio=ours / theirs, target=">= 1.0 at batch 256")


if __name__ == "__main__":
    main()
