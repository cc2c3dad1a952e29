"""Resuming: three steps, a checkpoint of the model, the optimizer and the LR scheduler
(``state_dict()``, kept by ``copy.deepcopy`` or written to files), three more steps of the
same objects; then fresh objects, built as a new process builds them (other random weights,
the optimizer and scheduler first), load the checkpoint and take the last three steps again.
The resumed steps must equal the uninterrupted ones in each framework, and every step must
equal torch's."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch

import burnpy as bp
import burnpy.nn as nn
import burnpy.nn.functional as F
from burnpy import optim, record
from tests.programs.harness import AD, Snapshot, assert_same, copy_from, observe, side_by_side

IN, HIDDEN, OUT, BATCH, SAVE_AT, STEPS = 4, 6, 2, 5, 3, 6

rng = np.random.default_rng(5)
DATA = [(rng.standard_normal((BATCH, IN)), rng.standard_normal((BATCH, OUT)))
        for _ in range(STEPS)]


# ---- the PyTorch program ------------------------------------------------------------------------
def torch_model(seed: int) -> torch.nn.Sequential:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(IN, HIDDEN), torch.nn.BatchNorm1d(HIDDEN),
                               torch.nn.ReLU(), torch.nn.Linear(HIDDEN, OUT)).double()


def torch_run(how: str, tmp: Path) -> Iterator[Snapshot]:
    def build(seed: int) -> tuple[torch.nn.Sequential, torch.optim.Optimizer,
                                  torch.optim.lr_scheduler.LRScheduler]:
        model = torch_model(seed)
        opt = torch.optim.Adam(model.parameters(), lr=1e-2, weight_decay=1e-2, amsgrad=True)
        return model, opt, torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)

    def train(step: int, label: str) -> Snapshot:
        x, y = DATA[step]
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(torch.tensor(x)), torch.tensor(y))
        loss.backward()
        opt.step()
        sched.step()
        return observe(label, loss=loss, lr=sched.get_last_lr(), model=model,
                       momentum=opt.state[model[0].weight]["exp_avg"])

    model, opt, sched = build(0)
    for step in range(STEPS):
        if step == SAVE_AT:
            checkpoint = {"model": model.state_dict(), "optimizer": opt.state_dict(),
                          "scheduler": sched.state_dict()}
            if how == "files":
                torch.save(checkpoint, tmp / "checkpoint.pt")
            else:
                checkpoint = copy.deepcopy(checkpoint)
        yield train(step, f"step {step}")
    model, opt, sched = build(1)
    if how == "files":
        checkpoint = torch.load(tmp / "checkpoint.pt")
    model.load_state_dict(checkpoint["model"])
    opt.load_state_dict(checkpoint["optimizer"])
    sched.load_state_dict(checkpoint["scheduler"])
    for step in range(SAVE_AT, STEPS):
        yield train(step, f"step {step}, resumed")


# ---- the burnpy port ----------------------------------------------------------------------------
def burnpy_run(how: str, tmp: Path) -> Iterator[Snapshot]:
    def build() -> tuple[nn.Sequential, optim.Optimizer, optim.LrScheduler]:
        model = nn.Sequential(nn.Linear(IN, HIDDEN), nn.BatchNorm1d(HIDDEN), nn.ReLU(),
                              nn.Linear(HIDDEN, OUT)).to(backend=AD, dtype=bp.float64)
        opt = optim.Adam(model.parameters(), lr=1e-2, weight_decay=1e-2, amsgrad=True)
        return model, opt, optim.StepLR(opt, step_size=2, gamma=0.5)

    def train(step: int, label: str) -> Snapshot:
        x, y = DATA[step]
        loss = F.mse_loss(model(bp.tensor(x, backend=AD)), bp.tensor(y, backend=AD))
        opt.step(model, loss.backward())
        sched.step()
        return observe(label, loss=loss, lr=sched.get_last_lr(), model=model,
                       momentum=opt.state[model[0].weight]["exp_avg"])

    model, opt, sched = build()
    copy_from(model, torch_model(0))
    for step in range(STEPS):
        if step == SAVE_AT:
            if how == "files":
                record.save(model, tmp / "model.bpk")
                record.save(opt, tmp / "optimizer.bpk")
                record.save(sched, tmp / "scheduler.bpk")
            else:
                checkpoint = copy.deepcopy({"model": model.state_dict(),
                                            "optimizer": opt.state_dict(),
                                            "scheduler": sched.state_dict()})
        yield train(step, f"step {step}")
    model, opt, sched = build()  # a new process: fresh random weights
    if how == "files":
        record.load(model, tmp / "model.bpk")
        record.load(opt, tmp / "optimizer.bpk")
        record.load(sched, tmp / "scheduler.bpk")
    else:
        model.load_state_dict(checkpoint["model"])
        opt.load_state_dict(checkpoint["optimizer"])
        sched.load_state_dict(checkpoint["scheduler"])
    for step in range(SAVE_AT, STEPS):
        yield train(step, f"step {step}, resumed")


@pytest.mark.parametrize("how", ["deepcopy", "files"])
def test_resumed_training_equals_uninterrupted_and_torch(how: str, tmp_path: Path) -> None:
    (tmp_path / "torch").mkdir()
    (tmp_path / "burnpy").mkdir()
    pairs = side_by_side(torch_run(how, tmp_path / "torch"), burnpy_run(how, tmp_path / "burnpy"))
    for framework, run in (("torch", [p[0] for p in pairs]), ("burnpy", [p[1] for p in pairs])):
        continued, resumed = run[SAVE_AT:STEPS], run[STEPS:]
        assert len(resumed) == STEPS - SAVE_AT
        for want, got in zip(continued, resumed, strict=True):
            assert_same(f"{framework}", want, dataclasses.replace(got, label=want.label),
                        rtol=1e-12, atol=0.0, names=("uninterrupted", "resumed"))
