"""Max pooling with indices: one invocation per output walks its window in row-major order.

torch's semantics: padding never wins (windows start from ``-inf``), the first index wins
ties, a later NaN replaces the running max, and a window of ``-inf`` values reports its first
in-bounds tap. Indices are flat positions within the input's spatial plane (int32).
"""

from __future__ import annotations

import numpy as np

from burnpy.backend.ops.module_ops import pool_output_size
from burnpy_wgpu.dtypes import compute_type, storage_type
from burnpy_wgpu.kernels.common import WG, entry, groups_for, header, load, store_cast
from burnpy_wgpu.kernels.elementwise import alloc_tensor
from burnpy_wgpu.runtime import WgpuRuntime
from burnpy_wgpu.tensor import Shape, WgpuTensor, numel

I32 = np.dtype(np.int32)


def _source(src: tuple[str, str], out_store: str, nd: int) -> str:
    """Meta: [total, channels, x_off, x strides (2 + nd), in sizes, out sizes, kernel,
    stride, padding, dilation]."""
    st, ct = src
    xs = 3
    in_sz, out_sz, ker, stride, pad, dil = (xs + 2 + nd + i * nd for i in range(6))
    body = ["    if (gid >= mu(0u)) { return; }", "    var q = gid;"]
    for d in range(nd - 1, -1, -1):
        body.append(f"    let o{d} = i32(q % mu({out_sz + d}u)); q = q / mu({out_sz + d}u);")
    body += ["    let ch = q % mu(1u);", "    let b = q / mu(1u);",
             f"    let base = mi(2u) + i32(b) * mi({xs}u) + i32(ch) * mi({xs + 1}u);",
             "    var best = -inf_f32();", "    var arg = 0;", "    var found = false;"]
    indent = "    "
    for d in range(nd):
        body += [f"{indent}for (var k{d} = 0; k{d} < mi({ker + d}u); k{d} = k{d} + 1) {{",
                 f"{indent}    let i{d} = o{d} * mi({stride + d}u) - mi({pad + d}u) "
                 f"+ k{d} * mi({dil + d}u);",
                 f"{indent}    if (i{d} < 0 || i{d} >= mi({in_sz + d}u)) {{ continue; }}"]
        indent += "    "
    flat = "i0"
    offset = f"base + i0 * mi({xs + 2}u)"
    for d in range(1, nd):
        flat = f"({flat}) * mi({in_sz + d}u) + i{d}"
        offset += f" + i{d} * mi({xs + 2 + d}u)"
    body += [f"{indent}let v = {load('in0', f'u32({offset})', st, ct)};",
             f"{indent}let at = {flat};",
             f"{indent}if (!found) {{ found = true; arg = at; }}",
             f"{indent}if (v > best || is_nan(v)) {{ best = v; arg = at; }}"]
    for _ in range(nd):
        indent = indent[:-4]
        body.append(f"{indent}}}")
    body += [f"    out0[gid] = {store_cast('best', out_store, ct)};", "    out1[gid] = arg;"]
    return header([st], [out_store, "i32"]) + entry("\n".join(body))


def max_pool(x: WgpuTensor, kernel: Shape, stride: Shape, padding: Shape, dilation: Shape,
             ceil_mode: bool) -> tuple[WgpuTensor, WgpuTensor]:
    """N-d max pool of ``[n, c, *spatial]`` and the flat plane index of each max."""
    rt: WgpuRuntime = x.runtime
    nd = len(kernel)
    out_sp = tuple(pool_output_size(s, k, st, p, d, ceil_mode) for s, k, st, p, d in zip(
        x.shape[2:], kernel, stride, padding, dilation, strict=True))
    shape = x.shape[:2] + out_sp
    values = alloc_tensor(rt, shape, x.dtype)
    indices = alloc_tensor(rt, shape, I32)
    total = numel(shape)
    if total == 0:
        return values, indices
    src = (storage_type(x.dtype), compute_type(x.dtype))
    out_store = storage_type(x.dtype)
    k = rt.kernel(("max_pool", src, out_store, nd), lambda: _source(src, out_store, nd), 1, 2)
    meta = [total, x.shape[1], x.offset, *x.strides, *x.shape[2:], *out_sp, *kernel, *stride,
            *padding, *dilation]
    rt.dispatch_linear(k, [x.handle.slab], [values.handle.slab, indices.handle.slab], meta,
                       groups_for(total, WG))
    return values, indices
