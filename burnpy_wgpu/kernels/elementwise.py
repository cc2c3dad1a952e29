"""Elementwise kernels generated from one template: any number of inputs with broadcasting
and arbitrary strides, one output (a fresh contiguous tensor or an existing strided view).

An op is a WGSL expression over the inputs ``a``, ``b``, ``c`` (already in their compute
types: f32 for floats, i32, u32; bools are u32 0/1) and the scalar parameters ``mf(1u)``,
``mi(1u)``, ``mf(2u)``... The launcher merges dims that are contiguous for every operand and
classifies each operand as contiguous (index = offset + gid), constant (one element) or
general (index from the coordinates and its strides), so the common cases need no index
arithmetic. The pipeline key is (expression, dtypes, operand classes, rank).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from burnpy_wgpu.dtypes import compute_type, storage_type
from burnpy_wgpu.errors import WgpuLimitError
from burnpy_wgpu.kernels.common import WG, entry, groups_for, header, load, store_cast
from burnpy_wgpu.kernels.wgsl_math import library
from burnpy_wgpu.runtime import Kernel, WgpuRuntime
from burnpy_wgpu.tensor import Shape, WgpuTensor, broadcast_view, contiguous_strides, numel

_NAMES = "abc"
#: Most dims a general operand may have after merging (its meta must fit one block).
MAX_RANK = 16
_PARAMS = 2  # scalar parameter words after the element count
_PAD = [(0,) * (_PARAMS - k) for k in range(_PARAMS + 1)]
#: Launch plans kept per runtime before the cache is reset.
_PLAN_CACHE = 4096


def coalesce(shape: Shape, strides: Sequence[Shape]) -> tuple[Shape, list[Shape]]:
    """Drop size-1 dims and merge neighbours that are contiguous for every operand."""
    dims = [i for i, s in enumerate(shape) if s != 1]
    out_shape: list[int] = []
    out_strides: list[list[int]] = [[] for _ in strides]
    for d in dims:
        if out_shape and all(st[-1] == s[d] * shape[d] for st, s in zip(out_strides, strides,
                                                                           strict=True)):
            out_shape[-1] *= shape[d]
            for st, s in zip(out_strides, strides, strict=True):
                st[-1] = s[d]
            continue
        out_shape.append(shape[d])
        for st, s in zip(out_strides, strides, strict=True):
            st.append(s[d])
    return tuple(out_shape), [tuple(st) for st in out_strides]


def classify(shape: Shape, strides: Shape) -> str:
    """An operand's layout class for ``strided_indices``: ``s`` (one value broadcast), ``c``
    (contiguous) or ``g`` (general strides)."""
    if all(s == 0 for s in strides):
        return "s"
    if strides == contiguous_strides(shape):
        return "c"
    return "g"


def strided_indices(linear: str, classes: str, rank: int, offset_base: int, shape_base: int,
                    stride_base: int) -> list[str]:
    """WGSL lines that unravel the output index ``linear`` over the shape stored at
    ``shape_base`` and give each general-strided input ``k`` (class ``"g"``) its element index
    ``x{k}`` from its offset and strides in the parameter words (one place for the elementwise
    kernels and the fuser)."""
    general = [k for k, c in enumerate(classes) if c == "g"]
    lines: list[str] = []
    if general:
        lines.append(f"    var r = {linear};")
        for d in range(rank - 1, 0, -1):
            lines.append(f"    let i{d} = i32(r % mu({shape_base + d}u)); "
                         f"r = r / mu({shape_base + d}u);")
        lines.append("    let i0 = i32(r);")
    for slot, k in enumerate(general):
        base = stride_base + slot * rank
        terms = " + ".join(f"i{d} * mi({base + d}u)" for d in range(rank))
        lines.append(f"    let x{k} = u32(mi({offset_base + k}u) + {terms});")
    return lines


def _source(expr: str, reads: tuple[tuple[str, str], ...], write: tuple[str, str],
            classes: str, rank: int, funcs: tuple[str, ...]) -> str:
    n_in = len(reads)
    offsets = 1 + _PARAMS
    shape_base = offsets + n_in + 1
    stride_base = shape_base + rank
    body = ["    if (gid >= mu(0u)) { return; }"]
    body += strided_indices("gid", classes, rank, offsets, shape_base, stride_base)

    def index(k: int) -> str:
        cls = classes[k]
        if cls == "c":
            return f"mu({offsets + k}u) + gid"
        if cls == "s":
            return f"mu({offsets + k}u)"
        return f"x{k}"

    for k, (st, ct) in enumerate(reads):
        body.append(f"    let {_NAMES[k]} = {load(f'in{k}', index(k), st, ct)};")
    st, ct = write
    body.append(f"    out0[{index(n_in)}] = {store_cast(f'({expr})', st, ct)};")
    return (header([r[0] for r in reads], [st], library(funcs))
            + entry("\n".join(body)))


class _Plan:
    """What a launch over given shapes, strides and dtypes needs, computed once: the kernel,
    the iteration shape and size, and the meta words after the offsets."""

    __slots__ = ("groups", "kernel", "n", "shape", "tail")

    def __init__(self, kernel: Kernel, shape: Shape, n: int, tail: list[int]) -> None:
        self.kernel, self.shape, self.n, self.tail = kernel, shape, n, tail
        self.groups = groups_for(n, WG)


def _plan(rt: WgpuRuntime, expr: str, inputs: Sequence[WgpuTensor], out_dtype: np.dtype[Any],
          funcs: tuple[str, ...], shape: Shape | None, out: WgpuTensor | None) -> _Plan:
    if out is not None:
        shape = out.shape
    elif shape is None:
        shape = _broadcast([t.shape for t in inputs])
    n = numel(shape)
    strides = [broadcast_view(t.shape, t.strides, shape) for t in inputs]
    strides.append(out.strides if out is not None else contiguous_strides(shape))
    merged, merged_strides = coalesce(shape, strides)
    classes = "".join(classify(merged, s) for s in merged_strides)
    rank = len(merged) if "g" in classes else 0
    if rank > MAX_RANK:
        raise WgpuLimitError(f"elementwise op over {rank} non-mergeable dims; at most "
                             f"{MAX_RANK} are supported")
    reads = tuple((storage_type(t.dtype), compute_type(t.dtype)) for t in inputs)
    write = (storage_type(out_dtype), compute_type(out_dtype))
    key = ("map", expr, reads, write, classes, rank, funcs)
    kernel = rt.kernel(key, lambda: _source(expr, reads, write, classes, rank, funcs),
                       len(inputs), 1)
    tail: list[int] = []
    if rank:
        tail += merged
        for cls, st in zip(classes, merged_strides, strict=True):
            if cls == "g":
                tail += st
    return _Plan(kernel, shape, n, tail)


def launch_map(rt: WgpuRuntime, expr: str, inputs: Sequence[WgpuTensor],
               out_dtype: np.dtype[Any], params: Sequence[int] = (),
               funcs: tuple[str, ...] = (), shape: Shape | None = None,
               out: WgpuTensor | None = None) -> WgpuTensor:
    """Evaluate ``expr`` elementwise over the broadcast ``inputs`` (or over ``shape`` when
    there are none) into a new contiguous tensor, or into the view ``out`` (its shape is the
    iteration shape). ``params`` are the scalar parameter words (ints or ``f32_bits``)."""
    if out is not None:
        out_dtype = out.dtype
    key = (expr, funcs, out_dtype, shape, None if out is None else (out.shape, out.strides),
           *[(t.shape, t.strides, t.dtype) for t in inputs])
    plan = rt.plans.get(key)
    if plan is None:
        if len(rt.plans) >= _PLAN_CACHE:
            rt.plans.clear()
        plan = rt.plans[key] = _plan(rt, expr, inputs, out_dtype, funcs, shape, out)
    if out is None:
        out = alloc_tensor(rt, plan.shape, out_dtype)
    if plan.n == 0:
        return out
    meta = [plan.n, *params, *_PAD[len(params)], *[t.offset for t in inputs], out.offset,
            *plan.tail]
    rt.dispatch_linear(plan.kernel, [t.handle.slab for t in inputs], [out.handle.slab], meta,
                       plan.groups)
    return out


def alloc_tensor(rt: WgpuRuntime, shape: Shape, dtype: np.dtype[Any]) -> WgpuTensor:
    """A new contiguous tensor of ``shape`` (uninitialized)."""
    handle = rt.alloc(numel(shape) * (4 if dtype.kind == "b" else dtype.itemsize))
    return WgpuTensor(rt, handle, shape, contiguous_strides(shape), 0, dtype)


def _broadcast(shapes: Sequence[Shape]) -> Shape:
    nd = max((len(s) for s in shapes), default=0)
    out = [1] * nd
    for s in shapes:
        for i, size in enumerate(s, start=nd - len(s)):
            if size != 1:
                out[i] = size
    return tuple(out)
