"""A compiled replay on WebGPU as one submission of taped dispatches (``bp.compile``).

``WgpuBackend.replay_runner`` wraps the generated op-by-op replay of a recorded graph. Its
first call runs the graph's ops for real with the runtime's ``recorder`` set per op call,
taping what each call launched: every dispatch (pipeline, the buffers it reads and writes,
its parameter words, its grid), the buffers it allocated, and the layout of its tensor
arguments and results. Later calls run the same generated function with each op replaced by
its tape: the dispatches are encoded again with the buffers rebound (arguments' buffers as
given, fresh pool buffers for what the call allocated; results are views of them as recorded)
and their parameter words copied in one block per call, skipping the op's Python (launch
plans, layout and dtype logic, meta packing). A replay starts a fresh command batch and
records every dispatch into it: the whole step is one command buffer, one submission (with
the loss's readback after it, when the caller reads it).

An op call runs for real at every replay (it is *live*) when its tape would not hold: its node
takes a symbolic scalar (a learning rate, a step count: its parameter words change), it drew
random numbers (each replay draws fresh ones in eager's order), uploaded or read back data, or
touched a buffer that is neither an argument's nor one it allocated. A taped call whose
arguments' layouts (shape, strides, offset, dtype, shared buffers) differ from the tape's
runs for real too. Either way the same kernels run on the same parameter words as eagerly, so
results equal eager ones bit for bit (where the kernels are deterministic: sums with float
atomics, as embedding gradients, add in thread order). A graph whose calls do not match its
nodes one to one keeps the generated function.
"""

from __future__ import annotations

import itertools
import threading
import types
from collections.abc import Callable, Sequence
from typing import Any

from burnpy.ir.symbolic import Sym
from burnpy_wgpu.memory import BufferHandle, Slab
from burnpy_wgpu.runtime import ARENA_BYTES, MAX_BATCH, META_SLOT, Kernel, WgpuRuntime
from burnpy_wgpu.tensor import WgpuTensor

Run = Callable[[list[Any], list[Any]], list[Any]]
#: The forms of a taped result: the argument object itself, a view of an argument's buffer, a
#: view of a buffer the call allocated (with the view's shape, strides, offset and dtype), a
#: tuple or list of forms (with its type), a constant.
_SAME, _ARG_VIEW, _NEW_VIEW, _SEQUENCE, _CONSTANT = range(5)
#: The generated replay names each protocol op it calls ``op_<name>`` in its globals.
_OP_PREFIX = "op_"


class _CallRecorder:
    """What one op call did on the runtime, in the thread making it (other threads' work is
    not the call's): its dispatches, the slabs it allocated, and why it cannot be taped
    (``untaped_by``, empty when it can)."""

    __slots__ = ("dispatches", "new", "thread", "untaped_by")

    def __init__(self) -> None:
        self.dispatches: list[tuple[Kernel, tuple[Slab, ...], tuple[Slab, ...], tuple[int, ...],
                                    tuple[int, int, int]]] = []
        self.new: dict[int, Slab] = {}
        self.untaped_by = ""
        self.thread = threading.get_ident()

    def allocated(self, slab: Slab) -> None:
        if threading.get_ident() == self.thread:
            self.new.setdefault(slab.uid, slab)

    def dispatched(self, kernel: Kernel, reads: Sequence[Slab], writes: Sequence[Slab],
                   meta: Sequence[int], groups: tuple[int, int, int]) -> None:
        if threading.get_ident() == self.thread:
            self.dispatches.append((kernel, tuple(reads), tuple(writes), tuple(meta), groups))

    def untaped(self, why: str) -> None:
        if threading.get_ident() == self.thread:
            self.untaped_by = self.untaped_by or why


def _paths(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[tuple[Any, int]]:
    """Where the tensors among an op call's arguments are: ``(position or keyword, index in
    a list/tuple argument or -1)``."""
    paths: list[tuple[Any, int]] = []
    for key, value in (*enumerate(args), *kwargs.items()):
        if isinstance(value, WgpuTensor):
            paths.append((key, -1))
        elif isinstance(value, tuple | list):
            paths.extend((key, i) for i, v in enumerate(value) if isinstance(v, WgpuTensor))
    return paths


def _leaves(args: tuple[Any, ...], kwargs: dict[str, Any],
            paths: Sequence[tuple[Any, int]]) -> list[Any]:
    """The tensors at ``paths`` (from ``_paths``) of a call's arguments."""
    out = []
    for key, i in paths:
        value = args[key] if type(key) is int else kwargs[key]
        out.append(value if i < 0 else value[i])
    return out


def _fits(tape: _Tape, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any] | None:
    """The call's tensors when the call is one ``tape`` holds for (tensors where the taped
    call had them, of the same layouts and buffer sharing), else None."""
    try:
        leaves = _leaves(args, kwargs, tape.paths)
    except (IndexError, KeyError, TypeError):
        return None
    if (any(type(t) is not WgpuTensor for t in leaves)
            or tuple(_layout(t) for t in leaves) != tape.layouts
            or _sharing(leaves) != tape.sharing):
        return None
    return leaves


def _layout(t: WgpuTensor) -> tuple[Any, ...]:
    return (t.shape, t.strides, t.offset, t.dtype)


def _sharing(leaves: Sequence[WgpuTensor]) -> tuple[int, ...]:
    """For each tensor, the first tensor with its buffer (the aliasing a tape assumes)."""
    first: dict[int, int] = {}
    return tuple(first.setdefault(t.handle.slab.uid, i) for i, t in enumerate(leaves))


class _Tape:
    """One op call taped: its argument layouts, buffer sizes to allocate, dispatches over
    slot numbers (arguments' buffers first, then allocated ones) with their parameter blocks
    packed in one blob, and its result's form. A dispatch reading a buffer it writes (the
    runtime copies the read first) goes through ``dispatch`` (``aliased``)."""

    __slots__ = ("aliased", "blob", "dispatches", "layouts", "paths", "result", "sharing",
                 "sizes", "steps")

    def __init__(self, rt: WgpuRuntime, paths: list[tuple[Any, int]],
                 layouts: tuple[Any, ...], sharing: tuple[int, ...], sizes: list[int],
                 dispatches: list[tuple[Kernel, list[int], list[int], tuple[int, ...],
                                        tuple[int, int, int]]], result: Any) -> None:
        self.paths = paths
        self.layouts = layouts
        self.sharing = sharing
        self.sizes = sizes
        self.dispatches = dispatches
        self.result = result
        self.aliased = any(set(reads) & set(writes) for _, reads, writes, _, _ in dispatches)
        blocks = [rt.meta_block(meta) for _, _, _, meta, _ in dispatches]
        ends = list(itertools.accumulate(len(b) for b in blocks))
        offsets = [0, *ends[:-1]] if ends else []
        self.blob = b"".join(blocks)
        self.steps = [(d[0], d[1], d[2], offset, d[4])
                      for d, offset in zip(dispatches, offsets, strict=True)]

    @staticmethod
    def build(rt: WgpuRuntime, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any,
              rec: _CallRecorder) -> _Tape | str:
        """The tape of a call that ran with ``rec`` recording, or why it has none."""
        if rec.untaped_by:
            return rec.untaped_by
        paths = _paths(args, kwargs)
        leaves = _leaves(args, kwargs, paths)
        slots: dict[int, int] = {}
        for i, t in enumerate(leaves):
            slots.setdefault(t.handle.slab.uid, i)
        sizes: list[int] = []
        for uid, slab in rec.new.items():
            if uid not in slots:
                slots[uid] = len(leaves) + len(sizes)
                sizes.append(slab.size)
        dispatches = []
        for kernel, reads, writes, meta, groups in rec.dispatches:
            try:
                dispatches.append((kernel, [slots[s.uid] for s in reads],
                                   [slots[s.uid] for s in writes], meta, groups))
            except KeyError:
                return "a buffer neither an argument's nor allocated by the call"
        made: dict[int, int] = {}
        leaf_ids = {id(t): i for i, t in enumerate(leaves)}

        def form(value: Any) -> tuple[Any, ...]:
            if isinstance(value, WgpuTensor):
                if id(value) in leaf_ids:
                    return (_SAME, leaf_ids[id(value)])
                slot = slots.get(value.handle.slab.uid)
                if slot is None:
                    raise LookupError
                if slot < len(leaves):
                    return (_ARG_VIEW, slot, _layout(value))
                return (_NEW_VIEW, slot - len(leaves), _layout(value), made.setdefault(
                    id(value), len(made)))
            if isinstance(value, tuple | list):
                return (_SEQUENCE, type(value), [form(v) for v in value])
            if value is None or isinstance(value, bool | int | float):
                return (_CONSTANT, value)
            raise LookupError

        try:
            shape = form(result)
        except LookupError:
            return "a result that is not a view of its arguments' or its own buffers"
        tape = _Tape(rt, paths, tuple(_layout(t) for t in leaves), _sharing(leaves), sizes,
                     dispatches, shape)
        if len(tape.blob) + META_SLOT > ARENA_BYTES or len(dispatches) > MAX_BATCH:
            return "more dispatches than a batch takes"
        return tape

    def play(self, rt: WgpuRuntime, leaves: list[Any]) -> Any:
        """Launch the taped dispatches on ``leaves``' buffers and fresh ones; the result."""
        handles = [rt.alloc(size) for size in self.sizes]
        slabs = [t.handle.slab for t in leaves] + [h.slab for h in handles]
        if self.aliased:
            for kernel, reads, writes, meta, groups in self.dispatches:
                rt.dispatch(kernel, [slabs[i] for i in reads], [slabs[i] for i in writes],
                            meta, groups)
        elif self.steps:
            rt.dispatch_taped(slabs, self.blob, self.steps)
        made: dict[int, WgpuTensor] = {}
        return _make(self.result, rt, leaves, handles, made)


def _make(form: tuple[Any, ...], rt: WgpuRuntime, leaves: list[WgpuTensor],
          handles: list[BufferHandle], made: dict[int, WgpuTensor]) -> Any:
    """A taped result built again: the same objects where the op returned the same one."""
    kind = form[0]
    if kind == _NEW_VIEW:
        found = made.get(form[3])
        if found is None:
            shape, strides, offset, dtype = form[2]
            found = made[form[3]] = WgpuTensor(rt, handles[form[1]], shape, strides, offset,
                                               dtype)
        return found
    if kind == _SAME:
        return leaves[form[1]]
    if kind == _ARG_VIEW:
        shape, strides, offset, dtype = form[2]
        return WgpuTensor(rt, leaves[form[1]].handle, shape, strides, offset, dtype)
    if kind == _CONSTANT:
        return form[1]
    kind, items = form[1], [_make(f, rt, leaves, handles, made) for f in form[2]]
    return kind(*items) if hasattr(kind, "_fields") else kind(items)


def _takes_symbol(value: Any) -> bool:
    if isinstance(value, Sym):
        return True
    if isinstance(value, tuple | list):
        return any(_takes_symbol(v) for v in value)
    if isinstance(value, dict):
        return any(_takes_symbol(v) for v in value.values())
    return False


class TapedReplay:
    """``bp.compile``'s replay of one graph on ``WgpuBackend``: taped on its first call, then
    each call one submission of the taped dispatches (see the module). ``stats`` counts the
    op calls played from tapes and run for real, and why calls were left untaped."""

    def __init__(self, run: Run, graph: Any) -> None:
        self.run = run
        self.graph = graph
        self.ops = [node.op for node in graph.nodes]
        self.symbolic = [_takes_symbol(node.args) or _takes_symbol(node.kwargs)
                         for node in graph.nodes]
        self.tapes: list[_Tape | None] = []
        self.played: Run | None = None
        self.runtime: WgpuRuntime | None = None
        self.untaped: dict[str, int] = {}
        self.stats = {"played": 0, "live": 0, "mismatched": 0, "replays": 0}
        self._cursor = 0
        self._lock = threading.Lock()

    def __call__(self, inputs: list[Any], scalars: list[Any]) -> list[Any]:
        rt = next((p.runtime for p in inputs if isinstance(p, WgpuTensor)), None)
        if rt is None or (self.runtime is not None and rt is not self.runtime):
            return self.run(inputs, scalars)
        with self._lock, rt.lock:
            # a fresh batch, which the whole replay fits (unless it has more dispatches than
            # a batch takes); it is submitted with what follows, as eager work is: a loss
            # read back after the step joins the same submission
            rt.flush()
            if self.played is None:
                self.runtime = rt
                return self._tape(rt, inputs, scalars)
            self._cursor = 0
            outputs = self.played(inputs, scalars)
            self.stats["replays"] += 1
        return outputs

    def _generated(self, op: Callable[..., Any]) -> Run | None:
        """The generated replay with each protocol op replaced by ``op(name)``'s result; None
        when ``run`` is not a plain generated function naming its ops in its globals."""
        code = getattr(self.run, "__code__", None)
        if not isinstance(code, types.CodeType) or code.co_freevars:
            return None
        scope = dict(self.run.__globals__)
        names = [key for key in scope if key.startswith(_OP_PREFIX)]
        if not names:
            return None
        for key in names:
            scope[key] = op(key[len(_OP_PREFIX):])
        fn: Run = types.FunctionType(code, scope, code.co_name)
        return fn

    def _tape(self, rt: WgpuRuntime, inputs: list[Any], scalars: list[Any]) -> list[Any]:
        """Run the graph for real, taping each op call; keep the tapes if the calls were the
        graph's nodes in order."""
        calls: list[str] = []
        tapes: list[_Tape | None] = []
        backend = self.graph.backend
        self.untaped.clear()

        def recording(name: str) -> Callable[..., Any]:
            real = getattr(backend, name)

            def call(*args: Any, **kwargs: Any) -> Any:
                position = len(calls)
                calls.append(name)
                rec = _CallRecorder()
                counter = rt.rng_counter
                rt.recorder = rec
                try:
                    result = real(*args, **kwargs)
                finally:
                    rt.recorder = None
                if rt.rng_counter != counter:
                    rec.untaped("random numbers")
                if position < len(self.symbolic) and self.symbolic[position]:
                    rec.untaped("a symbolic scalar")
                tape = _Tape.build(rt, args, kwargs, result, rec)
                if isinstance(tape, str):
                    self.untaped[tape] = self.untaped.get(tape, 0) + 1
                    tapes.append(None)
                else:
                    tapes.append(tape)
                return result
            return call

        taping = self._generated(recording)
        if taping is None:
            self.played = self.run
            return self.run(inputs, scalars)
        outputs = taping(inputs, scalars)
        self.tapes = tapes
        played = self._generated(self._player) if calls == self.ops else None
        self.played = self.run if played is None else played
        return outputs

    def _player(self, name: str) -> Callable[..., Any]:
        real = getattr(self.graph.backend, name)
        tapes = self.tapes
        rt = self.runtime
        stats = self.stats

        def call(*args: Any, **kwargs: Any) -> Any:
            tape = tapes[self._cursor]
            self._cursor += 1
            if tape is None:
                stats["live"] += 1
                return real(*args, **kwargs)
            leaves = _fits(tape, args, kwargs)
            if leaves is None:
                stats["mismatched"] += 1
                return real(*args, **kwargs)
            stats["played"] += 1
            assert rt is not None
            return tape.play(rt, leaves)
        return call
