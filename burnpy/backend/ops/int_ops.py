# A @required op is a declaration: its body is its docstring, implemented by each backend.
# mypy: disable-error-code="empty-body"
"""Int tensor ops of the Backend protocol (Burn's ``IntTensorOps``); conventions as in float_ops."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from burnpy.backend.data import TensorData
from burnpy.backend.device import Device
from burnpy.backend.dtype import DType
from burnpy.backend.ops._marker import provided, required
from burnpy.backend.primitives import BoolPrimitive, FloatPrimitive, IntPrimitive, Shape

if TYPE_CHECKING:
    from burnpy.backend.base import Backend



class IntOps:
    """Ops on int primitives (int64 by default; any supported int dtype)."""

    @required
    def int_from_data(data: TensorData, device: Device) -> IntPrimitive:
        """A primitive holding ``data`` (an int dtype) on ``device``."""

    @required
    def int_into_data(tensor: IntPrimitive) -> TensorData:
        """The primitive's values on the host."""

    @required
    def int_device(tensor: IntPrimitive) -> Device:
        """The device the primitive lives on."""

    @required
    def int_to_device(tensor: IntPrimitive, device: Device) -> IntPrimitive:
        """A copy on ``device``."""

    @required
    def int_empty(shape: Shape, device: Device, dtype: DType) -> IntPrimitive:
        """Uninitialized storage."""

    @required
    def int_full(shape: Shape, fill_value: int, device: Device, dtype: DType) -> IntPrimitive:
        """A tensor filled with ``fill_value``."""

    @provided
    def int_zeros(cls: type[Backend], shape: Shape, device: Device, dtype: DType) -> IntPrimitive:
        return cls.int_full(shape, 0, device, dtype)

    @provided
    def int_ones(cls: type[Backend], shape: Shape, device: Device, dtype: DType) -> IntPrimitive:
        return cls.int_full(shape, 1, device, dtype)

    @required
    def int_random(shape: Shape, low: int, high: int, device: Device, dtype: DType) -> IntPrimitive:
        """Uniform integers in [low, high) from the device's seeded generator."""

    @required
    def int_arange(start: int, end: int, step: int, device: Device, dtype: DType) -> IntPrimitive:
        """``start, start+step, ...`` up to but excluding ``end`` (step may be negative)."""

    @required
    def int_cast(tensor: IntPrimitive, dtype: DType) -> IntPrimitive:
        """The same values in another int dtype (wrapping as C does)."""

    @required
    def int_into_float(tensor: IntPrimitive, dtype: DType) -> FloatPrimitive:
        """The values as floats."""

    # ---- layout and indexing (same semantics as the float forms) ---------------------------
    @required
    def int_reshape(tensor: IntPrimitive, shape: Shape) -> IntPrimitive:
        """See float_reshape."""

    @required
    def int_swap_dims(tensor: IntPrimitive, dim1: int, dim2: int) -> IntPrimitive:
        """See float_swap_dims."""

    @required
    def int_permute(tensor: IntPrimitive, axes: Shape) -> IntPrimitive:
        """See float_permute."""

    @required
    def int_flip(tensor: IntPrimitive, axes: Shape) -> IntPrimitive:
        """See float_flip."""

    @required
    def int_expand(tensor: IntPrimitive, shape: Shape) -> IntPrimitive:
        """See float_expand."""

    @required
    def int_repeat_dim(tensor: IntPrimitive, dim: int, times: int) -> IntPrimitive:
        """See float_repeat_dim."""

    @required
    def int_cat(tensors: Sequence[IntPrimitive], dim: int) -> IntPrimitive:
        """See float_cat."""

    @required
    def int_unfold(tensor: IntPrimitive, dim: int, size: int, step: int) -> IntPrimitive:
        """See float_unfold."""

    @required
    def int_slice(tensor: IntPrimitive, slices: tuple[slice, ...]) -> IntPrimitive:
        """See float_slice."""

    @required
    def int_slice_assign(tensor: IntPrimitive, slices: tuple[slice, ...],
                         value: IntPrimitive) -> IntPrimitive:
        """See float_slice_assign."""

    @required
    def int_gather(tensor: IntPrimitive, dim: int, indices: IntPrimitive) -> IntPrimitive:
        """See float_gather."""

    @required
    def int_scatter(tensor: IntPrimitive, dim: int, indices: IntPrimitive,
                    values: IntPrimitive) -> IntPrimitive:
        """See float_scatter."""

    @required
    def int_scatter_add(tensor: IntPrimitive, dim: int, indices: IntPrimitive,
                        values: IntPrimitive) -> IntPrimitive:
        """See float_scatter_add."""

    @required
    def int_select(tensor: IntPrimitive, dim: int, indices: IntPrimitive) -> IntPrimitive:
        """See float_select."""

    @required
    def int_select_assign(tensor: IntPrimitive, dim: int, indices: IntPrimitive,
                          values: IntPrimitive) -> IntPrimitive:
        """See float_select_assign."""

    @required
    def int_select_add(tensor: IntPrimitive, dim: int, indices: IntPrimitive,
                       values: IntPrimitive) -> IntPrimitive:
        """See float_select_add."""

    @required
    def int_mask_where(tensor: IntPrimitive, mask: BoolPrimitive,
                       value: IntPrimitive) -> IntPrimitive:
        """See float_mask_where."""

    @required
    def int_mask_fill(tensor: IntPrimitive, mask: BoolPrimitive, value: int) -> IntPrimitive:
        """See float_mask_fill."""

    # ---- arithmetic --------------------------------------------------------------------------
    @required
    def int_add(lhs: IntPrimitive, rhs: IntPrimitive) -> IntPrimitive:
        """Elementwise sum."""

    @required
    def int_add_scalar(lhs: IntPrimitive, rhs: int) -> IntPrimitive:
        """Tensor plus an int."""

    @required
    def int_sub(lhs: IntPrimitive, rhs: IntPrimitive) -> IntPrimitive:
        """Elementwise difference."""

    @required
    def int_sub_scalar(lhs: IntPrimitive, rhs: int) -> IntPrimitive:
        """Tensor minus an int."""

    @required
    def int_mul(lhs: IntPrimitive, rhs: IntPrimitive) -> IntPrimitive:
        """Elementwise product."""

    @required
    def int_mul_scalar(lhs: IntPrimitive, rhs: int) -> IntPrimitive:
        """Tensor times an int."""

    @required
    def int_div(lhs: IntPrimitive, rhs: IntPrimitive) -> IntPrimitive:
        """Floor division (Python's ``//``); division by zero raises at the protocol layer."""

    @required
    def int_div_scalar(lhs: IntPrimitive, rhs: int) -> IntPrimitive:
        """Floor division by an int."""

    @required
    def int_remainder(lhs: IntPrimitive, rhs: IntPrimitive) -> IntPrimitive:
        """Remainder with the divisor's sign (Python's ``%``)."""

    @required
    def int_remainder_scalar(lhs: IntPrimitive, rhs: int) -> IntPrimitive:
        """Remainder by an int with the divisor's sign."""

    @required
    def int_matmul(lhs: IntPrimitive, rhs: IntPrimitive) -> IntPrimitive:
        """Batched integer matrix product (see float_matmul)."""

    @required
    def int_neg(tensor: IntPrimitive) -> IntPrimitive:
        """Negation."""

    @required
    def int_abs(tensor: IntPrimitive) -> IntPrimitive:
        """|x|."""

    @required
    def int_sign(tensor: IntPrimitive) -> IntPrimitive:
        """-1, 0 or 1."""

    @required
    def int_powi_scalar(tensor: IntPrimitive, exponent: int) -> IntPrimitive:
        """``tensor ** exponent`` for a non-negative int exponent."""

    @required
    def int_clamp(tensor: IntPrimitive, min: int | None, max: int | None) -> IntPrimitive:
        """Limit values to [min, max]; either bound may be None."""

    @required
    def int_bitwise_and(lhs: IntPrimitive, rhs: IntPrimitive) -> IntPrimitive:
        """Bitwise and."""

    @required
    def int_bitwise_or(lhs: IntPrimitive, rhs: IntPrimitive) -> IntPrimitive:
        """Bitwise or."""

    @required
    def int_bitwise_xor(lhs: IntPrimitive, rhs: IntPrimitive) -> IntPrimitive:
        """Bitwise xor."""

    @required
    def int_bitwise_not(tensor: IntPrimitive) -> IntPrimitive:
        """Bitwise not."""

    @required
    def int_bitwise_left_shift(lhs: IntPrimitive, rhs: IntPrimitive) -> IntPrimitive:
        """lhs << rhs."""

    @required
    def int_bitwise_right_shift(lhs: IntPrimitive, rhs: IntPrimitive) -> IntPrimitive:
        """lhs >> rhs (arithmetic for signed dtypes)."""

    # ---- comparison --------------------------------------------------------------------------
    @required
    def int_equal(lhs: IntPrimitive, rhs: IntPrimitive) -> BoolPrimitive:
        """lhs == rhs."""

    @required
    def int_not_equal(lhs: IntPrimitive, rhs: IntPrimitive) -> BoolPrimitive:
        """lhs != rhs."""

    @required
    def int_greater(lhs: IntPrimitive, rhs: IntPrimitive) -> BoolPrimitive:
        """lhs > rhs."""

    @required
    def int_greater_equal(lhs: IntPrimitive, rhs: IntPrimitive) -> BoolPrimitive:
        """lhs >= rhs."""

    @required
    def int_lower(lhs: IntPrimitive, rhs: IntPrimitive) -> BoolPrimitive:
        """lhs < rhs."""

    @required
    def int_lower_equal(lhs: IntPrimitive, rhs: IntPrimitive) -> BoolPrimitive:
        """lhs <= rhs."""

    @required
    def int_equal_elem(lhs: IntPrimitive, rhs: int) -> BoolPrimitive:
        """lhs == int."""

    @required
    def int_not_equal_elem(lhs: IntPrimitive, rhs: int) -> BoolPrimitive:
        """lhs != int."""

    @required
    def int_greater_elem(lhs: IntPrimitive, rhs: int) -> BoolPrimitive:
        """lhs > int."""

    @required
    def int_greater_equal_elem(lhs: IntPrimitive, rhs: int) -> BoolPrimitive:
        """lhs >= int."""

    @required
    def int_lower_elem(lhs: IntPrimitive, rhs: int) -> BoolPrimitive:
        """lhs < int."""

    @required
    def int_lower_equal_elem(lhs: IntPrimitive, rhs: int) -> BoolPrimitive:
        """lhs <= int."""

    # ---- reductions --------------------------------------------------------------------------
    @required
    def int_sum(tensor: IntPrimitive) -> IntPrimitive:
        """Sum of all elements, shape ()."""

    @required
    def int_sum_dim(tensor: IntPrimitive, dim: int) -> IntPrimitive:
        """Sum along ``dim``, kept."""

    @required
    def int_prod(tensor: IntPrimitive) -> IntPrimitive:
        """Product of all elements, shape ()."""

    @required
    def int_prod_dim(tensor: IntPrimitive, dim: int) -> IntPrimitive:
        """Product along ``dim``, kept."""

    @required
    def int_max(tensor: IntPrimitive) -> IntPrimitive:
        """Largest element, shape ()."""

    @required
    def int_min(tensor: IntPrimitive) -> IntPrimitive:
        """Smallest element, shape ()."""

    @required
    def int_max_dim_with_indices(tensor: IntPrimitive,
                                 dim: int) -> tuple[IntPrimitive, IntPrimitive]:
        """Largest values along ``dim`` (kept) and the index of the first one."""

    @required
    def int_min_dim_with_indices(tensor: IntPrimitive,
                                 dim: int) -> tuple[IntPrimitive, IntPrimitive]:
        """Smallest values along ``dim`` (kept) and the index of the first one."""

    @provided
    def int_max_dim(cls: type[Backend], tensor: IntPrimitive, dim: int) -> IntPrimitive:
        return cls.int_max_dim_with_indices(tensor, dim)[0]

    @provided
    def int_min_dim(cls: type[Backend], tensor: IntPrimitive, dim: int) -> IntPrimitive:
        return cls.int_min_dim_with_indices(tensor, dim)[0]

    @provided
    def int_argmax(cls: type[Backend], tensor: IntPrimitive, dim: int) -> IntPrimitive:
        return cls.int_max_dim_with_indices(tensor, dim)[1]

    @provided
    def int_argmin(cls: type[Backend], tensor: IntPrimitive, dim: int) -> IntPrimitive:
        return cls.int_min_dim_with_indices(tensor, dim)[1]

    @required
    def int_cumsum(tensor: IntPrimitive, dim: int) -> IntPrimitive:
        """Running sum."""

    @required
    def int_cumprod(tensor: IntPrimitive, dim: int) -> IntPrimitive:
        """Running product."""

    @required
    def int_cummax_with_indices(tensor: IntPrimitive,
                                dim: int) -> tuple[IntPrimitive, IntPrimitive]:
        """Running max and where it was reached (latest among ties)."""

    @required
    def int_cummin_with_indices(tensor: IntPrimitive,
                                dim: int) -> tuple[IntPrimitive, IntPrimitive]:
        """Running min and where it was reached (latest among ties)."""

    @required
    def int_sort_with_indices(tensor: IntPrimitive, dim: int,
                              descending: bool) -> tuple[IntPrimitive, IntPrimitive]:
        """Stable sort along ``dim`` with source indices."""

    @provided
    def int_sort(cls: type[Backend], tensor: IntPrimitive, dim: int,
                 descending: bool) -> IntPrimitive:
        return cls.int_sort_with_indices(tensor, dim, descending)[0]

    @provided
    def int_argsort(cls: type[Backend], tensor: IntPrimitive, dim: int,
                    descending: bool) -> IntPrimitive:
        return cls.int_sort_with_indices(tensor, dim, descending)[1]

    @provided
    def int_any(cls: type[Backend], tensor: IntPrimitive) -> BoolPrimitive:
        return cls.bool_any(cls.int_not_equal_elem(tensor, 0))

    @provided
    def int_any_dim(cls: type[Backend], tensor: IntPrimitive, dim: int) -> BoolPrimitive:
        return cls.bool_any_dim(cls.int_not_equal_elem(tensor, 0), dim)

    @provided
    def int_all(cls: type[Backend], tensor: IntPrimitive) -> BoolPrimitive:
        return cls.bool_all(cls.int_not_equal_elem(tensor, 0))

    @provided
    def int_all_dim(cls: type[Backend], tensor: IntPrimitive, dim: int) -> BoolPrimitive:
        return cls.bool_all_dim(cls.int_not_equal_elem(tensor, 0), dim)
