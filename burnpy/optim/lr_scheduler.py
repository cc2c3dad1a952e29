"""Learning-rate schedulers, Burn style: ``lr = scheduler.step()`` each iteration, then
``optim.step(model, grads, lr=lr)``.

Every scheduler is a pure function of the base rate and the step count (``rate(base_lr,
step)``, equal to the value torch's matching scheduler gives after ``step`` calls) plus that
counter, so its whole state is one integer. Schedulers compose in time with ``SequentialLR``.

Torch's spelling works too: built on an optimizer (``StepLR(opt, step_size=...)``) instead of
a rate, a scheduler drives every parameter group from its own base rate (its ``initial_lr``,
torch's ``base_lrs``): ``opt.step(model, grads)`` then ``sched.step()`` each iteration.
Argument names, order and defaults are torch's (``ConstantLR(factor=1/3, total_iters=5)``,
``CosineAnnealingLR(T_max=)``, ``SequentialLR(optimizer, schedulers, milestones)``).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from burnpy.backend.errors import InvalidArgumentError
from burnpy.optim.optimizer import Optimizer


class LrScheduler(ABC):
    """A learning rate per step: ``step()`` returns the current one and advances (and, when
    built on an optimizer, sets every group's ``lr`` to the next step's rate)."""

    #: What a record of a scheduler holds (``burnpy.record.Stateful``).
    record_kind: ClassVar[str] = "scheduler"

    def __init__(self, optimizer: float | Optimizer) -> None:
        self.last_step = 0
        self.optimizer = optimizer if isinstance(optimizer, Optimizer) else None
        if isinstance(optimizer, Optimizer):
            self.base_lrs = [float(g.setdefault("initial_lr", g["lr"]))
                             for g in optimizer.param_groups]
        else:
            self.base_lrs = [float(optimizer)]
        self.base_lr = self.base_lrs[0]

    @abstractmethod
    def rate(self, base_lr: float, step: int) -> float:
        """The learning rate of step ``step`` (0-based) for a group whose base rate is
        ``base_lr``."""

    def lr_at(self, step: int) -> float:
        """The learning rate of step ``step`` (0-based), from ``base_lr``."""
        return self.rate(self.base_lr, step)

    @property
    def lr(self) -> float:
        """The learning rate the next ``step()`` returns."""
        return self.lr_at(self.last_step)

    def get_last_lr(self) -> list[float]:
        """The rate of each group at the current step (torch's ``get_last_lr``)."""
        return [self.rate(base, self.last_step) for base in self.base_lrs]

    def step(self) -> float:
        """The current learning rate; advances to the next step."""
        lr = self.lr_at(self.last_step)
        self.last_step += 1
        self._set_groups()
        return lr

    def _set_groups(self) -> None:
        """Give each group of the driven optimizer its rate at ``last_step``."""
        if self.optimizer is not None:
            for group, base in zip(self.optimizer.param_groups, self.base_lrs, strict=True):
                group["lr"] = self.rate(base, self.last_step)

    def state_dict(self) -> dict[str, Any]:
        """``{"type", "last_step"}``: the step count is the whole state."""
        return {"type": type(self).__name__, "last_step": self.last_step}

    def load_state_dict(self, state: Mapping[str, Any]) -> LrScheduler:
        """Continue from the step count of a ``state_dict`` of the same scheduler type."""
        if state.get("type") != type(self).__name__:
            raise InvalidArgumentError(f"load_state_dict: the state is for {state.get('type')}, "
                                       f"not {type(self).__name__}")
        self.last_step = int(state["last_step"])
        self._set_groups()
        return self


def _positive(name: str, value: float) -> None:
    if value <= 0:
        raise InvalidArgumentError(f"{name} must be > 0, got {value}")


class ConstantLR(LrScheduler):
    """``lr * factor`` for the first ``total_iters`` steps, then ``lr`` (torch's defaults:
    a third of the rate for five steps)."""

    def __init__(self, optimizer: float | Optimizer, factor: float = 1.0 / 3,
                 total_iters: int = 5) -> None:
        super().__init__(optimizer)
        if not 0.0 <= factor <= 1.0 or total_iters < 0:
            raise InvalidArgumentError(f"ConstantLR: need factor in [0, 1] and total_iters >= 0, "
                                       f"got {factor}, {total_iters}")
        self.factor, self.total_iters = factor, total_iters
        self._set_groups()

    def rate(self, base_lr: float, step: int) -> float:
        return base_lr * self.factor if step < self.total_iters else base_lr


class StepLR(LrScheduler):
    """``lr * gamma ** (step // step_size)``."""

    def __init__(self, optimizer: float | Optimizer, step_size: int, gamma: float = 0.1) -> None:
        super().__init__(optimizer)
        _positive("StepLR: step_size", step_size)
        self.step_size, self.gamma = step_size, gamma
        self._set_groups()

    def rate(self, base_lr: float, step: int) -> float:
        return base_lr * self.gamma ** (step // self.step_size)


class ExponentialLR(LrScheduler):
    """``lr * gamma ** step``."""

    def __init__(self, optimizer: float | Optimizer, gamma: float) -> None:
        super().__init__(optimizer)
        self.gamma = gamma
        self._set_groups()

    def rate(self, base_lr: float, step: int) -> float:
        return base_lr * self.gamma**step


class CosineAnnealingLR(LrScheduler):
    """Half a cosine from ``lr`` down to ``eta_min`` over ``T_max`` steps (torch's closed form;
    it rises again after ``T_max``, as torch's does)."""

    def __init__(self, optimizer: float | Optimizer, T_max: int,  # noqa: N803 (torch's name)
                 eta_min: float = 0.0) -> None:
        super().__init__(optimizer)
        _positive("CosineAnnealingLR: T_max", T_max)
        self.T_max, self.eta_min = T_max, eta_min
        self._set_groups()

    def rate(self, base_lr: float, step: int) -> float:
        cos = (1.0 + math.cos(math.pi * step / self.T_max)) / 2.0
        return self.eta_min + (base_lr - self.eta_min) * cos


class LinearLR(LrScheduler):
    """``lr`` times a factor moving linearly from ``start_factor`` to ``end_factor`` over
    ``total_iters`` steps, then constant: a linear warm-up with ``start_factor < 1``."""

    def __init__(self, optimizer: float | Optimizer, start_factor: float = 1.0 / 3,
                 end_factor: float = 1.0, total_iters: int = 5) -> None:
        super().__init__(optimizer)
        _positive("LinearLR: total_iters", total_iters)
        if not 0.0 < start_factor <= 1.0 or not 0.0 <= end_factor <= 1.0:
            raise InvalidArgumentError(f"LinearLR: need start_factor in (0, 1] and end_factor in "
                                       f"[0, 1], got {start_factor}, {end_factor}")
        self.start_factor, self.end_factor = start_factor, end_factor
        self.total_iters = total_iters
        self._set_groups()

    def rate(self, base_lr: float, step: int) -> float:
        t = min(step, self.total_iters) / self.total_iters
        return base_lr * (self.start_factor + (self.end_factor - self.start_factor) * t)


class SequentialLR(LrScheduler):
    """``schedulers[i]`` from ``milestones[i - 1]`` on, each restarted at its own step 0.

    ``optimizer`` is the one every scheduler was built on (torch's spelling), or the base
    rate of schedulers built on rates (Burn's)."""

    def __init__(self, optimizer: float | Optimizer, schedulers: Sequence[LrScheduler],
                 milestones: Sequence[int]) -> None:
        if not isinstance(optimizer, (Optimizer, int, float)) or not schedulers:
            raise InvalidArgumentError(f"SequentialLR: takes torch's (optimizer or base rate, "
                                       f"schedulers, milestones), got {type(optimizer).__name__} "
                                       f"and {len(schedulers)} scheduler(s)")
        wanted = optimizer if isinstance(optimizer, Optimizer) else None
        if any(s.optimizer is not wanted for s in schedulers):
            raise InvalidArgumentError("SequentialLR: every scheduler must be built on the "
                                       "optimizer given to SequentialLR (or all on rates)")
        super().__init__(optimizer)
        if len(milestones) != len(schedulers) - 1 or list(milestones) != sorted(milestones):
            raise InvalidArgumentError(f"SequentialLR: need {len(schedulers) - 1} increasing "
                                       f"milestones for {len(schedulers)} schedulers, got "
                                       f"{list(milestones)}")
        self.schedulers, self.milestones = list(schedulers), list(milestones)
        self._set_groups()

    def rate(self, base_lr: float, step: int) -> float:
        start = 0
        index = 0
        for i, milestone in enumerate(self.milestones):
            if step >= milestone:
                start, index = milestone, i + 1
        return self.schedulers[index].rate(base_lr, step - start)


def warmup_cosine(lr: float | Optimizer, warmup_steps: int, total_steps: int, eta_min: float = 0.0,
                  start_factor: float = 0.01) -> SequentialLR:
    """Linear warm-up from ``lr * start_factor`` to ``lr``, then cosine decay to ``eta_min``."""
    if not 0 < warmup_steps < total_steps:
        raise InvalidArgumentError(f"warmup_cosine: need 0 < warmup_steps < total_steps, got "
                                   f"{warmup_steps}, {total_steps}")
    return SequentialLR(lr, [LinearLR(lr, start_factor, 1.0, warmup_steps),
                             CosineAnnealingLR(lr, total_steps - warmup_steps, eta_min)],
                        [warmup_steps])
