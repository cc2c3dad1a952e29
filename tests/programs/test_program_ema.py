"""An exponential moving average of the weights: ``ema = copy.deepcopy(model)``, frozen, then
after every optimizer step ``ema_p.mul_(d).add_(p, alpha=1 - d)`` under ``no_grad`` and the
BatchNorm buffers copied with ``copy_``; the average model is evaluated each step in eval mode.
RMSprop (centered, with momentum); five steps, burnpy's port against torch's."""

from __future__ import annotations

import copy
from collections.abc import Iterator

import numpy as np
import torch

import burnpy as bp
import burnpy.nn as nn
import burnpy.nn.functional as F
from burnpy import optim
from tests.programs.harness import AD, Snapshot, copy_from, observe, side_by_side

IN, HIDDEN, OUT, BATCH, STEPS, DECAY = 4, 6, 2, 5, 5, 0.8

rng = np.random.default_rng(7)
DATA = [(rng.standard_normal((BATCH, IN)), rng.standard_normal((BATCH, OUT)))
        for _ in range(STEPS)]
X_VAL, Y_VAL = rng.standard_normal((3, IN)), rng.standard_normal((3, OUT))


# ---- the PyTorch program ------------------------------------------------------------------------
def torch_model() -> torch.nn.Sequential:
    torch.manual_seed(7)
    return torch.nn.Sequential(torch.nn.Linear(IN, HIDDEN), torch.nn.BatchNorm1d(HIDDEN),
                               torch.nn.Tanh(), torch.nn.Linear(HIDDEN, OUT)).double()


def torch_run() -> Iterator[Snapshot]:
    model = torch_model()
    ema = copy.deepcopy(model)
    ema.requires_grad_(False)
    ema.eval()
    opt = torch.optim.RMSprop(model.parameters(), lr=1e-2, momentum=0.9, centered=True)
    x_val, y_val = torch.tensor(X_VAL), torch.tensor(Y_VAL)
    for step, (x, y) in enumerate(DATA):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(torch.tensor(x)), torch.tensor(y))
        loss.backward()
        opt.step()
        with torch.no_grad():
            for ema_p, p in zip(ema.parameters(), model.parameters(), strict=True):
                ema_p.mul_(DECAY).add_(p, alpha=1 - DECAY)
            for ema_b, b in zip(ema.buffers(), model.buffers(), strict=True):
                ema_b.copy_(b)
            val = torch.nn.functional.mse_loss(ema(x_val), y_val)
        yield observe(f"step {step}", loss=loss, val=val, model=model, ema=ema)


# ---- the burnpy port ----------------------------------------------------------------------------
def burnpy_run() -> Iterator[Snapshot]:
    model = nn.Sequential(nn.Linear(IN, HIDDEN), nn.BatchNorm1d(HIDDEN), nn.Tanh(),
                          nn.Linear(HIDDEN, OUT))
    model = copy_from(model.to(backend=AD, dtype=bp.float64), torch_model())
    ema = copy.deepcopy(model)
    for p in ema.parameters():
        p.requires_grad_(False)
    ema.eval()
    opt = optim.RMSprop(model.parameters(), lr=1e-2, momentum=0.9, centered=True)
    x_val, y_val = bp.tensor(X_VAL, backend=AD), bp.tensor(Y_VAL, backend=AD)
    for step, (x, y) in enumerate(DATA):
        loss = F.mse_loss(model(bp.tensor(x, backend=AD)), bp.tensor(y, backend=AD))
        opt.step(model, loss.backward())
        with bp.no_grad():
            for ema_p, p in zip(ema.parameters(), model.parameters(), strict=True):
                ema_p.mul_(DECAY).add_(p, alpha=1 - DECAY)
            for ema_b, b in zip(ema.buffers(), model.buffers(), strict=True):
                ema_b.copy_(b)
            val = F.mse_loss(ema(x_val), y_val)
        yield observe(f"step {step}", loss=loss, val=val, model=model, ema=ema)


def test_weight_ema_matches_torch() -> None:
    side_by_side(torch_run(), burnpy_run())
