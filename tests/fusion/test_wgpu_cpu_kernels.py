"""Kernel shapes chosen for CPU adapters (llvmpipe): parameter words hoisted into private
variables, fused ``map`` kernels looping over several elements per invocation, and products
sharing operand values between the lanes of a subgroup. All must leave every value as it
was: checked against the unfused backend and NumPy at sizes whose last workgroup is partial."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from burnpy import Tensor
from burnpy.fusion import Fusion
from burnpy.testing import backends_available
from burnpy_wgpu import WgpuBackend
from burnpy_wgpu.fuser import CPU_MAP_MIN_GROUPS, CPU_MAP_PER_INVOCATION, _per_invocation
from burnpy_wgpu.kernels.common import WG, header, hoist_params
from burnpy_wgpu.kernels.matmul import SUBGROUP, subgroup_lanes
from burnpy_wgpu.runtime import runtime_for

if WgpuBackend not in backends_available():
    pytest.skip("no WebGPU adapter here", allow_module_level=True)

F = Fusion(WgpuBackend)
DEV = WgpuBackend.default_device()
RT = runtime_for(DEV)


@pytest.fixture(params=["subgroup", "registers"])
def cpu_matmul(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each matmul kernel of CPU adapters in turn: lanes sharing the left operand through
    subgroup broadcasts (where the adapter runs 8-lane subgroups), and the register tile."""
    if request.param == "subgroup" and subgroup_lanes(RT) != SUBGROUP:
        pytest.skip("this adapter has no 8-lane subgroups")
    if request.param == "registers":
        monkeypatch.setitem(RT.tables, "subgroup_lanes", 0)
    return str(request.param)


def _fused_kinds(keys: set[object]) -> list[str]:
    """The kinds (``map``, ``vmap``, ``rows``...) of the fused kernels among the runtime's
    kernel keys ``keys``, a batch's segments one by one."""
    kinds = []
    for key in keys:
        if isinstance(key, tuple) and key[0] == "fused":
            kinds.append(key[1])
        elif isinstance(key, tuple) and key[0] == "fused_batch":
            kinds += [layout[0] for _, layout in key[1]]
    return kinds


def _kernel(body: str, extra: str = "") -> str:
    return header(["f32"], ["f32"], extra) + f"""
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {{
{body}
}}
"""


def test_hoisted_parameter_words_are_read_once_at_the_top_of_main() -> None:
    source = _kernel("    if (gid.x >= mu(0u)) { return; }\n    out0[gid.x] = scale(in0[gid.x]);",
                     "fn scale(x: f32) -> f32 { return x * mf(1u) + f32(mi(2u)); }\n")
    hoisted = hoist_params(source)
    assert "mu(0u)" not in hoisted and "mf(1u)" not in hoisted and "mi(2u)" not in hoisted
    assert "var<private> p_1: u32;" in hoisted
    assert "bitcast<f32>(p_1)" in hoisted and "bitcast<i32>(p_2)" in hoisted
    top = hoisted.split("fn main", 1)[1]
    assert top.index("p_0 = params[0u];") < top.index("if (gid.x >= p_0)")
    assert "fn mu(i: u32)" in hoisted  # the helpers stay for computed indices


def test_kernels_with_barriers_or_no_constant_words_are_left_alone() -> None:
    barrier = _kernel("    workgroupBarrier();\n    out0[gid.x] = in0[gid.x] * mf(0u);")
    assert hoist_params(barrier) == barrier
    plain = _kernel("    out0[gid.x] = in0[gid.x];")
    assert hoist_params(plain) == plain


def test_a_hoisted_kernel_computes_what_the_original_does() -> None:
    source = _kernel("    if (gid.x >= mu(0u)) { return; }\n"
                     "    out0[gid.x] = in0[mu(3u) + gid.x] * mf(1u) + f32(mi(2u));")
    x = np.arange(100, dtype=np.float32)
    inp = RT.upload(x)
    results = []
    for name, text in (("original", source), ("hoisted", hoist_params(source))):
        kernel = RT.kernel(("test_hoist", name), lambda text=text: text, 1, 1)
        out = RT.alloc(90 * 4)
        meta = [90, int(np.float32(0.5).view(np.uint32)), -3 & 0xFFFFFFFF, 10]
        RT.dispatch(kernel, [inp.slab], [out.slab], meta, (2, 1, 1))
        results.append(np.frombuffer(RT.read(out.slab, 0, 90 * 4), np.float32).copy())
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_array_equal(results[1], x[10:] * 0.5 - 3)


def test_large_maps_loop_over_elements_on_cpu_adapters_only() -> None:
    big = WG * CPU_MAP_PER_INVOCATION * CPU_MAP_MIN_GROUPS
    assert _per_invocation(RT, "rows", big * 4) == 1
    assert _per_invocation(RT, "map", big - 1) == 1
    assert _per_invocation(RT, "map", big) == (CPU_MAP_PER_INVOCATION if RT.is_cpu else 1)


@pytest.mark.parametrize("n", [WG * CPU_MAP_PER_INVOCATION * CPU_MAP_MIN_GROUPS + 77,
                               WG * CPU_MAP_PER_INVOCATION * (CPU_MAP_MIN_GROUPS + 3)])
def test_a_looping_map_matches_unfused_and_numpy(n: int) -> None:
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)

    def chain(backend: type) -> tuple[np.ndarray, np.ndarray]:
        a, b = Tensor.from_data(x, backend=backend), Tensor.from_data(y, backend=backend)
        s = a * b + 0.5
        return s.to_numpy(), ((s * 2.0).exp() - b).to_numpy()

    F.sync(DEV)
    before = RT.stats["dispatches"]
    fused = chain(F)
    assert RT.stats["dispatches"] - before == 2
    plain = chain(WgpuBackend)
    s = x * y + np.float32(0.5)
    for got, same, want in zip(fused, plain, (s, np.exp(s * 2.0) - y), strict=True):
        np.testing.assert_array_equal(got, same)
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("m,k,n", [(12, 16, 20), (64, 64, 40), (9, 16, 20), (12, 10, 8)])
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_matmul_of_every_layout_matches_numpy(m: int, k: int, n: int, ta: bool, tb: bool,
                                              cpu_matmul: str) -> None:
    """Row-major and transposed operands (read as ``vec4``s along their unit-stride dim where
    sizes allow, scalar reads elsewhere), batched and broadcast, through a slice's offset."""
    rng = np.random.default_rng(m * k + n)
    a = rng.standard_normal((2, m, k)).astype(np.float32)
    b = rng.standard_normal((1, k, n)).astype(np.float32)
    at = (Tensor.from_data(np.ascontiguousarray(a.transpose(0, 2, 1)), backend=WgpuBackend)
          .swap_dims(1, 2) if ta else Tensor.from_data(a, backend=WgpuBackend))
    bt = (Tensor.from_data(np.ascontiguousarray(b.transpose(0, 2, 1)), backend=WgpuBackend)
          .swap_dims(1, 2) if tb else Tensor.from_data(b, backend=WgpuBackend))
    np.testing.assert_allclose((at @ bt).to_numpy(), a @ b, rtol=1e-4, atol=1e-4)
    padded = np.zeros((8 + 2 * m * k,), np.float32)
    padded[8:] = a.reshape(-1)
    sliced = Tensor.from_data(padded, backend=WgpuBackend)[8:].reshape((2, m, k))
    np.testing.assert_allclose((sliced @ bt).to_numpy(), a @ b, rtol=1e-4, atol=1e-4)


def test_fused_matmul_epilogue_reads_vec4_operands(cpu_matmul: str) -> None:
    rng = np.random.default_rng(7)
    x = rng.standard_normal((64, 32)).astype(np.float32)
    w = rng.standard_normal((32, 48)).astype(np.float32)
    bias = rng.standard_normal((48,)).astype(np.float32)
    xt, wt = Tensor.from_data(x, backend=F), Tensor.from_data(w, backend=F)
    bt = Tensor.from_data(bias, backend=F)
    got = ((xt @ wt + bt).tanh() * 2.0).to_numpy()
    plain = ((Tensor.from_data(x, backend=WgpuBackend) @ Tensor.from_data(w, backend=WgpuBackend)
              + Tensor.from_data(bias, backend=WgpuBackend)).tanh() * 2.0).to_numpy()
    np.testing.assert_allclose(got, np.tanh(x @ w + bias) * 2.0, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got, plain, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape", [(3, 343), (16, 256), (7, 5715)])
def test_vector_maps_match_unfused_and_numpy(shape: tuple[int, int]) -> None:
    """Maps of 4 elements per work item (``vmap``, CPU adapters), sizes not a multiple of 4,
    one to four items per invocation: aligned contiguous inputs read as ``vec4``s next to a
    slice starting off a ``vec4``, a broadcast row, a single value and a float16 input; float,
    int and bool outputs written as ``vec4``s."""
    rng = np.random.default_rng(shape[1])
    n = shape[0] * shape[1]
    x = rng.standard_normal(shape).astype(np.float32)
    y = rng.standard_normal(n + 1).astype(np.float32)
    row = rng.standard_normal(shape[1]).astype(np.float32)
    one = rng.standard_normal(1).astype(np.float32)
    half = rng.standard_normal(shape).astype(np.float16)

    def chain(backend: type) -> list[np.ndarray]:
        def t(v: np.ndarray) -> Tensor:
            return Tensor.from_data(v, backend=backend)
        a, b = t(x), t(y)[1:].reshape(shape)  # b: a view one element into its buffer
        h = t(half) if RT.has_f16 else t(half.astype(np.float32))
        s = a * b + t(row) - t(one) * 2.0 + h.cast("float32")
        return [s.to_numpy(), (s * 3.0).cast("int32").to_numpy(), (s > a).to_numpy(),
                (s.exp() * a).to_numpy()]

    F.sync(DEV)
    kernels = set(RT._kernels)
    fused = chain(F)
    if RT.is_cpu:
        assert set(_fused_kinds(set(RT._kernels) - kernels)) == {"vmap"}
    plain = chain(WgpuBackend)
    s = x * y[1:].reshape(shape) + row - one * 2 + half.astype(np.float32)
    wants = [s, (s * 3).astype(np.int32), s > x, np.exp(s) * x]
    for got, same, want in zip(fused, plain, wants, strict=True):
        np.testing.assert_array_equal(got, same)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("shape", "dim"), [((64, 256), 0), ((3, 50, 12), 1), ((700, 4), 0),
                                          ((9, 130, 8), 0)])
def test_vector_row_sums_match_the_scalar_ones_and_numpy(shape: tuple[int, ...], dim: int,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    """Sums and means over a dim followed by a multiple of 4 elements fold 4 adjacent outputs
    per work item (``vrows``, CPU adapters), Kahan-compensated per lane: bit for bit what
    one output per item gives, with an elementwise output of the group written as ``vec4``s,
    a broadcast input and a slice off a ``vec4``."""
    rng = np.random.default_rng(sum(shape))
    x = (rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 4, shape)).astype(np.float32)
    y = rng.standard_normal(int(np.prod(shape)) + 3).astype(np.float32)
    row = rng.standard_normal(shape[-1]).astype(np.float32)

    def run() -> list[np.ndarray]:
        xt, yt, rt_ = (Tensor.from_data(v, backend=F) for v in (x, y, row))
        g = xt * yt[3:].reshape(shape) + rt_
        outs = [g.sum(dim=dim), (xt * 2.0).mean(dim=dim), g]
        return [o.to_numpy() for o in outs]

    F.sync(DEV)
    kernels = set(RT._kernels)
    vector = run()
    if RT.is_cpu:
        assert "vrows" in _fused_kinds(set(RT._kernels) - kernels)
    monkeypatch.setattr("burnpy_wgpu.fuser._vector_rows", lambda group, inner: False)
    F.clear_plans()
    scalar = run()
    for got, same in zip(vector, scalar, strict=True):
        np.testing.assert_array_equal(got, same)
    g = x.astype(np.float64) * y[3:].reshape(shape) + row
    np.testing.assert_allclose(vector[0], g.sum(dim), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(vector[1], (x.astype(np.float64) * 2).mean(dim), rtol=1e-5,
                               atol=1e-4)


def test_groups_of_very_different_sizes_share_one_dispatch() -> None:
    """Small maps, a small row reduction and a large one (on CPU adapters: spread over
    workgroups of its own), and large maps that loop over several items per invocation (on
    CPU adapters: each on whole workgroups of its own, after a small segment that ends
    inside a workgroup), one with a broadcast operand, one in float16."""
    big = WG * CPU_MAP_PER_INVOCATION * CPU_MAP_MIN_GROUPS
    rng = np.random.default_rng(11)
    small = rng.standard_normal((7, 9)).astype(np.float32)
    wide = rng.standard_normal((13, big // 13 + 9)).astype(np.float32)
    row = rng.standard_normal((wide.shape[1],)).astype(np.float32)
    long = rng.standard_normal((big + 77,)).astype(np.float32)
    tail = rng.standard_normal((33,)).astype(np.float32)
    tall = rng.standard_normal((64, 301)).astype(np.float32)
    half = RT.has_f16
    ts = [Tensor.from_data(v, backend=F) for v in (small, wide, row, long, tail, tall)]
    if half:
        ts[3] = ts[3].cast("float16")
    F.sync(DEV)
    F.stats.reset()
    before = RT.stats["dispatches"]
    outs = [(ts[0] * 1.5).exp() - ts[0], ts[1] * ts[2] + 0.5, (ts[0] + 2.0).sum(dim=1),
            (ts[3] * 0.5).tanh(), ts[4] * ts[4] - 1.0, (ts[5] * ts[5]).sum(dim=0)]
    F.sync(DEV)
    assert RT.stats["dispatches"] - before == 1
    assert F.stats.kernels == 1 and F.stats.fallback_ops == 0
    assert _per_invocation(RT, "map", wide.size) == (CPU_MAP_PER_INVOCATION if RT.is_cpu else 1)
    longv = long.astype(np.float16).astype(np.float32) if half else long
    wants = [np.exp(small * 1.5) - small, wide * row + 0.5, (small + 2).sum(1),
             np.tanh(longv * 0.5), tail * tail - 1, (tall * tall).sum(0)]
    for out, want in zip(outs, wants, strict=True):
        got = out.to_numpy().astype(np.float32)
        tol = 2e-3 if got.size == long.size and half else 1e-5
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("m,k,n", [(37, 10, 13), (9, 3, 5), (64, 257, 36), (16, 4, 4),
                                   (17, 7, 33), (1, 1, 1)])
def test_matmul_tails_match_numpy(m: int, k: int, n: int, cpu_matmul: str) -> None:
    """Row and column counts that leave a tile part empty, reduced sizes that leave a
    remainder after the unrolled steps; float32, float16 and a fused epilogue."""
    rng = np.random.default_rng(m * 1000 + k * 10 + n)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    bias = rng.standard_normal((n,)).astype(np.float32)
    at = Tensor.from_data(a, backend=WgpuBackend)
    bt = Tensor.from_data(np.ascontiguousarray(b.T), backend=WgpuBackend).swap_dims(0, 1)
    np.testing.assert_allclose((at @ bt).to_numpy(), a @ b, rtol=1e-4, atol=1e-4)
    if RT.has_f16:
        a16, b16 = a.astype(np.float16), b.astype(np.float16)
        got = (Tensor.from_data(a16, backend=WgpuBackend)
               @ Tensor.from_data(b16, backend=WgpuBackend)).to_numpy()
        want = a16.astype(np.float32) @ b16.astype(np.float32)
        assert got.dtype == np.float16
        np.testing.assert_allclose(got.astype(np.float32), want, rtol=2e-3, atol=2e-3)
    fused = ((Tensor.from_data(a, backend=F) @ Tensor.from_data(b, backend=F)
              + Tensor.from_data(bias, backend=F)).tanh() * 2.0).to_numpy()
    np.testing.assert_allclose(fused, np.tanh(a @ b + bias) * 2.0, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize(("a_shape", "b_shape"), [((2, 37, 12), (2, 12, 24)), ((5, 16), (16, 8)),
                                                  ((64, 9), (9, 44))])
def test_vector_epilogues_match_unfused_and_numpy(dtype: str, a_shape: tuple[int, ...],
                                                  b_shape: tuple[int, ...]) -> None:
    """A product whose rows are whole ``vec4``s hands its epilogue 4 adjacent elements at a
    time (subgroup kernel): batched, rows not a multiple of the tile's, a bias broadcast
    along the rows, a residual read as ``vec4``s, a slice off a ``vec4``; in float16 (not a
    32-bit output: one element at a time)."""
    if dtype == "float16" and not RT.has_f16:
        pytest.skip("this WebGPU adapter lacks shader-f16")
    rng = np.random.default_rng(sum(a_shape))
    a = rng.standard_normal(a_shape).astype(dtype)
    b = rng.standard_normal(b_shape).astype(dtype)
    n = b_shape[-1]
    bias = rng.standard_normal((n,)).astype(dtype)
    out_shape = (*a_shape[:-1], n)
    res = rng.standard_normal(out_shape).astype(dtype)
    flat = rng.standard_normal(int(np.prod(out_shape)) + 1).astype(dtype)

    def run(backend: type) -> list[np.ndarray]:
        at, bt, biast, rest, flatt = (Tensor.from_data(v, backend=backend)
                                      for v in (a, b, bias, res, flat))
        first = ((at @ bt + biast).tanh() * 2.0 + rest).to_numpy()
        second = ((at @ bt) * flatt[1:].reshape(out_shape) - 1.0).to_numpy()
        return [first, second]

    fused, plain = run(F), run(WgpuBackend)
    prod = a.astype(np.float32) @ b.astype(np.float32)
    wants = [np.tanh(prod + bias) * 2.0 + res, prod * flat[1:].reshape(out_shape) - 1.0]
    tol = 2e-2 if dtype == "float16" else 1e-4
    for got, same, want in zip(fused, plain, wants, strict=True):
        np.testing.assert_allclose(got.astype(np.float32), same.astype(np.float32),
                                   rtol=1e-3 if dtype == "float16" else 1e-6, atol=1e-3)
        np.testing.assert_allclose(got.astype(np.float32), want, rtol=tol, atol=tol)


def _live_slabs() -> int:
    pool = RT.pool
    return len(pool.slabs) - sum(map(len, pool.free.values())) - sum(
        map(len, pool.pending.values()))


def test_a_flush_with_an_epilogue_leaves_no_cycle_holding_buffers() -> None:
    """The groups of a flush (a matmul's and its epilogue's point at each other) are taken
    apart when it ends: a dropped result frees its buffer without the cyclic GC."""
    rng = np.random.default_rng(3)
    xt = Tensor.from_data(rng.standard_normal((16, 8)).astype(np.float32), backend=F)
    wt = Tensor.from_data(rng.standard_normal((8, 12)).astype(np.float32), backend=F)
    gc.collect()
    gc.disable()
    try:
        F.sync(DEV)
        before = _live_slabs()
        for _ in range(4):
            out = (xt @ wt + 1.0).tanh() * 2.0
            out.to_numpy()
            del out
        F.sync(DEV)
        assert _live_slabs() == before
    finally:
        gc.enable()
