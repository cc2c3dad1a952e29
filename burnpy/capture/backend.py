"""``Capture(B)``: the decorator backend that runs every op on B and records it while asked.

``Capture(B)`` builds, once per B and thread-safely (``DecoratorFactory``), a subclass of
``CaptureBackend`` whose primitives are B's own: each protocol op (required or provided) is
B's op behind a wrapper that, only while a recording is active in the calling thread, appends
the call to the recording's ``Graph``. A provided op is recorded as one call (``linear``,
``layer_norm``), since B runs its composition on B itself, below the recorder: the graph keeps
the protocol's level of description, which is what an exporter translates and what a replay
calls. Outside a recording an op costs one extra call and one attribute test.

``Autodiff(Capture(B))`` records a training step's forward and backward ops: Autodiff's rules
are written with its inner backend's ops, which are Capture's.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar

from burnpy.backend.base import Backend
from burnpy.backend.decorator import DecoratorFactory, InnerDevices, inner_attributes
from burnpy.backend.device import Device
from burnpy.backend.dtype import DType
from burnpy.backend.errors import InvalidArgumentError
from burnpy.backend.ops._marker import provided_ops, required_ops
from burnpy.capture.dynamic import Shaped, plain, shaped_result, symbolic, unwrapped
from burnpy.capture.graph import CONSTANT, INPUT, NODE, Graph, Node, Ref, Value
from burnpy.ir.desc import TensorDesc

#: Ops that never take part in a recording: device lookups and gradient flags read no values.
_UNRECORDED = frozenset({"float_device", "int_device", "bool_device", "q_device",
                         "float_is_require_grad"})


#: How many recordings are active in each thread, on any Capture class (``recording_active``).
_ACTIVE = threading.local()


def recording_active() -> bool:
    """Whether a Capture recording is active in this thread (an op that would read a value on
    the host to decide what to compute must then compute it on the device instead)."""
    return getattr(_ACTIVE, "count", 0) > 0


def records(backend: Any) -> bool:
    """Whether a recording is active in this thread on the Capture class under ``backend``
    (itself or below its decorators): a validity check on that backend's values must then
    stay in the graph (``check_values``) rather than be read now. Ops on another backend
    (a host backend the caller computes constants on) are not recorded."""
    while not (isinstance(backend, type) and issubclass(backend, CaptureBackend)):
        backend = getattr(backend, "InnerBackend", None)
        if backend is None:
            return False
    recording = backend._state.recording
    return recording is not None and recording.thread == threading.get_ident()


def specialize(backend: Any, kind: str, primitive: Any) -> None:
    """Note, when a recording is active in this thread on the Capture class under
    ``backend``, that the graph bakes in the contents of ``primitive`` (a ``kind`` tensor's,
    ``"float"``, ``"int"`` or ``"bool"``, on ``backend``), which the caller read on the host
    from a copy it keeps (an imported model's shape arithmetic on an integer initializer): a
    replay is then valid only while that input is this very primitive (``Graph.specialized``;
    ``bp.compile`` records again otherwise). No-op outside a recording."""
    inner = {"float": "inner", "int": "int_inner", "bool": "bool_inner"}[kind]
    while not (isinstance(backend, type) and issubclass(backend, CaptureBackend)):
        if not hasattr(backend, "InnerBackend"):
            return
        primitive = getattr(backend, inner)(primitive)
        backend = backend.InnerBackend
    recording = backend._state.recording
    if recording is not None and recording.thread == threading.get_ident():
        recording.graph.specialized.append(recording.read(primitive))


def check_values(primitive: Any, check: Callable[[type[Backend], Any], object]) -> None:
    """Run ``check(B, primitive)``, a validity check that reads ``primitive``'s values on the
    host (embedding's index bounds) and raises on bad ones, with B the backend owning it; in
    a Capture recording B is the recorded backend, and the graph keeps the check so that each
    replay runs it again on that value (``Graph.checks``), never a silent wrong result. The
    caller runs it itself, on its own backend, when no recording is active."""
    recording: _Recording = _ACTIVE.recordings[-1]
    graph = recording.graph
    graph.checks.append((len(graph.nodes), recording.read(primitive), check))
    check(graph.backend, plain(primitive))


#: ``lower_args``: an op call's (args, kwargs) to those B runs with.
_Lower = Callable[[tuple[Any, ...], dict[str, Any]], tuple[tuple[Any, ...], dict[str, Any]]]

#: What one op call adds to a recording.
_MAKES_TENSORS, _MAKES_CONSTANT, _READS_HOST, _RECORDS_NOTHING = (
    "node", "constant", "host read", "nothing")


class _OpSpec:
    """Where a protocol op's tensors are, read once from its signature's annotations: the
    positions and names of its tensor parameters (a tensor, an optional one or a sequence of
    them) and what a call adds to a recording: a node (an op returning tensors: a primitive,
    or a tuple of primitives and Nones), a constant (host data uploaded), a host read (a
    value downloaded), or nothing (a device or flag lookup)."""

    __slots__ = ("kind", "name", "names", "positions")

    def __init__(self, name: str) -> None:
        attr = inspect.getattr_static(Backend, name)
        function = attr.__func__ if isinstance(attr, staticmethod | classmethod) else attr
        signature = inspect.signature(function)
        parameters = list(signature.parameters.values())
        if isinstance(attr, classmethod):
            parameters = parameters[1:]
        tensors = [(i, p.name) for i, p in enumerate(parameters)
                   if "Primitive" in str(p.annotation)]
        self.positions = frozenset(i for i, _ in tensors)
        self.names = frozenset(n for _, n in tensors)
        returned = str(signature.return_annotation)
        self.name = name
        #: What a call adds to a recording (see the ``_MAKES_...`` kinds).
        self.kind = (_MAKES_CONSTANT if name.endswith("_from_data") else
                     _MAKES_TENSORS if "Primitive" in returned or returned.endswith("Result")
                     else _READS_HOST if name.endswith("_into_data") else _RECORDS_NOTHING)


class _Recording:
    """An active recording: its graph, the thread it belongs to, and each primitive met so far
    by ``id`` with its value index (the primitive kept alive so that no id is reused)."""

    __slots__ = ("dtypes", "dynamic", "graph", "ids", "lower_args", "on_host_read", "thread")

    def __init__(self, graph: Graph, on_host_read: Callable[[str], None] | None = None,
                 lower_args: _Lower | None = None, dynamic: bool = False) -> None:
        self.graph = graph
        self.thread = threading.get_ident()
        self.ids: dict[int, tuple[int, Any]] = {}
        self.dtypes: dict[Any, DType] = {}
        #: Called with the op's name when a value is read on the host (``bp.compile``'s
        #: ``fullgraph=True`` raises there, where the caller's line is on the stack).
        self.on_host_read = on_host_read
        #: Maps an op's (args, kwargs) to what B runs with, the recorded call keeping the
        #: originals (``bp.compile``'s symbolic scalars reach B as plain numbers).
        self.lower_args = lower_args
        #: Whether tensors may have symbolic dims (``burnpy.capture.dynamic``).
        self.dynamic = dynamic

    def add(self, primitive: Any, kind: str, producer: int = -1) -> int:
        """A new value for ``primitive`` (rebinding its identity to it), its index."""
        graph = self.graph
        index = len(graph.values)
        dtype = self.dtypes.get(primitive.dtype)
        if dtype is None:
            dtype = self.dtypes[primitive.dtype] = DType.of(primitive.dtype)
        if type(primitive) is Shaped:  # B's own primitive reads as the same value
            graph.shapes[index] = primitive.shape
            desc = TensorDesc(tuple(primitive.inner.shape), dtype)
            self.ids[id(primitive.inner)] = (index, primitive.inner)
        else:
            desc = TensorDesc(tuple(primitive.shape), dtype)
        graph.values.append(Value(index, kind, desc, primitive if kind == CONSTANT else None,
                                  producer))
        self.ids[id(primitive)] = (index, primitive)
        return index

    def read(self, primitive: Any) -> int:
        """The value index of a primitive an op reads (a new constant when first met)."""
        found = self.ids.get(id(primitive))
        if found is not None:
            return found[0]
        return self.add(primitive, CONSTANT)

    def tensor(self, arg: Any, reads: list[int]) -> Any:
        """A tensor argument (or None, or a sequence of tensors) as ``Ref``s."""
        if arg is None:
            return None
        if isinstance(arg, tuple | list):
            return type(arg)(self.tensor(a, reads) for a in arg)
        index = self.read(arg)
        reads.append(index)
        return Ref(index)

    def result(self, value: Any, producer: int, made: list[int]) -> Any:
        """The result's structure with a new value for each tensor in it (None stays)."""
        if value is None:
            return None
        if isinstance(value, tuple | list):
            return tuple(self.result(v, producer, made) for v in value) if isinstance(
                value, tuple) else [self.result(v, producer, made) for v in value]
        index = self.add(value, CONSTANT if producer < 0 else NODE, producer)
        made.append(index)
        return Ref(index)

    def record(self, spec: _OpSpec, args: tuple[Any, ...], kwargs: dict[str, Any],
               result: Any) -> None:
        """Append the call ``spec.name(*args, **kwargs) -> result`` to the graph."""
        reads: list[int] = []
        positions = spec.positions
        arg_refs = tuple([self.tensor(a, reads) if i in positions else a
                          for i, a in enumerate(args)]) if positions else args
        kwarg_refs = {k: self.tensor(v, reads) if k in spec.names else v
                      for k, v in kwargs.items()} if kwargs else {}
        graph = self.graph
        if spec.kind is _READS_HOST:
            if self.on_host_read is not None:
                self.on_host_read(spec.name)
            if reads:
                graph.host_reads.append((len(graph.nodes), reads[0], spec.name, result))
            return
        if spec.kind is _MAKES_CONSTANT:
            self.result(result, -1, [])  # host data: a constant of the graph
            return
        if spec.kind is _MAKES_TENSORS:
            made: list[int] = []
            structure = self.result(result, len(graph.nodes), made)
            graph.nodes.append(Node(spec.name, arg_refs, kwarg_refs, tuple(reads),
                                    tuple(made), structure))


class _State:
    """What a Capture class's op wrappers share: B and the active recording (or None)."""

    __slots__ = ("inner", "recording")

    def __init__(self, inner: type[Backend]) -> None:
        self.inner = inner
        self.recording: _Recording | None = None


class CaptureBackend(InnerDevices, Backend, abstract=True):
    """Base of every ``Capture(B)`` class: B's primitives and ops, recorded on request."""

    InnerBackend: ClassVar[type[Backend]]
    _state: ClassVar[_State]

    @classmethod
    def name(cls, device: Device | None = None) -> str:
        return f"capture<{cls.InnerBackend.name(device)}>"

    @classmethod
    def ad_enabled(cls) -> bool:
        return cls.InnerBackend.ad_enabled()

    @staticmethod
    def inner(tensor: Any) -> Any:
        """B's primitive of a tensor: the tensor itself (Capture's primitives are B's)."""
        return tensor

    int_inner = bool_inner = q_inner = from_inner = int_from_inner = bool_from_inner = (
        q_from_inner) = inner

    @classmethod
    @contextmanager
    def recording(cls, inputs: Sequence[Any] = (),
                  on_host_read: Callable[[str], None] | None = None,
                  lower_args: _Lower | None = None, dynamic: bool = False) -> Iterator[Graph]:
        """Record, in this thread, every op called until the block ends into the graph it
        yields; ``inputs`` (B's primitives, or ``Shaped`` ones) are the graph's inputs, in
        order. Name its results with ``set_outputs`` before the block ends. ``on_host_read(op)``,
        when given, is called at each host read (``float_into_data``...), on the reader's stack;
        ``lower_args(args, kwargs)``, when given, maps each recorded call's arguments to those B
        runs with; ``dynamic`` lets tensors carry symbolic dims (``burnpy.capture.dynamic``)."""
        state = cls._state
        if state.recording is not None:
            raise InvalidArgumentError(
                f"{cls.__name__}.recording: a recording is already active on this backend")
        recording = _Recording(Graph(cls.InnerBackend), on_host_read, lower_args, dynamic)
        for primitive in inputs:
            if not (hasattr(primitive, "shape") and hasattr(primitive, "dtype")):
                raise InvalidArgumentError(
                    f"{cls.__name__}.recording: inputs must be {cls.InnerBackend.__name__}'s "
                    f"primitives, got {type(primitive).__name__}")
            recording.graph.inputs.append(recording.add(primitive, INPUT))
        state.recording = recording
        _ACTIVE.count = getattr(_ACTIVE, "count", 0) + 1
        stack = _ACTIVE.__dict__.setdefault("recordings", [])
        stack.append(recording)
        try:
            yield recording.graph
        finally:
            state.recording = None
            _ACTIVE.count -= 1
            stack.pop()

    @classmethod
    def set_outputs(cls, graph: Graph, outputs: Sequence[Any]) -> None:
        """Name ``outputs`` (primitives met by the active recording of ``graph``, or constants
        met now) as the graph's results, in order."""
        recording = cls._state.recording
        if recording is None or recording.graph is not graph:
            raise InvalidArgumentError(
                f"{cls.__name__}.set_outputs: call it inside the graph's recording")
        graph.outputs = [recording.read(p) for p in outputs]

    @classmethod
    def record(cls, fn: Callable[..., Any], *inputs: Any) -> tuple[Graph, Any]:
        """Run ``fn(*inputs)`` (B's primitives in, a primitive or a tuple/list of them out)
        once while recording; returns the graph (inputs and outputs set) and ``fn``'s result."""
        with cls.recording(inputs) as graph:
            result = fn(*inputs)
            outputs = result if isinstance(result, tuple | list) else (result,)
            cls.set_outputs(graph, outputs)
        return graph, result


def _wrapped(name: str, state: _State) -> Callable[..., Any]:
    """B's op ``name``, recorded while a recording is active in the calling thread."""
    inner_op = getattr(state.inner, name)
    get_ident = threading.get_ident
    spec = _OpSpec(name)

    def op(*args: Any, **kwargs: Any) -> Any:
        recording = state.recording
        if recording is None or recording.thread != get_ident():
            return inner_op(*args, **kwargs)
        dims = recording.dynamic and (symbolic(args) or symbolic(kwargs))
        if dims:  # B runs on its own primitives; the results get their symbolic dims
            inner_args = tuple([unwrapped(a) if i in spec.positions else a
                                for i, a in enumerate(args)])
            inner_kwargs = {k: unwrapped(v) if k in spec.names else v
                            for k, v in kwargs.items()}
        else:
            inner_args, inner_kwargs = args, kwargs
        lower = recording.lower_args
        if lower is not None:
            inner_args, inner_kwargs = lower(inner_args, inner_kwargs)
        result = inner_op(*inner_args, **inner_kwargs)
        if dims and spec.kind is _MAKES_TENSORS:
            result = shaped_result(name, args, kwargs, result)
        recording.record(spec, args, kwargs, result)
        return result

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"``{name}`` on the inner backend, recorded while a recording is active."
    return op


def _build(inner: type[Backend]) -> type[CaptureBackend]:
    """The decorator class of ``inner``: every protocol op B's, behind the recorder."""
    state = _State(inner)
    namespace: dict[str, Any] = {}
    for name in sorted({*required_ops(Backend), *provided_ops(Backend)}):
        op = getattr(inner, name) if name in _UNRECORDED else _wrapped(name, state)
        namespace[name] = staticmethod(op)
    name = f"Capture[{inner.__name__}]"
    namespace.update(inner_attributes(inner, name,
                                      f"{inner.__name__}, its op calls recorded on request."))
    namespace.update(
        __module__=__name__,
        FloatTensorPrimitive=inner.FloatTensorPrimitive,
        IntTensorPrimitive=inner.IntTensorPrimitive,
        BoolTensorPrimitive=inner.BoolTensorPrimitive,
        trusted_binary_ops=inner.trusted_binary_ops,
        _state=state,
    )
    return type(name, (CaptureBackend,), namespace)


Capture: DecoratorFactory[type[CaptureBackend]] = DecoratorFactory("Capture", _build)
"""``Capture(B)`` / ``Capture[B]``: the recording decorator class of backend ``B``, one per B."""
