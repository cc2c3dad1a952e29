"""Scans: cumulative ops along a dim, and the exclusive prefix sum behind ``argwhere``.

Cumulative ops run one invocation per line (every position off ``dim``), serially along the
line, reading any strided view and writing a contiguous output; running max/min also return,
as torch does, the latest index where the running value was reached (NaN sticks). The
prefix sum is blocked: each workgroup scans 1024 values in workgroup memory and emits its
total, the totals are scanned recursively and added back.
"""

from __future__ import annotations

from typing import cast

import numpy as np

from burnpy_wgpu.dtypes import compute_type, storage_type
from burnpy_wgpu.kernels.common import WG, entry, groups_for, header, load, store_cast
from burnpy_wgpu.kernels.elementwise import alloc_tensor, coalesce, launch_map
from burnpy_wgpu.kernels.reduce import IDENTITY
from burnpy_wgpu.runtime import WgpuRuntime
from burnpy_wgpu.tensor import WgpuTensor, contiguous_strides, numel

I32 = np.dtype(np.int32)
U32 = np.dtype(np.uint32)
_PER_THREAD = 4
_BLOCK = WG * _PER_THREAD


def _cumulative_source(op: str, src: tuple[str, str], out_store: str, rank: int) -> str:
    st, acc = src
    with_index = op in ("max", "min")
    lines = ["    let o = gid;", "    if (o >= mu(0u)) { return; }", "    var q = o;",
             "    var off = mi(3u);", "    var out_off = 0u;"]
    base = 5
    for d in range(rank - 1, -1, -1):
        size = f"mu({base + d}u)"
        lines.append(f"    let c{d} = q % {size}; q = q / {size};")
        lines.append(f"    off = off + i32(c{d}) * mi({base + rank + d}u); "
                     f"out_off = out_off + c{d} * mu({base + 2 * rank + d}u);")
    ident = IDENTITY[(op, acc)]
    lines += [f"    var acc: {acc} = {ident};", "    var best_i = 0;",
              "    for (var r = 0u; r < mu(1u); r = r + 1u) {",
              f"        let v = {load('in0', 'u32(off + i32(r) * mi(2u))', st, acc)};"]
    if op == "sum":
        lines.append("        acc = acc + v;")
    elif op == "prod":
        lines.append("        acc = acc * v;")
    else:
        cmp = ">=" if op == "max" else "<="
        if acc == "f32":
            lines.append(f"        if (is_nan(v) || (!is_nan(acc) && v {cmp} acc)) "
                         "{ acc = v; best_i = i32(r); }")
        else:
            lines.append(f"        if (v {cmp} acc) {{ acc = v; best_i = i32(r); }}")
    lines.append("        let at = out_off + r * mu(4u);")
    lines.append(f"        out0[at] = {store_cast('acc', out_store, acc)};")
    if with_index:
        lines.append("        out1[at] = best_i;")
    lines.append("    }")
    writes = [out_store, "i32"] if with_index else [out_store]
    return header([st], writes) + entry("\n".join(lines))


def cumulative(tensor: WgpuTensor, dim: int, op: str) -> WgpuTensor:
    """Running ``op`` (sum or prod) along ``dim``."""
    return _cumulative(tensor, dim, op)[0]


def cumulative_with_indices(tensor: WgpuTensor, dim: int, op: str
                            ) -> tuple[WgpuTensor, WgpuTensor]:
    """Running ``op`` (max or min) along ``dim`` and the latest index reaching it."""
    values, indices = _cumulative(tensor, dim, op)
    return values, cast(WgpuTensor, indices)


def _cumulative(tensor: WgpuTensor, dim: int, op: str) -> tuple[WgpuTensor, WgpuTensor | None]:
    rt: WgpuRuntime = tensor.runtime
    shape = tensor.shape
    out = alloc_tensor(rt, shape, tensor.dtype)
    with_index = op in ("max", "min")
    idx = alloc_tensor(rt, shape, I32) if with_index else None
    lines = numel(shape[:dim] + shape[dim + 1:])
    if numel(shape) == 0:
        return out, idx
    out_strides = contiguous_strides(shape)
    outer = shape[:dim] + shape[dim + 1:]
    merged, (in_strides, o_strides) = coalesce(
        outer, [tensor.strides[:dim] + tensor.strides[dim + 1:],
                out_strides[:dim] + out_strides[dim + 1:]])
    rank = len(merged)
    src = (storage_type(tensor.dtype), compute_type(tensor.dtype))
    out_store = storage_type(tensor.dtype)
    key = ("cumulative", op, src, out_store, rank)
    kernel = rt.kernel(key, lambda: _cumulative_source(op, src, out_store, rank), 1,
                       2 if with_index else 1)
    meta = [lines, shape[dim], tensor.strides[dim], tensor.offset, out_strides[dim], *merged,
            *in_strides, *o_strides]
    writes = [out.handle.slab] + ([idx.handle.slab] if idx is not None else [])
    rt.dispatch_linear(kernel, [tensor.handle.slab], writes, meta, groups_for(lines, WG))
    return out, idx


def _scan_block_source() -> str:
    loads = "\n".join(
        f"    let x{i} = select(0u, in0[base + {i}u], base + {i}u < n);"
        for i in range(_PER_THREAD))
    sums = "\n".join(f"    let s{i} = s{i - 1} + x{i};" if i else "    let s0 = x0;"
                     for i in range(_PER_THREAD))
    writes = "\n".join(f"    if (base + {i}u < n) {{ out0[base + {i}u] = prefix + s{i} - x{i}; }}"
                       for i in range(_PER_THREAD))
    last = f"s{_PER_THREAD - 1}"
    body = f"""
    let n = mu(0u);
    let base = group * {_BLOCK}u + lid * {_PER_THREAD}u;
{loads}
{sums}
    part[lid] = {last};
    workgroupBarrier();
    for (var off = 1u; off < {WG}u; off = off << 1u) {{
        var v = part[lid];
        if (lid >= off) {{ v = v + part[lid - off]; }}
        workgroupBarrier();
        part[lid] = v;
        workgroupBarrier();
    }}
    let prefix = select(0u, part[max(lid, 1u) - 1u], lid > 0u);
{writes}
    if (lid == {WG - 1}u) {{ out1[group] = part[{WG - 1}u]; }}"""
    shared = f"\nvar<workgroup> part: array<u32, {WG}>;"
    return header(["u32"], ["u32", "u32"], shared) + entry(body)


def exclusive_scan(values: WgpuTensor) -> WgpuTensor:
    """Exclusive prefix sums of a contiguous 1-D u32 tensor (wrapping), as u32."""
    rt: WgpuRuntime = values.runtime
    n = values.shape[0]
    out = alloc_tensor(rt, (n,), U32)
    if n == 0:
        return out
    blocks = groups_for(n, _BLOCK)
    totals = alloc_tensor(rt, (blocks,), U32)
    kernel = rt.kernel(("scan_block",), _scan_block_source, 1, 2)
    rt.dispatch_linear(kernel, [values.handle.slab], [out.handle.slab, totals.handle.slab],
                       [n], blocks)
    if blocks > 1:
        _add_block_offsets(rt, out, exclusive_scan(totals), n)
    return out


def _add_block_offsets(rt: WgpuRuntime, out: WgpuTensor, offsets: WgpuTensor, n: int) -> None:
    body = f"""
    if (gid >= mu(0u)) {{ return; }}
    out0[gid] = out0[gid] + in0[gid / {_BLOCK}u];"""
    kernel = rt.kernel(("scan_add",), lambda: header(["u32"], ["u32"]) + entry(body), 1, 1)
    rt.dispatch_linear(kernel, [offsets.handle.slab], [out.handle.slab], [n], groups_for(n))


def _argwhere_source(rank: int) -> str:
    lines = ["    if (gid >= mu(0u)) { return; }", "    if (in0[gid] == 0u) { return; }",
             f"    let at = in1[gid] * {rank}u;", "    var q = gid;"]
    for d in range(rank - 1, -1, -1):
        lines.append(f"    out0[at + {d}u] = i32(q % mu({1 + d}u)); q = q / mu({1 + d}u);")
    return header(["u32", "u32"], ["i32"]) + entry("\n".join(lines))


def argwhere(mask: WgpuTensor) -> WgpuTensor:
    """Row-major coordinates ``[count, ndim]`` (int32) of the true elements of ``mask``;
    reads the count back to size the output."""
    rt: WgpuRuntime = mask.runtime
    n = numel(mask.shape)
    rank = len(mask.shape)
    flat = launch_map(rt, "a", [mask], U32).view((n,), (1,), 0)
    positions = exclusive_scan(flat)
    count = 0
    if n:
        last = launch_map(rt, "a + b", [positions.view((1,), (1,), n - 1),
                                        flat.view((1,), (1,), n - 1)], U32)
        count = int(np.frombuffer(rt.read(last.handle.slab, 0, 4), dtype=U32)[0])
    out = alloc_tensor(rt, (count, rank), I32)
    if count and rank:
        kernel = rt.kernel(("argwhere", rank), lambda: _argwhere_source(rank), 2, 1)
        rt.dispatch_linear(kernel, [flat.handle.slab, positions.handle.slab],
                           [out.handle.slab], [n, *mask.shape], groups_for(n))
    return out

