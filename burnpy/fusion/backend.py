"""``Fusion(B)``: the decorator backend that records ops lazily and fuses elementwise chains.

``Fusion(B)`` builds, once per B and thread-safely, a subclass of ``FusionBackend`` whose
float, int and bool primitives are ``FusionTensor`` handles (quantized ones are B's own). The
class is derived from the protocol: each op in ``burnpy.ir.FUSABLE`` is recorded on the
device's stream (or run at once on B when smaller than the fuser's ``min_elements``); each
provided op in ``ELEMENTWISE_COMPOSITES`` keeps the protocol's default (its composition is
recorded, so it fuses; B's own op on smaller tensors), and so does each op of
``FUSABLE_COMPOSITIONS`` that B does not override (B would run that same composition op by
op); every other op runs eagerly on B once the values it reads are materialized.
"""

from __future__ import annotations

import inspect
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
from burnpy.fusion.stream import FusionStats, LazyNode, Stream, ir_dtype
from burnpy.fusion.tensor import FusionTensor
from burnpy.ir.fused import ELEMENTWISE_COMPOSITES, FUSABLE, Fusable, FusedGroup

#: Provided ops that only look at the primitive (no values): the protocol default is right.
_KEPT_DEFAULTS = frozenset({"float_detach", "float_is_require_grad", "float_set_require_grad"})

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


class FusionBackend(InnerDevices, Backend, abstract=True):
    """Base of every ``Fusion(B)`` class. ``InnerBackend`` is B; ``stats`` counts what it did
    (kernels launched and compiled, plan-cache hits, ops run eagerly)."""

    FloatTensorPrimitive: ClassVar[Any] = FusionTensor
    IntTensorPrimitive: ClassVar[Any] = FusionTensor
    BoolTensorPrimitive: ClassVar[Any] = FusionTensor
    InnerBackend: ClassVar[type[Backend]]
    stats: ClassVar[FusionStats]
    _plans: ClassVar[dict[FusedGroup, Any]]
    _streams: ClassVar[dict[Device, Stream]]
    _fuser: ClassVar[list[Fuser | None]]
    _accepted: ClassVar[dict[tuple[Any, ...], Typing]]
    _primitives: ClassVar[tuple[type, ...]]

    # ---- the backend's non-op methods, delegated to B ------------------------------------------
    @classmethod
    def name(cls, device: Device | None = None) -> str:
        return f"fusion<{cls.InnerBackend.name(device)}>"

    @classmethod
    def sync(cls, device: Device) -> None:
        """Run every pending op of ``device``, then wait for B."""
        cls.stream(device).flush()
        cls.InnerBackend.sync(device)

    @staticmethod
    def _device(tensor: FusionTensor) -> Device:
        return tensor.device

    float_device = int_device = bool_device = _device

    # ---- streams and plans --------------------------------------------------------------------
    @classmethod
    def stream(cls, device: Device) -> Stream:
        """The stream of pending ops of ``device`` (created on first use)."""
        found = cls._streams.get(device)
        if found is None:
            found = cls._streams.setdefault(
                device, Stream(cls.InnerBackend, cls.fuser(), cls._plans, cls.stats))
        return found

    @classmethod
    def fuser(cls) -> Fuser | None:
        """B's fuser (asked for once), or None when B declares none."""
        if not cls._fuser:
            cls._fuser.append(backend_fuser(cls.InnerBackend))
        return cls._fuser[0]

    @classmethod
    def fuses_elementwise(cls) -> bool:
        """Whether an optimizer's elementwise update is recorded and fused here: B declares a
        fuser and keeps the protocol's ``adam_step``. Then a caller that batches many small
        updates into one op by concatenating (an optimizer) should not, as each update is one
        kernel already and the copies would cost more. Where B has its own ``adam_step``
        (CpuBackend's), that runs eagerly as under B alone, and batching pays as it does there."""
        return cls.fuser() is not None and is_provided(
            inspect.getattr_static(cls.InnerBackend, "adam_step"))

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
    def inner(tensor: FusionTensor) -> Any:
        """B's primitive holding the tensor's values (materialized now)."""
        return materialize(tensor)

    int_inner = bool_inner = inner

    @classmethod
    def from_inner(cls, tensor: Any) -> FusionTensor:
        """A handle of this backend holding B's primitive ``tensor``."""
        return cls._wrap(tensor)

    int_from_inner = bool_from_inner = from_inner

    @staticmethod
    def q_inner(tensor: Any) -> Any:
        return tensor

    q_from_inner = q_inner

    @classmethod
    def _wrap_one(cls, primitive: Any) -> FusionTensor:
        """B's primitive as a materialized handle."""
        inner = cls.InnerBackend
        if inner.multi_device:
            kind = ir_dtype(primitive.dtype).kind
            device = getattr(inner, f"{kind}_device")(primitive)
        else:
            device = cls._single_device
        return FusionTensor(tuple(primitive.shape), primitive.dtype, device, primitive)

    @classmethod
    def _wrap(cls, value: Any) -> Any:
        """B's result as this backend returns it: primitives become materialized handles."""
        if isinstance(value, cls._primitives):
            return cls._wrap_one(value)
        if isinstance(value, tuple):
            return tuple(cls._wrap(v) for v in value)
        if isinstance(value, list):
            return [cls._wrap(v) for v in value]
        return value

    _single_device: ClassVar[Any] = None


def materialize(tensor: FusionTensor) -> Any:
    """The tensor's inner primitive, running its stream's pending ops first if needed."""
    node = tensor.node
    if node is not None:
        node.stream.flush()
    return tensor.value


#: Argument types that are never handles (passed to B as they are).
_PLAIN = frozenset({int, float, bool, str, type(None)})


def _unwrap(value: Any) -> Any:
    """An argument as B takes it: handles materialized, inside lists and tuples too."""
    if isinstance(value, FusionTensor):
        return value.value if value.node is None else materialize(value)
    if isinstance(value, tuple):
        if _PLAIN.issuperset(map(type, value)):  # a shape, dims: nothing to unwrap
            return value
        return tuple(_unwrap(v) for v in value)
    if isinstance(value, list):  # a materialized handle inline: lists of many (a concat)
        return [v.value if type(v) is FusionTensor and v.node is None else _unwrap(v)
                for v in value]
    return value


def _eager(name: str) -> Callable[..., Any]:
    """The op ``name`` run now on B, its handles materialized first."""

    def op(cls: type[FusionBackend], *args: Any, **kwargs: Any) -> Any:
        cls.stats.eager_ops += 1
        inner_op = getattr(cls.InnerBackend, name)
        unwrapped = [a.value if type(a) is FusionTensor and a.node is None
                     else a if type(a) in _PLAIN else _unwrap(a) for a in args]
        if kwargs:
            result = inner_op(*unwrapped, **{k: _unwrap(v) for k, v in kwargs.items()})
        else:
            result = inner_op(*unwrapped)
        if type(result) in cls._primitives:  # the common case: one primitive
            device = cls._single_device
            if device is None:
                return cls._wrap_one(result)
            shape = result.shape
            return FusionTensor(shape if type(shape) is tuple else tuple(shape), result.dtype,
                                device, result)
        return cls._wrap(result)

    op.__name__ = name
    op.__doc__ = f"``{name}`` on the inner backend, after the values it reads are computed."
    return op


def _composite(name: str, overridden: bool = False) -> Callable[..., Any]:
    """A provided composite (``ELEMENTWISE_COMPOSITES``, ``FUSABLE_COMPOSITIONS``): the
    protocol's default, whose ops are recorded and fuse, on tensors of a kernel's size; B's
    own op on smaller ones (or without a fuser), where the default's pieces would each run
    eagerly anyway, and when the fuser lists it in ``own_ops`` (B's op is already one kernel).
    An op B ``overridden`` runs B's own unless the fuser lists it in ``composed_ops``."""
    default = inspect.getattr_static(FusionBackend, name).__func__
    eager = _eager(name)

    def op(cls: type[FusionBackend], *args: Any, **kwargs: Any) -> Any:
        fuser = cls._fuser[0] if cls._fuser else cls.fuser()
        if (fuser is None or name in getattr(fuser, "own_ops", ())
                or (overridden and name not in getattr(fuser, "composed_ops", ()))
                or math.prod(args[0].shape) < getattr(fuser, "min_elements", 0)):
            return eager(cls, *args, **kwargs)
        return default(cls, *args, **kwargs)

    op.__name__ = name
    op.__doc__ = f"``{name}``: fused from its default's ops, or B's own on small tensors."
    return op


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


def _typing(cls: type[FusionBackend], op_name: str, operands: tuple[int, ...],
            args: tuple[Any, ...], result: str, extra: int | None) -> Typing:
    """The op's typing (see ``Typing``), worked out once per key."""
    fuser = cls.fuser()
    if fuser is None:
        return None
    first = args[0]
    first_dtype = ir_dtype(first.dtype)
    operand_dtypes = tuple(ir_dtype(args[p].dtype) if isinstance(args[p], FusionTensor)
                           else first_dtype for p in operands)
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


def _recorder(name: str, spec: Fusable) -> Callable[..., Any]:
    """The op ``name`` recorded on the stream (or run now when B's fuser refuses it, or when
    it is smaller than the fuser's ``min_elements``)."""
    eager = _eager(name)
    vocabulary_op, positions, result, extra = spec
    reduces = result == "reduce"
    typed_by_arg = result == "dtype_arg"
    expands = result == "expand"

    def op(cls: type[FusionBackend], *args: Any) -> Any:
        first = args[0]
        fuser = cls._fuser[0] if cls._fuser else cls.fuser()
        if fuser is None:
            return eager(cls, *args)
        floor = getattr(fuser, "min_elements", 0)
        if floor:  # a cheap bound first: the loop has at most the product of the sizes
            if reduces:
                bound = math.prod(first.shape)
            elif expands:
                bound = math.prod(args[extra])  # type: ignore[index]
            else:
                bound = _loop_size([a.shape for a in args if type(a) is FusionTensor])
            if bound < floor:
                return eager(cls, *args)
        op_name, operands = vocabulary_op, positions
        if op_name == "clamp" and (args[1] is None or args[2] is None):
            if args[1] is None and args[2] is None:
                return first
            op_name, operands = ("clamp_max", (0, 2)) if args[1] is None else ("clamp_min",
                                                                                (0, 1))
        # the typing depends only on the operands' dtypes (a number's type stands for itself)
        key = (op_name, *[a.dtype if type(a) is FusionTensor else type(a)
                          for a in [args[p] for p in operands]],
               args[extra] if typed_by_arg else None)  # type: ignore[index]
        try:
            typing = cls._accepted[key]
        except KeyError:
            typing = cls._accepted[key] = _typing(cls, op_name, operands, args, result, extra)
        if typing is None:
            return eager(cls, *args)
        dtype, first_dtype, handle_dtype = typing
        dim: int | None = None
        tensors = [a for a in [args[p] for p in operands] if type(a) is FusionTensor]
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
                    return eager(cls, *args)  # B names the bad dim
                dim %= max(rank, 1)
                shape = tuple(1 if i == dim else s for i, s in enumerate(first.shape))
        elif len(tensors) == 1:
            shape = tensors[0].shape
        else:
            shape = _broadcast([t.shape for t in tensors])
        if math.prod(first.shape if reduces else shape) < floor:
            return eager(cls, *args)  # too small for a kernel: no recording, no flush
        device = first.device
        if cls.InnerBackend.multi_device and any(t.device != device for t in tensors):
            raise DeviceMismatchError(f"{name}: tensors on {device} and "
                                      f"{next(t.device for t in tensors if t.device != device)}")
        stream = cls.stream(device)
        node = LazyNode(stream, name, op_name,
                        tuple([a.node or a if type(a) is FusionTensor else a for a in args]),
                        operands, shape, dtype, first_dtype, reduces, dim)
        handle = FusionTensor(shape, handle_dtype, device, None, node)
        node.handle = weakref.ref(handle)
        stream.nodes.append(node)
        return handle

    op.__name__ = name
    op.__doc__ = f"``{name}``, recorded to run fused with its neighbours."
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


def _protocol_ops() -> list[str]:
    return sorted({*required_ops(Backend), *provided_ops(Backend)})


def _build(inner: type[Backend]) -> type[FusionBackend]:
    """The decorator class of ``inner``: every protocol op recorded, kept or forwarded."""
    namespace: dict[str, Any] = {}
    own = {name for klass in FusionBackend.__mro__[:1] for name in vars(klass)}
    for name in _protocol_ops():
        if name in own or name in _KEPT_DEFAULTS:
            continue
        if name in ELEMENTWISE_COMPOSITES or name in FUSABLE_COMPOSITIONS:
            namespace[name] = classmethod(_composite(name, name in FUSABLE_COMPOSITIONS and not
                                                     is_provided(inspect.getattr_static(inner,
                                                                                        name))))
            continue
        if name in LAZY_OPS:
            namespace[name] = classmethod(lazy_recorder(name, _eager(name)))
            continue
        spec = FUSABLE.get(name)
        namespace[name] = classmethod(_recorder(name, spec) if spec else _eager(name))
    primitives = {inner.FloatTensorPrimitive, inner.IntTensorPrimitive,
                  inner.BoolTensorPrimitive} - {object, inner.QuantizedTensorPrimitive}
    if np.ndarray in primitives:  # NumPy ops on 0-d arrays return NumPy scalars
        primitives.add(np.generic)
    name = f"Fusion[{inner.__name__}]"
    namespace.update(inner_attributes(inner, name,
                                      f"{inner.__name__} with lazy, fused elementwise ops."))
    namespace.update(
        __module__=__name__,
        # Recorded binary ops broadcast with NumPy's rules (ValueError on bad shapes) and
        # promote as burnpy does; the others are B's own: B's trust carries over.
        trusted_binary_ops=inner.trusted_binary_ops,
        stats=FusionStats(),
        _plans={},
        _streams={},
        _fuser=[],
        _accepted={},
        _primitives=tuple(primitives),
        _single_device=None if inner.multi_device else inner.default_device(),
    )
    return type(name, (FusionBackend,), namespace)


Fusion: DecoratorFactory[type[FusionBackend]] = DecoratorFactory("Fusion", _build)
"""``Fusion(B)`` / ``Fusion[B]``: the decorator class of backend ``B``, one per ``B``."""
