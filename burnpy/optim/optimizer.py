"""``Optimizer``: Burn's step protocol, ``optim.step(model, grads, lr=None)``.

Each step reads every parameter's gradient from the ``Gradients`` of ``loss.backward()``,
computes the update on the inner backend (``param.inner()``, ``param.grad(grads)``), for the
built-in optimizers with one fused backend op per parameter (``Backend.adam_step``...), and
writes the result back as a fresh tracked leaf
(``Tensor.from_inner(new, backend=B).require_grad()``), so no graph grows across steps. The
module keeps its identity; its parameter attributes are replaced.

State layout: ``state[param_name][key]`` holds inner-backend tensors (``"momentum_buffer"``,
``"exp_avg"``...) and ``steps[param_name]`` the per-parameter step count, keyed by the
parameter's dotted name so a record of it survives a restart.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from burnpy.autodiff.backend import AutodiffBackend
from burnpy.backend.data import TensorData
from burnpy.backend.errors import (
    AutodiffError,
    BackendMismatchError,
    BurnpyError,
    InvalidArgumentError,
)
from burnpy.nn.module import Module, ParamSlot
from burnpy.tensor import Tensor
from burnpy.tensor._core import FLOAT
from burnpy.tensor._core import new as wrap

if TYPE_CHECKING:
    from burnpy.backend.base import Backend


class OptimizerStateError(BurnpyError, ValueError):
    """An optimizer state dict of another optimizer type, or for other parameters."""


@dataclass(frozen=True, slots=True)
class GradientClipping:
    """Clip gradients before each update: by global norm (torch's ``clip_grad_norm_``) or by
    value (``clip_grad_value_``). Build with ``GradientClipping.norm(...)``/``.value(...)``."""

    mode: str
    threshold: float
    norm_type: float = 2.0

    @staticmethod
    def norm(max_norm: float, norm_type: float = 2.0) -> GradientClipping:
        """Scale all gradients together so their global ``norm_type``-norm is at most
        ``max_norm``."""
        if max_norm <= 0:
            raise InvalidArgumentError(f"GradientClipping.norm: max_norm must be > 0, got "
                                       f"{max_norm}")
        return GradientClipping("norm", float(max_norm), float(norm_type))

    @staticmethod
    def value(clip_value: float) -> GradientClipping:
        """Clamp every gradient element to ``[-clip_value, clip_value]``."""
        if clip_value <= 0:
            raise InvalidArgumentError(f"GradientClipping.value: clip_value must be > 0, got "
                                       f"{clip_value}")
        return GradientClipping("value", float(clip_value))

    def apply(self, grads: list[Tensor]) -> list[Tensor]:
        """The clipped gradients, in the order given."""
        if self.mode == "norm":
            return clip_norm(grads, self.threshold, self.norm_type)[0]
        return [g.clamp(-self.threshold, self.threshold) for g in grads]


def total_norm(grads: list[Tensor], norm_type: float = 2.0) -> Tensor:
    """The ``norm_type``-norm of all gradients taken as one vector (0-d tensor)."""
    if norm_type == float("inf"):
        maxima = [g.abs().max() for g in grads]
        out = maxima[0]
        for m in maxima[1:]:
            out = out.maximum(m)
        return out
    total = grads[0].abs().pow(norm_type).sum()
    for g in grads[1:]:
        total = total + g.abs().pow(norm_type).sum()
    return total.pow(1.0 / norm_type)


def clip_norm(grads: list[Tensor], max_norm: float,
              norm_type: float = 2.0) -> tuple[list[Tensor], Tensor]:
    """Scale ``grads`` by ``min(1, max_norm / (norm + 1e-6))``; also returns the norm.

    The scale stays a tensor, so clipping never waits for the device.
    """
    if not grads:
        raise InvalidArgumentError("clip_norm: no gradients to clip")
    norm = total_norm(grads, norm_type)
    scale = ((norm + 1e-6).recip() * max_norm).clamp(max=1.0)
    return [g * scale for g in grads], norm


def _tracked_grads(model: Module, grads: Any, op: str) -> list[tuple[ParamSlot, Tensor]]:
    """(slot, gradient on the inner backend) for every parameter that got one."""
    out = []
    for slot in model.slots():
        if not slot.is_param:
            continue
        t = slot.tensor
        if not t.backend.ad_enabled():
            raise AutodiffError(f"{op}: parameter '{slot.name}' is on {t.backend.name()}, which "
                                "does not track gradients; build the model on Autodiff(...)")
        g = t.grad(grads)
        if g is not None:
            out.append((slot, g))
    return out


def _autodiff(backend: type[Backend]) -> type[AutodiffBackend]:
    """``backend`` as the autodiff decorator ``_tracked_grads`` found it to be."""
    assert issubclass(backend, AutodiffBackend), backend
    return backend


def clip_grad_norm(model: Module, grads: Any, max_norm: float,
                   norm_type: float = 2.0) -> Tensor:
    """Clip ``model``'s gradients in ``grads`` to a global norm (torch.nn.utils.clip_grad_norm_);
    returns the norm before clipping."""
    pairs = _tracked_grads(model, grads, "clip_grad_norm")
    clipped, norm = clip_norm([g for _, g in pairs], max_norm, norm_type)
    for (slot, _), g in zip(pairs, clipped, strict=True):
        slot.tensor.grad_replace(grads, g)
    return norm


def clip_grad_value(model: Module, grads: Any, clip_value: float) -> None:
    """Clamp every gradient of ``model`` in ``grads`` to [-clip_value, clip_value]."""
    for slot, g in _tracked_grads(model, grads, "clip_grad_value"):
        slot.tensor.grad_replace(grads, g.clamp(-clip_value, clip_value))


class Optimizer(ABC):
    """Base of the optimizers: subclasses define ``update`` for one parameter."""

    #: What a record of an optimizer holds (``burnpy.record.Stateful``).
    record_kind: ClassVar[str] = "optimizer"

    def __init__(self, lr: float, grad_clipping: GradientClipping | None = None) -> None:
        if lr < 0:
            raise InvalidArgumentError(f"{type(self).__name__}: lr must be >= 0, got {lr}")
        self.lr = lr
        self.grad_clipping = grad_clipping
        self.state: dict[str, dict[str, Tensor]] = {}
        self.steps: dict[str, int] = {}

    @abstractmethod
    def update(self, name: str, param: Tensor, grad: Tensor, lr: float) -> Tensor:
        """The new value of parameter ``name`` (inner-backend tensors in and out)."""

    def update_many(self, names: list[str], params: list[Tensor], grads: list[Tensor],
                    lr: float) -> list[Tensor]:
        """The new values of several parameters (inner-backend tensors in and out): one
        ``update`` each. Optimizers with an elementwise rule override it to update many
        parameters in one backend call (``Adam``)."""
        return [self.update(n, p, g, lr) for n, p, g in zip(names, params, grads, strict=True)]

    @abstractmethod
    def hyperparameters(self) -> dict[str, Any]:
        """The configuration (saved with the state for inspection)."""

    def step(self, model: Module, grads: Any, lr: float | None = None) -> Module:
        """Update every parameter of ``model`` that has a gradient in ``grads``; returns the
        model (the same object, with new parameter tensors)."""
        rate = self.lr if lr is None else lr
        pairs = _tracked_grads(model, grads, "step")
        if self.grad_clipping is not None and pairs:
            clipped = self.grad_clipping.apply([g for _, g in pairs])
            pairs = [(slot, g) for (slot, _), g in zip(pairs, clipped, strict=True)]
        steps = self.steps
        names, params = [], []
        for slot, _ in pairs:
            param = slot.tensor
            ad = _autodiff(param.backend)
            steps[slot.name] = steps.get(slot.name, 0) + 1
            names.append(slot.name)
            params.append(wrap(ad.InnerBackend, ad.inner(param.primitive), FLOAT))
        news = self.update_many(names, params, [g for _, g in pairs], rate)
        for (slot, _), new in zip(pairs, news, strict=True):
            b = _autodiff(slot.tensor.backend)
            if new.backend is not b.InnerBackend:
                raise BackendMismatchError(f"{type(self).__name__}.update: expected a tensor of "
                                           f"{b.InnerBackend.name()}, got one of "
                                           f"{new.backend.name()}")
            # Tensor.from_inner(new).require_grad() minus the Tensor layer: a new tracked leaf.
            leaf = b.float_set_require_grad(b.from_inner(new.primitive), True)
            slot.assign(wrap(b, leaf, FLOAT))
        return model

    def _state(self, name: str, like: Tensor, *keys: str) -> list[Any]:
        """The primitives of state ``keys`` of parameter ``name`` (None before its first step),
        each moved to ``like``'s backend first if it was loaded elsewhere."""
        state = self.state.get(name)
        if state is None:
            return [None] * len(keys)
        out = []
        for key in keys:
            t = state.get(key)
            if t is not None and t.backend is not like.backend:
                t = state[key] = t.to_backend(like.backend, like.device)
            out.append(None if t is None else t.primitive)
        return out

    def _store(self, name: str, backend: type[Backend], **primitives: Any) -> None:
        """Keep float ``primitives`` of ``backend`` as parameter ``name``'s state (None values
        are skipped: that buffer is not in use)."""
        kept = {key: wrap(backend, p, FLOAT) for key, p in primitives.items() if p is not None}
        if kept:
            self.state.setdefault(name, {}).update(kept)

    # ---- records -----------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """``{"type", "hyperparameters", "steps", "state"}``: everything a resume needs."""
        return {"type": type(self).__name__, "hyperparameters": self.hyperparameters(),
                "steps": dict(self.steps),
                "state": {n: dict(s) for n, s in self.state.items()}}

    def load_state_dict(self, state: Mapping[str, Any]) -> Optimizer:
        """Restore steps and buffers saved by ``state_dict`` (the hyperparameters stay this
        optimizer's own). Buffers may be tensors or host ``TensorData`` (from a record); each
        moves to its parameter's backend at the next step."""
        kind = state.get("type")
        if kind != type(self).__name__:
            raise OptimizerStateError(f"load_state_dict: the state is for {kind}, not "
                                      f"{type(self).__name__}")
        self.steps = {str(k): int(v) for k, v in state.get("steps", {}).items()}
        self.state = {str(n): {str(k): _as_tensor(t) for k, t in s.items()}
                      for n, s in state.get("state", {}).items()}
        return self

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v}" for k, v in self.hyperparameters().items())
        return f"{type(self).__name__}({args})"


def _as_tensor(value: Tensor | TensorData) -> Tensor:
    return value if isinstance(value, Tensor) else Tensor.from_data(value)


def concat_flat(backend: type[Backend], primitives: list[Any]) -> Any:
    """Float primitives of one backend and dtype flattened into one 1-d primitive, in order
    (a lone primitive is only reshaped)."""
    flat = [backend.float_reshape(p, (math.prod(p.shape),)) for p in primitives]
    return flat[0] if len(flat) == 1 else backend.float_cat(flat, 0)


def split_flat(backend: type[Backend], flat: Any, shapes: list[tuple[int, ...]]) -> list[Any]:
    """The inverse of ``concat_flat``: consecutive pieces of ``flat`` reshaped to ``shapes``."""
    if len(shapes) == 1:
        return [backend.float_reshape(flat, shapes[0])]
    pieces, start = [], 0
    for shape in shapes:
        stop = start + math.prod(shape)
        pieces.append(backend.float_reshape(backend.float_slice(flat, (slice(start, stop),)),
                                            shape))
        start = stop
    return pieces
