"""``Optimizer``: Burn's step protocol, ``optim.step(model, grads, lr=None)``, over torch's
parameter identity.

Each step reads every parameter's gradient from the ``Gradients`` of ``loss.backward()``,
computes the update on the inner backend (``param.inner()``, ``param.grad(grads)``), for the
built-in optimizers with one fused backend op per parameter (``Backend.adam_step``...), and
writes the result into the parameter itself: the ``Tensor`` the module holds gets a fresh
tracked leaf as its primitive, so no graph grows across steps and the Python object stays
the one the module's holders, the optimizer and the user hold (torch's ``Parameter``).
``Module.load_state_dict``, ``Module.to``, ``copy_`` and writes under ``no_grad`` keep the
object too (``ParamSlot.write``), so an optimizer built before them keeps its parameters.

Parameter identity: state is keyed by the parameter ``Tensor`` (which hashes by identity, as
torch's): ``state[param][key]`` holds inner-backend tensors (``"momentum_buffer"``,
``"exp_avg"``...) and ``steps[param]`` the parameter's step count. Why the object rather
than a dotted name or an id carried through replacements (Burn's ``ParamId``): a name is
relative to the module stepped, so two modules that both have ``fc.weight`` shared one state;
an id would have to be copied by every path that builds a replacement tensor, and one missed
path loses the state, where writing in place leaves nothing to copy; and a step costs one
dict lookup per parameter.

Parameter groups, as torch's: ``AdamW([{"params": decay, "weight_decay": 0.01},
{"params": no_decay, "weight_decay": 0.0}], lr=1e-3)``. A group holds tensors (from any
modules: ``Adam(list(enc.parameters()) + list(dec.parameters()))``), ``(name, tensor)``
pairs (``model.named_parameters()``) or dotted names, which are resolved to the tensors of
the model given to the first ``step``. ``opt.param_groups`` is a list of dicts, readable and
writable (``g["lr"] = ...``), saved and restored with the state. Without ``params`` there is
one group holding every parameter of the models stepped (Burn's ``optim.step(model, grads)``).

``step(model, grads)`` updates the optimizer's parameters that are in ``model`` and have a
gradient, so one optimizer may step several modules (``opt.step(enc, g); opt.step(dec, g)``).
A parameter the step cannot find raises ``InvalidArgumentError`` naming it: one that was in
``model`` at an earlier step and is not now (a tensor or module assigned over it, which torch
would silently stop training); so does a ``model`` that holds none of the optimizer's
parameters. Without ``params`` a parameter gone from its model leaves the optimizer instead
(Burn's: the model is the truth).

torch's options that choose how torch runs a step, never what it computes, are accepted and
ignored: ``foreach`` and ``fused`` (one kernel over many tensors: burnpy's backends fuse
updates their own way) and ``capturable`` (CUDA-graph capture). ``differentiable=True`` (a
graph through the update) is refused: a step writes fresh leaves. ``maximize=True`` steps up
the gradient (it is negated before the update, as torch's). ``lr`` (any option) may be a
one-element tensor; it is kept as its float.

A closure, as torch's ``step(closure)``: ``opt.step(model, closure=fn)``, where ``fn()``
recomputes and returns the loss (a tensor of the model's autodiff backend); the step takes the
gradients of its ``backward()``. ``LBFGS`` needs it, as it evaluates the loss several times a
step; every other optimizer evaluates it once.

State dicts follow torch: ``param_groups[i]["params"]`` lists positions (0, 1, ... over the
groups in order) and ``state``/``steps`` are keyed by position (as strings, a record's keys),
so a state dict loads into a fresh optimizer over fresh parameters, in a new process, built
the same way. Loaded state whose parameter is not known yet (a name not yet resolved, Burn's
group filled at the first step) waits and is bound at the first step; so is the state of
records written before this layout, keyed by dotted names.
"""

from __future__ import annotations

import math
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
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
from burnpy.nn.utils.clip_grad import clip_grad_norm_, clip_grad_value_, clip_norm
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
    """Clip ``model``'s gradients in ``grads`` to a global norm (torch.nn.utils.clip_grad_norm_
    over ``model.parameters()``); returns the norm before clipping."""
    return clip_grad_norm_(model.parameters(), max_norm, norm_type, grads=grads)


def clip_grad_value(model: Module, grads: Any, clip_value: float) -> None:
    """Clamp every gradient of ``model`` in ``grads`` to [-clip_value, clip_value]."""
    clip_grad_value_(model.parameters(), clip_value, grads=grads)


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
        self.defaults: dict[str, Any] = {k: _option(v) for k, v in defaults.items()}
        self.grad_clipping = grad_clipping
        self.state: dict[Tensor, dict[str, Tensor]] = {}
        self.steps: dict[Tensor, int] = {}
        #: True when built without ``params``: every stepped parameter joins group 0.
        self._all_params = params is None
        #: True while a group holds dotted names, resolved at the next step.
        self._named = False
        #: Loaded (steps, buffers) waiting for their parameter, by position or dotted name.
        self._pending: dict[int | str, tuple[int | None, dict[str, Tensor]]] = {}
        #: Each model stepped -> the optimizer's parameters it held then, with their names.
        self._found: weakref.WeakKeyDictionary[Module, dict[Tensor, str]] = (
            weakref.WeakKeyDictionary())
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
        taken = {_ref_key(p) for g in self.param_groups for p in g["params"]}
        for p in params:
            if _ref_key(p) in taken:
                raise InvalidArgumentError(f"{op}: parameter {_ref_text(p)} appears in more "
                                           "than one group, or twice in one")
            taken.add(_ref_key(p))
        full = {**self.defaults, **{k: _option(v) for k, v in group.items() if k != "params"},
                "params": params}
        self.check_group(full)
        self.param_groups.append(full)
        self._named = self._named or any(isinstance(p, str) for p in params)

    def check_group(self, group: Mapping[str, Any]) -> None:
        """Raise ``InvalidArgumentError`` when a group's options are invalid (subclasses
        extend it with their own rules)."""
        if group["lr"] < 0:
            raise InvalidArgumentError(f"{type(self).__name__}: lr must be >= 0, got "
                                       f"{group['lr']}")
        if group.get("differentiable"):
            raise InvalidArgumentError(
                f"{type(self).__name__}: differentiable=True asks for a graph through the "
                "update; burnpy's step writes each parameter as a fresh leaf, so no gradient "
                "could reach the optimizer's inputs (leave it False)")

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

    def zero_grad(self, set_to_none: bool = True) -> None:  # noqa: B027 (a no-op by design)
        """Nothing to clear: burnpy's gradients are not accumulated on parameters, each
        ``backward()`` returns fresh ``Gradients`` (accepted so torch's loops port as they are)."""

    @abstractmethod
    def update(self, key: Tensor, param: Tensor, grad: Tensor,
               group: Mapping[str, Any]) -> Tensor:
        """The new value of a parameter under its group's options (``group["lr"]`` is the
        rate of this step): ``key`` is the parameter as the module holds it (its state's
        key), ``param``, ``grad`` and the result are inner-backend tensors."""

    def update_many(self, keys: list[Tensor], params: list[Tensor], grads: list[Tensor],
                    group: Mapping[str, Any]) -> list[Tensor]:
        """The new values of several parameters of one group (inner-backend tensors in and
        out): one ``update`` each. Optimizers with an elementwise rule override it to update
        many parameters in one backend call (``Adam``)."""
        return [self.update(k, p, g, group) for k, p, g in zip(keys, params, grads, strict=True)]

    def hyperparameters(self) -> dict[str, Any]:
        """The default options (saved with the state for inspection; tuples as lists)."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in self.defaults.items()}

    def _group_of(self, model: Module, every: list[ParamSlot]) -> dict[Tensor, int]:
        """The group index of each of the optimizer's parameters in ``model`` (whose slots
        are ``every``): names are resolved, Burn's group 0 takes the model's new parameters,
        waiting loaded state is bound, and a parameter gone from the model is reported."""
        names = {s.tensor: s.name for s in every if s.is_param}
        if self._named:
            self._resolve(model, names)
        out = {p: i for i, group in enumerate(self.param_groups) for p in group["params"]
               if p in names}
        if self._all_params and len(out) < len(names):
            new = [p for p in names if p not in out]
            self.param_groups[0]["params"].extend(new)
            out.update(dict.fromkeys(new, 0))
        seen = self._found.get(model)
        if seen is None or seen.keys() != out.keys():
            self._check_found(model, out, seen)
            self._found[model] = {p: names[p] for p in out}
        if self._pending:
            self._bind(names)
        return out

    def _resolve(self, model: Module, names: Mapping[Tensor, str]) -> None:
        """Replace the dotted names in the groups by ``model``'s tensors of those names."""
        tensors = {name: p for p, name in names.items()}
        for i, group in enumerate(self.param_groups):
            resolved = []
            for ref in group["params"]:
                if isinstance(ref, str):
                    found = tensors.get(ref)
                    if found is None:
                        raise InvalidArgumentError(
                            f"{type(self).__name__}.step: param_groups[{i}] names '{ref}', "
                            f"which is not a parameter of {type(model).__name__}")
                    ref = found
                resolved.append(ref)
            group["params"] = resolved
        self._named = False

    def _check_found(self, model: Module, out: Mapping[Tensor, int],
                     seen: Mapping[Tensor, str] | None) -> None:
        """Raise when a parameter that was in ``model`` at an earlier step is not now, or
        when ``model`` holds none of the optimizer's parameters; without ``params``, drop
        the parameters gone from ``model`` instead."""
        op = f"{type(self).__name__}.step"
        gone = {p: name for p, name in (seen or {}).items() if p not in out}
        if gone and self._all_params:
            for group in self.param_groups:
                group["params"] = [p for p in group["params"] if p not in gone]
            for p in gone:
                self.state.pop(p, None)
                self.steps.pop(p, None)
        elif gone:
            p, name = next(iter(gone.items()))
            raise InvalidArgumentError(
                f"{op}: parameter '{name}' (shape {p.shape}, {p.dtype!r}) was in "
                f"{type(model).__name__} at an earlier step but is not now (a tensor or module "
                "was assigned over it; torch would silently stop training it); build the "
                "optimizer again, or take it out of param_groups and add the new parameters "
                "with add_param_group")
        first = next(((i, p) for i, g in enumerate(self.param_groups) for p in g["params"]),
                     None)
        if not out and not self._all_params and first is not None:
            i, p = first
            raise InvalidArgumentError(
                f"{op}: none of the optimizer's parameters is in {type(model).__name__}: "
                f"param_groups[{i}] holds a tensor of shape {p.shape} and dtype {p.dtype!r} "
                f"that is not a parameter of {type(model).__name__} (step the module that "
                "holds the optimizer's parameters)")

    def _bind(self, names: Mapping[Tensor, str]) -> None:
        """Give loaded state to the known parameters it waits for: by position in the groups,
        or by dotted name (``names``: a model's parameters) for records keyed by names."""
        position = 0
        for group in self.param_groups:
            for p in group["params"]:
                if isinstance(p, Tensor):
                    entry = self._pending.pop(position, None)
                    name = names.get(p)
                    if entry is None and name is not None:
                        entry = self._pending.pop(name, None)
                    if entry is not None:
                        steps, buffers = entry
                        if steps is not None:
                            self.steps[p] = steps
                        if buffers:
                            self.state[p] = buffers
                position += 1

    def _rate(self, group: Mapping[str, Any], lr: float | None) -> float:
        """The group's rate this step: its own ``lr``, or an explicit ``lr`` scaled by the
        group's share of the default rate (so a Burn-style scheduler drives every group). A
        float rate is returned as it is, so ``bp.compile``'s symbolic rate stays symbolic."""
        if lr is None:
            rate = group["lr"]
            return rate if isinstance(rate, float) else float(rate)
        base = float(self.defaults["lr"])
        share = float(group.get("initial_lr", group["lr"])) / base if base else 1.0
        return lr * share

    def step(self, model: Module, grads: Any = None, lr: float | None = None, *,
             closure: Callable[[], Tensor] | None = None) -> Module:
        """Update every parameter of ``model`` that is in a group and has a gradient in
        ``grads`` (or in the ``backward()`` of the loss ``closure()`` returns), in place;
        returns the model. ``lr``, when given, overrides the rate (scaled per group, see
        ``_rate``)."""
        if closure is not None:
            if grads is not None:
                raise InvalidArgumentError(f"{type(self).__name__}.step: pass grads or a "
                                           "closure, not both")
            grads = closure().backward()
        every = model.slots()  # walked once: the walk is a large part of a small step
        group_of = self._group_of(model, every)
        pairs = _tracked_grads(every, grads, "step")
        if self.grad_clipping is not None and pairs:
            clipped = self.grad_clipping.apply([g for _, g in pairs])
            pairs = [(slot, g) for (slot, _), g in zip(pairs, clipped, strict=True)]
        members: dict[int, list[tuple[Tensor, Tensor]]] = {}
        for slot, g in pairs:
            index = group_of.get(slot.tensor)
            if index is not None:
                members.setdefault(index, []).append((slot.tensor, g))
        steps = self.steps
        for index, chosen in sorted(members.items()):
            group = self.param_groups[index]
            options = {**group, "lr": self._rate(group, lr)}
            if group.get("maximize"):
                chosen = [(p, -g) for p, g in chosen]
            values = []
            for param, _ in chosen:
                steps[param] = steps.get(param, 0) + 1
                values.append(self.value(param))
            news = self.update_many([p for p, _ in chosen], values, [g for _, g in chosen],
                                    options)
            for (param, _), new in zip(chosen, news, strict=True):
                self.write(param, new)
        return model

    @staticmethod
    def value(param: Tensor) -> Tensor:
        """A parameter's current value on the inner backend (untracked)."""
        ad = _autodiff(param.backend)
        return wrap(ad.InnerBackend, ad.inner(param.primitive), FLOAT)

    def write(self, param: Tensor, new: Tensor) -> None:
        """Make inner-backend ``new`` the value of ``param``: a new leaf, written into the
        parameter itself (see the module docstring)."""
        b = _autodiff(param.backend)
        if new.backend is not b.InnerBackend:
            raise BackendMismatchError(f"{type(self).__name__}.update: expected a tensor of "
                                       f"{b.InnerBackend.name()}, got one of "
                                       f"{new.backend.name()}")
        param.primitive = b.float_set_require_grad(b.from_inner(new.primitive), True)

    def _state(self, key: Tensor, like: Tensor, *keys: str) -> list[Any]:
        """The primitives of state ``keys`` of parameter ``key`` (None before its first step),
        each moved to ``like``'s backend first if it was loaded elsewhere."""
        state = self.state.get(key)
        if state is None:
            return [None] * len(keys)
        out = []
        for name in keys:
            t = state.get(name)
            if t is not None and t.backend is not like.backend:
                t = state[name] = t.to_backend(like.backend, like.device)
            out.append(None if t is None else t.primitive)
        return out

    def _tensors(self, key: Tensor, like: Tensor, *keys: str) -> list[Tensor | None]:
        """State ``keys`` of parameter ``key`` as tensors of ``like``'s backend (see
        ``_state``)."""
        return [None if p is None else wrap(like.backend, p, FLOAT)
                for p in self._state(key, like, *keys)]

    def _keep(self, key: Tensor, **tensors: Tensor | None) -> None:
        """Keep inner-backend ``tensors`` as parameter ``key``'s state (see ``_store``)."""
        for name, t in tensors.items():
            if t is not None:
                self.state.setdefault(key, {})[name] = t

    def _store(self, key: Tensor, backend: type[Backend], **primitives: Any) -> None:
        """Keep float ``primitives`` of ``backend`` as parameter ``key``'s state (None values
        are skipped: that buffer is not in use)."""
        kept = {name: wrap(backend, p, FLOAT) for name, p in primitives.items() if p is not None}
        if kept:
            self.state.setdefault(key, {}).update(kept)

    # ---- records -----------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """``{"type", "hyperparameters", "param_groups", "steps", "state"}``: everything a
        resume needs, torch's layout (parameters by position over the groups)."""
        steps: dict[str, int] = {}
        state: dict[str, dict[str, Tensor]] = {}
        for key, (count, buffers) in self._pending.items():
            if count is not None:
                steps[str(key)] = count
            if buffers:
                state[str(key)] = dict(buffers)
        groups, position = [], 0
        for group in self.param_groups:
            positions = []
            for p in group["params"]:
                if isinstance(p, Tensor):
                    if p in self.steps:
                        steps[str(position)] = self.steps[p]
                    if p in self.state:
                        state[str(position)] = dict(self.state[p])
                positions.append(position)
                position += 1
            groups.append({k: positions if k == "params" else
                           list(v) if isinstance(v, tuple | list) else v
                           for k, v in group.items()})
        return {"type": type(self).__name__, "hyperparameters": self.hyperparameters(),
                "param_groups": groups, "steps": steps, "state": state}

    def load_state_dict(self, state: Mapping[str, Any]) -> Optimizer:
        """Restore steps, buffers and group options saved by ``state_dict``, as torch does:
        the i-th parameter's state goes to this optimizer's i-th parameter (so each group
        must have the saved size). Buffers may be tensors or host ``TensorData`` (from a
        record); each moves to its parameter's backend at the next step. Records keyed by
        dotted names (earlier releases) are bound by name at the next step."""
        kind = state.get("type")
        if kind != type(self).__name__:
            raise OptimizerStateError(f"load_state_dict: the state is for {kind}, not "
                                      f"{type(self).__name__}")
        saved = state.get("param_groups")
        if saved is not None:
            self.param_groups = self._restored_groups(saved)
        steps = {_position(k): int(v) for k, v in state.get("steps", {}).items()}
        buffers = {_position(n): {str(k): _as_tensor(t) for k, t in s.items()}
                   for n, s in state.get("state", {}).items()}
        if not self._all_params and not self._named:
            count = sum(len(g["params"]) for g in self.param_groups)
            beyond = sorted(k for k in {*steps, *buffers} if isinstance(k, int) and k >= count)
            if beyond:
                raise OptimizerStateError(f"load_state_dict: the state has parameter "
                                          f"{beyond[0]}, this {type(self).__name__} has "
                                          f"{count} parameter(s)")
        self.steps, self.state = {}, {}
        self._pending = {k: (steps.get(k), buffers.get(k, {})) for k in {*steps, *buffers}}
        self._bind({})
        return self

    def _restored_groups(self, saved: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """The saved groups' options over this optimizer's parameters (positions), or over
        the saved dotted names (records of earlier releases)."""
        if len(saved) != len(self.param_groups):
            raise OptimizerStateError(f"load_state_dict: the state has {len(saved)} parameter "
                                      f"group(s), this {type(self).__name__} has "
                                      f"{len(self.param_groups)}")
        groups = []
        for i, (group, mine) in enumerate(zip(saved, self.param_groups, strict=True)):
            restored = {str(k): (tuple(v) if isinstance(v, list) else v)
                        for k, v in group.items() if k != "params"}
            refs = list(group["params"])
            if any(isinstance(p, str) and not p.isdigit() for p in refs):
                restored["params"] = [str(p) for p in refs]  # names: resolved at the step
                self._named = True
            elif len(refs) == len(mine["params"]) or (self._all_params and i == 0):
                restored["params"] = mine["params"]
            else:
                raise OptimizerStateError(f"load_state_dict: param_groups[{i}] of the state "
                                          f"has {len(refs)} parameter(s), this "
                                          f"{type(self).__name__}'s has "
                                          f"{len(mine['params'])}")
            self.check_group(restored)
            groups.append(restored)
        return groups

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v}" for k, v in self.hyperparameters().items())
        return f"{type(self).__name__}({args})"


def _option(value: Any) -> Any:
    """A group option as kept: a one-element tensor (torch's ``lr=torch.tensor(1e-3)``) as
    its float, tuples of them too."""
    if isinstance(value, Tensor) and value.numel() == 1:
        return float(value)
    if isinstance(value, tuple):
        return tuple(_option(v) for v in value)
    return value


def weight_decay_step(param: Tensor, grad: Tensor, lr: float, weight_decay: float,
                      decoupled: bool = False) -> tuple[Tensor, Tensor]:
    """``(param, grad)`` after torch's weight decay: ``grad + weight_decay * param`` (L2), or
    ``param * (1 - lr * weight_decay)`` when ``decoupled`` (AdamW's)."""
    if not weight_decay:
        return param, grad
    if decoupled:
        return param * (1.0 - lr * weight_decay), grad
    return param, grad + param * weight_decay


def check_range(name: str, option: str, value: float, low: float, high: float,
                closed_high: bool = False) -> None:
    """Raise ``InvalidArgumentError`` unless ``low <= value < high`` (``<= high`` when
    ``closed_high``), naming the optimizer and the option."""
    if not (low <= value <= high if closed_high else low <= value < high):
        right = "]" if closed_high else ")"
        raise InvalidArgumentError(f"{name}: {option} must be in [{low}, {high}{right}, got "
                                   f"{value}")


def _param_ref(op: str, ref: Any) -> str | Tensor:
    """A group entry as kept: the float tensor, or a name resolved at the first step."""
    if isinstance(ref, tuple) and len(ref) == 2 and isinstance(ref[0], str):
        ref = ref[1]
    if isinstance(ref, str):
        return ref
    if isinstance(ref, Tensor) and ref.kind is FLOAT:
        return ref
    raise InvalidArgumentError(f"{op}: a parameter must be a float Tensor, its name or a "
                               f"(name, tensor) pair, got {type(ref).__name__}"
                               + (f" of dtype {ref.dtype!r}" if isinstance(ref, Tensor) else ""))


def _ref_key(ref: str | Tensor) -> str | int:
    """What tells group entries apart: a name, or a tensor's identity."""
    return id(ref) if isinstance(ref, Tensor) else ref


def _ref_text(ref: str | Tensor) -> str:
    return f"'{ref}'" if isinstance(ref, str) else f"(a tensor of shape {ref.shape})"


def _position(key: int | str) -> int | str:
    """A state dict's parameter key: a position (an int, or its digits as a record keeps
    them), or a dotted name (records of earlier releases)."""
    return int(key) if isinstance(key, int) or key.isdigit() else key


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
