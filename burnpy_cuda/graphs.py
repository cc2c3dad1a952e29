"""A ``bp.compile`` replay on ``CudaBackend`` as one CUDA graph (``CudaBackend.replay_runner``).

``bp.compile`` hands the backend a flat replay ``run(inputs, scalars) -> outputs`` per recorded
graph. ``GraphReplay`` runs it eagerly for a few calls (CuPy compiles its kernels, cuBLAS makes
its handle, the memory pool fills), then captures one call into a CUDA graph on a side stream
and launches that graph on later calls: one launch instead of one per op.

A graph replays fixed device addresses with the kernel arguments it was captured with, so:

- Inputs: the graph reads *static input buffers*, made at capture; each call copies its inputs
  (new arrays every step) into them before the launch.
- Outputs: the graph writes *static output buffers*; each call hands out copies of them (one
  per distinct value), never the buffers: a caller keeps a step's loss or last step's weights
  (a log, an EMA) while the next launch overwrites the buffers. A recorded constant returned
  as an output is handed out itself, as eager replay does.
- Memory: every array the captured call allocates comes from a memory pool of its own
  (``cupy.cuda.MemoryPool``), kept as long as the graph: the graph writes its temporaries at
  the addresses it was captured with, which the shared pool would hand to other arrays.
- Scalars: symbolic scalars (a scheduled learning rate, a step count) reach CuPy's kernels as
  arguments baked into the graph, so a graph serves only the scalar values it was captured
  with. A call with other values runs eagerly; values that then hold for ``warmup`` + 1 calls
  in a row are captured again (a per-epoch schedule re-captures once per epoch). Values that
  change every call keep the replay eager: ``last_eager`` says why. Except where only Adam
  steps read them (``adam_step`` nodes, symbolic ``step`` and ``lr``: Adam's and AdamW's
  step counts change every call): the graph then reads each step's scalars (the bias
  corrections, the step size, the decay) from a *scalar table* on the device, which each
  call fills from its scalars before the launch (``ScalarTable``; the op's side is
  ``fed_adam_step``), so one graph serves every step. The captured call gets its scalars as
  ``SlotInt``/``SlotFloat`` (numbers that know their position), by which an op tells a
  per-call scalar; an ``adam_step`` that did not take its scalars from the table (another
  path than the fused kernel) leaves the replay eager.
- Host-side validity checks (``graph.checks``: cross entropy's targets, embedding's indices)
  read values on the host at each call, which a graph cannot: a check of a graph input (or
  constant) runs on the host before each launch, in the graph's order, so a bad target still
  raises (the call then launches nothing). Inside the capture the same check reads the static
  input buffer on the caller's stream (``host_read``); any other host read inside a capture
  raises ``GraphCaptureError``, failing the capture, as does an upload of host data (CuPy
  stages it in pinned memory it reuses; the graph would copy whatever is there later). CuPy
  uploads a 0-d array with a fill kernel, which a graph replays exactly. While a capture runs
  CuPy's pinned allocator is this module's, and the default pool's after (a custom pinned
  allocator set by the program is not restored).
- Never a graph (``reason`` says why; every call runs ``run`` itself): a check of a value
  computed inside the graph, host reads, random ops (the generator's state would replay the
  same draws), ops whose output shape depends on the values (``bool_nonzero``,
  ``bool_argwhere``), inputs that are not CuPy arrays or lie on several GPUs, a CuPy without
  stream capture (or on HIP), ``BURNPY_CUDA_GRAPHS=0``, and a capture that fails (an op
  that synchronizes or reads a computed value on the host raises inside a capture; the call
  then runs eagerly).
- Threads: a call made while another thread launches the same graph runs eagerly.

The bookkeeping is written against ``GraphApi`` (capture, launch, copies), so tests drive it on
the CPU with a stand-in; ``CupyGraphs`` is CuPy's.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from burnpy.backend.errors import BurnpyError
from burnpy.capture import CONSTANT, INPUT, Graph
from burnpy.ir.symbolic import Sym
from burnpy_cuda import kernel_sources as src
from burnpy_cuda import kernels
from burnpy_cuda.kernel_ops import adam_arguments
from burnpy_cuda.runtime import require_cupy

#: ``bp.compile``'s generated replay: ``run(inputs, scalars) -> outputs``.
Run = Callable[[list[Any], list[Any]], list[Any]]

#: Ops drawing from the backend's generator: a graph would replay the captured draws.
RANDOM_OPS = frozenset({"float_random", "int_random"})
#: Ops whose output shape depends on the input values (CuPy reads a count on the host).
VALUE_SHAPED_OPS = frozenset({"bool_nonzero", "bool_argwhere"})
#: Eager calls with unchanged scalars before a capture (kernel compilation, cuBLAS, the pool).
WARMUP = 2
#: ``BURNPY_CUDA_GRAPHS=0`` keeps compiled replays on CUDA op by op.
ENV = "BURNPY_CUDA_GRAPHS"


class GraphCaptureError(BurnpyError, RuntimeError):
    """A value computed inside a CUDA graph capture was read on the host (nothing has run
    yet: the capture records work, it does not do it)."""


#: Per thread, during ``CupyGraphs.capture``: (ids of the arrays the host may read, the
#: stream their values were copied on).
_CAPTURING = threading.local()


#: Held while CuPy's (process-wide) pinned-memory allocator is ``_pinned_outside_capture``.
_PINNED_LOCK = threading.Lock()


def _pinned_outside_capture(size: int) -> Any:
    """CuPy's pinned-memory allocator during a capture: an upload of host data (CuPy stages
    it in pinned memory) from the capturing thread raises ``GraphCaptureError``, since the
    graph would copy from a staging buffer CuPy reuses; other threads get the default pool's."""
    if getattr(_CAPTURING, "state", None) is not None:
        raise GraphCaptureError(f"CUDA graph capture: an op uploads {size} bytes of host data "
                                "(the graph would read a staging buffer that is reused)")
    return require_cupy()[0].get_default_pinned_memory_pool().malloc(size)


def host_read(array: Any) -> np.ndarray:
    """``CudaBackend``'s device-to-host copy: ``array.get()``; inside a capture only a static
    input buffer may be read (on the stream that filled it; see the module), anything else
    raises ``GraphCaptureError``."""
    state = getattr(_CAPTURING, "state", None)
    if state is None:
        return np.asarray(array.get())
    readable, stream = state
    if id(array) not in readable:
        raise GraphCaptureError(f"CUDA graph capture: a value computed inside the graph (shape "
                                f"{tuple(array.shape)}, {array.dtype}) is read on the host")
    return np.asarray(array.get(stream=stream))


class SlotInt(int):
    """A per-call scalar as the captured call sees it: its value, and ``slot``, its position
    in the replay's scalars (``slot_value`` reads it from another call's)."""

    slot: int


class SlotFloat(float):
    """The ``float`` kind of ``SlotInt``."""

    __slots__ = ("slot",)
    slot: int


def slotted(value: Any, slot: int) -> Any:
    """``value`` as a ``SlotInt``/``SlotFloat`` at ``slot`` (other values as they are)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value
    made: SlotInt | SlotFloat = SlotInt(value) if isinstance(value, int) else SlotFloat(value)
    made.slot = slot
    return made


def is_slot(value: Any) -> bool:
    """Whether ``value`` is a per-call scalar of a capture (``slotted``)."""
    return isinstance(value, SlotInt | SlotFloat)


def slot_value(value: Any, scalars: Sequence[Any]) -> Any:
    """What ``value`` is in the call whose scalars are ``scalars``: its slot's there, or
    itself when it is no per-call scalar."""
    return scalars[value.slot] if isinstance(value, SlotInt | SlotFloat) else value


class ScalarTable:
    """Per-call scalars a graph reads from device memory: ``size`` float64 entries, each op
    reading some of them registered with how to compute them from a call's scalars
    (``take``); ``refresh`` computes and uploads them all before a launch."""

    __slots__ = ("_api", "computes", "current", "device", "host", "sealed", "used")

    def __init__(self, api: GraphApi, size: int, device: int) -> None:
        self._api = api
        self.host = np.zeros(size, dtype=np.float64)
        self.device = api.scalar_buffer(self.host, device)
        self.used = 0
        self.computes: list[tuple[int, int, Callable[[Sequence[Any]], Sequence[float]]]] = []
        #: The scalars of the call being captured.
        self.current: Sequence[Any] = ()
        #: Once the graph is captured only ``refresh`` writes the table (``take`` then hands
        #: out the same entries again, for a stand-in graph that reruns the call).
        self.sealed = False

    def start(self, scalars: Sequence[Any]) -> None:
        """A call with ``scalars`` is about to run: registrations start again (before the
        table is sealed)."""
        self.used = 0
        if not self.sealed:
            self.computes = []
            self.current = scalars

    def take(self, compute: Callable[[Sequence[Any]], Sequence[float]]) -> list[Any]:
        """Entries for the values ``compute(scalars)`` gives, as 0-d device arrays, their
        host values set for the call being captured."""
        start = self.used
        if self.sealed:
            count = self.computes[len([c for c in self.computes if c[0] < start])][1]
        else:
            values = compute(self.current)
            count = len(values)
            if start + count > self.host.size:
                raise GraphCaptureError(f"CUDA graph capture: the scalar table holds "
                                        f"{self.host.size} values, an op asks for "
                                        f"{start + count}")
            self.host[start:start + count] = values
            self.computes.append((start, count, compute))
        self.used += count
        return [self.device[k:k + 1].reshape(()) for k in range(start, start + count)]

    def refresh(self, scalars: Sequence[Any]) -> None:
        """Compute every entry from ``scalars`` and upload the table (on the current
        stream, before the launch that reads it)."""
        host = self.host
        for start, count, compute in self.computes:
            host[start:start + count] = compute(scalars)
        self._api.upload(self.device, host)


#: Per thread: the scalar table of the call being captured (or rehearsed), else None.
_TABLE = threading.local()


def active_table() -> ScalarTable | None:
    """The scalar table an op of the call being captured reads per-call scalars from."""
    return getattr(_TABLE, "table", None)


#: The scalars ``adam_arguments`` computes, after its 6 other arguments.
ADAM_SCALARS = 8


def fed_adam_step(table: ScalarTable, param: Any, grad: Any, exp_avg: Any, exp_avg_sq: Any,
                  max_exp_avg_sq: Any, *, step: Any, lr: Any, beta1: float, beta2: float,
                  eps: float, weight_decay: float, decoupled: bool, amsgrad: bool) -> Any:
    """``CudaKernelOps.adam_step``'s fused kernel with its 8 scalars read from ``table`` (0-d
    device arrays, which CuPy's elementwise kernels read as they read a Python scalar):
    computed each call by ``adam_arguments`` itself, so values and rounding are eager's."""

    def compute(scalars: Sequence[Any]) -> Sequence[float]:
        return adam_arguments(param, grad, exp_avg, exp_avg_sq,
                              step=slot_value(step, scalars), lr=slot_value(lr, scalars),
                              beta1=beta1, beta2=beta2, eps=eps, weight_decay=weight_decay,
                              decoupled=decoupled)[-ADAM_SCALARS:]

    args = adam_arguments(param, grad, exp_avg, exp_avg_sq, step=int(step), lr=float(lr),
                          beta1=beta1, beta2=beta2, eps=eps, weight_decay=weight_decay,
                          decoupled=decoupled)[:-ADAM_SCALARS]
    fed = (*args, *table.take(compute))
    if not amsgrad:
        new_param, new_avg, new_sq = kernels.elementwise(src.ADAM, param.dtype)(*fed)
        return new_param, new_avg, new_sq, None
    has_max = max_exp_avg_sq is not None
    return kernels.elementwise(src.ADAM_AMSGRAD, param.dtype)(
        *fed, max_exp_avg_sq if has_max else 0.0, int(has_max))


def _holds_sym(value: Any) -> bool:
    if isinstance(value, Sym):
        return True
    if isinstance(value, tuple | list):
        return any(_holds_sym(v) for v in value)
    if isinstance(value, dict):
        return any(_holds_sym(v) for v in value.values())
    return False


def fed_adam_nodes(graph: Graph) -> int:
    """How many ``adam_step`` nodes take symbolic scalars, when those are the only nodes that
    do and only as ``step`` and ``lr``: they read their scalars from a ``ScalarTable``, and
    one graph serves every call. -1 when another node takes one (the scalars then gate
    launches: see the module)."""
    fed = 0
    for node in graph.nodes:
        if not (_holds_sym(node.args) or _holds_sym(node.kwargs)):
            continue
        if (node.op != "adam_step" or _holds_sym(node.args)
                or any(_holds_sym(v) for k, v in node.kwargs.items() if k not in ("step", "lr"))):
            return -1
        fed += 1
    return fed


class GraphApi(Protocol):
    """What ``GraphReplay`` needs from the device: CuPy's (``CupyGraphs``) or a test's."""

    def unavailable(self) -> str:
        """Why graphs cannot be captured here ("" when they can)."""
        ...

    def is_array(self, x: Any) -> bool:
        """Whether ``x`` is a device array a graph can read at a fixed address."""
        ...

    def device_of(self, x: Any) -> int:
        """The GPU holding array ``x``."""
        ...

    def empty_like(self, x: Any) -> Any:
        """A new array of ``x``'s shape, dtype and layout."""
        ...

    def copy_into(self, dst: Any, src: Any) -> None:
        """Copy ``src``'s values into ``dst`` on the current stream."""
        ...

    def copy(self, x: Any) -> Any:
        """A new array holding ``x``'s values (on the current stream)."""
        ...

    def capture(self, device: int, call: Callable[[], list[Any]], readable: Sequence[Any]
                ) -> tuple[Any, list[Any], Any]:
        """Capture ``call()`` on ``device``, the arrays ``readable`` (the static inputs) alone
        readable on the host meanwhile: (the graph, what ``call`` returned, what must live as
        long as the graph: the memory its arrays came from)."""
        ...

    def launch(self, graph: Any, device: int) -> None:
        """Launch ``graph`` on ``device``'s current stream."""
        ...

    def scalar_buffer(self, host: np.ndarray, device: int) -> Any:
        """A device array holding ``host`` on GPU ``device``, for a ``ScalarTable``."""
        ...

    def upload(self, device: Any, host: np.ndarray) -> None:
        """Copy ``host`` into ``device`` on the current stream, ``host`` free for reuse on
        return."""
        ...


def graph_unsafe_reason(graph: Graph) -> str:
    """Why a replay of ``graph`` must never be one CUDA graph ("" when it may be)."""
    for position, index, _ in graph.checks:
        if graph.values[index].kind not in (INPUT, CONSTANT):
            where = graph.nodes[position].op if position < len(graph.nodes) else "the end"
            return (f"a host-side validity check (before {where}) reads %{index}, a value "
                    "computed inside the graph")
    if graph.host_reads:
        return f"{len(graph.host_reads)} host read(s) of device values"
    for position, node in enumerate(graph.nodes):
        if node.op in RANDOM_OPS or "random" in node.op:
            return (f"random op {node.op} (node {position}): a graph would replay the draws it "
                    "was captured with")
        if node.op in VALUE_SHAPED_OPS:
            return (f"{node.op} (node {position}): its output shape depends on the values, "
                    "read on the host")
    return ""


class GraphReplay:
    """``run`` as one CUDA graph once warm (see the module): call it as ``run``.

    Debugging attributes: ``reason`` (why this replay never uses a graph, "" while it may),
    ``last_eager`` (why the last eager call was eager), and the counts ``eager_calls``,
    ``captures`` and ``launches``.
    """

    __slots__ = ("_api", "_backend", "_checks", "_device", "_fed", "_graph", "_keep", "_key",
                 "_lock", "_outputs", "_plan", "_run", "_seen", "_stable", "_static_in",
                 "_static_out", "_table", "captures", "eager_calls", "last_eager", "launches",
                 "reason", "warmup")

    def __init__(self, run: Run, graph: Graph, api: GraphApi, warmup: int = WARMUP) -> None:
        self._run = run
        self._api = api
        self.warmup = warmup
        self.reason = graph_unsafe_reason(graph) or api.unavailable()
        #: Per output: its value index, and whether it is a recorded constant (handed out
        #: itself) rather than a buffer of the graph (handed out as a copy).
        self._plan = [(i, graph.values[i].kind == CONSTANT) for i in graph.outputs]
        #: The checks a launch runs on the host first: (input position, or -1 and the
        #: constant, the check), in the graph's order.
        positions = {index: p for p, index in enumerate(graph.inputs)}
        self._checks = [(positions.get(index, -1), graph.values[index].data, check)
                        for _, index, check in graph.checks]
        self._backend = graph.backend
        #: adam_step nodes fed from a scalar table (0: no symbolic scalars; -1: they gate).
        self._fed = fed_adam_nodes(graph)
        self._table: ScalarTable | None = None
        self._lock = threading.Lock()
        self._graph: Any = None
        self._keep: Any = None
        self._device = -1
        self._static_in: list[Any] = []
        self._static_out: list[Any] = []
        self._outputs = len(graph.outputs)
        self._key: tuple[Any, ...] | None = None  # the scalars the graph was captured with
        self._seen: tuple[Any, ...] | None = None  # the scalars of the last eager call
        self._stable = 0  # eager calls in a row with the scalars ``_seen``
        self.captures = self.launches = self.eager_calls = 0
        self.last_eager = ""

    def __repr__(self) -> str:
        state = f"never a graph: {self.reason}" if self.reason else (
            f"{self.captures} capture(s), {self.launches} launch(es)")
        return f"GraphReplay({state}; {self.eager_calls} eager call(s))"

    def __call__(self, inputs: list[Any], scalars: list[Any]) -> list[Any]:
        if self.reason:
            self.eager_calls += 1
            return self._run(inputs, scalars)
        if not self._lock.acquire(blocking=False):
            return self._eager(inputs, scalars, "another thread is launching this graph")
        try:
            key = () if self._fed > 0 else tuple(scalars)
            if self._graph is not None and key == self._key:
                return self._launch(inputs, scalars)
            if key == self._seen:
                self._stable += 1
            else:
                self._seen, self._stable = key, 1
            if self._stable > self.warmup:
                return self._capture(inputs, scalars, key)
            if self._graph is not None:
                why = "symbolic scalars differ from those the graph was captured with"
            elif self._stable == self.eager_calls + 1:  # every call so far alike
                why = f"warm-up ({self._stable} of {self.warmup})"
            else:
                why = "symbolic scalars changed since the last call"
            return self._eager(inputs, scalars, why)
        finally:
            self._lock.release()

    def _eager(self, inputs: list[Any], scalars: list[Any], why: str) -> list[Any]:
        self.eager_calls += 1
        self.last_eager = why
        return self._run(inputs, scalars)

    def _check(self, inputs: Sequence[Any]) -> None:
        """Run the graph's validity checks on the host, as its eager replay would."""
        backend = self._backend
        for position, constant, check in self._checks:
            check(backend, inputs[position] if position >= 0 else constant)

    def _capture(self, inputs: list[Any], scalars: list[Any], key: tuple[Any, ...]
                 ) -> list[Any]:
        """Capture this call into a new graph (dropping the old one) and launch it."""
        api = self._api
        self._check(inputs)  # a bad value raises as eager replay does, before any capture
        if not all(api.is_array(x) for x in inputs):
            kinds = sorted({type(x).__name__ for x in inputs if not api.is_array(x)})
            return self._give_up(inputs, scalars, f"inputs that are not device arrays "
                                 f"({', '.join(kinds)})")
        devices = sorted({api.device_of(x) for x in inputs})
        if len(devices) != 1:
            return self._give_up(inputs, scalars, f"inputs on GPUs {devices}" if devices
                                 else "no inputs to place the graph by")
        # the old graph's memory goes before the new is made
        self._graph = self._keep = self._table = None
        self._static_in = static = [api.empty_like(x) for x in inputs]
        for buffer, x in zip(static, inputs, strict=True):
            api.copy_into(buffer, x)
        table = (ScalarTable(api, ADAM_SCALARS * self._fed, devices[0]) if self._fed > 0
                 else None)
        # fed scalars go as slots (an op tells them so); others are baked in
        passed = ([slotted(v, i) for i, v in enumerate(scalars)] if table is not None
                  else list(scalars))

        def call() -> list[Any]:
            if table is None:
                return self._run(static, passed)
            table.start(scalars)
            _TABLE.table = table
            try:
                return self._run(static, passed)
            finally:
                _TABLE.table = None

        try:
            graph, outs, keep = api.capture(devices[0], call, static)
        except Exception as exc:  # an op synchronized or read the host inside the capture
            self._static_in = []
            return self._give_up(inputs, scalars,
                                 f"capture failed: {type(exc).__name__}: {exc}")
        if len(outs) != self._outputs or not all(
                const or api.is_array(o) for o, (_, const) in zip(outs, self._plan,
                                                                strict=True)):
            self._static_in = []
            return self._give_up(inputs, scalars, "outputs that are not device arrays")
        if table is not None and len(table.computes) != self._fed:
            self._static_in = []
            return self._give_up(inputs, scalars, (
                f"{self._fed - len(table.computes)} of {self._fed} adam_step node(s) took "
                "their per-call scalars on the host, not from the scalar table (only the "
                "fused CUDA kernel reads it: float16, float32 and float64 alike)"))
        self._graph, self._static_out, self._keep = graph, outs, keep
        self._device, self._key, self._table = devices[0], key, table
        self.captures += 1
        if table is not None:
            table.sealed = True
            table.refresh(scalars)
        api.launch(graph, self._device)
        self.launches += 1
        return self._hand_out()

    def _give_up(self, inputs: list[Any], scalars: list[Any], reason: str) -> list[Any]:
        """Never use a graph for this replay again; run this call eagerly."""
        self.reason = reason
        self._graph = self._keep = self._table = None
        return self._eager(inputs, scalars, reason)

    def _launch(self, inputs: Sequence[Any], scalars: Sequence[Any]) -> list[Any]:
        api = self._api
        if self._checks:
            self._check(inputs)
        for buffer, x in zip(self._static_in, inputs, strict=True):
            api.copy_into(buffer, x)
        if self._table is not None:
            self._table.refresh(scalars)
        api.launch(self._graph, self._device)
        self.launches += 1
        return self._hand_out()

    def _hand_out(self) -> list[Any]:
        """The outputs: constants themselves, one copy of each other value."""
        copies: dict[int, Any] = {}
        outs = self._static_out
        copy = self._api.copy
        result = []
        for out, (index, const) in zip(outs, self._plan, strict=True):
            if const:
                result.append(out)
                continue
            made = copies.get(index)
            if made is None:
                made = copies[index] = copy(out)
            result.append(made)
        return result


class CupyGraphs:
    """``GraphApi`` on CuPy: capture on a non-blocking side stream per device (CuPy refuses
    the legacy default stream), after one uncaptured rehearsal there, into a private memory
    pool; launch on the current stream (a graph may launch on any stream), so launches,
    copies and the caller's own work stay in one stream's order."""

    __slots__ = ("_cupy", "_streams")

    def __init__(self, cupy: Any = None) -> None:
        """On CuPy (``cupy``: the module, or a stand-in for tests)."""
        self._cupy = require_cupy()[0] if cupy is None else cupy
        self._streams: dict[int, Any] = {}

    def unavailable(self) -> str:
        cp = self._cupy
        if not hasattr(cp.cuda.Stream, "begin_capture") or not hasattr(cp.cuda, "Graph"):
            return f"CuPy {cp.__version__} has no CUDA graph capture"
        if getattr(cp.cuda.runtime, "is_hip", False):
            return "CUDA graph capture is not offered on HIP"
        return ""

    def is_array(self, x: Any) -> bool:
        return isinstance(x, self._cupy.ndarray)

    def device_of(self, x: Any) -> int:
        return int(x.device.id)

    def empty_like(self, x: Any) -> Any:
        with x.device:
            return self._cupy.empty_like(x)

    def copy_into(self, dst: Any, src: Any) -> None:
        if (src.flags.c_contiguous and dst.flags.c_contiguous and src.dtype == dst.dtype
                and src.shape == dst.shape):  # one memcpy: less host time than a kernel
            dst.data.copy_from_device_async(src.data, src.nbytes,
                                            self._cupy.cuda.get_current_stream())
        else:
            self._cupy.copyto(dst, src)

    def copy(self, x: Any) -> Any:
        if not x.flags.c_contiguous:
            return x.copy(order="A")
        made = self._cupy.empty_like(x)
        made.data.copy_from_device_async(x.data, x.nbytes, self._cupy.cuda.get_current_stream())
        return made

    def capture(self, device: int, call: Callable[[], list[Any]], readable: Sequence[Any]
                ) -> tuple[Any, list[Any], Any]:
        cp = self._cupy
        stream = self._streams.get(device)
        with cp.cuda.Device(device):
            if stream is None:
                stream = self._streams[device] = cp.cuda.Stream(non_blocking=True)
            caller = cp.cuda.get_current_stream()
            # a rehearsal on the capture stream, after the caller's work: what an op makes
            # per stream on first use (cuBLAS's workspace) is made here, not in the capture
            stream.wait_event(caller.record())
            with stream:
                call()
            caller.wait_event(stream.record())
            pool = cp.cuda.MemoryPool()
            with _PINNED_LOCK, stream, cp.cuda.using_allocator(pool.malloc):
                _CAPTURING.state = ({id(x) for x in readable}, caller)
                cp.cuda.set_pinned_memory_allocator(_pinned_outside_capture)
                stream.begin_capture()
                try:
                    outs = call()
                except BaseException:
                    # leave capture mode (an invalidated capture raises there too: the op's
                    # own error is the one to report)
                    with contextlib.suppress(Exception):
                        stream.end_capture()
                    raise
                finally:
                    _CAPTURING.state = None
                    cp.cuda.set_pinned_memory_allocator(
                        cp.get_default_pinned_memory_pool().malloc)
                graph = stream.end_capture()
        return graph, outs, pool

    def launch(self, graph: Any, device: int) -> None:
        with self._cupy.cuda.Device(device):
            graph.launch()

    def scalar_buffer(self, host: np.ndarray, device: int) -> Any:
        with self._cupy.cuda.Device(device):
            return self._cupy.asarray(host)

    def upload(self, device: Any, host: np.ndarray) -> None:
        # from pageable memory: CUDA has staged it by the time this returns
        device.set(host, stream=self._cupy.cuda.get_current_stream())


def replay_runner(run: Run, graph: Graph) -> Run:
    """``CudaBackend.replay_runner``: ``run`` as a ``GraphReplay`` on CuPy (which only runs
    ``run`` under ``BURNPY_CUDA_GRAPHS=0``)."""
    replay = GraphReplay(run, graph, CupyGraphs())
    if os.environ.get(ENV, "1") == "0":
        replay.reason = f"turned off by {ENV}=0"
    return replay
