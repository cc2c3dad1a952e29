"""``Module``: the base of every layer, with parameters discovered from its attributes.

Discovery rule: every public attribute (no leading ``_``) that is a ``Tensor``, a ``Module``,
or a ``list``/``dict`` of those is part of the module's state, named by its attribute path
(``"layers.0.weight"``), and so is every tensor registered with ``register_buffer``, whatever
its name (spectral norm's ``_u``). A float tensor is a trainable **parameter** unless it was
registered with ``register_buffer``; buffers (BatchNorm's running stats) and int/bool tensors
are saved and moved with the module but never trained (a non-persistent buffer is moved but
not saved). On an autodiff backend a parameter is tracked
(``require_grad``) as soon as it is assigned, so layer code reads ``self.weight = tensor``;
torch's ``nn.Parameter(tensor, requires_grad)`` is that leaf made explicitly (frozen with
``requires_grad=False``, and left so when assigned).
"""

from __future__ import annotations

import copy
import weakref
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

import numpy as np

from burnpy import record
from burnpy.backend.data import TensorData
from burnpy.backend.device import Device
from burnpy.backend.dtype import DType, DTypeLike
from burnpy.backend.errors import (
    BackendMismatchError,
    BurnpyError,
    InvalidArgumentError,
    KindError,
    article,
    describe,
)
from burnpy.tensor import Tensor
from burnpy.tensor._core import FLOAT

if TYPE_CHECKING:
    from burnpy.backend.base import Backend
    from burnpy.quantization.scheme import QuantScheme

Holder = Any  # a Module, list or dict holding a tensor
#: One tensor place found by ``Module._walk``: (dotted name, tensor, holder, key, is_param).
Place = tuple[str, Tensor, Holder, str | int, bool]


class StateDictError(BurnpyError, ValueError):
    """A state dict whose names, shapes or dtypes do not match the module."""


class IncompatibleKeys(NamedTuple):
    """What ``load_state_dict`` returns (torch's ``_IncompatibleKeys``): the module's entries
    the state did not have, and the state's entries the module does not have."""

    missing_keys: list[str]
    unexpected_keys: list[str]

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return (f"IncompatibleKeys(missing_keys={self.missing_keys}, "
                f"unexpected_keys={self.unexpected_keys})")


def rename_keys(state: Mapping[str, Any],
                renames: Mapping[str, str] | Callable[[str], str | None]) -> dict[str, Any]:
    """``state`` with its keys renamed, to load a checkpoint whose names differ from the
    module's (a PyTorch ``nn.Sequential`` numbers what a burnpy model names).

    ``renames`` is either a mapping of key prefixes (``{"0.": "fc1.", "module.": ""}``: the
    first prefix a key starts with is replaced, other keys stay) or a callable giving each
    key's new name (``None`` drops the entry). Two entries renamed alike raise
    ``StateDictError``.
    """
    out: dict[str, Any] = {}
    for key, value in state.items():
        if callable(renames):
            name = renames(key)
        else:
            name = next((new + key[len(old):] for old, new in renames.items()
                         if key.startswith(old)), key)
        if name is None:
            continue
        if name in out:
            raise StateDictError(f"rename_keys: two entries are renamed to '{name}' (the "
                                 f"second from '{key}')")
        out[name] = value
    return out


@dataclass(slots=True)
class ParamSlot:
    """One distinct tensor of a module and every place that holds it (tied weights share)."""

    name: str
    tensor: Tensor
    holders: list[tuple[Holder, str | int]]
    is_param: bool

    def assign(self, value: Tensor) -> None:
        """Put ``value`` in every holder, bypassing ``Module.__setattr__`` (no re-tracking)."""
        for holder, key in self.holders:
            if isinstance(holder, Module) and isinstance(key, str):
                holder.__dict__[key] = value
            else:
                holder[key] = value
        self.tensor = value

    def write(self, value: Tensor) -> None:
        """Give the slot's tensor ``value``'s backend and contents, keeping the Python object
        every holder and an optimizer refer to (torch's ``param.data = value``)."""
        self.tensor.backend = value.backend
        self.tensor.primitive = value.primitive


#: Tensors made by ``Parameter`` or assigned to a module as a parameter, by id (a WeakSet
#: would compare tensors with their elementwise ``==``): each got its tracking once, so
#: assigning it again (or to another module) keeps it frozen or tracked as it is.
_PARAMETERS: dict[int, weakref.ref[Tensor]] = {}


def _is_parameter(t: Tensor) -> bool:
    ref = _PARAMETERS.get(id(t))
    return ref is not None and ref() is t


def _mark_parameter(t: Tensor) -> None:
    key = id(t)
    _PARAMETERS[key] = weakref.ref(t, lambda _: _PARAMETERS.pop(key, None))


def _set_tracked(t: Tensor) -> Tensor:
    """Track ``t`` when its backend records gradients (a no-op elsewhere), unless it already
    is a parameter (its tracking, frozen included, then stays)."""
    if t.kind is FLOAT and not _is_parameter(t):
        if t.backend.ad_enabled() and not t.is_require_grad():
            t.require_grad()
        _mark_parameter(t)
    return t


class _ParameterType(type):
    """``isinstance(t, Parameter)`` also holds for a tensor a module holds as a parameter."""

    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, Tensor) and (type.__instancecheck__(cls, obj)
                                            or _is_parameter(obj))


class Parameter(Tensor, metaclass=_ParameterType):
    """torch's ``nn.Parameter(data, requires_grad=True)``: a new leaf tensor holding
    ``data``'s values, tracked on an autodiff backend (frozen with ``requires_grad=False``).

    Any float tensor a module holds is a parameter already, so ``self.w = nn.Parameter(t)``
    and ``self.w = t`` differ only for a frozen Parameter, which stays frozen when assigned.
    ``isinstance(t, nn.Parameter)`` holds for a Parameter and for a tensor assigned to a
    module as a parameter; results of ops on a Parameter are plain tensors, as torch's."""

    __slots__ = ()

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True) -> None:
        if data is None:
            data = Tensor.empty((0,))
        if not isinstance(data, Tensor) or data.kind is not FLOAT:
            what = (f"{article(data.kind)} tensor ({data.dtype!r})" if isinstance(data, Tensor)
                    else type(data).__name__)
            raise KindError(f"Parameter: data must be a float Tensor, got {what}")
        leaf = data.detach()
        super().__init__(leaf.backend, leaf.primitive, FLOAT)
        if requires_grad and self.backend.ad_enabled():
            self.require_grad()
        _mark_parameter(self)


class Module:
    """Base class of layers: subclass, assign tensors and sub-modules in ``__init__``, and
    write ``forward``. ``module(x)`` calls ``forward``."""

    #: What a record of a module holds (``burnpy.record.Stateful``).
    record_kind: ClassVar[str] = "module"
    training: bool = True
    _buffer_names: frozenset[str] = frozenset()
    _non_persistent: frozenset[str] = frozenset()  # buffers moved but left out of state dicts

    def __setattr__(self, name: str, value: Any) -> None:
        if (isinstance(value, Tensor) and value.kind is FLOAT and not name.startswith("_")
                and name not in self._buffer_names):
            _set_tracked(value)
        object.__setattr__(self, name, value)

    def register_buffer(self, name: str, tensor: Tensor | None,
                        persistent: bool = True) -> None:
        """Keep ``tensor`` as moved but untrained state (running statistics), saved in the
        state dict unless ``persistent=False``; any name, ``_``-prefixed too, as torch's (a
        None buffer is skipped until a tensor is assigned)."""
        where = f"{type(self).__name__}.register_buffer"
        if not isinstance(name, str) or not name or "." in name:
            raise InvalidArgumentError(f"{where}: the name must be a non-empty string without "
                                       f"'.', got {name!r}")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise KindError(f"{where}('{name}'): expected a Tensor or None, got "
                            f"{type(tensor).__name__}")
        if name in vars(self) and name not in self._buffer_names:
            raise InvalidArgumentError(f"{where}: attribute '{name}' already exists and is "
                                       "not a buffer")
        object.__setattr__(self, "_buffer_names", self._buffer_names | {name})
        object.__setattr__(self, "_non_persistent", self._non_persistent - {name}
                           if persistent else self._non_persistent | {name})
        object.__setattr__(self, name, tensor)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """The computation; every layer overrides it."""
        raise BurnpyError(f"{type(self).__name__} does not define forward()")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    # ---- discovery ---------------------------------------------------------------------------
    def _entries(self) -> Iterator[tuple[str, Any]]:
        buffers = self._buffer_names
        for name, value in vars(self).items():
            if not name.startswith("_") or name in buffers:
                yield name, value

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """Direct sub-modules, including those inside list and dict attributes."""
        for name, value in self._entries():
            if isinstance(value, Module):
                yield name, value
            elif isinstance(value, list | dict):
                for key, item in _items(value):
                    if isinstance(item, Module):
                        yield f"{name}.{key}", item

    def children(self) -> Iterator[Module]:
        """Direct sub-modules (``named_children`` without the names)."""
        for _, child in self.named_children():
            yield child

    def named_modules(self, prefix: str = "") -> Iterator[tuple[str, Module]]:
        """This module and every descendant, depth first, with dotted names."""
        yield prefix, self
        for name, child in self.named_children():
            yield from child.named_modules(f"{prefix}.{name}" if prefix else name)

    def modules(self) -> Iterator[Module]:
        """This module and every descendant, depth first."""
        for _, m in self.named_modules():
            yield m

    def _walk(self, prefix: str = "", out: list[Place] | None = None) -> list[Place]:
        """(name, tensor, holder, key, is_param) for every tensor place, in attribute order:
        a list filled by plain recursion (optimizers walk the model every step)."""
        if out is None:
            out = []
        buffers = self._buffer_names
        for name, value in vars(self).items():
            if name.startswith("_") and name not in buffers:
                continue
            if isinstance(value, Tensor):
                out.append((prefix + name, value, self, name,
                            value.kind is FLOAT and name not in buffers))
            elif isinstance(value, Module):
                value._walk(f"{prefix}{name}.", out)
            elif isinstance(value, list | dict):
                for key, item in _items(value):
                    if isinstance(item, Tensor):
                        out.append((f"{prefix}{name}.{key}", item, value, key,
                                    item.kind is FLOAT))
                    elif isinstance(item, Module):
                        item._walk(f"{prefix}{name}.{key}.", out)
        return out

    def _saved_places(self) -> list[Place]:
        """``_walk``'s places less the non-persistent buffers: what state dicts hold."""
        return [p for p in self._walk()
                if not (isinstance(p[2], Module) and p[3] in p[2]._non_persistent)]

    def slots(self) -> list[ParamSlot]:
        """Every distinct tensor once (tied weights keep their first name), with its holders."""
        by_id: dict[int, ParamSlot] = {}
        for name, t, holder, key, is_param in self._walk():
            slot = by_id.get(id(t))
            if slot is None:
                by_id[id(t)] = ParamSlot(name, t, [(holder, key)], is_param)
            else:
                slot.holders.append((holder, key))
        return list(by_id.values())

    def named_parameters(self) -> Iterator[tuple[str, Tensor]]:
        """Trainable float tensors with their dotted names (each tied tensor once)."""
        for slot in self.slots():
            if slot.is_param:
                yield slot.name, slot.tensor

    def parameters(self) -> list[Tensor]:
        """Every trainable tensor, in ``named_parameters`` order (what optimizers step)."""
        return [t for _, t in self.named_parameters()]

    def named_buffers(self) -> Iterator[tuple[str, Tensor]]:
        """Saved but untrained tensors (registered buffers, int and bool tensors)."""
        for slot in self.slots():
            if not slot.is_param:
                yield slot.name, slot.tensor

    def buffers(self) -> list[Tensor]:
        """Every buffer (saved, moved, untrained), in ``named_buffers`` order."""
        return [t for _, t in self.named_buffers()]

    def num_params(self) -> int:
        """The number of trainable scalars."""
        return sum(t.numel() for t in self.parameters())

    @property
    def backend(self) -> type[Backend] | None:
        """The backend of the module's tensors (None for a module without any)."""
        for _, t, _, _, _ in self._walk():
            return t.backend
        return None

    @property
    def device(self) -> Device | None:
        """The device of the module's tensors (None for a module without any)."""
        for _, t, _, _, _ in self._walk():
            return t.device
        return None

    # ---- modes and tracking ------------------------------------------------------------------
    def train(self, mode: bool = True) -> Module:
        """Training mode (dropout active, batch statistics) for this module and its children."""
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self) -> Module:
        """Inference mode: dropout off, running statistics."""
        return self.train(False)

    def require_grad(self, flag: bool = True) -> Module:
        """Track every parameter, or freeze them all with ``flag=False`` (torch's
        ``requires_grad_``; needs an autodiff backend); returns the module."""
        for slot in self.slots():
            if slot.is_param:
                slot.tensor.require_grad(flag)
        return self

    requires_grad_ = require_grad

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Nothing to clear: gradients are not accumulated on parameters in burnpy, each
        ``backward()`` returns fresh ``Gradients`` (accepted so torch's loops port as they
        are)."""

    def apply(self, fn: Callable[[Module], object]) -> Module:
        """Call ``fn`` on every sub-module, then on this one, as torch's ``apply`` (custom
        initialisation); returns the module."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    def float(self) -> Module:
        """Cast float tensors to float32, in place (torch's ``module.float()``)."""
        return self.to(dtype=DType.float32)

    def double(self) -> Module:
        """Cast float tensors to float64, in place."""
        return self.to(dtype=DType.float64)

    def half(self) -> Module:
        """Cast float tensors to float16, in place."""
        return self.to(dtype=DType.float16)

    def bfloat16(self) -> Module:
        """Cast float tensors to bfloat16, in place."""
        return self.to(dtype=DType.bfloat16)

    def quantize_weights(self, scheme: QuantScheme) -> Module:
        """Quantize, in place, every weight matrix (float parameter of 2 or more dims whose
        last dim the scheme's block size divides) for inference; biases and norm parameters
        stay float. Linear layers then run weight-only (``q_linear``: float activations times the
        quantized weight); other layers dequantize their weights."""
        bs = scheme.level.block_size
        for slot in self.slots():
            t = slot.tensor
            if slot.is_param and t.ndim >= 2 and (bs is None or t.shape[-1] % bs == 0):
                slot.assign(t.detach().inner().quantize(scheme) if t.backend.ad_enabled()
                            else t.quantize(scheme))
        return self

    # ---- moving ------------------------------------------------------------------------------
    def to(self, backend: type[Backend] | None = None, device: Device | None = None,
           dtype: DTypeLike | None = None) -> Module:
        """Move every tensor to ``backend``/``device`` and cast float ones to ``dtype``, in
        place (torch's convention: each tensor stays the same object, so an optimizer built
        before keeps its parameters). A converted parameter is a fresh leaf, tracked on an
        autodiff backend unless it was frozen (``require_grad(False)``) before: the cast
        itself is not recorded, so gradients reach the converted values."""
        target_dtype = None if dtype is None else DType.of(dtype)
        for slot in self.slots():
            t = slot.tensor
            if backend is not None or device is not None:
                t = t.to_backend(backend or t.backend, device)
            if target_dtype is not None and t.kind is FLOAT and t.dtype is not target_dtype:
                t = t.cast(target_dtype)
            if t is slot.tensor:
                continue
            if slot.is_param and t.kind is FLOAT:
                was = slot.tensor
                frozen = was.backend.ad_enabled() and not was.is_require_grad()
                t = t.detach()
                if t.backend.ad_enabled() and not frozen:
                    t.require_grad()
            elif t.kind is FLOAT:
                t = t.detach()
            slot.write(t)
        return self

    def valid(self) -> Module:
        """A copy of this module on the inner backend, in eval mode, for inference.

        Burn's ``valid()``: every tensor is ``inner()`` (same values, untracked), so the copy
        runs without recording a graph; the training module is left as it is.
        """
        b = self.backend
        if b is not None and getattr(b, "InnerBackend", None) is None:
            raise BackendMismatchError(
                f"valid: the module is on {b.name()}, which is not a decorator backend; "
                "valid() strips Autodiff, use eval() on a plain backend")
        clone = self._map_tensors(Tensor.inner)
        clone.eval()
        return clone

    def _map_tensors(self, fn: Callable[[Tensor], Tensor]) -> Module:
        """A structural copy with every tensor replaced by ``fn(tensor)`` (ties kept)."""
        done: dict[int, Any] = {}

        def convert(value: Any) -> Any:
            key = id(value)
            if key in done:
                return done[key]
            if isinstance(value, Tensor):
                out: Any = fn(value)
            elif isinstance(value, Module):
                out = copy.copy(value)
                for name, item in value._entries():
                    out.__dict__[name] = convert(item)
            elif isinstance(value, list):
                out = [convert(v) for v in value]
            elif isinstance(value, dict):
                out = {k: convert(v) for k, v in value.items()}
            else:
                return value
            done[key] = out
            return out

        return convert(self)

    # ---- state -------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Tensor]:
        """Every parameter and buffer by dotted name, a tied tensor under each of its names as
        torch's (so torch's strict ``load_state_dict`` takes it; records store it once)."""
        return {name: t for name, t, _, _, _ in self._saved_places()}

    def load_state_dict(self, state: Mapping[str, Tensor | TensorData | np.ndarray],
                        strict: bool = True, assign: bool = False) -> IncompatibleKeys:
        """Replace tensors with ``state``'s values; returns ``(missing_keys, unexpected_keys)``.

        As torch's: values are copied into the module's tensors, which stay the same objects
        (an optimizer built before keeps its parameters, and a caller's array or live torch
        tensor written later does not reach the module), cast to each tensor's dtype (a
        bfloat16 file into a float32 model), kept on its backend and device; a tied tensor may
        be given under
        any of its names; shapes must match. With ``strict`` (the default) any missing or
        unexpected name raises ``StateDictError``; otherwise they are only returned. Loads a
        PyTorch checkpoint saved with ``safetensors.torch.save_file`` (same names, same
        ``[out, in]`` layouts; ``rename_keys`` maps other names). ``assign=True`` (torch's)
        takes a ``Tensor`` entry's values without copying them (cast or moved only where its
        dtype or backend differs), for a caller that made them for this module.
        """
        state = dict(state)  # the pre-hooks may rename entries; the caller's mapping stays
        for prefix, m in self.named_modules():
            m._prepare_load(state, f"{prefix}." if prefix else "")
        aliases: dict[int, list[str]] = {}
        for name, t, _, _, _ in self._saved_places():
            aliases.setdefault(id(t), []).append(name)
        slots = [s for s in self.slots() if id(s.tensor) in aliases]
        known = {name for names in aliases.values() for name in names}
        missing = [s.name for s in slots if not any(n in state for n in aliases[id(s.tensor)])]
        unexpected = [k for k in state if k not in known]
        if strict and (missing or unexpected):
            hint = (" (rename_keys maps a checkpoint's names to the module's)"
                    if missing and unexpected else "")
            raise StateDictError(
                f"load_state_dict into {type(self).__name__}: "
                + "; ".join(part for part in (
                    f"missing {', '.join(missing)}" if missing else "",
                    f"unexpected {', '.join(unexpected)}" if unexpected else "") if part)
                + hint)
        updates = []
        for slot in slots:
            key = next((n for n in aliases[id(slot.tensor)] if n in state), None)
            if key is None:
                continue
            value, t = state[key], slot.tensor
            if assign and isinstance(value, Tensor):
                if value.shape != t.shape:
                    raise StateDictError(f"load_state_dict: '{key}' has shape "
                                         f"{describe(value.shape)} in the state but "
                                         f"{describe(t.shape)} in the module")
                if value.backend is not t.backend or value.device != t.device:
                    value = value.to_backend(t.backend, t.device)
                updates.append((slot, value.cast(t.dtype)))
                continue
            data = _tensor_data(value)
            if tuple(data.shape) != t.shape:
                raise StateDictError(f"load_state_dict: '{key}' has shape "
                                     f"{describe(tuple(data.shape))} in the state but "
                                     f"{describe(t.shape)} in the module")
            if data.dtype is not t.dtype:
                if data.dtype.is_quantized or t.dtype.is_quantized:
                    raise StateDictError(f"load_state_dict: '{key}' is {data.dtype!r} in the "
                                         f"state but {t.dtype!r} in the module; quantize or "
                                         "dequantize one of them first")
                data = data.convert(t.dtype)
            updates.append((slot, Tensor.from_data(data, backend=t.backend, device=t.device)))
        for slot, t in updates:
            was = slot.tensor
            t = t.detach()
            if slot.is_param and was.is_require_grad():
                t.require_grad()  # a fresh leaf, as trainable as the value it replaces
            slot.write(t)
        return IncompatibleKeys(missing, unexpected)

    def _prepare_load(self, state: dict[str, Any], prefix: str) -> None:
        """Adjust this module, or rename ``state``'s entries (a copy), before
        ``load_state_dict`` reads ``state`` (this module's entries are named ``prefix +
        name``): torch's load pre-hook, by which a lazy module materialises and weight norm
        reads torch's legacy names."""

    def save(self, path: str | Path) -> Path:
        """Write the module's record to ``path`` (see ``burnpy.record.save``)."""
        return record.save(self, path)

    def load(self, path: str | Path) -> Module:
        """Load the record at ``path`` into this module (see ``burnpy.record.load``)."""
        return record.load(self, path)

    # ---- printing ----------------------------------------------------------------------------
    def extra_repr(self) -> str:
        """The layer's configuration, shown in ``repr``."""
        return ""

    def __repr__(self) -> str:
        children = list(self.named_children())
        head = f"{type(self).__name__}({self.extra_repr()}"
        if not children:
            return head + ")"
        lines = [head]
        for name, child in children:
            body = repr(child).replace("\n", "\n  ")
            lines.append(f"  ({name}): {body}")
        return "\n".join(lines) + "\n)"


def _items(container: list[Any] | dict[Any, Any]) -> Iterator[tuple[str | int, Any]]:
    if isinstance(container, list):
        return iter(enumerate(container))
    return iter(container.items())


def _tensor_data(value: Tensor | TensorData | np.ndarray) -> TensorData:
    """A state dict entry as host data of its own: an array or a torch tensor is copied, since
    the caller may write it later (a live ``torch_model.state_dict()`` changes as torch's
    optimizer steps)."""
    if isinstance(value, Tensor):
        return value.into_data()
    if isinstance(value, TensorData):
        return TensorData(value.array.copy(), value.dtype, value.quant)
    return TensorData.from_any(np.asarray(value).copy())
