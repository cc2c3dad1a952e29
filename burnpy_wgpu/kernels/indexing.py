"""Indexing kernels: gather, select, and their scatter forms (assign and add).

One template serves all six: it walks an iteration shape, reads an int index (from a full view
over the iteration coordinates for gather/scatter, or from a 1-D list at the coordinate along
``dim`` for select), and substitutes it for the coordinate along ``dim`` in the offset of the
indexed tensor. Sums into duplicate indices (scatter_add, select_add) use atomics: ``atomicAdd``
for ints and a compare-and-swap loop on the u32 bit pattern for floats (two f16 share a word),
since WGSL has no float atomics.
"""

from __future__ import annotations

from burnpy_wgpu.dtypes import compute_type, storage_type
from burnpy_wgpu.kernels.common import WG, entry, groups_for, header, load, store_cast
from burnpy_wgpu.kernels.elementwise import alloc_tensor, launch_map
from burnpy_wgpu.runtime import WgpuRuntime
from burnpy_wgpu.tensor import Shape, WgpuTensor, broadcast_view, numel

_ATOMIC_ADD = {
    "f32": """
fn accumulate(i: u32, v: f32) {
    var old = atomicLoad(&out0[i]);
    loop {
        let r = atomicCompareExchangeWeak(&out0[i], old, bitcast<u32>(bitcast<f32>(old) + v));
        if (r.exchanged) { break; }
        old = r.old_value;
    }
}""",
    "f16": """
fn accumulate(i: u32, v: f32) {
    let w = i >> 1u;
    var old = atomicLoad(&out0[w]);
    loop {
        var pair = unpack2x16float(old);
        if ((i & 1u) == 0u) { pair.x = pair.x + v; } else { pair.y = pair.y + v; }
        let r = atomicCompareExchangeWeak(&out0[w], old, pack2x16float(pair));
        if (r.exchanged) { break; }
        old = r.old_value;
    }
}""",
    "i32": "\nfn accumulate(i: u32, v: i32) { atomicAdd(&out0[i], v); }",
    "u32": "\nfn accumulate(i: u32, v: u32) { atomicAdd(&out0[i], v); }",
}


def _coords(rank: int, shape_base: int) -> list[str]:
    lines = ["    var r = gid;", f"    var c: array<i32, {max(rank, 1)}>;"]
    for d in range(rank - 1, 0, -1):
        lines.append(f"    c[{d}] = i32(r % mu({shape_base + d}u)); r = r / mu({shape_base + d}u);")
    if rank:
        lines.append("    c[0] = i32(r);")
    return lines


def _offset(base: int, rank: int) -> str:
    terms = "".join(f" + c[{d}] * mi({base + 1 + d}u)" for d in range(rank))
    return f"u32(mi({base}u){terms})"


def _source(mode: str, rank: int, src: tuple[str, str], out_storage: str,
            accumulate: bool) -> str:
    """``mode``: ``gather``/``select`` read the indexed tensor (in0) into a contiguous output;
    ``scatter``/``select_assign`` write in0's values into the indexed output."""
    shape_base = 2
    idx_base = shape_base + rank
    a_base = idx_base + 1 + rank
    out_base = a_base + 1 + rank
    full_index = mode in ("gather", "scatter")
    body = ["    if (gid >= mu(0u)) { return; }", "    let dim = mu(1u);",
            *_coords(rank, shape_base)]
    if full_index:
        body.append(f"    let v = in1[{_offset(idx_base, rank)}];")
    else:
        body.append(f"    let v = in1[u32(mi({idx_base}u) + c[dim] * mi({idx_base + 1}u))];")
    st, ct = src
    if mode in ("gather", "select"):
        body.append("    c[dim] = v;")
        body.append(f"    let value = {load('in0', _offset(a_base, rank), st, ct)};")
        body.append(f"    out0[gid] = {store_cast('value', out_storage, ct)};")
        extra = ""
    else:
        body.append(f"    let value = {load('in0', _offset(a_base, rank), st, ct)};")
        body.append("    c[dim] = v;")
        if accumulate:
            body.append(f"    accumulate({_offset(out_base, rank)}, value);")
            extra = _ATOMIC_ADD[out_storage]
        else:
            body.append(f"    out0[{_offset(out_base, rank)}] = "
                        f"{store_cast('value', out_storage, ct)};")
            extra = ""
    if accumulate:
        write = "atomic<u32>" if out_storage in ("f32", "f16") else f"atomic<{out_storage}>"
    else:
        write = out_storage
    return header([st, "i32"], [write], extra) + entry("\n".join(body))


def _launch(rt: WgpuRuntime, mode: str, iter_shape: Shape, dim: int, source: WgpuTensor,
            indices: WgpuTensor, out: WgpuTensor, accumulate: bool = False) -> None:
    n = numel(iter_shape)
    if n == 0:
        return
    rank = len(iter_shape)
    src = (storage_type(source.dtype), compute_type(source.dtype))
    out_storage = storage_type(out.dtype)
    key = ("index", mode, rank, src, out_storage, accumulate)
    kernel = rt.kernel(key, lambda: _source(mode, rank, src, out_storage, accumulate), 2, 1)
    if mode in ("gather", "scatter"):
        idx_view = (indices.offset, *broadcast_view(indices.shape, indices.strides, iter_shape))
    else:
        idx_view = (indices.offset, indices.strides[0], *([0] * (rank - 1)))
    meta = [n, dim, *iter_shape, *idx_view, source.offset, *source.strides, out.offset,
            *out.strides]
    rt.dispatch_linear(kernel, [source.handle.slab, indices.handle.slab], [out.handle.slab],
                       meta, groups_for(n, WG))


def gather(tensor: WgpuTensor, dim: int, indices: WgpuTensor) -> WgpuTensor:
    """``out[i][j] = tensor[i][indices[i][j]]`` along ``dim``; out has the indices' shape."""
    rt = tensor.runtime
    out = alloc_tensor(rt, indices.shape, tensor.dtype)
    _launch(rt, "gather", indices.shape, dim, tensor, indices, out)
    return out


def select(tensor: WgpuTensor, dim: int, indices: WgpuTensor) -> WgpuTensor:
    """Slices of ``tensor`` along ``dim`` at the 1-D ``indices``."""
    rt = tensor.runtime
    shape = tensor.shape[:dim] + (indices.shape[0],) + tensor.shape[dim + 1:]
    out = alloc_tensor(rt, shape, tensor.dtype)
    _launch(rt, "select", shape, dim, tensor, indices, out)
    return out


def scatter(tensor: WgpuTensor, dim: int, indices: WgpuTensor, values: WgpuTensor,
            accumulate: bool) -> WgpuTensor:
    """A copy of ``tensor`` with ``values`` written (or summed, when ``accumulate``) at
    ``indices`` along ``dim``; only the part of ``values`` covered by ``indices`` is used."""
    out = copy(tensor)
    _launch(tensor.runtime, "scatter", indices.shape, dim, _cover(values, indices.shape),
            indices, out, accumulate)
    return out


def select_scatter(tensor: WgpuTensor, dim: int, indices: WgpuTensor, values: WgpuTensor,
                   accumulate: bool) -> WgpuTensor:
    """A copy of ``tensor`` whose slices at ``indices`` along ``dim`` are replaced by (or
    summed with, when ``accumulate``) the slices of ``values``."""
    out = copy(tensor)
    _launch(tensor.runtime, "select_assign", values.shape, dim, values, indices, out,
            accumulate)
    return out


def copy(tensor: WgpuTensor) -> WgpuTensor:
    """A new contiguous tensor with the same values."""
    return launch_map(tensor.runtime, "a", [tensor], tensor.dtype)


def _cover(values: WgpuTensor, shape: Shape) -> WgpuTensor:
    """The leading ``shape`` block of ``values`` (a view)."""
    return values.view(shape, values.strides, values.offset)

