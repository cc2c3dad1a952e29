"""LR schedulers against torch.optim.lr_scheduler: the rate used at each of 40 steps."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

import burnpy as bp
from burnpy import optim
from burnpy.optim import lr_scheduler as ls

TorchFactory = Callable[[torch.optim.Optimizer], torch.optim.lr_scheduler.LRScheduler]


def _torch_rates(make: TorchFactory, steps: int = 40) -> list[float]:
    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.5)
    sched = make(opt)
    rates = []
    for _ in range(steps):
        rates.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return rates


@pytest.mark.parametrize(("ours", "theirs"), [
    (lambda: optim.StepLR(0.5, 7, 0.5),
     lambda o: torch.optim.lr_scheduler.StepLR(o, 7, 0.5)),
    (lambda: optim.ExponentialLR(0.5, 0.9),
     lambda o: torch.optim.lr_scheduler.ExponentialLR(o, 0.9)),
    (lambda: optim.CosineAnnealingLR(0.5, 15, 0.01),
     lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, 15, 0.01)),
    (lambda: optim.LinearLR(0.5, 0.1, 1.0, 8),
     lambda o: torch.optim.lr_scheduler.LinearLR(o, 0.1, 1.0, 8)),
    (lambda: optim.LinearLR(0.5, 1.0, 0.2, 10),
     lambda o: torch.optim.lr_scheduler.LinearLR(o, 1.0, 0.2, 10)),
    (lambda: optim.SequentialLR([optim.LinearLR(0.5, 0.2, 1.0, 5),
                                 optim.CosineAnnealingLR(0.5, 20)], [5]),
     lambda o: torch.optim.lr_scheduler.SequentialLR(o, [
         torch.optim.lr_scheduler.LinearLR(o, 0.2, 1.0, 5),
         torch.optim.lr_scheduler.CosineAnnealingLR(o, 20)], [5])),
    (lambda: optim.SequentialLR([optim.ConstantLR(0.5), optim.StepLR(0.5, 4, 0.5),
                                 optim.ExponentialLR(0.5, 0.95)], [3, 20]),
     lambda o: torch.optim.lr_scheduler.SequentialLR(o, [
         torch.optim.lr_scheduler.ConstantLR(o, 1.0, 3),
         torch.optim.lr_scheduler.StepLR(o, 4, 0.5),
         torch.optim.lr_scheduler.ExponentialLR(o, 0.95)], [3, 20])),
])
def test_rates_match_torch(ours: Callable[[], ls.LrScheduler], theirs: TorchFactory) -> None:
    sched = ours()
    rates = [sched.step() for _ in range(40)]
    assert rates == pytest.approx(_torch_rates(theirs), rel=1e-9, abs=1e-12)


def test_state_round_trip_and_current_lr() -> None:
    sched = optim.warmup_cosine(0.1, 4, 30)
    for _ in range(7):
        sched.step()
    again = optim.warmup_cosine(0.1, 4, 30).load_state_dict(sched.state_dict())
    assert again.lr == sched.lr == sched.lr_at(7)
    assert [again.step() for _ in range(5)] == [sched.step() for _ in range(5)]
    with pytest.raises(bp.InvalidArgumentError, match="for SequentialLR, not StepLR"):
        optim.StepLR(0.1, 2).load_state_dict(sched.state_dict())


def test_invalid_configurations() -> None:
    with pytest.raises(bp.InvalidArgumentError, match="milestones"):
        optim.SequentialLR([optim.ConstantLR(0.1), optim.ConstantLR(0.2)], [])
    with pytest.raises(bp.InvalidArgumentError, match="t_max"):
        optim.CosineAnnealingLR(0.1, 0)
    with pytest.raises(bp.InvalidArgumentError, match="warmup_steps"):
        optim.warmup_cosine(0.1, 10, 5)
