"""Benchmark: one training step of an MLP 784-512-512-10 (ReLU) with Adam on the GPU, float32,
batch 256 and 4096: burnpy on ``Autodiff(CudaBackend)`` vs torch CUDA eager.

A step is the forward pass, cross entropy against int labels, the backward pass and an Adam
update (burnpy's ``optim.Adam``: one fused kernel per parameter; torch's default Adam). Both
start from the same weights; their losses over the first steps are checked to agree. Steps
are timed in alternating rounds, the device drained before each timer is read; medians.
Run: ``.venv/bin/python benchmarks/cuda_mlp_step.py``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from cuda_timing import alternate_synced, fmt, record, require_gpu

import burnpy.nn.functional as F
from burnpy import Tensor, optim
from burnpy.autodiff import Autodiff
from burnpy.nn import Linear, Module
from burnpy_cuda import CudaBackend

SIZES = (784, 512, 512, 10)
BATCHES = {256: 20, 4096: 10}  # batch size: steps per timed sample
LR = 1e-3
ROUNDS = 15

Weights = dict[str, np.ndarray]


def init_weights(rng: np.random.Generator, sizes: tuple[int, ...] = SIZES) -> Weights:
    """Weights ``[out, in]`` and biases of each layer, as torch's Linear lays them out."""
    weights = {}
    for i, (n_in, n_out) in enumerate(itertools.pairwise(sizes)):
        bound = 1 / np.sqrt(n_in)
        weights[f"fc{i}.weight"] = rng.uniform(-bound, bound, (n_out, n_in)).astype(np.float32)
        weights[f"fc{i}.bias"] = rng.uniform(-bound, bound, n_out).astype(np.float32)
    return weights


class BurnpyMLP(Module):
    """Three Linear layers of ``sizes`` with ReLUs between them."""

    def __init__(self, backend: Any, sizes: tuple[int, ...] = SIZES) -> None:
        self.fc0, self.fc1, self.fc2 = (Linear(n_in, n_out, backend=backend)
                                        for n_in, n_out in itertools.pairwise(sizes))

    def forward(self, x: Tensor) -> Tensor:
        return self.fc2(F.relu(self.fc1(F.relu(self.fc0(x)))))


def burnpy_step(weights: Weights, x: np.ndarray, y: np.ndarray) -> Callable[[], Tensor]:
    backend = Autodiff(CudaBackend)
    model = BurnpyMLP(backend)
    model.load_state_dict(weights)
    opt = optim.Adam(lr=LR)
    bx, by = Tensor.from_data(x, backend=backend), Tensor.from_data(y, backend=backend)

    def step() -> Tensor:
        loss = F.cross_entropy(model(bx), by)
        opt.step(model, loss.backward())
        return loss

    return step


def torch_mlp(weights: Weights, sizes: tuple[int, ...] = SIZES) -> torch.nn.Sequential:
    """torch's twin of ``BurnpyMLP`` on the GPU, holding ``weights``."""
    layers: list[torch.nn.Module] = []
    for n_in, n_out in itertools.pairwise(sizes):
        layers += [torch.nn.Linear(n_in, n_out), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers[:-1]).cuda()
    linears = [m for m in model if isinstance(m, torch.nn.Linear)]
    with torch.no_grad():
        for i, layer in enumerate(linears):
            layer.weight.copy_(torch.from_numpy(weights[f"fc{i}.weight"]))
            layer.bias.copy_(torch.from_numpy(weights[f"fc{i}.bias"]))
    return model


def torch_step(weights: Weights, x: np.ndarray, y: np.ndarray) -> Callable[[], torch.Tensor]:
    model = torch_mlp(weights)
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    tx, ty = torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()

    def step() -> torch.Tensor:
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(tx), ty)
        loss.backward()
        opt.step()
        return loss

    return step


def main() -> None:
    require_gpu("cuda_mlp_step")
    device = CudaBackend.default_device()
    rng = np.random.default_rng(0)
    weights = init_weights(rng)
    print(f"MLP {'-'.join(map(str, SIZES))} ReLU, Adam, float32 on "
          f"{torch.cuda.get_device_name()}; median of {ROUNDS} alternating samples")
    for batch, number in BATCHES.items():
        x = rng.standard_normal((batch, SIZES[0])).astype(np.float32)
        y = rng.integers(0, SIZES[-1], batch)
        ours, theirs = burnpy_step(weights, x, y), torch_step(weights, x, y)
        np.testing.assert_allclose([ours().item() for _ in range(3)],
                                   [theirs().item() for _ in range(3)], rtol=1e-3)
        med = alternate_synced({
            "burnpy Autodiff(CudaBackend)": (ours, lambda: CudaBackend.sync(device)),
            "torch CUDA eager": (theirs, torch.cuda.synchronize),
        }, number, ROUNDS)
        print(f"  batch {batch} ({number} steps per sample; same losses for 3 steps):")
        for name, seconds in med.items():
            print(f"    {name:30s} {fmt(seconds)}/step")
        ratio = med["burnpy Autodiff(CudaBackend)"] / med["torch CUDA eager"]
        print(f"    burnpy / torch: {ratio:.2f}x")
        record("cuda_mlp_step", batch=batch, seconds_per_step=med, ratio=ratio,
               target="<= 1.2 at batch 4096")


if __name__ == "__main__":
    main()
