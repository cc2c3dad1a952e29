"""The graph a ``Capture(B)`` recording builds: protocol op calls in program order over values.

A value is a graph input, a constant (a tensor the recording met before any recorded op made
it: a parameter, a buffer, data uploaded from the host) or an output of a recorded node; it is
named by its index in ``Graph.values``. A node keeps its op's arguments as they were passed,
each tensor replaced by the ``Ref`` of its value, so ``Graph.replay`` runs the same calls of B
again on new inputs, with no Tensor, Autodiff or module code in between.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from burnpy.backend.errors import InvalidArgumentError
from burnpy.ir.desc import TensorDesc

#: The kinds of value: given to the recording, met before being made, made by a node.
INPUT, CONSTANT, NODE = "input", "constant", "node"


class Ref:
    """A tensor argument or result of a node: the index of its value in ``Graph.values``."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index

    def __repr__(self) -> str:
        return f"%{self.index}"


class Value:
    """One tensor of the graph: its ``kind`` (``INPUT``, ``CONSTANT``, ``NODE``), its shape and
    dtype, and for a constant its primitive (``data``), kept for replay and export."""

    __slots__ = ("data", "desc", "index", "kind", "producer")

    def __init__(self, index: int, kind: str, desc: TensorDesc, data: Any = None,
                 producer: int = -1) -> None:
        self.index = index
        self.kind = kind
        self.desc = desc
        self.data = data
        #: The position in ``Graph.nodes`` of the node making it (-1 for inputs and constants).
        self.producer = producer

    def __repr__(self) -> str:
        return f"%{self.index}: {self.kind} {self.desc}"


class Node:
    """One recorded protocol op call: ``op`` (e.g. ``"float_matmul"``), its positional and
    keyword arguments with ``Ref``s in place of tensors, the values it reads (``inputs``) and
    makes (``outputs``), and its result's structure (a ``Ref``, or a tuple/list of them)."""

    __slots__ = ("args", "inputs", "kwargs", "op", "outputs", "result")

    def __init__(self, op: str, args: tuple[Any, ...], kwargs: dict[str, Any],
                 inputs: tuple[int, ...], outputs: tuple[int, ...], result: Any) -> None:
        self.op = op
        self.args = args
        self.kwargs = kwargs
        self.inputs = inputs
        self.outputs = outputs
        self.result = result

    def __repr__(self) -> str:
        args = [repr(a) for a in self.args] + [f"{k}={v!r}" for k, v in self.kwargs.items()]
        outs = ", ".join(f"%{i}" for i in self.outputs)
        return f"{outs} = {self.op}({', '.join(args)})"


class Graph:
    """A recording of protocol op calls on one backend (``backend``, the inner backend B).

    ``values`` are every tensor met, ``nodes`` the calls in program order, ``inputs`` and
    ``outputs`` the indices of the graph's inputs and results (``CaptureBackend.set_outputs``),
    and
    ``host_reads`` the values read on the host while recording (``(node position, value,
    op, data)``: before the node at that position, ``op`` (``float_into_data``...) read the
    value as ``data``; a compiled replay reads it again there and goes on only if it reads
    the same, the Python code after the read having been recorded for that value).
    """

    __slots__ = ("_plan", "backend", "checks", "host_reads", "inputs", "nodes", "outputs",
                 "shapes", "specialized", "values")

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.values: list[Value] = []
        self.nodes: list[Node] = []
        self.inputs: list[int] = []
        self.outputs: list[int] = []
        self.host_reads: list[tuple[int, int, str, Any]] = []
        #: Validity checks a replay runs again, ``(node position, value, check)``: before the
        #: node at that position (or at the end), ``check(backend, primitive)`` raises on bad
        #: values (``capture.check_values``).
        self.checks: list[tuple[int, int, Callable[[Any, Any], object]]] = []
        #: Values whose contents the recording baked in, read on the host outside the
        #: recorded ops (``capture.specialize``): a replay is valid only on these very
        #: primitives, which B never writes in place.
        self.specialized: list[int] = []
        #: The symbolic shapes of the values a dynamic recording gave symbolic dims, by index
        #: (``burnpy.capture.dynamic``; their descs keep the recorded plain shapes).
        self.shapes: dict[int, tuple[Any, ...]] = {}
        self._plan: list[_Step] | None = None

    def __repr__(self) -> str:
        lines = [f"graph({', '.join(f'%{i}: {self.values[i].desc}' for i in self.inputs)})"]
        lines += [f"  {node!r}" for node in self.nodes]
        lines.append(f"  return {', '.join(f'%{i}' for i in self.outputs)}")
        return "\n".join(lines)

    def constants(self) -> list[Value]:
        """The constant values (parameters, buffers, host data), in the order first met."""
        return [v for v in self.values if v.kind == CONSTANT]

    def replay(self, inputs: Sequence[Any]) -> list[Any]:
        """Run the recorded calls again on B with ``inputs`` (B's primitives, in the order of
        ``self.inputs``; same shapes and dtypes as recorded), returning the output primitives.

        Each node's op is B's own, looked up once, on the first replay, with where its
        arguments come from (the graph must not change after that). Constants are the
        recorded primitives themselves, so a replay reads their current values.
        """
        if len(inputs) != len(self.inputs):
            raise InvalidArgumentError(f"Graph.replay: the graph takes {len(self.inputs)} "
                                       f"input(s), got {len(inputs)}")
        plan = self._plan
        if plan is None:
            plan = self._plan = [_Step(self.backend, node) for node in self.nodes]
        env: list[Any] = [v.data for v in self.values]
        for index, value in zip(self.inputs, inputs, strict=True):
            env[index] = value
        checks: dict[int, list[tuple[int, Callable[[Any, Any], object]]]] = {}
        for position, index, check in self.checks:
            checks.setdefault(position, []).append((index, check))
        for position, step in enumerate(plan):
            for index, check in checks.get(position, ()):
                check(self.backend, env[index])
            if step.nested:
                args = [_bind(a, env) for a in step.args]
                kwargs = {k: _bind(v, env) for k, v in step.kwargs.items()}
            else:
                args = list(step.args)
                for position, index in step.slots:
                    args[position] = env[index]
                kwargs = step.kwargs
            result = step.op(*args, **kwargs)
            if step.out >= 0:
                env[step.out] = result
            else:
                _store(step.result, result, env)
        for index, check in checks.get(len(plan), ()):
            check(self.backend, env[index])
        return [env[i] for i in self.outputs]


class _Step:
    """A node as a replay runs it: B's op, and for the common call (tensors as top-level
    positional arguments, one tensor out) the argument positions to fill and the output's
    value index; ``nested`` sends any other call through the general ``_bind``."""

    __slots__ = ("args", "kwargs", "nested", "op", "out", "result", "slots")

    def __init__(self, backend: Any, node: Node) -> None:
        self.op: Callable[..., Any] = getattr(backend, node.op)
        self.args = node.args
        self.kwargs = node.kwargs
        self.result = node.result
        self.slots = [(p, a.index) for p, a in enumerate(node.args) if type(a) is Ref]
        self.nested = any(_holds_ref(a) for a in node.args if type(a) is not Ref) or any(
            _holds_ref(v) for v in node.kwargs.values())
        self.out = node.result.index if type(node.result) is Ref else -1


def _holds_ref(template: Any) -> bool:
    """Whether an argument is, or holds (in tuples and lists), a ``Ref``."""
    kind = type(template)
    if kind is Ref:
        return True
    return (kind is tuple or kind is list) and any(_holds_ref(t) for t in template)


def _bind(template: Any, env: list[Any]) -> Any:
    """An argument with each ``Ref`` replaced by its value's primitive in ``env``."""
    kind = type(template)
    if kind is Ref:
        return env[template.index]
    if kind is tuple or kind is list:
        return kind(_bind(t, env) for t in template)
    return template


def _store(template: Any, result: Any, env: list[Any]) -> None:
    """Put each tensor of ``result`` where the node's result ``template`` names it."""
    kind = type(template)
    if kind is Ref:
        env[template.index] = result
    elif kind is tuple or kind is list:
        for t, r in zip(template, result, strict=True):
            _store(t, r, env)
