"""Quantization kernels: packing int values into u32 words, unpacking them (sign-extended),
and the round-and-clip of ``x / scale``."""

from __future__ import annotations

import numpy as np

from burnpy_wgpu.kernels.common import WG, entry, groups_for, header
from burnpy_wgpu.kernels.elementwise import alloc_tensor, launch_map
from burnpy_wgpu.kernels.indexing import copy
from burnpy_wgpu.tensor import WgpuTensor, contiguous_strides, numel

I32 = np.dtype(np.int32)
U32 = np.dtype(np.uint32)


def pack(values: WgpuTensor, bits: int) -> WgpuTensor:
    """The int32 ``values`` (any view) as ``32 // bits``-field u32 words in C order."""
    rt = values.runtime
    if not values.is_contiguous():
        values = copy(values)
    n = numel(values.shape)
    per_word = 32 // bits
    words = alloc_tensor(rt, (-(-n // per_word),), U32)
    if n == 0:
        return words
    body = f"""
    if (gid >= mu(1u)) {{ return; }}
    var acc = 0u;
    for (var j = 0u; j < {per_word}u; j = j + 1u) {{
        let i = gid * {per_word}u + j;
        if (i < mu(0u)) {{ acc = acc | ((bitcast<u32>(in0[mu(2u) + i]) & {(1 << bits) - 1}u)
            << ({bits}u * j)); }}
    }}
    out0[gid] = acc;"""
    kernel = rt.kernel(("pack", bits), lambda: header(["i32"], ["u32"]) + entry(body), 1, 1)
    rt.dispatch_linear(kernel, [values.handle.slab], [words.handle.slab],
                       [n, words.shape[0], values.offset], groups_for(words.shape[0], WG))
    return words


def unpack(words: WgpuTensor, shape: tuple[int, ...], bits: int) -> WgpuTensor:
    """The sign-extended int32 values of ``shape`` packed in ``words``."""
    rt = words.runtime
    n = numel(shape)
    out = alloc_tensor(rt, shape, I32)
    if n == 0:
        return out
    per_word = 32 // bits
    body = f"""
    if (gid >= mu(0u)) {{ return; }}
    let field = in0[mu(1u) + gid / {per_word}u] >> ({bits}u * (gid % {per_word}u));
    out0[gid] = bitcast<i32>(field << {32 - bits}u) >> {32 - bits}u;"""
    kernel = rt.kernel(("unpack", bits), lambda: header(["u32"], ["i32"]) + entry(body), 1, 1)
    rt.dispatch_linear(kernel, [words.handle.slab], [out.handle.slab], [n, words.offset],
                       groups_for(n, WG))
    return out.view(shape, contiguous_strides(shape), 0)


def round_clip(x: WgpuTensor, scale: WgpuTensor, qmin: int, qmax: int) -> WgpuTensor:
    """``clip(round_half_even(x / scale), qmin, qmax)`` as int32 (x and scale broadcast)."""
    return launch_map(x.runtime, f"i32(clamp(round(a / b), {float(qmin)}, {float(qmax)}))",
                      [x, scale], I32)
