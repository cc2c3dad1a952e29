"""Tiled, batched matrix product ``[..., m, k] @ [..., k, n]`` of any strided views.

On GPUs each workgroup of 256 invocations computes a ``TILE x TILE`` block of the output: per
step it stages a ``TILE x 16`` slab of the left operand and a ``16 x TILE`` slab of the right
one in workgroup memory, then every invocation accumulates a ``REG x REG`` register tile (rows
and columns 16 apart). Large products use 64x64 blocks with 4x4 register tiles, small ones
16x16 blocks with one output per invocation.

On CPU adapters (llvmpipe and other software rasterizers) workgroup memory is ordinary cached
memory and every ``workgroupBarrier`` is a coroutine switch per SIMD group, so staging costs
more than it saves: there each invocation accumulates an 8x8 register tile straight from the
operands (measured 2-5x faster than the staged kernel on llvmpipe). Where the adapter runs
8-lane subgroups (llvmpipe on AVX2), a subgroup kernel shares the left operand's values
between lanes by ``subgroupBroadcast`` instead, and reads and stores ``vec4``s where layouts
allow: llvmpipe loads memory one lane at a time (a ``vec4`` for about two scalars' cost), so
fewer loads per multiply-add pay (measured 1.5-3x faster than the register tile on the
shapes of a 256-wide MLP and of the GPT example).

Batch dims broadcast through stride-0 views and map to the grid's z dimension (split across
dispatches beyond 65,535). Floats accumulate in f32.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from burnpy_wgpu.dtypes import compute_type, storage_type
from burnpy_wgpu.errors import WgpuError
from burnpy_wgpu.kernels.common import header, hoist_params, load, store_cast
from burnpy_wgpu.kernels.elementwise import alloc_tensor
from burnpy_wgpu.runtime import WgpuRuntime
from burnpy_wgpu.tensor import Shape, WgpuTensor, broadcast_view, numel

BK = 16
_SIDE = 16  # invocations per side of the 16x16 workgroup
_CONFIGS = {"large": 4, "small": 1}  # register tile side
#: Register tile side and workgroup side of the CPU-adapter kernel.
_CPU_REG = 8
_CPU_SIDE = 8


def _source(reg: int, src: tuple[str, str], out_store: str, batch_rank: int,
            epilogue: Epilogue | None = None) -> str:
    st, acc = src
    tile = _SIDE * reg
    threads = _SIDE * _SIDE
    loads_a = tile * BK // threads
    zero = "0.0" if acc == "f32" else f"{acc}(0)"
    lines = [
        f"    let tx = lid % {_SIDE}u;", f"    let ty = lid / {_SIDE}u;",
        f"    let m0 = wid.y * {tile}u;", f"    let n0 = wid.x * {tile}u;",
        *_batch_offsets(batch_rank),
    ]
    lines.append(f"    var acc: array<{acc}, {reg * reg}>;")
    for i in range(reg * reg):
        lines.append(f"    acc[{i}] = {zero};")
    lines.append(f"    for (var k0 = 0u; k0 < K; k0 = k0 + {BK}u) {{")
    for t in range(loads_a):
        lines += [
            f"        {{ let e = lid + {t * threads}u; let r = e / {BK}u; let c = e % {BK}u;",
            "          let gm = m0 + r; let gk = k0 + c;",
            f"          var v = {zero};",
            "          if (gm < M && gk < K) { v = "
            + load("in0", "u32(a_base + i32(gm) * mi(4u) + i32(gk) * mi(5u))", st, acc) + "; }",
            f"          As[c * {tile}u + r] = v; }}",
            f"        {{ let e = lid + {t * threads}u; let r = e / {tile}u; let c = e % {tile}u;",
            "          let gk = k0 + r; let gn = n0 + c;",
            f"          var v = {zero};",
            "          if (gk < K && gn < N) { v = "
            + load("in1", "u32(b_base + i32(gk) * mi(7u) + i32(gn) * mi(8u))", st, acc) + "; }",
            f"          Bs[r * {tile}u + c] = v; }}",
        ]
    lines.append("        workgroupBarrier();")
    lines.append(f"        for (var kk = 0u; kk < {BK}u; kk = kk + 1u) {{")
    for i in range(reg):
        lines.append(f"            let a{i} = As[kk * {tile}u + ty + {_SIDE * i}u];")
    for j in range(reg):
        lines.append(f"            let b{j} = Bs[kk * {tile}u + tx + {_SIDE * j}u];")
    for i in range(reg):
        for j in range(reg):
            lines.append(f"            acc[{i * reg + j}] = acc[{i * reg + j}] + a{i} * b{j};")
    lines += ["        }", "        workgroupBarrier();", "    }"]
    for i in range(reg):
        for j in range(reg):
            lines += [f"    {{ let gm = m0 + ty + {_SIDE * i}u; let gn = n0 + tx + {_SIDE * j}u;",
                      "      if (gm < M && gn < N) { "
                      + _store(f"acc[{i * reg + j}]", "gm", "gn", out_store, acc, epilogue)
                      + " } }"]
    shared = f"""
var<workgroup> As: array<{acc}, {tile * BK}>;
var<workgroup> Bs: array<{acc}, {tile * BK}>;
"""
    return _header(st, out_store, shared, epilogue) + f"""
@compute @workgroup_size({threads})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {{
{chr(10).join(lines)}
}}
"""


class Epilogue(NamedTuple):
    """Elementwise work fused after a product (``Fusion``'s groups reading a matmul): WGSL
    ``code`` defining ``fn epi(lin: u32, mm: f32)``, called with each output element's
    row-major index and value instead of storing it; the element types of the extra tensors
    it reads (bound from ``in2``) and writes (bound from ``out0``); its meta words follow
    the product's (``meta_words``). A ``vector`` epilogue defines ``fn epi4(lin: u32, mm:
    vec4<f32>)`` instead, for 4 adjacent elements of a row from ``lin`` (a multiple of 4;
    the subgroup kernel, where the row length is a multiple of 4)."""

    code: str
    reads: tuple[str, ...]
    writes: tuple[str, ...]
    vector: bool = False


def meta_words(batch_rank: int) -> int:
    """Meta words of a product over ``batch_rank`` batch dims (an epilogue's come after)."""
    return 11 + 3 * batch_rank


def _store(value: str, row: str, col: str, out_store: str, acc: str,
           epilogue: Epilogue | None) -> str:
    """The statement storing ``value`` at (``row``, ``col``) of batch ``wid.z``, or passing it
    to the epilogue."""
    if epilogue is None:
        return f"out0[o_base + {row} * N + {col}] = {store_cast(value, out_store, acc)};"
    return f"epi((mu(10u) + wid.z) * M * N + {row} * N + {col}, f32({value}));"


def _header(st: str, out_store: str, extra: str, epilogue: Epilogue | None) -> str:
    if epilogue is None:
        return header([st, st], [out_store], extra)
    return header([st, st, *epilogue.reads], list(epilogue.writes), extra + epilogue.code)


def matmul_epilogue(lhs: WgpuTensor, rhs: WgpuTensor, key: Any, epilogue: Callable[[int], Epilogue],
                    reads: Sequence[WgpuTensor], writes: Sequence[WgpuTensor],
                    words: Callable[[int], list[int]], vector: bool = False) -> None:
    """``lhs @ rhs`` (same ndim >= 2, contiguous-result order) with every output element
    handed to an epilogue instead of stored: ``epilogue(batch_rank)`` builds it (cached under
    ``key``), it reads ``reads`` and writes ``writes``, and ``words(batch_rank)`` gives its
    meta words. A ``vector`` epilogue (``Epilogue.vector``) needs the subgroup kernel
    (``vector_epilogues``)."""
    rt: WgpuRuntime = lhs.runtime
    m, k = lhs.shape[-2:]
    n = rhs.shape[-1]
    batch: Shape = tuple(max(a, b) for a, b in zip(lhs.shape[:-2], rhs.shape[:-2], strict=True))
    count = numel(batch)
    if count == 0 or m == 0 or n == 0:
        return
    rank = len(batch)
    a_bst = broadcast_view(lhs.shape[:-2], lhs.strides[:-2], batch)
    b_bst = broadcast_view(rhs.shape[:-2], rhs.strides[:-2], batch)
    src = (storage_type(lhs.dtype), compute_type(lhs.dtype))
    n_read, n_write = 2 + len(reads), len(writes)
    if vector and not vector_epilogues(rt, n):
        raise WgpuError("a vector epilogue needs the subgroup kernel and rows of 4k elements")
    if rt.is_cpu and subgroup_lanes(rt) == SUBGROUP:
        sg = _subgroup_tile(m)
        vec = _vec_layout(lhs, rhs, a_bst, b_bst)
        kernel = rt.kernel(("matmul_subgroup_epilogue", src, rank, sg, vec, key),
                           lambda: _subgroup_source(src, "", rank, epilogue(rank), sg,
                                                    vec),
                           n_read, n_write)
        grid_x, grid_y = -(-n // (SUBGROUP * sg.cols)), -(-m // sg.rows)
    elif rt.is_cpu:
        tile = _CPU_SIDE * _CPU_REG
        vec = _vec_layout(lhs, rhs, a_bst, b_bst)
        kernel = rt.kernel(("matmul_registers_epilogue", src, rank, vec, key),
                           lambda: _register_source(src, "", rank, epilogue(rank), vec),
                           n_read, n_write)
        grid_x, grid_y = -(-n // tile), -(-m // tile)
    else:
        reg = _CONFIGS["large"] if m >= 64 and n >= 64 else _CONFIGS["small"]
        tile = _SIDE * reg
        kernel = rt.kernel(("matmul_tiled_epilogue", reg, src, rank, key),
                           lambda: _source(reg, src, "", rank, epilogue(rank)), n_read, n_write)
        grid_x, grid_y = -(-n // tile), -(-m // tile)
    tail = words(rank)
    slabs = [lhs.handle.slab, rhs.handle.slab, *[t.handle.slab for t in reads]]
    outs = [t.handle.slab for t in writes]
    for base in range(0, count, rt.max_groups):
        z = min(rt.max_groups, count - base)
        meta = [m, n, k, lhs.offset, lhs.strides[-2], lhs.strides[-1], rhs.offset,
                rhs.strides[-2], rhs.strides[-1], 0, base, *batch, *a_bst, *b_bst, *tail]
        rt.dispatch(kernel, slabs, outs, meta, (grid_x, grid_y, z))


def _batch_offsets(batch_rank: int) -> list[str]:
    """Lines defining M, N, K, ``a_base``/``b_base`` (operand offsets of batch ``wid.z``) and
    ``o_base`` (its output offset). Meta: [m, n, k, a_off, a_rs, a_cs, b_off, b_rs, b_cs,
    out_off, batch base, batch shape, a batch strides, b batch strides]."""
    bb = 11
    lines = ["    let M = mu(0u);", "    let N = mu(1u);", "    let K = mu(2u);",
             "    var bq = mu(10u) + wid.z;", "    var a_base = mi(3u);",
             "    var b_base = mi(6u);",
             "    let o_base = mu(9u) + (mu(10u) + wid.z) * M * N;"]
    for d in range(batch_rank - 1, -1, -1):
        size = f"mu({bb + d}u)"
        lines.append(f"    a_base = a_base + i32(bq % {size}) * mi({bb + batch_rank + d}u); "
                     f"b_base = b_base + i32(bq % {size}) * mi({bb + 2 * batch_rank + d}u); "
                     f"bq = bq / {size};")
    return lines


def _vec_layout(lhs: WgpuTensor, rhs: WgpuTensor, a_bst: Shape, b_bst: Shape
                ) -> tuple[str, str] | None:
    """Which dim the CPU kernel reads each float32 operand along as ``vec4``s (``("k", "n")``
    for row-major operands; ``"m"`` for a transposed left one, ``"k"`` for a transposed right
    one), or None when a unit-stride dim, 16-byte alignment or sizes that are multiples of 4
    are missing: there one ``vec4`` read replaces four bounds-checked scalar reads."""
    if lhs.dtype != np.float32 or rhs.dtype != np.float32:
        return None
    m, k = lhs.shape[-2:]
    n = rhs.shape[-1]
    a_rs, a_cs = lhs.strides[-2:]
    b_rs, b_cs = rhs.strides[-2:]
    if lhs.offset % 4 or rhs.offset % 4 or any(x % 4 for x in (*a_bst, *b_bst)):
        return None
    a = ("k" if a_cs == 1 and a_rs % 4 == 0 and k % 4 == 0 else
         "m" if a_rs == 1 and a_cs % 4 == 0 and m % 4 == 0 and k % 4 == 0 else None)
    b = ("n" if b_cs == 1 and b_rs % 4 == 0 and n % 4 == 0 and k % 4 == 0 else
         "k" if b_rs == 1 and b_cs % 4 == 0 and k % 4 == 0 else None)
    return (a, b) if a is not None and b is not None else None


def _vec_loop(vec: tuple[str, str]) -> list[str]:
    """The k loop of the CPU kernel in steps of 4 reading ``vec4``s (``_vec_layout``);
    ``a{i}_{kk}`` and ``b{j}_{kk}`` name the operands' values at ``k + kk``."""
    r = _CPU_REG
    lines = ["    for (var k = 0u; k < K; k = k + 4u) {"]
    if vec[0] == "k":
        lines += [f"        let av{i} = in0[u32(ra{i} + i32(k)) / 4u];" for i in range(r)]
        a = {(i, kk): f"av{i}[{kk}]" for i in range(r) for kk in range(4)}
    else:
        lines += [f"        let av{g}_{kk} = in0[u32(rg{g} + i32(k + {kk}u) * mi(5u)) / 4u];"
                  for g in range(r // 4) for kk in range(4)]
        a = {(i, kk): f"av{i // 4}_{kk}[{i % 4}]" for i in range(r) for kk in range(4)}
    if vec[1] == "n":
        lines += [f"        let bv{g}_{kk} = in1[u32(cg{g} + i32(k + {kk}u) * mi(7u)) / 4u];"
                  for g in range(r // 4) for kk in range(4)]
        b = {(j, kk): f"bv{j // 4}_{kk}[{j % 4}]" for j in range(r) for kk in range(4)}
    else:
        lines += [f"        let bv{j} = in1[u32(cb{j} + i32(k)) / 4u];" for j in range(r)]
        b = {(j, kk): f"bv{j}[{kk}]" for j in range(r) for kk in range(4)}
    for kk in range(4):
        lines += [f"        acc{i}_{j} = acc{i}_{j} + {a[i, kk]} * {b[j, kk]};"
                  for i in range(r) for j in range(r)]
    lines.append("    }")
    return lines


def _register_source(src: tuple[str, str], out_store: str, batch_rank: int,
                     epilogue: Epilogue | None = None,
                     vec: tuple[str, str] | None = None) -> str:
    """The CPU-adapter kernel: an 8x8 register tile per invocation, no workgroup memory.
    Out-of-range rows and columns read clamped (valid) positions and are not stored. With
    ``vec`` (``_vec_layout``) the operands are bound as ``vec4`` arrays and read 4 at a time."""
    st, acc = src
    r = _CPU_REG
    zero = "0.0" if acc == "f32" else f"{acc}(0)"
    lines = [*_batch_offsets(batch_rank),
             f"    let m0 = (wid.y * {_CPU_SIDE}u + lid.y) * {r}u;",
             f"    let n0 = (wid.x * {_CPU_SIDE}u + lid.x) * {r}u;",
             "    if (m0 >= M || n0 >= N) { return; }"]
    for i in range(r):
        lines.append(f"    let ra{i} = a_base + i32(min(m0 + {i}u, M - 1u)) * mi(4u);")
        lines.append(f"    let cb{i} = b_base + i32(min(n0 + {i}u, N - 1u)) * mi(8u);")
    if vec is not None:  # first rows / columns of each group of 4 (all in range or all out)
        lines += [f"    let rg{g} = a_base + i32(min(m0 + {4 * g}u, M - 4u));"
                  for g in range(r // 4)]
        lines += [f"    let cg{g} = b_base + i32(min(n0 + {4 * g}u, N - 4u));"
                  for g in range(r // 4)]
    lines += [f"    var acc{i}_{j}: {acc} = {zero};" for i in range(r) for j in range(r)]
    if vec is not None:
        lines += _vec_loop(vec)
    else:
        lines.append("    for (var k = 0u; k < K; k = k + 1u) {")
        lines.append("        let ka = i32(k) * mi(5u);")
        lines.append("        let kb = i32(k) * mi(7u);")
        lines += [f"        let a{i} = {load('in0', f'u32(ra{i} + ka)', st, acc)};"
                  for i in range(r)]
        lines += [f"        let b{j} = {load('in1', f'u32(cb{j} + kb)', st, acc)};"
                  for j in range(r)]
        lines += [f"        acc{i}_{j} = acc{i}_{j} + a{i} * b{j};"
                  for i in range(r) for j in range(r)]
        lines.append("    }")
    if epilogue is None:
        lines += [f"    if (m0 + {i}u < M && n0 + {j}u < N) {{ "
                  + _store(f"acc{i}_{j}", f"(m0 + {i}u)", f"(n0 + {j}u)", out_store, acc, None)
                  + " }" for i in range(r) for j in range(r)]
    else:  # a loop over the tile: the epilogue's code once, not inlined per element
        lines.append(f"    var tile: array<f32, {r * r}>;")
        lines += [f"    tile[{i * r + j}] = f32(acc{i}_{j});" for i in range(r) for j in range(r)]
        lines += [f"    for (var t = 0u; t < {r * r}u; t = t + 1u) {{",
                  f"        let row = m0 + t / {r}u; let col = n0 + t % {r}u;",
                  "        if (row < M && col < N) { "
                  + _store("tile[t]", "row", "col", out_store, acc, epilogue) + " }", "    }"]
    source = _header(st, out_store, "", epilogue) + f"""
@compute @workgroup_size({_CPU_SIDE}, {_CPU_SIDE})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {{
{chr(10).join(lines)}
}}
"""
    return hoist_params(_bind_vec4(source) if vec is not None else source)


def _bind_vec4(source: str) -> str:
    """``source`` with the two float32 operands bound as ``vec4`` arrays."""
    for name in ("in0", "in1"):
        source = source.replace(f"var<storage, read> {name}: array<f32>;",
                                f"var<storage, read> {name}: array<vec4<f32>>;", 1)
    return source


#: Lanes of a subgroup the subgroup kernel is written for (llvmpipe's 256-bit SIMD over f32);
#: ``subgroup_lanes`` checks what the adapter runs.
SUBGROUP = 8


class SubgroupTile(NamedTuple):
    """The subgroup kernel's shape: each workgroup is one subgroup computing ``rows`` x
    ``SUBGROUP * cols`` outputs (each lane ``cols`` adjacent columns of all ``rows``), with
    the k loop unrolled ``unroll`` times."""

    rows: int
    cols: int
    unroll: int


def vector_epilogues(rt: WgpuRuntime, n: int) -> bool:
    """Whether a product of ``n`` columns on ``rt`` may take a ``vector`` epilogue: the
    subgroup kernel runs it (a lane's 4 columns are adjacent) and rows hold whole ``vec4``s."""
    return rt.is_cpu and n % 4 == 0 and subgroup_lanes(rt) == SUBGROUP


def _subgroup_tile(m: int) -> SubgroupTile:
    """The subgroup kernel's tile for ``m`` rows: 32 rows (128 accumulators a lane measured
    best on llvmpipe), 16 for a short product where most of 32 would be clamped copies."""
    return SubgroupTile(16 if m <= 16 else 32, 4, 4)


def subgroup_lanes(rt: WgpuRuntime) -> int:
    """Lanes per subgroup of ``rt``'s compute kernels, if subgroups are contiguous runs of
    the local invocation index (probed once by a kernel: the subgroup kernel relies on it);
    0 where the adapter has no subgroups or they are laid out otherwise."""
    found = rt.tables.get("subgroup_lanes")
    if found is None:
        found = rt.tables["subgroup_lanes"] = _probe_subgroups(rt) if rt.has_subgroups else 0
    return int(found)


def _probe_subgroups(rt: WgpuRuntime) -> int:
    """Run a kernel writing each invocation's subgroup lane and size; the size where lanes
    follow the local index in runs of it, else 0 (one readback, once per runtime)."""
    source = header([], ["u32"]) + """
@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) lid: u32,
        @builtin(subgroup_invocation_id) sid: u32, @builtin(subgroup_size) size: u32) {
    out0[lid] = sid + (size << 16u);
}
"""
    try:
        kernel = rt.kernel(("subgroup_probe",), lambda: source, 0, 1)
    except WgpuError:
        return 0
    out = alloc_tensor(rt, (64,), np.dtype(np.uint32))
    rt.dispatch(kernel, [], [out.handle.slab], [0], (1, 1, 1))
    words = np.frombuffer(rt.read(out.handle.slab, 0, 64 * 4), np.uint32)
    lanes = int(words[0] >> 16)
    expected = [i % lanes + (lanes << 16) for i in range(64)] if lanes else []
    return lanes if words.tolist() == expected else 0


def _subgroup_loop(tile: SubgroupTile, start: str, end: str, unroll: int, st: str,
                   acc: str) -> list[str]:
    """A k loop of the subgroup kernel from ``start`` to ``end`` in steps of ``unroll``: the
    loads and products of ``unroll`` steps, then one write per accumulator (on llvmpipe
    every write to a loop-carried variable is a masked store)."""
    rows, cols, lanes = tile.rows, tile.cols, SUBGROUP
    lines = [f"    for (var k = {start}; k < {end}; k = k + {unroll}u) {{"]
    for u in range(unroll):
        lines += [f"        let ka{u} = i32(k + {u}u) * mi(5u);",
                  f"        let kb{u} = i32(k + {u}u) * mi(7u);"]
        lines += [f"        let x{q}_{u} = {load('in0', f'u32(ra{q} + ka{u})', st, acc)};"
                  for q in range(rows // lanes)]
        lines += [f"        let b{j}_{u} = {load('in1', f'u32(cb{j} + kb{u})', st, acc)};"
                  for j in range(cols)]
    for i in range(rows):
        for u in range(unroll):
            lines.append(f"        let a{i}_{u} = subgroupBroadcast(x{i // lanes}_{u}, "
                         f"{i % lanes}u);")
        for j in range(cols):
            terms = " + ".join(f"a{i}_{u} * b{j}_{u}" for u in range(unroll))
            lines.append(f"        acc{i}_{j} = acc{i}_{j} + {terms};")
    lines.append("    }")
    return lines


def _subgroup_vec_loop(tile: SubgroupTile, vec: tuple[str, str]) -> list[str]:
    """The subgroup kernel's k loop in steps of 4 reading float32 ``vec4``s (``_vec_layout``):
    the left operand along k (``"k"``, a lane's rows as in the scalar loop) or along m
    (``"m"``, each lane 4 adjacent rows at one k), the right one along n (``"n"``, a lane's
    4 columns at one k) or along k (``"k"``). llvmpipe reads a ``vec4`` for about the cost
    of two scalars."""
    rows, cols, lanes = tile.rows, tile.cols, SUBGROUP
    lines = ["    for (var k = 0u; k < K; k = k + 4u) {"]
    if vec[0] == "k":
        lines += [f"        let xv{q} = in0[u32(ra{q} + i32(k)) / 4u];"
                  for q in range(rows // lanes)]
        lines += [f"        let av{i} = subgroupBroadcast(xv{i // lanes}, {i % lanes}u);"
                  for i in range(rows)]
        a = {(i, u): f"av{i}[{u}]" for i in range(rows) for u in range(4)}
    else:
        lines += [f"        let xm{u} = in0[u32(rg + i32(k + {u}u) * mi(5u)) / 4u];"
                  for u in range(4)]
        lines += [f"        let am{g}_{u} = subgroupBroadcast(xm{u}, {g}u);"
                  for g in range(rows // 4) for u in range(4)]
        a = {(i, u): f"am{i // 4}_{u}[{i % 4}]" for i in range(rows) for u in range(4)}
    if vec[1] == "n":
        lines += [f"        let bv{u} = in1[u32(cg + i32(k + {u}u) * mi(7u)) / 4u];"
                  for u in range(4)]
        b = {(j, u): f"bv{u}[{j}]" for j in range(cols) for u in range(4)}
    else:
        lines += [f"        let bv{j} = in1[u32(cb{j} + i32(k)) / 4u];" for j in range(cols)]
        b = {(j, u): f"bv{j}[{u}]" for j in range(cols) for u in range(4)}
    for i in range(rows):
        for j in range(cols):
            terms = " + ".join(f"{a[i, u]} * {b[j, u]}" for u in range(4))
            lines.append(f"        acc{i}_{j} = acc{i}_{j} + {terms};")
    lines.append("    }")
    return lines


def _subgroup_source(src: tuple[str, str], out_store: str, batch_rank: int,
                     epilogue: Epilogue | None, tile: SubgroupTile,
                     vec: tuple[str, str] | None = None, vec_out: bool = False) -> str:
    """The CPU-adapter kernel with subgroups: per k, each lane loads ``rows / 8`` values of
    the left operand and ``cols`` of the right one; the left ones reach every lane through
    ``subgroupBroadcast`` (a register shuffle on llvmpipe, where every memory load is a
    per-lane loop), so a lane loads 2-3x fewer values per multiply-add than the register
    kernel. Out-of-range rows and columns read clamped positions and are not stored. With
    ``vec`` the operands are bound as ``vec4`` arrays (``_subgroup_vec_loop``); with
    ``vec_out`` (float32 rows of whole ``vec4``s from a ``vec4``-aligned start) a lane stores
    its 4 columns of a row as one ``vec4``."""
    st, acc = src
    rows, cols, lanes = tile.rows, tile.cols, SUBGROUP
    zero = "0.0" if acc == "f32" else f"{acc}(0)"
    lines = [*_batch_offsets(batch_rank),
             "    let lane = lid.x;",
             f"    let m0 = wid.y * {rows}u;",
             f"    let n0 = (wid.x * {lanes}u + lane) * {cols}u;"]
    lines += [f"    let ra{q} = a_base + i32(min(m0 + lane + {lanes * q}u, M - 1u)) * mi(4u);"
              for q in range(rows // lanes)]
    lines += [f"    let cb{j} = b_base + i32(min(n0 + {j}u, N - 1u)) * mi(8u);"
              for j in range(cols)]
    lines += [f"    var acc{i}_{j}: {acc} = {zero};" for i in range(rows) for j in range(cols)]
    if vec is not None:  # first of 4 rows / columns (all in range or all out)
        if vec[0] == "m":
            lines.append(f"    let rg = a_base + i32(min(m0 + lane % {rows // 4}u * 4u, M - 4u));")
        if vec[1] == "n":
            lines.append("    let cg = b_base + i32(min(n0, N - 4u));")
        lines += _subgroup_vec_loop(tile, vec)
    else:
        lines += [f"    let k_main = K - K % {tile.unroll}u;"]
        lines += _subgroup_loop(tile, "0u", "k_main", tile.unroll, st, acc)
        if tile.unroll > 1:
            lines += _subgroup_loop(tile, "k_main", "K", 1, st, acc)
    if epilogue is None and vec_out:
        lines += [f"    if (m0 + {i}u < M && n0 < N) {{ out0[(o_base + (m0 + {i}u) * N + n0) / 4u]"
                  " = vec4<f32>(" + ", ".join(f"acc{i}_{j}" for j in range(cols)) + "); }"
                  for i in range(rows)]
    elif epilogue is None:
        lines += [f"    if (m0 + {i}u < M && n0 + {j}u < N) {{ "
                  + _store(f"acc{i}_{j}", f"(m0 + {i}u)", f"(n0 + {j}u)", out_store, acc, None)
                  + " }" for i in range(rows) for j in range(cols)]
    elif epilogue.vector:  # a loop over the tile's rows, each 4 adjacent elements at once
        lines.append(f"    var tile: array<vec4<f32>, {rows}>;")
        lines += [f"    tile[{i}] = vec4<f32>("
                  + ", ".join(f"f32(acc{i}_{j})" for j in range(cols)) + ");"
                  for i in range(rows)]
        lines += [f"    for (var i = 0u; i < {rows}u; i = i + 1u) {{",
                  "        let row = m0 + i;",
                  "        if (row < M && n0 < N) { "
                  "epi4((mu(10u) + wid.z) * M * N + row * N + n0, tile[i]); }", "    }"]
    else:  # a loop over the tile: the epilogue's code once, not inlined per element
        lines.append(f"    var tile: array<f32, {rows * cols}>;")
        lines += [f"    tile[{i * cols + j}] = f32(acc{i}_{j});"
                  for i in range(rows) for j in range(cols)]
        lines += [f"    for (var t = 0u; t < {rows * cols}u; t = t + 1u) {{",
                  f"        let row = m0 + t / {cols}u; let col = n0 + t % {cols}u;",
                  "        if (row < M && col < N) { "
                  + _store("tile[t]", "row", "col", out_store, acc, epilogue) + " }", "    }"]
    source = _header(st, out_store, "", epilogue) + f"""
@compute @workgroup_size({lanes})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {{
{chr(10).join(lines)}
}}
"""
    if vec_out:
        source = source.replace("var<storage, read_write> out0: array<f32>;",
                                "var<storage, read_write> out0: array<vec4<f32>>;", 1)
    return hoist_params(_bind_vec4(source) if vec is not None else source)


def matmul(lhs: WgpuTensor, rhs: WgpuTensor, out_dtype: np.dtype[Any] | None = None,
           out: WgpuTensor | None = None, out_offset: int = 0) -> WgpuTensor:
    """``lhs @ rhs`` over broadcast batch dims (same ndim >= 2), into a new contiguous tensor
    or into the contiguous buffer ``out`` starting at element ``out_offset``."""
    rt: WgpuRuntime = lhs.runtime
    m, k = lhs.shape[-2:]
    n = rhs.shape[-1]
    batch: Shape = tuple(max(a, b) for a, b in zip(lhs.shape[:-2], rhs.shape[:-2], strict=True))
    dtype = out_dtype or lhs.dtype
    if out is None:
        out = alloc_tensor(rt, batch + (m, n), dtype)
    count = numel(batch)
    if count == 0 or m == 0 or n == 0:
        return out
    a_bst = broadcast_view(lhs.shape[:-2], lhs.strides[:-2], batch)
    b_bst = broadcast_view(rhs.shape[:-2], rhs.strides[:-2], batch)
    src = (storage_type(lhs.dtype), compute_type(lhs.dtype))
    out_store = storage_type(out.dtype)
    rank = len(batch)
    if rt.is_cpu and subgroup_lanes(rt) == SUBGROUP:
        sg = _subgroup_tile(m)
        vec = _vec_layout(lhs, rhs, a_bst, b_bst)
        vec_out = out_store == "f32" and n % 4 == 0 and out_offset % 4 == 0
        kernel = rt.kernel(("matmul_subgroup", src, out_store, rank, sg, vec, vec_out),
                           lambda: _subgroup_source(src, out_store, rank, None, sg, vec,
                                                    vec_out), 2, 1)
        grid_x, grid_y = -(-n // (SUBGROUP * sg.cols)), -(-m // sg.rows)
    elif rt.is_cpu:
        tile = _CPU_SIDE * _CPU_REG
        vec = _vec_layout(lhs, rhs, a_bst, b_bst)
        kernel = rt.kernel(("matmul_registers", src, out_store, rank, vec),
                           lambda: _register_source(src, out_store, rank, None, vec), 2, 1)
        grid_x, grid_y = -(-n // tile), -(-m // tile)
    else:
        reg = _CONFIGS["large"] if m >= 64 and n >= 64 else _CONFIGS["small"]
        tile = _SIDE * reg
        kernel = rt.kernel(("matmul_tiled", reg, src, out_store, rank),
                           lambda: _source(reg, src, out_store, rank), 2, 1)
        grid_x, grid_y = -(-n // tile), -(-m // tile)
    for base in range(0, count, rt.max_groups):
        z = min(rt.max_groups, count - base)
        meta = [m, n, k, lhs.offset, lhs.strides[-2], lhs.strides[-1], rhs.offset,
                rhs.strides[-2], rhs.strides[-1], out_offset, base, *batch, *a_bst, *b_bst]
        rt.dispatch(kernel, [lhs.handle.slab, rhs.handle.slab], [out.handle.slab], meta,
                    (grid_x, grid_y, z))
    return out
