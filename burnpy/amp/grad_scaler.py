"""``GradScaler``: loss scaling for float16 training, torch's ``torch.amp.GradScaler`` in
burnpy's optimizer API (``scaler.step(opt, model, grads)``).

float16 gradients of small losses underflow to zero. The scaler multiplies the loss by a
large factor before ``backward``, divides the gradients by it before the optimizer reads
them, and skips a step whose gradients hold an inf or NaN (the factor was too large), lowering
the factor; after ``growth_interval`` clean steps it raises it again. The factor is a float32
number, updated with torch's arithmetic, so both produce the same sequence of scales.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from burnpy.backend.dtype import DType
from burnpy.backend.errors import InvalidArgumentError
from burnpy.tensor._core import FLOAT, is_tensor
from burnpy.tensor.tensor import Tensor

if TYPE_CHECKING:
    from burnpy.autodiff.gradients import Gradients


class _Parameters(Protocol):
    """What the scaler needs of a model: its parameters (``burnpy.nn.Module``)."""

    def parameters(self) -> list[Tensor]:
        """The model's parameters."""
        ...


class _Optimizer(Protocol):
    """What the scaler needs of an optimizer: ``step(model, grads)`` (``burnpy.optim``)."""

    def step(self, model: Any, grads: Any = None, *args: Any, **kwargs: Any) -> Any:
        """Update the model's parameters from ``grads``."""
        ...


class _OptimizerState:
    """Per optimizer, since the last ``update``: unscaled yet, stepped yet, inf or NaN found."""

    __slots__ = ("found_inf", "stepped", "unscaled")

    def __init__(self) -> None:
        self.unscaled = False
        self.stepped = False
        self.found_inf = False


class GradScaler:
    """Scale the loss, unscale the gradients, skip steps with inf/NaN gradients and adapt the
    scale, as ``torch.amp.GradScaler``: ``scaler.scale(loss).backward()``, then
    ``scaler.step(opt, model, grads)`` and ``scaler.update()``. ``enabled=False`` makes every
    method a pass-through, so one script runs with and without it."""

    def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000,
                 enabled: bool = True) -> None:
        if not growth_factor > 1.0:
            raise InvalidArgumentError(f"GradScaler: growth_factor must be > 1, got "
                                       f"{growth_factor}")
        if not 0.0 < backoff_factor < 1.0:
            raise InvalidArgumentError(f"GradScaler: backoff_factor must be in (0, 1), got "
                                       f"{backoff_factor}")
        if growth_interval < 1:
            raise InvalidArgumentError(f"GradScaler: growth_interval must be >= 1, got "
                                       f"{growth_interval}")
        self._enabled = bool(enabled)
        self._scale = np.float32(init_scale)
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = int(growth_interval)
        self._growth_tracker = 0
        self._optimizers: dict[int, _OptimizerState] = {}

    def is_enabled(self) -> bool:
        """Whether the scaler scales (``enabled``)."""
        return self._enabled

    def get_scale(self) -> float:
        """The current scale (1.0 when disabled)."""
        return float(self._scale) if self._enabled else 1.0

    def get_growth_factor(self) -> float:
        """The factor the scale grows by after ``growth_interval`` clean steps."""
        return self._growth_factor

    def get_backoff_factor(self) -> float:
        """The factor the scale shrinks by after a step with inf/NaN gradients."""
        return self._backoff_factor

    def get_growth_interval(self) -> int:
        """How many clean steps in a row grow the scale."""
        return self._growth_interval

    def scale(self, outputs: Any) -> Any:
        """``outputs`` (a tensor, or lists/tuples of tensors) times the scale. A float16 or
        bfloat16 tensor is scaled in float32 (torch multiplies by its float32 scale tensor),
        so a scaled loss does not overflow its own dtype."""
        if not self._enabled:
            return outputs
        if is_tensor(outputs):
            if outputs.kind is not FLOAT:
                raise InvalidArgumentError(f"GradScaler.scale: expects float tensors, got "
                                           f"{outputs.kind} ({outputs.dtype!r})")
            if outputs.dtype in (DType.float16, DType.bfloat16):
                outputs = outputs.float()
            return outputs * float(self._scale)
        if isinstance(outputs, list | tuple):
            return type(outputs)(self.scale(o) for o in outputs)
        raise InvalidArgumentError(f"GradScaler.scale: expects a tensor or a list/tuple of "
                                   f"tensors, got {type(outputs).__name__}")

    def _state(self, optimizer: _Optimizer) -> _OptimizerState:
        return self._optimizers.setdefault(id(optimizer), _OptimizerState())

    def unscale_(self, optimizer: _Optimizer, model: _Parameters, grads: Gradients) -> None:
        """Divide ``model``'s gradients in ``grads`` by the scale, in place, and note whether
        any is inf or NaN; call it before clipping gradients, then ``step`` does not unscale
        again. Once per optimizer between ``update``s."""
        if not self._enabled:
            return
        state = self._state(optimizer)
        if state.unscaled:
            raise InvalidArgumentError("GradScaler.unscale_: already called on this optimizer "
                                       "since the last update()")
        if state.stepped:
            raise InvalidArgumentError("GradScaler.unscale_: called after step(); unscale "
                                       "before stepping")
        inv_scale = float(np.float32(1.0 / float(self._scale)))  # torch: fp64 reciprocal, fp32
        found = False
        for param in model.parameters():
            grad = param.grad(grads)
            if grad is None:
                continue
            unscaled = grad * inv_scale
            if not found and not bool(unscaled.isfinite().all().item()):
                found = True
            param.grad_replace(grads, unscaled)
        state.unscaled = True
        state.found_inf = found

    def step(self, optimizer: _Optimizer, model: _Parameters, grads: Gradients,
             *args: Any, **kwargs: Any) -> Any:
        """Unscale (unless ``unscale_`` did) and run ``optimizer.step(model, grads, ...)``,
        unless a gradient is inf or NaN: then the step is skipped and None returned."""
        if not self._enabled:
            return optimizer.step(model, grads, *args, **kwargs)
        state = self._state(optimizer)
        if state.stepped:
            raise InvalidArgumentError("GradScaler.step: already called on this optimizer "
                                       "since the last update()")
        if not state.unscaled:
            self.unscale_(optimizer, model, grads)
        state.stepped = True
        if state.found_inf:
            return None
        return optimizer.step(model, grads, *args, **kwargs)

    def update(self, new_scale: float | None = None) -> None:
        """Adapt the scale for the next iteration: back off if any optimizer's gradients held
        an inf or NaN, grow after ``growth_interval`` clean updates (or set ``new_scale``)."""
        if not self._enabled:
            return
        if new_scale is not None:
            self._scale = np.float32(new_scale)
        else:
            if not self._optimizers:
                raise InvalidArgumentError("GradScaler.update: no inf checks were recorded "
                                           "(call step() or unscale_() first)")
            if any(s.found_inf for s in self._optimizers.values()):
                self._scale = np.float32(self._scale * np.float32(self._backoff_factor))
                self._growth_tracker = 0
            else:
                successful = self._growth_tracker + 1
                if successful == self._growth_interval:
                    grown = np.float32(self._scale * np.float32(self._growth_factor))
                    if math.isfinite(float(grown)):
                        self._scale = grown
                    self._growth_tracker = 0
                else:
                    self._growth_tracker = successful
        self._optimizers.clear()

    def state_dict(self) -> dict[str, Any]:
        """torch's keys: the scale, the factors, the interval and the growth tracker (empty
        when disabled)."""
        if not self._enabled:
            return {}
        return {"scale": float(self._scale), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Restore what ``state_dict`` (burnpy's or torch's) returned."""
        if not self._enabled:
            return
        if not state_dict:
            raise InvalidArgumentError("GradScaler.load_state_dict: the state dict is empty "
                                       "(saved from a disabled scaler)")
        missing = {"scale", "growth_factor", "backoff_factor", "growth_interval",
                   "_growth_tracker"} - set(state_dict)
        if missing:
            raise InvalidArgumentError(f"GradScaler.load_state_dict: missing keys "
                                       f"{sorted(missing)}")
        self._scale = np.float32(float(state_dict["scale"]))
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._growth_tracker = int(state_dict["_growth_tracker"])
