"""``torch.optim.swa_utils``: weight averaging (SWA and EMA) with ``AveragedModel``, its
averaging functions, the ``SWALR`` schedule and ``update_bn``, torch's names and meaning.

As torch's, ``AveragedModel(model)`` holds a deep copy of ``model`` whose parameters (and,
with ``use_buffers=True``, buffers) ``update_parameters(model)`` moves to the running average;
without ``use_buffers`` the copy's buffers follow the model's. The averages are written into
the copy's tensors under ``no_grad``, so each stays the object the copy holds (a parameter
stays a tracked leaf) and its state dict is torch's (``n_averaged``, ``module.*``).

The averaging functions get ``num_averaged`` as a Python int (torch's annotation allows
``Tensor | int``): burnpy does not mix int and float tensors in arithmetic, so torch's formulas
such as ``avg + (cur - avg) / (num_averaged + 1)`` run as written. Int buffers
(``num_batches_tracked``) are averaged as torch's are: in the default float dtype, then
truncated back.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterable
from typing import Any, TypeAlias

from burnpy.autodiff.modes import no_grad
from burnpy.backend.device import Device
from burnpy.backend.errors import InvalidArgumentError, describe
from burnpy.nn import Module
from burnpy.nn.norm import _BatchNorm  # torch's test is isinstance(_, _BatchNorm) too
from burnpy.optim.lr_scheduler import LRScheduler, _per_group
from burnpy.optim.optimizer import Optimizer
from burnpy.tensor import Tensor

__all__ = ["SWALR", "AveragedModel", "get_ema_avg_fn", "get_ema_multi_avg_fn", "get_swa_avg_fn",
           "get_swa_multi_avg_fn", "update_bn"]

#: ``avg_fn(averaged, current, num_averaged) -> new average`` of one tensor.
AvgFn: TypeAlias = Callable[[Tensor, Tensor, int], Tensor]
#: ``multi_avg_fn(averaged, current, num_averaged)``: writes the averages in place.
MultiAvgFn: TypeAlias = Callable[[list[Tensor], list[Tensor], int], None]


def _floating(t: Tensor) -> Tensor:
    """``t``, an int tensor promoted to the default float dtype first (torch's promotion of
    ``long * float``)."""
    return t if t.dtype.is_float else t.float()


def _write(target: Tensor, value: Tensor) -> None:
    """Copy ``value`` into ``target`` in place, cast to its dtype (a float average into an
    int buffer truncates, as torch's ``copy_``)."""
    target.copy_(value if value.dtype is target.dtype else value.cast(target.dtype))


def _check_decay(op: str, decay: float) -> None:
    if not 0.0 <= decay <= 1.0:
        raise InvalidArgumentError(f"{op}: decay must be in [0, 1], got {decay}")


def get_ema_avg_fn(decay: float = 0.999) -> AvgFn:
    """The exponential moving average of one tensor: ``decay * averaged + (1 - decay) *
    current``."""
    _check_decay("get_ema_avg_fn", decay)

    def ema_update(averaged: Tensor, current: Tensor, num_averaged: int) -> Tensor:
        return _floating(averaged) * decay + _floating(current) * (1.0 - decay)

    return ema_update


def get_ema_multi_avg_fn(decay: float = 0.999) -> MultiAvgFn:
    """The exponential moving average of several tensors, written in place: float ones move
    ``1 - decay`` of the way to the current values (torch's lerp)."""
    _check_decay("get_ema_multi_avg_fn", decay)
    one = get_ema_avg_fn(decay)

    def ema_update(averaged: list[Tensor], current: list[Tensor], num_averaged: int) -> None:
        with no_grad():
            for a, c in zip(averaged, current, strict=True):
                _write(a, a.lerp(c, 1.0 - decay) if a.dtype.is_float
                       else one(a, c, num_averaged))

    return ema_update


def get_swa_avg_fn() -> AvgFn:
    """The equal-weight running average of one tensor: ``averaged + (current - averaged) /
    (num_averaged + 1)``."""

    def swa_update(averaged: Tensor, current: Tensor, num_averaged: int) -> Tensor:
        return _floating(averaged) + _floating(current - averaged) / (num_averaged + 1)

    return swa_update


def get_swa_multi_avg_fn() -> MultiAvgFn:
    """The equal-weight running average of several tensors, written in place."""
    one = get_swa_avg_fn()

    def swa_update(averaged: list[Tensor], current: list[Tensor], num_averaged: int) -> None:
        with no_grad():
            for a, c in zip(averaged, current, strict=True):
                _write(a, one(a, c, num_averaged))

    return swa_update


class AveragedModel(Module):
    """A copy of ``model`` holding the running average of its weights (torch's SWA and EMA):
    ``update_parameters(model)`` after each step; calling it runs the copy's ``forward``.

    ``avg_fn`` averages one tensor, ``multi_avg_fn`` several in place (one of them; default
    the equal-weight average, ``get_ema_multi_avg_fn(decay)`` for EMA); ``use_buffers``
    averages the buffers too; ``device`` moves the copy there."""

    n_averaged: Tensor

    def __init__(self, model: Module, device: Device | None = None,
                 avg_fn: AvgFn | None = None, multi_avg_fn: MultiAvgFn | None = None,
                 use_buffers: bool = False) -> None:
        if not isinstance(model, Module):
            raise InvalidArgumentError(f"AveragedModel: model must be a Module, got "
                                       f"{type(model).__name__}")
        if avg_fn is not None and multi_avg_fn is not None:
            raise InvalidArgumentError("AveragedModel: give avg_fn or multi_avg_fn, not both")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module.to(device=device)
        self.register_buffer("n_averaged", Tensor.full(  # the backend's int: torch's long on CPU
            (), 0, backend=self.module.backend, device=self.module.device))
        self.avg_fn, self.multi_avg_fn, self.use_buffers = avg_fn, multi_avg_fn, use_buffers

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """The averaged copy's forward."""
        return self.module(*args, **kwargs)

    def update_parameters(self, model: Module) -> None:
        """Fold ``model``'s current parameters (and buffers with ``use_buffers``) into the
        average; the first call copies them. Without ``use_buffers`` the copy's buffers take
        ``model``'s values."""
        pairs = self._pairs("parameter", self.module.parameters(), model.parameters())
        if self.use_buffers:
            pairs += self._pairs("buffer", self.module.buffers(), model.buffers())
        count = int(self.n_averaged.item())
        with no_grad():
            if count == 0:
                for a, c in pairs:
                    _write(a, c)
            elif self.avg_fn is not None:
                for a, c in pairs:
                    _write(a, self.avg_fn(a, c, count))
            else:
                average = self.multi_avg_fn or get_swa_multi_avg_fn()
                groups: dict[tuple[Any, ...], list[tuple[Tensor, Tensor]]] = {}
                for a, c in pairs:  # one call per backend, device and dtype, as torch's
                    groups.setdefault((a.backend, a.device, a.dtype), []).append((a, c))
                for group in groups.values():
                    average([a for a, _ in group], [c for _, c in group], count)
            if not self.use_buffers:
                for a, c in self._pairs("buffer", self.module.buffers(), model.buffers()):
                    _write(a, c)
            self.n_averaged.add_(1)

    def _pairs(self, what: str, ours: list[Tensor],
               theirs: list[Tensor]) -> list[tuple[Tensor, Tensor]]:
        """(averaged tensor, model tensor on its backend and device) in order; an
        ``InvalidArgumentError`` when the model's tensors are not the copy's."""
        if len(ours) != len(theirs):
            raise InvalidArgumentError(f"AveragedModel.update_parameters: the model has "
                                       f"{len(theirs)} {what}s, the averaged copy {len(ours)}")
        out = []
        for i, (a, c) in enumerate(zip(ours, theirs, strict=True)):
            if a.shape != c.shape:
                raise InvalidArgumentError(f"AveragedModel.update_parameters: {what} {i} has "
                                           f"shape {describe(c.shape)} in the model but "
                                           f"{describe(a.shape)} in the averaged copy")
            if c.backend is not a.backend or c.device != a.device:
                c = c.to_backend(a.backend, a.device)
            out.append((a, c))
        return out


def update_bn(loader: Iterable[Any], model: Module, device: Device | None = None) -> None:
    """Recompute the running statistics of ``model``'s batch norms with one pass over
    ``loader`` (batches are tensors, or lists/tuples whose first item is the input), as a
    cumulative average (``momentum=None``); modes and momenta are restored after."""
    norms = [m for m in model.modules() if isinstance(m, _BatchNorm)]
    if not norms:
        return
    momenta = [bn.momentum for bn in norms]
    was_training = model.training
    with no_grad():
        for bn in norms:
            if bn.track_running_stats:  # torch's reset_running_stats
                bn.running_mean.zero_()
                bn.running_var.fill_(1.0)
                bn.num_batches_tracked.zero_()
            bn.momentum = None
        model.train()
        try:
            for batch in loader:
                x = batch[0] if isinstance(batch, list | tuple) else batch
                model(x if device is None else x.to(device))
        finally:
            for bn, momentum in zip(norms, momenta, strict=True):
                bn.momentum = momentum
            model.train(was_training)


class SWALR(LRScheduler):
    """Anneals each group's rate to ``swa_lr`` (one value, or one per group) over
    ``anneal_epochs`` steps, cosine or linear, then keeps it there (torch's ``SWALR``)."""

    def __init__(self, optimizer: Optimizer, swa_lr: float | list[float],
                 anneal_epochs: int = 10, anneal_strategy: str = "cos",
                 last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise InvalidArgumentError(f"SWALR: takes an optimizer, got "
                                       f"{type(optimizer).__name__}")
        if anneal_strategy not in ("cos", "linear"):
            raise InvalidArgumentError(f"SWALR: anneal_strategy must be 'cos' or 'linear', got "
                                       f"{anneal_strategy!r}")
        if not isinstance(anneal_epochs, int) or isinstance(anneal_epochs, bool) \
                or anneal_epochs < 0:
            raise InvalidArgumentError(f"SWALR: anneal_epochs must be an int >= 0, got "
                                       f"{anneal_epochs!r}")
        for value, group in zip(_per_group("swa_lr", optimizer, swa_lr),
                                optimizer.param_groups, strict=True):
            group["swa_lr"] = float(value)
        self.anneal_epochs, self.anneal_strategy = anneal_epochs, anneal_strategy
        super().__init__(optimizer, last_epoch)

    def _alpha(self, t: float) -> float:
        """How far the annealing is at fraction ``t`` of it (clamped to [0, 1])."""
        t = min(1.0, max(0.0, t))
        return (1.0 - math.cos(math.pi * t)) / 2.0 if self.anneal_strategy == "cos" else t

    def get_lr(self) -> list[float]:
        """Each group's rate after this step: the rate the annealing started from, recovered
        from the current one, moved the annealing's share toward ``swa_lr`` (torch's
        chainable form, counted by ``step()`` calls)."""
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        span = max(1, self.anneal_epochs)
        before, now = self._alpha((step - 1) / span), self._alpha(step / span)
        out = []
        for group in self.groups:
            lr, target = float(group["lr"]), float(group["swa_lr"])
            start = target if before == 1.0 else (lr - before * target) / (1.0 - before)
            out.append(target * now + start * (1.0 - now))
        return out
