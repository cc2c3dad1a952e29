"""Bad inputs raise a ``BurnpyError`` subclass whose message names the op and what was wrong."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest

import burnpy as bp
from burnpy import (
    BackendMismatchError,
    BurnpyError,
    DeviceMismatchError,
    Distribution,
    DType,
    DTypeError,
    IndexOutOfBoundsError,
    InvalidArgumentError,
    KindError,
    ShapeError,
    Tensor,
    UnsupportedDTypeError,
)
from burnpy.backend import Backend, IncompleteBackendError
from burnpy.backend.device import Device
from burnpy_cpu import CpuBackend


@contextmanager
def raises(exc: type[BurnpyError], match: str) -> Iterator[Any]:
    """``pytest.raises`` that also checks the error is a BurnpyError."""
    with pytest.raises(exc, match=match) as info:
        yield info
    assert isinstance(info.value, BurnpyError)


def f(*shape: int) -> Tensor:
    return Tensor.from_data(np.arange(float(np.prod(shape))).reshape(shape))


def ints(*shape: int) -> Tensor:
    return Tensor.arange(int(np.prod(shape))).reshape(shape)


# ---- shapes ----------------------------------------------------------------------------------
def test_add_shapes_that_do_not_broadcast() -> None:
    with raises(ShapeError, r"add: shapes \(3, 4\) and \(2, 4\) do not broadcast"):
        f(3, 4) + f(2, 4)


def test_mul_broadcast_error_names_op() -> None:
    with raises(ShapeError, r"mul: shapes \(2, 3\) and \(4,\) do not broadcast"):
        f(2, 3) * f(4)


def test_matmul_inner_dims() -> None:
    with raises(ShapeError, r"matmul: inner dims differ: \(3, 4\) @ \(5, 6\) \(4 vs 5\)"):
        f(3, 4) @ f(5, 6)


def test_matmul_batch_dims_do_not_broadcast() -> None:
    with raises(ShapeError, r"matmul: shapes \(2,\) and \(3,\) do not broadcast"):
        f(2, 3, 4) @ f(3, 4, 5)


def test_matmul_0d() -> None:
    with raises(ShapeError, r"matmul: both operands need at least 1 dim, got shapes \(\) and "
                            r"\(3,\)"):
        f() @ f(3)


def test_cat_shapes_differ_outside_dim() -> None:
    with raises(ShapeError, r"cat: shapes \['\(3, 4\)', '\(2, 5\)'\] differ outside dim 0"):
        bp.cat([f(3, 4), f(2, 5)])


def test_cat_empty_list() -> None:
    with raises(ShapeError, "cat: needs at least one tensor"):
        bp.cat([])


def test_reshape_wrong_numel() -> None:
    with raises(ShapeError, r"reshape: cannot reshape \(3, 4\) \(12 elements\) into \(5, 3\)"):
        f(3, 4).reshape(5, 3)


def test_reshape_two_unknown_dims() -> None:
    with raises(ShapeError, r"reshape: invalid target shape \(-1, -1\)"):
        f(3, 4).reshape(-1, -1)


def test_expand_non_singleton_dim() -> None:
    with raises(ShapeError, r"expand: cannot expand \(3, 2\) to \(3, 4\) \(dim 1 is 2, not 1\)"):
        f(3, 2).expand(3, 4)


def test_stack_shapes_differ() -> None:
    with raises(ShapeError, r"stack: shapes differ: \['\(3, 4\)', '\(2, 4\)'\]"):
        bp.stack([f(3, 4), f(2, 4)])


def test_mask_where_mask_does_not_broadcast() -> None:
    with raises(ShapeError, r"mask_where: shapes \(3, 4\) and \(2, 4\) do not broadcast"):
        f(3, 4).mask_where(f(2, 4) > 1.0, f(3, 4))


def test_split_sections_do_not_add_up() -> None:
    with raises(ShapeError, r"split: sections \[1, 1\] do not add up to dim 0 of size 3"):
        f(3, 2).split([1, 1])


def test_item_of_many_elements() -> None:
    with raises(ShapeError, r"item: the tensor has 12 elements \(shape \(3, 4\)\), not 1"):
        f(3, 4).item()


def test_ragged_lists() -> None:
    with raises(ShapeError, "from_data: nested sequences are ragged"):
        Tensor.from_data([[1.0, 2.0], [3.0]])


def test_max_of_empty_tensor() -> None:
    with raises(ShapeError, r"max: cannot reduce an empty tensor \(shape \(0, 3\)\)"):
        Tensor.zeros((0, 3)).max()


# ---- dtypes and kinds ------------------------------------------------------------------------
def test_int_plus_float_tensor() -> None:
    with raises(DTypeError, r"add: cannot mix an int tensor \(bp.int64\) with a float tensor "
                            r"\(bp.float32\)"):
        ints(2, 2) + Tensor.from_data([[1.0, 2.0], [3.0, 4.0]])


def test_float_minus_int_tensor() -> None:
    with raises(DTypeError, r"sub: cannot mix a float tensor \(bp.float64\) with an int tensor "
                            r"\(bp.int64\)"):
        f(3) - ints(3)


def test_mask_where_value_of_other_kind() -> None:
    x = Tensor.from_data([1.0, 2.0, 3.0])
    with raises(DTypeError, r"mask_where: value is int \(bp.int64\) but the tensor is float "
                            r"\(bp.float32\)"):
        x.mask_where(x > 1.5, ints(3))


def test_int_tensor_with_float_scalar() -> None:
    with raises(DTypeError, r"add: cannot combine an int tensor \(bp.int64\) with the float 1.5"):
        ints(3) + 1.5


def test_int_mask_fill_with_float() -> None:
    x = ints(3)
    with raises(DTypeError, "mask_fill: float value 0.5 for an int tensor"):
        x.mask_fill(x > 1, 0.5)


def test_int_pow_negative_exponent() -> None:
    with raises(DTypeError, r"pow: an int tensor to a negative int power \(-1\)"):
        ints(3) ** -1


def test_random_with_int_dtype() -> None:
    with raises(DTypeError, r"random: dtype must be a float dtype, got bp.int64"):
        Tensor.random((2,), dtype="int64")


def test_unknown_dtype_name() -> None:
    with raises(DTypeError, "unknown dtype 'float128'"):
        Tensor.zeros((2,), dtype="float128")


def test_exp_of_int_tensor() -> None:
    with raises(KindError, r"exp: expects a float tensor, got an int tensor \(bp.int64\)"):
        ints(3).exp()


def test_require_grad_on_int_tensor() -> None:
    with raises(KindError, r"require_grad: only float tensors can track gradients, got an int "
                           r"tensor of dtype bp.int64"):
        ints(3).require_grad()


def test_bool_arithmetic() -> None:
    m = f(3) > 1.0
    with raises(KindError, r"add: not defined for bool and bool tensors \(bp.bool_, bp.bool_\)"):
        m + m


def test_mean_of_int_tensor() -> None:
    with raises(KindError, r"mean: expects a float tensor, got int \(bp.int64\)"):
        ints(3).mean()


def test_mask_must_be_bool() -> None:
    x = f(3)
    with raises(KindError, "mask_fill: the mask must be a bool tensor, got float"):
        x.mask_fill(x, 0.0)


def test_float_tensor_as_index() -> None:
    with raises(KindError, r"index: tensors used as indices must be int or bool, got float "
                           r"\(bp.float64\)"):
        f(3)[f(2)]


def test_cat_of_mixed_kinds() -> None:
    with raises(KindError, "cat: mixes float and int tensors"):
        bp.cat([f(2), ints(2)])


def test_matmul_of_bools() -> None:
    m = f(2, 2) > 1.0
    with raises(KindError, r"matmul: expects two float or two int tensors, got bool"):
        m @ m


# ---- indices ---------------------------------------------------------------------------------
def test_gather_index_out_of_range() -> None:
    idx = Tensor.from_data([[0, 5], [1, 1]])
    with raises(IndexOutOfBoundsError, "gather: index 5 is out of bounds for dim 1 with size 2"):
        f(2, 2).gather(1, idx)


def test_select_index_out_of_range() -> None:
    with raises(IndexOutOfBoundsError,
                "index_select: index 3 is out of bounds for dim 0 with size 2"):
        f(2, 2).index_select(0, [0, 3])


def test_select_negative_index_out_of_range() -> None:
    with raises(IndexOutOfBoundsError,
                "index_select: index -4 is out of bounds for dim 1 with size 3"):
        f(2, 3).index_select(1, [-4])


def test_select_int_index_out_of_range() -> None:
    with raises(IndexOutOfBoundsError, "select: index -4 is out of bounds for dim 1 with size 3"):
        f(2, 3).select(1, -4)


def test_getitem_int_out_of_range() -> None:
    with raises(IndexOutOfBoundsError, "index: index 5 is out of bounds for dim 0 with size 3"):
        f(3, 4)[5]


def test_getitem_too_many_indices() -> None:
    with raises(IndexOutOfBoundsError, r"index: too many indices \(3\) for a tensor of 2 dim"):
        f(3, 4)[0, 0, 0]


def test_getitem_mask_shape() -> None:
    with raises(ShapeError, r"index: mask of shape \(3,\) does not match the indexed dims "
                            r"\(2,\) of \(2, 2\)"):
        f(2, 2)[Tensor.from_data([True, False, True])]


def test_slice_assign_shape_mismatch() -> None:
    x = f(3, 4)
    with raises(ShapeError, r"setitem: value of shape \(3,\) cannot be broadcast to the indexed "
                            r"region \(2, 2\)"):
        x[0:2, 0:2] = f(3)


def test_scatter_index_out_of_range() -> None:
    with raises(IndexOutOfBoundsError, "scatter: index 2 is out of bounds for dim 0 with size 2"):
        f(2, 2).scatter(0, Tensor.from_data([[0, 2]]), f(2, 2))


def test_scatter_add_values_too_small() -> None:
    idx = Tensor.from_data([[0, 1, 0]])
    with raises(ShapeError, r"scatter_add: values \(1, 2\) must cover indices \(1, 3\)"):
        f(2, 3).scatter_add(0, idx, f(1, 2))


def test_dim_out_of_range() -> None:
    with raises(IndexOutOfBoundsError, r"sum: dim 2 is out of range for a tensor of 2 dim\(s\)"):
        f(3, 4).sum(2)


def test_topk_k_too_large() -> None:
    with raises(IndexOutOfBoundsError, r"topk: k=5 is outside \[0, 4\]"):
        f(3, 4).topk(5)


@pytest.mark.parametrize(("call", "pattern"), [
    (lambda: f(2, 3)[:, ::0], r"index: slice ::0 has step 0 \(dim 1 of shape \(2, 3\)\)"),
    (lambda: f(4)[1:3:0], r"index: slice 1:3:0 has step 0 \(dim 0 of shape \(4,\)\)"),
    (lambda: f(2, 3)[0, ..., ::0], r"index: slice ::0 has step 0 \(dim 1 of shape"),
    (lambda: f(3, 4).slice_dim(1, 0, 2, 0), r"slice_dim: step must be positive, got 0 "
                                            r"\(dim 1 of shape \(3, 4\)\)"),
    (lambda: f(3, 4).slice_dim(0, 0, 2, -1), "slice_dim: step must be positive, got -1"),
], ids=["getitem", "getitem_1d", "getitem_ellipsis", "slice_dim_zero", "slice_dim_negative"])
def test_zero_slice_step_names_the_op_the_slice_and_the_shape(call: Any, pattern: str) -> None:
    with raises(InvalidArgumentError, pattern):
        call()


def test_zero_slice_step_in_an_assignment() -> None:
    t = f(2, 3)
    with raises(InvalidArgumentError, r"index: slice ::0 has step 0 \(dim 0 of shape \(2, 3\)"):
        t[::0] = 1.0


def test_negative_slice_steps_follow_numpy() -> None:
    arr = np.arange(12.0).reshape(3, 4)
    t = Tensor.from_data(arr)
    for key in ((slice(None, None, -1),), (slice(None), slice(3, 0, -2)),
                (slice(-1, -4, -1), slice(None, None, -3))):
        np.testing.assert_array_equal(t[key].to_numpy(), arr[key])


def test_slice_dim_bounds() -> None:
    with raises(IndexOutOfBoundsError, r"slice_dim: range \[1, 5\) is outside dim 0 of size 3"):
        f(3, 4).slice_dim(0, 1, 5)


def test_narrow_out_of_range() -> None:
    with raises(IndexOutOfBoundsError, r"narrow: range \[2, 5\) is outside dim 0 of size 3"):
        f(3, 4).narrow(0, 2, 3)


# ---- argument values -------------------------------------------------------------------------
@pytest.mark.parametrize(("call", "pattern"), [
    (lambda: f(3, 4).split(0), "split: split_size must be > 0, got 0"),
    (lambda: f(3, 4).chunk(0), "chunk: chunks must be > 0, got 0"),
    (lambda: f(3, 4).repeat(2, -1), r"repeat: counts must be >= 0, got \(2, -1\)"),
    (lambda: f(3, 4).repeat_dim(0, -2), "repeat_dim: times must be >= 0, got -2"),
    (lambda: f(3, 4).unfold(0, 2, 0), "unfold: size and step must be > 0, got 2, 0"),
    (lambda: Distribution.uniform(1, 0), "uniform: need low < high, got low=1, high=0"),
    (lambda: Distribution.normal(0, -1), "normal: std must be >= 0, got -1"),
    (lambda: Distribution.bernoulli(1.5), r"bernoulli: p must be in \[0, 1\], got 1.5"),
    (lambda: Tensor.randint(3, 3, (2,)), "randint: need low < high, got low=3, high=3"),
    (lambda: Tensor.arange(0, 5, 0), "arange: step must be non-zero"),
    (lambda: Tensor.linspace(0.0, 1.0, -1), "linspace: steps must be >= 0, got -1"),
    (lambda: f(3).gelu("fast"), "gelu: approximate must be 'none' or 'tanh', got 'fast'"),
    (lambda: f(3).clamp(), "clamp: give at least one of min and max"),
], ids=["split", "chunk", "repeat", "repeat_dim", "unfold", "uniform", "normal", "bernoulli",
        "randint", "arange", "linspace", "gelu", "clamp"])
def test_invalid_argument(call: Any, pattern: str) -> None:
    with raises(InvalidArgumentError, pattern):
        call()


def test_int_division_by_zero_names_the_op() -> None:
    with pytest.raises(bp.DivisionByZeroError, match="floor_div: integer division by zero"):
        ints(3) // 0
    with pytest.raises(bp.DivisionByZeroError, match="remainder: integer division by zero"):
        ints(3) % Tensor.from_data([1, 0, 2])


# ---- backends, devices, dtypes ---------------------------------------------------------------
class NoHalfCpu(CpuBackend):
    """A CPU backend that refuses float16."""

    @classmethod
    def supports_dtype(cls, device: Device, dtype: DType) -> bool:
        return dtype is not DType.float16 and CpuBackend.supports_dtype(device, dtype)


class OtherCpu(CpuBackend):
    """A distinct backend type with the same ops."""


def test_unsupported_dtype_on_creation() -> None:
    with raises(UnsupportedDTypeError, r"zeros: backend \w+ does not support dtype bp.float16"):
        Tensor.zeros((2, 3), dtype="float16", backend=NoHalfCpu)


def test_unsupported_dtype_on_from_data_and_cast() -> None:
    with raises(UnsupportedDTypeError, "from_data: .* does not support dtype bp.float16"):
        Tensor.from_data(np.ones(3, np.float16), backend=NoHalfCpu)
    x = Tensor.ones((3,), backend=NoHalfCpu)
    with raises(UnsupportedDTypeError, "cast: .* does not support dtype bp.float16"):
        x.half()
    assert x.double().dtype is bp.float64


def test_unsupported_dtype_is_a_dtype_error() -> None:
    assert issubclass(UnsupportedDTypeError, DTypeError)


def test_unsupported_dtype_error_names_the_refused_dtype() -> None:
    """The conformance harness skips a case only for a dtype the case asked for: it reads it
    here."""
    x = Tensor.ones((3,), backend=NoHalfCpu)
    with pytest.raises(UnsupportedDTypeError) as cast:
        x.half()
    with pytest.raises(UnsupportedDTypeError) as created:
        Tensor.from_data(np.ones(3, np.float16), backend=NoHalfCpu)
    assert cast.value.dtype is created.value.dtype is DType.float16
    assert UnsupportedDTypeError("linalg.inv: expected float32").dtype is None


def test_mixed_backends_add() -> None:
    a = Tensor.ones((2, 2))
    b = Tensor.ones((2, 2), backend=OtherCpu)
    with raises(BackendMismatchError, r"add: tensors are on different backends \(CpuBackend "
                                      r"and OtherCpu\)"):
        a + b


@pytest.mark.parametrize(("call", "op"), [
    (lambda a, b: a @ b, "matmul"),
    (lambda a, b: bp.cat([a, b]), "cat"),
    (lambda a, b: a.mask_where(a > 0.5, b), "mask_where"),
    (lambda a, b: a.gather(0, b.int()), "gather"),
    (lambda a, b: b.maximum(a), "greater"),
], ids=["matmul", "cat", "mask_where", "gather", "maximum"])
def test_mixed_backends_other_ops(call: Any, op: str) -> None:
    a = Tensor.ones((2, 2))
    b = Tensor.ones((2, 2), backend=OtherCpu)
    with raises(BackendMismatchError, f"{op}: tensors are on different backends"):
        call(a, b)


def test_unknown_device() -> None:
    with raises(DeviceMismatchError, r"to: device cpu:1 is not available on backend cpu"):
        f(2).to(Device("cpu", 1))
    with raises(DeviceMismatchError, "device cpu:1 is not available on backend cpu"):
        Tensor.zeros((2,), device=Device("cpu", 1))


def test_incomplete_backend_names_missing_ops() -> None:
    with raises(IncompleteBackendError, r"backend Partial does not implement \d+ required "
                                        r"op\(s\): .*float_add") as info:

        class Partial(Backend):
            @staticmethod
            def float_exp(tensor: Any) -> Any:
                return tensor

    missing = re.split(r", |: ", str(info.value))
    assert "float_matmul" in missing and "int_add" in missing and "bool_not" in missing
    assert "float_exp" not in missing


def test_every_error_class_is_a_burnpy_error() -> None:
    for exc in (ShapeError, DTypeError, IndexOutOfBoundsError, InvalidArgumentError,
                BackendMismatchError, DeviceMismatchError, UnsupportedDTypeError, KindError,
                IncompleteBackendError):
        assert issubclass(exc, BurnpyError)
