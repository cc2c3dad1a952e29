"""Tensor API behaviour beyond op values: creation, attributes, conversions, promotion, repr."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
import torch

import burnpy as bp
from burnpy import Distribution, DType, Tensor, TensorData
from burnpy.backend.device import Device
from burnpy_cpu import CpuBackend

CPU = CpuBackend.default_device()
ALL_DTYPES = [bp.float64, bp.float32, bp.float16, bp.bfloat16, bp.int64, bp.int32, bp.int16,
              bp.int8, bp.uint8, bp.uint32, bp.bool_]


# ---- creation --------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_from_data_keeps_numpy_dtype(dtype: DType) -> None:
    arr = np.array([[0, 1], [1, 0]]).astype(dtype.numpy)
    t = Tensor.from_data(arr)
    assert t.dtype is dtype
    assert t.kind == dtype.kind
    assert t.to_numpy().dtype == dtype.numpy
    assert t.tolist() == arr.tolist()


def test_from_data_lists_and_scalars_take_backend_defaults() -> None:
    assert Tensor.from_data([[1.5, 2.0]]).dtype is bp.float32
    assert Tensor.from_data([1, 2, 3]).dtype is bp.int64
    assert Tensor.from_data([True, False]).dtype is bp.bool_
    scalar = Tensor.from_data(2.5)
    assert (scalar.shape, scalar.dtype, scalar.item()) == ((), bp.float32, 2.5)
    assert Tensor.from_data(3).dtype is bp.int64
    assert bp.tensor([1.0]).dtype is bp.float32


def test_from_data_dtype_override() -> None:
    t = Tensor.from_data([1, 2], dtype="float64")
    assert t.dtype is bp.float64 and t.tolist() == [1.0, 2.0]
    assert Tensor.from_data(np.array([1.9, -1.9]), dtype=bp.int32).tolist() == [1, -1]
    assert Tensor.from_data([1.0], dtype=np.float16).dtype is bp.float16


def test_zeros_ones_full_empty() -> None:
    z = Tensor.zeros((2, 3))
    assert (z.shape, z.dtype, z.tolist()) == ((2, 3), bp.float32, [[0.0] * 3] * 2)
    o = Tensor.ones(4, dtype="int64")
    assert (o.shape, o.dtype, o.tolist()) == ((4,), bp.int64, [1, 1, 1, 1])
    assert Tensor.full((2,), 7).dtype is bp.int64
    assert Tensor.full((2,), 2.5).tolist() == [2.5, 2.5]
    assert Tensor.full((1,), True).dtype is bp.bool_
    assert Tensor.full((2,), 3, dtype="float16").tolist() == [3.0, 3.0]
    e = Tensor.empty((2, 0, 3), dtype=bp.float64)
    assert (e.shape, e.dtype, e.numel()) == ((2, 0, 3), bp.float64, 0)


def test_like_constructors_keep_shape_and_dtype() -> None:
    x = Tensor.from_data(np.ones((2, 3), np.float16))
    for t in (x.zeros_like(), x.ones_like(), x.full_like(4.0)):
        assert (t.shape, t.dtype) == ((2, 3), bp.float16)
    assert x.full_like(4.0).tolist() == [[4.0] * 3] * 2


def test_eye() -> None:
    assert Tensor.eye(2).tolist() == [[1.0, 0.0], [0.0, 1.0]]
    e = Tensor.eye(2, 3, dtype="int64")
    assert (e.dtype, e.tolist()) == (bp.int64, [[1, 0, 0], [0, 1, 0]])


def test_linspace() -> None:
    t = Tensor.linspace(0.0, 1.0, 5)
    assert t.dtype is bp.float32
    assert t.tolist() == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert Tensor.linspace(2.0, 3.0, 1).tolist() == [2.0]
    assert Tensor.linspace(-1.0, 1.0, 3, dtype="float64").tolist() == [-1.0, 0.0, 1.0]


def test_arange() -> None:
    assert Tensor.arange(5).tolist() == [0, 1, 2, 3, 4]
    assert Tensor.arange(5).dtype is bp.int64
    assert Tensor.arange(2, 10, 3).tolist() == [2, 5, 8]
    assert Tensor.arange(5, 0, -2).tolist() == [5, 3, 1]
    f = Tensor.arange(0, 3, dtype="float64")
    assert (f.dtype, f.tolist()) == (bp.float64, [0.0, 1.0, 2.0])
    assert Tensor.arange(3, 3).shape == (0,)


def test_random_shapes_dtypes_and_ranges() -> None:
    r = Tensor.rand(2, 3)
    assert (r.shape, r.dtype) == ((2, 3), bp.float32)
    assert r.min().item() >= 0.0 and r.max().item() < 1.0
    assert Tensor.randn((4, 5), dtype="float64").dtype is bp.float64
    assert Tensor.rand(3, dtype="bfloat16").dtype is bp.bfloat16
    i = Tensor.randint(-2, 3, (200,))
    assert i.dtype is bp.int64
    assert sorted(set(i.tolist())) == [-2, -1, 0, 1, 2]
    u = Tensor.random((100,), Distribution.uniform(2.0, 3.0), dtype="float64")
    assert u.min().item() >= 2.0 and u.max().item() < 3.0
    assert Tensor.random((3,), Distribution.normal(5.0, 0.0)).tolist() == [5.0] * 3
    assert Tensor.random((3,), Distribution.bernoulli(1.0)).tolist() == [1.0] * 3
    assert Tensor.random((3,), Distribution.bernoulli(0.0)).tolist() == [0.0] * 3


def test_seeding_reproduces_draws() -> None:
    def draw() -> tuple[list, list, list]:
        return (Tensor.rand(4).tolist(), Tensor.randn(2, 2).tolist(),
                Tensor.randint(0, 100, (5,)).tolist())

    CpuBackend.seed(CPU, 0)
    first = draw()
    CpuBackend.seed(CPU, 0)
    assert draw() == first
    CpuBackend.seed(CPU, 1)
    assert draw() != first


# ---- attributes ------------------------------------------------------------------------------
def test_attributes() -> None:
    x = Tensor.from_data(np.zeros((2, 3, 4), np.float64))
    assert x.shape == (2, 3, 4) and isinstance(x.shape, tuple)
    assert isinstance(x.dtype, DType) and x.dtype is bp.float64
    assert x.kind == "float"
    assert x.device == CPU
    assert x.ndim == 3
    assert x.backend is CpuBackend
    assert x.numel() == 24 and len(x) == 2
    assert x.size() == (2, 3, 4) and x.size(-1) == 4
    assert Tensor.arange(3).kind == "int"
    assert (Tensor.arange(3) > 1).kind == "bool"
    assert Tensor.from_data(1.0).ndim == 0


# ---- conversions -----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_into_data_round_trip(dtype: DType) -> None:
    arr = np.array([[1, 0, 3], [2, 5, 0]]).astype(dtype.numpy)
    data = Tensor.from_data(TensorData(arr)).into_data()
    assert isinstance(data, TensorData)
    assert data.dtype is dtype
    assert data.array.dtype == dtype.numpy
    np.testing.assert_array_equal(data.array, arr)


def test_bfloat16_values_survive_the_round_trip() -> None:
    arr = np.array([1.0, -2.5, 0.1], dtype=ml_dtypes.bfloat16)
    back = Tensor.from_data(arr).to_numpy()
    assert back.dtype == ml_dtypes.bfloat16
    assert back.astype(np.float32).tolist() == arr.astype(np.float32).tolist()


def test_numpy_protocol() -> None:
    t = Tensor.from_data([[1.0, 2.0], [3.0, 4.0]])
    arr = np.asarray(t)
    assert arr.dtype == np.float32 and arr.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    assert np.array(t).tolist() == t.tolist()
    assert t.numpy().tolist() == t.to_numpy().tolist()


@pytest.mark.parametrize("dtype", [bp.float64, bp.float32, bp.float16, bp.int64, bp.int32,
                                   bp.uint8, bp.bool_], ids=str)
def test_dlpack_round_trip_with_torch(dtype: DType) -> None:
    t = Tensor.from_data(np.array([[1, 0, 2], [0, 3, 1]]).astype(dtype.numpy))
    tt = torch.from_dlpack(t)
    assert str(tt.dtype) == f"torch.{dtype.value}"
    assert tt.tolist() == t.tolist()
    back = Tensor.from_dlpack(tt * 2 if dtype is not bp.bool_ else ~tt)
    assert back.dtype is dtype
    expected = (t.to_numpy() * 2) if dtype is not bp.bool_ else ~t.to_numpy()
    assert back.tolist() == expected.tolist()


BF16_VALUES = [[1.5, -2.25, 3.0], [0.0078125, -0.0, 65280.0]]  # all exact in bfloat16


def test_bfloat16_exports_to_torch_without_a_copy() -> None:
    t = Tensor.from_data(BF16_VALUES, dtype="bfloat16")
    tt = torch.from_dlpack(t)
    assert tt.dtype is torch.bfloat16 and tt.shape == (2, 3)
    assert tt.tolist() == BF16_VALUES
    assert tt.data_ptr() == t.to_numpy().ctypes.data  # shares the tensor's storage
    # a strided view, and the protocol's versioned capsule
    tv = torch.from_dlpack(t.T)
    assert tv.tolist() == np.array(BF16_VALUES).T.tolist()
    capsule = t.__dlpack__(max_version=(1, 0))
    assert torch.utils.dlpack.from_dlpack(capsule).tolist() == BF16_VALUES


def test_bfloat16_imports_from_torch() -> None:
    src = torch.tensor(BF16_VALUES, dtype=torch.bfloat16)
    t = Tensor.from_dlpack(src)
    assert t.dtype is bp.bfloat16 and t.kind == "float" and t.tolist() == BF16_VALUES
    src[0, 0] = 4.0  # zero copy: the import is a view of torch's storage
    assert t.tolist()[0][0] == 4.0
    strided = Tensor.from_dlpack(src.T[:, ::2])
    assert strided.tolist() == src.T[:, ::2].float().tolist()
    (t * 2.0).to_numpy()  # usable in ops
    on_host = Tensor.from_dlpack(src, device=CpuBackend.default_device())
    assert on_host.dtype is bp.bfloat16 and on_host.tolist() == src.float().tolist()


def test_from_data_copies_torch_tensors_of_any_dtype() -> None:
    src = torch.tensor(BF16_VALUES, dtype=torch.bfloat16)
    t = Tensor.from_data(src)
    assert t.dtype is bp.bfloat16 and t.tolist() == BF16_VALUES
    src[0, 0] = 4.0
    assert t.tolist() == BF16_VALUES  # a copy, as from_data of a NumPy array is
    assert Tensor.from_data(torch.arange(3)).dtype is bp.int64
    assert Tensor.from_data(torch.ones(2, dtype=torch.float16)).dtype is bp.float16
    assert Tensor.from_data(src, dtype="float32").dtype is bp.float32


def test_bfloat16_into_a_backend_without_it_names_the_dtype_and_the_way_out() -> None:
    class NoBf16Cpu(CpuBackend):
        """A CPU backend that refuses bfloat16."""

        @classmethod
        def supports_dtype(cls, device: Device, dtype: DType) -> bool:
            return dtype is not bp.bfloat16 and CpuBackend.supports_dtype(device, dtype)

    src = torch.ones(2, 3, dtype=torch.bfloat16)
    with pytest.raises(bp.UnsupportedDTypeError,
                       match=r"from_dlpack: backend cpu does not support bfloat16 \(shape "
                             r"\(2, 3\)\); cast to float32 before the export"):
        Tensor.from_dlpack(src, backend=NoBf16Cpu)


def test_item_float_int_bool_tolist() -> None:
    assert Tensor.from_data(2.5).item() == 2.5
    assert isinstance(Tensor.from_data([3]).item(), int)
    assert float(Tensor.from_data([[1.5]])) == 1.5
    assert int(Tensor.from_data([7])) == 7
    assert bool(Tensor.from_data([True])) is True
    assert bool(Tensor.from_data(0.0)) is False
    assert Tensor.from_data([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]
    assert Tensor.from_data(5).tolist() == 5


def test_cast_across_kinds() -> None:
    x = Tensor.from_data([-1.7, 0.0, 1.7, 2.5])
    assert x.cast("int64").tolist() == [-1, 0, 1, 2]
    assert x.cast(bp.bool_).tolist() == [True, False, True, True]
    assert x.cast("float64").dtype is bp.float64
    assert x.cast(bp.float16).tolist() == [-1.7001953125, 0.0, 1.7001953125, 2.5]
    i = Tensor.from_data([0, 2, -3])
    assert i.cast("float32").tolist() == [0.0, 2.0, -3.0]
    assert i.cast("int8").dtype is bp.int8
    assert i.bool().tolist() == [False, True, True]
    m = Tensor.from_data([True, False])
    assert m.cast("int32").tolist() == [1, 0] and m.cast("int32").dtype is bp.int32
    assert m.float().tolist() == [1.0, 0.0] and m.float().dtype is bp.float32
    assert x.cast("float32") is x
    assert i.long() is i and i.float().dtype is bp.float32 and i.double().dtype is bp.float64
    assert x.half().dtype is bp.float16


def test_to_device_and_dtype() -> None:
    x = Tensor.from_data([1.0, 2.0])
    moved = x.to(CPU)
    assert moved.device == CPU and moved.tolist() == [1.0, 2.0]
    assert x.to("float64").dtype is bp.float64
    assert x.to(bp.int64).tolist() == [1, 2]
    assert x.to_backend(CpuBackend) is x


# ---- promotion -------------------------------------------------------------------------------
def test_float_promotion() -> None:
    f32 = Tensor.from_data([1.0, 2.0])
    f64 = Tensor.from_data([0.5, 0.25], dtype="float64")
    assert (f32 + f64).dtype is bp.float64
    assert (f64 * f32).tolist() == [0.5, 0.5]
    f16 = Tensor.from_data([1.0], dtype="float16")
    bf16 = Tensor.from_data([2.0], dtype="bfloat16")
    assert (f16 + bf16).dtype is bp.float32 and (f16 + bf16).tolist() == [3.0]
    assert (f16 * f32).dtype is bp.float32


def test_int_promotion_and_true_division() -> None:
    a = Tensor.from_data([7, -7])
    b = Tensor.from_data([2, 2])
    q = a / b
    assert (q.dtype, q.tolist()) == (bp.float32, [3.5, -3.5])
    assert (a / 4).tolist() == [1.75, -1.75]
    i16 = Tensor.from_data(np.array([1, 2], np.int16))
    i32 = Tensor.from_data(np.array([3, 4], np.int32))
    assert (i16 + i32).dtype is bp.int32 and (i16 + i32).tolist() == [4, 6]


def test_floor_div_and_remainder_follow_python_signs() -> None:
    a = Tensor.from_data([-7, 7, -7, 7])
    b = Tensor.from_data([2, 2, -2, -2])
    assert (a // b).tolist() == [-7 // 2, 7 // 2, -7 // -2, 7 // -2]
    assert (a % b).tolist() == [-7 % 2, 7 % 2, -7 % -2, 7 % -2]
    assert (a % 3).tolist() == [2, 1, 2, 1]
    assert (a // -3).tolist() == [2, -3, 2, -3]
    x = Tensor.from_data([-7.5, 7.5], dtype="float64")
    assert (x // 2).tolist() == [-4.0, 3.0]
    assert (x % 2).tolist() == [0.5, 1.5]
    assert (x % -2).tolist() == [-1.5, -0.5]
    assert (5 % Tensor.from_data([-3, 3])).tolist() == [-1, 2]


@pytest.mark.parametrize("dtype", [bp.float64, bp.float32, bp.float16, bp.bfloat16, bp.int64,
                                   bp.int32, bp.int8], ids=str)
def test_python_scalars_keep_the_tensor_dtype(dtype: DType) -> None:
    x = Tensor.from_data(np.array([1, 2]).astype(dtype.numpy))
    results = [x + 1, 1 + x, x * 3, x - 2, 2 - x, x ** 2, x.clamp(0, 1)]
    if dtype.is_float:
        results += [x + 1.5, x * 0.5, x / 2.0, 2.0 / x, x % 1.5, x ** 0.5, x.clamp(0.5, 1.5)]
    for r in results:
        assert r.dtype is dtype
    assert (x + 1).tolist() == [2, 3]


def test_comparison_with_scalars_gives_bool() -> None:
    x = Tensor.from_data([1, 2, 3])
    assert (x > 1.5).tolist() == [False, True, True]
    assert (x == 2).dtype is bp.bool_


# ---- repr ------------------------------------------------------------------------------------
def test_repr_names_dtype_shape_backend() -> None:
    text = repr(Tensor.from_data([[1.0, 2.0], [3.0, 4.0]]))
    assert "dtype=bp.float32" in text
    assert "shape=(2, 2)" in text
    assert "backend=cpu" in text
    assert "device=cpu:0" in text
    assert "dtype=bp.int64" in repr(Tensor.arange(3)) and "shape=(3,)" in repr(Tensor.arange(3))
    assert "5" in repr(Tensor.from_data(5))


# ---- x[...] = v ------------------------------------------------------------------------------
def test_setitem_updates_the_tensor_in_place() -> None:
    x = Tensor.zeros((3,))
    alias = x
    x[1] = 2.0
    assert alias.tolist() == [0.0, 2.0, 0.0]


def test_setitem_does_not_touch_earlier_reads() -> None:
    x = Tensor.from_data([[1.0, 2.0], [3.0, 4.0]])
    row = x[0]
    x[0] = 9.0
    assert row.tolist() == [1.0, 2.0]
    assert x.tolist() == [[9.0, 9.0], [3.0, 4.0]]


def test_setitem_forms() -> None:
    x = Tensor.zeros((3, 4), dtype="float64")
    x[:, 1] = Tensor.from_data([1.0, 2.0, 3.0], dtype="float64")
    x[0, ::2] = 5.0
    x[x > 2.5] = -1.0
    x[[2]] = Tensor.from_data([[7.0, 7.0, 7.0, 7.0]], dtype="float64")
    x[::-2, 3] = Tensor.from_data([8.0, 6.0], dtype="float64")
    assert x.tolist() == [[-1.0, 1.0, -1.0, 6.0],
                          [0.0, 2.0, 0.0, 0.0],
                          [7.0, 7.0, 7.0, 8.0]]
    assert x.dtype is bp.float64


def test_setitem_casts_values_to_the_tensor_dtype() -> None:
    x = Tensor.zeros((2,), dtype="float16")
    x[0] = Tensor.from_data([1.5], dtype="float64")[0]
    assert x.dtype is bp.float16 and x.tolist() == [1.5, 0.0]
    i = Tensor.zeros((3,), dtype="int32")
    i[1:] = 4
    assert i.dtype is bp.int32 and i.tolist() == [0, 4, 4]


_FLOATS = ["float64", "float32", "float16", "bfloat16"]


@pytest.mark.parametrize("left", _FLOATS)
@pytest.mark.parametrize("right", _FLOATS)
def test_fast_paths_promote_every_float_pair_by_the_rule(left: str, right: str) -> None:
    """The trusted-backend fast paths hand mixed dtypes to the backend directly: its result
    must follow burnpy's promotion rule (the wider float; f16 with bf16 meets at f32)."""
    from burnpy.backend.dtype import promote_floats

    a = Tensor.ones((2, 3), dtype=left)
    b = Tensor.ones((3, 2), dtype=right)
    want = promote_floats(bp.DType.of(left), bp.DType.of(right))
    assert (a @ b).dtype is want
    assert (a + b.T).dtype is want
    assert (a * b.T).dtype is want
