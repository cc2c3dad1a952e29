"""The replay of a recorded graph as one generated flat Python function of the backend's ops
(``generate_replay``), with its fused runs, validity checks and host-read splits, and the
helpers that lower symbolic scalars to the plain numbers B runs with."""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

import numpy as np

from burnpy.capture import CONSTANT, Graph, Ref
from burnpy.fusion import materialize
from burnpy.ir.symbolic import Sym
from burnpy.jit.fuse import fused_runs


def generate_replay(graph: Graph, slots: dict[int, int], name: str, fuse: bool = True
                    ) -> Callable[..., Any]:
    """The graph as one flat Python function ``run(inputs, s) -> outputs``: one line per node
    calling B's op (or, with ``fuse``, one kernel call per fused run, ``fused_runs``, its
    inputs materialized: a run is fused for the recorded shapes), each value a local freed
    after its last use; ``s`` holds the symbolic scalars' values (``slots`` maps each
    ``Sym``'s id to its position)."""
    scope: dict[str, Any] = {}
    last: dict[int, int] = {}
    for position, node in enumerate(graph.nodes):
        for index in node.inputs:
            last[index] = position
    checks: dict[int, list[tuple[int, Any]]] = {}
    for position, index, check in graph.checks:  # a checked value lives until its check
        checks.setdefault(position, []).append((index, check))
        last[index] = max(last.get(index, -1), position)
    host_reads: dict[int, list[tuple[int, str, Any]]] = {}
    for position, index, op, data in graph.host_reads:  # a read value lives until its read
        host_reads.setdefault(position, []).append((index, op, data))
        last[index] = max(last.get(index, -1), position)
    outputs = set(graph.outputs)

    def value(index: int) -> str:
        if graph.values[index].kind == CONSTANT:
            scope[f"c{index}"] = graph.values[index].data
            return f"c{index}"
        return f"v{index}"

    def render(arg: Any) -> str:
        kind = type(arg)
        if kind is Ref:
            return value(arg.index)
        if isinstance(arg, Sym):
            return f"s[{slots[id(arg)]}]"
        if kind is tuple:
            return "(" + "".join(f"{render(a)}, " for a in arg) + ")"
        if kind is list:
            return "[" + ", ".join(render(a) for a in arg) + "]"
        if kind is slice:
            return f"slice({render(arg.start)}, {render(arg.stop)}, {render(arg.step)})"
        if arg is None or kind is bool or kind is int or kind is str:
            return repr(arg)
        constant = f"k{len(scope)}"
        scope[constant] = arg
        return constant

    def target(result: Any) -> str:
        if type(result) is Ref:
            return f"v{result.index}" if result.index in last or result.index in outputs else "_"
        if result is None:
            return "_"
        return "(" + "".join(f"{target(r)}, " for r in result) + ")"

    lines = [f"def {name}(inputs, s):"]
    inputs = [f"v{i}" for i in graph.inputs]
    if inputs:
        lines.append(f"    {''.join(f'{v}, ' for v in inputs)}= inputs")
    scope["B"] = graph.backend

    def emit_checks(position: int) -> None:
        for index, check in checks.get(position, ()):
            name = f"check{len(scope)}"
            scope[name] = check
            lines.append(f"    {name}(B, {value(index)})")
        for index, op, data in host_reads.get(position, ()):  # the rest was recorded for it
            name = f"read{len(scope)}"
            scope[name] = _same_read(getattr(graph.backend, op), data)
            scope["SPLIT"] = SPLIT
            lines.append(f"    if not {name}({value(index)}): return SPLIT")

    runs = {run.start: run for run in fused_runs(graph)} if fuse else {}
    if runs:
        scope["mat"] = materialize
    skip_to = 0
    for position, node in enumerate(graph.nodes):
        if position < skip_to:
            continue
        emit_checks(position)
        fused = runs.get(position)
        if fused is not None:  # one kernel for the run; its other values are never written
            kernel = f"fused{position}"
            scope[kernel] = fused.kernel
            outs = "".join(f"v{i}, " for i in fused.outputs)
            reads = ", ".join(f"mat({value(i)})" for i in fused.inputs)
            lines.append(f"    ({outs}) = {kernel}([{reads}], "
                         f"[{', '.join(render(a) for a in fused.scalars)}])")
            dead = [f"v{i}" for i in fused.inputs
                    if fused.start <= last.get(i, -1) < fused.stop
                    and i not in outputs and graph.values[i].kind != CONSTANT]
            if dead:
                lines.append(f"    del {', '.join(dead)}")
            skip_to = fused.stop
            continue
        op = f"op_{node.op}"
        scope[op] = getattr(graph.backend, node.op)
        args = [render(a) for a in node.args]
        args += [f"{k}={render(v)}" for k, v in node.kwargs.items()]
        lines.append(f"    {target(node.result)} = {op}({', '.join(args)})")
        dead = [f"v{i}" for i in node.inputs if last.get(i) == position and i not in outputs
                and graph.values[i].kind != CONSTANT]
        if dead:
            lines.append(f"    del {', '.join(dict.fromkeys(dead))}")
    emit_checks(len(graph.nodes))
    lines.append(f"    return [{', '.join(value(i) for i in graph.outputs)}]")
    source = "\n".join(lines) + "\n"
    filename = f"<bp.compile {name}>"
    exec(builtins.compile(source, filename, "exec"), scope)  # our own generated code
    run: Callable[..., Any] = scope[name]
    return run


#: What a replay returns where a value it reads on the host differs from the recording's:
#: the Python code after that read was recorded for the other value (``Graph.host_reads``).
SPLIT = object()

#: How many times a graph's host reads may differ from the recording's before its signature
#: runs eagerly (each time the replay up to the read was work thrown away).
SPLIT_MISSES = 2


def splittable(graph: Graph) -> bool:
    """Whether a replay may read ``graph``'s host reads again and stop at one that differs:
    reads of float, int or bool values (a quantized one's data is no plain array), with no
    random op before the last read (a stopped replay would have advanced the generator, and
    the eager run that follows would draw other values than eager alone)."""
    if not graph.host_reads:
        return True
    if any(op.endswith("_into_data") and op.startswith("q_")
           for _position, _index, op, _data in graph.host_reads):
        return False
    end = max(position for position, _index, _op, _data in graph.host_reads)
    return not any("random" in node.op for node in graph.nodes[:end])


def _same_read(read: Callable[[Any], Any], data: Any) -> Callable[[Any], bool]:
    """Whether ``read(primitive)`` gives what the recording read (``data``): the same dtype,
    shape and bytes, so NaN equals NaN and ``-0.0`` is not ``0.0``, as Python would branch."""
    recorded = np.asarray(data.array)
    dtype, shape, raw = recorded.dtype, recorded.shape, recorded.tobytes()

    def same(primitive: Any) -> bool:
        now = np.asarray(read(primitive).array)
        return now.dtype == dtype and now.shape == shape and now.tobytes() == raw

    return same


def plain_value(arg: Any) -> Any:
    """An op argument with each symbolic scalar replaced by its plain value."""
    if isinstance(arg, Sym):
        return arg.value
    kind = type(arg)
    if kind is tuple or kind is list:
        return kind(plain_value(a) for a in arg)
    if kind is slice:
        return slice(plain_value(arg.start), plain_value(arg.stop), plain_value(arg.step))
    if kind is dict:
        return {k: plain_value(v) for k, v in arg.items()}
    return arg


def lower_args(args: tuple[Any, ...], kwargs: dict[str, Any]
           ) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """What B runs a recorded call with: plain numbers for symbolic scalars (NumPy would
    take a ``float`` subclass as a float64 operand)."""
    return tuple(plain_value(a) for a in args), {k: plain_value(v) for k, v in kwargs.items()}


def collect_syms(args: Any, found: list[Sym]) -> None:
    """Collect the symbolic scalars in a node's arguments."""
    if isinstance(args, Sym):
        found.append(args)
    elif isinstance(args, tuple | list):
        for a in args:
            collect_syms(a, found)
    elif isinstance(args, slice):
        collect_syms((args.start, args.stop, args.step), found)
    elif isinstance(args, dict):
        for a in args.values():
            collect_syms(a, found)
