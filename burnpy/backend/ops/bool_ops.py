# A @required op is a declaration: its body is its docstring, implemented by each backend.
# mypy: disable-error-code="empty-body"
"""Bool tensor ops of the Backend protocol (Burn's ``BoolTensorOps``).

Conventions as in float_ops.
"""

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



class BoolOps:
    """Ops on bool primitives."""

    @required
    def bool_from_data(data: TensorData, device: Device) -> BoolPrimitive:
        """A primitive holding ``data`` (dtype bool) on ``device``."""

    @required
    def bool_into_data(tensor: BoolPrimitive) -> TensorData:
        """The primitive's values on the host."""

    @required
    def bool_device(tensor: BoolPrimitive) -> Device:
        """The device the primitive lives on."""

    @required
    def bool_to_device(tensor: BoolPrimitive, device: Device) -> BoolPrimitive:
        """A copy on ``device``."""

    @required
    def bool_empty(shape: Shape, device: Device) -> BoolPrimitive:
        """Uninitialized storage."""

    @required
    def bool_full(shape: Shape, fill_value: bool, device: Device) -> BoolPrimitive:
        """A tensor filled with ``fill_value``."""

    @required
    def bool_into_int(tensor: BoolPrimitive, dtype: DType) -> IntPrimitive:
        """True -> 1, False -> 0."""

    @required
    def bool_into_float(tensor: BoolPrimitive, dtype: DType) -> FloatPrimitive:
        """True -> 1.0, False -> 0.0."""

    @required
    def bool_reshape(tensor: BoolPrimitive, shape: Shape) -> BoolPrimitive:
        """See float_reshape."""

    @required
    def bool_swap_dims(tensor: BoolPrimitive, dim1: int, dim2: int) -> BoolPrimitive:
        """See float_swap_dims."""

    @required
    def bool_permute(tensor: BoolPrimitive, axes: Shape) -> BoolPrimitive:
        """See float_permute."""

    @required
    def bool_flip(tensor: BoolPrimitive, axes: Shape) -> BoolPrimitive:
        """See float_flip."""

    @required
    def bool_expand(tensor: BoolPrimitive, shape: Shape) -> BoolPrimitive:
        """See float_expand."""

    @required
    def bool_repeat_dim(tensor: BoolPrimitive, dim: int, times: int) -> BoolPrimitive:
        """See float_repeat_dim."""

    @required
    def bool_cat(tensors: Sequence[BoolPrimitive], dim: int) -> BoolPrimitive:
        """See float_cat."""

    @required
    def bool_unfold(tensor: BoolPrimitive, dim: int, size: int, step: int) -> BoolPrimitive:
        """See float_unfold."""

    @required
    def bool_slice(tensor: BoolPrimitive, slices: tuple[slice, ...]) -> BoolPrimitive:
        """See float_slice."""

    @required
    def bool_slice_assign(tensor: BoolPrimitive, slices: tuple[slice, ...],
                          value: BoolPrimitive) -> BoolPrimitive:
        """See float_slice_assign."""

    @required
    def bool_gather(tensor: BoolPrimitive, dim: int, indices: IntPrimitive) -> BoolPrimitive:
        """See float_gather."""

    @required
    def bool_select(tensor: BoolPrimitive, dim: int, indices: IntPrimitive) -> BoolPrimitive:
        """See float_select."""

    @required
    def bool_mask_where(tensor: BoolPrimitive, mask: BoolPrimitive,
                        value: BoolPrimitive) -> BoolPrimitive:
        """See float_mask_where."""

    @required
    def bool_not(tensor: BoolPrimitive) -> BoolPrimitive:
        """Logical not."""

    @required
    def bool_and(lhs: BoolPrimitive, rhs: BoolPrimitive) -> BoolPrimitive:
        """Logical and."""

    @required
    def bool_or(lhs: BoolPrimitive, rhs: BoolPrimitive) -> BoolPrimitive:
        """Logical or."""

    @required
    def bool_xor(lhs: BoolPrimitive, rhs: BoolPrimitive) -> BoolPrimitive:
        """Logical xor."""

    @required
    def bool_equal(lhs: BoolPrimitive, rhs: BoolPrimitive) -> BoolPrimitive:
        """lhs == rhs."""

    @provided
    def bool_not_equal(cls: type[Backend], lhs: BoolPrimitive, rhs: BoolPrimitive) -> BoolPrimitive:
        return cls.bool_xor(lhs, rhs)

    @required
    def bool_any(tensor: BoolPrimitive) -> BoolPrimitive:
        """Whether any element is true, shape ()."""

    @required
    def bool_any_dim(tensor: BoolPrimitive, dim: int) -> BoolPrimitive:
        """Any along ``dim``, kept."""

    @required
    def bool_all(tensor: BoolPrimitive) -> BoolPrimitive:
        """Whether every element is true, shape ()."""

    @required
    def bool_all_dim(tensor: BoolPrimitive, dim: int) -> BoolPrimitive:
        """All along ``dim``, kept."""

    @required
    def bool_argwhere(tensor: BoolPrimitive) -> IntPrimitive:
        """Indices of the true elements, shape ``[n, ndim]`` in row-major order (int64)."""

    @provided
    def bool_nonzero(cls: type[Backend], tensor: BoolPrimitive) -> list[IntPrimitive]:
        """One 1-D index tensor per dim (NumPy's ``nonzero``), from ``bool_argwhere``."""
        found = cls.bool_argwhere(tensor)
        n = found.shape[0]
        columns = []
        for d in range(len(tensor.shape)):
            col = cls.int_slice(found, (slice(0, n), slice(d, d + 1)))
            columns.append(cls.int_reshape(col, (n,)))
        return columns
