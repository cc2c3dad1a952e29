"""The WGSL fuser of ``WgpuBackend``: one compute shader per fused group (``Fusion(WgpuBackend)``).

A group (``burnpy.ir.FusedGroup``) becomes a WGSL function ``elem(lin)`` that computes every op
of the group for the element at row-major index ``lin`` of the group's shape: it reads the
inputs (each broadcast to the shape in the shader, through its own offset and strides), keeps
the intermediates in registers, writes only the locals named in ``outputs`` and returns the
value the closing reduction folds. Three entry points call it:

- ``map``: one invocation per element (no reduction); on CPU adapters large maps loop over
  several elements per invocation, and maps with 32-bit outputs run as ``vmap``s, each work
  item 4 adjacent elements moved as ``vec4``s;
- ``rows``: one invocation per reduction output, looping over the reduced dim (many outputs);
  on CPU adapters a float32 sum or mean whose outputs lie in adjacent fours runs as ``vrows``,
  each work item 4 outputs folded as ``vec4``s;
- ``tree``: one workgroup per reduction output, a strided loop per invocation and a tree in
  workgroup memory (few outputs, a full reduction).

Values are computed as the unfused kernels compute them (f32 for f16 too, bools as u32 0/1,
the accurate functions of ``kernels.wgsl_math``), a float16 local is rounded to f16 where
it is defined and a float16 group's scalar (an f32 meta word) is kept in f32 or first rounded to
f16 per op (``FusedGroup.rounded_scalars``, torch's rule), so a fused group gives the unfused
backend's results. Float sums accumulate
with Kahan compensation in f32. Pipelines are cached by the runtime under the group and the
inputs' layout classes (contiguous, one element, general), so a group compiles once per
layout and every later call is one dispatch.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, NamedTuple

from burnpy.backend.device import Device
from burnpy.backend.dtype import DType
from burnpy.fusion.fuser import FusedKernel
from burnpy.ir.elementwise import Forms
from burnpy.ir.fused import ELEMENTWISE, FusedGroup, FusedOp, Ref
from burnpy_wgpu.dtypes import compute_type, storage_type
from burnpy_wgpu.errors import WgpuError, WgpuLimitError
from burnpy_wgpu.kernels.common import WG, entry, groups_for, header, hoist_params, load, store_cast
from burnpy_wgpu.kernels.elementwise import alloc_tensor, classify, coalesce, strided_indices
from burnpy_wgpu.kernels.matmul import Epilogue, matmul_epilogue, meta_words, vector_epilogues
from burnpy_wgpu.kernels.reduce import IDENTITY
from burnpy_wgpu.kernels.wgsl_math import calls, library
from burnpy_wgpu.runtime import WgpuRuntime, f32_bits, runtime_for
from burnpy_wgpu.tensor import WgpuTensor, broadcast_view, contiguous_strides, numel

#: The element types a fused kernel handles (WebGPU has no 64-bit or bfloat16 types).
DTYPES = frozenset({DType.float32, DType.float16, DType.int32, DType.uint32, DType.bool_})
#: Reductions over at most this many outputs run one workgroup per output (``tree``).
TREE_MAX_OUTPUTS = 256
#: On CPU adapters, ``tree`` only for at most this many outputs of at least this many elements
#: each (one workgroup runs on one thread and its barriers are coroutine switches; a serial
#: loop per output is cheaper unless there are too few outputs to spread over the threads).
CPU_TREE_MAX_OUTPUTS = 4
CPU_TREE_MIN_SIZE = 8192
#: Invocations per workgroup of a ``rows`` kernel on CPU adapters: one workgroup runs on one
#: thread there, and a reduction of a few hundred rows would be one workgroup of ``WG``,
#: computing every element its group fuses in on one core (maps keep ``WG``: more, smaller
#: workgroups measured slower there).
CPU_ROWS_WG = 32
#: ... and in a batch, a reduction of at least this many elements takes that many
#: invocations of each of its own workgroups (a small one shares one with its neighbours).
CPU_BATCH_SPREAD = 4096
#: Elements each invocation of a ``map`` kernel computes on CPU adapters, in a loop (lanes
#: stay on consecutive elements): llvmpipe pays a fixed cost per workgroup, which one element
#: per invocation pays once per 256 elements (measured 2-3x slower on 16K-64K elements).
CPU_MAP_PER_INVOCATION = 16
#: ... but only while that leaves at least this many workgroups to spread over the threads.
CPU_MAP_MIN_GROUPS = 8
#: On CPU adapters a map of at least this many elements whose outputs are 32-bit runs as a
#: ``vmap``: each work item 4 adjacent elements, contiguous inputs and the outputs moved as
#: ``vec4``s (llvmpipe loads and stores one lane at a time, a ``vec4`` for about the cost of
#: two scalars: a 13-op Adam update over 65536 values measured 0.37 -> 0.24 ms) ...
CPU_VEC_MIN_ELEMENTS = 4 * WG
#: ... and this many ``vec4``s per invocation while ``CPU_MAP_MIN_GROUPS`` workgroups remain.
CPU_VEC_PER_INVOCATION = 4
#: The adapter whose limits bound what a fused kernel may bind.
_DEFAULT_DEVICE = Device("wgpu", 0)
#: Parameter words of a dispatch (``runtime.META_SLOT`` bytes).
_META_WORDS = 128
#: Fixed parameter words: element count, reduction outputs, reduced size, inner size.
_FIXED = 4
#: Launch plans a compiled group keeps (by input layout) before its cache is reset.
_PLAN_CACHE = 256

_REDUCE_DTYPES = {"sum": DTYPES - {DType.bool_}, "prod": DTYPES - {DType.bool_},
                  "max": DTYPES - {DType.bool_}, "min": DTYPES - {DType.bool_},
                  "mean": frozenset({DType.float32, DType.float16})}


def _ct(dtype: DType) -> str:
    """The WGSL type values of ``dtype`` are computed in."""
    return compute_type(dtype.numpy)


def _st(dtype: DType) -> str:
    """The WGSL element type of a buffer of ``dtype``."""
    return storage_type(dtype.numpy)


class WgslFuser:
    """Compiles ``Fusion(WgpuBackend)``'s groups into single WGSL compute shaders."""

    __slots__ = ()

    #: Ops ``Fusion`` records and runs at the flush (``burnpy.fusion.lazy``): views cost no
    #: dispatch here (a strided ``WgpuTensor``), and a recorded matmul lets later ops join
    #: the group it reads.
    lazy_ops = frozenset({f"{kind}_{op}" for kind in ("float", "int", "bool")
                          for op in ("reshape", "swap_dims", "permute")} | {"float_matmul"})

    #: Ops ``WgpuBackend`` overrides that ``Fusion`` still records from the protocol's default:
    #: the default's pieces join the groups around them (the shift and exponent with the
    #: logits' bias add, the division with the loss gradient), where B's own run alone.
    composed_ops = frozenset({"softmax", "log_softmax"})

    @property
    def max_buffers(self) -> int:
        """Tensors one fused kernel may bind (inputs and outputs): the default adapter's limit
        of storage buffers per shader stage, less the parameter block's."""
        return runtime_for(_DEFAULT_DEVICE).max_storage_buffers - 1

    def accepts(self, op: str, dtypes: tuple[DType, ...]) -> bool:
        """Whether ``op`` has a WGSL form (``burnpy.ir.elementwise``) for ``dtypes``
        (operands', then the result's)."""
        if not all(d in DTYPES for d in dtypes):
            return False
        if op in _REDUCE_DTYPES:
            return dtypes[0] in _REDUCE_DTYPES[op]
        entry = ELEMENTWISE.get(op)
        if entry is None:
            return False
        if entry.kind in ("where", "copy", "cast"):
            return True
        if entry.wgsl is None:
            return False
        if entry.kind == "compare":
            return True
        if entry.kind == "logic":
            return all(d is DType.bool_ for d in dtypes)
        if entry.kind == "test":
            return dtypes[0].is_float
        result = dtypes[-1]
        return result is not DType.bool_ and _form(entry.wgsl, _ct(result)) is not None

    def compile(self, group: FusedGroup) -> FusedKernel | None:
        """The group's kernel; None for a group with no inputs (nothing says which device)."""
        if not group.inputs:
            return None
        return FusedProgram((group,))

    def compile_matmul(self, group: FusedGroup, operand: int) -> FusedKernel | None:
        """One kernel computing a float product and ``group`` (elementwise, over the product's
        shape) as its epilogue: ``group``'s input ``operand`` is the product, never stored.
        Called as ``kernel([lhs, rhs, *the group's other inputs], scalars)``."""
        if group.reduction is not None or not group.inputs[operand].dtype.is_float:
            return None
        return FusedMatmul(group, operand)

    def compile_batch(self, groups: tuple[FusedGroup, ...]) -> FusedKernel | None:
        """One kernel computing independent ``groups`` (each may have a single op), each
        over its own range of invocations; None when a group has no inputs. Groups of any
        size batch: a large map keeps its loop over several elements per invocation on its
        own workgroups, and on llvmpipe a batch measured as fast as its groups alone less
        the dispatches it saves (about 50 us each)."""
        if not all(g.inputs for g in groups):
            return None
        return FusedProgram(groups)


class _Plan:
    """A launch over given input layouts: the kernel, its workgroups and, per segment (one
    group), its layout (input classes and merged rank) and its meta tail; for a batch, the
    cumulative end of each segment's range of workgroups."""

    __slots__ = ("ends", "groups", "kernel", "layouts", "tails")

    def __init__(self, kernel: Any, groups: int, layouts: list[tuple[str, str, int]],
                 tails: list[list[int]], ends: list[int]) -> None:
        self.kernel, self.groups, self.layouts = kernel, groups, layouts
        self.tails, self.ends = tails, ends


class FusedProgram:
    """Compiled groups run as one dispatch: ``program(inputs, scalars)`` takes every group's
    inputs and scalars, in order, and returns every group's written locals and reduction
    result, in order (fresh contiguous ``WgpuTensor``s). One group is the common case; several
    (independent groups of a stream's flush, ``WgslFuser.compile_batch``) each take a range
    of the invocations."""

    __slots__ = ("counts", "groups", "plans", "shapes")

    def __init__(self, groups: Sequence[FusedGroup]) -> None:
        self.groups = tuple(groups)
        self.plans: dict[tuple[Any, ...], _Plan] = {}
        #: Per group: (kind, outputs, reduced size, inner size), its kind for a GPU adapter.
        self.shapes = [_shape_of(g) for g in self.groups]
        self.counts = [(len(g.inputs), len(g.scalars)) for g in self.groups]

    def __call__(self, inputs: Sequence[Any], scalars: Sequence[float | int | bool]
                 ) -> tuple[Any, ...]:
        tensors: list[WgpuTensor] = list(inputs)
        rt = tensors[0].runtime
        outs: list[WgpuTensor] = []
        for group, (_, _, size, _) in zip(self.groups, self.shapes, strict=True):
            outs += [alloc_tensor(rt, group.shape, group.ops[j].dtype.numpy)
                     for j in group.outputs]
            red = group.reduction
            if red is not None:
                if size == 0:
                    raise WgpuError(f"fused {red.name} over an empty dim: run unfused")
                outs.append(alloc_tensor(rt, red.shape, red.dtype.numpy))
        plan = self._plan(rt, tensors)
        if plan.groups == 0:
            return tuple(outs)
        meta: list[int] = list(plan.ends)
        t = v = 0
        for group, (_, n_out, size, inner), tail, (n_in, n_sc) in zip(
                self.groups, self.shapes, plan.tails, self.counts, strict=True):
            words = [f32_bits(float(x)) if dt.is_float else int(x)
                     for x, dt in zip(scalars[v:v + n_sc], group.scalars, strict=True)]
            meta += [numel(group.shape), n_out, size, inner, *words,
                     *[x.offset for x in tensors[t:t + n_in]], *tail]
            t, v = t + n_in, v + n_sc
        rt.dispatch_linear(plan.kernel, [x.handle.slab for x in tensors],
                           [o.handle.slab for o in outs], meta, plan.groups)
        return tuple(outs)

    def _plan(self, rt: WgpuRuntime, tensors: Sequence[WgpuTensor]) -> _Plan:
        key = (rt.device_id, *[(t.shape, t.strides, t.offset & 3) for t in tensors])
        plan = self.plans.get(key)
        if plan is None:
            if len(self.plans) >= _PLAN_CACHE:
                self.plans.clear()
            plan = self.plans[key] = self._new_plan(rt, tensors)
        return plan

    def _new_plan(self, rt: WgpuRuntime, tensors: Sequence[WgpuTensor]) -> _Plan:
        layouts: list[tuple[str, str, int]] = []
        tails: list[list[int]] = []
        items: list[int] = []
        t = 0
        for group, (kind, n_out, size, inner), (n_in, _) in zip(self.groups, self.shapes,
                                                                self.counts, strict=True):
            classes, rank, tail = _layout(group, tensors[t:t + n_in])
            t += n_in
            if kind == "tree" and (len(self.groups) > 1 or (rt.is_cpu and (
                    n_out > CPU_TREE_MAX_OUTPUTS or size < CPU_TREE_MIN_SIZE))):
                kind = "rows"  # on a CPU adapter barriers are coroutine switches: a loop is
                #                cheaper; in a batch every group is one invocation per item
            n = numel(group.shape)
            if rt.is_cpu and n >= CPU_VEC_MIN_ELEMENTS and (kind == "map" or (
                    kind == "rows" and _vector_rows(group, inner))):
                vector = _vector_classes(group, classes, tensors[t - n_in:t])
                if vector is not None:
                    kind, classes = "v" + kind, vector
                    n, n_out = -(-n // 4), n_out // 4
            layouts.append((kind, classes, rank))
            tails.append(tail)
            items.append(n if kind in ("map", "vmap") else n_out)
        words = sum(_FIXED + len(g.scalars) + len(g.inputs) + len(tail)
                    for g, tail in zip(self.groups, tails, strict=True))
        words += len(self.groups) if len(self.groups) > 1 else 0
        if words > _META_WORDS:
            raise WgpuLimitError(f"fused kernel needs {words} parameter words; at most "
                                 f"{_META_WORDS} fit (too many strided inputs)")
        n_write = sum(len(g.outputs) + (g.reduction is not None) for g in self.groups)
        limit = rt.max_storage_buffers
        if len(tensors) + n_write + 1 > limit:
            raise WgpuLimitError(f"fused kernel binds {len(tensors) + n_write + 1} buffers; "
                                 f"this adapter allows {limit}")
        if len(self.groups) == 1:
            group, (kind, classes, rank) = self.groups[0], layouts[0]
            wg = CPU_ROWS_WG if rt.is_cpu and kind in ("rows", "vrows") else WG
            per = _per_invocation(rt, kind, items[0])
            kernel = rt.kernel(("fused", kind, group, classes, rank, wg, per),
                               lambda: wgsl_source(group, kind, classes, rank, wg, per),
                               len(tensors), n_write)
            count = (groups_for(items[0], wg * per) if kind != "tree" else self.shapes[0][1])
            return _Plan(kernel, count if items[0] else 0, layouts, tails, [])
        spans = tuple((_per_invocation(rt, kind, n),
                       CPU_ROWS_WG if rt.is_cpu and kind in ("rows", "vrows")
                       and numel(group.shape) >= CPU_BATCH_SPREAD else WG)
                      for group, (kind, _, _), n in zip(self.groups, layouts, items,
                                                        strict=True))
        segments = tuple(zip(self.groups, layouts, strict=True))
        kernel = rt.kernel(("fused_batch", segments, spans),
                           lambda: batch_source(segments, spans), len(tensors), n_write)
        ends: list[int] = []
        for n, (per, lanes) in zip(items, spans, strict=True):
            start = ends[-1] if ends else 0
            if (per > 1 or lanes < WG) and start % WG:  # starts on a workgroup of its own
                start = ends[-1] = start + WG - start % WG
            ends.append(start + (n if (per, lanes) == (1, WG) else
                                 groups_for(n, lanes * per) * WG))
        return _Plan(kernel, groups_for(ends[-1], WG), layouts, tails, ends)


class FusedMatmul:
    """A product and the elementwise group reading it, as one dispatch of the matmul kernel
    whose every output element goes through the group (``WgslFuser.compile_matmul``)."""

    __slots__ = ("group", "operand", "plans")

    def __init__(self, group: FusedGroup, operand: int) -> None:
        self.group = group
        self.operand = operand
        self.plans: dict[tuple[Any, ...], tuple[str, int, list[int], bool]] = {}

    def __call__(self, inputs: Sequence[Any], scalars: Sequence[float | int | bool]
                 ) -> tuple[Any, ...]:
        group, operand = self.group, self.operand
        lhs, rhs, *rest = inputs
        rt: WgpuRuntime = lhs.runtime
        outs = [alloc_tensor(rt, group.shape, group.ops[j].dtype.numpy) for j in group.outputs]
        tensors: list[WgpuTensor | None] = [*rest[:operand], None, *rest[operand:]]
        key = (rt.device_id, *[(t.shape, t.strides, t.offset & 3) for t in rest])
        layout = self.plans.get(key)
        if layout is None:
            if len(self.plans) >= _PLAN_CACHE:
                self.plans.clear()
            classes, rank, tail = _layout(group, tensors)
            vector = (vector_epilogues(rt, group.shape[-1])
                      and _vector_classes(group, classes, tensors) is not None)
            if vector:
                classes = _vector_classes(group, classes, tensors) or classes
            layout = self.plans[key] = (classes, rank, tail, vector)
        classes, rank, tail, vector = layout
        words = [f32_bits(float(x)) if dt.is_float else int(x)
                 for x, dt in zip(scalars, group.scalars, strict=True)]
        meta = [numel(group.shape), 1, 1, 1, *words,
                *[0 if t is None else t.offset for t in tensors], *tail]
        limit = rt.max_storage_buffers
        if len(inputs) + len(outs) + 1 > limit:
            raise WgpuLimitError(f"fused matmul binds {len(inputs) + len(outs) + 1} buffers; "
                                 f"this adapter allows {limit}")

        def epilogue(batch_rank: int) -> Epilogue:
            base = meta_words(batch_rank)
            if base + len(meta) > _META_WORDS:
                raise WgpuLimitError(f"fused matmul needs {base + len(meta)} parameter words")
            seg = (_vector_segment(group, classes, rank, base, 2, 0, "_e", operand) if vector
                   else _segment(group, "epilogue", classes, rank, base, 2, 0, "_e", operand))
            code = library(tuple(sorted(seg.funcs))) + seg.code  # f16 in it enables f16
            return Epilogue(code, tuple(seg.reads), tuple(seg.writes), vector)

        if meta_words(len(lhs.shape) - 2) + len(meta) > _META_WORDS:
            raise WgpuLimitError("fused matmul: too many parameter words")
        matmul_epilogue(lhs, rhs, (group, operand, classes, rank, vector), epilogue, rest, outs,
                        lambda _: meta, vector)
        return tuple(outs)


def _shape_of(group: FusedGroup) -> tuple[str, int, int, int]:
    """The group's kernel kind on a GPU adapter (``map``, ``rows`` or ``tree``), its outputs,
    the reduced dim's size and the size of the dims after it."""
    shape, red = group.shape, group.reduction
    n = numel(shape)
    if red is None:
        return "map", n, 1, 1
    if red.dim is None:
        return "tree", 1, n, 1
    size = shape[red.dim]
    outs = n // size if size else numel(red.shape)
    return ("tree" if outs <= TREE_MAX_OUTPUTS else "rows"), outs, size, numel(
        shape[red.dim + 1:])


def _layout(group: FusedGroup, tensors: Sequence[WgpuTensor | None]
            ) -> tuple[str, int, list[int]]:
    """How the group reads ``tensors``: each one's layout class, the merged rank of the
    general ones (0 when none) and the meta tail (merged shape, general inputs' strides).
    None stands for a value the kernel is handed in the group's own order (an epilogue's)."""
    shape = group.shape
    strides = [contiguous_strides(shape) if t is None else
               broadcast_view(t.shape, t.strides, shape) for t in tensors]
    merged, merged_strides = coalesce(shape, [*strides, contiguous_strides(shape)])
    classes = "".join(classify(merged, s) for s in merged_strides[:-1])
    rank = len(merged) if "g" in classes else 0
    tail: list[int] = []
    if rank:
        tail += merged
        for cls, st in zip(classes, merged_strides[:-1], strict=True):
            if cls == "g":
                tail += st
    return classes, rank, tail


# ---- WGSL generation -----------------------------------------------------------------------------
def _per_invocation(rt: WgpuRuntime, kind: str, items: int) -> int:
    """Items per invocation of a ``map`` or ``vmap`` kernel over ``items``
    (``CPU_MAP_PER_INVOCATION`` elements or ``CPU_VEC_PER_INVOCATION`` vec4s on a CPU
    adapter when enough workgroups remain, else 1)."""
    per = {"map": CPU_MAP_PER_INVOCATION, "vmap": CPU_VEC_PER_INVOCATION}.get(kind, 1)
    if rt.is_cpu and per > 1 and items >= WG * per * CPU_MAP_MIN_GROUPS:
        return per
    return 1


def _vector_classes(group: FusedGroup, classes: str, tensors: Sequence[WgpuTensor | None]
                    ) -> str | None:
    """The layout classes of a ``vmap`` of ``group``: ``v`` for a contiguous 32-bit input
    starting on a ``vec4`` (read 4 elements at a time), the others as they were (None, an
    epilogue's product, too); None when an output is not 32-bit (outputs are written as
    ``vec4``s)."""
    if any(_st(group.ops[j].dtype) == "f16" for j in group.outputs):
        return None
    return "".join("v" if cls == "c" and t is not None and _st(desc.dtype) != "f16"
                   and t.offset % 4 == 0 else cls
                   for cls, t, desc in zip(classes, tensors, group.inputs, strict=True))


def _count(kind: str, base: int) -> str:
    """The WGSL count of a segment's work items whose meta words start at ``base``."""
    return {"map": f"mu({base}u)", "vmap": f"((mu({base}u) + 3u) / 4u)",
            "vrows": f"(mu({base + 1}u) / 4u)"}.get(kind, f"mu({base + 1}u)")


def _vector_rows(group: FusedGroup, inner: int) -> bool:
    """Whether ``group``'s closing reduction may run as ``vrows``: 4 adjacent outputs per
    work item (``inner``, the size of the dims after the reduced one, a multiple of 4), a
    float32 sum or mean (Kahan-compensated per lane as ``rows`` does)."""
    red = group.reduction
    return (red is not None and red.name in ("sum", "mean") and inner % 4 == 0
            and _st(red.dtype) == "f32")


def wgsl_source(group: FusedGroup, kind: str, classes: str, rank: int, wg: int = WG,
                per: int = 1) -> str:
    """The WGSL of ``group`` as a ``kind`` kernel (``map``, ``vmap``, ``rows``, ``vrows`` or
    ``tree``) whose inputs have layout ``classes`` (``c`` contiguous, ``v`` contiguous read
    as ``vec4``s, ``s`` one element, ``g`` general over ``rank`` merged dims), ``wg``
    invocations per workgroup (``tree``: always ``WG``) and, for a ``map`` or ``vmap``,
    ``per`` items per invocation (``wg`` apart, so lanes stay adjacent). Meta words: element
    count, reduction outputs, reduced size, inner size, the scalars, the inputs' offsets,
    then the merged shape and each general input's strides."""
    seg = _segment(group, kind, classes, rank, 0, 0, 0, "")
    red = group.reduction
    if red is None and per > 1:
        main = (f"    let first = group * {wg * per}u + lid;\n"
                f"    for (var e = 0u; e < {per}u; e = e + 1u) {{\n"
                f"        let i = first + e * {wg}u;\n"
                f"        if (i >= {_count(kind, 0)}) {{ return; }}\n        seg(i);\n    }}")
    elif red is None or kind in ("rows", "vrows"):
        main = f"    if (gid >= {_count(kind, 0)}) {{ return; }}\n    seg(gid);"
    else:
        main = _tree_entry(red.name, _ct(red.dtype), _st(red.dtype), f"out{len(seg.writes) - 1}")
    return _assemble([seg], entry(main, wg) if kind != "tree" else main)


def batch_source(segments: Sequence[tuple[FusedGroup, tuple[str, str, int]]],
                 spans: Sequence[tuple[int, int]]) -> str:
    """The WGSL of several groups in one kernel, each a ``map``, ``vmap`` or ``rows`` segment
    over its own range of invocations: meta words 0.. hold the ranges' cumulative ends,
    then each segment's words as ``wgsl_source`` lays them out. Segment ``i`` computes
    ``per`` items on each of ``lanes`` invocations of a workgroup (``spans[i]``): one on
    every invocation, sharing a workgroup with its neighbours, or (a large map looping as
    ``wgsl_source``'s does, a large reduction on CPU adapters spread over more workgroups
    as ``CPU_ROWS_WG`` spreads it alone) on whole workgroups of its own."""
    segs = []
    lines = []
    base, first_in, first_out = len(segments), 0, 0
    for i, ((group, (kind, classes, rank)), (per, lanes)) in enumerate(zip(segments, spans,
                                                                            strict=True)):
        seg = _segment(group, kind, classes, rank, base, first_in, first_out, str(i))
        segs.append(seg)
        start = f"mu({i - 1}u)" if i else "0u"
        count = _count(kind, base)
        lines.append(f"    if (gid < mu({i}u)) {{")
        if (per, lanes) == (1, WG):
            lines += [f"        let item = gid - {start};",
                      f"        if (item < {count}) {{ seg{i}(item); }}", "        return;"]
        else:
            if lanes < WG:
                lines.append(f"        if (lid >= {lanes}u) {{ return; }}")
            lines += [f"        let first = (gid - {start}) / {WG}u * {lanes * per}u + lid;",
                      f"        for (var e = 0u; e < {per}u; e = e + 1u) {{",
                      f"            let item = first + e * {lanes}u;",
                      f"            if (item >= {count}) {{ return; }}",
                      f"            seg{i}(item);", "        }", "        return;"]
        lines.append("    }")
        base += seg.words
        first_in += len(seg.reads)
        first_out += len(seg.writes)
    return _assemble(segs, entry("\n".join(lines)))


class _Seg(NamedTuple):
    """One group's WGSL: functions ``elem{tag}`` and ``seg{tag}`` (one work item: an element
    of a map, an output of rows), the library functions it calls, its buffers' element types,
    whether it needs f16 and how many meta words it reads."""

    code: str
    funcs: frozenset[str]
    reads: list[str]
    writes: list[str]
    f16: bool
    words: int


def _assemble(segs: Sequence[_Seg], main: str) -> str:
    reads = [t for seg in segs for t in seg.reads]
    writes = [t for seg in segs for t in seg.writes]
    funcs = frozenset().union(*[seg.funcs for seg in segs])
    source = header(reads, writes, library(tuple(sorted(funcs)))) + "".join(
        seg.code for seg in segs) + main
    if any(seg.f16 for seg in segs) and not source.startswith("enable f16;"):
        source = "enable f16;\n" + source  # f16 only in a rounded local, not in a binding
    return hoist_params(source)


def _segment(group: FusedGroup, kind: str, classes: str, rank: int, base: int,
             first_in: int, first_out: int, tag: str, given: int | None = None) -> _Seg:
    """``group``'s functions, reading meta words from ``base`` and binding its inputs and
    outputs from ``in{first_in}`` and ``out{first_out}``. Input ``given`` (a product's
    result) is not read from memory: it is ``epi(lin, mm)``'s argument ``mm`` (kind
    ``epilogue``), and the later inputs take its binding."""
    if kind in ("vmap", "vrows"):
        return _vector_segment(group, classes, rank, base, first_in, first_out, tag)
    scalar_base = base + _FIXED
    offset_base = scalar_base + len(group.scalars)
    shape_base = offset_base + len(group.inputs)
    stride_base = shape_base + rank
    funcs: set[str] = set()
    red = group.reduction
    acc = _ct(red.dtype) if red is not None else ""
    body: list[str] = []
    body += strided_indices("lin", classes, rank, offset_base, shape_base, stride_base)
    values: dict[Ref, tuple[str, str]] = {}
    for k, desc in enumerate(group.inputs):
        cls = classes[k]
        index = (f"mu({offset_base + k}u) + lin" if cls == "c" else
                 f"mu({offset_base + k}u)" if cls == "s" else f"x{k}")
        values[Ref("input", k)] = (f"v{k}", _ct(desc.dtype))
        if k == given:  # rounded as storing the product's result would round it
            value = "f32(f16(mm))" if desc.dtype is DType.float16 else "mm"
            body.append(f"    let v{k} = {value};")
            continue
        binding = first_in + k - (given is not None and k > given)
        body.append(f"    let v{k} = "
                    f"{load(f'in{binding}', index, _st(desc.dtype), _ct(desc.dtype))};")
    values.update(_scalar_values(group, scalar_base))
    body.append(_opaque_zero(base))
    body += _op_lines(group, values, funcs, "")
    for slot, j in enumerate(group.outputs):
        dt = group.ops[j].dtype
        body.append(f"    out{first_out + slot}[lin] = {store_cast(f't{j}', _st(dt), _ct(dt))};")
    signature = (f"fn elem{tag}(lin: u32) {{" if given is None else
                 f"fn elem{tag}(lin: u32, mm: f32) {{")
    writes = [_st(group.ops[j].dtype) for j in group.outputs]
    code = ""
    if red is not None:
        name, ct = values[red.operand]
        body.append(f"    return {_convert(name, ct, acc)};")
        signature = f"fn elem{tag}(lin: u32) -> {acc} {{"
        writes.append(_st(red.dtype))
        code = _combine(red.name, acc, tag)
    code += "\n" + signature + "\n" + "\n".join(body) + "\n}\n"
    if kind == "epilogue":
        code += f"\nfn epi(lin: u32, mm: f32) {{ elem{tag}(lin, mm); }}\n"
    elif red is None:
        code += f"\nfn seg{tag}(lin: u32) {{ elem{tag}(lin); }}\n"
    elif kind == "rows":
        code += _rows_function(red.name, acc, _st(red.dtype), f"out{first_out + len(writes) - 1}",
                               base, tag)
    f16 = any(d.dtype is DType.float16 for d in group.inputs) or any(
        op.dtype is DType.float16 for op in group.ops) or (
        red is not None and red.dtype is DType.float16)
    words = _FIXED + len(group.scalars) + len(group.inputs) + (rank * (1 + classes.count("g"))
                                                                 if rank else 0)
    return _Seg(code, frozenset(funcs), [_st(d.dtype) for k, d in enumerate(group.inputs)
                                         if k != given], writes, f16, words)


def _scalar_values(group: FusedGroup, scalar_base: int) -> dict[Ref, tuple[str, str]]:
    """The group's scalar arguments as WGSL reads of their meta words, by reference."""
    values = {}
    rounded = group.rounded_scalars()
    for i, dt in enumerate(group.scalars):
        word = scalar_base + i
        ct = _ct(dt)
        value = {"f32": f"mf({word}u)", "i32": f"mi({word}u)"}.get(ct, f"mu({word}u)")
        if i in rounded:  # an f16 add, sub, remainder, pow or comparison: torch's rule
            value = f"f32(f16({value}))"
        values[Ref("scalar", i)] = (value, ct)
    return values


def _opaque_zero(base: int) -> str:
    """A WGSL line defining ``zero_bits``, 0 at run time though no compiler can know it: the
    segment's element count (meta word ``base``) shifted right by 31 (a binding holds under
    2^31 elements of 2 or more bytes). See ``_op_lines``."""
    return f"    let zero_bits = mu({base}u) >> 31u;"


def _op_lines(group: FusedGroup, values: dict[Ref, tuple[str, str]], funcs: set[str],
              sfx: str) -> list[str]:
    """WGSL lines computing the group's ops into ``t{j}{sfx}`` from ``values`` (the inputs'
    and scalars' names), adding each local to ``values``. WGSL lets a compiler assume no
    value is infinite or NaN, and Mesa's do: lavapipe made ``(x + c) - x`` ``c``, turning an
    infinite or NaN x into a finite result, and the OpenGL adapter made ``a == a + c``
    ``c == 0.0``, so inf == inf + 1 was false. Each float local is therefore its bits XORed with
    ``zero_bits`` (``_opaque_zero``), one integer op that no float algebra can see through,
    so every op rounds and propagates infinities and NaN as it does alone."""
    lines = []
    for j, op in enumerate(group.ops):
        expr = _op_expr(op, [values[r] for r in op.operands], funcs)
        if op.dtype is DType.float16:
            expr = f"f32(f16({expr}))"
        if _ct(op.dtype) == "f32":
            expr = f"bitcast<f32>(bitcast<u32>({expr}) ^ zero_bits)"
        lines.append(f"    let t{j}{sfx} = {expr};")
        values[Ref("local", j)] = (f"t{j}{sfx}", _ct(op.dtype))
    return lines


def _vector_segment(group: FusedGroup, classes: str, rank: int, base: int, first_in: int,
                    first_out: int, tag: str, given: int | None = None) -> _Seg:
    """``_segment`` for a ``vmap``: ``elem{tag}(q)`` computes elements ``4q .. 4q + 3`` (the
    last ``vec4`` past the end too: slabs are whole ``vec4``s and the output's own), reading
    inputs of class ``v`` (contiguous, ``vec4``-aligned, 32-bit) and writing every output as
    one ``vec4``: llvmpipe moves a ``vec4`` for about the cost of two scalars. With input
    ``given`` (a product's 4 values, ``mm``) it is a vector epilogue: ``epi4(lin, mm)``."""
    scalar_base = base + _FIXED
    offset_base = scalar_base + len(group.scalars)
    shape_base = offset_base + len(group.inputs)
    stride_base = shape_base + rank
    funcs: set[str] = set()
    general = [k for k, c in enumerate(classes) if c == "g"]
    body = [f"    var x{k}_{c}: u32;" for k in general for c in range(4)]
    for c in range(4):  # each element's general indices, in a block of its own
        if general:
            body.append("    {")
            body += ["    " + line for line in strided_indices(
                f"(q * 4u + {c}u)", classes, rank, offset_base, shape_base, stride_base)]
            body += [f"        x{k}_{c} = x{k};" for k in general]
            body.append("    }")
    reads = []
    per_comp: list[dict[Ref, tuple[str, str]]] = [{} for _ in range(4)]
    for k, desc in enumerate(group.inputs):
        cls, st, ct = classes[k], _st(desc.dtype), _ct(desc.dtype)
        if k == given:  # rounded as storing the product's result would round it
            for c in range(4):
                value = f"f32(f16(mm[{c}]))" if desc.dtype is DType.float16 else f"mm[{c}]"
                body.append(f"    let v{k}_{c} = {value};")
                per_comp[c][Ref("input", k)] = (f"v{k}_{c}", ct)
            continue
        buf = f"in{first_in + k - (given is not None and k > given)}"
        reads.append(f"vec4<{st}>" if cls == "v" else st)
        if cls == "v":
            body.append(f"    let w{k} = {buf}[mu({offset_base + k}u) / 4u + q];")
        elif cls == "s":
            body.append(f"    let v{k} = {load(buf, f'mu({offset_base + k}u)', st, ct)};")
        for c in range(4):
            if cls == "s":
                per_comp[c][Ref("input", k)] = (f"v{k}", ct)
                continue
            index = (f"mu({offset_base + k}u) + q * 4u + {c}u" if cls == "c" else f"x{k}_{c}")
            value = (_convert(f"w{k}[{c}]", st, ct) if cls == "v" else
                     load(buf, index, st, ct))
            body.append(f"    let v{k}_{c} = {value};")
            per_comp[c][Ref("input", k)] = (f"v{k}_{c}", ct)
    scalars = _scalar_values(group, scalar_base)
    body.append(_opaque_zero(base))
    for c in range(4):
        per_comp[c].update(scalars)
        body += _op_lines(group, per_comp[c], funcs, f"_{c}")
    writes = []
    for slot, j in enumerate(group.outputs):
        st, ct = _st(group.ops[j].dtype), _ct(group.ops[j].dtype)
        parts = ", ".join(store_cast(f"t{j}_{c}", st, ct) for c in range(4))
        body.append(f"    out{first_out + slot}[q] = vec4<{st}>({parts});")
        writes.append(f"vec4<{st}>")
    red = group.reduction
    if red is not None:  # vrows: the 4 values the reduction folds
        parts = ", ".join(_convert(*per_comp[c][red.operand], "f32") for c in range(4))
        body.append(f"    return vec4<f32>({parts});")
        writes.append("vec4<f32>")
        code = (f"\nfn elem{tag}(q: u32) -> vec4<f32> {{\n" + "\n".join(body) + "\n}\n"
                + _vector_rows_function(red.name, f"out{first_out + len(writes) - 1}", base,
                                        tag))
    elif given is None:
        code = (f"\nfn elem{tag}(q: u32) {{\n" + "\n".join(body) + "\n}\n"
                f"\nfn seg{tag}(q: u32) {{ elem{tag}(q); }}\n")
    else:
        code = (f"\nfn elem{tag}(q: u32, mm: vec4<f32>) {{\n" + "\n".join(body) + "\n}\n"
                f"\nfn epi4(lin: u32, mm: vec4<f32>) {{ elem{tag}(lin / 4u, mm); }}\n")
    f16 = any(d.dtype is DType.float16 for d in group.inputs) or any(
        op.dtype is DType.float16 for op in group.ops)
    words = _FIXED + len(group.scalars) + len(group.inputs) + (rank * (1 + len(general))
                                                                 if rank else 0)
    return _Seg(code, frozenset(funcs), reads, writes, f16, words)


def _convert(value: str, src: str, dst: str) -> str:
    """``value`` of WGSL type ``src`` as ``dst``."""
    return value if src == dst else f"{dst}({value})"


def _op_expr(op: FusedOp, operands: list[tuple[str, str]], funcs: set[str]) -> str:
    """The WGSL expression of ``op`` over its operands ``(name, compute type)``."""
    name = op.name
    out = _ct(op.dtype)
    if name == "cast":
        value, src = operands[0]
        if op.dtype is DType.bool_:
            return f"select(1u, 0u, {value} == {src}(0))"
        return _convert(value, src, out)
    if name == "copy":
        return _convert(*operands[0], out)
    if name == "where":
        cond, _ = operands[0]
        b, a = (_convert(v, ct, out) for v, ct in operands[1:])
        return f"select({a}, {b}, {cond} != 0u)"
    entry = ELEMENTWISE[name]
    forms = entry.wgsl
    assert forms is not None, f"{name} has no WGSL expression"
    if entry.kind == "compare":
        kinds = {ct for _, ct in operands}
        work = "f32" if "f32" in kinds else "i32" if "i32" in kinds else "u32"
        a, b = (_convert(v, ct, work) for v, ct in operands)
        return f"select(0u, 1u, {_subst(forms.single, a, b)})"
    if entry.kind == "test":
        return f"select(0u, 1u, {_subst(forms.single, _convert(*operands[0], 'f32'))})"
    if entry.kind == "logic":
        return _subst(forms.single, *[v for v, _ in operands])
    template = _form(forms, out)
    assert template is not None, f"{name} has no WGSL form for {out}"
    funcs.update(calls(template))
    return _subst(template, *[_convert(v, ct, out) for v, ct in operands])


def _form(forms: Forms, compute: str) -> str | None:
    """The WGSL form for values computed as ``compute`` (``f32``, ``i32`` or ``u32``)."""
    return {"f32": forms.float, "i32": forms.int, "u32": forms.uint}[compute]


def _subst(template: str, *args: str) -> str:
    """``template`` with its operands ``a``, ``b``, ``c`` replaced by ``args``."""
    names = {"a": 0, "b": 1, "c": 2}
    return re.sub(r"\b[abc]\b", lambda m: f"({args[names[m.group(0)]]})", template)


def _combine(op: str, acc: str, tag: str) -> str:
    """WGSL of ``combine{tag}(x, y)``: one step of reduction ``op`` (max/min propagate NaN)."""
    if op in ("sum", "mean"):
        expr = "x + y"
    elif op == "prod":
        expr = "x * y"
    elif acc == "f32":
        pick = f"{op}(x, y)"
        expr = f"select(select({pick}, y, is_nan(y)), x, is_nan(x))"
    else:
        expr = f"{op}(x, y)"
    return f"\nfn combine{tag}(x: {acc}, y: {acc}) -> {acc} {{ return {expr}; }}\n"


def _fold(op: str, acc: str, tag: str) -> tuple[list[str], list[str], str]:
    """The start (given ``o``, ``inner``, ``size``), the step (folding ``v``) and the final
    value of a reduction's accumulation: Kahan-compensated for float sums."""
    ident = IDENTITY[("sum" if op == "mean" else op, acc)]
    kahan = op in ("sum", "mean") and acc == "f32"
    if kahan:
        step = ["        let y = v - comp;", "        let t = total + y;",
                "        comp = select(0.0, (t - total) - y, !is_inf(t));", "        total = t;"]
    else:
        step = [f"        total = combine{tag}(total, v);"]
    start = ["    let base = (o / inner) * size * inner + o % inner;",
             f"    var total: {acc} = {ident};", "    var comp: f32 = 0.0;"]
    return start, step, "total - comp" if kahan else "total"


def _rows_function(op: str, acc: str, store: str, out: str, base: int, tag: str) -> str:
    """``seg{tag}(o)``: output ``o`` of the reduction, folding ``elem{tag}`` serially over its
    elements (meta words from ``base``: outputs, reduced size, inner size at 1, 2, 3)."""
    start, step, finish = _fold(op, acc, tag)
    mean = f" / f32(mu({base + 2}u))" if op == "mean" else ""
    body = [f"fn seg{tag}(o: u32) {{", f"    let inner = mu({base + 3}u);",
            f"    let size = mu({base + 2}u);", *start,
            "    for (var r = 0u; r < size; r = r + 1u) {",
            f"        let v = elem{tag}(base + r * inner);", *step, "    }",
            f"    {out}[o] = {store_cast(f'({finish}){mean}', store, acc)};", "}"]
    return "\n" + "\n".join(body) + "\n"


def _vector_rows_function(op: str, out: str, base: int, tag: str) -> str:
    """``seg{tag}(q)``: outputs ``4q .. 4q + 3`` of a float32 sum or mean, adjacent along
    the dims after the reduced one, folding ``elem{tag}``'s ``vec4``s serially with the
    Kahan compensation of ``_fold`` per lane."""
    mean = f" / f32(mu({base + 2}u))" if op == "mean" else ""
    body = [f"fn seg{tag}(q: u32) {{", f"    let inner = mu({base + 3}u);",
            f"    let size = mu({base + 2}u);", "    let o = q * 4u;",
            "    let base = (o / inner) * size * inner + o % inner;",
            "    var total = vec4<f32>(0.0);", "    var comp = vec4<f32>(0.0);",
            "    for (var r = 0u; r < size; r = r + 1u) {",
            f"        let v = elem{tag}((base + r * inner) / 4u);",
            "        let y = v - comp;", "        let t = total + y;",
            "        let inf = (bitcast<vec4<u32>>(t) & vec4<u32>(0x7fffffffu)) == "
            "vec4<u32>(0x7f800000u);",
            "        comp = select((t - total) - y, vec4<f32>(0.0), inf);", "        total = t;",
            "    }", f"    {out}[q] = (total - comp){mean};", "}"]
    return "\n" + "\n".join(body) + "\n"


def _tree_entry(op: str, acc: str, store: str, out: str) -> str:
    """The entry point folding ``elem`` over each output's elements per workgroup: a strided
    loop per invocation, then a tree in workgroup memory."""
    start, step, finish = _fold(op, acc, "")
    mean = " / f32(mu(2u))" if op == "mean" else ""
    shared = f"\nvar<workgroup> partial: array<{acc}, {WG}>;\n"
    body = ["    let o = group;", "    if (o >= mu(1u)) { return; }", "    let inner = mu(3u);",
            "    let size = mu(2u);", *start,
            f"    for (var r = lid; r < size; r = r + {WG}u) {{",
            "        let v = elem(base + r * inner);", *step, "    }",
            f"    partial[lid] = {finish};", "    workgroupBarrier();",
            f"    for (var s = {WG // 2}u; s > 0u; s = s >> 1u) {{",
            "        if (lid < s) { partial[lid] = combine(partial[lid], partial[lid + s]); }",
            "        workgroupBarrier();", "    }",
            "    if (lid == 0u) {",
            f"        {out}[o] = {store_cast(f'(partial[0]){mean}', store, acc)};", "    }"]
    return shared + entry("\n".join(body))


def wgsl_fuser() -> WgslFuser:
    """The fuser ``WgpuBackend.fuser()`` declares."""
    return _FUSER


_FUSER = WgslFuser()
