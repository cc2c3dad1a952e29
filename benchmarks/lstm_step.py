"""Benchmark: one training step of a 2-layer LSTM character language model against torch.

The model is an ``Embedding(65, 64)``, an ``LSTM(64, 256, num_layers=2, batch_first=True)``
and a ``Linear(256, 65)`` head; a step is the forward pass over a batch of 32 sequences of 64
characters, the mean cross entropy of the next character, the backward pass and Adam. torch
runs the same modules with the same weights (burnpy's ``nn`` names them as torch does, so the
state dict is copied as it is). float32, one thread, alternating burnpy and torch steps;
prints medians and the steps/s ratio (target >= 1.0x torch). ``--floor`` also times the
step's matrix products alone, as burnpy's CPU backend runs them (OpenBLAS through NumPy).
``--breakdown`` splits both steps into forward (with the loss), backward and optimizer, in
thread CPU time (robust to a loaded machine), beside the matrix products alone of each pass:
on the reference machine the products alone cost about what torch's whole pass does (torch's
oneDNN LSTM layer runs the same products at the same rate, its cell arithmetic fused in).
Run: ``.venv/bin/python benchmarks/lstm_step.py [--floor] [--breakdown]``.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from typing import Any  # noqa: E402

import _timing  # noqa: E402 - also pins glibc's allocator: freed buffers stay in the process
import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch import nn as tnn  # noqa: E402

import burnpy.nn as nn  # noqa: E402
from burnpy import Tensor  # noqa: E402
from burnpy.autodiff import Autodiff  # noqa: E402
from burnpy.nn import functional as F  # noqa: E402
from burnpy.optim import Adam  # noqa: E402
from burnpy_cpu import CpuBackend  # noqa: E402

VOCAB, EMBED, HIDDEN, LAYERS, BATCH, SEQ, LR = 65, 64, 256, 2, 32, 64, 2e-3


class CharLSTM(nn.Module):
    """Embedding, a 2-layer LSTM and a linear head over the characters."""

    def __init__(self, backend: type) -> None:
        self.embed = nn.Embedding(VOCAB, EMBED, backend=backend)
        self.lstm = nn.LSTM(EMBED, HIDDEN, LAYERS, batch_first=True, backend=backend)
        self.head = nn.Linear(HIDDEN, VOCAB, backend=backend)

    def forward(self, idx: Tensor) -> Tensor:
        """Int ``idx [batch, seq]`` -> logits ``[batch, seq, vocab]``."""
        y, _ = self.lstm(self.embed(idx))
        return self.head(y)


class TorchCharLSTM(tnn.Module):
    """The same model in torch."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = tnn.Embedding(VOCAB, EMBED)
        self.lstm = tnn.LSTM(EMBED, HIDDEN, LAYERS, batch_first=True)
        self.head = tnn.Linear(HIDDEN, VOCAB)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        y, _ = self.lstm(self.embed(idx))
        return self.head(y)


def batches(n: int, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """``n`` random (input, next-character target) windows of a synthetic stream."""
    rng = np.random.default_rng(seed)
    stream = rng.integers(0, VOCAB, 8192)
    out = []
    for _ in range(n):
        start = rng.integers(0, stream.size - SEQ - 1, BATCH)
        out.append((np.stack([stream[s:s + SEQ] for s in start]),
                    np.stack([stream[s + 1:s + SEQ + 1] for s in start])))
    return out


class BurnpyStep:
    """The training step on ``Autodiff(CpuBackend)``."""

    def __init__(self, model: CharLSTM, data: list[tuple[np.ndarray, np.ndarray]],
                 backend: type) -> None:
        self.model, self.data, self.backend, self.i = model, data, backend, 0
        self.optim = Adam(lr=LR)

    def forward(self) -> Tensor:
        """The next batch's mean cross entropy."""
        x, y = self.data[self.i % len(self.data)]
        self.i += 1
        logits = self.model(Tensor.from_data(x, backend=self.backend))
        return F.cross_entropy(logits.reshape((-1, VOCAB)),
                               Tensor.from_data(y.reshape(-1), backend=self.backend))

    def backward(self, loss: Tensor) -> Any:
        """The gradients of ``loss``."""
        return loss.backward()

    def update(self, grads: Any) -> None:
        """One Adam step."""
        self.optim.step(self.model, grads)

    def __call__(self) -> float:
        loss = self.forward()
        self.update(self.backward(loss))
        return float(loss.item())


class TorchStep:
    """The same step in torch eager mode."""

    def __init__(self, model: TorchCharLSTM, data: list[tuple[np.ndarray, np.ndarray]]) -> None:
        self.model, self.i = model, 0
        self.data = [(torch.from_numpy(x), torch.from_numpy(y)) for x, y in data]
        self.optim = torch.optim.Adam(model.parameters(), lr=LR)

    def forward(self) -> torch.Tensor:
        """The next batch's mean cross entropy."""
        x, y = self.data[self.i % len(self.data)]
        self.i += 1
        logits = self.model(x)
        return tnn.functional.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1))

    def backward(self, loss: torch.Tensor) -> None:
        """The gradients of ``loss``, into the parameters."""
        self.optim.zero_grad(set_to_none=True)
        loss.backward()

    def update(self, grads: None) -> None:
        """One Adam step (torch's gradients live on the parameters)."""
        self.optim.step()

    def __call__(self) -> float:
        loss = self.forward()
        self.backward(loss)
        self.update(None)
        return float(loss.item())


def matmul_floor() -> tuple[Callable[[], None], Callable[[], None]]:
    """The step's matrix products alone on NumPy (OpenBLAS), with the shapes and count
    burnpy's step runs, as ``(forward, backward)``: the input projections, the head and 64
    recurrent products per layer; then the same 64 per layer backward and the weight and
    input gradients. What is left of burnpy's step above these is everything else."""
    rng = np.random.default_rng(0)
    rows, gates = BATCH * SEQ, 4 * HIDDEN

    def f(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape, dtype=np.float32)

    x1, x2, w1, w2, w_hh = f(rows, EMBED), f(rows, HIDDEN), f(gates, EMBED), f(gates, HIDDEN), \
        f(gates, HIDDEN)
    h_t, dz, dg, y, w_out, dy = f(HIDDEN, BATCH), f(BATCH, gates), f(rows, gates), \
        f(rows, HIDDEN), f(VOCAB, HIDDEN), f(rows, VOCAB)
    z_t = np.empty((gates, BATCH), np.float32)

    def forward() -> None:
        for x, w in ((x1, w1), (x2, w2)):
            x @ w.T
            for _ in range(SEQ):
                np.matmul(w_hh, h_t, out=z_t)
        y @ w_out.T

    def backward() -> None:
        dy @ w_out
        dy.T @ y
        for x, w in ((x1, w1), (x2, w2)):
            for _ in range(SEQ):
                dz @ w_hh
            dg.T @ y
            dg @ w
            dg.T @ x

    return forward, backward


def breakdown(ours: BurnpyStep, theirs: TorchStep, rounds: int) -> None:
    """Median thread CPU time of each pass of both steps, alternating, beside the matrix
    products alone of the forward and backward passes."""
    mm_forward, mm_backward = matmul_floor()
    samples: dict[tuple[str, str], list[float]] = {}

    def timed(who: str, phase: str, fn: Callable[..., Any], *args: Any) -> Any:
        start = time.thread_time()
        out = fn(*args)
        samples.setdefault((who, phase), []).append(time.thread_time() - start)
        return out

    for r in range(rounds + 2):
        for who, step in (("burnpy", ours), ("torch", theirs))[::1 if r % 2 else -1]:
            loss = timed(who, "forward", step.forward)
            timed(who, "update", step.update, timed(who, "backward", step.backward, loss))
        timed("matmuls", "forward", mm_forward)
        timed("matmuls", "backward", mm_backward)
    med = {k: statistics.median(v[2:]) * 1e3 for k, v in samples.items()}
    print(f"thread CPU ms per pass, median of {rounds} alternating steps")
    print(f"  {'pass':10s} {'burnpy':>8s} {'torch':>8s} {'matmuls alone':>14s}")
    for phase in ("forward", "backward", "update"):
        alone = f"{med[('matmuls', phase)]:14.2f}" if ("matmuls", phase) in med else ""
        print(f"  {phase:10s} {med[('burnpy', phase)]:8.2f} {med[('torch', phase)]:8.2f}{alone}")


def pair() -> tuple[BurnpyStep, TorchStep]:
    """Both steps, over the same data, from the same weights."""
    backend = Autodiff(CpuBackend)
    model, twin = CharLSTM(backend), TorchCharLSTM()
    model.load_state_dict(twin.state_dict())
    data = batches(8)
    return BurnpyStep(model, data, backend), TorchStep(twin, data)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--floor", action="store_true",
                   help="also time the step's matrix products alone (NumPy, same shapes)")
    p.add_argument("--breakdown", action="store_true",
                   help="also split both steps into forward, backward and optimizer")
    args = p.parse_args()
    torch.set_num_threads(1)
    ours, theirs = pair()
    for _ in range(3):
        np.testing.assert_allclose(ours(), theirs(), rtol=1e-4, err_msg="the models diverge")
    steps: dict[str, Callable[[], object]] = {"burnpy Autodiff(CpuBackend)": ours,
                                              "torch CPU eager": theirs}
    if args.floor:
        mm_forward, mm_backward = matmul_floor()
        steps["matmuls alone (OpenBLAS)"] = lambda: (mm_forward(), mm_backward())
    med = _timing.alternate(steps, 1, args.rounds)
    _timing.report_steps(
        f"char LSTM: {LAYERS} layers, hidden {HIDDEN}, embedding {EMBED}, vocab {VOCAB}, "
        f"batch {BATCH}, sequence {SEQ}; float32, one thread, Adam; median of {args.rounds} "
        f"alternating steps (losses agree for 3 steps)", med)
    if args.breakdown:
        breakdown(ours, theirs, args.rounds)


if __name__ == "__main__":
    main()
