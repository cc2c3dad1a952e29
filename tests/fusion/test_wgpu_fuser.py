"""The WGSL fuser under ``Fusion(WgpuBackend)``: fused chains give the unfused WebGPU backend's
and NumPy's values (broadcasting, strided inputs, comparisons, casts, activations, a closing
reduction, float32 and float16), a chain is one dispatch, plans are reused, and the shared
suites pass on ``Fusion(WgpuBackend)`` and (the elementwise ops' cases of the float32 gradient
suite) on ``Autodiff(Fusion(WgpuBackend))``."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from burnpy import Tensor
from burnpy.autodiff.checkpoint import CheckpointStrategy
from burnpy.backend.dtype import DType
from burnpy.fusion import Fusion
from burnpy.ir import FusedGroup, FusedOp, Reduction, Ref, TensorDesc
from burnpy.nn import functional as fn
from burnpy.testing import OpCase, backends_available, parametrize_cases, run_case
from burnpy.testing.grad_check import parametrize_grad_cases, run_grad_case
from burnpy_wgpu import WgpuBackend
from burnpy_wgpu.fuser import WgslFuser, wgsl_source
from burnpy_wgpu.runtime import runtime_for

if WgpuBackend not in backends_available():
    pytest.skip("no WebGPU adapter here", allow_module_level=True)

W = WgpuBackend
F = Fusion(WgpuBackend)
DEV = W.default_device()
RT = runtime_for(DEV)
HAS_F16 = W.supports_dtype(DEV, DType.float16)
DTYPES = ["float32", pytest.param("float16", marks=pytest.mark.skipif(
    not HAS_F16, reason="this WebGPU adapter lacks shader-f16"))]
Chain = Callable[[Tensor, Tensor], Tensor | tuple[Tensor, ...]]


def _ten_ops(x: Tensor, b: Tensor) -> Tensor:
    y = (x + b) * 0.5
    y = y.exp() - 1.0
    y = y.tanh() * x
    y = y.abs() + 0.25
    return y.sqrt().neg()


CHAINS: dict[str, tuple[Chain, Callable[[np.ndarray, np.ndarray], object]]] = {
    "ten_ops_broadcast": (_ten_ops, lambda x, b: -np.sqrt(
        np.abs(np.tanh(np.exp((x + b) * 0.5) - 1.0) * x) + 0.25)),
    "compare_where_cast": (
        lambda x, b: (x > b).float() * x + (x <= 0.1).int().float() - x.clamp(-0.5, 0.5),
        lambda x, b: (x > b) * x + (x <= 0.1) - np.clip(x, -0.5, 0.5)),
    "mask_fill_and_logic": (
        lambda x, b: x.masked_fill((x > 0.5) & ~(b < -0.5), 2.0) * b,
        lambda x, b: np.where((x > 0.5) & ~(b < -0.5), 2.0, x) * b),
    "activations": (
        lambda x, b: fn.gelu(x * b) + fn.sigmoid(x) - fn.relu(x - b) + fn.silu(b),
        lambda x, b: _gelu(x * b) + 1 / (1 + np.exp(-x)) - np.maximum(x - b, 0)
        + b / (1 + np.exp(-b))),
    "sum_dim_closes": (lambda x, b: (x * b + 1.0).exp().sum(dim=1, keepdim=True),
                       lambda x, b: np.exp(x * b + 1.0).sum(1, keepdims=True)),
    "mean_all_closes": (lambda x, b: ((x - b) * (x - b)).mean(),
                        lambda x, b: np.mean((x - b) ** 2)),
    "amax_dim0_closes": (lambda x, b: (x.sin() * b).amax(dim=0),
                         lambda x, b: (np.sin(x) * b).max(0)),
    "outputs_and_reduction": (lambda x, b: ((x * 2.0).log1p(), (x * 2.0).log1p().sum()),
                              lambda x, b: (np.log1p(x * 2), np.log1p(x * 2).sum())),
}


def _gelu(x: np.ndarray) -> np.ndarray:
    from math import erf
    return 0.5 * x * (1 + np.vectorize(erf)(x / np.sqrt(2)))


def _inputs(dtype: str, shape: tuple[int, ...] = (37, 19)) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, shape).astype(dtype)
    b = rng.uniform(-1, 1, shape[-1:]).astype(dtype)
    return x, b


def _run(backend: type, chain: Chain, x: np.ndarray, b: np.ndarray) -> list[np.ndarray]:
    out = chain(Tensor.from_data(x, backend=backend), Tensor.from_data(b, backend=backend))
    outs = out if isinstance(out, tuple) else (out,)
    return [o.to_numpy().astype(np.float64) for o in outs]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(CHAINS))
def test_fused_chain_matches_unfused_wgpu_and_numpy(name: str, dtype: str) -> None:
    chain, reference = CHAINS[name]
    x, b = _inputs(dtype)
    F.stats.reset()
    fused = _run(F, chain, x, b)
    assert F.stats.kernels >= 1 and F.stats.fallback_ops == 0, F.stats
    plain = _run(W, chain, x, b)
    expected = reference(x.astype(np.float64), b.astype(np.float64))
    wanted = expected if isinstance(expected, tuple) else (expected,)
    tol = 2e-6 if dtype == "float32" else 2e-3
    for got, same, want in zip(fused, plain, wanted, strict=True):
        np.testing.assert_allclose(got, same, rtol=tol * 4, atol=tol * 4)
        np.testing.assert_allclose(got, np.asarray(want, dtype=np.float64),
                                   rtol=tol * 50, atol=tol * 50)


def test_ten_op_chain_is_one_dispatch_and_replays_without_compiling() -> None:
    x, b = _inputs("float32", (256, 64))
    xt, bt = Tensor.from_data(x, backend=F), Tensor.from_data(b, backend=F)
    F.sync(DEV)
    F.stats.reset()
    before, misses = RT.stats["dispatches"], RT.stats["pipeline_misses"]
    first = _ten_ops(xt, bt).to_numpy()
    assert RT.stats["dispatches"] - before == 1
    assert (F.stats.kernels, F.stats.fallback_ops) == (1, 0)
    compiled = F.stats.compiles
    before = RT.stats["dispatches"]
    misses = RT.stats["pipeline_misses"]
    again = _ten_ops(xt, bt).to_numpy()
    assert RT.stats["dispatches"] - before == 1
    assert F.stats.compiles == compiled and F.stats.cache_hits >= 1
    assert RT.stats["pipeline_misses"] == misses
    np.testing.assert_array_equal(first, again)


def test_strided_and_broadcast_inputs_are_indexed_in_the_shader() -> None:
    rng = np.random.default_rng(1)
    a = rng.standard_normal((6, 5, 4)).astype(np.float32)
    c = rng.standard_normal((6, 1)).astype(np.float32)
    at = Tensor.from_data(a, backend=F).permute(2, 0, 1)  # a general (non-mergeable) view
    ct = Tensor.from_data(c, backend=F)
    got = ((at * ct).exp() + at).to_numpy()
    ap = a.transpose(2, 0, 1)
    np.testing.assert_allclose(got, np.exp(ap * c) + ap, rtol=1e-5, atol=1e-6)


def test_reduction_over_many_rows_runs_one_invocation_per_row() -> None:
    x = np.random.default_rng(2).standard_normal((1000, 33)).astype(np.float32)
    xt = Tensor.from_data(x, backend=F)
    F.sync(DEV)
    before = RT.stats["dispatches"]
    got = (xt * xt + 1.0).sum(dim=1).to_numpy()
    assert RT.stats["dispatches"] - before == 1
    np.testing.assert_allclose(got, (x * x + 1.0).sum(1), rtol=1e-5)


def test_int_and_bool_chains_follow_python_semantics() -> None:
    a = np.array([-7, -3, 0, 5, 9, 14], dtype=np.int32)
    at = Tensor.from_data(a, backend=F)
    got = ((at * 3 - 4) // 5 + (at % 4)).to_numpy()
    np.testing.assert_array_equal(got, (a * 3 - 4) // 5 + a % 4)
    flags = ((at > 0) ^ (at < 6)).to_numpy()
    np.testing.assert_array_equal(flags, (a > 0) ^ (a < 6))


#: float32 values whose comparisons IEEE fixes: both zeros, infinities, NaN, extremes.
_SPECIAL = np.array([0.0, -0.0, 1.0, -1.0, 2.5, np.inf, -np.inf, np.nan, 1e-30, -3e38],
                    dtype=np.float32)


@pytest.mark.parametrize("rows", [1, 16], ids=["scalar-items", "vec4-items"])
@pytest.mark.parametrize("op", ["__eq__", "__ne__", "__gt__", "__ge__", "__lt__", "__le__"])
def test_float32_comparisons_in_one_kernel_keep_ieee_semantics(op: str, rows: int) -> None:
    """Every pair of special values, and ``x`` against ``x + c`` computed in the same kernel:
    a shader compiler may fold that comparison to ``c`` against 0 as if nothing were infinite
    (Mesa's OpenGL adapter made ``inf == inf + 1.0`` false). 1,600 elements run as vec4
    items on CPU adapters."""
    x, y = (np.broadcast_to(v, (rows, 10, 10)).copy() for v in np.meshgrid(_SPECIAL, _SPECIAL))
    xt, yt = Tensor.from_data(x, backend=F), Tensor.from_data(y, backend=F)
    F.sync(DEV)
    F.stats.reset()
    before = RT.stats["dispatches"]
    pairs = getattr(xt * 1.0, op)(yt).to_numpy()  # a group of one would run B's own op
    shifted = getattr(xt, op)(xt + yt * 0.001).to_numpy()
    assert RT.stats["dispatches"] - before == 2
    assert (F.stats.kernels, F.stats.fallback_ops) == (2, 0), F.stats
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(pairs, getattr(x, op)(y))
        np.testing.assert_array_equal(shifted, getattr(x, op)(x + y * np.float32(0.001)))


#: Chains a compiler may simplify only by assuming no infinity or NaN (WGSL allows it, and
#: lavapipe turned ``(x + c) - x`` into ``c``), with NumPy's float32 results.
_ALGEBRA: dict[str, tuple[Chain, Callable[[np.ndarray, np.ndarray], np.ndarray]]] = {
    "(x+c)-x": (lambda x, c: (x + c) - x, lambda x, c: (x + c) - x),
    "x-x": (lambda x, c: x * 1.0 - x, lambda x, c: x - x),
    "y*0": (lambda x, c: (x + 0.5) * 0.0, lambda x, c: (x + np.float32(0.5)) * np.float32(0)),
    "y/y": (lambda x, c: (x * c) / (x * c), lambda x, c: (x * c) / (x * c)),
    "y+0": (lambda x, c: (x * c) + 0.0, lambda x, c: (x * c) + np.float32(0)),
    "(y*c)/c": (lambda x, c: (x * c) / c, lambda x, c: (x * c) / c),
    "x-(x-c)": (lambda x, c: x - (x - c), lambda x, c: x - (x - c)),
}


@pytest.mark.parametrize("rows", [1, 512], ids=["scalar-items", "vec4-items"])
@pytest.mark.parametrize("name", list(_ALGEBRA))
def test_fused_float32_algebra_keeps_infinities_nan_and_signed_zeros(name: str,
                                                                      rows: int) -> None:
    chain, reference = _ALGEBRA[name]
    x = np.tile(np.array([0.0, -0.0, 1.5, np.inf, -np.inf, np.nan, -2.0, 1e30],
                         dtype=np.float32), rows)
    c = np.tile(np.array([1.0, 2.0, -1.0, 3.0, 0.5, 1.0, 2.0, -1.0], dtype=np.float32), rows)
    F.stats.reset()
    got = np.asarray(chain(Tensor.from_data(x, backend=F), Tensor.from_data(c, backend=F))
                     .to_numpy())
    assert F.stats.kernels == 1 and F.stats.fallback_ops == 0, F.stats
    with np.errstate(all="ignore"):
        want = reference(x, c)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def test_fuser_declines_what_webgpu_cannot_hold() -> None:
    fuser = WgslFuser()
    f32, f16, i32 = DType.float32, DType.float16, DType.int32
    assert fuser.accepts("add", (f32, f32, f32))
    assert fuser.accepts("cast", (f16, i32))
    assert not fuser.accepts("add", (DType.float64, DType.float64, DType.float64))
    assert not fuser.accepts("exp", (i32, i32))
    assert not fuser.accepts("mean", (i32, i32))
    assert not fuser.accepts("and", (f32, f32, f32))


def test_a_float16_local_rounds_and_enables_f16() -> None:
    f32, f16 = DType.float32, DType.float16
    group = FusedGroup((8,), (TensorDesc((8,), f32),), (f32,),
                       (FusedOp("cast", (Ref("input", 0),), f16),
                        FusedOp("mul", (Ref("local", 0), Ref("scalar", 0)), f32)),
                       (1,), Reduction("sum", Ref("local", 1), None, (), f32))
    source = wgsl_source(group, "tree", "c", 0)
    assert source.startswith("enable f16;") and "f32(f16(" in source
    assert source.count("@compute") == 1


# ---- the shared suites ---------------------------------------------------------------------------
def _first_supported_dtype_each() -> list[object]:
    """One param per case: its first dtype WebGPU holds (float32 where the case lists
    float64 first); float16 is checked by the chain tests above."""
    seen: set[str] = set()
    params = []
    for p in parametrize_cases(F):
        case = p.values[0]
        if p.marks:
            continue
        if case.name not in seen:
            seen.add(case.name)
            params.append(p)
    return params


@pytest.mark.parametrize(("case", "dtype"), _first_supported_dtype_each())
def test_fusion_wgpu_passes_the_conformance_suite(case: OpCase, dtype: str) -> None:
    run_case(case, F, dtype, seed=0)


#: Ops whose gradients are chains of fusable ops: the float32 gradient suite runs their cases
#: (the whole table under WebGPU takes half an hour; every case runs on Fusion(CpuBackend)).
GRAD_OPS = frozenset({
    "abs", "add", "sub", "mul", "div", "neg", "exp", "log", "log1p", "sqrt", "rsqrt", "pow",
    "tanh", "sigmoid", "gelu", "relu", "silu", "softplus", "elu", "mish", "clamp", "where",
    "sum", "mean", "amax", "square", "erf", "sin", "cos", "atan2", "lerp", "mse", "huber",
})


@pytest.mark.parametrize(
    ("case", "strategy"),
    [p for p in parametrize_grad_cases() if p.values[0].name.split("_")[0] in GRAD_OPS])
def test_float32_gradients_through_fusion_wgpu_match_torch(
        case: OpCase, strategy: type[CheckpointStrategy]) -> None:
    run_grad_case(case, F, strategy, seed=0, dtype="float32")
