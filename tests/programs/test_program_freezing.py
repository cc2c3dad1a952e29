"""Freezing a sub-module then unfreezing it, two ways torch users write it: one AdamW over every
parameter while the encoder is frozen for three of seven steps (a frozen parameter gets no
gradient, so neither its Adam state nor weight decay moves), and fine-tuning (an optimizer over
the trainable parameters only, then the unfrozen encoder added as a parameter group with its
own rate). The frozen encoder's BatchNorm is put in eval mode (``model.encoder.eval()``: running
statistics, not updated) until ``model.train()``; burnpy's port against torch's after every
step."""

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

IN, HIDDEN, CLASSES, BATCH, STEPS = 4, 6, 3, 5, 7
FREEZE, UNFREEZE = 2, 5  # the encoder is frozen for steps 2, 3 and 4

rng = np.random.default_rng(4)
DATA = [(rng.standard_normal((BATCH, IN)), rng.integers(0, CLASSES, BATCH)) for _ in range(STEPS)]


# ---- the PyTorch program ------------------------------------------------------------------------
class TorchNet(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = torch.nn.Sequential(torch.nn.Linear(IN, HIDDEN),
                                           torch.nn.BatchNorm1d(HIDDEN), torch.nn.Tanh())
        self.head = torch.nn.Linear(HIDDEN, CLASSES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(x))


def torch_model() -> TorchNet:
    torch.manual_seed(4)
    return TorchNet().double()


def torch_run(style: str) -> Iterator[Snapshot]:
    model = torch_model()
    if style == "fine-tune":
        model.encoder.requires_grad_(False)
        model.encoder.eval()
        opt = torch.optim.AdamW(filter(lambda p: p.requires_grad, model.parameters()),
                                lr=1e-2, weight_decay=0.1)
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
    for step, (x, y) in enumerate(DATA):
        if step == FREEZE and style == "freeze":
            model.encoder.requires_grad_(False)
            model.encoder.eval()  # frozen BatchNorm: running statistics, not updated
        if step == UNFREEZE:
            model.encoder.requires_grad_(True)
            model.train()
            if style == "fine-tune":
                opt.add_param_group({"params": model.encoder.parameters(), "lr": 1e-3})
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(torch.tensor(x)), torch.tensor(y))
        loss.backward()
        opt.step()
        yield observe(f"step {step}", loss=loss, model=model)


# ---- the burnpy port ----------------------------------------------------------------------------
class Net(nn.Module):
    def __init__(self) -> None:
        self.encoder = nn.Sequential(nn.Linear(IN, HIDDEN), nn.BatchNorm1d(HIDDEN), nn.Tanh())
        self.head = nn.Linear(HIDDEN, CLASSES)

    def forward(self, x: Tensor) -> Tensor:
        return self.head(self.encoder(x))


def set_requires_grad(module: nn.Module, flag: bool) -> None:
    """torch's ``module.requires_grad_(flag)``."""
    for p in module.parameters():
        p.requires_grad_(flag)


def burnpy_run(style: str) -> Iterator[Snapshot]:
    model = copy_from(Net().to(backend=AD, dtype=bp.float64), torch_model())
    if style == "fine-tune":
        set_requires_grad(model.encoder, False)
        model.encoder.eval()
        opt = optim.AdamW([p for p in model.parameters() if p.requires_grad],
                          lr=1e-2, weight_decay=0.1)
    else:
        opt = optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
    for step, (x, y) in enumerate(DATA):
        if step == FREEZE and style == "freeze":
            set_requires_grad(model.encoder, False)
            model.encoder.eval()
        if step == UNFREEZE:
            set_requires_grad(model.encoder, True)
            model.train()
            if style == "fine-tune":
                opt.add_param_group({"params": model.encoder.parameters(), "lr": 1e-3})
        loss = F.cross_entropy(model(bp.tensor(x, backend=AD)), bp.tensor(y, backend=AD))
        grads = loss.backward()
        opt.step(model, grads)
        yield observe(f"step {step}", loss=loss, model=model)


@pytest.mark.parametrize("style", ["freeze", "fine-tune"])
def test_freezing_then_unfreezing_matches_torch(style: str) -> None:
    side_by_side(torch_run(style), burnpy_run(style))
