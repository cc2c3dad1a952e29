"""Checkpoint strategies: what a recorded op keeps for its backward step.

``NoCheckpointing`` saves exactly what each rule reads. ``BalancedCheckpointing`` keeps the
outputs of compute-bound ops (matmul, conv...) and saves *no* tensor computed by a memory-bound
op (elementwise, activations, reductions, layout): such values are referenced through their
graph node and recomputed during backward by the op's retro-forward, each at most once per
pass, and dropped as soon as the last step that reads them has run.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar

from burnpy.autodiff.graph import Node, Op
from burnpy.autodiff.tensor import AutodiffTensor

#: ``fetch(node) -> (inputs, output)``: the saved values a node's rule reads.
Fetch = Callable[[Node], tuple[Any, Any]]


def _link(tensors: tuple[AutodiffTensor, ...]) -> tuple[tuple[Node | None, ...], int]:
    """The parents of a new node and its depth (1 + the deepest tracked parent's)."""
    if len(tensors) == 1:
        node = tensors[0].node
        return (node,), node.depth + 1  # type: ignore[union-attr]
    if len(tensors) == 2:
        a, b = tensors[0].node, tensors[1].node
        if a is None:
            return (a, b), b.depth + 1  # type: ignore[union-attr]
        if b is None or a.depth > b.depth:
            return (a, b), a.depth + 1
        return (a, b), b.depth + 1
    parents = tuple([t.node for t in tensors])
    depth = 0
    for parent in parents:
        if parent is not None and parent.depth >= depth:
            depth = parent.depth + 1
    return parents, depth


class CheckpointStrategy(ABC):
    """How ops are recorded (``record``) and how saved values come back in backward
    (``fetcher``). Used as a type parameter: ``Autodiff[B, BalancedCheckpointing]``; a
    strategy subclass implements both static methods (declared here by signature).
    ``label`` names the strategy in the backend's ``name()``."""

    label: ClassVar[str] = ""

    def __new__(cls, *args: Any, **kwargs: Any) -> CheckpointStrategy:
        raise TypeError(f"{cls.__name__} is a strategy type; pass the class, never an instance")

    @staticmethod
    @abstractmethod
    def record(op: Op, out: Any, tensors: tuple[AutodiffTensor, ...],
               params: tuple[Any, ...]) -> AutodiffTensor:
        """Wrap ``out`` (the inner result of ``op`` on ``tensors``, at least one of them
        tracked) in a tracked tensor whose node saves what backward needs."""

    @staticmethod
    @abstractmethod
    def fetcher(B: Any, order: list[Node]) -> Fetch | None:  # noqa: N803
        """The saved-value accessor of one backward pass over ``order``; None when nodes hold
        their saved values directly."""


class NoCheckpointing(CheckpointStrategy):
    """Save every value a rule reads at record time (fastest backward, most memory)."""

    label = "none"

    @staticmethod
    def record(op: Op, out: Any, tensors: tuple[AutodiffTensor, ...],
               params: tuple[Any, ...]) -> AutodiffTensor:
        parents, depth = _link(tensors)
        inputs = tuple([t.primitive for t in tensors]) if op.saves_inputs else None
        return AutodiffTensor(out, Node(op, parents, inputs, out if op.saves_output else None,
                                        params, out.shape, depth))

    @staticmethod
    def fetcher(B: Any, order: list[Node]) -> Fetch | None:  # noqa: N803
        return None


def _source(t: AutodiffTensor) -> Any:
    """What a balanced node keeps for one input: the producing node when the input is an
    intermediate result (kept by a compute-bound node, or recomputable), else the primitive
    itself (a leaf or a constant: held by its owner anyway, or needed as is)."""
    node = t.node
    return node if node is not None and node.op is not None else t.primitive


class BalancedCheckpointing(CheckpointStrategy):
    """Keep compute-bound outputs; recompute memory-bound ones in backward (retro-forward)."""

    label = "balanced"

    @staticmethod
    def record(op: Op, out: Any, tensors: tuple[AutodiffTensor, ...],
               params: tuple[Any, ...]) -> AutodiffTensor:
        parents, depth = _link(tensors)
        if op.compute_bound:
            sources = tuple([_source(t) for t in tensors]) if op.saves_inputs else None
            node = Node(op, parents, sources, out, params, out.shape, depth)
        else:
            node = Node(op, parents, tuple([_source(t) for t in tensors]), None, params,
                        out.shape, depth)
        return AutodiffTensor(out, node)

    @staticmethod
    def fetcher(B: Any, order: list[Node]) -> Fetch | None:  # noqa: N803
        return _Recompute(B, order).fetch


class _Recompute:
    """The retro-forward cache of one backward pass.

    ``remaining[n]`` counts the reads of memory-bound node ``n``'s output still to come (by its
    own rule, its children's rules and its children's recomputations); a recomputed output
    stays cached until that count reaches zero, so each is computed once and freed early.
    """

    __slots__ = ("B", "cache", "remaining")

    def __init__(self, B: Any, order: list[Node]) -> None:  # noqa: N803
        self.B = B
        self.cache: dict[Node, Any] = {}
        remaining: dict[Node, int] = {}
        for node in order:  # children first: a node's count is final when it is reached
            op = node.op
            if op is None:
                continue
            if op.saves_output and node.output is None:
                remaining[node] = remaining.get(node, 0) + 1
            reads = int(op.saves_inputs) + int(node.output is None and
                                               remaining.get(node, 0) > 0)
            if reads and node.inputs is not None:
                for src in node.inputs:
                    if type(src) is Node and src.output is None:
                        remaining[src] = remaining.get(src, 0) + reads
        self.remaining = remaining

    def fetch(self, node: Node) -> tuple[Any, Any]:
        """The values ``node``'s rule reads, recomputed where the node did not keep them."""
        op: Op = node.op  # type: ignore[assignment]
        inputs = None
        if op.saves_inputs:
            inputs = tuple([self._take(s) for s in node.inputs])
        output = node.output
        if output is None and op.saves_output:
            output = self._take(node)
        return inputs, output

    def _take(self, src: Any) -> Any:
        """One read of a saved value: a primitive as is, a node's output kept or recomputed."""
        if type(src) is not Node:
            return src
        if src.output is not None:
            return src.output
        value = self.cache.get(src)
        if value is None:
            self._recompute(src)
            value = self.cache[src]
        left = self.remaining[src] - 1
        if left:
            self.remaining[src] = left
        else:
            del self.remaining[src]
            del self.cache[src]
        return value

    def _recompute(self, target: Node) -> None:
        """Run the retro-forwards ``target`` depends on, deepest first (an explicit stack, so
        long chains of memory-bound ops need no recursion)."""
        cache = self.cache
        stack = [target]
        while stack:
            node = stack[-1]
            if node in cache:
                stack.pop()
                continue
            missing = [s for s in node.inputs
                       if type(s) is Node and s.output is None and s not in cache]
            if missing:
                stack.extend(missing)
                continue
            stack.pop()
            op, params = node.op, node.params
            # Only memory-bound nodes (which have a retro-forward) are recomputed.
            assert op is not None and op.forward is not None and params is not None
            cache[node] = op.forward(self.B, tuple([self._take(s) for s in node.inputs]), params)
