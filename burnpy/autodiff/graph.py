"""The gradient graph: ``Op`` (one op's backward rule), ``Node`` and the backward walk.

A node holds plain references to its parents only (child -> parent), so a graph lives exactly
as long as some tensor still reaches it; nothing global points into it. ``run_backward``
visits the nodes reachable from the output in reverse topological order (deepest first),
calls each op's rule, un-broadcasts and accumulates the parents' gradients (the backend's
``add_gradients``), and frees each node's saved state as soon as its rule has run.
"""

from __future__ import annotations

import heapq
import itertools
import operator
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol

from burnpy.autodiff.modes import MODE, check_gradients
from burnpy.backend.errors import AutodiffError

if TYPE_CHECKING:
    from burnpy.autodiff.checkpoint import CheckpointStrategy

Shape = tuple[int, ...]
#: ``rule(B, grad, inputs, output, params, parents) -> one gradient per parent`` (None where
#: the parent is None), written with the inner backend ``B``'s ops only.
BackwardRule = Callable[[Any, Any, Any, Any, tuple[Any, ...], tuple[Any, ...]], tuple[Any, ...]]
#: ``forward(B, inputs, params) -> output``: recomputes a memory-bound op's output.
RetroForward = Callable[[Any, tuple[Any, ...], tuple[Any, ...]], Any]


class Op:
    """What one kind of recorded op needs in backward.

    ``saves_inputs``/``saves_output`` say which values its rule reads; ``compute_bound`` marks
    ops whose output is worth keeping (matmul, conv) rather than recomputing; ``forward`` is
    the retro-forward of memory-bound ops, used by ``BalancedCheckpointing``.
    """

    __slots__ = ("backward", "compute_bound", "forward", "name", "saves_inputs", "saves_output")

    def __init__(self, name: str, backward: BackwardRule, forward: RetroForward | None, *,
                 saves_inputs: bool, saves_output: bool, compute_bound: bool) -> None:
        if forward is None and not compute_bound:
            raise ValueError(f"op {name}: a memory-bound op needs a retro-forward")
        self.name = name
        self.backward = backward
        self.forward = forward
        self.saves_inputs = saves_inputs
        self.saves_output = saves_output
        self.compute_bound = compute_bound

    def __repr__(self) -> str:
        return f"Op({self.name})"


class Node:
    """One tracked tensor in the graph.

    A leaf has ``op`` None and no parents. ``parents`` has one entry per float input of the op
    (None for an untracked input); ``inputs``/``output`` are what the checkpoint strategy saved
    for the rule; ``depth`` is 1 + the deepest parent's, so sorting by it is a topological
    order. ``key`` is set on leaves and retained tensors, whose gradients backward keeps.
    ``parents`` becomes None once a backward pass has consumed the node.
    """

    __slots__ = ("born", "depth", "inputs", "key", "modified", "op", "output", "params",
                 "parents", "shape")

    def __init__(self, op: Op | None, parents: tuple[Node | None, ...] | None, inputs: Any,
                 output: Any, params: tuple[Any, ...] | None, shape: Shape, depth: int) -> None:
        self.op = op
        self.parents = parents
        self.inputs = inputs
        self.output = output
        self.params = params
        self.shape = shape
        self.depth = depth
        self.key: int | None = None
        #: The in-place modification count when recorded, and the last in-place write to this
        #: node's value (its count and a description), if any: see ``mark_modified``.
        self.born = MODIFICATIONS.count
        self.modified: tuple[int, str] | None = None

    def __repr__(self) -> str:
        what = "leaf" if self.op is None else self.op.name
        return f"Node({what}, shape={self.shape}, depth={self.depth})"


class _Modifications:
    """How many in-place writes to tracked values this process has made (torch's version
    counters, as one clock: a node recorded before a write to a value it saved is stale)."""

    count = 0


MODIFICATIONS = _Modifications()


def mark_modified(node: Node, what: str) -> None:
    """Record that the value of ``node`` was overwritten in place by ``what`` (an op and where
    it ran): a node recorded earlier whose rule reads that value then refuses to run."""
    MODIFICATIONS.count += 1
    node.modified = (MODIFICATIONS.count, what)


def _check_saved_values(node: Node, op: Op, parents: tuple[Node | None, ...]) -> None:
    """Raise if ``node``'s rule would read a value overwritten in place after it was saved."""
    if op.saves_output and node.modified is not None:
        raise _stale(op, "its output", node.modified[1])
    if op.saves_inputs:
        for index, parent in enumerate(parents):
            if parent is not None and parent.modified is not None \
                    and parent.modified[0] > node.born:
                raise _stale(op, f"its input {index}", parent.modified[1])


def _stale(op: Op, which: str, what: str) -> AutodiffError:
    return AutodiffError(
        f"backward: {op.name} saved {which} for its gradient, and that tensor was then modified "
        f"in place by {what}; compute the gradient before modifying it, or modify a copy "
        "(t.clone()) instead")


_keys = itertools.count(1)
_keys_lock = threading.Lock()


def new_key() -> int:
    """A process-unique key for a tensor whose gradient backward keeps."""
    with _keys_lock:
        return next(_keys)


def new_leaf(shape: Shape) -> Node:
    """A tracked leaf node (a parameter or input that requires grad)."""
    node = Node(None, (), None, None, (), shape, 0)
    node.key = new_key()
    return node


class OutputGrad:
    """The gradient of output ``index`` of a ``count``-output node (a custom op's): the rule of
    the node standing for that output returns it, and ``run_backward`` gathers them into one
    list per multi-output node, which is the gradient that node's rule receives."""

    __slots__ = ("count", "grad", "index")

    def __init__(self, index: int, count: int, grad: Any) -> None:
        self.index = index
        self.count = count
        self.grad = grad

    def gather(self, grads: list[Any] | None) -> list[Any]:
        """``grads`` (one slot per output; None starts an empty list) with this slot set."""
        if grads is None:
            grads = [None] * self.count
        grads[self.index] = self.grad
        return grads


class _HostTransfers(threading.local):
    """Per-thread count of float values moved between the host and an Autodiff backend."""

    count = 0


#: Bumped by ``AutodiffBackend`` whenever float values leave a tracked backend for the host
#: (``float_into_data``) or enter one from outside its graph (``float_from_data``,
#: ``from_inner``); a custom backward that changes it has left the graph.
HOST_TRANSFERS = _HostTransfers()


def _consumed(node: Node) -> AutodiffError:
    return AutodiffError(
        f"backward: the graph through {node.op.name if node.op else 'a tensor'} "
        f"{node.shape} was already consumed by an earlier backward(), which freed its saved "
        "state; pass retain_graph=True to the first backward() to differentiate a graph twice")


_by_depth = operator.attrgetter("depth")


def reverse_topological(root: Node) -> list[Node]:
    """Every node reachable from ``root``, children before parents (iterative: no recursion
    limit on deep graphs)."""
    if root.parents is None:
        raise _consumed(root)
    order = [root]
    seen = {root}
    stack = [root]
    while stack:
        for parent in stack.pop().parents:  # type: ignore[union-attr]
            if parent is not None and parent not in seen:
                if parent.parents is None:
                    raise _consumed(parent)
                seen.add(parent)
                order.append(parent)
                stack.append(parent)
    order.sort(key=_by_depth, reverse=True)
    return order


def unbroadcast(B: Any, grad: Any, shape: Shape) -> Any:  # noqa: N803 - the backend type
    """``grad`` summed over the dims broadcasting added or stretched, reshaped to ``shape``."""
    gshape = grad.shape
    lead = len(gshape) - len(shape)
    for d in range(len(gshape)):
        if d < lead or (shape[d - lead] == 1 and gshape[d] != 1):
            grad = B.float_sum_dim(grad, d)
    return B.float_reshape(grad, shape)


class LeafHook(Protocol):
    """Told when a hooked leaf's gradient is final during a backward pass (data-parallel
    training starts communicating it then), and once at the end of the pass."""

    def leaf_ready(self, leaf: Node, grad: Any) -> None:
        """``leaf``'s gradient is final (None: the pass gave it none)."""

    def finish(self, grads: dict[Node, Any]) -> None:
        """The pass is done; ``grads`` (the pass's result) may be updated in place."""


#: Leaf nodes whose final gradient a hook wants to see, filled by ``register_leaf_hook``
#: alone. Empty: no cost at all.
_LEAF_HOOKS: dict[Node, LeafHook] = {}


class LeafHookHandle:
    """What ``register_leaf_hook`` returns: ``remove()`` unhooks its leaves (torch's
    ``RemovableHandle``)."""

    __slots__ = ("_hook", "_leaves")

    def __init__(self, hook: LeafHook, leaves: tuple[Node, ...]) -> None:
        self._hook = hook
        self._leaves = leaves

    def remove(self) -> None:
        """Unhook the leaves (again: nothing); a leaf hooked since by another call keeps
        that hook."""
        for leaf in self._leaves:
            if _LEAF_HOOKS.get(leaf) is self._hook:
                del _LEAF_HOOKS[leaf]
        self._leaves = ()


def register_leaf_hook(leaves: Iterable[Node], hook: LeafHook) -> LeafHookHandle:
    """Announce the final gradient of each of ``leaves`` (graph leaves: ``node_of`` a
    parameter) to ``hook.leaf_ready`` during every backward pass reaching it, as early as the
    pass allows, and call ``hook.finish`` at the end of such a pass. A leaf has one hook:
    registering it again replaces the previous one. ``DistributedDataParallel`` starts its
    gradient all-reduces this way. Returns a handle whose ``remove()`` unhooks the leaves."""
    hooked = tuple(leaves)
    for leaf in hooked:
        if leaf.op is not None:
            raise AutodiffError(f"register_leaf_hook: {leaf!r} is not a leaf of the graph (it "
                                "was computed by an op); hook the leaves, such as parameters")
        _LEAF_HOOKS[leaf] = hook
    return LeafHookHandle(hook, hooked)


def _leaves_early(order: list[Node]) -> list[Node]:
    """``order`` rearranged so leaves' gradients become final as early as possible: another
    reverse topological order (Kahn's, over each node's consumers in the pass) that, among
    the nodes whose gradient is complete, runs the shallowest first. Sorting by depth alone
    leaves every parameter's own step (a transpose, depth 1) to the very end."""
    consumers: dict[Node, int] = {}
    for node in order:
        for parent in node.parents or ():
            if parent is not None:
                consumers[parent] = consumers.get(parent, 0) + 1
    heap = [(order[0].depth, 0, order[0])]
    out: list[Node] = []
    tie = itertools.count(1)
    while heap:
        node = heapq.heappop(heap)[2]
        out.append(node)
        for parent in node.parents or ():
            if parent is not None:
                consumers[parent] -= 1
                if consumers[parent] == 0:
                    heapq.heappush(heap, (parent.depth, next(tie), parent))
    return out


def _ready_steps(order: list[Node]) -> dict[int, list[Node]]:
    """For each step of ``order``, the hooked leaves whose gradient is final after it: the
    last step with the leaf as a parent (a root that is itself a leaf: step -1)."""
    last: dict[Node, int] = {}
    if order[0].op is None and order[0] in _LEAF_HOOKS:
        last[order[0]] = -1
    for step, node in enumerate(order):
        if node.op is not None:
            for parent in node.parents:  # type: ignore[union-attr]
                if parent is not None and parent in _LEAF_HOOKS:
                    last[parent] = step
    ready: dict[int, list[Node]] = {}
    for leaf, step in last.items():
        ready.setdefault(step, []).append(leaf)
    return ready


def run_backward(B: Any, root: Node, seed: Any, retain_graph: bool,  # noqa: N803
                 strategy: type[CheckpointStrategy]) -> dict[Node, Any]:
    """Propagate ``seed`` from ``root`` to every reachable node; returns the gradients of the
    leaves and retained nodes, keyed by node. Hooked leaves (``register_leaf_hook``) are announced
    as soon as their gradient is final."""
    order = reverse_topological(root)
    if _LEAF_HOOKS:
        order = _leaves_early(order)
    fetch = strategy.fetcher(B, order)
    grads: dict[Node, Any] = {root: seed}
    modified = MODIFICATIONS.count != 0
    anomaly = MODE.anomaly
    ready = _ready_steps(order) if _LEAF_HOOKS else None
    if ready is not None:
        hooks = {id(_LEAF_HOOKS[leaf]): _LEAF_HOOKS[leaf] for leaves in ready.values()
                 for leaf in leaves}
        _announce(ready.pop(-1, ()), grads)
    for step, node in enumerate(order):
        op = node.op
        if op is None:
            continue
        grad = grads.pop(node, None) if node.key is None else grads.get(node)
        if grad is not None:
            if fetch is None:
                inputs, output = node.inputs, node.output
            else:
                inputs, output = fetch(node)
            parents, params = node.parents, node.params
            assert parents is not None and params is not None  # freed only after this step
            if modified:
                _check_saved_values(node, op, parents)
            parent_grads = op.backward(B, grad, inputs, output, params, parents)
            if anomaly:
                check_gradients(B, node, parent_grads)
            for parent, pgrad in zip(parents, parent_grads, strict=True):
                if parent is None or pgrad is None:  # None: a custom rule's zero gradient
                    continue
                if type(pgrad) is OutputGrad:
                    grads[parent] = pgrad.gather(grads.get(parent))
                    continue
                if pgrad.shape != parent.shape:
                    pgrad = unbroadcast(B, pgrad, parent.shape)
                prev = grads.get(parent)
                grads[parent] = pgrad if prev is None else B.add_gradients(prev, pgrad)
        if not retain_graph:  # free the saved state now: later steps never read it
            node.parents = node.inputs = node.output = node.params = None
        if ready is not None and step in ready:
            _announce(ready.pop(step), grads)
    if ready is not None:
        for hook in hooks.values():
            hook.finish(grads)
    return grads


def _announce(leaves: list[Node] | tuple[()], grads: dict[Node, Any]) -> None:
    for leaf in leaves:
        _LEAF_HOOKS[leaf].leaf_ready(leaf, grads.get(leaf))
