"""Separable resampling along one axis with a sparse weight table: average pools, adaptive
average pools, nearest/bilinear interpolation, and all their backward passes.

Each of these ops is, per spatial axis, ``out[..., m, ...] = sum_e w[e] * x[..., src[e], ...]``
over the entries ``e`` of row ``m`` of a small CSR table (torch's window bounds, pool divisors
and interpolation taps; pool divisors and bilinear weights factor over axes). The backward pass
is the same kernel with the transposed table, so no atomics are needed. Tables are built on
the host once per configuration and cached on the device.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from burnpy.backend.ops.module_ops import pool_output_size
from burnpy_wgpu.dtypes import compute_type, storage_type
from burnpy_wgpu.kernels.common import WG, entry, groups_for, header, load, store_cast
from burnpy_wgpu.kernels.elementwise import alloc_tensor
from burnpy_wgpu.runtime import WgpuRuntime
from burnpy_wgpu.tensor import WgpuTensor, numel

Rows = tuple[np.ndarray, np.ndarray, np.ndarray]  # row_ptr [m + 1], src [e], weight [e]


def _csr(entries: list[tuple[np.ndarray, np.ndarray]], rows: int) -> Rows:
    """A CSR table from per-tap ``(src per row, weight per row)`` pairs (one entry per row
    per tap), entries of a row in tap order; rows with no source carry weight 0."""
    src = np.stack([e[0] for e in entries], axis=1).reshape(-1)
    weight = np.stack([e[1] for e in entries], axis=1).reshape(-1)
    ptr = np.arange(rows + 1, dtype=np.int64) * len(entries)
    return ptr, src.astype(np.int64), weight.astype(np.float32)


def pool_rows(size: int, kernel: int, stride: int, padding: int, ceil_mode: bool,
              count_include_pad: bool) -> Rows:
    """Average-pool windows along one axis, each tap weighted 1 / torch's divisor share."""
    out = pool_output_size(size, kernel, stride, padding, 1, ceil_mode)
    start = np.arange(out, dtype=np.int64) * stride - padding
    end = np.minimum(start + kernel, size + padding)
    lo, hi = np.maximum(start, 0), np.minimum(end, size)
    count = end - start if count_include_pad else hi - lo
    return _runs(lo, hi, 1.0 / np.maximum(count, 1).astype(np.float64))


def adaptive_rows(size: int, out: int) -> Rows:
    """Adaptive-pool bins ``floor(i*in/out)`` to ``ceil((i+1)*in/out)``, averaged."""
    i = np.arange(out, dtype=np.int64)
    lo, hi = (i * size) // out, -((-(i + 1) * size) // out)
    return _runs(lo, hi, 1.0 / (hi - lo).astype(np.float64))


def _runs(lo: np.ndarray, hi: np.ndarray, weight: np.ndarray) -> Rows:
    """Rows summing ``x[lo[m]:hi[m]]`` with a per-row weight."""
    counts = np.maximum(hi - lo, 0)
    ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    row = np.repeat(np.arange(len(lo)), counts)
    src = lo[row] + (np.arange(int(ptr[-1])) - ptr[row])
    return ptr, src.astype(np.int64), weight[row].astype(np.float32)


def interpolate_rows(size_in: int, size_out: int, mode: str, align_corners: bool) -> Rows:
    """torch's 1-d source taps for ``nearest`` or ``bilinear`` (coordinates in float32)."""
    f32 = np.float32
    if mode == "nearest":
        scale = f32(size_in) / f32(size_out)
        src = np.floor(np.arange(size_out, dtype=f32) * scale)
        idx = np.minimum(src.astype(np.int64), size_in - 1)
        return _csr([(idx, np.ones(size_out, f32))], size_out)
    dst = np.arange(size_out, dtype=f32)
    if align_corners:
        scale = f32(size_in - 1) / f32(size_out - 1) if size_out > 1 else f32(0)
        src = dst * scale
    else:
        scale = f32(size_in) / f32(size_out)
        src = np.maximum((dst + f32(0.5)) * scale - f32(0.5), f32(0))
    i0 = np.minimum(np.floor(src).astype(np.int64), size_in - 1)
    i1 = np.minimum(i0 + 1, size_in - 1)
    l1 = np.clip(src - i0.astype(f32), 0, 1).astype(f32)
    return _csr([(i0, (f32(1) - l1).astype(f32)), (i1, l1)], size_out)


def transpose_rows(rows: Rows, size: int) -> Rows:
    """The adjoint table: row ``j`` lists every (output, weight) that read source ``j``."""
    ptr, src, weight = rows
    owner = np.repeat(np.arange(len(ptr) - 1), np.diff(ptr))
    order = np.argsort(src, kind="stable")
    counts = np.bincount(src, minlength=size)
    new_ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return new_ptr, owner[order].astype(np.int64), weight[order]


class Table:
    """A CSR table on the device: ``ints`` = row_ptr then src (i32), ``weights`` (f32)."""

    __slots__ = ("ints", "rows", "weights")

    def __init__(self, rt: WgpuRuntime, rows: Rows) -> None:
        ptr, src, weight = rows
        self.rows = len(ptr) - 1
        self.ints = rt.upload(np.concatenate([ptr, src]).astype(np.int32))
        self.weights = rt.upload(np.ascontiguousarray(weight, dtype=np.float32))


def table(rt: WgpuRuntime, key: Any, build: Any) -> Table:
    """The device table for ``key``, built by ``build()`` (host rows) on first use."""
    found = rt.tables.get(key)
    if found is None:
        found = rt.tables[key] = Table(rt, build())
    return found


def _source(src: tuple[str, str], out_store: str, rank: int) -> str:
    st, ct = src
    body = ["    if (gid >= mu(0u)) { return; }", "    let axis = mu(1u);", "    var q = gid;",
            f"    var c: array<i32, {rank}>;"]
    base = 4
    for d in range(rank - 1, -1, -1):
        body.append(f"    c[{d}] = i32(q % mu({base + d}u)); q = q / mu({base + d}u);")
    offset = " + ".join(f"c[{d}] * mi({base + rank + d}u)" for d in range(rank))
    body += ["    let m = u32(c[axis]);", "    var acc = 0.0;",
             "    for (var e = u32(in1[m]); e < u32(in1[m + 1u]); e = e + 1u) {",
             "        c[axis] = in1[mu(2u) + e];",
             f"        acc = acc + in2[e] * {load('in0', f'u32(mi(3u) + {offset})', st, ct)};",
             "    }", f"    out0[gid] = {store_cast('acc', out_store, 'f32')};"]
    return header([st, "i32", "f32"], [out_store]) + entry("\n".join(body))


def apply(x: WgpuTensor, axis: int, tbl: Table) -> WgpuTensor:
    """``x`` resampled along ``axis`` by ``tbl`` (output size ``tbl.rows``), contiguous."""
    rt: WgpuRuntime = x.runtime
    shape = x.shape[:axis] + (tbl.rows,) + x.shape[axis + 1:]
    out = alloc_tensor(rt, shape, x.dtype)
    n = numel(shape)
    if n == 0:
        return out
    rank = len(shape)
    src = (storage_type(x.dtype), compute_type(x.dtype))
    out_store = storage_type(x.dtype)
    kernel = rt.kernel(("resample", src, out_store, rank),
                       lambda: _source(src, out_store, rank), 3, 1)
    meta = [n, axis, tbl.rows + 1, x.offset, *shape, *x.strides]
    rt.dispatch_linear(kernel, [x.handle.slab, tbl.ints.slab, tbl.weights.slab],
                       [out.handle.slab], meta, groups_for(n, WG))
    return out


def separable(x: WgpuTensor, tables: list[tuple[int, Table]]) -> WgpuTensor:
    """``x`` resampled along each ``(axis, table)`` in turn."""
    for axis, tbl in tables:
        x = apply(x, axis, tbl)
    return x
