"""WGSL building blocks shared by every kernel: bindings, the entry point and meta access.

Binding convention (matching ``WgpuRuntime``'s layouts): read-only inputs ``in0..`` first,
then read-write outputs ``out0..``, then ``meta``, the dispatch's parameter words bound with
a dynamic offset. Entry points run ``WG`` invocations per workgroup on a 2-D grid of
workgroups; ``gid`` is the linear invocation id.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

#: Invocations per workgroup of 1-D kernels (the WebGPU default limit).
WG = 256

_HELPERS = """
fn mu(i: u32) -> u32 { return params[i]; }
fn mi(i: u32) -> i32 { return bitcast<i32>(params[i]); }
fn mf(i: u32) -> f32 { return bitcast<f32>(params[i]); }
fn is_nan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }
fn is_inf(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) == 0x7f800000u; }
fn nan_f32() -> f32 { return bitcast<f32>(0x7fc00000u); }
fn inf_f32() -> f32 { return bitcast<f32>(0x7f800000u); }
"""


def header(reads: Sequence[str], writes: Sequence[str], extra: str = "") -> str:
    """Bindings for inputs of WGSL element types ``reads`` and outputs ``writes`` (an output
    type may be ``atomic<u32>``), plus the meta block and the shared helpers."""
    lines = []
    if any("f16" in t for t in (*reads, *writes)) or "f16" in extra:
        lines.append("enable f16;")
    for i, t in enumerate(reads):
        lines.append(f"@group(0) @binding({i}) var<storage, read> in{i}: array<{t}>;")
    for j, t in enumerate(writes):
        lines.append(f"@group(0) @binding({len(reads) + j}) "
                     f"var<storage, read_write> out{j}: array<{t}>;")
    lines.append(f"@group(0) @binding({len(reads) + len(writes)}) "
                 "var<storage, read> params: array<u32>;")
    return "\n".join(lines) + _HELPERS + extra


def entry(body: str, wg: int = WG) -> str:
    """A 1-D entry point of ``wg`` invocations whose ``body`` sees ``gid``, ``lid``, ``wid``
    and ``group`` (the linear workgroup id)."""
    return f"""
@compute @workgroup_size({wg})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {{
    let group = wid.x + wid.y * nwg.x;
    let gid = group * {wg}u + lid;
{body}
}}
"""


_PARAM_READ = re.compile(r"\bm([uif])\((\d+)u\)")
_PARAM_CAST = {"u": "p_{}", "i": "bitcast<i32>(p_{})", "f": "bitcast<f32>(p_{})"}


def hoist_params(source: str) -> str:
    """``source`` with every parameter word read at a constant index (``mu(7u)``, ``mf(4u)``,
    ``mi(3u)``) loaded once, at the top of ``main``, into a private variable. On CPU adapters
    (llvmpipe) each storage read is a bounds-checked per-lane load that the compiler cannot
    move out of a loop past the kernel's own stores (measured 2-3x on a fused Adam update).
    Kernels with barriers are left as they are: private values are not uniform for WGSL."""
    words = sorted({int(m.group(2)) for m in _PARAM_READ.finditer(source)})
    main = re.search(r"@compute[^{]*\bfn main\([^{]*\{\n", source)
    if not words or main is None or "Barrier" in source:
        return source
    decls = "".join(f"var<private> p_{k}: u32;\n" for k in words)
    inits = "".join(f"    p_{k} = params[{k}u];\n" for k in words)
    head, sig, body = source[:main.start()], source[main.start():main.end()], source[main.end():]

    def sub(text: str) -> str:
        return _PARAM_READ.sub(lambda m: _PARAM_CAST[m.group(1)].format(m.group(2)), text)

    return sub(head) + decls + sig + inits + sub(body)


def groups_for(n: int, per_group: int = WG) -> int:
    """Workgroups covering ``n`` items at ``per_group`` per workgroup."""
    return -(-n // per_group)


def load(buf: str, index: str, storage: str, compute: str) -> str:
    """A WGSL expression reading ``buf[index]`` converted to the compute type."""
    value = f"{buf}[{index}]"
    return value if storage == compute else f"{compute}({value})"


def store_cast(value: str, storage: str, compute: str) -> str:
    """``value`` of the compute type converted for storing as ``storage``."""
    return value if storage == compute else f"{storage}({value})"
