"""Float tensor ops of the Backend protocol (Burn's ``FloatTensorOps``).

Conventions shared by every op family:
- Primitives expose ``.shape`` (a tuple of ints) and ``.dtype`` (a NumPy dtype; bfloat16 is
  ml_dtypes'); the Tensor layer reads both without calling the backend.
- Dims are non-negative ints and shapes are tuples: the protocol layer (``burnpy.tensor``) has
  normalized negative dims, validated shapes, dtypes and devices before any op is called, so a
  backend never re-checks them.
- Binary elementwise ops broadcast with NumPy rules. ``_scalar`` forms take a Python number.
- ``_dim`` reductions keep the reduced dim with size 1 (Burn's rule); full reductions return
  shape ``()``.
- Slices are tuples of ``slice(start, stop, step)`` with ``0 <= start <= stop <= size`` and
  ``step >= 1``, one per leading dim; negative steps are expressed by the caller with ``flip``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from burnpy.backend.data import TensorData
from burnpy.backend.device import Device
from burnpy.backend.distribution import Distribution
from burnpy.backend.dtype import DType, dtype_of_numpy
from burnpy.backend.ops._marker import required

F = Any  # the backend's FloatTensorPrimitive
I = Any  # the backend's IntTensorPrimitive
Bo = Any  # the backend's BoolTensorPrimitive
Shape = tuple[int, ...]


class FloatOps:
    """Ops on float primitives. Required ones are declared; provided ones compose them."""

    # ---- creation and transfer -------------------------------------------------------------
    @required
    def float_from_data(data: TensorData, device: Device) -> F:
        """A primitive holding ``data`` (already a float dtype) on ``device``."""

    @required
    def float_into_data(tensor: F) -> TensorData:
        """The primitive's values on the host (the only op that must synchronize)."""

    @required
    def float_device(tensor: F) -> Device:
        """The device the primitive lives on."""

    @required
    def float_to_device(tensor: F, device: Device) -> F:
        """A copy on ``device`` (the same primitive when already there)."""

    @required
    def float_empty(shape: Shape, device: Device, dtype: DType) -> F:
        """Uninitialized storage of ``shape``."""

    @required
    def float_full(shape: Shape, fill_value: float, device: Device, dtype: DType) -> F:
        """A tensor of ``shape`` filled with ``fill_value``."""

    @classmethod
    def float_zeros(cls, shape: Shape, device: Device, dtype: DType) -> F:
        return cls.float_full(shape, 0.0, device, dtype)

    @classmethod
    def float_ones(cls, shape: Shape, device: Device, dtype: DType) -> F:
        return cls.float_full(shape, 1.0, device, dtype)

    @required
    def float_random(shape: Shape, distribution: Distribution, device: Device, dtype: DType) -> F:
        """Samples from ``distribution``, drawn from the device's seeded generator."""

    @required
    def float_cast(tensor: F, dtype: DType) -> F:
        """The same values in another float dtype."""

    @required
    def float_into_int(tensor: F, dtype: DType) -> I:
        """Truncation toward zero into an int dtype."""

    # ---- layout ------------------------------------------------------------------------------
    @required
    def float_reshape(tensor: F, shape: Shape) -> F:
        """Same elements in row-major order, new shape (a view where the backend can)."""

    @required
    def float_swap_dims(tensor: F, dim1: int, dim2: int) -> F:
        """Exchange two dims."""

    @required
    def float_permute(tensor: F, axes: Shape) -> F:
        """Reorder dims: output dim i is input dim ``axes[i]``."""

    @required
    def float_flip(tensor: F, axes: Shape) -> F:
        """Reverse the order of elements along each of ``axes``."""

    @required
    def float_expand(tensor: F, shape: Shape) -> F:
        """Broadcast to ``shape`` (same ndim or more leading dims; size-1 dims stretch)."""

    @required
    def float_repeat_dim(tensor: F, dim: int, times: int) -> F:
        """Tile the whole tensor ``times`` along ``dim`` (torch's ``repeat`` on one dim)."""

    @required
    def float_cat(tensors: Sequence[F], dim: int) -> F:
        """Concatenate along an existing dim."""

    @required
    def float_unfold(tensor: F, dim: int, size: int, step: int) -> F:
        """Sliding windows along ``dim`` as a new last dim of ``size`` (``Tensor.unfold``)."""

    # ---- indexing ----------------------------------------------------------------------------
    @required
    def float_slice(tensor: F, slices: tuple[slice, ...]) -> F:
        """Sub-tensor at ``slices`` (normalized, positive steps; trailing dims taken whole)."""

    @required
    def float_slice_assign(tensor: F, slices: tuple[slice, ...], value: F) -> F:
        """A copy of ``tensor`` whose region at ``slices`` is replaced by ``value``."""

    @required
    def float_gather(tensor: F, dim: int, indices: I) -> F:
        """``out[i][j] = tensor[i][indices[i][j]]`` along ``dim`` (torch.gather)."""

    @required
    def float_scatter(tensor: F, dim: int, indices: I, values: F) -> F:
        """A copy of ``tensor`` with ``values`` written at ``indices`` along ``dim``."""

    @required
    def float_scatter_add(tensor: F, dim: int, indices: I, values: F) -> F:
        """A copy of ``tensor`` with ``values`` summed into ``indices`` along ``dim``."""

    @required
    def float_select(tensor: F, dim: int, indices: I) -> F:
        """Rows of ``tensor`` along ``dim`` picked by 1-D ``indices`` (torch.index_select)."""

    @required
    def float_select_assign(tensor: F, dim: int, indices: I, values: F) -> F:
        """A copy with the slices at 1-D ``indices`` along ``dim`` replaced by ``values``."""

    @required
    def float_select_add(tensor: F, dim: int, indices: I, values: F) -> F:
        """A copy with ``values`` summed into the slices at ``indices`` (torch.index_add)."""

    @required
    def float_mask_where(tensor: F, mask: Bo, value: F) -> F:
        """``value`` where ``mask`` is true, else ``tensor`` (all three broadcast)."""

    @required
    def float_mask_fill(tensor: F, mask: Bo, value: float) -> F:
        """``value`` where ``mask`` is true, else ``tensor``."""

    # ---- arithmetic --------------------------------------------------------------------------
    @required
    def float_add(lhs: F, rhs: F) -> F:
        """Elementwise sum."""

    @required
    def float_add_scalar(lhs: F, rhs: float) -> F:
        """Tensor plus a number."""

    @required
    def float_sub(lhs: F, rhs: F) -> F:
        """Elementwise difference."""

    @required
    def float_sub_scalar(lhs: F, rhs: float) -> F:
        """Tensor minus a number."""

    @required
    def float_mul(lhs: F, rhs: F) -> F:
        """Elementwise product."""

    @required
    def float_mul_scalar(lhs: F, rhs: float) -> F:
        """Tensor times a number."""

    @required
    def float_div(lhs: F, rhs: F) -> F:
        """Elementwise true division."""

    @required
    def float_div_scalar(lhs: F, rhs: float) -> F:
        """Tensor divided by a number."""

    @required
    def float_remainder(lhs: F, rhs: F) -> F:
        """Remainder with the divisor's sign (Python's ``%``, torch.remainder)."""

    @required
    def float_remainder_scalar(lhs: F, rhs: float) -> F:
        """Remainder by a number with the divisor's sign."""

    @required
    def float_matmul(lhs: F, rhs: F) -> F:
        """Batched matrix product of ``[..., m, k] @ [..., k, n]``: both have the same ndim >= 2
        and size-1 batch dims broadcast."""

    @required
    def float_neg(tensor: F) -> F:
        """Negation."""

    @classmethod
    def float_recip(cls, tensor: F) -> F:
        """1 / x."""
        return cls.float_div(cls.float_ones((), cls.float_device(tensor), _dt(tensor)), tensor)

    @required
    def float_abs(tensor: F) -> F:
        """|x|."""

    @required
    def float_sign(tensor: F) -> F:
        """-1, 0 or 1 (NaN gives 0, as torch.sign)."""

    @required
    def float_exp(tensor: F) -> F:
        """e**x."""

    @required
    def float_log(tensor: F) -> F:
        """Natural logarithm."""

    @required
    def float_log1p(tensor: F) -> F:
        """log(1 + x), accurate near 0."""

    @classmethod
    def float_expm1(cls, tensor: F) -> F:
        """exp(x) - 1."""
        return cls.float_sub_scalar(cls.float_exp(tensor), 1.0)

    @required
    def float_sqrt(tensor: F) -> F:
        """Square root."""

    @required
    def float_powf(lhs: F, rhs: F) -> F:
        """``lhs ** rhs`` elementwise with a tensor exponent."""

    @required
    def float_powf_scalar(tensor: F, exponent: float) -> F:
        """``tensor ** exponent``."""

    @required
    def float_sin(tensor: F) -> F:
        """Sine."""

    @required
    def float_cos(tensor: F) -> F:
        """Cosine."""

    @required
    def float_tan(tensor: F) -> F:
        """Tangent."""

    @required
    def float_asin(tensor: F) -> F:
        """Inverse sine."""

    @required
    def float_acos(tensor: F) -> F:
        """Inverse cosine."""

    @required
    def float_atan(tensor: F) -> F:
        """Inverse tangent."""

    @required
    def float_sinh(tensor: F) -> F:
        """Hyperbolic sine."""

    @required
    def float_cosh(tensor: F) -> F:
        """Hyperbolic cosine."""

    @required
    def float_tanh(tensor: F) -> F:
        """Hyperbolic tangent."""

    @required
    def float_asinh(tensor: F) -> F:
        """Inverse hyperbolic sine."""

    @required
    def float_acosh(tensor: F) -> F:
        """Inverse hyperbolic cosine."""

    @required
    def float_atanh(tensor: F) -> F:
        """Inverse hyperbolic tangent."""

    @required
    def float_atan2(lhs: F, rhs: F) -> F:
        """Angle of the point (rhs, lhs): ``atan2(y=lhs, x=rhs)``."""

    @required
    def float_erf(tensor: F) -> F:
        """Gauss error function (float64 accurate to 1e-12 relative)."""

    @required
    def float_round(tensor: F) -> F:
        """Round half to even (torch.round)."""

    @required
    def float_floor(tensor: F) -> F:
        """Largest integer <= x."""

    @required
    def float_ceil(tensor: F) -> F:
        """Smallest integer >= x."""

    @required
    def float_trunc(tensor: F) -> F:
        """Round toward zero."""

    @required
    def float_clamp(tensor: F, min: float | None, max: float | None) -> F:
        """Limit values to [min, max]; either bound may be None."""

    @classmethod
    def float_clamp_min(cls, tensor: F, min: float) -> F:
        return cls.float_clamp(tensor, min, None)

    @classmethod
    def float_clamp_max(cls, tensor: F, max: float) -> F:
        return cls.float_clamp(tensor, None, max)

    @classmethod
    def float_square(cls, tensor: F) -> F:
        return cls.float_mul(tensor, tensor)

    # ---- comparison --------------------------------------------------------------------------
    @required
    def float_equal(lhs: F, rhs: F) -> Bo:
        """lhs == rhs."""

    @required
    def float_not_equal(lhs: F, rhs: F) -> Bo:
        """lhs != rhs."""

    @required
    def float_greater(lhs: F, rhs: F) -> Bo:
        """lhs > rhs."""

    @required
    def float_greater_equal(lhs: F, rhs: F) -> Bo:
        """lhs >= rhs."""

    @required
    def float_lower(lhs: F, rhs: F) -> Bo:
        """lhs < rhs."""

    @required
    def float_lower_equal(lhs: F, rhs: F) -> Bo:
        """lhs <= rhs."""

    @required
    def float_equal_elem(lhs: F, rhs: float) -> Bo:
        """lhs == number."""

    @required
    def float_not_equal_elem(lhs: F, rhs: float) -> Bo:
        """lhs != number."""

    @required
    def float_greater_elem(lhs: F, rhs: float) -> Bo:
        """lhs > number."""

    @required
    def float_greater_equal_elem(lhs: F, rhs: float) -> Bo:
        """lhs >= number."""

    @required
    def float_lower_elem(lhs: F, rhs: float) -> Bo:
        """lhs < number."""

    @required
    def float_lower_equal_elem(lhs: F, rhs: float) -> Bo:
        """lhs <= number."""

    @required
    def float_is_nan(tensor: F) -> Bo:
        """True where NaN."""

    @required
    def float_is_inf(tensor: F) -> Bo:
        """True where +-inf."""

    # ---- reductions --------------------------------------------------------------------------
    @required
    def float_sum(tensor: F) -> F:
        """Sum of all elements, shape ()."""

    @required
    def float_sum_dim(tensor: F, dim: int) -> F:
        """Sum along ``dim``, kept with size 1."""

    @required
    def float_prod(tensor: F) -> F:
        """Product of all elements, shape ()."""

    @required
    def float_prod_dim(tensor: F, dim: int) -> F:
        """Product along ``dim``, kept with size 1."""

    @classmethod
    def float_mean(cls, tensor: F) -> F:
        n = _numel(tensor.shape)
        return cls.float_div_scalar(cls.float_sum(tensor), float(n) if n else float("nan"))

    @classmethod
    def float_mean_dim(cls, tensor: F, dim: int) -> F:
        n = tensor.shape[dim]
        return cls.float_div_scalar(cls.float_sum_dim(tensor, dim), float(n) if n else float("nan"))

    @required
    def float_max(tensor: F) -> F:
        """Largest element, shape () (NaN propagates)."""

    @required
    def float_min(tensor: F) -> F:
        """Smallest element, shape () (NaN propagates)."""

    @required
    def float_max_dim_with_indices(tensor: F, dim: int) -> tuple[F, I]:
        """Largest values along ``dim`` (kept) and the index of the first one."""

    @required
    def float_min_dim_with_indices(tensor: F, dim: int) -> tuple[F, I]:
        """Smallest values along ``dim`` (kept) and the index of the first one."""

    @classmethod
    def float_max_dim(cls, tensor: F, dim: int) -> F:
        return cls.float_max_dim_with_indices(tensor, dim)[0]

    @classmethod
    def float_min_dim(cls, tensor: F, dim: int) -> F:
        return cls.float_min_dim_with_indices(tensor, dim)[0]

    @classmethod
    def float_argmax(cls, tensor: F, dim: int) -> I:
        return cls.float_max_dim_with_indices(tensor, dim)[1]

    @classmethod
    def float_argmin(cls, tensor: F, dim: int) -> I:
        return cls.float_min_dim_with_indices(tensor, dim)[1]

    @required
    def float_cumsum(tensor: F, dim: int) -> F:
        """Running sum along ``dim``."""

    @required
    def float_cumprod(tensor: F, dim: int) -> F:
        """Running product along ``dim``."""

    @required
    def float_cummax_with_indices(tensor: F, dim: int) -> tuple[F, I]:
        """Running max along ``dim`` and, as torch.cummax, the index where it was reached
        (the latest index among ties)."""

    @required
    def float_cummin_with_indices(tensor: F, dim: int) -> tuple[F, I]:
        """Running min along ``dim`` and the index where it was reached (latest among ties)."""

    @classmethod
    def float_cummax(cls, tensor: F, dim: int) -> F:
        return cls.float_cummax_with_indices(tensor, dim)[0]

    @classmethod
    def float_cummin(cls, tensor: F, dim: int) -> F:
        return cls.float_cummin_with_indices(tensor, dim)[0]

    @required
    def float_sort_with_indices(tensor: F, dim: int, descending: bool) -> tuple[F, I]:
        """Stable sort along ``dim`` with the source index of each value."""

    @classmethod
    def float_sort(cls, tensor: F, dim: int, descending: bool) -> F:
        return cls.float_sort_with_indices(tensor, dim, descending)[0]

    @classmethod
    def float_argsort(cls, tensor: F, dim: int, descending: bool) -> I:
        return cls.float_sort_with_indices(tensor, dim, descending)[1]

    @classmethod
    def float_topk_with_indices(cls, tensor: F, k: int, dim: int, largest: bool) -> tuple[F, I]:
        """The ``k`` largest (or smallest) values along ``dim``, sorted, with their indices."""
        values, indices = cls.float_sort_with_indices(tensor, dim, largest)
        window = tuple(slice(0, n) for n in tensor.shape[:dim]) + (slice(0, k),)
        return cls.float_slice(values, window), cls.int_slice(indices, window)

    @classmethod
    def float_any(cls, tensor: F) -> Bo:
        return cls.bool_any(cls.float_not_equal_elem(tensor, 0.0))

    @classmethod
    def float_any_dim(cls, tensor: F, dim: int) -> Bo:
        return cls.bool_any_dim(cls.float_not_equal_elem(tensor, 0.0), dim)

    @classmethod
    def float_all(cls, tensor: F) -> Bo:
        return cls.bool_all(cls.float_not_equal_elem(tensor, 0.0))

    @classmethod
    def float_all_dim(cls, tensor: F, dim: int) -> Bo:
        return cls.bool_all_dim(cls.float_not_equal_elem(tensor, 0.0), dim)

    # ---- autodiff hooks (a plain backend tracks nothing) --------------------------------------
    @staticmethod
    def float_is_require_grad(tensor: F) -> bool:
        """Whether the primitive is a tracked leaf or depends on one."""
        return False

    @staticmethod
    def float_detach(tensor: F) -> F:
        """The same values, cut from any gradient graph."""
        return tensor


def _numel(shape: Shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def _dt(tensor: F) -> DType:
    return dtype_of_numpy(tensor.dtype)
