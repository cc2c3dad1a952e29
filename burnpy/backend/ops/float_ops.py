# A @required op is a declaration: its body is its docstring, implemented by each backend.
# mypy: disable-error-code="empty-body"
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

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from burnpy.backend.data import TensorData
from burnpy.backend.device import Device
from burnpy.backend.distribution import Distribution
from burnpy.backend.dtype import DType, dtype_of_numpy
from burnpy.backend.ops import special
from burnpy.backend.ops._marker import provided, required
from burnpy.backend.primitives import BoolPrimitive, FloatPrimitive, IntPrimitive, Shape

if TYPE_CHECKING:
    from burnpy.backend.base import Backend



class FloatOps:
    """Ops on float primitives. Required ones are declared; provided ones compose them."""

    # ---- creation and transfer -------------------------------------------------------------
    @required
    def float_from_data(data: TensorData, device: Device) -> FloatPrimitive:
        """A primitive holding ``data`` (already a float dtype) on ``device``."""

    @required
    def float_into_data(tensor: FloatPrimitive) -> TensorData:
        """The primitive's values on the host (the only op that must synchronize)."""

    @required
    def float_device(tensor: FloatPrimitive) -> Device:
        """The device the primitive lives on."""

    @required
    def float_to_device(tensor: FloatPrimitive, device: Device) -> FloatPrimitive:
        """A copy on ``device`` (the same primitive when already there)."""

    @required
    def float_empty(shape: Shape, device: Device, dtype: DType) -> FloatPrimitive:
        """Uninitialized storage of ``shape``."""

    @required
    def float_full(shape: Shape, fill_value: float, device: Device, dtype: DType) -> FloatPrimitive:
        """A tensor of ``shape`` filled with ``fill_value``."""

    @provided
    def float_zeros(cls: type[Backend], shape: Shape, device: Device,
                    dtype: DType) -> FloatPrimitive:
        return cls.float_full(shape, 0.0, device, dtype)

    @provided
    def float_ones(cls: type[Backend], shape: Shape, device: Device,
                   dtype: DType) -> FloatPrimitive:
        return cls.float_full(shape, 1.0, device, dtype)

    @required
    def float_random(shape: Shape, distribution: Distribution, device: Device,
                     dtype: DType) -> FloatPrimitive:
        """Samples from ``distribution``, drawn from the device's seeded generator."""

    @required
    def float_cast(tensor: FloatPrimitive, dtype: DType) -> FloatPrimitive:
        """The same values in another float dtype."""

    @required
    def float_into_int(tensor: FloatPrimitive, dtype: DType) -> IntPrimitive:
        """Truncation toward zero into an int dtype."""

    # ---- layout ------------------------------------------------------------------------------
    @required
    def float_reshape(tensor: FloatPrimitive, shape: Shape) -> FloatPrimitive:
        """Same elements in row-major order, new shape (a view where the backend can)."""

    @required
    def float_swap_dims(tensor: FloatPrimitive, dim1: int, dim2: int) -> FloatPrimitive:
        """Exchange two dims."""

    @required
    def float_permute(tensor: FloatPrimitive, axes: Shape) -> FloatPrimitive:
        """Reorder dims: output dim i is input dim ``axes[i]``."""

    @required
    def float_flip(tensor: FloatPrimitive, axes: Shape) -> FloatPrimitive:
        """Reverse the order of elements along each of ``axes``."""

    @required
    def float_expand(tensor: FloatPrimitive, shape: Shape) -> FloatPrimitive:
        """Broadcast to ``shape`` (same ndim or more leading dims; size-1 dims stretch)."""

    @required
    def float_repeat_dim(tensor: FloatPrimitive, dim: int, times: int) -> FloatPrimitive:
        """Tile the whole tensor ``times`` along ``dim`` (torch's ``repeat`` on one dim)."""

    @required
    def float_cat(tensors: Sequence[FloatPrimitive], dim: int) -> FloatPrimitive:
        """Concatenate along an existing dim."""

    @required
    def float_unfold(tensor: FloatPrimitive, dim: int, size: int, step: int) -> FloatPrimitive:
        """Sliding windows along ``dim`` as a new last dim of ``size`` (``Tensor.unfold``)."""

    # ---- indexing ----------------------------------------------------------------------------
    @required
    def float_slice(tensor: FloatPrimitive, slices: tuple[slice, ...]) -> FloatPrimitive:
        """Sub-tensor at ``slices`` (normalized, positive steps; trailing dims taken whole)."""

    @required
    def float_slice_assign(tensor: FloatPrimitive, slices: tuple[slice, ...],
                           value: FloatPrimitive) -> FloatPrimitive:
        """A copy of ``tensor`` whose region at ``slices`` is replaced by ``value``."""

    @required
    def float_gather(tensor: FloatPrimitive, dim: int, indices: IntPrimitive) -> FloatPrimitive:
        """``out[i][j] = tensor[i][indices[i][j]]`` along ``dim`` (torch.gather)."""

    @required
    def float_scatter(tensor: FloatPrimitive, dim: int, indices: IntPrimitive,
                      values: FloatPrimitive) -> FloatPrimitive:
        """A copy of ``tensor`` with ``values`` written at ``indices`` along ``dim``."""

    @required
    def float_scatter_add(tensor: FloatPrimitive, dim: int, indices: IntPrimitive,
                          values: FloatPrimitive) -> FloatPrimitive:
        """A copy of ``tensor`` with ``values`` summed into ``indices`` along ``dim``."""

    @required
    def float_select(tensor: FloatPrimitive, dim: int, indices: IntPrimitive) -> FloatPrimitive:
        """Rows of ``tensor`` along ``dim`` picked by 1-D ``indices`` (torch.index_select)."""

    @required
    def float_select_assign(tensor: FloatPrimitive, dim: int, indices: IntPrimitive,
                            values: FloatPrimitive) -> FloatPrimitive:
        """A copy with the slices at 1-D ``indices`` along ``dim`` replaced by ``values``."""

    @required
    def float_select_add(tensor: FloatPrimitive, dim: int, indices: IntPrimitive,
                         values: FloatPrimitive) -> FloatPrimitive:
        """A copy with ``values`` summed into the slices at ``indices`` (torch.index_add)."""

    @required
    def float_mask_where(tensor: FloatPrimitive, mask: BoolPrimitive,
                         value: FloatPrimitive) -> FloatPrimitive:
        """``value`` where ``mask`` is true, else ``tensor`` (all three broadcast)."""

    @required
    def float_mask_fill(tensor: FloatPrimitive, mask: BoolPrimitive,
                        value: float) -> FloatPrimitive:
        """``value`` where ``mask`` is true, else ``tensor``."""

    # ---- arithmetic --------------------------------------------------------------------------
    @required
    def float_add(lhs: FloatPrimitive, rhs: FloatPrimitive) -> FloatPrimitive:
        """Elementwise sum."""

    @required
    def float_add_scalar(lhs: FloatPrimitive, rhs: float) -> FloatPrimitive:
        """Tensor plus a number."""

    @required
    def float_sub(lhs: FloatPrimitive, rhs: FloatPrimitive) -> FloatPrimitive:
        """Elementwise difference."""

    @required
    def float_sub_scalar(lhs: FloatPrimitive, rhs: float) -> FloatPrimitive:
        """Tensor minus a number."""

    @required
    def float_mul(lhs: FloatPrimitive, rhs: FloatPrimitive) -> FloatPrimitive:
        """Elementwise product."""

    @required
    def float_mul_scalar(lhs: FloatPrimitive, rhs: float) -> FloatPrimitive:
        """Tensor times a number."""

    @required
    def float_div(lhs: FloatPrimitive, rhs: FloatPrimitive) -> FloatPrimitive:
        """Elementwise true division."""

    @required
    def float_div_scalar(lhs: FloatPrimitive, rhs: float) -> FloatPrimitive:
        """Tensor divided by a number."""

    @required
    def float_remainder(lhs: FloatPrimitive, rhs: FloatPrimitive) -> FloatPrimitive:
        """Remainder with the divisor's sign (Python's ``%``, torch.remainder)."""

    @required
    def float_remainder_scalar(lhs: FloatPrimitive, rhs: float) -> FloatPrimitive:
        """Remainder by a number with the divisor's sign."""

    @required
    def float_matmul(lhs: FloatPrimitive, rhs: FloatPrimitive) -> FloatPrimitive:
        """Batched matrix product of ``[..., m, k] @ [..., k, n]``: both have the same ndim >= 2
        and size-1 batch dims broadcast."""

    @required
    def float_neg(tensor: FloatPrimitive) -> FloatPrimitive:
        """Negation."""

    @provided
    def float_recip(cls: type[Backend], tensor: FloatPrimitive) -> FloatPrimitive:
        """1 / x."""
        return cls.float_div(cls.float_ones((), cls.float_device(tensor), _dt(tensor)), tensor)

    @required
    def float_abs(tensor: FloatPrimitive) -> FloatPrimitive:
        """|x|."""

    @required
    def float_sign(tensor: FloatPrimitive) -> FloatPrimitive:
        """-1, 0 or 1 (NaN gives 0, as torch.sign)."""

    @required
    def float_exp(tensor: FloatPrimitive) -> FloatPrimitive:
        """e**x."""

    @required
    def float_log(tensor: FloatPrimitive) -> FloatPrimitive:
        """Natural logarithm."""

    @required
    def float_log1p(tensor: FloatPrimitive) -> FloatPrimitive:
        """log(1 + x), accurate near 0."""

    @provided
    def float_expm1(cls: type[Backend], tensor: FloatPrimitive) -> FloatPrimitive:
        """exp(x) - 1."""
        return cls.float_sub_scalar(cls.float_exp(tensor), 1.0)

    @required
    def float_sqrt(tensor: FloatPrimitive) -> FloatPrimitive:
        """Square root."""

    @required
    def float_powf(lhs: FloatPrimitive, rhs: FloatPrimitive) -> FloatPrimitive:
        """``lhs ** rhs`` elementwise with a tensor exponent."""

    @required
    def float_powf_scalar(tensor: FloatPrimitive, exponent: float) -> FloatPrimitive:
        """``tensor ** exponent``."""

    @required
    def float_sin(tensor: FloatPrimitive) -> FloatPrimitive:
        """Sine."""

    @required
    def float_cos(tensor: FloatPrimitive) -> FloatPrimitive:
        """Cosine."""

    @required
    def float_tan(tensor: FloatPrimitive) -> FloatPrimitive:
        """Tangent."""

    @required
    def float_asin(tensor: FloatPrimitive) -> FloatPrimitive:
        """Inverse sine."""

    @required
    def float_acos(tensor: FloatPrimitive) -> FloatPrimitive:
        """Inverse cosine."""

    @required
    def float_atan(tensor: FloatPrimitive) -> FloatPrimitive:
        """Inverse tangent."""

    @required
    def float_sinh(tensor: FloatPrimitive) -> FloatPrimitive:
        """Hyperbolic sine."""

    @required
    def float_cosh(tensor: FloatPrimitive) -> FloatPrimitive:
        """Hyperbolic cosine."""

    @required
    def float_tanh(tensor: FloatPrimitive) -> FloatPrimitive:
        """Hyperbolic tangent."""

    @required
    def float_asinh(tensor: FloatPrimitive) -> FloatPrimitive:
        """Inverse hyperbolic sine."""

    @required
    def float_acosh(tensor: FloatPrimitive) -> FloatPrimitive:
        """Inverse hyperbolic cosine."""

    @required
    def float_atanh(tensor: FloatPrimitive) -> FloatPrimitive:
        """Inverse hyperbolic tangent."""

    @required
    def float_atan2(lhs: FloatPrimitive, rhs: FloatPrimitive) -> FloatPrimitive:
        """Angle of the point (rhs, lhs): ``atan2(y=lhs, x=rhs)``."""

    @provided
    def float_hypot(cls: type[Backend], lhs: FloatPrimitive,
                    rhs: FloatPrimitive) -> FloatPrimitive:
        """``sqrt(lhs**2 + rhs**2)``, as ``big * sqrt(1 + (small / big)**2)`` so that squares of
        large values cannot overflow; infinite when either side is."""
        lhs_abs, rhs_abs = cls.float_abs(lhs), cls.float_abs(rhs)
        rhs_bigger = cls.float_lower(lhs_abs, rhs_abs)
        big = cls.float_mask_where(lhs_abs, rhs_bigger, rhs_abs)
        small = cls.float_mask_where(rhs_abs, rhs_bigger, lhs_abs)
        ratio = cls.float_div(small, cls.float_mask_fill(big, cls.float_equal_elem(big, 0.0), 1.0))
        out = cls.float_mul(big, cls.float_sqrt(cls.float_add_scalar(cls.float_square(ratio), 1.0)))
        return cls.float_mask_where(out, cls.float_is_inf(big), big)

    @provided
    def float_logaddexp(cls: type[Backend], lhs: FloatPrimitive,
                        rhs: FloatPrimitive) -> FloatPrimitive:
        """``log(exp(lhs) + exp(rhs))`` without overflow: ``max + log1p(exp(-|lhs - rhs|))``;
        equal sides (infinities included) give ``side + log(2)``."""
        bigger = cls.float_mask_where(lhs, cls.float_lower(lhs, rhs), rhs)
        gap = cls.float_neg(cls.float_abs(cls.float_sub(lhs, rhs)))
        out = cls.float_add(bigger, cls.float_log1p(cls.float_exp(gap)))
        return cls.float_mask_where(out, cls.float_equal(lhs, rhs),
                                    cls.float_add_scalar(bigger, math.log(2.0)))

    @provided
    def float_logaddexp2(cls: type[Backend], lhs: FloatPrimitive,
                         rhs: FloatPrimitive) -> FloatPrimitive:
        """``log2(2**lhs + 2**rhs)`` without overflow: ``max + log1p(2**-|lhs - rhs|) / log(2)``;
        equal sides (infinities included) give ``side + 1``."""
        bigger = cls.float_mask_where(lhs, cls.float_lower(lhs, rhs), rhs)
        gap = cls.float_mul_scalar(cls.float_abs(cls.float_sub(lhs, rhs)), -math.log(2.0))
        out = cls.float_add(bigger, cls.float_div_scalar(cls.float_log1p(cls.float_exp(gap)),
                                                         math.log(2.0)))
        return cls.float_mask_where(out, cls.float_equal(lhs, rhs),
                                    cls.float_add_scalar(bigger, 1.0))

    @required
    def float_erf(tensor: FloatPrimitive) -> FloatPrimitive:
        """Gauss error function (float64 accurate to 1e-12 relative)."""

    @provided
    def float_erfc(cls: type[Backend], tensor: FloatPrimitive) -> FloatPrimitive:
        """``1 - erf(x)`` (this default loses relative accuracy for x above a few units, where
        erfc is tiny: the native backends override it)."""
        return cls.float_add_scalar(cls.float_neg(cls.float_erf(tensor)), 1.0)

    @provided
    def float_erfinv(cls: type[Backend], tensor: FloatPrimitive) -> FloatPrimitive:
        """The inverse of erf: +-inf at +-1, NaN outside [-1, 1]."""
        return special.widened(cls, tensor, special.erfinv)

    @provided
    def float_lgamma(cls: type[Backend], tensor: FloatPrimitive) -> FloatPrimitive:
        """``log |Gamma(x)|``: +inf at the poles (0, -1, -2...) and at +-inf."""
        return special.widened(cls, tensor, special.lgamma)

    @provided
    def float_digamma(cls: type[Backend], tensor: FloatPrimitive) -> FloatPrimitive:
        """``psi(x) = d/dx lgamma(x)``: -inf at +0, +inf at -0, NaN at the negative integers."""
        return special.widened(cls, tensor, special.digamma)

    @provided
    def float_polygamma(cls: type[Backend], tensor: FloatPrimitive, n: int) -> FloatPrimitive:
        """The ``n``-th derivative of digamma (``n >= 0``; ``n = 0`` is digamma itself)."""
        if n == 0:
            return cls.float_digamma(tensor)
        return special.widened(cls, tensor, lambda b, x: special.polygamma(b, x, n))

    @provided
    def float_i0(cls: type[Backend], tensor: FloatPrimitive) -> FloatPrimitive:
        """The modified Bessel function of the first kind, order 0."""
        return special.widened(cls, tensor, lambda b, x: special.bessel_i(b, x, 0))

    @provided
    def float_i1(cls: type[Backend], tensor: FloatPrimitive) -> FloatPrimitive:
        """The modified Bessel function of the first kind, order 1 (i0's derivative)."""
        return special.widened(cls, tensor, lambda b, x: special.bessel_i(b, x, 1))

    @required
    def float_round(tensor: FloatPrimitive) -> FloatPrimitive:
        """Round half to even (torch.round)."""

    @required
    def float_floor(tensor: FloatPrimitive) -> FloatPrimitive:
        """Largest integer <= x."""

    @required
    def float_ceil(tensor: FloatPrimitive) -> FloatPrimitive:
        """Smallest integer >= x."""

    @required
    def float_trunc(tensor: FloatPrimitive) -> FloatPrimitive:
        """Round toward zero."""

    @required
    def float_clamp(tensor: FloatPrimitive, min: float | None, max: float | None) -> FloatPrimitive:
        """Limit values to [min, max]; either bound may be None."""

    @provided
    def float_clamp_min(cls: type[Backend], tensor: FloatPrimitive, min: float) -> FloatPrimitive:
        return cls.float_clamp(tensor, min, None)

    @provided
    def float_clamp_max(cls: type[Backend], tensor: FloatPrimitive, max: float) -> FloatPrimitive:
        return cls.float_clamp(tensor, None, max)

    @provided
    def float_square(cls: type[Backend], tensor: FloatPrimitive) -> FloatPrimitive:
        return cls.float_mul(tensor, tensor)

    # ---- comparison --------------------------------------------------------------------------
    @required
    def float_equal(lhs: FloatPrimitive, rhs: FloatPrimitive) -> BoolPrimitive:
        """lhs == rhs."""

    @required
    def float_not_equal(lhs: FloatPrimitive, rhs: FloatPrimitive) -> BoolPrimitive:
        """lhs != rhs."""

    @required
    def float_greater(lhs: FloatPrimitive, rhs: FloatPrimitive) -> BoolPrimitive:
        """lhs > rhs."""

    @required
    def float_greater_equal(lhs: FloatPrimitive, rhs: FloatPrimitive) -> BoolPrimitive:
        """lhs >= rhs."""

    @required
    def float_lower(lhs: FloatPrimitive, rhs: FloatPrimitive) -> BoolPrimitive:
        """lhs < rhs."""

    @required
    def float_lower_equal(lhs: FloatPrimitive, rhs: FloatPrimitive) -> BoolPrimitive:
        """lhs <= rhs."""

    @required
    def float_equal_elem(lhs: FloatPrimitive, rhs: float) -> BoolPrimitive:
        """lhs == number."""

    @required
    def float_not_equal_elem(lhs: FloatPrimitive, rhs: float) -> BoolPrimitive:
        """lhs != number."""

    @required
    def float_greater_elem(lhs: FloatPrimitive, rhs: float) -> BoolPrimitive:
        """lhs > number."""

    @required
    def float_greater_equal_elem(lhs: FloatPrimitive, rhs: float) -> BoolPrimitive:
        """lhs >= number."""

    @required
    def float_lower_elem(lhs: FloatPrimitive, rhs: float) -> BoolPrimitive:
        """lhs < number."""

    @required
    def float_lower_equal_elem(lhs: FloatPrimitive, rhs: float) -> BoolPrimitive:
        """lhs <= number."""

    @required
    def float_is_nan(tensor: FloatPrimitive) -> BoolPrimitive:
        """True where NaN."""

    @required
    def float_is_inf(tensor: FloatPrimitive) -> BoolPrimitive:
        """True where +-inf."""

    # ---- reductions --------------------------------------------------------------------------
    @required
    def float_sum(tensor: FloatPrimitive) -> FloatPrimitive:
        """Sum of all elements, shape ()."""

    @required
    def float_sum_dim(tensor: FloatPrimitive, dim: int) -> FloatPrimitive:
        """Sum along ``dim``, kept with size 1."""

    @required
    def float_prod(tensor: FloatPrimitive) -> FloatPrimitive:
        """Product of all elements, shape ()."""

    @required
    def float_prod_dim(tensor: FloatPrimitive, dim: int) -> FloatPrimitive:
        """Product along ``dim``, kept with size 1."""

    @provided
    def float_mean(cls: type[Backend], tensor: FloatPrimitive) -> FloatPrimitive:
        n = _numel(tensor.shape)
        return cls.float_div_scalar(cls.float_sum(tensor), float(n) if n else float("nan"))

    @provided
    def float_mean_dim(cls: type[Backend], tensor: FloatPrimitive, dim: int) -> FloatPrimitive:
        n = tensor.shape[dim]
        return cls.float_div_scalar(cls.float_sum_dim(tensor, dim), float(n) if n else float("nan"))

    @required
    def float_max(tensor: FloatPrimitive) -> FloatPrimitive:
        """Largest element, shape () (NaN propagates)."""

    @required
    def float_min(tensor: FloatPrimitive) -> FloatPrimitive:
        """Smallest element, shape () (NaN propagates)."""

    @required
    def float_max_dim_with_indices(tensor: FloatPrimitive,
                                   dim: int) -> tuple[FloatPrimitive, IntPrimitive]:
        """Largest values along ``dim`` (kept) and the index of the first one."""

    @required
    def float_min_dim_with_indices(tensor: FloatPrimitive,
                                   dim: int) -> tuple[FloatPrimitive, IntPrimitive]:
        """Smallest values along ``dim`` (kept) and the index of the first one."""

    @provided
    def float_max_dim(cls: type[Backend], tensor: FloatPrimitive, dim: int) -> FloatPrimitive:
        return cls.float_max_dim_with_indices(tensor, dim)[0]

    @provided
    def float_min_dim(cls: type[Backend], tensor: FloatPrimitive, dim: int) -> FloatPrimitive:
        return cls.float_min_dim_with_indices(tensor, dim)[0]

    @provided
    def float_argmax(cls: type[Backend], tensor: FloatPrimitive, dim: int) -> IntPrimitive:
        return cls.float_max_dim_with_indices(tensor, dim)[1]

    @provided
    def float_argmin(cls: type[Backend], tensor: FloatPrimitive, dim: int) -> IntPrimitive:
        return cls.float_min_dim_with_indices(tensor, dim)[1]

    @required
    def float_cumsum(tensor: FloatPrimitive, dim: int) -> FloatPrimitive:
        """Running sum along ``dim``."""

    @required
    def float_cumprod(tensor: FloatPrimitive, dim: int) -> FloatPrimitive:
        """Running product along ``dim``."""

    @required
    def float_cummax_with_indices(tensor: FloatPrimitive,
                                  dim: int) -> tuple[FloatPrimitive, IntPrimitive]:
        """Running max along ``dim`` and, as torch.cummax, the index where it was reached
        (the latest index among ties)."""

    @required
    def float_cummin_with_indices(tensor: FloatPrimitive,
                                  dim: int) -> tuple[FloatPrimitive, IntPrimitive]:
        """Running min along ``dim`` and the index where it was reached (latest among ties)."""

    @provided
    def float_cummax(cls: type[Backend], tensor: FloatPrimitive, dim: int) -> FloatPrimitive:
        return cls.float_cummax_with_indices(tensor, dim)[0]

    @provided
    def float_cummin(cls: type[Backend], tensor: FloatPrimitive, dim: int) -> FloatPrimitive:
        return cls.float_cummin_with_indices(tensor, dim)[0]

    @required
    def float_sort_with_indices(tensor: FloatPrimitive, dim: int,
                                descending: bool) -> tuple[FloatPrimitive, IntPrimitive]:
        """Stable sort along ``dim`` with the source index of each value."""

    @provided
    def float_sort(cls: type[Backend], tensor: FloatPrimitive, dim: int,
                   descending: bool) -> FloatPrimitive:
        return cls.float_sort_with_indices(tensor, dim, descending)[0]

    @provided
    def float_argsort(cls: type[Backend], tensor: FloatPrimitive, dim: int,
                      descending: bool) -> IntPrimitive:
        return cls.float_sort_with_indices(tensor, dim, descending)[1]

    @provided
    def float_topk_with_indices(cls: type[Backend], tensor: FloatPrimitive, k: int, dim: int,
                                largest: bool) -> tuple[FloatPrimitive, IntPrimitive]:
        """The ``k`` largest (or smallest) values along ``dim``, sorted, with their indices."""
        values, indices = cls.float_sort_with_indices(tensor, dim, largest)
        window = tuple(slice(0, n) for n in tensor.shape[:dim]) + (slice(0, k),)
        return cls.float_slice(values, window), cls.int_slice(indices, window)

    @provided
    def float_any(cls: type[Backend], tensor: FloatPrimitive) -> BoolPrimitive:
        return cls.bool_any(cls.float_not_equal_elem(tensor, 0.0))

    @provided
    def float_any_dim(cls: type[Backend], tensor: FloatPrimitive, dim: int) -> BoolPrimitive:
        return cls.bool_any_dim(cls.float_not_equal_elem(tensor, 0.0), dim)

    @provided
    def float_all(cls: type[Backend], tensor: FloatPrimitive) -> BoolPrimitive:
        return cls.bool_all(cls.float_not_equal_elem(tensor, 0.0))

    @provided
    def float_all_dim(cls: type[Backend], tensor: FloatPrimitive, dim: int) -> BoolPrimitive:
        return cls.bool_all_dim(cls.float_not_equal_elem(tensor, 0.0), dim)

    # ---- autodiff hooks (a plain backend tracks nothing) --------------------------------------
    @provided
    def float_is_require_grad(cls: type[Backend], tensor: FloatPrimitive) -> bool:
        """Whether the primitive is a tracked leaf or depends on one."""
        return False

    @provided
    def float_detach(cls: type[Backend], tensor: FloatPrimitive) -> FloatPrimitive:
        """The same values, cut from any gradient graph."""
        return tensor


def _numel(shape: Shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def _dt(tensor: FloatPrimitive) -> DType:
    return dtype_of_numpy(tensor.dtype)
