"""Stable sort along a dim: a bitonic network over (value, index) pairs.

Each line (every position off ``dim``) is padded to a power of two ``P``; padding sorts last,
and comparing indices on equal values makes the network stable. NaN sorts after every number
ascending and before it descending (torch's order). Lines of up to ``LOCAL_MAX`` elements are
sorted by one workgroup in workgroup memory in a single dispatch; longer lines go through a
scratch buffer with one dispatch per network stage.
"""

from __future__ import annotations

import numpy as np

from burnpy_wgpu.dtypes import compute_type, storage_type
from burnpy_wgpu.kernels.common import WG, entry, groups_for, header, load, store_cast
from burnpy_wgpu.kernels.elementwise import alloc_tensor, coalesce
from burnpy_wgpu.runtime import WgpuRuntime
from burnpy_wgpu.tensor import WgpuTensor, contiguous_strides, numel

#: Longest padded line sorted in workgroup memory (8 bytes per element must fit the limit).
LOCAL_MAX = 2048
I32 = np.dtype(np.int32)
_KEY_DTYPES = {"f32": np.dtype(np.float32), "i32": I32, "u32": np.dtype(np.uint32)}


def _before(acc: str) -> str:
    """``fn before(ka, ia, kb, ib) -> bool``: whether a sorts before b (meta[1] = line
    length, meta[2] = descending)."""
    nan = ""
    if acc == "f32":
        nan = """
    let na = is_nan(ka);
    let nb = is_nan(kb);
    if (na || nb) { if (na && nb) { return ia < ib; } return select(nb, na, desc); }"""
    return f"""
fn before(ka: {acc}, ia: i32, kb: {acc}, ib: i32) -> bool {{
    let len = i32(mu(1u));
    let desc = mu(2u) != 0u;
    let pa = ia >= len;
    let pb = ib >= len;
    if (pa || pb) {{ if (pa && pb) {{ return ia < ib; }} return pb; }}{nan}
    if (ka != kb) {{ return select((ka < kb), (ka > kb), desc); }}
    return ia < ib;
}}"""


def _line_offsets(rank: int) -> list[str]:
    """``in_off``/``out_off`` of line ``line`` (meta from word 6: outer shape, input strides,
    output strides)."""
    lines = ["    var q = line;", "    var in_off = mi(3u);", "    var out_off = 0u;"]
    base = 6
    for d in range(rank - 1, -1, -1):
        size = f"mu({base + d}u)"
        lines.append(f"    let c{d} = q % {size}; q = q / {size};")
        lines.append(f"    in_off = in_off + i32(c{d}) * mi({base + rank + d}u); "
                     f"out_off = out_off + c{d} * mu({base + 2 * rank + d}u);")
    return lines


def _local_source(src: tuple[str, str], out_store: str, rank: int, size: int,
                  threads: int) -> str:
    st, acc = src
    pad = "0.0" if acc == "f32" else f"{acc}(0)"
    body = ["    let line = group;", "    if (line >= mu(0u)) { return; }", *_line_offsets(rank),
            "    let len = mu(1u);",
            f"    for (var p = lid; p < {size}u; p = p + {threads}u) {{",
            f"        var k = {pad};",
            "        if (p < len) { k = " + load("in0", "u32(in_off + i32(p) * mi(4u))", st, acc)
            + "; }",
            "        keys[p] = k;", "        ids[p] = i32(p);", "    }",
            "    workgroupBarrier();",
            f"    for (var k = 2u; k <= {size}u; k = k << 1u) {{",
            "        for (var j = k >> 1u; j > 0u; j = j >> 1u) {",
            f"            for (var t = lid; t < {size // 2}u; t = t + {threads}u) {{",
            "                let i = 2u * j * (t / j) + t % j;",
            "                let l = i + j;",
            "                let up = (i & k) == 0u;",
            "                let swap = select(before(keys[i], ids[i], keys[l], ids[l]),",
            "                                  before(keys[l], ids[l], keys[i], ids[i]), up);",
            "                if (swap) {",
            "                    let tk = keys[i]; keys[i] = keys[l]; keys[l] = tk;",
            "                    let ti = ids[i]; ids[i] = ids[l]; ids[l] = ti;",
            "                }", "            }", "            workgroupBarrier();", "        }",
            "    }",
            f"    for (var p = lid; p < len; p = p + {threads}u) {{",
            "        let at = out_off + p * mu(5u);",
            f"        out0[at] = {store_cast('keys[p]', out_store, acc)};",
            "        out1[at] = ids[p];", "    }"]
    shared = f"""
var<workgroup> keys: array<{acc}, {size}>;
var<workgroup> ids: array<i32, {size}>;"""
    return header([st], [out_store, "i32"], _before(acc) + shared) + entry("\n".join(body),
                                                                            threads)


def _init_source(src: tuple[str, str], rank: int) -> str:
    st, acc = src
    pad = "0.0" if acc == "f32" else f"{acc}(0)"
    body = ["    let size = mu(5u);", "    let line = gid / size;", "    let p = gid % size;",
            "    if (line >= mu(0u)) { return; }", *_line_offsets(rank),
            f"    var k = {pad};",
            "    if (p < mu(1u)) { k = " + load("in0", "u32(in_off + i32(p) * mi(4u))", st, acc)
            + "; }",
            "    out0[gid] = k;", "    out1[gid] = i32(p);"]
    return header([st], [acc, "i32"]) + entry("\n".join(body))


def _step_source(acc: str) -> str:
    body = """
    let half = mu(5u) / 2u;
    if (gid >= mu(0u) * half) { return; }
    let line = gid / half;
    let t = gid % half;
    let j = mu(7u);
    let k = mu(6u);
    let i = 2u * j * (t / j) + t % j;
    let a = line * mu(5u) + i;
    let b = a + j;
    let up = (i & k) == 0u;
    let swap = select(before(out0[a], out1[a], out0[b], out1[b]),
                      before(out0[b], out1[b], out0[a], out1[a]), up);
    if (swap) {
        let tk = out0[a]; out0[a] = out0[b]; out0[b] = tk;
        let ti = out1[a]; out1[a] = out1[b]; out1[b] = ti;
    }"""
    return header([], [acc, "i32"], _before(acc)) + entry(body)


def _gather_source(acc: str, out_store: str, rank: int) -> str:
    body = ["    let len = mu(1u);", "    let line = gid / len;", "    let p = gid % len;",
            "    if (line >= mu(0u)) { return; }", *_line_offsets(rank),
            "    let at = out_off + p * mu(4u);", "    let src = line * mu(5u) + p;",
            f"    out0[at] = {store_cast('in0[src]', out_store, acc)};",
            "    out1[at] = in1[src];"]
    return header([acc, "i32"], [out_store, "i32"]) + entry("\n".join(body))


def sort(tensor: WgpuTensor, dim: int, descending: bool) -> tuple[WgpuTensor, WgpuTensor]:
    """Stably sorted values along ``dim`` and their source indices (int32)."""
    rt: WgpuRuntime = tensor.runtime
    shape = tensor.shape
    values = alloc_tensor(rt, shape, tensor.dtype)
    indices = alloc_tensor(rt, shape, I32)
    length = shape[dim]
    lines = numel(shape[:dim] + shape[dim + 1:])
    if lines == 0 or length == 0:
        return values, indices
    size = 1 << max(length - 1, 0).bit_length()
    out_strides = contiguous_strides(shape)
    merged, (in_strides, o_strides) = coalesce(
        shape[:dim] + shape[dim + 1:],
        [tensor.strides[:dim] + tensor.strides[dim + 1:],
         out_strides[:dim] + out_strides[dim + 1:]])
    rank = len(merged)
    src = (storage_type(tensor.dtype), compute_type(tensor.dtype))
    acc = src[1]
    out_store = storage_type(tensor.dtype)
    view = [*merged, *in_strides, *o_strides]
    if size <= min(LOCAL_MAX, rt.max_shared_bytes // 8):
        size = max(size, 2)
        threads = min(WG, size // 2)
        key = ("sort_local", src, out_store, rank, size, threads)
        kernel = rt.kernel(key, lambda: _local_source(src, out_store, rank, size, threads), 1, 2)
        meta = [lines, length, int(descending), tensor.offset, tensor.strides[dim],
                out_strides[dim], *view]
        rt.dispatch_linear(kernel, [tensor.handle.slab], [values.handle.slab,
                                                           indices.handle.slab], meta, lines)
        return values, indices
    keys = alloc_tensor(rt, (lines, size), _KEY_DTYPES[acc])
    ids = alloc_tensor(rt, (lines, size), I32)
    init = rt.kernel(("sort_init", src, rank), lambda: _init_source(src, rank), 1, 2)
    head = [lines, length, int(descending), tensor.offset, tensor.strides[dim], size]
    rt.dispatch_linear(init, [tensor.handle.slab], [keys.handle.slab, ids.handle.slab],
                       head + view, groups_for(lines * size))
    step = rt.kernel(("sort_step", acc), lambda: _step_source(acc), 0, 2)
    k = 2
    while k <= size:
        j = k // 2
        while j:
            rt.dispatch_linear(step, [], [keys.handle.slab, ids.handle.slab],
                               [lines, length, int(descending), 0, 0, size, k, j],
                               groups_for(lines * size // 2))
            j //= 2
        k *= 2
    gather = rt.kernel(("sort_gather", acc, out_store, rank),
                       lambda: _gather_source(acc, out_store, rank), 2, 2)
    meta = [lines, length, int(descending), 0, out_strides[dim], size, *view]
    rt.dispatch_linear(gather, [keys.handle.slab, ids.handle.slab],
                       [values.handle.slab, indices.handle.slab], meta,
                       groups_for(lines * length))
    return values, indices
