"""``Fusion(B)``: the decorator backend that records ops lazily and fuses elementwise chains.

``Fusion(B)`` builds, once per B and thread-safely, a subclass of ``FusionBackend`` whose
float, int and bool primitives are B's own primitives where their values exist and
``FusionTensor`` handles where they are pending (quantized ones are B's own). A materialized
value being B's primitive itself is what keeps eager ops cheap: an op whose arguments hold no
handle calls B's op directly and returns B's result unchanged, with no wrapper to build or
unwrap. The class is derived from the protocol: each op in ``burnpy.ir.FUSABLE`` is recorded on
the device's stream (or run at once on B when smaller than the fuser's ``min_elements``); each
provided op in ``ELEMENTWISE_COMPOSITES`` keeps the protocol's default (its composition is
recorded, so it fuses; B's own op on smaller tensors), and so does each op of
``FUSABLE_COMPOSITIONS`` that B does not override (B would run that same composition op by
op); every other op runs eagerly on B once the values it reads are materialized.
"""

from __future__ import annotations

import inspect
import itertools
import math
import weakref
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from burnpy.backend.base import Backend
from burnpy.backend.decorator import DecoratorFactory, InnerDevices, inner_attributes
from burnpy.backend.device import Device
from burnpy.backend.dtype import DType
from burnpy.backend.errors import DeviceMismatchError
from burnpy.backend.ops._marker import is_provided, provided_ops, required_ops
from burnpy.fusion.fuser import Fuser, backend_fuser
from burnpy.fusion.lazy import LAZY_OPS, lazy_recorder
from burnpy.fusion.source import define
from burnpy.fusion.stream import FusionStats, LazyNode, Stream, ir_dtype
from burnpy.fusion.tensor import PLAIN, FusionTensor, Piece, Unwritten
from burnpy.ir.fused import ELEMENTWISE_COMPOSITES, FUSABLE, Fusable, FusedGroup

#: Provided ops that only look at the primitive (no values): the protocol default is right.
_KEPT_DEFAULTS = frozenset({"float_detach", "float_is_require_grad", "float_set_require_grad"})

#: Device lookups: a handle knows its device, B's primitive is asked of B (``_device_finder``).
_OWN_OPS = frozenset({"float_device", "int_device", "bool_device"})

#: Provided ops whose default composition is mostly fusable ops around a few eager ones (a
#: matmul, a closing reduction): where B keeps the default, recording it lets its elementwise
#: pieces fuse with each other and with their neighbours (a linear's bias add with the next
#: activation, an optimizer's whole per-parameter update in one kernel writing the parameter
#: and its state), where running it eagerly on B dispatches every piece alone. An op B
#: overrides runs B's override (one kernel already, or B's faster code).
FUSABLE_COMPOSITIONS = frozenset({
    "linear", "cross_entropy", "cross_entropy_backward", "softmax", "log_softmax",
    "layer_norm", "layer_norm_backward", "adam_step", "sgd_step", "rmsprop_step",
})


#: How a recorded op types, cached per class by its operands' dtypes: its result's ``DType``, its
#: first operand's (the dtype runtime scalars convert to) and the handle's dtype in the inner
#: primitives' form; None when B's fuser refuses the op or burnpy's promotion is B's to apply.
Typing = tuple[DType, DType, Any] | None

#: Types of the items of a tuple or list argument that holds no tensor (a shape, slices).
_INERT = PLAIN | {slice}


class _State:
    """What one Fusion class's ops share, captured by each op's closure so that an op reaches
    it without a class attribute lookup: B, its fuser (looked up on first use), the counters,
    the plans, the streams, the cached typings and how a primitive's device is found."""

    __slots__ = ("accepted", "device_of", "dtype_forms", "fusers", "inner", "plans",
                 "provided_adam", "stats", "streams", "wrappers")

    def __init__(self, inner: type[Backend]) -> None:
        self.inner = inner
        self.stats = FusionStats()
        self.plans: dict[FusedGroup, Any] = {}
        self.streams: dict[Device, Stream] = {}
        self.fusers: list[Fuser | None] = []
        self.accepted: dict[tuple[Any, ...], Typing] = {}
        self.device_of = _device_finder(inner)
        self.dtype_forms: dict[DType, Any] = {}
        #: The materialized handle wrapping each of B's primitives that pending ops read, by
        #: the primitive's id (alive as long as a pending op holds the handle): a value read
        #: by several ops of a group is one input of its kernel, read once.
        self.wrappers: weakref.WeakValueDictionary[int, FusionTensor] = (
            weakref.WeakValueDictionary())
        #: Whether B keeps the protocol's ``adam_step`` (see ``fuses_elementwise``).
        self.provided_adam = is_provided(inspect.getattr_static(inner, "adam_step"))

    def dtype_form(self, dtype: DType, device: Device) -> Any:
        """``dtype`` as B's primitives report it (a NumPy dtype for the array backends), asked
        of B once per dtype with a one-element tensor."""
        found = self.dtype_forms.get(dtype)
        if found is None:
            found = self.dtype_forms[dtype] = self.inner.float_zeros((1,), device, dtype).dtype
        return found

    def fuser(self) -> Fuser | None:
        """B's fuser (asked for once), or None when B declares none."""
        if not self.fusers:
            self.fusers.append(backend_fuser(self.inner))
        return self.fusers[0]

    def fuses_elementwise(self) -> bool:
        """See ``FusionBackend.fuses_elementwise`` (asked for every optimizer step: B's side
        of the answer is looked up once)."""
        return self.fuser() is not None and self.provided_adam

    def stream(self, device: Device) -> Stream:
        """The stream of pending ops of ``device`` (created on first use)."""
        found = self.streams.get(device)
        if found is None:
            found = self.streams.setdefault(
                device, Stream(self.inner, self.fuser(), self.plans, self.stats))
        return found

    def recorded(self, a: Any) -> Any:
        """An argument as a recorded node keeps it: a handle's pending node (or the
        materialized handle, its unwritten values built now), one of B's primitives in a
        materialized handle, a number as it is."""
        kind = type(a)
        if kind is FusionTensor:
            if a.unwritten is not None:
                _write(a)
            return a.node or a
        if kind in PLAIN:
            return a
        found = self.wrappers.get(id(a))
        if found is None or found.value is not a:
            found = self.wrappers[id(a)] = FusionTensor(tuple(a.shape), a.dtype,
                                                        self.device_of(a), a)
        return found


def _device_finder(inner: type[Backend]) -> Callable[[Any], Device]:
    """``device_of(primitive)``: the device of a handle or of one of B's primitives."""
    if not inner.multi_device:
        single = inner.default_device()
        return lambda tensor: tensor.device if type(tensor) is FusionTensor else single
    by_kind = {"float": inner.float_device, "int": inner.int_device, "bool": inner.bool_device}

    def device_of(tensor: Any) -> Device:
        if type(tensor) is FusionTensor:
            return tensor.device
        return by_kind[ir_dtype(tensor.dtype).kind](tensor)

    return device_of


class FusionBackend(InnerDevices, Backend, abstract=True):
    """Base of every ``Fusion(B)`` class. ``InnerBackend`` is B; ``stats`` counts what it did
    (kernels launched and compiled, plan-cache hits, ops run eagerly)."""

    FloatTensorPrimitive: ClassVar[Any] = FusionTensor
    IntTensorPrimitive: ClassVar[Any] = FusionTensor
    BoolTensorPrimitive: ClassVar[Any] = FusionTensor
    InnerBackend: ClassVar[type[Backend]]
    stats: ClassVar[FusionStats]
    _state: ClassVar[_State]
    _plans: ClassVar[dict[FusedGroup, Any]]
    _streams: ClassVar[dict[Device, Stream]]
    _fuser: ClassVar[list[Fuser | None]]
    _accepted: ClassVar[dict[tuple[Any, ...], Typing]]

    # ---- the backend's non-op methods, delegated to B ------------------------------------------
    @classmethod
    def name(cls, device: Device | None = None) -> str:
        return f"fusion<{cls.InnerBackend.name(device)}>"

    @classmethod
    def sync(cls, device: Device) -> None:
        """Run every pending op of ``device``, then wait for B."""
        cls.stream(device).flush()
        cls.InnerBackend.sync(device)

    # ---- streams and plans --------------------------------------------------------------------
    @classmethod
    def stream(cls, device: Device) -> Stream:
        """The stream of pending ops of ``device`` (created on first use)."""
        return cls._state.stream(device)

    @classmethod
    def fuser(cls) -> Fuser | None:
        """B's fuser (asked for once), or None when B declares none."""
        return cls._state.fuser()

    @classmethod
    def fuses_elementwise(cls) -> bool:
        """Whether an optimizer's elementwise update is recorded and fused here: B declares a
        fuser and keeps the protocol's ``adam_step``. Then a caller that batches many small
        updates into one op by concatenating (an optimizer) should not, as each update is one
        kernel already and the copies would cost more. Where B has its own ``adam_step``
        (CpuBackend's), that runs eagerly as under B alone, and batching pays as it does there."""
        return cls._state.fuses_elementwise()

    @classmethod
    def flush(cls) -> None:
        """Run every pending op on every device."""
        for stream in list(cls._streams.values()):
            stream.flush()

    @classmethod
    def clear_plans(cls) -> None:
        """Forget every compiled plan (the next groups compile again)."""
        cls._plans.clear()
        for stream in list(cls._streams.values()):
            stream.signatures.clear()

    # ---- crossing between this backend and B ---------------------------------------------------
    @staticmethod
    def inner(tensor: Any) -> Any:
        """B's primitive holding the tensor's values (materialized now)."""
        return materialize(tensor)

    int_inner = bool_inner = inner

    @staticmethod
    def from_inner(tensor: Any) -> Any:
        """B's primitive ``tensor`` as this backend's: itself (a materialized value)."""
        return tensor

    int_from_inner = bool_from_inner = q_inner = q_from_inner = from_inner


def materialize(tensor: Any) -> Any:
    """The tensor's inner primitive, running its stream's pending ops first if needed, or
    building its unwritten values (B's primitive, a materialized value, is its own)."""
    if type(tensor) is not FusionTensor:
        return tensor
    node = tensor.node
    if node is not None:
        node.stream.flush()
    elif tensor.unwritten is not None:
        _write(tensor)
    return tensor.value


def _write(tensor: FusionTensor) -> None:
    """Build an ``Unwritten`` tensor on B: zeros, or its pieces concatenated with the zero
    gaps between them (written once, where padding each piece and adding would write every
    element once per piece), by the fuser's ``write_pieces`` where it has one."""
    unwritten = tensor.unwritten
    assert unwritten is not None
    inner, shape, device = unwritten.inner, tensor.shape, tensor.device
    dtype = ir_dtype(tensor.dtype)
    pieces = sorted(unwritten.pieces, key=lambda piece: piece.start)
    if not pieces:
        value = inner.float_zeros(shape, device, dtype)
    else:
        dim = pieces[0].dim
        blocks = [(piece.start, materialize(piece.value)) for piece in pieces]
        writer = _piece_writer(inner)
        if len(blocks) == 1 and blocks[0][1].shape[dim] == shape[dim]:
            value = blocks[0][1]  # one piece covering every element: the piece itself
        elif writer is not None:
            value = writer(shape, tensor.dtype, dim, blocks)
        else:
            parts: list[Any] = []
            position = 0
            for start, part in blocks:
                if start > position:
                    parts.append(inner.float_zeros(_with_dim(shape, dim, start - position),
                                                   device, dtype))
                parts.append(part)
                position = start + part.shape[dim]
            if position < shape[dim]:
                parts.append(inner.float_zeros(_with_dim(shape, dim, shape[dim] - position),
                                               device, dtype))
            value = inner.float_cat(parts, dim)
    tensor.value = value
    tensor.unwritten = None


#: Each inner backend's fuser's ``write_pieces`` (None without one), looked up once.
_PIECE_WRITERS: dict[type[Backend], Callable[..., Any] | None] = {}


def _piece_writer(inner: type[Backend]) -> Callable[..., Any] | None:
    """``inner``'s fuser's ``write_pieces`` (see ``burnpy.fusion.fuser``), or None."""
    try:
        return _PIECE_WRITERS[inner]
    except KeyError:
        writer = getattr(backend_fuser(inner), "write_pieces", None)
        return _PIECE_WRITERS.setdefault(inner, writer)


def _with_dim(shape: tuple[int, ...], dim: int, size: int) -> tuple[int, ...]:
    return (*shape[:dim], size, *shape[dim + 1:])


def _holds_handle(values: list[Any] | tuple[Any, ...]) -> bool:
    """Whether a list or tuple argument (a concat's tensors, a shape) holds a handle."""
    for v in values:
        kind = type(v)
        if kind is FusionTensor or ((kind is list or kind is tuple) and _holds_handle(v)):
            return True
    return False


def _unwrap(value: Any) -> Any:
    """An argument as B takes it: handles materialized, inside lists and tuples too."""
    kind = type(value)
    if kind is FusionTensor:
        return materialize(value)
    if (kind is tuple or kind is list) and not _INERT.issuperset(map(type, value)) and (
            _holds_handle(value)):
        return kind(_unwrap(v) for v in value)
    return value


def _eager(name: str, state: _State) -> Callable[..., Any]:
    """The op ``name`` run now on B: B's op itself when no argument holds a handle (the common
    case: no wrapper, no copy of the arguments), else after the handles are materialized.
    Where the protocol's signature says which parameters are tensors, the check is compiled
    for them alone (``_checked_eager``): most of Fusion's cost on a step too small to fuse
    is this check, once per op."""
    inner_op = getattr(state.inner, name)
    stats = state.stats

    def op(*args: Any, **kwargs: Any) -> Any:
        stats.eager_ops += 1
        if not kwargs:
            for a in args:
                kind = type(a)
                if kind is FusionTensor or ((kind is list or kind is tuple)
                                            and not _INERT.issuperset(map(type, a))
                                            and _holds_handle(a)):
                    break
            else:
                return inner_op(*args)
        return inner_op(*[_unwrap(a) for a in args],
                        **{k: _unwrap(v) for k, v in kwargs.items()})

    op.__name__ = name
    op.__doc__ = f"``{name}`` on the inner backend, after the values it reads are computed."
    return _checked_eager(name, op, inner_op, stats) or op


def _checked_eager(name: str, generic: Callable[..., Any], inner_op: Callable[..., Any],
                   stats: FusionStats) -> Callable[..., Any] | None:
    """``generic`` (see ``_eager``) behind a check of only the parameters the protocol types
    as tensors (a ``*Primitive``, optional or not, or a sequence of them), generated with the
    protocol op's own parameters, so that a call is one frame, a ``type() is`` test per
    tensor and B's op; None when the signature has a form this does not generate."""
    signature = _Signature.of(name)
    if signature is None:
        return None
    return signature.generate(name, signature.handle_test(), generic, inner_op, stats, {})


def _fronted(name: str, slow: Callable[..., Any], state: _State, gate: str = "",
             shortcut: str = "", names: dict[str, Any] | None = None) -> Callable[..., Any]:
    """``slow`` (an op with paths of its own for handles: unwritten tensors, views, a
    matmul the fuser records) behind the generated check of ``_checked_eager``: a call
    holding no handle for which ``gate`` (an expression of the parameters and ``names``)
    holds runs B's op at once, in one frame, after ``shortcut`` (lines that may return
    early); any other call goes to ``slow``. ``slow`` itself without a generated form."""
    signature = _Signature.of(name)
    if signature is None:
        return slow
    prologue = signature.handle_test()
    if gate:
        prologue += f"    if not ({gate}):\n        return _slow({signature.call})\n"
    return signature.generate(name, prologue + shortcut, slow, getattr(state.inner, name),
                              state.stats, names or {})


class _Signature:
    """A protocol op's parameters as generated wrappers declare and pass them: ``declared``
    (with the protocol's defaults), ``call`` (the arguments passed on), the names of the
    parameters typed as tensors (``tensors``; ``optional`` among them when None is allowed)
    and as sequences of tensors (``sequences``)."""

    __slots__ = ("call", "declared", "defaults", "optional", "parameters", "sequences",
                 "tensors")

    def __init__(self, parameters: list[inspect.Parameter]) -> None:
        self.parameters = [p.name for p in parameters]
        self.defaults: dict[str, Any] = {}
        declared: list[str] = []
        passed: list[str] = []
        self.tensors: list[str] = []
        self.optional: list[str] = []
        self.sequences: list[str] = []
        keyword_only = False
        for i, p in enumerate(parameters):
            annotation = str(p.annotation)
            if p.kind is p.KEYWORD_ONLY and not keyword_only:
                keyword_only = True
                declared.append("*")
            default = ""
            if p.default is not p.empty:
                self.defaults[f"_d{i}"] = p.default
                default = f"=_d{i}"
            declared.append(f"{p.name}{default}")
            passed.append(f"{p.name}={p.name}" if keyword_only else p.name)
            if annotation.startswith("Sequence[") and "Primitive" in annotation:
                self.sequences.append(p.name)
            elif "Primitive" in annotation and "Quantized" not in annotation:
                self.tensors.append(p.name)
                if "None" in annotation:
                    self.optional.append(p.name)
        self.declared = ", ".join(declared)
        self.call = ", ".join(passed)

    def handle_test(self) -> str:
        """Generated lines returning ``_slow(...)`` when a tensor parameter, or an item of a
        sequence of tensors, is a handle."""
        lines = ""
        if self.tensors:
            checks = " or ".join(f"type({t}) is _FT" for t in self.tensors)
            lines += f"    if {checks}:\n        return _slow({self.call})\n"
        for sequence in self.sequences:
            lines += (f"    for _t in {sequence}:\n        if type(_t) is _FT:\n"
                      f"            return _slow({self.call})\n")
        return lines

    @staticmethod
    def of(name: str) -> _Signature | None:
        """The signature of protocol op ``name`` (its ``cls`` left out), or None when it has
        a parameter form the generated wrappers do not take (``*args``, positional-only) or
        annotations that are not strings."""
        attr = inspect.getattr_static(Backend, name, None)
        if attr is None:
            return None
        function = attr.__func__ if isinstance(attr, staticmethod | classmethod) else attr
        parameters = list(inspect.signature(function).parameters.values())
        if isinstance(attr, classmethod):
            parameters = parameters[1:]
        for p in parameters:
            if not isinstance(p.annotation, str) or p.kind not in (p.POSITIONAL_OR_KEYWORD,
                                                                   p.KEYWORD_ONLY):
                return None
        return _Signature(parameters)

    def generate(self, name: str, prologue: str, slow: Callable[..., Any],
                 inner_op: Callable[..., Any], stats: FusionStats,
                 names: dict[str, Any], cls: bool = False) -> Callable[..., Any]:
        """``def name(<declared>)`` (``cls`` first for a classmethod): ``prologue`` (which
        may return ``_slow(...)``), then B's op, counted as an eager op. Its source stays
        readable (``python -m burnpy.fusion.show name``, see ``burnpy.fusion.source``)."""
        scope: dict[str, Any] = {"_FT": FusionTensor, "_holds": _holds_handle, "_slow": slow,
                                 "_op": inner_op, "_stats": stats, **self.defaults, **names}
        declared = f"cls, {self.declared}" if cls else self.declared
        source = (f"def {name}({declared}):\n{prologue}"
                  f"    _stats.eager_ops += 1\n"
                  f"    return _op({self.call})\n")
        op = define(source, name, f"<fusion {name}>", scope)
        op.__doc__ = slow.__doc__
        return op


#: The fuser's ``min_elements`` in generated code (read at each call: tests change it).
_FLOOR = "_floor(_fusers[0], 'min_elements', 0)"


def _checked_recorder(name: str, spec: Fusable, slow: Callable[..., Any],
                      state: _State) -> Callable[..., Any]:
    """``slow`` (the recorder, see ``_recorder``) behind a generated test for its commonest
    call on a step too small to fuse: no argument is a handle and the loop is below the
    fuser's ``min_elements`` (read at each call: tests change it; no call is taken before
    the fuser is looked up), or
    a reduction of a value that exists. Then B's op runs at once, as the recorder would run
    it, without the recorder's typing and bounds; anything else goes to ``slow``."""
    signature = _Signature.of(name)
    tensors = [] if signature is None else signature.tensors
    if signature is None or signature.sequences or signature.optional or not tensors:
        return slow
    result, extra = spec.result, spec.extra
    handle_free = " and ".join(f"type({t}) is not _FT" for t in tensors)
    if result == "reduce":
        prologue = f"    if not ({handle_free}):\n        return _slow({signature.call})\n"
    else:
        if result == "expand":
            assert extra is not None
            bound = f"_prod({signature.parameters[extra]})"
        elif len(tensors) == 1:
            bound = f"_prod({tensors[0]}.shape)"
        elif len(tensors) == 2:
            a, b = tensors
            bound = (f"(_prod({a}.shape) if {a}.shape == {b}.shape "
                     f"else _loop([{a}.shape, {b}.shape]))")
        else:
            bound = f"_loop([{', '.join(t + '.shape' for t in tensors)}])"
        prologue = (f"    if not ({handle_free} and _fusers and {bound} < {_FLOOR}):\n"
                    f"        return _slow({signature.call})\n")
    return signature.generate(name, prologue, slow, getattr(state.inner, name), state.stats,
                              {"_prod": math.prod, "_loop": _loop_size, "_floor": getattr,
                               "_fusers": state.fusers})


def _composite(name: str, state: _State, overridden: bool) -> Callable[..., Any]:
    """A provided composite (``ELEMENTWISE_COMPOSITES``, ``FUSABLE_COMPOSITIONS``): the
    protocol's default, whose ops are recorded and fuse, on tensors of a kernel's size; B's
    own op on smaller ones (or without a fuser), where the default's pieces would each run
    eagerly anyway, and when the fuser lists it in ``own_ops`` (B's op is already one kernel).
    An op B ``overridden`` runs B's own unless the fuser lists it in ``composed_ops``."""
    default = inspect.getattr_static(FusionBackend, name).__func__
    eager = _eager(name, state)

    def op(cls: type[FusionBackend], *args: Any, **kwargs: Any) -> Any:
        fuser = state.fusers[0] if state.fusers else state.fuser()
        if (fuser is None or name in getattr(fuser, "own_ops", ())
                or (overridden and name not in getattr(fuser, "composed_ops", ()))
                or math.prod(args[0].shape) < getattr(fuser, "min_elements", 0)):
            return eager(*args, **kwargs)
        return default(cls, *args, **kwargs)

    op.__name__ = name
    op.__doc__ = f"``{name}``: fused from its default's ops, or B's own on small tensors."
    signature = _Signature.of(name)
    if (signature is None or not signature.tensors
            or signature.tensors[0] != signature.parameters[0]
            or signature.parameters[0] in signature.optional):
        return op
    # the commonest call on a step too small to fuse, generated: no handle, below the floor
    checks = [f"type({t}) is not _FT" for t in signature.tensors] + [
        f"not _holds({t})" for t in signature.sequences]
    first = signature.parameters[0]
    return signature.generate(
        name, f"    if not ({' and '.join(checks)} and _fusers\n"
              f"            and _prod({first}.shape) < {_FLOOR}):\n"
              f"        return _slow(cls, {signature.call})\n",
        op, getattr(state.inner, name), state.stats,
        {"_prod": math.prod, "_floor": getattr, "_fusers": state.fusers}, cls=True)


def _broadcast(shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
    first = shapes[0]
    for s in shapes:
        if s != first:
            return tuple(np.broadcast_shapes(*shapes))  # ValueError when incompatible
    return first


def _loop_size(shapes: list[tuple[int, ...]]) -> int:
    """The number of elements of the broadcast of ``shapes`` (which may not broadcast: then
    still a bound that the exact check after it refines), without NumPy's broadcasting."""
    first = shapes[0]
    if shapes.count(first) == len(shapes):
        return math.prod(first)
    rank = max(map(len, shapes))
    dims = [1] * rank
    for s in shapes:
        for i, n in enumerate(s, rank - len(s)):
            if n > dims[i]:
                dims[i] = n
    return math.prod(dims)


def _typing(fuser: Fuser, op_name: str, operands: tuple[int, ...], args: tuple[Any, ...],
            result: str, extra: int | None) -> Typing:
    """The op's typing (see ``Typing``), worked out once per key."""
    first = args[0]
    first_dtype = ir_dtype(first.dtype)
    operand_dtypes = tuple(first_dtype if type(args[p]) in PLAIN else ir_dtype(args[p].dtype)
                           for p in operands)
    if result == "promote":
        floats = [d for d in operand_dtypes if not d.is_bool]
        promoted = floats[0] if all(d is floats[0] for d in floats) else _promote(floats)
        if promoted is None:
            return None  # B promotes (or names the clash) its own way
        dtype = promoted
    elif result == "bool":
        dtype = DType.bool_
    elif result == "dtype_arg":
        dtype = DType.of(args[extra])  # type: ignore[index]
    else:
        dtype = first_dtype
    if not fuser.accepts(op_name, (*operand_dtypes, dtype)):
        return None
    return dtype, first_dtype, dtype if isinstance(first.dtype, DType) else dtype.numpy


def _recorder(name: str, spec: Fusable, state: _State) -> Callable[..., Any]:
    """The op ``name`` recorded on the stream (or run now when B's fuser refuses it, or when
    it is smaller than the fuser's ``min_elements``)."""
    eager = _eager(name, state)
    vocabulary_op, positions, result, extra = spec
    reduces = result == "reduce"
    typed_by_arg = result == "dtype_arg"
    expands = result == "expand"
    device_of = state.device_of
    accepted = state.accepted
    recorded = state.recorded
    multi_device = state.inner.multi_device

    inner_op = getattr(state.inner, name)
    stats, fusers = state.stats, state.fusers
    prod = math.prod
    binary = len(positions) == 2 and not (reduces or expands)
    other = positions[-1]

    def op(*args: Any) -> Any:
        first = args[0]
        fuser = fusers[0] if fusers else state.fuser()
        if fuser is None:
            return eager(*args)
        floor = getattr(fuser, "min_elements", 0)
        if floor:  # a cheap bound first: the loop has at most the product of the sizes
            if binary:
                second = args[other]
                if type(second) in PLAIN:
                    bound = prod(args[positions[0]].shape)
                else:
                    shapes = [args[positions[0]].shape, second.shape]
                    bound = prod(shapes[0]) if shapes[0] == shapes[1] else _loop_size(shapes)
            elif reduces:
                bound = prod(first.shape)
            elif expands:
                bound = prod(args[extra])  # type: ignore[index]
            else:
                bound = _loop_size([args[p].shape for p in positions
                                    if type(args[p]) not in PLAIN])
            if bound < floor:  # B's op, at once: directly when no argument is a handle
                for a in args:
                    if type(a) is FusionTensor:
                        return eager(*args)
                stats.eager_ops += 1
                return inner_op(*args)
        if reduces and (type(first) is not FusionTensor or first.node is None):
            return eager(*args)  # a reduction of a value that exists closes a group of one
        op_name, operands = vocabulary_op, positions
        if op_name == "clamp" and (args[1] is None or args[2] is None):
            if args[1] is None and args[2] is None:
                return first
            op_name, operands = ("clamp_max", (0, 2)) if args[1] is None else ("clamp_min",
                                                                                (0, 1))
        # the typing depends only on the operands' dtypes (a number's type stands for itself);
        # one plain loop (a comprehension is a function object per call in Python 3.11)
        kinds: list[Any] = [op_name]
        tensors = []
        for p in operands:
            a = args[p]
            kind = type(a)
            if kind in PLAIN:
                kinds.append(kind)
            else:
                kinds.append(a.dtype)
                tensors.append(a)
        kinds.append(args[extra] if typed_by_arg else None)  # type: ignore[index]
        key = tuple(kinds)
        try:
            typing = accepted[key]
        except KeyError:
            typing = accepted[key] = _typing(fuser, op_name, operands, args, result, extra)
        if typing is None:
            return eager(*args)
        dtype, first_dtype, handle_dtype = typing
        dim: int | None = None
        if expands:
            shape = tuple(args[extra])  # type: ignore[index]
            _broadcast([first.shape, shape])
        elif reduces:
            if extra is None:
                shape = ()
            else:
                dim = args[extra]
                rank = len(first.shape)
                if not -rank <= dim < max(rank, 1):
                    return eager(*args)  # B names the bad dim
                dim %= max(rank, 1)
                shape = tuple(1 if i == dim else s for i, s in enumerate(first.shape))
        elif len(tensors) == 1:
            shape = tuple(tensors[0].shape)
        elif len(tensors) == 2:
            shape, second_shape = tuple(tensors[0].shape), tuple(tensors[1].shape)
            if shape != second_shape:
                shape = _broadcast([shape, second_shape])
        else:
            shape = _broadcast([tuple(t.shape) for t in tensors])
        if floor and prod(first.shape if reduces else shape) < floor:
            return eager(*args)  # too small for a kernel: no recording, no flush
        device = device_of(first)
        if multi_device:
            for t in tensors:
                if device_of(t) != device:
                    raise DeviceMismatchError(f"{name}: tensors on {device} and "
                                              f"{device_of(t)}")
        stream = state.stream(device)
        kept = list(args)
        for p in operands:
            kept[p] = recorded(kept[p])
        return stream.push(LazyNode(stream, name, op_name, tuple(kept), operands, shape,
                                    dtype, first_dtype, reduces, dim), handle_dtype, device)

    op.__name__ = name
    op.__doc__ = f"``{name}``, recorded to run fused with its neighbours."
    return op


def _unwritten_floor(fuser: Fuser | None) -> int:
    """The fewest elements zeros must have to stay unwritten: the fuser's
    ``unwritten_elements``, else its ``min_elements`` (none without a fuser)."""
    if fuser is None:
        return 1 << 62
    floor: int = getattr(fuser, "unwritten_elements", getattr(fuser, "min_elements", 0))
    return floor


def _zeros(name: str, state: _State, eager: Callable[..., Any]) -> Callable[..., Any]:
    """``float_zeros``: an unwritten handle from the fuser's ``unwritten_elements`` on (a
    padded gradient: see ``Unwritten``), B's zeros otherwise."""

    def op(shape: Any, device: Device, dtype: DType) -> Any:
        fuser = state.fusers[0] if state.fusers else state.fuser()
        if math.prod(shape) < _unwritten_floor(fuser):
            return eager(shape, device, dtype)
        return FusionTensor(tuple(shape), state.dtype_form(DType.of(dtype), device), device,
                            unwritten=Unwritten(state.inner, ()))

    op.__name__ = name
    op.__doc__ = "``float_zeros``: unwritten until read when large, else B's own."
    return op


def _slice_assign(name: str, state: _State, eager: Callable[..., Any]) -> Callable[..., Any]:
    """``float_slice_assign``: into an unwritten tensor, a block along one dim that overlaps
    none of its pieces becomes another piece (nothing is written yet); B's own otherwise."""

    def op(tensor: Any, slices: tuple[slice, ...], value: Any) -> Any:
        if type(tensor) is FusionTensor and tensor.unwritten is not None:
            piece = _piece(tensor, slices, value, state.device_of(value))
            if piece is not None:
                return FusionTensor(tensor.shape, tensor.dtype, tensor.device, unwritten=Unwritten(
                    state.inner, (*tensor.unwritten.pieces, piece)))
        return eager(tensor, slices, value)

    op.__name__ = name
    op.__doc__ = "``float_slice_assign``: a new piece of an unwritten tensor, else B's own."
    return op


def _piece(tensor: FusionTensor, slices: tuple[slice, ...], value: Any,
           value_device: Device) -> Piece | None:
    """``value`` at ``slices`` as a piece of the unwritten ``tensor``, or None when it is not
    one (several dims cut, a step, a shape, dtype or device that B must check or convert, an
    overlap with a piece or a dim other than theirs)."""
    shape = tensor.shape
    if not shape or len(slices) > len(shape):
        return None
    cut: tuple[int, int, int] | None = None
    for d, s in enumerate(slices):
        if type(s) is not slice:
            return None
        start, stop, step = s.indices(shape[d])
        if (start, stop, step) == (0, shape[d], 1):
            continue
        if cut is not None or step != 1 or stop <= start:
            return None
        cut = (d, start, stop)
    dim, start, stop = cut if cut is not None else (0, 0, shape[0])
    if (tuple(value.shape) != _with_dim(shape, dim, stop - start) or value.dtype != tensor.dtype
            or value_device != tensor.device):
        return None
    assert tensor.unwritten is not None
    for piece in tensor.unwritten.pieces:
        if piece.dim != dim or (piece.start < stop
                                and start < piece.start + piece.value.shape[dim]):
            return None
    return Piece(dim, start, value)


def _swap_dims(name: str, state: _State, eager: Callable[..., Any]) -> Callable[..., Any]:
    """``float_swap_dims``: of an unwritten tensor, its pieces swapped (views on B) and kept
    unwritten, so that the concatenation writing it lays its values out swapped at once (a
    chunk's gradient swapped back and reshaped: one write, no copy for the reshape)."""
    swap = state.inner.float_swap_dims

    def op(tensor: Any, dim1: int, dim2: int) -> Any:
        if type(tensor) is not FusionTensor or tensor.unwritten is None:
            return eager(tensor, dim1, dim2)
        rank = len(tensor.shape)
        if not (-rank <= dim1 < rank and -rank <= dim2 < rank):
            return eager(tensor, dim1, dim2)  # B names the bad dim
        dim1, dim2 = dim1 % rank, dim2 % rank
        moved = {dim1: dim2, dim2: dim1}
        shape = list(tensor.shape)
        shape[dim1], shape[dim2] = shape[dim2], shape[dim1]
        pieces = tuple(Piece(moved.get(p.dim, p.dim), p.start,
                             swap(materialize(p.value), dim1, dim2))
                       for p in tensor.unwritten.pieces)
        return FusionTensor(tuple(shape), tensor.dtype, tensor.device,
                            unwritten=Unwritten(state.inner, pieces))

    op.__name__ = name
    op.__doc__ = "``float_swap_dims``: an unwritten tensor's pieces swapped, else B's own."
    return op


def _padded_sum(add: Callable[..., Any], state: _State) -> Callable[..., Any]:
    """``float_add``: two unwritten tensors whose pieces lie along one dim without overlap sum
    to one unwritten tensor holding both's pieces (x + 0 is x); ``add`` (recorded) otherwise."""

    def op(lhs: Any, rhs: Any) -> Any:
        if (type(lhs) is FusionTensor and type(rhs) is FusionTensor
                and lhs.unwritten is not None and rhs.unwritten is not None
                and lhs.shape == rhs.shape and lhs.dtype == rhs.dtype
                and lhs.device == rhs.device):
            pieces = lhs.unwritten.pieces + rhs.unwritten.pieces
            ranges = sorted((p.start, p.start + p.value.shape[p.dim]) for p in pieces)
            if len({p.dim for p in pieces}) <= 1 and all(
                    stop <= start for (_, stop), (start, _) in itertools.pairwise(ranges)):
                return FusionTensor(lhs.shape, lhs.dtype, lhs.device,
                                    unwritten=Unwritten(state.inner, pieces))
        return add(lhs, rhs)

    op.__name__ = add.__name__
    op.__doc__ = add.__doc__
    return op


def _cat(state: _State, eager: Callable[..., Any]) -> Callable[..., Any]:
    """``float_cat``: parts some of which are unwritten zeros (a chunk's or a split's
    gradient padded: ``zeros, grad, zeros``) concatenate to an unwritten tensor whose pieces
    are the other parts, so that the padded gradients of a tensor's chunks sum to one
    unwritten tensor (``_padded_sum``) written by one concatenation when read, where B writes
    each padded copy and adds them. ``eager`` (B's own) for any other parts."""

    def op(tensors: Any, dim: int) -> Any:
        for t in tensors:
            if type(t) is FusionTensor and t.unwritten is not None and not t.unwritten.pieces:
                break
        else:
            return eager(tensors, dim)
        first = tensors[0]
        rank = len(first.shape)
        if not -rank <= dim < rank:
            return eager(tensors, dim)  # B names the bad dim
        dim %= rank
        device, dtype = state.device_of(first), first.dtype
        outer = first.shape[:dim] + first.shape[dim + 1:]
        pieces: list[Piece] = []
        position = 0
        for t in tensors:
            shape = tuple(t.shape)
            if (len(shape) != rank or shape[:dim] + shape[dim + 1:] != outer
                    or t.dtype != dtype or state.device_of(t) != device):
                return eager(tensors, dim)  # B converts, or names the mismatch
            if not (type(t) is FusionTensor and t.unwritten is not None
                    and not t.unwritten.pieces):
                pieces.append(Piece(dim, position, t))
            position += shape[dim]
        return FusionTensor(_with_dim(first.shape, dim, position), dtype, device,
                            unwritten=Unwritten(state.inner, tuple(pieces)))

    op.__name__ = "float_cat"
    op.__doc__ = "``float_cat``: unwritten where some parts are unwritten zeros, else B's own."
    return op


_PROMOTED: dict[tuple[DType, ...], DType | None] = {}


def _promote(dtypes: list[DType]) -> DType | None:
    """NumPy's common dtype of ``dtypes``, or None when it has none (float16 with bfloat16)."""
    key = tuple(dtypes)
    if key not in _PROMOTED:
        try:
            _PROMOTED[key] = DType.of(np.result_type(*[d.numpy for d in dtypes]))
        except TypeError:
            _PROMOTED[key] = None
    return _PROMOTED[key]


#: Ops that keep values unwritten (see ``Unwritten``).
UNWRITTEN_OPS = {"float_zeros": _zeros, "float_slice_assign": _slice_assign,
                  "float_swap_dims": _swap_dims}


def _protocol_ops() -> list[str]:
    return sorted({*required_ops(Backend), *provided_ops(Backend)})


def _fronted_op(name: str, state: _State) -> Callable[..., Any]:
    """An op with paths of its own for handles (``LAZY_OPS``, ``UNWRITTEN_OPS``,
    ``float_cat``) behind its generated check (``_fronted``): a matmul of two values runs on B
    at once once the fuser is known not to record it, zeros too small to stay unwritten
    (``_unwritten_floor``) are B's own, and a reshape of one of B's primitives to its own
    shape is that primitive."""
    op = _eager(name, state)
    gate, shortcut = "", ""
    names: dict[str, Any] = {}
    if name in LAZY_OPS:
        listed: list[bool] = []
        op = lazy_recorder(name, state, op, listed)
        if name == "float_matmul":
            gate, names = "_listed and not _listed[0]", {"_listed": listed}
        elif name.endswith("_reshape"):
            shortcut = "    if shape == tensor.shape:\n        return tensor\n"
    if name in UNWRITTEN_OPS:
        op = UNWRITTEN_OPS[name](name, state, op)
    if name == "float_cat":
        op = _cat(state, op)
    if name == "float_zeros":
        gate = "_fusers and _prod(shape) < _floor(_fusers[0])"
        names = {"_prod": math.prod, "_floor": _unwritten_floor, "_fusers": state.fusers}
    return _fronted(name, op, state, gate, shortcut, names)


def _build(inner: type[Backend]) -> type[FusionBackend]:
    """The decorator class of ``inner``: every protocol op recorded, kept or forwarded."""
    state = _State(inner)
    namespace: dict[str, Any] = {}
    own = {name for klass in FusionBackend.__mro__[:1] for name in vars(klass)}
    for name in _protocol_ops():
        if name in own or name in _KEPT_DEFAULTS or name in _OWN_OPS:
            continue
        if name in ELEMENTWISE_COMPOSITES or name in FUSABLE_COMPOSITIONS:
            overridden = name in FUSABLE_COMPOSITIONS and not is_provided(
                inspect.getattr_static(inner, name))
            namespace[name] = classmethod(_composite(name, state, overridden))
            continue
        if name in UNWRITTEN_OPS or name in LAZY_OPS or name == "float_cat":
            namespace[name] = staticmethod(_fronted_op(name, state))
            continue
        spec = FUSABLE.get(name)
        if spec is None:
            namespace[name] = staticmethod(_eager(name, state))
            continue
        record = _recorder(name, spec, state)
        if name == "float_add":
            record = _padded_sum(record, state)
        namespace[name] = staticmethod(_checked_recorder(name, spec, record, state))
    for name in _OWN_OPS:
        namespace[name] = staticmethod(state.device_of)
    name = f"Fusion[{inner.__name__}]"
    namespace.update(inner_attributes(inner, name,
                                      f"{inner.__name__} with lazy, fused elementwise ops."))
    namespace.update(
        __module__=__name__,
        # Recorded binary ops broadcast with NumPy's rules (ValueError on bad shapes) and
        # promote as burnpy does; the others are B's own: B's trust carries over.
        trusted_binary_ops=inner.trusted_binary_ops,
        stats=state.stats,
        _state=state,
        _plans=state.plans,
        _streams=state.streams,
        _fuser=state.fusers,
        _accepted=state.accepted,
    )
    return type(name, (FusionBackend,), namespace)


Fusion: DecoratorFactory[type[FusionBackend]] = DecoratorFactory("Fusion", _build)
"""``Fusion(B)`` / ``Fusion[B]``: the decorator class of backend ``B``, one per ``B``."""
