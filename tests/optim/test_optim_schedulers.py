"""LR schedulers against torch.optim.lr_scheduler: the rate used at each of 40 steps."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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
    (lambda: optim.ConstantLR(0.5),  # torch's defaults: factor 1/3 for 5 steps
     lambda o: torch.optim.lr_scheduler.ConstantLR(o)),
    (lambda: optim.ConstantLR(0.5, factor=0.25, total_iters=7),
     lambda o: torch.optim.lr_scheduler.ConstantLR(o, factor=0.25, total_iters=7)),
    (lambda: optim.CosineAnnealingLR(0.5, T_max=12),
     lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=12)),
    (lambda: optim.LinearLR(0.5),
     lambda o: torch.optim.lr_scheduler.LinearLR(o)),
    (lambda: optim.SequentialLR(0.5, [optim.LinearLR(0.5, 0.2, 1.0, 5),
                                      optim.CosineAnnealingLR(0.5, 20)], [5]),
     lambda o: torch.optim.lr_scheduler.SequentialLR(o, [
         torch.optim.lr_scheduler.LinearLR(o, 0.2, 1.0, 5),
         torch.optim.lr_scheduler.CosineAnnealingLR(o, 20)], [5])),
    (lambda: optim.SequentialLR(0.5, [optim.ConstantLR(0.5, 1.0, 3),
                                      optim.StepLR(0.5, 4, 0.5),
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
    assert again.lr == sched.lr == sched.get_last_lr()[0]
    assert [again.step() for _ in range(5)] == [sched.step() for _ in range(5)]
    with pytest.raises(bp.InvalidArgumentError, match="for SequentialLR, not StepLR"):
        optim.StepLR(0.1, 2).load_state_dict(sched.state_dict())


def test_invalid_configurations() -> None:
    with pytest.raises(bp.InvalidArgumentError, match="milestones"):
        optim.SequentialLR(0.1, [optim.ConstantLR(0.1), optim.ConstantLR(0.2)], [])
    with pytest.raises(bp.InvalidArgumentError, match="T_max"):
        optim.CosineAnnealingLR(0.1, 0)
    with pytest.raises(bp.InvalidArgumentError, match="warmup_steps"):
        optim.warmup_cosine(0.1, 10, 5)


def test_torch_spelling_on_an_optimizer_matches_torch_step_by_step() -> None:
    """torch's program as written: schedulers built on the optimizer with torch's defaults and
    keyword names, SequentialLR(optimizer, schedulers, milestones), get_last_lr()."""
    ours_opt = optim.SGD(lr=0.1)
    ref_opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)
    ours = optim.SequentialLR(ours_opt, [optim.ConstantLR(ours_opt),
                                         optim.CosineAnnealingLR(ours_opt, T_max=10)],
                              milestones=[6])
    ref = torch.optim.lr_scheduler.SequentialLR(ref_opt, [
        torch.optim.lr_scheduler.ConstantLR(ref_opt),
        torch.optim.lr_scheduler.CosineAnnealingLR(ref_opt, T_max=10)], milestones=[6])
    for _ in range(20):
        assert ours_opt.param_groups[0]["lr"] == pytest.approx(ref_opt.param_groups[0]["lr"],
                                                               rel=1e-12)
        assert ours.get_last_lr() == pytest.approx(ref.get_last_lr(), rel=1e-12)
        ref_opt.step()
        ours.step()
        ref.step()
    assert optim.ConstantLR(0.1).get_last_lr() == pytest.approx([0.1 / 3])


def test_sequential_lr_needs_the_schedulers_optimizer() -> None:
    opt = optim.SGD(lr=0.1)
    with pytest.raises(bp.InvalidArgumentError, match="built on the optimizer"):
        optim.SequentialLR(opt, [optim.ConstantLR(0.1)], [])
    with pytest.raises(bp.InvalidArgumentError, match="torch's"):
        optim.SequentialLR([optim.ConstantLR(0.1)], [], [])  # type: ignore[arg-type]


#: Every torch scheduler class (ReduceLROnPlateau and the combinators are in test_optim_db
#: too), built on SGD with momentum or on Adam (momentum cycling through betas[0]).
EVERY: list[tuple[str, Callable[[Any, Any], Any]]] = [
    ("sgd", lambda m, o: m.LambdaLR(o, lambda e: 0.9**e + 0.1 * (e % 3))),
    ("sgd", lambda m, o: m.MultiplicativeLR(o, lambda e: 0.95)),
    ("sgd", lambda m, o: m.MultiStepLR(o, [3, 7, 7, 12], gamma=0.5)),
    ("sgd", lambda m, o: m.PolynomialLR(o, total_iters=12, power=2.0)),
    ("sgd", lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=0.01)),
    ("sgd", lambda m, o: m.CyclicLR(o, 0.01, 0.1, step_size_up=4, mode="triangular2")),
    ("adam", lambda m, o: m.CyclicLR(o, 0.001, 0.01, step_size_up=3, step_size_down=5,
                                     mode="exp_range", gamma=0.97)),
    ("sgd", lambda m, o: m.OneCycleLR(o, max_lr=0.5, total_steps=25)),
    ("adam", lambda m, o: m.OneCycleLR(o, max_lr=0.01, total_steps=30, three_phase=True,
                                       anneal_strategy="linear")),
    ("sgd", lambda m, o: m.ChainedScheduler([m.ConstantLR(o, factor=0.5, total_iters=4),
                                             m.ExponentialLR(o, gamma=0.9)])),
    ("sgd", lambda m, o: m.SequentialLR(o, [m.LinearLR(o, 0.2, total_iters=4),
                                            m.StepLR(o, 3, 0.5),
                                            m.CosineAnnealingLR(o, T_max=6)], [4, 10])),
]


@pytest.mark.parametrize(("kind", "make"), EVERY)
def test_every_scheduler_matches_torch_with_momentum_and_resume(
        kind: str, make: Callable[[Any, Any], Any]) -> None:
    p = torch.zeros(1, requires_grad=True)
    if kind == "sgd":
        ref_opt: torch.optim.Optimizer = torch.optim.SGD([p], lr=0.1, momentum=0.9)
        opt: optim.Optimizer = optim.SGD(lr=0.1, momentum=0.9)
    else:
        ref_opt, opt = torch.optim.Adam([p], lr=0.01), optim.Adam(lr=0.01)
    ref, ours = make(torch.optim.lr_scheduler, ref_opt), make(ls, opt)
    option = "momentum" if kind == "sgd" else "betas"
    for step in range(20):
        if step == 10:  # resume from the state dicts, as a checkpoint would
            saved, options = ours.state_dict(), dict(opt.param_groups[0])
            ours = make(ls, opt).load_state_dict(saved)
            opt.param_groups[0].update(options)  # the optimizer's load_state_dict
        assert ours.get_last_lr() == pytest.approx(ref.get_last_lr(), rel=1e-12), step
        assert opt.param_groups[0][option] == pytest.approx(ref_opt.param_groups[0][option],
                                                            rel=1e-12), step
        ref_opt.step()
        ref.step()
        ours.step()


def test_a_scheduler_follows_its_optimizer_through_load_state_dict() -> None:
    """torch's resume order: build optimizer and scheduler, load both state dicts, step. The
    optimizer's ``load_state_dict`` replaces its groups; the scheduler must set the new ones
    (it kept setting the replaced groups, so the rate stopped decaying after a resume)."""
    import numpy as np

    from burnpy.autodiff import Autodiff
    from burnpy_cpu import CpuBackend

    w = bp.tensor(np.ones(2), backend=Autodiff(CpuBackend)).require_grad()
    tw = torch.ones(2, dtype=torch.float64, requires_grad=True)

    def built(params: Any, framework: Any) -> tuple[Any, Any]:
        opt = framework.optim.SGD(params, lr=0.1)
        return opt, (framework.optim.lr_scheduler.StepLR if framework is torch
                     else optim.StepLR)(opt, step_size=2, gamma=0.5)

    ours, theirs = built([w], bp), built([tw], torch)
    for _ in range(3):
        ours[1].step()
        theirs[1].step()
    states = [(o.state_dict(), s.state_dict()) for o, s in (ours, theirs)]
    ours, theirs = built([w], bp), built([tw], torch)
    for (opt, sched), (opt_state, sched_state) in zip((ours, theirs), states, strict=True):
        opt.load_state_dict(opt_state)
        sched.load_state_dict(sched_state)
    rates = []
    for _ in range(4):
        ours[1].step()
        theirs[1].step()
        rates.append((ours[0].param_groups[0]["lr"], theirs[0].param_groups[0]["lr"]))
    assert [a for a, _ in rates] == pytest.approx([b for _, b in rates])
    assert rates[0][1] == pytest.approx(0.025)
