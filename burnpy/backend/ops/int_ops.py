"""Int tensor ops of the Backend protocol (Burn's ``IntTensorOps``); conventions as in float_ops."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from burnpy.backend.data import TensorData
from burnpy.backend.device import Device
from burnpy.backend.dtype import DType
from burnpy.backend.ops._marker import required

F = Any
I = Any
Bo = Any
Shape = tuple[int, ...]


class IntOps:
    """Ops on int primitives (int64 by default; any supported int dtype)."""

    @required
    def int_from_data(data: TensorData, device: Device) -> I:
        """A primitive holding ``data`` (an int dtype) on ``device``."""

    @required
    def int_into_data(tensor: I) -> TensorData:
        """The primitive's values on the host."""

    @required
    def int_device(tensor: I) -> Device:
        """The device the primitive lives on."""

    @required
    def int_to_device(tensor: I, device: Device) -> I:
        """A copy on ``device``."""

    @required
    def int_empty(shape: Shape, device: Device, dtype: DType) -> I:
        """Uninitialized storage."""

    @required
    def int_full(shape: Shape, fill_value: int, device: Device, dtype: DType) -> I:
        """A tensor filled with ``fill_value``."""

    @classmethod
    def int_zeros(cls, shape: Shape, device: Device, dtype: DType) -> I:
        return cls.int_full(shape, 0, device, dtype)

    @classmethod
    def int_ones(cls, shape: Shape, device: Device, dtype: DType) -> I:
        return cls.int_full(shape, 1, device, dtype)

    @required
    def int_random(shape: Shape, low: int, high: int, device: Device, dtype: DType) -> I:
        """Uniform integers in [low, high) from the device's seeded generator."""

    @required
    def int_arange(start: int, end: int, step: int, device: Device, dtype: DType) -> I:
        """``start, start+step, ...`` up to but excluding ``end`` (step may be negative)."""

    @required
    def int_cast(tensor: I, dtype: DType) -> I:
        """The same values in another int dtype (wrapping as C does)."""

    @required
    def int_into_float(tensor: I, dtype: DType) -> F:
        """The values as floats."""

    # ---- layout and indexing (same semantics as the float forms) ---------------------------
    @required
    def int_reshape(tensor: I, shape: Shape) -> I:
        """See float_reshape."""

    @required
    def int_swap_dims(tensor: I, dim1: int, dim2: int) -> I:
        """See float_swap_dims."""

    @required
    def int_permute(tensor: I, axes: Shape) -> I:
        """See float_permute."""

    @required
    def int_flip(tensor: I, axes: Shape) -> I:
        """See float_flip."""

    @required
    def int_expand(tensor: I, shape: Shape) -> I:
        """See float_expand."""

    @required
    def int_repeat_dim(tensor: I, dim: int, times: int) -> I:
        """See float_repeat_dim."""

    @required
    def int_cat(tensors: Sequence[I], dim: int) -> I:
        """See float_cat."""

    @required
    def int_unfold(tensor: I, dim: int, size: int, step: int) -> I:
        """See float_unfold."""

    @required
    def int_slice(tensor: I, slices: tuple[slice, ...]) -> I:
        """See float_slice."""

    @required
    def int_slice_assign(tensor: I, slices: tuple[slice, ...], value: I) -> I:
        """See float_slice_assign."""

    @required
    def int_gather(tensor: I, dim: int, indices: I) -> I:
        """See float_gather."""

    @required
    def int_scatter(tensor: I, dim: int, indices: I, values: I) -> I:
        """See float_scatter."""

    @required
    def int_scatter_add(tensor: I, dim: int, indices: I, values: I) -> I:
        """See float_scatter_add."""

    @required
    def int_select(tensor: I, dim: int, indices: I) -> I:
        """See float_select."""

    @required
    def int_select_assign(tensor: I, dim: int, indices: I, values: I) -> I:
        """See float_select_assign."""

    @required
    def int_select_add(tensor: I, dim: int, indices: I, values: I) -> I:
        """See float_select_add."""

    @required
    def int_mask_where(tensor: I, mask: Bo, value: I) -> I:
        """See float_mask_where."""

    @required
    def int_mask_fill(tensor: I, mask: Bo, value: int) -> I:
        """See float_mask_fill."""

    # ---- arithmetic --------------------------------------------------------------------------
    @required
    def int_add(lhs: I, rhs: I) -> I:
        """Elementwise sum."""

    @required
    def int_add_scalar(lhs: I, rhs: int) -> I:
        """Tensor plus an int."""

    @required
    def int_sub(lhs: I, rhs: I) -> I:
        """Elementwise difference."""

    @required
    def int_sub_scalar(lhs: I, rhs: int) -> I:
        """Tensor minus an int."""

    @required
    def int_mul(lhs: I, rhs: I) -> I:
        """Elementwise product."""

    @required
    def int_mul_scalar(lhs: I, rhs: int) -> I:
        """Tensor times an int."""

    @required
    def int_div(lhs: I, rhs: I) -> I:
        """Floor division (Python's ``//``); division by zero raises at the protocol layer."""

    @required
    def int_div_scalar(lhs: I, rhs: int) -> I:
        """Floor division by an int."""

    @required
    def int_remainder(lhs: I, rhs: I) -> I:
        """Remainder with the divisor's sign (Python's ``%``)."""

    @required
    def int_remainder_scalar(lhs: I, rhs: int) -> I:
        """Remainder by an int with the divisor's sign."""

    @required
    def int_matmul(lhs: I, rhs: I) -> I:
        """Batched integer matrix product (see float_matmul)."""

    @required
    def int_neg(tensor: I) -> I:
        """Negation."""

    @required
    def int_abs(tensor: I) -> I:
        """|x|."""

    @required
    def int_sign(tensor: I) -> I:
        """-1, 0 or 1."""

    @required
    def int_powi_scalar(tensor: I, exponent: int) -> I:
        """``tensor ** exponent`` for a non-negative int exponent."""

    @required
    def int_clamp(tensor: I, min: int | None, max: int | None) -> I:
        """Limit values to [min, max]; either bound may be None."""

    @required
    def int_bitwise_and(lhs: I, rhs: I) -> I:
        """Bitwise and."""

    @required
    def int_bitwise_or(lhs: I, rhs: I) -> I:
        """Bitwise or."""

    @required
    def int_bitwise_xor(lhs: I, rhs: I) -> I:
        """Bitwise xor."""

    @required
    def int_bitwise_not(tensor: I) -> I:
        """Bitwise not."""

    @required
    def int_bitwise_left_shift(lhs: I, rhs: I) -> I:
        """lhs << rhs."""

    @required
    def int_bitwise_right_shift(lhs: I, rhs: I) -> I:
        """lhs >> rhs (arithmetic for signed dtypes)."""

    # ---- comparison --------------------------------------------------------------------------
    @required
    def int_equal(lhs: I, rhs: I) -> Bo:
        """lhs == rhs."""

    @required
    def int_not_equal(lhs: I, rhs: I) -> Bo:
        """lhs != rhs."""

    @required
    def int_greater(lhs: I, rhs: I) -> Bo:
        """lhs > rhs."""

    @required
    def int_greater_equal(lhs: I, rhs: I) -> Bo:
        """lhs >= rhs."""

    @required
    def int_lower(lhs: I, rhs: I) -> Bo:
        """lhs < rhs."""

    @required
    def int_lower_equal(lhs: I, rhs: I) -> Bo:
        """lhs <= rhs."""

    @required
    def int_equal_elem(lhs: I, rhs: int) -> Bo:
        """lhs == int."""

    @required
    def int_not_equal_elem(lhs: I, rhs: int) -> Bo:
        """lhs != int."""

    @required
    def int_greater_elem(lhs: I, rhs: int) -> Bo:
        """lhs > int."""

    @required
    def int_greater_equal_elem(lhs: I, rhs: int) -> Bo:
        """lhs >= int."""

    @required
    def int_lower_elem(lhs: I, rhs: int) -> Bo:
        """lhs < int."""

    @required
    def int_lower_equal_elem(lhs: I, rhs: int) -> Bo:
        """lhs <= int."""

    # ---- reductions --------------------------------------------------------------------------
    @required
    def int_sum(tensor: I) -> I:
        """Sum of all elements, shape ()."""

    @required
    def int_sum_dim(tensor: I, dim: int) -> I:
        """Sum along ``dim``, kept."""

    @required
    def int_prod(tensor: I) -> I:
        """Product of all elements, shape ()."""

    @required
    def int_prod_dim(tensor: I, dim: int) -> I:
        """Product along ``dim``, kept."""

    @required
    def int_max(tensor: I) -> I:
        """Largest element, shape ()."""

    @required
    def int_min(tensor: I) -> I:
        """Smallest element, shape ()."""

    @required
    def int_max_dim_with_indices(tensor: I, dim: int) -> tuple[I, I]:
        """Largest values along ``dim`` (kept) and the index of the first one."""

    @required
    def int_min_dim_with_indices(tensor: I, dim: int) -> tuple[I, I]:
        """Smallest values along ``dim`` (kept) and the index of the first one."""

    @classmethod
    def int_max_dim(cls, tensor: I, dim: int) -> I:
        return cls.int_max_dim_with_indices(tensor, dim)[0]

    @classmethod
    def int_min_dim(cls, tensor: I, dim: int) -> I:
        return cls.int_min_dim_with_indices(tensor, dim)[0]

    @classmethod
    def int_argmax(cls, tensor: I, dim: int) -> I:
        return cls.int_max_dim_with_indices(tensor, dim)[1]

    @classmethod
    def int_argmin(cls, tensor: I, dim: int) -> I:
        return cls.int_min_dim_with_indices(tensor, dim)[1]

    @required
    def int_cumsum(tensor: I, dim: int) -> I:
        """Running sum."""

    @required
    def int_cumprod(tensor: I, dim: int) -> I:
        """Running product."""

    @required
    def int_cummax_with_indices(tensor: I, dim: int) -> tuple[I, I]:
        """Running max and where it was reached (latest among ties)."""

    @required
    def int_cummin_with_indices(tensor: I, dim: int) -> tuple[I, I]:
        """Running min and where it was reached (latest among ties)."""

    @required
    def int_sort_with_indices(tensor: I, dim: int, descending: bool) -> tuple[I, I]:
        """Stable sort along ``dim`` with source indices."""

    @classmethod
    def int_sort(cls, tensor: I, dim: int, descending: bool) -> I:
        return cls.int_sort_with_indices(tensor, dim, descending)[0]

    @classmethod
    def int_argsort(cls, tensor: I, dim: int, descending: bool) -> I:
        return cls.int_sort_with_indices(tensor, dim, descending)[1]

    @classmethod
    def int_any(cls, tensor: I) -> Bo:
        return cls.bool_any(cls.int_not_equal_elem(tensor, 0))

    @classmethod
    def int_any_dim(cls, tensor: I, dim: int) -> Bo:
        return cls.bool_any_dim(cls.int_not_equal_elem(tensor, 0), dim)

    @classmethod
    def int_all(cls, tensor: I) -> Bo:
        return cls.bool_all(cls.int_not_equal_elem(tensor, 0))

    @classmethod
    def int_all_dim(cls, tensor: I, dim: int) -> Bo:
        return cls.bool_all_dim(cls.int_not_equal_elem(tensor, 0), dim)
