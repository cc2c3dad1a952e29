"""Learning-rate schedulers: torch's ``torch.optim.lr_scheduler``, names, arguments, defaults
and arithmetic, plus Burn's rate-only spelling.

torch's spelling: built on an optimizer (``StepLR(opt, step_size=...)``), a scheduler sets
every parameter group's ``lr`` (``opt.step(model, grads)`` then ``sched.step()`` each
iteration). Its construction is torch's first step (``last_epoch`` goes from -1 to 0), each
``step()`` then computes the next rate from the group's current one (torch's chainable form),
so several schedulers on one optimizer compose as torch's do (``ConstantLR`` and
``ExponentialLR`` multiply), ``ChainedScheduler`` steps several at once and ``SequentialLR``
switches between them at milestones, restarting each from its closed form.
``get_last_lr()``, ``last_epoch``, ``state_dict``/``load_state_dict`` are torch's. ``CyclicLR``
and ``OneCycleLR`` cycle the momentum too (``betas[0]`` for the Adam family).

Burn's spelling: built on a rate (``StepLR(0.1, 7)``), a scheduler keeps one group of its
own; ``lr = sched.step()`` returns the rate of the current iteration and advances, for
``optim.step(model, grads, lr=lr)``. Every scheduler's ``step()`` returns that rate.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar

from burnpy.backend.errors import InvalidArgumentError
from burnpy.optim.optimizer import Optimizer

#: Attributes a state dict leaves out: the optimizer, the groups, functions and children.
_NOT_STATE = frozenset({"optimizer", "_rate_only", "lr_lambdas", "scale_fn", "schedulers"})


class LRScheduler(ABC):
    """Base of the schedulers: subclasses give ``get_lr()``, each group's rate at
    ``last_epoch`` from its current one, and optionally ``closed_form()``, the rate from the
    base rates alone (used when ``SequentialLR`` restarts a scheduler)."""

    #: What a record of a scheduler holds (``burnpy.record.Stateful``).
    record_kind: ClassVar[str] = "scheduler"

    def __init__(self, optimizer: float | Optimizer, last_epoch: int = -1) -> None:
        self.optimizer = optimizer if isinstance(optimizer, Optimizer) else None
        self._rate_only: list[dict[str, Any]] = []
        if isinstance(optimizer, int | float) and not isinstance(optimizer, bool):
            self._rate_only = [{"lr": float(optimizer)}]
        elif not isinstance(optimizer, Optimizer):
            raise InvalidArgumentError(f"{type(self).__name__}: takes an optimizer (torch's) "
                                       f"or a base rate (Burn's), got "
                                       f"{type(optimizer).__name__}")
        for i, group in enumerate(self.groups):
            if last_epoch == -1:
                group.setdefault("initial_lr", group["lr"])
            elif "initial_lr" not in group:
                raise InvalidArgumentError(
                    f"{type(self).__name__}: last_epoch={last_epoch} resumes a schedule, but "
                    f"param_groups[{i}] has no 'initial_lr' (load the optimizer's state dict "
                    "first, or start with last_epoch=-1)")
        self.base_lrs = [float(g["initial_lr"]) for g in self.groups]
        self.last_epoch = last_epoch
        self._initial_step()

    def _initial_step(self) -> None:
        """torch's construction step: ``last_epoch`` -1 -> 0, the first rates set."""
        self._step_count = 0
        self.step()

    @abstractmethod
    def get_lr(self) -> list[float]:
        """Each group's rate at ``last_epoch`` (torch's chainable form: from the group's
        current rate)."""

    def closed_form(self) -> list[float]:
        """Each group's rate at ``last_epoch`` from the base rates alone; by default the
        chainable form (torch's, for schedulers without a closed form)."""
        return self.get_lr()

    @property
    def groups(self) -> list[dict[str, Any]]:
        """The groups whose rates this schedules: the optimizer's ``param_groups`` as they are
        now (its ``load_state_dict`` replaces them, as torch's does), or a Burn-style
        scheduler's one rate-only group."""
        return self.optimizer.param_groups if self.optimizer is not None else self._rate_only

    @property
    def lr(self) -> float:
        """The current rate of the first group: what the next ``step()`` returns."""
        return float(self.groups[0]["lr"])

    def get_last_lr(self) -> list[float]:
        """The rate of each group set by the last step (torch's ``get_last_lr``)."""
        return list(self._last_lr)

    def step(self) -> float:
        """Advance one iteration: every group gets its next rate. Returns the rate of the
        iteration just finished (the first group's; Burn's ``lr = sched.step()``)."""
        current = self.lr
        self._step_count += 1
        self.last_epoch += 1
        self._set(self.get_lr())
        return current

    def _restart(self) -> None:
        """Set the rates of epoch 0 from the closed form (``SequentialLR``'s milestones)."""
        self.last_epoch = 0
        self._set(self.closed_form())

    def _set(self, values: Sequence[float]) -> None:
        for group, value in zip(self.groups, values, strict=True):
            group["lr"] = value
        self._last_lr = [float(g["lr"]) for g in self.groups]

    def state_dict(self) -> dict[str, Any]:
        """``{"type", ...}`` and torch's entries: every attribute but the optimizer and the
        functions (``last_epoch``, ``base_lrs``, ``_last_lr``...)."""
        state = {k: v for k, v in vars(self).items() if k not in _NOT_STATE}
        if "schedulers" in vars(self):
            state["schedulers"] = [s.state_dict() for s in self.schedulers]
        return {"type": type(self).__name__, **state}

    def load_state_dict(self, state: Mapping[str, Any]) -> LRScheduler:
        """Continue from a ``state_dict`` of the same scheduler type (a Burn-style one gets
        its rate back too; an optimizer's comes with the optimizer's state dict)."""
        if state.get("type") != type(self).__name__:
            raise InvalidArgumentError(f"load_state_dict: the state is for {state.get('type')}, "
                                       f"not {type(self).__name__}")
        for key, value in state.items():
            if key == "schedulers":
                for child, saved in zip(self.schedulers, value, strict=True):
                    child.load_state_dict(saved)
            elif key != "type":
                setattr(self, key, list(value) if isinstance(value, tuple) else value)
        if self.optimizer is None:
            for group, lr in zip(self.groups, self._last_lr, strict=True):
                group["lr"] = lr
        return self

    #: The children of ``SequentialLR`` and ``ChainedScheduler``.
    schedulers: list[LRScheduler]


#: Burn's name of the base class.
LrScheduler = LRScheduler


def _positive(name: str, value: float) -> None:
    if value <= 0:
        raise InvalidArgumentError(f"{name} must be > 0, got {value}")


def _per_group(name: str, optimizer: float | Optimizer, value: Any) -> list[Any]:
    """A per-group argument: one value for every group, or a list with one per group."""
    count = len(optimizer.param_groups) if isinstance(optimizer, Optimizer) else 1
    if isinstance(value, list | tuple):
        if len(value) != count:
            raise InvalidArgumentError(f"expected {count} values for {name}, got {len(value)}")
        return list(value)
    return [value] * count


class LambdaLR(LRScheduler):
    """``base_lr * lr_lambda(epoch)`` (one function, or one per group)."""

    def __init__(self, optimizer: float | Optimizer,
                 lr_lambda: Callable[[int], float] | list[Callable[[int], float]],
                 last_epoch: int = -1) -> None:
        self.lr_lambdas = _per_group("lr_lambda", optimizer, lr_lambda)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        return [base * f(self.last_epoch)
                for base, f in zip(self.base_lrs, self.lr_lambdas, strict=True)]


class MultiplicativeLR(LRScheduler):
    """Each step multiplies the rate by ``lr_lambda(epoch)``."""

    def __init__(self, optimizer: float | Optimizer,
                 lr_lambda: Callable[[int], float] | list[Callable[[int], float]],
                 last_epoch: int = -1) -> None:
        self.lr_lambdas = _per_group("lr_lambda", optimizer, lr_lambda)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch <= 0:
            return [g["lr"] for g in self.groups]
        return [g["lr"] * f(self.last_epoch)
                for g, f in zip(self.groups, self.lr_lambdas, strict=True)]


class StepLR(LRScheduler):
    """``lr * gamma ** (epoch // step_size)``."""

    def __init__(self, optimizer: float | Optimizer, step_size: int, gamma: float = 0.1,
                 last_epoch: int = -1) -> None:
        _positive("StepLR: step_size", step_size)
        self.step_size, self.gamma = step_size, gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0 or self.last_epoch % self.step_size:
            return [g["lr"] for g in self.groups]
        return [g["lr"] * self.gamma for g in self.groups]

    def closed_form(self) -> list[float]:
        return [b * self.gamma ** (self.last_epoch // self.step_size) for b in self.base_lrs]


class MultiStepLR(LRScheduler):
    """``lr * gamma`` at each milestone (a repeated milestone counts each time)."""

    def __init__(self, optimizer: float | Optimizer, milestones: Iterable[int],
                 gamma: float = 0.1, last_epoch: int = -1) -> None:
        self.milestones = dict(Counter(int(m) for m in milestones))
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        times = self.milestones.get(self.last_epoch, 0)
        return [g["lr"] * self.gamma**times for g in self.groups]

    def closed_form(self) -> list[float]:
        passed = sum(n for m, n in self.milestones.items() if m <= self.last_epoch)
        return [b * self.gamma**passed for b in self.base_lrs]

    def load_state_dict(self, state: Mapping[str, Any]) -> LRScheduler:
        super().load_state_dict(state)
        self.milestones = {int(m): int(n) for m, n in self.milestones.items()}
        return self


class ConstantLR(LRScheduler):
    """``lr * factor`` for the first ``total_iters`` steps, then ``lr`` (torch's defaults:
    a third of the rate for five steps)."""

    def __init__(self, optimizer: float | Optimizer, factor: float = 1.0 / 3,
                 total_iters: int = 5, last_epoch: int = -1) -> None:
        if not 0.0 <= factor <= 1.0 or total_iters < 0:
            raise InvalidArgumentError(f"ConstantLR: need factor in [0, 1] and total_iters >= 0, "
                                       f"got {factor}, {total_iters}")
        self.factor, self.total_iters = factor, total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0:
            return [g["lr"] * self.factor for g in self.groups]
        if self.last_epoch != self.total_iters:
            return [g["lr"] for g in self.groups]
        return [g["lr"] * (1.0 / self.factor) for g in self.groups]

    def closed_form(self) -> list[float]:
        scale = self.factor if self.last_epoch < self.total_iters else 1.0
        return [b * scale for b in self.base_lrs]


class LinearLR(LRScheduler):
    """``lr`` times a factor moving linearly from ``start_factor`` to ``end_factor`` over
    ``total_iters`` steps, then constant: a linear warm-up with ``start_factor < 1``."""

    def __init__(self, optimizer: float | Optimizer, start_factor: float = 1.0 / 3,
                 end_factor: float = 1.0, total_iters: int = 5, last_epoch: int = -1) -> None:
        _positive("LinearLR: total_iters", total_iters)
        if not 0.0 < start_factor <= 1.0 or not 0.0 <= end_factor <= 1.0:
            raise InvalidArgumentError(f"LinearLR: need start_factor in (0, 1] and end_factor in "
                                       f"[0, 1], got {start_factor}, {end_factor}")
        self.start_factor, self.end_factor = start_factor, end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0:
            return [g["lr"] * self.start_factor for g in self.groups]
        if self.last_epoch > self.total_iters:
            return [g["lr"] for g in self.groups]
        rise = self.end_factor - self.start_factor
        scale = 1.0 + rise / (self.total_iters * self.start_factor
                              + (self.last_epoch - 1) * rise)
        return [g["lr"] * scale for g in self.groups]

    def closed_form(self) -> list[float]:
        t = min(self.total_iters, self.last_epoch) / self.total_iters
        return [b * (self.start_factor + (self.end_factor - self.start_factor) * t)
                for b in self.base_lrs]


class ExponentialLR(LRScheduler):
    """``lr * gamma ** epoch``."""

    def __init__(self, optimizer: float | Optimizer, gamma: float,
                 last_epoch: int = -1) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0:
            return [g["lr"] for g in self.groups]
        return [g["lr"] * self.gamma for g in self.groups]

    def closed_form(self) -> list[float]:
        return [b * self.gamma**self.last_epoch for b in self.base_lrs]


class PolynomialLR(LRScheduler):
    """``lr * (1 - epoch / total_iters) ** power`` until ``total_iters``, then 0."""

    def __init__(self, optimizer: float | Optimizer, total_iters: int = 5, power: float = 1.0,
                 last_epoch: int = -1) -> None:
        self.total_iters, self.power = total_iters, power
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        e, n = self.last_epoch, self.total_iters
        if e == 0 or e > n:
            return [g["lr"] for g in self.groups]
        scale = ((1.0 - e / n) / (1.0 - (e - 1) / n)) ** self.power
        return [g["lr"] * scale for g in self.groups]

    def closed_form(self) -> list[float]:
        left = 1.0 - min(self.total_iters, self.last_epoch) / self.total_iters
        return [b * left**self.power for b in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Half a cosine from ``lr`` down to ``eta_min`` over ``T_max`` steps (torch's recursive
    form; it rises again after ``T_max``, as torch's does)."""

    def __init__(self, optimizer: float | Optimizer, T_max: int,  # noqa: N803 (torch's name)
                 eta_min: float = 0.0, last_epoch: int = -1) -> None:
        _positive("CosineAnnealingLR: T_max", T_max)
        self.T_max, self.eta_min = T_max, eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        e, t, low = self.last_epoch, self.T_max, self.eta_min
        if e == 0:
            return [g["lr"] for g in self.groups]
        if self._step_count == 1 and e > 0:
            return self.closed_form()
        if (e - 1 - t) % (2 * t) == 0:
            return [g["lr"] + (b - low) * (1.0 - math.cos(math.pi / t)) / 2.0
                    for b, g in zip(self.base_lrs, self.groups, strict=True)]
        ratio = (1.0 + math.cos(math.pi * e / t)) / (1.0 + math.cos(math.pi * (e - 1) / t))
        return [ratio * (g["lr"] - low) + low for g in self.groups]

    def closed_form(self) -> list[float]:
        cos = (1.0 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2.0
        return [self.eta_min + (b - self.eta_min) * cos for b in self.base_lrs]


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing from the base rate to ``eta_min`` over ``T_0`` steps, restarted,
    each period ``T_mult`` times the last (SGDR, Loshchilov and Hutter)."""

    def __init__(self, optimizer: float | Optimizer, T_0: int,  # noqa: N803 (torch's names)
                 T_mult: int = 1, eta_min: float = 0.0, last_epoch: int = -1) -> None:  # noqa: N803
        if T_0 <= 0 or T_mult < 1:
            raise InvalidArgumentError(f"CosineAnnealingWarmRestarts: need T_0 > 0 and "
                                       f"T_mult >= 1, got {T_0}, {T_mult}")
        self.T_0, self.T_i, self.T_mult, self.eta_min = T_0, T_0, T_mult, eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        cos = (1.0 + math.cos(math.pi * self.T_cur / self.T_i)) / 2.0
        return [self.eta_min + (b - self.eta_min) * cos for b in self.base_lrs]

    def step(self) -> float:
        """Advance one iteration (a restart when the period ends); returns the rate of the
        iteration just finished."""
        current = self.lr
        self._step_count += 1
        if self.last_epoch < 0:
            self.T_i, self.T_cur = self.T_0, 0
        else:
            self.T_cur += 1
            if self.T_cur >= self.T_i:
                self.T_cur -= self.T_i
                self.T_i *= self.T_mult
        self.last_epoch += 1
        self._set(self.get_lr())
        return current


class _Momentum:
    """Momentum cycling shared by ``CyclicLR`` and ``OneCycleLR``: the group option cycled
    is ``betas[0]`` for the Adam family, ``momentum`` otherwise."""

    @staticmethod
    def uses_beta1(name: str, optimizer: Optimizer) -> bool:
        if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
            raise InvalidArgumentError(f"{name}: cycle_momentum=True needs an optimizer with "
                                       f"momentum or betas; {type(optimizer).__name__} has "
                                       "neither (pass cycle_momentum=False)")
        return "betas" in optimizer.defaults

    @staticmethod
    def set(group: dict[str, Any], beta1: bool, value: float) -> None:
        if beta1:
            group["betas"] = (value, *group["betas"][1:])
        else:
            group["momentum"] = value


class CyclicLR(LRScheduler):
    """The rate cycles between ``base_lr`` and ``max_lr`` (Smith): triangular,
    triangular2 (halved amplitude each cycle), exp_range or a custom ``scale_fn``; the
    momentum cycles inversely between ``max_momentum`` and ``base_momentum``."""

    def __init__(self, optimizer: Optimizer, base_lr: float | list[float],
                 max_lr: float | list[float], step_size_up: int = 2000,
                 step_size_down: int | None = None, mode: str = "triangular",
                 gamma: float = 1.0, scale_fn: Callable[[float], float] | None = None,
                 scale_mode: str = "cycle", cycle_momentum: bool = True,
                 base_momentum: float = 0.8, max_momentum: float = 0.9,
                 last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise InvalidArgumentError("CyclicLR: takes an optimizer")
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise InvalidArgumentError(f"CyclicLR: mode must be triangular, triangular2 or "
                                       f"exp_range (or give scale_fn), got {mode!r}")
        base_lrs = _per_group("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups, strict=True):
                group["lr"] = lr
        self.max_lrs = _per_group("max_lr", optimizer, max_lr)
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.total_size, self.step_ratio = up + down, up / (up + down)
        self.mode, self.gamma, self.scale_fn = mode, gamma, scale_fn
        self.scale_mode = scale_mode if scale_fn is not None else (
            "iterations" if mode == "exp_range" else "cycle")
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.use_beta1 = _Momentum.uses_beta1("CyclicLR", optimizer)
            self.base_momentums = _per_group("base_momentum", optimizer, base_momentum)
            self.max_momentums = _per_group("max_momentum", optimizer, max_momentum)
            if last_epoch == -1:
                for top, low, group in zip(self.max_momentums, self.base_momentums,
                                           optimizer.param_groups, strict=True):
                    _Momentum.set(group, self.use_beta1, top)
                    group["max_momentum"], group["base_momentum"] = top, low
        super().__init__(optimizer, last_epoch)
        self.base_lrs = [float(b) for b in base_lrs]

    def _scale(self, x: float) -> float:
        if self.scale_fn is not None:
            return self.scale_fn(x)
        if self.mode == "triangular":
            return 1.0
        if self.mode == "triangular2":
            return 1.0 / 2.0 ** (x - 1)
        return self.gamma**x

    def get_lr(self) -> list[float]:
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        rising = x <= self.step_ratio
        height = x / self.step_ratio if rising else (x - 1) / (self.step_ratio - 1)
        scale = self._scale(cycle if self.scale_mode == "cycle" else self.last_epoch)
        lrs = [b + (m - b) * height * scale
               for b, m in zip(self.base_lrs, self.max_lrs, strict=True)]
        if self.cycle_momentum:
            for group, low, top in zip(self.groups, self.base_momentums, self.max_momentums,
                                       strict=True):
                _Momentum.set(group, self.use_beta1, top - (top - low) * height * scale)
        return lrs


class OneCycleLR(LRScheduler):
    """The 1cycle policy (Smith and Topin): the rate rises from ``max_lr / div_factor`` to
    ``max_lr`` over ``pct_start`` of ``total_steps``, then anneals to ``initial_lr /
    final_div_factor`` (cosine or linear; three phases with ``three_phase``), the momentum
    the other way."""

    def __init__(self, optimizer: Optimizer, max_lr: float | list[float],
                 total_steps: int | None = None, epochs: int | None = None,
                 steps_per_epoch: int | None = None, pct_start: float = 0.3,
                 anneal_strategy: str = "cos", cycle_momentum: bool = True,
                 base_momentum: float | list[float] = 0.85,
                 max_momentum: float | list[float] = 0.95, div_factor: float = 25.0,
                 final_div_factor: float = 1e4, three_phase: bool = False,
                 last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise InvalidArgumentError("OneCycleLR: takes an optimizer")
        if total_steps is None:
            if epochs is None or steps_per_epoch is None:
                raise InvalidArgumentError("OneCycleLR: give total_steps, or epochs and "
                                           "steps_per_epoch")
            total_steps = epochs * steps_per_epoch
        _positive("OneCycleLR: total_steps", total_steps)
        if not 0.0 <= pct_start <= 1.0 or anneal_strategy not in ("cos", "linear"):
            raise InvalidArgumentError(f"OneCycleLR: need pct_start in [0, 1] and "
                                       f"anneal_strategy 'cos' or 'linear', got {pct_start}, "
                                       f"{anneal_strategy!r}")
        self.total_steps, self.anneal_strategy = total_steps, anneal_strategy
        up = float(pct_start * total_steps) - 1
        #: (last step, start key, end key, start momentum key, end momentum key) per phase.
        self.phases: list[tuple[float, str, str, str, str]] = (
            [(up, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
             (float(2 * pct_start * total_steps) - 2, "max_lr", "initial_lr", "base_momentum",
              "max_momentum"),
             (total_steps - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum")]
            if three_phase else
            [(up, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
             (total_steps - 1, "max_lr", "min_lr", "base_momentum", "max_momentum")])
        if last_epoch == -1:
            for top, group in zip(_per_group("max_lr", optimizer, max_lr),
                                  optimizer.param_groups, strict=True):
                group["initial_lr"] = top / div_factor
                group["max_lr"] = top
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.use_beta1 = _Momentum.uses_beta1("OneCycleLR", optimizer)
            if last_epoch == -1:
                for top, low, group in zip(
                        _per_group("max_momentum", optimizer, max_momentum),
                        _per_group("base_momentum", optimizer, base_momentum),
                        optimizer.param_groups, strict=True):
                    _Momentum.set(group, self.use_beta1, top)
                    group["max_momentum"], group["base_momentum"] = top, low
        super().__init__(optimizer, last_epoch)

    def _anneal(self, start: float, end: float, pct: float) -> float:
        if self.anneal_strategy == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self) -> list[float]:
        step = self.last_epoch
        if step > self.total_steps:
            raise InvalidArgumentError(f"OneCycleLR: stepped {step} times, more than "
                                       f"total_steps={self.total_steps}")
        lrs = []
        for group in self.groups:
            start = 0.0
            for i, (end, lr0, lr1, m0, m1) in enumerate(self.phases):
                if step <= end or i == len(self.phases) - 1:
                    pct = (step - start) / (end - start)
                    lrs.append(self._anneal(group[lr0], group[lr1], pct))
                    if self.cycle_momentum:
                        _Momentum.set(group, self.use_beta1,
                                      self._anneal(group[m0], group[m1], pct))
                    break
                start = end
        return lrs


class ReduceLROnPlateau(LRScheduler):
    """Multiplies the rate by ``factor`` once the watched metric (``step(metric)``) has not
    improved for ``patience`` steps, then waits ``cooldown`` steps; never below
    ``min_lr``."""

    def __init__(self, optimizer: float | Optimizer, mode: str = "min", factor: float = 0.1,
                 patience: int = 10, threshold: float = 1e-4, threshold_mode: str = "rel",
                 cooldown: int = 0, min_lr: list[float] | float = 0, eps: float = 1e-8) -> None:
        if factor >= 1.0:
            raise InvalidArgumentError(f"ReduceLROnPlateau: factor must be < 1, got {factor}")
        if mode not in ("min", "max") or threshold_mode not in ("rel", "abs"):
            raise InvalidArgumentError(f"ReduceLROnPlateau: mode must be 'min' or 'max' and "
                                       f"threshold_mode 'rel' or 'abs', got {mode!r}, "
                                       f"{threshold_mode!r}")
        self.factor, self.patience, self.cooldown, self.eps = factor, patience, cooldown, eps
        self.mode, self.threshold, self.threshold_mode = mode, threshold, threshold_mode
        self.min_lrs = [float(m) for m in _per_group("min_lr", optimizer, min_lr)]
        self.best = math.inf if mode == "min" else -math.inf
        self.cooldown_counter = self.num_bad_epochs = 0
        # Not torch's construction step: the rates stay as they are until a plateau.
        self.optimizer = optimizer if isinstance(optimizer, Optimizer) else None
        self._rate_only = ([] if isinstance(optimizer, Optimizer)
                           else [{"lr": float(optimizer)}])
        self.base_lrs = [float(g["lr"]) for g in self.groups]
        self.last_epoch, self._step_count = 0, 0
        self._last_lr = list(self.base_lrs)

    def get_lr(self) -> list[float]:
        """The groups' current rates (this scheduler sets them in ``step``)."""
        return [float(g["lr"]) for g in self.groups]

    def _is_better(self, value: float) -> bool:
        if self.mode == "min":
            bound = (self.best * (1.0 - self.threshold) if self.threshold_mode == "rel"
                     else self.best - self.threshold)
            return value < bound
        bound = (self.best * (1.0 + self.threshold) if self.threshold_mode == "rel"
                 else self.best + self.threshold)
        return value > bound

    def step(self, metrics: Any) -> float:  # type: ignore[override]  # torch's: needs the metric
        """Record this step's metric (a float or a 0-d tensor) and cut the rates after a
        plateau; returns the rate of the iteration just finished."""
        current, value = self.lr, float(metrics)
        self.last_epoch += 1
        if self._is_better(value):
            self.best, self.num_bad_epochs = value, 0
        else:
            self.num_bad_epochs += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            for group, floor in zip(self.groups, self.min_lrs, strict=True):
                old = float(group["lr"])
                new = max(old * self.factor, floor)
                if old - new > self.eps:
                    group["lr"] = new
            self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
        self._last_lr = [float(g["lr"]) for g in self.groups]
        return current


def _same_optimizer(name: str, optimizer: float | Optimizer | None,
                    schedulers: Sequence[LRScheduler]) -> None:
    """Children of ``SequentialLR``/``ChainedScheduler`` share the one optimizer (or are all
    Burn-style); none is a ``ReduceLROnPlateau`` (its step needs a metric)."""
    if not schedulers:
        raise InvalidArgumentError(f"{name}: needs at least one scheduler")
    wanted = optimizer if isinstance(optimizer, Optimizer) else None
    for i, s in enumerate(schedulers):
        if not isinstance(s, LRScheduler):
            raise InvalidArgumentError(f"{name}: schedulers[{i}] is a {type(s).__name__}, not "
                                       "a scheduler (torch's order: optimizer, schedulers, ...)")
        if isinstance(s, ReduceLROnPlateau):
            raise InvalidArgumentError(f"{name}: ReduceLROnPlateau at index {i} cannot be "
                                       "stepped without its metric")
        if s.optimizer is not wanted:
            raise InvalidArgumentError(f"{name}: every scheduler must be built on the "
                                       f"optimizer given to {name} (or all on rates)")


class SequentialLR(LRScheduler):
    """``schedulers[i]`` from ``milestones[i - 1]`` on, each restarted at its own epoch 0.

    ``optimizer`` is the one every scheduler was built on (torch's spelling), or the base
    rate of schedulers built on rates (Burn's: they then share this scheduler's group)."""

    def __init__(self, optimizer: float | Optimizer, schedulers: Sequence[LRScheduler],
                 milestones: Sequence[int], last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer | int | float):
            raise InvalidArgumentError(f"SequentialLR: takes torch's (optimizer or base rate, "
                                       f"schedulers, milestones), got {type(optimizer).__name__}")
        _same_optimizer("SequentialLR", optimizer, schedulers)
        if len(milestones) != len(schedulers) - 1 or list(milestones) != sorted(milestones):
            raise InvalidArgumentError(f"SequentialLR: need {len(schedulers) - 1} increasing "
                                       f"milestones for {len(schedulers)} schedulers, got "
                                       f"{list(milestones)}")
        self.schedulers, self.milestones = list(schedulers), list(milestones)
        self.optimizer = optimizer if isinstance(optimizer, Optimizer) else None
        self._rate_only = ([] if isinstance(optimizer, Optimizer)
                           else [{"lr": float(optimizer), "initial_lr": float(optimizer)}])
        self.base_lrs = [float(g["initial_lr"]) for g in self.groups]
        for s in self.schedulers:
            s._rate_only = self._rate_only  # Burn-style children share this group
        for group in self.groups:
            group["lr"] = group["initial_lr"]
        self._undo(self)
        self.last_epoch, self._step_count = last_epoch + 1, 0
        first = self.schedulers[bisect_right(self.milestones, 0)]
        first._initial_step()
        self._last_lr = first.get_last_lr()

    def get_lr(self) -> list[float]:
        """The groups' current rates (this scheduler sets them in ``step``)."""
        return [float(g["lr"]) for g in self.groups]

    @staticmethod
    def _undo(scheduler: LRScheduler) -> None:
        """Take back the construction step of every scheduler below ``scheduler``."""
        for child in scheduler.schedulers:
            if "schedulers" in vars(child):
                SequentialLR._undo(child)
            else:
                child.last_epoch -= 1

    def step(self) -> float:
        """Step the scheduler of the current phase (restarting it at its milestone);
        returns the rate of the iteration just finished."""
        current = self.lr
        self.last_epoch += 1
        index = bisect_right(self.milestones, self.last_epoch)
        scheduler = self.schedulers[index]
        if index > 0 and self.milestones[index - 1] == self.last_epoch:
            scheduler._restart()
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()
        return current


class ChainedScheduler(LRScheduler):
    """Steps every scheduler of ``schedulers`` (built on one optimizer) at once: their
    changes compose, as torch's."""

    def __init__(self, schedulers: Sequence[LRScheduler],
                 optimizer: Optimizer | None = None) -> None:
        if not schedulers:
            raise InvalidArgumentError("ChainedScheduler: needs at least one scheduler")
        optimizer = optimizer or schedulers[0].optimizer
        _same_optimizer("ChainedScheduler", optimizer, schedulers)
        self.schedulers, self.optimizer = list(schedulers), optimizer
        self._rate_only = schedulers[-1]._rate_only
        self.base_lrs = list(schedulers[0].base_lrs)
        self.last_epoch, self._step_count = 0, 0
        self._last_lr = [float(g["lr"]) for g in self.groups]

    def get_lr(self) -> list[float]:
        """The groups' current rates (this scheduler sets them in ``step``)."""
        return [float(g["lr"]) for g in self.groups]

    def step(self) -> float:
        """Step every scheduler in order; returns the rate of the iteration just finished."""
        current = self.lr
        for s in self.schedulers:
            s.step()
        self._last_lr = [float(g["lr"]) for g in self.groups]
        return current


def warmup_cosine(lr: float | Optimizer, warmup_steps: int, total_steps: int, eta_min: float = 0.0,
                  start_factor: float = 0.01) -> SequentialLR:
    """Linear warm-up from ``lr * start_factor`` to ``lr``, then cosine decay to ``eta_min``."""
    if not 0 < warmup_steps < total_steps:
        raise InvalidArgumentError(f"warmup_cosine: need 0 < warmup_steps < total_steps, got "
                                   f"{warmup_steps}, {total_steps}")
    return SequentialLR(lr, [LinearLR(lr, start_factor, 1.0, warmup_steps),
                             CosineAnnealingLR(lr, total_steps - warmup_steps, eta_min)],
                        [warmup_steps])
