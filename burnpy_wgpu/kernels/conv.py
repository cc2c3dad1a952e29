"""Convolutions as im2col + the tiled matmul, transposed convolutions as matmul + col2im.

``im2col`` copies, for every output position, the input values each kernel tap reads into a
column matrix ``[batch, groups, channels/groups * taps, positions]`` (zero where a tap falls in
the padding), so a conv is one batched matmul with the ``[groups, out/groups, -1]`` weight.
``col2im`` is its adjoint written as a gather (each output sums the taps that reach it), so no
atomics are needed. The batch is walked in chunks whose columns stay below ``COLS_BYTES``.
"""

from __future__ import annotations

import math

import numpy as np

from burnpy.backend.ops.module_ops import (
    ConvOptions,
    ConvTransposeOptions,
    conv_output_size,
    conv_transpose_output_size,
)
from burnpy_wgpu.dtypes import compute_type, storage_type
from burnpy_wgpu.kernels.common import WG, entry, groups_for, header, load, store_cast
from burnpy_wgpu.kernels.elementwise import alloc_tensor, launch_map
from burnpy_wgpu.kernels.indexing import copy
from burnpy_wgpu.kernels.matmul import matmul
from burnpy_wgpu.kernels.reduce import reduce_dim
from burnpy_wgpu.runtime import WgpuRuntime
from burnpy_wgpu.tensor import Shape, WgpuTensor, contiguous_strides, numel

#: Scratch budget of one chunk's column matrix.
COLS_BYTES = 64 << 20
F32 = np.dtype(np.float32)


def _unravel(var: str, name: str, count: int, sizes_base: int) -> list[str]:
    """Lines splitting ``var`` into ``name0..`` over ``count`` sizes at meta ``sizes_base``."""
    lines = [f"    var {name}_q = {var};"]
    for d in range(count - 1, -1, -1):
        lines.append(f"    let {name}{d} = i32({name}_q % mu({sizes_base + d}u)); "
                     f"{name}_q = {name}_q / mu({sizes_base + d}u);")
    return lines


def _im2col_source(src: tuple[str, str], nd: int) -> str:
    """Meta: [total, groups, channels/group, taps, positions, x_off, x strides (2 + nd),
    in sizes, out sizes, kernel, stride, padding, dilation] (nd words each)."""
    st, ct = src
    xs = 6
    spec = xs + 2 + nd
    in_sz, out_sz, ker, stride, pad, dil = (spec + i * nd for i in range(6))
    body = ["    if (gid >= mu(0u)) { return; }",
            "    let p = gid % mu(4u);", "    var rest = gid / mu(4u);",
            "    let row = rest % (mu(2u) * mu(3u));", "    rest = rest / (mu(2u) * mu(3u));",
            "    let g = rest % mu(1u);", "    let b = rest / mu(1u);",
            "    let ch = g * mu(2u) + row / mu(3u);",
            *_unravel("row % mu(3u)", "k", nd, ker), *_unravel("p", "o", nd, out_sz),
            f"    var off = mi(5u) + i32(b) * mi({xs}u) + i32(ch) * mi({xs + 1}u);",
            "    var inside = true;"]
    for d in range(nd):
        body += [f"    let i{d} = o{d} * mi({stride + d}u) - mi({pad + d}u) "
                 f"+ k{d} * mi({dil + d}u);",
                 f"    inside = inside && i{d} >= 0 && i{d} < mi({in_sz + d}u);",
                 f"    off = off + i{d} * mi({xs + 2 + d}u);"]
    body += ["    var v = 0.0;",
             f"    if (inside) {{ v = {load('in0', 'u32(off)', st, ct)}; }}",
             "    out0[gid] = v;"]
    return header([st], ["f32"]) + entry("\n".join(body))


def im2col(x: WgpuTensor, kernel: Shape, stride: Shape, padding: Shape, dilation: Shape,
           out_sp: Shape, groups: int) -> WgpuTensor:
    """Columns ``[n, groups, c/groups * taps, positions]`` (float32) of the view ``x``."""
    rt: WgpuRuntime = x.runtime
    n, c = x.shape[:2]
    nd = len(kernel)
    taps, positions = math.prod(kernel), math.prod(out_sp)
    cg = c // groups
    out = alloc_tensor(rt, (n, groups, cg * taps, positions), F32)
    total = numel(out.shape)
    if total == 0:
        return out
    src = (storage_type(x.dtype), compute_type(x.dtype))
    k = rt.kernel(("im2col", src, nd), lambda: _im2col_source(src, nd), 1, 1)
    meta = [total, groups, cg, taps, positions, x.offset, *x.strides, *x.shape[2:], *out_sp,
            *kernel, *stride, *padding, *dilation]
    rt.dispatch_linear(k, [x.handle.slab], [out.handle.slab], meta, groups_for(total, WG))
    return out


def _col2im_source(out_store: str, nd: int) -> str:
    """Meta: [total, groups, out channels/group, taps, in positions, out offset, out sizes,
    in sizes, kernel, stride, padding, dilation] (nd words each); columns are contiguous
    ``[n, groups, cog * taps, in positions]``."""
    out_sz, in_sz, ker, stride, pad, dil = (6 + i * nd for i in range(6))
    body = ["    if (gid >= mu(0u)) { return; }",
            "    var q = gid;"]
    for d in range(nd - 1, -1, -1):
        body.append(f"    let o{d} = i32(q % mu({out_sz + d}u)); q = q / mu({out_sz + d}u);")
    body += ["    let c = q % (mu(1u) * mu(2u));", "    let b = q / (mu(1u) * mu(2u));",
             "    let g = c / mu(2u);", "    let co = c % mu(2u);",
             "    let rows = mu(2u) * mu(3u);",
             "    let col_base = ((b * mu(1u) + g) * rows + co * mu(3u)) * mu(4u);",
             "    var acc = 0.0;",
             "    for (var t = 0u; t < mu(3u); t = t + 1u) {",
             "        var tq = t;", "        var ok = true;", "        var pos = 0;"]
    for d in range(nd - 1, -1, -1):
        body += [f"        let k{d} = i32(tq % mu({ker + d}u)); tq = tq / mu({ker + d}u);",
                 f"        let num{d} = o{d} + mi({pad + d}u) - k{d} * mi({dil + d}u);",
                 f"        let i{d} = num{d} / mi({stride + d}u);",
                 f"        ok = ok && num{d} >= 0 && num{d} % mi({stride + d}u) == 0 "
                 f"&& i{d} < mi({in_sz + d}u);"]
    for d in range(nd):
        body.append(f"        pos = pos * mi({in_sz + d}u) + i{d};")
    body += ["        if (ok) { acc = acc + in0[col_base + t * mu(4u) + u32(pos)]; }", "    }",
             f"    out0[mu(5u) + gid] = {store_cast('acc', out_store, 'f32')};"]
    return header(["f32"], [out_store]) + entry("\n".join(body))


def _col2im(cols: WgpuTensor, out: WgpuTensor, groups: int, cog: int, kernel: Shape,
            in_sp: Shape, options: ConvTransposeOptions) -> None:
    rt: WgpuRuntime = cols.runtime
    nd = len(kernel)
    total = numel(out.shape)
    if total == 0:
        return
    out_store = storage_type(out.dtype)
    k = rt.kernel(("col2im", out_store, nd), lambda: _col2im_source(out_store, nd), 1, 1)
    meta = [total, groups, cog, math.prod(kernel), math.prod(in_sp), out.offset,
            *out.shape[2:], *in_sp,
            *kernel, *options.stride, *options.padding, *options.dilation]
    rt.dispatch_linear(k, [cols.handle.slab], [out.handle.slab], meta, groups_for(total, WG))


def _chunk(rt: WgpuRuntime, n: int, per_sample: int) -> int:
    """Samples per chunk so one chunk's scratch fits the budget and the binding limit."""
    budget = min(COLS_BYTES, rt.max_binding)
    return max(1, min(n, budget // max(per_sample, 1)))


def _add_bias(out: WgpuTensor, bias: WgpuTensor | None) -> WgpuTensor:
    if bias is None:
        return out
    nd = len(out.shape) - 2
    view = bias.view((1, bias.shape[0]) + (1,) * nd, (0, bias.strides[0]) + (0,) * nd,
                     bias.offset)
    return launch_map(out.runtime, "a + b", [out, view], out.dtype)


def _batch_rows(x: WgpuTensor, start: int, stop: int) -> WgpuTensor:
    return x.view((stop - start,) + x.shape[1:], x.strides, x.offset + start * x.strides[0])


def _grouped(t: WgpuTensor, groups: int) -> WgpuTensor:
    """``[n, c, *spatial]`` (made contiguous) viewed as ``[n, groups, c/groups, positions]``."""
    if not t.is_contiguous():
        t = copy(t)
    n, c = t.shape[:2]
    shape = (n, groups, c // groups, math.prod(t.shape[2:]))
    return t.view(shape, contiguous_strides(shape), t.offset)


def conv(x: WgpuTensor, weight: WgpuTensor, bias: WgpuTensor | None,
         options: ConvOptions) -> WgpuTensor:
    """N-d convolution (cross-correlation) in torch's layout."""
    rt: WgpuRuntime = x.runtime
    n, c_in = x.shape[:2]
    c_out, kernel = weight.shape[0], weight.shape[2:]
    g = options.groups
    out_sp = tuple(conv_output_size(s, k, st, p, d) for s, k, st, p, d in zip(
        x.shape[2:], kernel, options.stride, options.padding, options.dilation, strict=True))
    positions, depth, cog = math.prod(out_sp), c_in // g * math.prod(kernel), c_out // g
    out = alloc_tensor(rt, (n, g, cog, positions), x.dtype)
    w = _as_f32(weight if weight.is_contiguous() else copy(weight))
    w = w.view((1, g, cog, depth), (0, cog * depth, depth, 1), w.offset)
    step = _chunk(x.runtime, n, g * depth * positions * 4)
    for start in range(0, n, step):
        stop = min(n, start + step)
        cols = im2col(_batch_rows(x, start, stop), kernel, options.stride, options.padding,
                      options.dilation, out_sp, g)
        matmul(w, cols, out=out, out_offset=start * g * cog * positions)
    shaped = out.view((n, c_out, *out_sp), contiguous_strides((n, c_out, *out_sp)), 0)
    return _add_bias(shaped, bias)


def _as_f32(t: WgpuTensor) -> WgpuTensor:
    return t if t.dtype == F32 else launch_map(t.runtime, "a", [t], F32)


def conv_weight_backward(x: WgpuTensor, weight: WgpuTensor, grad: WgpuTensor,
                         options: ConvOptions) -> WgpuTensor:
    """Gradient of ``conv`` in the weight: per group ``grad @ im2col(x).T`` summed over the
    batch."""
    n = x.shape[0]
    g = options.groups
    kernel, out_sp = weight.shape[2:], grad.shape[2:]
    depth = x.shape[1] // g * math.prod(kernel)
    gg = _as_f32(_grouped(grad, g))
    total = _zeros(x.runtime, (g, grad.shape[1] // g, depth))
    step = _chunk(x.runtime, n, g * depth * math.prod(out_sp) * 4)
    for start in range(0, n, step):
        stop = min(n, start + step)
        cols = im2col(_batch_rows(x, start, stop), kernel, options.stride, options.padding,
                      options.dilation, out_sp, g)
        cols_t = cols.view(cols.shape[:2] + (cols.shape[3], cols.shape[2]),
                           cols.strides[:2] + (cols.strides[3], cols.strides[2]), 0)
        part = matmul(_batch_rows(gg, start, stop), cols_t, out_dtype=F32)
        total = _accumulate(total, part)
    return _as_weight(total, weight)


def conv_transpose(x: WgpuTensor, weight: WgpuTensor, bias: WgpuTensor | None,
                   options: ConvTransposeOptions) -> WgpuTensor:
    """N-d transposed convolution: per group ``weight.T @ x`` gives every tap's contribution,
    and col2im sums them into the output."""
    rt: WgpuRuntime = x.runtime
    n, c_in = x.shape[:2]
    in_sp, kernel = x.shape[2:], weight.shape[2:]
    g, cog = options.groups, weight.shape[1]
    cig, taps = c_in // g, math.prod(kernel)
    out_sp = tuple(conv_transpose_output_size(s, k, st, p, po, d) for s, k, st, p, po, d in zip(
        in_sp, kernel, options.stride, options.padding, options.padding_out, options.dilation,
        strict=True))
    w = _as_f32(weight if weight.is_contiguous() else copy(weight))
    wt = w.view((1, g, cog * taps, cig), (0, cig * cog * taps, 1, cog * taps), w.offset)
    xg = _as_f32(_grouped(x, g))
    out = alloc_tensor(rt, (n, g * cog, *out_sp), x.dtype)
    per_out = numel(out.shape[1:])
    step = _chunk(x.runtime, n, g * cog * taps * math.prod(in_sp) * 4)
    for start in range(0, n, step):
        stop = min(n, start + step)
        cols = matmul(wt, _batch_rows(xg, start, stop), out_dtype=F32)
        part = out.view((stop - start,) + out.shape[1:], out.strides, start * per_out)
        _col2im(cols, part, g, cog, kernel, in_sp, options)
    return _add_bias(out, bias)


def conv_transpose_weight_backward(x: WgpuTensor, weight: WgpuTensor, grad: WgpuTensor,
                                   options: ConvTransposeOptions) -> WgpuTensor:
    """Gradient of ``conv_transpose`` in the weight: per group ``x @ im2col(grad).T``, the
    columns gathering for each input position the outputs its taps wrote."""
    n = x.shape[0]
    g = options.groups
    in_sp, kernel = x.shape[2:], weight.shape[2:]
    xg = _as_f32(_grouped(x, g))
    depth = grad.shape[1] // g * math.prod(kernel)
    total = _zeros(x.runtime, (g, x.shape[1] // g, depth))
    step = _chunk(x.runtime, n, g * depth * math.prod(in_sp) * 4)
    for start in range(0, n, step):
        stop = min(n, start + step)
        cols = im2col(_batch_rows(grad, start, stop), kernel, options.stride, options.padding,
                      options.dilation, in_sp, g)
        cols_t = cols.view(cols.shape[:2] + (cols.shape[3], cols.shape[2]),
                           cols.strides[:2] + (cols.strides[3], cols.strides[2]), 0)
        part = matmul(_batch_rows(xg, start, stop), cols_t, out_dtype=F32)
        total = _accumulate(total, part)
    return _as_weight(total, weight)


def _zeros(rt: WgpuRuntime, shape: Shape) -> WgpuTensor:
    return launch_map(rt, "0.0", [], F32, shape=shape)


def _accumulate(total: WgpuTensor, part: WgpuTensor) -> WgpuTensor:
    """``total + part.sum(0)`` for per-sample weight gradients ``part [n, *total.shape]``."""
    summed = reduce_dim(part, 0, "sum")
    return launch_map(total.runtime, "a + b", [total, summed.view(
        total.shape, total.strides, 0)], F32)


def _as_weight(total: WgpuTensor, weight: WgpuTensor) -> WgpuTensor:
    out = launch_map(total.runtime, "a", [total], weight.dtype)
    return out.view(weight.shape, contiguous_strides(weight.shape), 0)
