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

Parameter groups, as torch's: ``AdamW([{"params": decay, "weight_decay": 0.01},
{"params": no_decay, "weight_decay": 0.0}], lr=1e-3)``. A group names its parameters by
their dotted names, by ``(name, tensor)`` pairs (``model.named_parameters()``) or by the
tensors themselves; tensors are matched to the model's parameters by identity at the first
``step`` and from then on named (a step replaces every parameter tensor, so names are what
lasts). ``opt.param_groups`` is a list of dicts, readable and writable (``g["lr"] = ...``),
saved and restored with the state. Without ``params`` there is one group holding every
parameter of the model stepped (Burn's ``optim.step(model, grads)``).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, TypeAlias

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


#: One parameter in a group: its dotted name, a ``(name, tensor)`` pair, or the tensor.
ParamRef: TypeAlias = "str | tuple[str, Tensor] | Tensor"
#: What an optimizer takes as ``params``: parameters (one group) or group dicts.
Params: TypeAlias = "Iterable[ParamRef] | Iterable[Mapping[str, Any]]"


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
    if norm_type == 2.0 and len({(g.backend, g.dtype, g.device) for g in grads}) == 1:
        # One vector and one dot instead of three ops and an add per gradient.
        flat = Tensor.cat([g.reshape(-1) for g in grads]) if len(grads) > 1 else grads[0]
        return flat.reshape(-1).dot(flat.reshape(-1)).sqrt()
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


def _tracked_grads(slots: list[ParamSlot], grads: Any,
                   op: str) -> list[tuple[ParamSlot, Tensor]]:
    """(slot, gradient on the inner backend) for every parameter among a model's ``slots``
    that got one."""
    out = []
    for slot in slots:
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
    pairs = _tracked_grads(model.slots(), grads, "clip_grad_norm")
    clipped, norm = clip_norm([g for _, g in pairs], max_norm, norm_type)
    for (slot, _), g in zip(pairs, clipped, strict=True):
        slot.tensor.grad_replace(grads, g)
    return norm


def clip_grad_value(model: Module, grads: Any, clip_value: float) -> None:
    """Clamp every gradient of ``model`` in ``grads`` to [-clip_value, clip_value]."""
    for slot, g in _tracked_grads(model.slots(), grads, "clip_grad_value"):
        slot.tensor.grad_replace(grads, g.clamp(-clip_value, clip_value))


class Optimizer(ABC):
    """Base of the optimizers: subclasses define ``update`` for one parameter and list their
    hyperparameters (the ``defaults`` every group starts from)."""

    #: What a record of an optimizer holds (``burnpy.record.Stateful``).
    record_kind: ClassVar[str] = "optimizer"

    def __init__(self, params: Params | None, defaults: Mapping[str, Any],
                 grad_clipping: GradientClipping | None = None) -> None:
        if isinstance(params, int | float):
            raise InvalidArgumentError(f"{type(self).__name__}: the first argument is params "
                                       f"(parameters or groups, as torch's); pass the learning "
                                       f"rate as lr={params}")
        self.defaults: dict[str, Any] = dict(defaults)
        self.grad_clipping = grad_clipping
        self.state: dict[str, dict[str, Tensor]] = {}
        self.steps: dict[str, int] = {}
        #: True when built without ``params``: every stepped parameter joins group 0.
        self._all_params = params is None
        self.param_groups: list[dict[str, Any]] = []
        self.check_group(self.defaults)
        if params is None:
            self.add_param_group({"params": []})
            return
        items = list(params)
        if not items:
            raise InvalidArgumentError(f"{type(self).__name__}: params is empty")
        if all(isinstance(item, Mapping) for item in items):
            for group in items:
                assert isinstance(group, Mapping)
                self.add_param_group(group)
        else:
            self.add_param_group({"params": items})

    def add_param_group(self, group: Mapping[str, Any]) -> None:
        """Add a group: ``{"params": [...], option: value}``; options not given take the
        optimizer's defaults (torch's ``add_param_group``)."""
        op = f"{type(self).__name__}.add_param_group"
        if "params" not in group:
            raise InvalidArgumentError(f"{op}: a group needs a 'params' entry, got keys "
                                       f"{sorted(group)}")
        unknown = sorted(set(group) - set(self.defaults) - {"params", "initial_lr"})
        if unknown:
            raise InvalidArgumentError(f"{op}: unknown option(s) {unknown}; "
                                       f"{type(self).__name__} takes {sorted(self.defaults)}")
        refs = group["params"]
        refs = [refs] if isinstance(refs, Tensor | str) else list(refs)
        params = [_param_ref(op, ref) for ref in refs]
        taken = {id(p) if isinstance(p, Tensor) else p
                 for g in self.param_groups for p in g["params"]}
        for p in params:
            if (id(p) if isinstance(p, Tensor) else p) in taken:
                raise InvalidArgumentError(f"{op}: parameter {_ref_text(p)} appears in more "
                                           "than one group")
        full = {**self.defaults, **{k: v for k, v in group.items() if k != "params"},
                "params": params}
        self.check_group(full)
        self.param_groups.append(full)

    def check_group(self, group: Mapping[str, Any]) -> None:
        """Raise ``InvalidArgumentError`` when a group's options are invalid (subclasses
        extend it with their own rules)."""
        if group["lr"] < 0:
            raise InvalidArgumentError(f"{type(self).__name__}: lr must be >= 0, got "
                                       f"{group['lr']}")

    @property
    def lr(self) -> float:
        """The learning rate of the first group (the only one without ``params``)."""
        return float(self.param_groups[0]["lr"])

    @lr.setter
    def lr(self, value: float) -> None:
        """Set the learning rate of every group (and the default)."""
        self.defaults["lr"] = value
        for group in self.param_groups:
            group["lr"] = value

    @abstractmethod
    def update(self, name: str, param: Tensor, grad: Tensor, group: Mapping[str, Any]) -> Tensor:
        """The new value of parameter ``name`` (inner-backend tensors in and out) under its
        group's options (``group["lr"]`` is the rate of this step)."""

    def update_many(self, names: list[str], params: list[Tensor], grads: list[Tensor],
                    group: Mapping[str, Any]) -> list[Tensor]:
        """The new values of several parameters of one group (inner-backend tensors in and
        out): one ``update`` each. Optimizers with an elementwise rule override it to update
        many parameters in one backend call (``Adam``)."""
        return [self.update(n, p, g, group) for n, p, g in zip(names, params, grads, strict=True)]

    def hyperparameters(self) -> dict[str, Any]:
        """The default options (saved with the state for inspection; tuples as lists)."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in self.defaults.items()}

    def _group_of(self, model: Module, every: list[ParamSlot]) -> dict[str, int]:
        """Parameter name -> group index over ``every`` slot of ``model``; tensors given by
        identity are named here."""
        slots = [s for s in every if s.is_param]
        by_id = {id(s.tensor): s.name for s in slots}
        known = {s.name for s in slots}
        out: dict[str, int] = {}
        for i, group in enumerate(self.param_groups):
            names = []
            for ref in group["params"]:
                if isinstance(ref, Tensor):
                    name = by_id.get(id(ref))
                    if name is None:
                        raise InvalidArgumentError(
                            f"{type(self).__name__}.step: param_groups[{i}] holds a tensor of "
                            f"shape {ref.shape} and dtype {ref.dtype!r} that is not a parameter "
                            "of the model (tensors are matched by identity before the first "
                            "step; name parameters instead, e.g. with "
                            "model.named_parameters())")
                    ref = name
                elif ref not in known:
                    raise InvalidArgumentError(f"{type(self).__name__}.step: param_groups[{i}] "
                                               f"names '{ref}', which is not a parameter of "
                                               f"{type(model).__name__}")
                names.append(ref)
                out[ref] = i
            group["params"] = names
        if self._all_params:
            group0 = self.param_groups[0]["params"]
            for name in (s.name for s in slots if s.name not in out):
                group0.append(name)
                out[name] = 0
        return out

    def _rate(self, group: Mapping[str, Any], lr: float | None) -> float:
        """The group's rate this step: its own ``lr``, or an explicit ``lr`` scaled by the
        group's share of the default rate (so a Burn-style scheduler drives every group)."""
        if lr is None:
            return float(group["lr"])
        base = float(self.defaults["lr"])
        share = float(group.get("initial_lr", group["lr"])) / base if base else 1.0
        return lr * share

    def step(self, model: Module, grads: Any, lr: float | None = None) -> Module:
        """Update every parameter of ``model`` that is in a group and has a gradient in
        ``grads``; returns the model (the same object, with new parameter tensors). ``lr``,
        when given, overrides the rate (scaled per group, see ``_rate``)."""
        every = model.slots()  # walked once: the walk is a large part of a small step
        pairs = _tracked_grads(every, grads, "step")
        if self.grad_clipping is not None and pairs:
            clipped = self.grad_clipping.apply([g for _, g in pairs])
            pairs = [(slot, g) for (slot, _), g in zip(pairs, clipped, strict=True)]
        group_of = self._group_of(model, every)
        members: dict[int, list[tuple[ParamSlot, Tensor]]] = {}
        for slot, g in pairs:
            index = group_of.get(slot.name)
            if index is not None:
                members.setdefault(index, []).append((slot, g))
        steps = self.steps
        for index, chosen in sorted(members.items()):
            group = self.param_groups[index]
            options = {**group, "lr": self._rate(group, lr)}
            names, params = [], []
            for slot, _ in chosen:
                param = slot.tensor
                ad = _autodiff(param.backend)
                steps[slot.name] = steps.get(slot.name, 0) + 1
                names.append(slot.name)
                params.append(wrap(ad.InnerBackend, ad.inner(param.primitive), FLOAT))
            news = self.update_many(names, params, [g for _, g in chosen], options)
            for (slot, _), new in zip(chosen, news, strict=True):
                b = _autodiff(slot.tensor.backend)
                if new.backend is not b.InnerBackend:
                    raise BackendMismatchError(f"{type(self).__name__}.update: expected a "
                                               f"tensor of {b.InnerBackend.name()}, got one of "
                                               f"{new.backend.name()}")
                # Tensor.from_inner(new).require_grad() minus the Tensor layer: a new leaf.
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
        """``{"type", "hyperparameters", "param_groups", "steps", "state"}``: everything a
        resume needs (groups name their parameters)."""
        groups = []
        for i, group in enumerate(self.param_groups):
            pending = [p for p in group["params"] if isinstance(p, Tensor)]
            if pending:
                raise OptimizerStateError(f"state_dict: param_groups[{i}] holds tensors not yet "
                                          "matched to names (they are at the first step); name "
                                          "the parameters, or step once first")
            groups.append({k: list(v) if isinstance(v, tuple | list) else v
                           for k, v in group.items()})
        return {"type": type(self).__name__, "hyperparameters": self.hyperparameters(),
                "param_groups": groups, "steps": dict(self.steps),
                "state": {n: dict(s) for n, s in self.state.items()}}

    def load_state_dict(self, state: Mapping[str, Any]) -> Optimizer:
        """Restore steps, buffers and parameter groups (options and names, as torch does)
        saved by ``state_dict``. Buffers may be tensors or host ``TensorData`` (from a record);
        each moves to its parameter's backend at the next step."""
        kind = state.get("type")
        if kind != type(self).__name__:
            raise OptimizerStateError(f"load_state_dict: the state is for {kind}, not "
                                      f"{type(self).__name__}")
        saved = state.get("param_groups")
        if saved is not None:
            if len(saved) != len(self.param_groups):
                raise OptimizerStateError(f"load_state_dict: the state has {len(saved)} "
                                          f"parameter group(s), this {type(self).__name__} has "
                                          f"{len(self.param_groups)}")
            groups = []
            for group in saved:
                restored = {str(k): (tuple(v) if isinstance(v, list) and k != "params" else v)
                            for k, v in group.items()}
                restored["params"] = [str(p) for p in group["params"]]
                self.check_group(restored)
                groups.append(restored)
            self.param_groups = groups
        self.steps = {str(k): int(v) for k, v in state.get("steps", {}).items()}
        self.state = {str(n): {str(k): _as_tensor(t) for k, t in s.items()}
                      for n, s in state.get("state", {}).items()}
        return self

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v}" for k, v in self.hyperparameters().items())
        return f"{type(self).__name__}({args})"


def _param_ref(op: str, ref: Any) -> str | Tensor:
    """A group entry as kept: a name, or a float tensor to be named at the first step."""
    if isinstance(ref, tuple) and len(ref) == 2 and isinstance(ref[0], str):
        return ref[0]
    if isinstance(ref, str):
        return ref
    if isinstance(ref, Tensor) and ref.kind is FLOAT:
        return ref
    raise InvalidArgumentError(f"{op}: a parameter must be a float Tensor, its name or a "
                               f"(name, tensor) pair, got {type(ref).__name__}"
                               + (f" of dtype {ref.dtype!r}" if isinstance(ref, Tensor) else ""))


def _ref_text(ref: str | Tensor) -> str:
    return f"'{ref}'" if isinstance(ref, str) else f"(a tensor of shape {ref.shape})"


def _as_tensor(value: Tensor | TensorData) -> Tensor:
    return value if isinstance(value, Tensor) else Tensor.from_data(value)


def concat_flat(backend: type[Backend], primitives: list[Any]) -> Any:
    """Float primitives of one backend and dtype flattened into one 1-d primitive, in order
    (a lone primitive is kept as it is: an elementwise update needs no flat view, and under
    ``Fusion`` a reshape would stand between a gradient's matmul and the update its kernel
    can run as an epilogue)."""
    if len(primitives) == 1:
        return primitives[0]
    return backend.float_cat([backend.float_reshape(p, (math.prod(p.shape),))
                              for p in primitives], 0)


def split_flat(backend: type[Backend], flat: Any, shapes: list[tuple[int, ...]]) -> list[Any]:
    """The inverse of ``concat_flat``: consecutive pieces of ``flat`` reshaped to ``shapes``."""
    if len(shapes) == 1:
        return [flat if tuple(flat.shape) == tuple(shapes[0])
                else backend.float_reshape(flat, shapes[0])]
    pieces, start = [], 0
    for shape in shapes:
        stop = start + math.prod(shape)
        pieces.append(backend.float_reshape(backend.float_slice(flat, (slice(start, stop),)),
                                            shape))
        start = stop
    return pieces
