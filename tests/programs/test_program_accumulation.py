"""Gradient accumulation over four micro-batches that a loader writes into one reused NumPy
buffer, through a model with BatchNorm (its running statistics move at every micro-batch),
SGD with momentum and weight decay; three steps, burnpy's port against torch's.

torch's program calls ``backward()`` per micro-batch and lets ``.grad`` accumulate. burnpy's
gradients are what one ``backward()`` returns, so the port either sums the micro-batch losses
and calls ``backward()`` once, after the buffer has been overwritten three times (the values
saved for backward must be copies), or sums each micro-batch's gradients itself."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
import torch

import burnpy as bp
import burnpy.nn as nn
import burnpy.nn.functional as F
from burnpy import Tensor, optim
from tests.programs.harness import AD, Snapshot, copy_from, observe, side_by_side

IN, HIDDEN, OUT, MICRO, ACCUM, STEPS = 5, 8, 3, 4, 4, 3

rng = np.random.default_rng(3)
X = rng.standard_normal((STEPS * ACCUM * MICRO, IN))
Y = rng.standard_normal((STEPS * ACCUM * MICRO, OUT))


def batches() -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """A loader that reuses its batch buffers: every batch is the same two arrays."""
    x_buf, y_buf = np.empty((MICRO, IN)), np.empty((MICRO, OUT))
    for start in range(0, len(X), MICRO):
        x_buf[:] = X[start:start + MICRO]
        y_buf[:] = Y[start:start + MICRO]
        yield x_buf, y_buf


# ---- the PyTorch program ------------------------------------------------------------------------
def torch_model() -> torch.nn.Sequential:
    torch.manual_seed(3)
    return torch.nn.Sequential(torch.nn.Linear(IN, HIDDEN), torch.nn.BatchNorm1d(HIDDEN),
                               torch.nn.ReLU(), torch.nn.Linear(HIDDEN, OUT)).double()


def torch_run() -> Iterator[Snapshot]:
    model = torch_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-3)
    loader = batches()
    for step in range(STEPS):
        opt.zero_grad()
        total = 0.0
        for _ in range(ACCUM):
            x, y = next(loader)
            loss = torch.nn.functional.mse_loss(model(torch.tensor(x)), torch.tensor(y)) / ACCUM
            loss.backward()
            total += loss.item()
        opt.step()
        yield observe(f"step {step}", loss=total, model=model)


# ---- the burnpy port ----------------------------------------------------------------------------
def burnpy_model() -> nn.Sequential:
    model = nn.Sequential(nn.Linear(IN, HIDDEN), nn.BatchNorm1d(HIDDEN), nn.ReLU(),
                          nn.Linear(HIDDEN, OUT))
    return copy_from(model.to(backend=AD, dtype=bp.float64), torch_model())


def burnpy_run(summed: str) -> Iterator[Snapshot]:
    model = burnpy_model()
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-3)
    loader = batches()
    for step in range(STEPS):
        losses: list[Tensor] = []
        sums: dict[Tensor, Tensor] = {}
        for _ in range(ACCUM):
            x, y = next(loader)
            loss = F.mse_loss(model(bp.tensor(x, backend=AD)), bp.tensor(y, backend=AD)) / ACCUM
            losses.append(loss)
            if summed == "gradients":
                grads = loss.backward()
                for p in model.parameters():
                    g = p.grad(grads)
                    assert g is not None
                    sums[p] = g if p not in sums else sums[p] + g
        if summed == "losses":
            grads = sum(losses[1:], losses[0]).backward()
        else:
            for p, g in sums.items():
                p.grad_replace(grads, g)
        opt.step(model, grads)
        yield observe(f"step {step}", loss=sum(loss.item() for loss in losses), model=model)


@pytest.mark.parametrize("summed", ["losses", "gradients"])
def test_gradient_accumulation_matches_torch(summed: str) -> None:
    side_by_side(torch_run(), burnpy_run(summed))
