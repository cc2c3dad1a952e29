"""Reductions along one dim of any strided view, correct for any size.

Two kernels: when there are many outputs or the reduced dim is short, one invocation reduces
one output serially; otherwise each workgroup reduces a chunk of one output's dim (a strided
loop per invocation, then a tree in workgroup memory) into partial results, and the partials
``[outputs, chunks]`` are reduced again until one chunk is left. On CPU adapters, where
workgroup barriers are coroutine switches, the serial kernel handles long dims too, one
invocation per chunk of ``SERIAL_CHUNK`` elements, with the same multi-pass scheme. Float
sums use compensated (Kahan) accumulation in f32 (f16 inputs too); ints accumulate in i32
with wrap-around.
Arg-reductions carry (value, index) pairs: the first index wins ties, and NaN wins over any
number (torch's argmax/argmin).
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from burnpy_wgpu.dtypes import compute_type, storage_type
from burnpy_wgpu.kernels.common import WG, entry, groups_for, header, load, store_cast
from burnpy_wgpu.kernels.elementwise import alloc_tensor, coalesce
from burnpy_wgpu.kernels.indexing import copy
from burnpy_wgpu.tensor import Shape, WgpuTensor, numel

#: Elements of the reduced dim one workgroup reduces in the workgroup kernel.
CHUNK = WG * 8
#: Elements one invocation reduces in the serial kernel on CPU adapters.
SERIAL_CHUNK = 2048
_SERIAL_MAX_DIM = 64
_SERIAL_MIN_OUTPUTS = 4096
_NO_INDEX = 0x7FFFFFFF
I32 = np.dtype(np.int32)

#: The identity of each reduction per accumulator type, as WGSL.
IDENTITY = {
    ("sum", "f32"): "0.0", ("sum", "i32"): "0", ("sum", "u32"): "0u",
    ("prod", "f32"): "1.0", ("prod", "i32"): "1", ("prod", "u32"): "1u",
    ("max", "f32"): "-inf_f32()", ("max", "i32"): "i32(-2147483647 - 1)", ("max", "u32"): "0u",
    ("min", "f32"): "inf_f32()", ("min", "i32"): "2147483647", ("min", "u32"): "4294967295u",
    ("any", "u32"): "0u", ("all", "u32"): "1u",
}


def _combine(op: str, acc: str) -> str:
    """WGSL for ``fn combine(x, y) -> A`` (non-arg ops)."""
    if op == "sum":
        expr = "x + y"
    elif op == "prod":
        expr = "x * y"
    elif op == "any":
        expr = "x | y"
    elif op == "all":
        expr = "x & y"
    elif acc == "f32":
        pick = "max(x, y)" if op == "max" else "min(x, y)"
        expr = f"select(select({pick}, y, is_nan(y)), x, is_nan(x))"
    else:
        expr = f"{op}(x, y)"
    return f"\nfn combine(x: {acc}, y: {acc}) -> {acc} {{ return {expr}; }}"


def _wins(op: str, acc: str) -> str:
    """WGSL for ``fn wins(va, ia, vb, ib) -> bool``: whether (vb, ib) beats (va, ia)."""
    cmp = ">" if op == "max" else "<"
    nan = ""
    if acc == "f32":
        nan = """
    let na = is_nan(va);
    let nb = is_nan(vb);
    if (na || nb) { if (na && nb) { return ib < ia; } return nb; }"""
    return f"""
fn wins(va: {acc}, ia: i32, vb: {acc}, ib: i32) -> bool {{{nan}
    if (vb {cmp} va) {{ return true; }}
    if (va {cmp} vb) {{ return false; }}
    return ib < ia;
}}"""


def _outer_offset(rank: int, base: int) -> list[str]:
    """Lines computing ``off``, the input offset of output ``o`` (meta: shape, strides)."""
    lines = ["    var q = o;", f"    var off = mi({base}u);"]
    for d in range(rank - 1, -1, -1):
        lines.append(f"    off = off + i32(q % mu({base + 1 + d}u)) * mi({base + 1 + rank + d}u); "
                     f"q = q / mu({base + 1 + d}u);")
    return lines


def _source(kind: str, op: str, arg: bool, src: tuple[str, str], acc: str, out_store: str,
            index_in: bool, rank: int) -> str:
    """``kind`` is ``serial`` (one chunk of one output per invocation) or ``workgroup`` (one
    chunk per workgroup). Meta: [outputs, dim size, dim stride, chunks, chunk size, *outer
    view]."""
    st, _ = src
    ident = IDENTITY[(op, acc)]
    kahan = op == "sum" and acc == "f32"
    value = load("in0", "u32(off + i32(r) * stride)", st, acc)
    lines = [f"        let v = {value};"]
    if arg:
        src_index = "in1[u32(off + i32(r) * stride)]" if index_in else "i32(r)"
        lines += [f"        let vi = {src_index};",
                  "        if (wins(acc, acc_i, v, vi)) { acc = v; acc_i = vi; }"]
    elif kahan:
        lines += ["        let y = v - comp;", "        let t = acc + y;",
                  "        comp = select(0.0, (t - acc) - y, !is_inf(t));", "        acc = t;"]
    else:
        lines.append("        acc = combine(acc, v);")
    step = "\n".join(lines)
    init = [f"    var acc: {acc} = {ident};", f"    var acc_i: i32 = {_NO_INDEX};",
            "    var comp: f32 = 0.0;", "    let size = mu(1u);", "    let stride = mi(2u);"]
    funcs = _wins(op, acc) if arg else _combine(op, acc)
    reads = [st, "i32"] if index_in else [st]
    writes = [out_store, "i32"] if arg else [out_store]
    store = store_cast("acc", out_store, acc)
    if kind == "serial":
        body = ["    let chunks = mu(3u);", "    let o = gid / chunks;",
                "    let ch = gid % chunks;",
                "    if (o >= mu(0u)) { return; }", *init, *_outer_offset(rank, 5),
                "    let stop = min(size, (ch + 1u) * mu(4u));",
                "    for (var r = ch * mu(4u); r < stop; r = r + 1u) {", step, "    }",
                "    acc = acc - comp;" if kahan else "", f"    out0[gid] = {store};"]
        if arg:
            body.append("    out1[gid] = acc_i;")
        return header(reads, writes, funcs) + entry("\n".join(body))
    shared = f"""
var<workgroup> sv: array<{acc}, {WG}>;
var<workgroup> si: array<i32, {WG}>;"""
    merge = ("if (wins(sv[lid], si[lid], sv[lid + s], si[lid + s])) "
             "{ sv[lid] = sv[lid + s]; si[lid] = si[lid + s]; }") if arg else \
        "sv[lid] = combine(sv[lid], sv[lid + s]);"
    body = ["    let chunks = mu(3u);", "    let o = group / chunks;",
            "    let ch = group % chunks;",
            "    if (o >= mu(0u)) { return; }", *init, *_outer_offset(rank, 5),
            "    let start = ch * mu(4u);", "    let stop = min(size, start + mu(4u));",
            "    for (var r = start + lid; r < stop; r = r + " + f"{WG}u) {{", step, "    }",
            "    sv[lid] = acc;" if not kahan else "    sv[lid] = acc - comp;",
            "    si[lid] = acc_i;", "    workgroupBarrier();",
            f"    for (var s = {WG // 2}u; s > 0u; s = s >> 1u) {{",
            f"        if (lid < s) {{ {merge} }}", "        workgroupBarrier();", "    }",
            "    if (lid == 0u) {", "        let acc = sv[0];",
            f"        out0[o * chunks + ch] = {store};"]
    if arg:
        body.append("        out1[o * chunks + ch] = si[0];")
    body.append("    }")
    return header(reads, writes, funcs + shared) + entry("\n".join(body))


def reduce_dim(tensor: WgpuTensor, dim: int, op: str) -> WgpuTensor:
    """``op`` (sum, prod, max, min, any, all) along ``dim``, kept with size 1."""
    return _along(tensor, dim, op, False)[0]


def reduce_dim_with_indices(tensor: WgpuTensor, dim: int, op: str
                            ) -> tuple[WgpuTensor, WgpuTensor]:
    """``op`` (max or min) along ``dim``, kept, and the int32 index of the first extreme."""
    values, indices = _along(tensor, dim, op, True)
    return values, cast(WgpuTensor, indices)


def _along(tensor: WgpuTensor, dim: int, op: str, arg: bool
           ) -> tuple[WgpuTensor, WgpuTensor | None]:
    shape = tensor.shape
    out_shape = shape[:dim] + (1,) + shape[dim + 1:]
    outer = shape[:dim] + shape[dim + 1:]
    outer_strides = tensor.strides[:dim] + tensor.strides[dim + 1:]
    return _reduce(tensor, tensor.offset, shape[dim], tensor.strides[dim], outer, outer_strides,
                   out_shape, op, arg, tensor.dtype, None)


def reduce_all(tensor: WgpuTensor, op: str) -> WgpuTensor:
    """``op`` over every element, shape ()."""
    n = numel(tensor.shape)
    if not tensor.is_contiguous():
        tensor = copy(tensor)
    out, _ = _reduce(tensor, tensor.offset, n, 1, (), (), (), op, False, tensor.dtype, None)
    return out


def _reduce(values: WgpuTensor, offset: int, size: int, stride: int, outer: Shape,
            outer_strides: Shape, out_shape: Shape, op: str, arg: bool,
            out_dtype: np.dtype[Any], indices: WgpuTensor | None
            ) -> tuple[WgpuTensor, WgpuTensor | None]:
    rt = values.runtime
    outputs = numel(outer)
    merged, (merged_strides,) = coalesce(outer, [outer_strides])
    rank = len(merged)
    acc = compute_type(values.dtype)
    src = (storage_type(values.dtype), acc)
    if rt.is_cpu:
        serial, chunk = True, SERIAL_CHUNK
        chunks = 1 if outputs >= _SERIAL_MIN_OUTPUTS else groups_for(size, SERIAL_CHUNK)
    else:
        serial = size <= _SERIAL_MAX_DIM or outputs >= _SERIAL_MIN_OUTPUTS
        chunk = max(size, 1) if serial else CHUNK
        chunks = 1 if serial else groups_for(size, CHUNK)
    final = chunks <= 1
    if final:
        out = alloc_tensor(rt, out_shape, out_dtype)
        out_idx = alloc_tensor(rt, out_shape, I32) if arg else None
        out_store = storage_type(out_dtype)
    else:
        part_dtype = np.dtype(np.float32) if acc == "f32" else values.dtype
        out = alloc_tensor(rt, (outputs, chunks), part_dtype)
        out_idx = alloc_tensor(rt, (outputs, chunks), I32) if arg else None
        out_store = storage_type(part_dtype)
    if outputs == 0:
        return out, out_idx
    kind = "serial" if serial else "workgroup"
    index_in = indices is not None
    key = ("reduce", kind, op, arg, src, acc, out_store, index_in, rank)
    kernel = rt.kernel(key, lambda: _source(kind, op, arg, src, acc, out_store, index_in, rank),
                       2 if index_in else 1, 2 if arg else 1)
    chunks = max(chunks, 1)
    meta = [outputs, size, stride, chunks, chunk, offset, *merged, *merged_strides]
    reads = [values.handle.slab] + ([indices.handle.slab] if indices is not None else [])
    writes = [out.handle.slab] + ([out_idx.handle.slab] if out_idx is not None else [])
    if serial:
        rt.dispatch_linear(kernel, reads, writes, meta, groups_for(outputs * chunks, WG))
    else:
        rt.dispatch_linear(kernel, reads, writes, meta, outputs * chunks)
    if final:
        return out, out_idx
    return _reduce(out, 0, chunks, 1, (outputs,), (chunks,), out_shape, op, arg, out_dtype,
                   out_idx)
