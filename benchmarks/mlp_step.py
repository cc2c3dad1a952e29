"""Benchmark: one training step of an MLP 784-512-512-10 (ReLU), batch 256, float32.

A step is the forward pass, a cross-entropy written with tensor ops (log_softmax times a
one-hot target, summed and averaged), the backward pass and a hand-written SGD update. Three
contenders in one process, alternating each round: burnpy on ``Autodiff(CpuBackend)``, torch
CPU eager, and a hand-written NumPy forward/backward doing the same arithmetic. One
BLAS/OpenMP thread; prints medians and ratios (targets: <= 0.9x torch, <= 1.1x NumPy).
Run: ``.venv/bin/python benchmarks/mlp_step.py``.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import itertools  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

import burnpy.nn.functional as F  # noqa: E402
from burnpy import Tensor  # noqa: E402
from burnpy.autodiff import Autodiff  # noqa: E402
from burnpy_cpu import CpuBackend  # noqa: E402

SIZES = (784, 512, 512, 10)
BATCH = 256
LR = 0.01
ROUNDS = 25

Params = list[np.ndarray]


def _init(rng: np.random.Generator) -> Params:
    """Weights ``[out, in]`` and biases, as torch's Linear lays them out."""
    params = []
    for n_in, n_out in itertools.pairwise(SIZES):
        params.append((rng.standard_normal((n_out, n_in)) / np.sqrt(n_in)).astype(np.float32))
        params.append(np.zeros(n_out, dtype=np.float32))
    return params


class BurnpyStep:
    """The step on ``Autodiff(CpuBackend)``: params live on CpuBackend between steps."""

    def __init__(self, params: Params, x: np.ndarray, onehot: np.ndarray) -> None:
        self.ad = Autodiff(CpuBackend)
        self.params = [Tensor.from_data(p.copy(), backend=CpuBackend) for p in params]
        self.x = Tensor.from_data(x, backend=self.ad)
        self.onehot = Tensor.from_data(onehot, backend=self.ad)

    def __call__(self) -> float:
        tracked = [Tensor.from_inner(p, backend=self.ad).require_grad() for p in self.params]
        h = self.x
        for i in range(0, len(tracked) - 2, 2):
            h = F.linear(h, tracked[i], tracked[i + 1]).relu()
        logits = F.linear(h, tracked[-2], tracked[-1])
        loss = -(logits.log_softmax(1) * self.onehot).sum(1).mean()
        grads = loss.backward()
        self.params = [p - LR * t.grad(grads) for p, t in zip(self.params, tracked,
                                                              strict=True)]
        return loss.item()


class TorchStep:
    """The same step in torch eager mode."""

    def __init__(self, params: Params, x: np.ndarray, onehot: np.ndarray) -> None:
        self.params = [torch.from_numpy(p.copy()).requires_grad_() for p in params]
        self.x = torch.from_numpy(x)
        self.onehot = torch.from_numpy(onehot)

    def __call__(self) -> float:
        p = self.params
        h = self.x
        for i in range(0, len(p) - 2, 2):
            h = torch.nn.functional.linear(h, p[i], p[i + 1]).relu()
        logits = torch.nn.functional.linear(h, p[-2], p[-1])
        loss = -(logits.log_softmax(1) * self.onehot).sum(1).mean()
        loss.backward()
        with torch.no_grad():
            for t in p:
                t -= LR * t.grad  # type: ignore[operator]
                t.grad = None
        return loss.item()


class NumpyStep:
    """The same arithmetic written by hand in NumPy (forward, backward, SGD)."""

    def __init__(self, params: Params, x: np.ndarray, onehot: np.ndarray) -> None:
        self.params = [p.copy() for p in params]
        self.x, self.onehot = x, onehot

    def __call__(self) -> float:
        p = self.params
        acts = [self.x]
        for i in range(0, len(p) - 2, 2):
            acts.append(np.maximum(acts[-1] @ p[i].T + p[i + 1], 0))
        logits = acts[-1] @ p[-2].T + p[-1]
        shifted = logits - logits.max(axis=1, keepdims=True)
        logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
        loss = -(logp * self.onehot).sum(axis=1).mean()
        g = (np.exp(logp) - self.onehot) * np.float32(1.0 / BATCH)
        grads: Params = []
        for i in range(len(p) - 2, -1, -2):
            a = acts[i // 2]
            grads[:0] = [g.T @ a, g.sum(axis=0)]
            if i:
                g = (g @ p[i]) * (a > 0)
        self.params = [w - LR * dw for w, dw in zip(p, grads, strict=True)]
        return float(loss)


def main() -> None:
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    params = _init(rng)
    x = rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
    onehot = np.eye(SIZES[-1], dtype=np.float32)[rng.integers(0, SIZES[-1], BATCH)]
    steps: dict[str, Callable[[], float]] = {
        "burnpy Autodiff(CpuBackend)": BurnpyStep(params, x, onehot),
        "torch CPU eager": TorchStep(params, x, onehot),
        "hand-written NumPy": NumpyStep(params, x, onehot),
    }
    losses = {name: [step() for _ in range(3)] for name, step in steps.items()}
    first = losses["torch CPU eager"]
    for name, values in losses.items():
        np.testing.assert_allclose(values, first, rtol=1e-4, err_msg=name)
    samples: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(ROUNDS):
        for name, step in steps.items():
            start = time.perf_counter()
            step()
            samples[name].append((time.perf_counter() - start) * 1e3)
    med = {name: statistics.median(v) for name, v in samples.items()}
    print(f"MLP {'-'.join(map(str, SIZES))} ReLU, batch {BATCH}, float32, one thread; "
          f"median of {ROUNDS} steps (same losses checked for 3 steps)")
    for name, ms in med.items():
        print(f"  {name:28s} {ms:8.2f} ms/step")
    ours = med["burnpy Autodiff(CpuBackend)"]
    print(f"  burnpy / torch: {ours / med['torch CPU eager']:.2f}x (target <= 0.9x)")
    print(f"  burnpy / NumPy: {ours / med['hand-written NumPy']:.2f}x (target <= 1.1x)")


if __name__ == "__main__":
    main()
