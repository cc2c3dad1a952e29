"""Bool tensor ops of the Backend protocol (Burn's ``BoolTensorOps``).

Conventions as in float_ops.
"""

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


class BoolOps:
    """Ops on bool primitives."""

    @required
    def bool_from_data(data: TensorData, device: Device) -> Bo:
        """A primitive holding ``data`` (dtype bool) on ``device``."""

    @required
    def bool_into_data(tensor: Bo) -> TensorData:
        """The primitive's values on the host."""

    @required
    def bool_device(tensor: Bo) -> Device:
        """The device the primitive lives on."""

    @required
    def bool_to_device(tensor: Bo, device: Device) -> Bo:
        """A copy on ``device``."""

    @required
    def bool_empty(shape: Shape, device: Device) -> Bo:
        """Uninitialized storage."""

    @required
    def bool_full(shape: Shape, fill_value: bool, device: Device) -> Bo:
        """A tensor filled with ``fill_value``."""

    @required
    def bool_into_int(tensor: Bo, dtype: DType) -> I:
        """True -> 1, False -> 0."""

    @required
    def bool_into_float(tensor: Bo, dtype: DType) -> F:
        """True -> 1.0, False -> 0.0."""

    @required
    def bool_reshape(tensor: Bo, shape: Shape) -> Bo:
        """See float_reshape."""

    @required
    def bool_swap_dims(tensor: Bo, dim1: int, dim2: int) -> Bo:
        """See float_swap_dims."""

    @required
    def bool_permute(tensor: Bo, axes: Shape) -> Bo:
        """See float_permute."""

    @required
    def bool_flip(tensor: Bo, axes: Shape) -> Bo:
        """See float_flip."""

    @required
    def bool_expand(tensor: Bo, shape: Shape) -> Bo:
        """See float_expand."""

    @required
    def bool_repeat_dim(tensor: Bo, dim: int, times: int) -> Bo:
        """See float_repeat_dim."""

    @required
    def bool_cat(tensors: Sequence[Bo], dim: int) -> Bo:
        """See float_cat."""

    @required
    def bool_unfold(tensor: Bo, dim: int, size: int, step: int) -> Bo:
        """See float_unfold."""

    @required
    def bool_slice(tensor: Bo, slices: tuple[slice, ...]) -> Bo:
        """See float_slice."""

    @required
    def bool_slice_assign(tensor: Bo, slices: tuple[slice, ...], value: Bo) -> Bo:
        """See float_slice_assign."""

    @required
    def bool_gather(tensor: Bo, dim: int, indices: I) -> Bo:
        """See float_gather."""

    @required
    def bool_select(tensor: Bo, dim: int, indices: I) -> Bo:
        """See float_select."""

    @required
    def bool_mask_where(tensor: Bo, mask: Bo, value: Bo) -> Bo:
        """See float_mask_where."""

    @required
    def bool_not(tensor: Bo) -> Bo:
        """Logical not."""

    @required
    def bool_and(lhs: Bo, rhs: Bo) -> Bo:
        """Logical and."""

    @required
    def bool_or(lhs: Bo, rhs: Bo) -> Bo:
        """Logical or."""

    @required
    def bool_xor(lhs: Bo, rhs: Bo) -> Bo:
        """Logical xor."""

    @required
    def bool_equal(lhs: Bo, rhs: Bo) -> Bo:
        """lhs == rhs."""

    @classmethod
    def bool_not_equal(cls, lhs: Bo, rhs: Bo) -> Bo:
        return cls.bool_xor(lhs, rhs)

    @required
    def bool_any(tensor: Bo) -> Bo:
        """Whether any element is true, shape ()."""

    @required
    def bool_any_dim(tensor: Bo, dim: int) -> Bo:
        """Any along ``dim``, kept."""

    @required
    def bool_all(tensor: Bo) -> Bo:
        """Whether every element is true, shape ()."""

    @required
    def bool_all_dim(tensor: Bo, dim: int) -> Bo:
        """All along ``dim``, kept."""

    @required
    def bool_argwhere(tensor: Bo) -> I:
        """Indices of the true elements, shape ``[n, ndim]`` in row-major order (int64)."""

    @classmethod
    def bool_nonzero(cls, tensor: Bo) -> list[I]:
        """One 1-D index tensor per dim (NumPy's ``nonzero``), from ``bool_argwhere``."""
        found = cls.bool_argwhere(tensor)
        n = found.shape[0]
        columns = []
        for d in range(len(tensor.shape)):
            col = cls.int_slice(found, (slice(0, n), slice(d, d + 1)))
            columns.append(cls.int_reshape(col, (n,)))
        return columns
