"""Elementwise runs of a recorded graph fused into one kernel each, for ``bp.compile``'s replay.

When the recorded backend is ``Fusion(B)`` (tensors on ``Autodiff(Capture(Fusion(B)))``), the
replay has no lazy recording to pay for: the graph already says which values each op reads
and which later ops, checks and outputs need. So a run of consecutive elementwise nodes over
one shape and one float dtype (tensor operands of that shape and dtype, Python or symbolic
scalars) becomes one ``FusedGroup`` compiled by B's fuser, called once per replay, writing only
the values read after the run (the others are never written). Below the fuser's
``min_elements`` the replay uses a copy of the fuser without that floor and without its
declined ops (both priced for ``Fusion``'s per-op recording cost and for large arrays, where
NumPy's SIMD loops win; a small replayed run pays one kernel call instead of one dispatch per
op). Fused results agree with eager ones within float rounding (1e-6 relative), as ``Fusion``'s
do; a graph on any other backend is replayed op by op, bitwise equal to eager.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from burnpy.backend.dtype import DType
from burnpy.capture import Graph, Ref
from burnpy.fusion import FusionBackend
from burnpy.fusion.fuser import Fuser
from burnpy.ir.desc import TensorDesc
from burnpy.ir.fused import ELEMENTWISE, FUSABLE, FusedGroup, FusedOp
from burnpy.ir.fused import Ref as GroupRef
from burnpy.ir.symbolic import Sym


@dataclass(frozen=True)
class FusedRun:
    """Graph nodes ``start`` to ``stop`` (exclusive) as one call ``kernel(inputs, scalars)``:
    ``inputs`` the value indices it reads, ``scalars`` the recorded scalar arguments (numbers
    or ``Sym``s) in order, ``outputs`` the value indices of the results it returns, in order."""

    start: int
    stop: int
    kernel: Callable[..., Any]
    inputs: tuple[int, ...]
    scalars: tuple[Any, ...]
    outputs: tuple[int, ...]


def _replay_fuser(fuser: Fuser) -> Fuser:
    """``fuser`` without its kernel floor and declined ops (see the module), sharing its
    compiled kernels."""
    relaxed = copy.copy(fuser)
    if hasattr(relaxed, "min_elements"):
        relaxed.min_elements = 0
    if hasattr(relaxed, "declined"):
        relaxed.declined = frozenset()
    return relaxed


class _Run:
    """A run being collected: its shape, dtype, the fuser for its size and its node
    positions."""

    __slots__ = ("dtype", "fuser", "positions", "shape")

    def __init__(self, shape: tuple[int, ...], dtype: DType, fuser: Fuser) -> None:
        self.shape = shape
        self.dtype = dtype
        self.fuser = fuser
        self.positions: list[int] = []


def _operands(graph: Graph, position: int) -> tuple[str, list[Any], TensorDesc] | None:
    """The vocabulary op, operands and tensor description of the node at ``position`` when it
    is an elementwise op of one float shape and dtype (its tensor operands and result alike,
    the first operand a tensor), else None."""
    node = graph.nodes[position]
    spec = FUSABLE.get(node.op)
    if (spec is None or spec.result not in ("same", "promote") or spec.op not in ELEMENTWISE
            or node.kwargs or type(node.result) is not Ref
            or sorted(spec.operands) != list(range(len(node.args)))):
        return None
    operands = [node.args[p] for p in spec.operands]
    first = operands[0]
    if type(first) is not Ref:
        return None
    desc = graph.values[first.index].desc
    if not desc.dtype.is_float or graph.values[node.result.index].desc != desc:
        return None
    for a in operands:
        if type(a) is Ref:
            if graph.values[a.index].desc != desc:
                return None
        elif not (isinstance(a, Sym) or type(a) is float or type(a) is int):
            return None
    return spec.op, operands, desc


def fused_runs(graph: Graph) -> list[FusedRun]:
    """The graph's runs of at least two consecutive elementwise nodes that B's fuser compiles,
    when the graph's backend is a ``Fusion`` class with a fuser; none otherwise. A run never
    spans a validity check (``Graph.checks``) or a host read (``Graph.host_reads``): the value
    checked or read is computed before it."""
    backend = graph.backend
    if not (isinstance(backend, type) and issubclass(backend, FusionBackend)):
        return []
    fuser = backend._state.fuser()
    if fuser is None:
        return []
    relaxed = _replay_fuser(fuser)
    floor = getattr(fuser, "min_elements", 0)
    last: dict[int, int] = {}
    for position, node in enumerate(graph.nodes):
        for index in node.inputs:
            last[index] = position
    stops = [(position, index) for position, index, _check in graph.checks]
    stops += [(position, index) for position, index, _op, _data in graph.host_reads]
    for position, index in stops:
        last[index] = max(last.get(index, -1), position)
    for index in graph.outputs:
        last[index] = len(graph.nodes)
    checked = {position for position, _index in stops}
    runs: list[FusedRun] = []
    current: _Run | None = None
    for position in range(len(graph.nodes)):
        found = _operands(graph, position)
        if found is not None:
            name, _, desc = found
            shape = tuple(desc.shape)
            joins = (current is not None and current.shape == shape
                     and current.dtype is desc.dtype and position not in checked)
            if not joins:
                if current is not None:
                    _close(graph, current, last, runs)
                chosen = relaxed if math.prod(shape) < floor else fuser
                current = _Run(shape, desc.dtype, chosen)
            assert current is not None
            arity = len(found[1])
            if current.fuser.accepts(name, (desc.dtype,) * (arity + 1)):
                current.positions.append(position)
                continue
        if current is not None:
            _close(graph, current, last, runs)
            current = None
    if current is not None:
        _close(graph, current, last, runs)
    return runs


def _close(graph: Graph, run: _Run, last: dict[int, int], runs: list[FusedRun]) -> None:
    """Compile ``run`` (at least two nodes) and add it to ``runs`` when the fuser takes it."""
    positions = run.positions
    if len(positions) < 2:
        return
    start, stop = positions[0], positions[-1] + 1
    inputs: list[int] = []
    input_index: dict[int, int] = {}
    local_index: dict[int, int] = {}
    scalars: list[Any] = []
    scalar_index: dict[tuple[Any, Any], int] = {}
    ops: list[FusedOp] = []
    written: list[int] = []
    outputs: list[int] = []
    for position in positions:
        node = graph.nodes[position]
        found = _operands(graph, position)
        assert found is not None
        name, operands, _desc = found
        refs: list[GroupRef] = []
        for a in operands:
            if type(a) is Ref:
                local = local_index.get(a.index)
                if local is not None:
                    refs.append(GroupRef("local", local))
                    continue
                if a.index not in input_index:
                    input_index[a.index] = len(inputs)
                    inputs.append(a.index)
                refs.append(GroupRef("input", input_index[a.index]))
            else:  # one slot per distinct scalar: numba checks each argument per call
                key = ("sym", id(a)) if isinstance(a, Sym) else (type(a), repr(a))
                if key not in scalar_index:
                    scalar_index[key] = len(scalars)
                    scalars.append(a)
                refs.append(GroupRef("scalar", scalar_index[key]))
        out = node.result.index
        local_index[out] = len(ops)
        if last.get(out, -1) >= stop:  # read after the run, checked, or a graph output
            written.append(len(ops))
            outputs.append(out)
        ops.append(FusedOp(name, tuple(refs), run.dtype))
    desc = TensorDesc(run.shape, run.dtype)
    group = FusedGroup(run.shape, (desc,) * len(inputs), (run.dtype,) * len(scalars),
                       tuple(ops), tuple(written), None)
    kernel = run.fuser.compile(group) if written else None
    if kernel is not None:
        runs.append(FusedRun(start, stop, kernel, tuple(inputs), tuple(scalars),
                             tuple(outputs)))
