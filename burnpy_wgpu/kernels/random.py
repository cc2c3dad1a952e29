"""Random numbers generated on the device with the counter-based Philox-4x32-10 generator.

Invocation ``t`` of a call hashes the counter ``(t, 0, call_lo, call_hi)`` under the key
``(seed_lo, seed_hi)`` into four u32 words and turns them into four samples. Each call takes
the next value of the device's call counter, so a seeded device replays the same sequence:
``seed`` resets the key and the counter. Uniform floats take the top 24 bits; normals use the
Box-Muller transform on pairs; integers in [low, high) use the high word of a 32x32 product.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from burnpy_wgpu.dtypes import storage_type
from burnpy_wgpu.kernels.common import WG, entry, groups_for, header, store_cast
from burnpy_wgpu.kernels.elementwise import alloc_tensor
from burnpy_wgpu.kernels.wgsl_math import library
from burnpy_wgpu.runtime import WgpuRuntime, f32_bits
from burnpy_wgpu.tensor import Shape, WgpuTensor, numel

_MASK64 = (1 << 64) - 1

_PHILOX = """
fn mulhilo(a: u32, b: u32) -> vec2<u32> {
    let a_lo = a & 0xffffu;
    let a_hi = a >> 16u;
    let b_lo = b & 0xffffu;
    let b_hi = b >> 16u;
    let ll = a_lo * b_lo;
    let hl = a_hi * b_lo;
    let lh = a_lo * b_hi;
    let hh = a_hi * b_hi;
    let cross = (ll >> 16u) + (hl & 0xffffu) + lh;
    return vec2<u32>(hh + (hl >> 16u) + (cross >> 16u), (cross << 16u) | (ll & 0xffffu));
}
fn philox(counter: vec4<u32>, seed: vec2<u32>) -> vec4<u32> {
    var c = counter;
    var k = seed;
    for (var round = 0; round < 10; round = round + 1) {
        let p0 = mulhilo(0xD2511F53u, c.x);
        let p1 = mulhilo(0xCD9E8D57u, c.z);
        c = vec4<u32>(p1.x ^ c.y ^ k.x, p1.y, p0.x ^ c.w ^ k.y, p0.y);
        k = k + vec2<u32>(0x9E3779B9u, 0xBB67AE85u);
    }
    return c;
}
fn unit(x: u32) -> f32 { return f32(x >> 8u) * 5.9604645e-8; }
fn between(x: u32) -> f32 {
    let v = mf(5u) + (mf(6u) - mf(5u)) * unit(x);
    return select(v, mf(5u), v >= mf(6u));
}
"""

_SAMPLES = {
    "uniform": """
    var s = array<f32, 4>(between(w.x), between(w.y), between(w.z), between(w.w));""",
    "normal": """
    let mean = mf(5u);
    let sd = mf(6u);
    let r0 = sqrt(-2.0 * log_acc(unit(w.x) + 5.9604645e-8));
    let r1 = sqrt(-2.0 * log_acc(unit(w.z) + 5.9604645e-8));
    let t0 = 6.2831855 * unit(w.y);
    let t1 = 6.2831855 * unit(w.w);
    var s = array<f32, 4>(mean + sd * r0 * cos(t0), mean + sd * r0 * sin(t0),
                          mean + sd * r1 * cos(t1), mean + sd * r1 * sin(t1));""",
    "bernoulli": """
    let p = mf(5u);
    var s = array<f32, 4>(select(0.0, 1.0, unit(w.x) < p), select(0.0, 1.0, unit(w.y) < p),
                          select(0.0, 1.0, unit(w.z) < p), select(0.0, 1.0, unit(w.w) < p));""",
    "int": """
    let low = mu(5u);
    let span = mu(6u);
    var s = array<i32, 4>(bitcast<i32>(low + select(w.x, mulhilo(w.x, span).x, span != 0u)),
                          bitcast<i32>(low + select(w.y, mulhilo(w.y, span).x, span != 0u)),
                          bitcast<i32>(low + select(w.z, mulhilo(w.z, span).x, span != 0u)),
                          bitcast<i32>(low + select(w.w, mulhilo(w.w, span).x, span != 0u)));""",
}


def _source(kind: str, out_store: str) -> str:
    compute = "i32" if kind == "int" else "f32"
    body = f"""
    let n = mu(0u);
    if (gid * 4u >= n) {{ return; }}
    let w = philox(vec4<u32>(gid, 0u, mu(3u), mu(4u)), vec2<u32>(mu(1u), mu(2u)));
{_SAMPLES[kind]}
    for (var q = 0u; q < 4u; q = q + 1u) {{
        if (gid * 4u + q < n) {{ out0[gid * 4u + q] = {store_cast("s[q]", out_store, compute)}; }}
    }}"""
    funcs = _PHILOX + (library(("log_acc",)) if kind == "normal" else "")
    return header([], [out_store], funcs) + entry(body)


def generate(rt: WgpuRuntime, shape: Shape, kind: str, a: Any, b: Any,
             dtype: np.dtype[Any]) -> WgpuTensor:
    """Samples of ``shape``: ``uniform`` on [a, b), ``normal`` (mean a, std b), ``bernoulli``
    (p = a) or ``int`` on [a, b) (a, b ints)."""
    out = alloc_tensor(rt, shape, dtype)
    n = numel(shape)
    if n == 0:
        return out
    with rt.lock:
        call = rt.rng_counter
        rt.rng_counter = (call + 1) & _MASK64
    seed = rt.rng_seed & _MASK64
    params = ([a, (b - a) & 0xFFFFFFFF] if kind == "int"
              else [f32_bits(float(a)), f32_bits(float(b))])
    out_store = storage_type(dtype)
    kernel = rt.kernel(("random", kind, out_store), lambda: _source(kind, out_store), 0, 1)
    meta = [n, seed & 0xFFFFFFFF, seed >> 32, call & 0xFFFFFFFF, call >> 32, *params]
    rt.dispatch_linear(kernel, [], [out.handle.slab], meta, groups_for(-(-n // 4), WG))
    return out
