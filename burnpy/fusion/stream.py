"""The per-device stream of recorded ops, cut into fused groups and run when a value is needed.

``flush`` drops the ops no live handle needs, cuts the rest into groups (ops of one broadcast
shape, in order, a reduction closing its group; groups of other shapes stay open side by side,
and an op joins an open group whenever that makes no cycle between groups; an opaque op,
``burnpy.fusion.lazy``, is a group of its own), and runs the groups in dependency order:
through the inner backend's fuser, whose kernels are cached by the group's structure, or op
by op on the inner backend when there is no kernel.
"""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from burnpy.backend.dtype import DType
from burnpy.fusion.fuser import FusedKernel, Fuser
from burnpy.fusion.tensor import FusionTensor
from burnpy.ir.desc import TensorDesc
from burnpy.ir.fused import FusedGroup, FusedOp, Reduction, Ref

_DTYPES: dict[Any, DType] = {}


def ir_dtype(dtype: Any) -> DType:
    """The ``DType`` of an inner primitive's dtype (a NumPy dtype or a DType), cached."""
    found = _DTYPES.get(dtype)
    if found is None:
        found = _DTYPES[dtype] = DType.of(dtype)
    return found


@runtime_checkable
class BatchFuser(Protocol):
    """A fuser that also compiles independent groups into one kernel (see ``fuser``)."""

    def compile_batch(self, groups: tuple[FusedGroup, ...]) -> FusedKernel | None:
        """One kernel for ``groups``: all their inputs and scalars in, all outputs out."""
        ...


@runtime_checkable
class MatmulFuser(Protocol):
    """A fuser that also runs a group as a matmul's epilogue (see ``fuser``)."""

    def compile_matmul(self, group: FusedGroup, operand: int) -> FusedKernel | None:
        """One kernel for a product and ``group``, which reads it as input ``operand``."""
        ...


@dataclass
class FusionStats:
    """What a Fusion backend did: fused kernel launches, kernels compiled, plan-cache hits,
    ops run one by one on the inner backend inside a group (``fallback_ops``) and ops run
    eagerly because they are not fusable (``eager_ops``)."""

    kernels: int = 0
    compiles: int = 0
    cache_hits: int = 0
    fallback_ops: int = 0
    eager_ops: int = 0

    def reset(self) -> None:
        """Zero every counter."""
        self.kernels = self.compiles = self.cache_hits = self.fallback_ops = self.eager_ops = 0


class LazyNode:
    """One recorded op: the protocol op ``name`` called with ``args`` (tensors replaced by
    their pending ``LazyNode`` or their materialized ``FusionTensor``), its vocabulary form
    (``op`` over ``operands``, positions in ``args``; ``dim`` for a reduction; ``op`` None for
    an opaque op, run alone by B), and its result's shape and dtype. ``handle`` is the handle
    it will fill, which the user still holds unless the node's reference is the only one
    (``_held``); ``stream`` is the stream it waits in."""

    __slots__ = ("args", "dim", "dtype", "escapes", "group", "handle", "name", "op",
                 "operands", "reduces", "scalar_dtype", "shape", "stream", "used", "value")

    def __init__(self, stream: Stream, name: str, op: str | None, args: tuple[Any, ...],
                 operands: tuple[int, ...], shape: tuple[int, ...], dtype: DType,
                 scalar_dtype: DType, reduces: bool, dim: int | None) -> None:
        self.stream = stream
        self.name = name
        self.op = op
        self.args = args
        self.operands = operands
        self.shape = shape
        self.dtype = dtype
        self.scalar_dtype = scalar_dtype
        self.reduces = reduces
        self.dim = dim
        self.handle: FusionTensor | None = None
        self.used = False
        self.escapes = False
        self.group: _Group | None = None
        self.value: Any = None

    @property
    def group_shape(self) -> tuple[int, ...]:
        """The shape of the loop this op runs in: its own, or its input's for a reduction."""
        return self.args[self.operands[0]].shape if self.reduces else self.shape


class _Group:
    """Ops of one loop shape, in order (or one opaque op); ``deps`` holds the groups it reads.
    ``product`` is the matmul whose kernel runs the group as its epilogue, and
    ``fused_into`` (on that matmul's own group) the group it runs with."""

    __slots__ = ("deps", "fused_into", "key", "nodes", "product")

    def __init__(self, key: tuple[int, ...] | None) -> None:
        self.key = key
        self.nodes: list[LazyNode] = []
        self.deps: set[_Group] = set()
        self.product: LazyNode | None = None
        self.fused_into: _Group | None = None


class Stream:
    """The pending ops of one device of one Fusion backend."""

    __slots__ = ("batcher", "fuser", "inner", "lock", "nodes", "plans", "products", "signatures",
                 "stats")

    def __init__(self, inner: Any, fuser: Fuser | None, plans: dict[FusedGroup, Any],
                 stats: FusionStats) -> None:
        self.inner = inner
        self.fuser = fuser
        #: The fuser again where it compiles batches of groups, and matmul epilogues.
        self.batcher = fuser if isinstance(fuser, BatchFuser) else None
        self.products = fuser if isinstance(fuser, MatmulFuser) else None
        self.plans = plans
        self.stats = stats
        self.nodes: list[LazyNode] = []
        self.lock = threading.RLock()
        #: The plans again, keyed by ``_signature``: cheap to build and hash, so a replayed
        #: group skips building its ``FusedGroup``.
        self.signatures: dict[tuple[Any, ...], FusedKernel | None] = {}

    def push(self, node: LazyNode, handle_dtype: Any, device: Any) -> FusionTensor:
        """Append ``node`` and give back the pending handle of its value (``handle_dtype``
        in the inner primitives' form)."""
        handle = node.handle = FusionTensor(node.shape, handle_dtype, device, None, node)
        self.nodes.append(node)
        return handle

    def flush(self) -> None:
        """Compute every pending op that a live handle (or a later op) still needs."""
        with self.lock:
            nodes, self.nodes = self.nodes, []
            if not nodes:
                return
            live = _live(nodes)
            groups = _ordered(_groups(live))
            try:
                if self.products is not None:
                    _find_epilogues(groups)
                if self.batcher is not None:
                    for level in _levels(groups):
                        self._run_level(level)
                else:
                    for group in groups:
                        self._run(group)
            finally:  # break the node <-> group, node <-> handle (of a node that did not run)
                #       and group <-> group (an epilogue's) cycles: the values they hold free
                #       at once, not at the next GC collection
                for node in live:
                    node.group = node.handle = None
                for group in groups:
                    group.deps.clear()
                    group.fused_into = group.product = None

    def _run_level(self, level: list[_Group]) -> None:
        """Run groups that do not read each other: the fusable ones as few kernels as the
        fuser's ``max_buffers`` allows (``compile_batch``) and each opaque op alone."""
        limit: int = getattr(self.fuser, "max_buffers", 1 << 30)
        batch: list[tuple[_Group, Signed]] = []
        used = 0
        for group in level:
            if group.fused_into is not None:
                continue  # runs inside its reader's kernel
            if group.key is None or group.product is not None:
                self._run(group)
                continue
            signed = _signature(group)
            size = len(signed[1]) + len(signed[3])
            if size > limit:
                self._run(group, signed)
                continue
            if used + size > limit:
                self._run_batch(batch)
                batch, used = [], 0
            batch.append((group, signed))
            used += size
        self._run_batch(batch)

    def _run_batch(self, batch: list[tuple[_Group, Signed]]) -> None:
        """Run ``batch``'s groups as one kernel (one alone as ``_run`` does)."""
        batcher = self.batcher
        if len(batch) < 2 or batcher is None:
            for group, signed in batch:
                self._run(group, signed)
            return
        signature = tuple(signed[0] for _, signed in batch)
        try:
            kernel = self.signatures[signature]
            self.stats.cache_hits += 1
        except KeyError:
            kernel = batcher.compile_batch(tuple(
                _describe(group, {id(node) for node in signed[3]}) for group, signed in batch))
            self.stats.compiles += 1
            self.signatures[signature] = kernel
        if kernel is not None:
            try:
                results = kernel([x for _, signed in batch for x in signed[1]],
                                 [x for _, signed in batch for x in signed[2]])
            except Exception:  # each group alone: its own kernel, or its ops one by one
                kernel = None
        if kernel is None:
            for group, signed in batch:
                self._run(group, signed)
            return
        self.stats.kernels += 1
        for node, value in zip([n for _, signed in batch for n in signed[3]], results,
                               strict=True):
            _store(node, value)

    def _run(self, group: _Group, signed: Signed | None = None) -> None:
        """Run ``group``: an opaque op with B's own op, a group through the fuser's kernel
        (``signed`` is its ``_signature`` when already built), or op by op."""
        nodes = group.nodes
        if group.product is not None:
            self._run_epilogue(group, group.product)
            return
        if group.key is None:  # an opaque op: B's own, as if it had run when recorded
            self.stats.eager_ops += 1
            self._call(nodes[0])
            return
        if self.fuser is None or len(nodes) < 2:
            self._one_by_one(nodes)
            return
        signature, inputs, scalars, outputs = signed or _signature(group)
        if len(inputs) + len(outputs) > getattr(self.fuser, "max_buffers", len(nodes) << 8):
            self._split(group)
            return
        try:
            kernel = self.signatures[signature]
            self.stats.cache_hits += 1
        except KeyError:
            fused = _describe(group, {id(node) for node in outputs})
            plans = self.plans
            if fused in plans:
                kernel = plans[fused]
                self.stats.cache_hits += 1
            else:
                kernel = plans[fused] = self.fuser.compile(fused)
                self.stats.compiles += 1
            self.signatures[signature] = kernel
        if kernel is None:
            self._one_by_one(nodes)
            return
        try:
            results = kernel(inputs, scalars)
        except Exception:  # rerun op by op: B's own op raises, naming itself
            self._one_by_one(nodes)
            return
        self.stats.kernels += 1
        for node, value in zip(outputs, results, strict=True):
            _store(node, value)

    def _run_epilogue(self, group: _Group, product: LazyNode) -> None:
        """Run matmul ``product`` and ``group``, which alone reads it, as one kernel; else
        the matmul alone, then the group."""
        group.product = None
        products = self.products
        if products is None:
            self.stats.eager_ops += 1
            self._call(product)
            self._run(group)
            return
        signature, inputs, scalars, outputs = _signature(group)
        operand = _input_position(group, product)
        key = ("matmul", signature, operand)
        try:
            kernel = self.signatures[key]
            self.stats.cache_hits += 1
        except KeyError:
            fused = _describe(group, {id(node) for node in outputs})
            kernel = products.compile_matmul(fused, operand)
            self.stats.compiles += 1
            self.signatures[key] = kernel
        if kernel is not None:
            lhs, rhs = (_resolve(a) for a in product.args)
            try:
                results = kernel([lhs, rhs, *inputs[:operand], *inputs[operand + 1:]], scalars)
            except Exception:  # the matmul alone, then the group: B names its own errors
                kernel = None
        if kernel is None:
            self.stats.eager_ops += 1
            self._call(product)
            self._run(group)
            return
        self.stats.kernels += 1
        for node, value in zip(outputs, results, strict=True):
            _store(node, value)

    def _split(self, group: _Group) -> None:
        """Run ``group`` as two groups, its first half of ops and then the rest: it reads and
        writes more tensors than one kernel of the fuser may bind (``max_buffers``)."""
        half = len(group.nodes) // 2
        first, second = _Group(group.key), _Group(group.key)
        first.nodes, second.nodes = group.nodes[:half], group.nodes[half:]
        for node in first.nodes:
            node.group = first
        for node in second.nodes:
            node.group = second
            for a in node.args:
                if type(a) is LazyNode and a.group is first:
                    a.escapes = True
        self._run(first)
        self._run(second)

    def _one_by_one(self, nodes: list[LazyNode]) -> None:
        """Run ``nodes`` in order with the inner backend's own ops."""
        self.stats.fallback_ops += len(nodes)
        for node in nodes:
            self._call(node)

    def _call(self, node: LazyNode) -> None:
        """Run ``node`` with the inner backend's own op; an error names the op."""
        args = tuple(_resolve(a) for a in node.args)
        try:
            value = getattr(self.inner, node.name)(*args)
        except Exception as error:
            error.add_note(f"raised by {node.name} on {_shapes(node.args)}, an op Fusion "
                           "recorded and ran when its value was needed")
            raise
        _store(node, value)


def _shapes(args: tuple[Any, ...]) -> str:
    return ", ".join(str(list(a.shape)) if isinstance(a, LazyNode | FusionTensor) else repr(a)
                     for a in args)


def _resolve(arg: Any) -> Any:
    """An arg of a recorded op as the inner backend takes it."""
    if isinstance(arg, LazyNode):
        return arg.value
    if isinstance(arg, FusionTensor):
        return arg.value
    return arg


def _store(node: LazyNode, value: Any) -> None:
    """Give ``node``'s value to its handle (if any) and to the later ops reading it."""
    node.value = value
    handle = node.handle
    if handle is not None:
        handle.value = value
        handle.node = node.handle = None


def _held(node: LazyNode) -> bool:
    """Whether anything but ``node`` holds its handle: the user, an autodiff graph, a later
    call. A node refers to its handle strongly (a weak reference would be one more object
    per op for the garbage collector to track), so a handle whose only reference is the
    node's is one the user dropped."""
    return node.handle is not None and _references(node) > _NODE_ONLY


def _references(node: LazyNode) -> int:
    """``sys.getrefcount`` of ``node``'s handle, counted the same way every time."""
    handle = node.handle
    return sys.getrefcount(handle)


def _node_only() -> int:
    """``_references`` of a handle that only its node holds, measured once on this
    interpreter (which may count the references of a call's frame its own way)."""
    probe = LazyNode(None, "probe", None, (), (), (), DType.float32,  # type: ignore[arg-type]
                     DType.float32, False, None)
    probe.handle = FusionTensor((), None, None, None, probe)  # type: ignore[arg-type]
    count = _references(probe)
    probe.handle = None
    return count


#: ``_references`` of a handle held by its node alone.
_NODE_ONLY = _node_only()


def _live(nodes: list[LazyNode]) -> list[LazyNode]:
    """The nodes whose value a live handle or a live later node needs, in order."""
    live: list[LazyNode] = []
    for node in reversed(nodes):
        if not node.used and not _held(node):
            node.handle = None  # the dropped handle (and its link to the node) goes now
            continue
        live.append(node)
        for a in node.args:
            if isinstance(a, LazyNode):
                a.used = True
    live.reverse()
    return live


def _groups(nodes: list[LazyNode]) -> list[_Group]:
    """Cut ``nodes`` into groups: one open group per loop shape, which a node joins unless a
    group it reads depends on that group (a cycle: the open group is closed and a new one
    starts); a reduction closes its group; an opaque node is a group of its own."""
    groups: list[_Group] = []
    open_groups: dict[tuple[int, ...], _Group] = {}
    for node in nodes:
        # plain loops: in Python 3.11 a comprehension is a function object per call
        sources: set[_Group | None] = set()
        for a in node.args:
            if type(a) is LazyNode:
                sources.add(a.group)
        if node.op is None:
            group = _Group(None)
        else:
            key = node.group_shape
            found = open_groups.get(key)
            if found is not None:
                for s in sources:
                    if s is not found and s is not None and _reaches(s, found):
                        found = None
                        break
            if found is None:
                found = open_groups[key] = _Group(key)
            group = found
        if group.key is None or not group.nodes:
            groups.append(group)
        for source in sources:
            if source is not None and source is not group:
                group.deps.add(source)
        for a in node.args:
            if type(a) is LazyNode and a.group is not group:
                a.escapes = True
        group.nodes.append(node)
        node.group = group
        if node.reduces and group.key is not None:
            del open_groups[group.key]
    return groups


def _find_epilogues(groups: list[_Group]) -> None:
    """Pair each matmul with the elementwise group (no reduction, the product's shape) that
    is the only reader of its result, which no handle keeps: the matmul's kernel can run the
    group on each result element instead of storing it."""
    products = {id(g.nodes[0]): g for g in groups
                if g.key is None and g.nodes[0].name == "float_matmul"
                and not _held(g.nodes[0])}
    if not products:
        return
    readers: dict[int, set[_Group]] = {}
    for group in groups:
        if group.deps.isdisjoint(products.values()):
            continue
        for node in group.nodes:
            for a in node.args:
                if id(a) in products:
                    readers.setdefault(id(a), set()).add(group)
    for group in groups:
        if group.key is None or group.nodes[-1].reduces:
            continue
        for dep in group.deps:
            product = dep.nodes[0]
            if (id(product) in products and dep.fused_into is None
                    and product.shape == group.key and readers[id(product)] == {group}):
                dep.fused_into, group.product = group, product
                break


def _input_position(group: _Group, target: LazyNode) -> int:
    """The index of ``target`` among ``group``'s inputs, in ``_signature``'s order."""
    seen: dict[int, int] = {}
    locals_ = {id(node) for node in group.nodes}
    for node in group.nodes:
        for position in node.operands:
            a = node.args[position]
            if type(a) is LazyNode or type(a) is FusionTensor:
                if id(a) in locals_ or id(a) in seen:
                    continue
                if a is target:
                    return len(seen)
                seen[id(a)] = len(seen)
    raise ValueError(f"{target.name} is not an input of the group")


def _levels(groups: list[_Group]) -> list[list[_Group]]:
    """``groups`` (in dependency order) by level: a group's level is one more than the
    highest level of the groups it reads, so groups of one level never read each other."""
    depth: dict[_Group, int] = {}
    levels: list[list[_Group]] = []
    for group in groups:
        level = max([depth[d] + 1 for d in group.deps], default=0)
        depth[group] = level
        if level == len(levels):
            levels.append([])
        levels[level].append(group)
    return levels


def _reaches(start: _Group, target: _Group) -> bool:
    """Whether ``start`` reads ``target``, directly or through other groups."""
    stack, seen = [start], {start}
    while stack:
        for dep in stack.pop().deps:
            if dep is target:
                return True
            if dep not in seen:
                seen.add(dep)
                stack.append(dep)
    return False


def _ordered(groups: list[_Group]) -> list[_Group]:
    """``groups`` in an order that runs every group after the groups it reads."""
    order: list[_Group] = []
    done: set[_Group] = set()
    for root in groups:
        if root in done:
            continue
        stack: list[tuple[_Group, list[_Group]]] = [(root, list(root.deps))]
        done.add(root)
        while stack:
            group, pending = stack[-1]
            if pending:
                dep = pending.pop()
                if dep not in done:
                    done.add(dep)
                    stack.append((dep, list(dep.deps)))
                continue
            stack.pop()
            order.append(group)
    return order


#: A group's signature, its inputs, its scalars and the nodes its kernel writes (``_signature``).
Signed = tuple[tuple[Any, ...], list[Any], list[Any], list["LazyNode"]]


def _signature(group: _Group) -> Signed:
    """The group's structure as a flat tuple of cheap values (shapes, op names, NumPy dtypes,
    operand codes; ``DType``s by identity, as they are singletons), its input primitives, its
    scalars, and the nodes whose values its kernel returns, in order. Two groups with equal
    signatures have equal ``FusedGroup``s (``_describe``)."""
    inputs: list[Any] = []
    scalars: list[Any] = []
    out_nodes: list[LazyNode] = []
    signature: list[Any] = [group.key]
    input_index: dict[int, int] = {}
    local_index: dict[int, int] = {}
    for node in group.nodes:
        codes: list[int | None] = []
        args = node.args
        for position in node.operands:
            a = args[position]
            kind = type(a)
            if kind is LazyNode or kind is FusionTensor:
                key = id(a)
                local = local_index.get(key)
                if local is not None:
                    codes.append(local)
                    continue
                index = input_index.get(key)
                if index is None:
                    index = input_index[key] = len(inputs)
                    inputs.append(a.value)
                    signature.append((a.shape, a.dtype if kind is FusionTensor else id(a.dtype)))
                codes.append(-1 - index)
            else:
                codes.append(None)
                scalars.append(a)
        if node.reduces:
            signature.append((node.op, node.dim, id(node.dtype), id(node.scalar_dtype), *codes))
            out_nodes.append(node)
            continue
        local_index[id(node)] = len(local_index)
        written = node.escapes or _held(node)
        if written:
            out_nodes.append(node)
        signature.append((node.op, written, id(node.dtype), id(node.scalar_dtype), *codes))
    return tuple(signature), inputs, scalars, out_nodes


def _describe(group: _Group, written: set[int]) -> FusedGroup:
    """The group's IR: the plan-cache key, and what the fuser compiles. ``written`` holds the
    ids of the nodes ``_signature`` chose to return: deciding again here could disagree with
    it, if a garbage collection in between dropped a handle, and cache a kernel with too few
    outputs under that signature."""
    input_descs: list[TensorDesc] = []
    input_index: dict[int, int] = {}
    scalar_dtypes: list[DType] = []
    local_index: dict[int, int] = {}
    ops: list[FusedOp] = []
    outputs: list[int] = []
    reduction: Reduction | None = None
    if group.key is None:
        raise TypeError(f"{group.nodes[0].name} runs alone: it has no fused form")
    for node in group.nodes:
        op = node.op
        if op is None:
            raise TypeError(f"{node.name} runs alone: it has no fused form")
        refs: list[Ref] = []
        for position in node.operands:
            a = node.args[position]
            if isinstance(a, LazyNode | FusionTensor):
                local = local_index.get(id(a))
                if local is not None:
                    refs.append(Ref("local", local))
                    continue
                index = input_index.get(id(a))
                if index is None:
                    index = input_index[id(a)] = len(input_descs)
                    input_descs.append(TensorDesc(a.shape, ir_dtype(a.dtype) if isinstance(
                        a, FusionTensor) else a.dtype))
                refs.append(Ref("input", index))
            else:
                refs.append(Ref("scalar", len(scalar_dtypes)))
                scalar_dtypes.append(node.scalar_dtype)
        if node.reduces:
            reduction = Reduction(op, refs[0], node.dim, node.shape, node.dtype)
            continue
        local_index[id(node)] = len(ops)
        if id(node) in written:
            outputs.append(len(ops))
        ops.append(FusedOp(op, tuple(refs), node.dtype))
    return FusedGroup(group.key, tuple(input_descs), tuple(scalar_dtypes), tuple(ops),
                      tuple(outputs), reduction)
