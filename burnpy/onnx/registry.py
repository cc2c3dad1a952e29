"""The operator registry: ``@onnx_op("Add", since=7)`` registers a Python function that runs
one ONNX node on burnpy Tensors, and ``lookup`` picks, for a model's opset, the registration
with the greatest ``since`` not above it (ONNX's own versioning rule).

An op function takes ``(ctx, inputs, attrs)``: the ``OpContext`` (backend, device, the node's
name and opset, helpers to make constants and read shape-valued tensors), the input tensors
in node order (None for an omitted optional input) and the node's ``Attributes``; it returns a
tensor or a sequence of them (None for an output it leaves out). A registration lists the
attributes it reads; a node setting any other one raises ``UnsupportedOnnxError`` before the
function runs, so an attribute an op ignores can never give a wrong result.

Adding an operator: write the function in the topic module of ``burnpy.onnx.ops``
(``elementwise``, ``shape``, ``indexing``, ``reduce``, ``nn``, ``loss``, ``vision``,
``signal``...; a new topic is one line in ``ops/__init__.py``) with burnpy's public tensor ops,
so it runs on every backend and differentiates; decorate it with ``@onnx_op("Op", since=N,
attrs=(...))`` once per opset where its inputs or attributes changed; read attributes with
``attrs.int/ints/float/string/tensor/graph``, shape-valued inputs with ``ctx.ints``, and
raise ``ctx.unsupported(...)`` for a value it does not handle. Then run
``python benchmarks/onnx_node_suite.py --only op_name --failures`` and, once its cases pass,
``--write-expected`` from a clean checkout of the commit (the list must hold only cases the
committed code passes).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np

from burnpy.backend.device import Device
from burnpy.onnx.attributes import Attributes
from burnpy.onnx.dtypes import for_backend
from burnpy.onnx.errors import OnnxError, UnsupportedOnnxError
from burnpy.tensor import Tensor

if TYPE_CHECKING:
    from onnx import GraphProto

    from burnpy.backend import Backend

#: What an op function returns: one tensor, or one entry per node output (None: not made).
Outputs = Tensor | Sequence[Tensor | None]
OpFn = Callable[["OpContext", list[Tensor | None], Attributes], Outputs]
#: Runs a subgraph (If's branches, Loop's body) with the given inputs in the current scope.
SubgraphRunner = Callable[["GraphProto", Sequence[Tensor | None]], list[Tensor | None]]


@dataclass(frozen=True)
class OpImpl:
    """One registered implementation: an op type of a domain from opset ``since`` on."""

    domain: str
    op_type: str
    since: int
    fn: OpFn
    attrs: frozenset[str]


_REGISTRY: dict[tuple[str, str], list[OpImpl]] = {}


def onnx_op(op_type: str, since: int, *, attrs: Sequence[str] = (),
            domain: str = "") -> Callable[[OpFn], OpFn]:
    """Register the decorated function for ``op_type`` of ``domain`` ("" is ai.onnx) from
    opset ``since``, reading the attributes ``attrs``; stack it to register more versions."""

    def register(fn: OpFn) -> OpFn:
        impls = _REGISTRY.setdefault((domain, op_type), [])
        if any(i.since == since for i in impls):
            raise OnnxError(f"onnx_op: {op_type} since opset {since} is registered twice")
        impls.append(OpImpl(domain, op_type, since, fn, frozenset(attrs)))
        impls.sort(key=lambda i: i.since)
        return fn

    return register


def lookup(domain: str, op_type: str, opset: int) -> OpImpl | None:
    """The implementation of ``op_type`` for ``opset``: the greatest ``since`` <= ``opset``."""
    best = None
    for impl in _REGISTRY.get((domain, op_type), ()):
        if impl.since <= opset:
            best = impl
    return best


def registered_ops() -> dict[tuple[str, str], list[int]]:
    """Every registered (domain, op type) with the opsets its versions start at."""
    return {key: [i.since for i in impls] for key, impls in sorted(_REGISTRY.items())}


class OpContext:
    """What an op function knows beyond its inputs: where tensors live and which node runs."""

    __slots__ = ("backend", "device", "known", "label", "num_outputs", "opset", "run_subgraph")

    def __init__(self, backend: type[Backend], device: Device | None, label: str, opset: int,
                 num_outputs: int, run_subgraph: SubgraphRunner,
                 known: HostValues | None = None) -> None:
        self.backend = backend
        self.device = device
        self.label = label
        self.opset = opset
        #: How many outputs the node names (Split's count; optional outputs it asks for).
        self.num_outputs = num_outputs
        self.run_subgraph = run_subgraph
        #: Host copies of the tensors whose values the interpreter knows (``host``).
        self.known = known

    def unsupported(self, what: str, attribute: str | None = None) -> NoReturn:
        """Raise ``UnsupportedOnnxError`` for this node (naming ``attribute`` when given)."""
        at = f", attribute {attribute!r}" if attribute else ""
        raise UnsupportedOnnxError(f"{self.label}{at}: {what} is not supported")

    def error(self, what: str) -> NoReturn:
        """Raise ``OnnxError`` for this node: the model breaks one of the op's rules."""
        raise OnnxError(f"{self.label}: {what}")

    def arg(self, inputs: Sequence[Tensor | None], index: int) -> Tensor:
        """Input ``index``, which the op requires (``OnnxError`` when the node omits it)."""
        value = inputs[index] if index < len(inputs) else None
        if value is None:
            self.error(f"input {index} is required")
        return value

    def optional(self, inputs: Sequence[Tensor | None], index: int) -> Tensor | None:
        """Input ``index``, or None when the node omits it."""
        return inputs[index] if index < len(inputs) else None

    def constant(self, value: Any, dtype: Any = None) -> Tensor:
        """A tensor holding ``value`` (an array, list or scalar) on this node's backend; int64
        and float64 as the backend's int and float dtypes where it lacks them (WebGPU)."""
        array = np.asarray(value) if dtype is None else np.asarray(value, dtype=dtype)
        return Tensor.from_data(for_backend(array, self.backend, self.device, self.label,
                                            host_floats=True),
                                backend=self.backend, device=self.device)

    def host(self, t: Tensor) -> np.ndarray:
        """``t``'s values as a NumPy array: the host copy the interpreter keeps of a constant
        or shape-derived value (no device read, so a ``bp.compile`` recording stays whole),
        else read from the device."""
        array = None if self.known is None else self.known.get(t)
        return t.to_numpy() if array is None else array

    def ints(self, t: Tensor) -> list[int]:
        """A shape-valued (int) tensor's values on the host (Reshape's shape, Slice's starts)."""
        if t.kind != "int":
            self.error(f"expected an integer tensor, got {t.dtype!r}")
        return [int(v) for v in self.host(t).reshape(-1)]

    def scalar(self, t: Tensor) -> float:
        """A one-element tensor's value on the host."""
        if t.numel() != 1:
            self.error(f"expected a one-element tensor, got shape {t.shape}")
        return float(self.host(t).reshape(-1)[0])


class HostValues:
    """Host copies of tensors' values, by tensor: a copy holds while the tensor keeps the
    primitive it had when added (burnpy's primitives are never written in place: an in-place
    op or ``ParamSlot.write`` re-points the tensor to a new one). A tensor sharing a host
    array (``from_numpy``), written from outside, is never added."""

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: dict[int, tuple[Tensor, Any, np.ndarray]] = {}

    def add(self, t: Tensor, array: np.ndarray) -> None:
        """Keep ``array`` as ``t``'s values (and ``t`` alive, so that its id stays its own)."""
        if getattr(t, "_shares", None) is None:
            self._entries[id(t)] = (t, t.primitive, array)

    def drop(self, t: Tensor) -> None:
        """Forget ``t``'s copy."""
        self._entries.pop(id(t), None)

    def get(self, t: Tensor) -> np.ndarray | None:
        """``t``'s host copy, or None when none is kept or ``t`` was re-pointed since."""
        entry = self._entries.get(id(t))
        if entry is None or entry[1] is not t.primitive:
            return None
        return entry[2]
