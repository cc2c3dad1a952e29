"""WebGPU kernels on the shapes that break GPU code: sizes that are not a multiple of the
workgroup, empty tensors, strided/flipped/broadcast views, reductions and sorts longer than
one workgroup, duplicate scatter targets, and the dtypes WGSL has (and has not)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special

import burnpy as bp
from burnpy import Tensor
from burnpy.backend.dtype import DType
from burnpy_wgpu import WgpuBackend, WgpuDTypeError
from burnpy_wgpu.device import adapter_for
from burnpy_wgpu.kernels.matmul import SUBGROUP, subgroup_lanes
from burnpy_wgpu.runtime import runtime_for

B = WgpuBackend
DEV = B.default_device()
RNG = np.random.default_rng(3)


def _t(values: object, dtype: str = "float32") -> Tensor:
    return Tensor.from_data(np.asarray(values, dtype=dtype), backend=B)


@pytest.mark.parametrize("n", [1, 255, 257, 1000, 65_537])
def test_sizes_that_are_not_a_multiple_of_the_workgroup(n: int) -> None:
    a = RNG.standard_normal(n).astype(np.float32)
    np.testing.assert_allclose((_t(a) * 2.0 + 1.0).to_numpy(), a * 2 + 1, rtol=1e-6)
    np.testing.assert_allclose(_t(a).sum().item(), a.sum(dtype=np.float64),
                               atol=1e-6 * float(np.abs(a).sum()))


def test_empty_tensors_flow_through_every_kind_of_kernel() -> None:
    e = Tensor.zeros((0, 3), backend=B)
    assert (e + 1.0).shape == (0, 3)
    assert e.sum().item() == 0.0
    assert e.sum(0).tolist() == [0.0, 0.0, 0.0]
    assert e.prod(1).shape == (0,)
    assert (e @ Tensor.zeros((3, 2), backend=B)).shape == (0, 2)
    assert (Tensor.zeros((2, 0), backend=B) @ Tensor.zeros((0, 3), backend=B)).tolist() == \
        [[0.0] * 3] * 2
    assert e.sort(dim=0).values.shape == (0, 3)
    assert e.cumsum(0).shape == (0, 3)
    assert (e > 0).argwhere().shape == (0, 2)
    assert Tensor.random((0,), backend=B).shape == (0,)


def test_views_are_read_in_place_by_kernels() -> None:
    a = RNG.standard_normal((4, 5, 6)).astype(np.float32)
    t = _t(a)
    views = {
        "permute": (t.permute(2, 0, 1), a.transpose(2, 0, 1)),
        "flip": (t.flip(1), a[:, ::-1]),
        "step_slice": (t[1:4:2, ::3, 1:], a[1:4:2, ::3, 1:]),
        "negative_step": (t[::-2], a[::-2]),
        "expand": (t[:, :1, :].expand(4, 5, 6), np.broadcast_to(a[:, :1, :], (4, 5, 6))),
        "unfold": (t.unfold(2, 3, 2), np.lib.stride_tricks.sliding_window_view(
            a, 3, axis=2)[:, :, ::2]),
    }
    for name, (view, ref) in views.items():
        assert view.primitive.handle is t.primitive.handle, name
        np.testing.assert_allclose((view * 1.0).to_numpy(), ref, err_msg=name)
        np.testing.assert_allclose(view.sum(-1).to_numpy(), ref.sum(-1), rtol=1e-5,
                                   err_msg=name)
        np.testing.assert_allclose(view.to_numpy(), ref, err_msg=name)


def test_reshape_is_a_view_when_strides_allow_and_a_copy_otherwise() -> None:
    t = _t(np.arange(24)).reshape(2, 3, 4)
    merged = t.reshape(6, 4)
    assert merged.primitive.handle is t.primitive.handle
    transposed = t.permute(0, 2, 1).reshape(2, 12)
    assert transposed.primitive.handle is not t.primitive.handle
    np.testing.assert_array_equal(transposed.to_numpy(),
                                  np.arange(24).reshape(2, 3, 4).transpose(0, 2, 1).reshape(2, 12))


def test_reductions_of_ten_million_elements() -> None:
    n = 10_000_000
    a = RNG.random(n, dtype=np.float32)
    a[7_654_321] = 3.0
    t = _t(a)
    np.testing.assert_allclose(t.sum().item(), a.sum(dtype=np.float64), rtol=1e-6)
    assert t.max().item() == 3.0
    assert int(t.argmax().item()) == 7_654_321
    assert int(t.argmin().item()) == int(a.argmin())
    ints = Tensor.ones((n,), backend=B, dtype="int32")
    assert int(ints.sum().item()) == n


def test_reductions_along_every_dim_of_a_strided_view() -> None:
    a = RNG.standard_normal((37, 3000)).astype(np.float32)
    t = _t(a).permute(1, 0)
    for dim in (0, 1):
        ref = a.T
        np.testing.assert_allclose(t.sum(dim).to_numpy(), ref.sum(dim),
                                   atol=1e-6 * float(np.abs(ref).sum(dim).max()))
        np.testing.assert_array_equal(t.argmax(dim).to_numpy(), ref.argmax(dim))
        np.testing.assert_array_equal(t.min(dim).values.to_numpy(), ref.min(dim))


def test_arg_reductions_take_the_first_index_among_ties_and_nan_wins() -> None:
    a = np.zeros(5000, np.float32)
    a[[1234, 4321]] = 2.0
    assert int(_t(a).argmax().item()) == 1234
    a[3000] = np.nan
    assert int(_t(a).argmax().item()) == 3000
    assert np.isnan(_t(a).max().item())


def test_sort_is_stable_on_lines_longer_than_one_workgroup() -> None:
    a = RNG.integers(0, 50, size=(3, 5000)).astype(np.float32)
    values, indices = _t(a).sort_with_indices(dim=1)
    ref = np.argsort(a, axis=1, kind="stable")
    np.testing.assert_array_equal(indices.to_numpy(), ref)
    np.testing.assert_array_equal(values.to_numpy(), np.take_along_axis(a, ref, 1))
    desc = _t(a).argsort(dim=1, descending=True).to_numpy()
    ref_desc = (4999 - np.argsort(a[:, ::-1], axis=1, kind="stable"))[:, ::-1]
    np.testing.assert_array_equal(desc, ref_desc)


def test_topk_and_cumulative_ops_along_long_dims() -> None:
    a = RNG.standard_normal(3000).astype(np.float32)
    np.testing.assert_array_equal(_t(a).topk(5).values.to_numpy(), np.sort(a)[::-1][:5])
    np.testing.assert_allclose(_t(a).cumsum(0).to_numpy(), np.cumsum(a, dtype=np.float64),
                               atol=1e-6 * float(np.abs(a).sum()))
    vals, idx = _t(a).cummax_with_indices(0)
    np.testing.assert_array_equal(vals.to_numpy(), np.maximum.accumulate(a))
    assert idx.dtype is DType.int32


def test_scatter_add_sums_duplicate_targets_without_float_atomics() -> None:
    idx = RNG.integers(0, 7, size=(4, 300))
    vals = RNG.standard_normal((4, 300)).astype(np.float32)
    out = Tensor.zeros((4, 7), backend=B).scatter_add(1, _t(idx, "int32"), _t(vals))
    ref = np.zeros((4, 7))
    np.add.at(ref, (np.arange(4)[:, None], idx), vals)
    np.testing.assert_allclose(out.to_numpy(), ref, rtol=1e-5, atol=1e-5)
    rows = Tensor.zeros((5, 3), backend=B).select_add(0, _t([1, 1, 4, 1], "int32"),
                                                       _t(np.ones((4, 3))))
    assert rows.tolist() == [[0.0] * 3, [3.0] * 3, [0.0] * 3, [0.0] * 3, [1.0] * 3]
    ints = Tensor.zeros((3,), backend=B, dtype="int32").scatter_add(
        0, _t([0, 0, 2, 0], "int32"), _t([1, 2, 3, 4], "int32"))
    assert ints.tolist() == [7, 0, 3]


def test_argwhere_compacts_across_many_blocks() -> None:
    mask = RNG.random((700, 30)) < 0.3
    found = Tensor.from_data(mask, backend=B).argwhere()
    np.testing.assert_array_equal(found.to_numpy(), np.argwhere(mask))
    assert found.dtype is DType.int32


def test_bools_are_stored_as_u32_and_round_trip() -> None:
    b = Tensor.from_data(np.array([[True, False, True]]), backend=B)
    assert b.primitive.handle.slab.size >= 12
    assert b.dtype is DType.bool_
    assert (~b).tolist() == [[False, True, False]]
    assert (b & ~b).any().item() is False
    assert b.int().tolist() == [[1, 0, 1]]


def test_int32_arithmetic_follows_python_signs_and_wraps() -> None:
    a = _t([-7, 7, -7, 7, 2**31 - 1], "int32")
    d = _t([2, -2, -2, 2, 1], "int32")
    assert (a // d).tolist() == [-4, -4, 3, 3, 2**31 - 1]
    assert (a % d).tolist() == [1, -1, -1, 1, 0]
    assert (a + 1).tolist()[-1] == -(2**31)
    assert Tensor.arange(5, backend=B).dtype is DType.int32


def test_64_bit_dtypes_are_refused_with_a_clear_error() -> None:
    for dtype in (DType.float64, DType.int64, DType.bfloat16):
        assert not B.supports_dtype(DEV, dtype)
    with pytest.raises(bp.UnsupportedDTypeError, match=r"does not support dtype bp\.float64"):
        Tensor.zeros((2,), backend=B, dtype="float64")
    with pytest.raises(bp.UnsupportedDTypeError, match="int64"):
        Tensor.from_data(np.arange(3, dtype=np.int64), backend=B)
    with pytest.raises(WgpuDTypeError, match="WGSL has no f64"):
        B.float_zeros((2,), DEV, DType.float64)
    with pytest.raises(WgpuDTypeError, match="WGSL has no i64") as refused:
        B.int_arange(0, 3, 1, DEV, DType.int64)
    assert refused.value.dtype is DType.int64
    assert B.float_dtype is DType.float32 and B.int_dtype is DType.int32
    assert Tensor.from_data([1.5, 2.5], backend=B).dtype is DType.float32
    assert Tensor.from_data([1, 2], backend=B).dtype is DType.int32


def test_float16_follows_the_adapter_feature() -> None:
    has_f16 = "shader-f16" in adapter_for(DEV).features
    assert B.supports_dtype(DEV, DType.float16) == has_f16
    if not has_f16:
        with pytest.raises(WgpuDTypeError, match="shader-f16"):
            B.float_zeros((2,), DEV, DType.float16)
        return
    a = RNG.standard_normal(1001).astype(np.float16)
    t = Tensor.from_data(a, backend=B)
    assert t.dtype is DType.float16
    np.testing.assert_allclose((t * 2.0).to_numpy(), a * 2, rtol=1e-3)
    np.testing.assert_allclose(t.sum().item(), a.astype(np.float64).sum(), rtol=1e-2)
    assert t[1::2].to_numpy().tolist() == a[1::2].tolist()


def test_transcendentals_are_accurate_in_relative_terms() -> None:
    x = np.concatenate([np.geomspace(1e-6, 0.9, 200), -np.geomspace(1e-6, 0.9, 200)])
    x = x.astype(np.float32)
    t = _t(x)
    ref = x.astype(np.float64)
    for got, want in [(t.asin(), np.arcsin(ref)), (t.atan(), np.arctan(ref)),
                      (t.tanh(), np.tanh(ref)), (t.sinh(), np.sinh(ref)),
                      (t.asinh(), np.arcsinh(ref)), (t.atanh(), np.arctanh(ref)),
                      (t.log1p(), np.log1p(ref)), (t.expm1(), np.expm1(ref)),
                      (t.erf(), scipy.special.erf(ref)),
                      ((t.abs() + 1.0).log(), np.log((np.abs(x) + np.float32(1)).astype(float)))]:
        np.testing.assert_allclose(got.to_numpy(), want, rtol=2e-6)


@pytest.mark.parametrize("strategy", ["subgroup", "registers", "tiled"])
@pytest.mark.parametrize(("a_shape", "b_shape"), [
    ((3, 4), (4, 5)), ((2, 1, 70, 33), (1, 3, 33, 65)), ((130, 17), (17, 129)), ((5, 0), (0, 3))])
def test_matmul_strategies_on_broadcast_batches(strategy: str, a_shape: tuple[int, ...],
                                               b_shape: tuple[int, ...],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The CPU adapters' kernels (subgroup broadcasts where the adapter runs 8-lane subgroups,
    else a register tile) and the GPUs' workgroup-tiled one all run here."""
    rt = runtime_for(DEV)
    if strategy == "subgroup" and subgroup_lanes(rt) != SUBGROUP:
        pytest.skip("this adapter has no 8-lane subgroups")
    monkeypatch.setattr(rt, "is_cpu", strategy != "tiled")
    if strategy == "registers":
        monkeypatch.setitem(rt.tables, "subgroup_lanes", 0)
    a = RNG.standard_normal(a_shape).astype(np.float32)
    b = RNG.standard_normal(b_shape).astype(np.float32)
    b_view = _t(np.ascontiguousarray(np.swapaxes(b, -1, -2))).swap_dims(-1, -2)
    got = (_t(a) @ b_view).to_numpy()
    np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-4)
    ints = (_t(a, "int32") @ _t(b, "int32")).to_numpy()
    np.testing.assert_array_equal(ints, a.astype(np.int32) @ b.astype(np.int32))


@pytest.mark.parametrize("cpu_strategy", [True, False])
def test_reduction_strategies_on_long_dims(cpu_strategy: bool,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Both the serial-chunk kernel (CPU adapters) and the workgroup tree (GPUs) run here."""
    monkeypatch.setattr(runtime_for(DEV), "is_cpu", cpu_strategy)
    a = RNG.standard_normal((3, 70_001)).astype(np.float32)
    a[1, 54_321] = 9.0
    t = _t(a)
    magnitude = float(np.abs(a).sum())  # sums cancel: compare against the terms' size
    np.testing.assert_allclose(t.sum(1).to_numpy(), a.sum(1, dtype=np.float64),
                               atol=1e-6 * magnitude)
    np.testing.assert_array_equal(t.argmax(1).to_numpy(), a.argmax(1))
    np.testing.assert_array_equal(t.min(1).values.to_numpy(), a.min(1))
    np.testing.assert_allclose(t.sum().item(), a.sum(dtype=np.float64), atol=1e-6 * magnitude)
    assert (t > 8.5).any().item() is True
    assert int(_t(np.ones(200_000), "int32").sum().item()) == 200_000
