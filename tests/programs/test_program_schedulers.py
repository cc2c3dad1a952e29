"""LR schedulers with torch's defaults driving SGD over two parameter groups with their own
rates, ``opt.step()`` then ``sched.step()`` each of ten steps, and a warm-up written by hand
into ``opt.param_groups``. Each scheduler is built by the same line of code in both programs
(only the module differs), so an argument name, order or default burnpy reads otherwise shows
as a different rate and different weights."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import numpy as np
import pytest
import torch

import burnpy as bp
import burnpy.nn as nn
import burnpy.nn.functional as F
from burnpy import optim
from tests.programs.harness import AD, Snapshot, copy_from, observe, side_by_side

IN, HIDDEN, BATCH, STEPS = 3, 4, 5, 10

rng = np.random.default_rng(9)
DATA = [(rng.standard_normal((BATCH, IN)), rng.standard_normal((BATCH, 1))) for _ in range(STEPS)]

#: ``(scheduler module, optimizer) -> scheduler``: the same code for torch and burnpy.
SCHEDULERS: dict[str, Callable[[ModuleType, Any], Any]] = {
    "ConstantLR": lambda lr, opt: lr.ConstantLR(opt),
    "LinearLR": lambda lr, opt: lr.LinearLR(opt),
    "StepLR": lambda lr, opt: lr.StepLR(opt, step_size=3),
    "ExponentialLR": lambda lr, opt: lr.ExponentialLR(opt, gamma=0.8),
    "CosineAnnealingLR": lambda lr, opt: lr.CosineAnnealingLR(opt, T_max=6),
    "SequentialLR": lambda lr, opt: lr.SequentialLR(
        opt, [lr.LinearLR(opt, start_factor=0.1, total_iters=3), lr.CosineAnnealingLR(opt, 7)],
        milestones=[3]),
}


#: No scheduler: the program writes each group's rate itself before each step.
BY_HAND = "warm-up by hand"


def warm_up(opt: Any, step: int) -> None:
    """A linear warm-up over four steps written into ``opt.param_groups`` (torch's habit; the
    same code for both)."""
    for group, base in zip(opt.param_groups, (0.1, 0.05), strict=True):
        group["lr"] = base * min(1.0, (step + 1) / 4)


def torch_model() -> torch.nn.Sequential:
    torch.manual_seed(9)
    return torch.nn.Sequential(torch.nn.Linear(IN, HIDDEN), torch.nn.Tanh(),
                               torch.nn.Linear(HIDDEN, 1)).double()


def torch_run(name: str) -> Iterator[Snapshot]:
    model = torch_model()
    opt = torch.optim.SGD([{"params": model[0].parameters()},
                           {"params": model[2].parameters(), "lr": 0.05}], lr=0.1, momentum=0.9)
    sched = None if name == BY_HAND else SCHEDULERS[name](torch.optim.lr_scheduler, opt)
    for step, (x, y) in enumerate(DATA):
        if sched is None:
            warm_up(opt, step)
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(torch.tensor(x)), torch.tensor(y))
        loss.backward()
        opt.step()
        rates = [g["lr"] for g in opt.param_groups]
        if sched is not None:
            sched.step()
            rates = sched.get_last_lr()
        yield observe(f"step {step}", loss=loss, lr=rates, model=model)


def burnpy_run(name: str) -> Iterator[Snapshot]:
    model = nn.Sequential(nn.Linear(IN, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, 1))
    model = copy_from(model.to(backend=AD, dtype=bp.float64), torch_model())
    opt = optim.SGD([{"params": model[0].parameters()},
                     {"params": model[2].parameters(), "lr": 0.05}], lr=0.1, momentum=0.9)
    sched = None if name == BY_HAND else SCHEDULERS[name](optim, opt)
    for step, (x, y) in enumerate(DATA):
        if sched is None:
            warm_up(opt, step)
        loss = F.mse_loss(model(bp.tensor(x, backend=AD)), bp.tensor(y, backend=AD))
        opt.step(model, loss.backward())
        rates = [g["lr"] for g in opt.param_groups]
        if sched is not None:
            sched.step()
            rates = sched.get_last_lr()
        yield observe(f"step {step}", loss=loss, lr=rates, model=model)


@pytest.mark.parametrize("name", [*SCHEDULERS, BY_HAND])
def test_scheduled_training_matches_torch(name: str) -> None:
    side_by_side(torch_run(name), burnpy_run(name))
