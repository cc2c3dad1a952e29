# ruff: noqa: N803 - rules name the inner backend type ``B``, as Burn's generics do
"""Reductions and scans: sum, mean, prod, max/min, the ``*_with_indices`` family, cumsum and
cumprod. Sums, means and cumsum are linear (``LINEAR`` tangents); the products have exact
rules with zeros, in both modes."""

from __future__ import annotations

import math
from typing import Any

from burnpy.autodiff.rule_helpers import as_float, dtype_of, window, zeros
from burnpy.autodiff.rules import reverse, tangent
from burnpy.autodiff.rules.reverse import AutodiffOps
from burnpy.autodiff.rules.table import (
    LINEAR,
    Derivative,
    Grads,
    Inputs,
    Params,
    Parents,
    Saved,
    Tangents,
    indexed,
    unary,
    unary_params,
)
from burnpy.autodiff.rules.tangent import ForwardOps
from burnpy.ir.symbolic import to_float


def _reverse_cumsum(B: Any, x: Any, dim: int) -> Any:
    """``out[k] = sum(x[k:])`` along ``dim``."""
    return B.float_flip(B.float_cumsum(B.float_flip(x, (dim,)), dim), (dim,))


def _others_product(B: Any, x: Any, dim: int) -> Any:
    """``out[k] = prod(x[j] for j != k)`` along ``dim``, without division (exact with zeros):
    the running product before k times the running product after k."""
    n = x.shape[dim]
    if n == 0:
        return x
    ones = B.float_ones(x.shape[:dim] + (1,) + x.shape[dim + 1:], B.float_device(x), dtype_of(x))
    before = B.float_cumprod(B.float_cat([ones, B.float_slice(x, window(x.shape, dim, 0, n - 1))],
                                         dim), dim)
    tail = B.float_cat([B.float_slice(x, window(x.shape, dim, 1, n)), ones], dim)
    after = B.float_flip(B.float_cumprod(B.float_flip(tail, (dim,)), dim), (dim,))
    return B.float_mul(before, after)


def _cumprod_tangent_along(B: Any, x: Any, t: Any, dim: int) -> Any:
    """Tangent of ``cumprod(x)`` along ``dim``, exact with zeros (it never divides by a zero).

    Per slice, with z its first zero and ``u = x`` except ``u[z] = 1``: before z the tangent
    is ``cumprod(u) * cumsum(t / u)``; from z on only the term of ``t[z]`` survives,
    ``cumprod(u) * t[z]``, and zeros after z make it 0. ``w = x[z]`` (0) weighs the vanished
    terms so that the rule's own derivative stays right (second order).
    """
    is_zero = B.float_equal_elem(x, 0.0)
    zeros_so_far = B.float_cumsum(as_float(B, is_zero, x), dim)
    first_zero = B.bool_and(is_zero, B.float_equal_elem(zeros_so_far, 1.0))
    u = B.float_mask_fill(x, first_zero, 1.0)
    later_zero = B.float_equal_elem(u, 0.0)
    skipped = B.float_cumprod(u, dim)
    at_first = as_float(B, first_zero, x)
    w = B.float_sum_dim(B.float_mul(x, at_first), dim)
    t_first = B.float_sum_dim(B.float_mul(t, at_first), dim)
    from_zero = as_float(B, B.float_not_equal_elem(zeros_so_far, 0.0), x)
    # c is 1 before the first zero and w from it on.
    c = B.float_add_scalar(B.float_mul(B.float_sub_scalar(w, 1.0), from_zero), 1.0)
    ratio = B.float_cumsum(B.float_div(t, B.float_mask_fill(u, later_zero, 1.0)), dim)
    mixed = B.float_add(B.float_mul(ratio, c),
                        B.float_mul(t_first, B.float_add_scalar(B.float_neg(c), 1.0)))
    return B.float_mul(skipped, mixed)


# ---- sum, mean ------------------------------------------------------------------------------
def _sum_reverse(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                 parents: Parents) -> Grads:
    return (B.float_expand(grad, parents[0].shape),)


def _mean_reverse(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                  parents: Parents) -> Grads:
    shape = parents[0].shape
    count = shape[params[0]] if params else math.prod(shape)
    return (B.float_expand(B.float_div_scalar(grad, to_float(count)), shape),)


# ---- products -------------------------------------------------------------------------------
def _prod_reverse(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                  parents: Parents) -> Grads:
    x = inputs[0]
    flat = B.float_reshape(x, (math.prod(x.shape),))
    return (B.float_mul(grad, B.float_reshape(_others_product(B, flat, 0), x.shape)),)


def _prod_tangent(B: Any, tangents: Tangents, inputs: Inputs, output: Any,
                  params: Params) -> Any:
    """The last running product's tangent over the flattened tensor."""
    x = inputs[0]
    n = math.prod(x.shape)
    if n == 0:
        return None
    running = _cumprod_tangent_along(B, B.float_reshape(x, (n,)),
                                     B.float_reshape(tangents[0], (n,)), 0)
    return B.float_reshape(B.float_slice(running, (slice(n - 1, n),)), ())


def _prod_dim_reverse(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                      parents: Parents) -> Grads:
    return (B.float_mul(grad, _others_product(B, inputs[0], params[0])),)


def _prod_dim_tangent(B: Any, tangents: Tangents, inputs: Inputs, output: Any,
                      params: Params) -> Any:
    """The last running product's tangent along ``dim``."""
    x, dim = inputs[0], params[0]
    n = x.shape[dim]
    if n == 0:
        return None
    return B.float_slice(_cumprod_tangent_along(B, x, tangents[0], dim),
                         window(x.shape, dim, n - 1, n))


# ---- max, min and the ops returning indices -------------------------------------------------
def _extreme_reverse(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                     parents: Parents) -> Grads:
    """Full max/min: the gradient is shared evenly by every element equal to the result."""
    hits = as_float(B, B.float_equal(inputs[0], output), grad)
    return (B.float_mul(hits, B.float_div(grad, B.float_sum(hits))),)


def _extreme_tangent(B: Any, tangents: Tangents, inputs: Inputs, output: Any,
                     params: Params) -> Any:
    """Full max/min: the mean tangent of the elements equal to the result (torch's rule, the
    transpose of the even split the reverse rule makes among ties)."""
    x = inputs[0]
    hits = as_float(B, B.float_equal(x, output), x)
    return B.float_div(B.float_sum(B.float_mul(tangents[0], hits)), B.float_sum(hits))


def _picked_reverse(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                    parents: Parents) -> Grads:
    """Values picked at the recorded ``indices`` along ``dim``: the gradient goes back to them."""
    dim, indices = params
    return (B.float_scatter_add(zeros(B, parents[0].shape, grad), dim, indices, grad),)


def _picked_tangent(B: Any, tangents: Tangents, inputs: Inputs, output: Any,
                    params: Params) -> Any:
    """The input's tangent gathered at the indices."""
    return B.float_gather(tangents[0], params[0], params[1])


# ---- scans ----------------------------------------------------------------------------------
def _cumsum_reverse(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                    parents: Parents) -> Grads:
    return (_reverse_cumsum(B, grad, params[0]),)


def _cumprod_reverse(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                     parents: Parents) -> Grads:
    """Exact with zeros, without dividing by one. Per slice, with z its first zero, ``x = u``
    except ``u[z] = 1``, and ``w = x[z]`` (0, kept as a factor so the rule's own derivative
    stays right): ``y = cumprod(u) * m`` with ``m = w`` from z on, else 1, and ``dx[k] =
    sum(g * y from k on) / u[k]``, except ``dx[z] = sum(g * cumprod(u) from z on)`` and
    ``dx = 0`` at later zeros."""
    x, dim = inputs[0], params[0]
    is_zero = B.float_equal_elem(x, 0.0)
    zeros_so_far = B.float_cumsum(as_float(B, is_zero, x), dim)
    first_zero = B.bool_and(is_zero, B.float_equal_elem(zeros_so_far, 1.0))
    u = B.float_mask_fill(x, first_zero, 1.0)
    later_zero = B.float_equal_elem(u, 0.0)
    skipped = B.float_cumprod(u, dim)
    w = B.float_sum_dim(B.float_mul(x, as_float(B, first_zero, x)), dim)
    from_zero = as_float(B, B.float_not_equal_elem(zeros_so_far, 0.0), x)
    m = B.float_add_scalar(B.float_mul(B.float_sub_scalar(w, 1.0), from_zero), 1.0)
    spread = B.float_div(_reverse_cumsum(B, B.float_mul(grad, B.float_mul(skipped, m)), dim),
                         B.float_mask_fill(u, later_zero, 1.0))
    at_zero = _reverse_cumsum(B, B.float_mul(grad, skipped), dim)
    return (B.float_mask_where(B.float_mask_fill(spread, later_zero, 0.0), first_zero,
                               at_zero),)


def _cumprod_tangent(B: Any, tangents: Tangents, inputs: Inputs, output: Any,
                     params: Params) -> Any:
    return _cumprod_tangent_along(B, inputs[0], tangents[0], params[0])


#: name, reverse rule, tangent rule.
REDUCTION: tuple[Derivative, ...] = (
    unary("float_sum", _sum_reverse, LINEAR),
    unary_params("float_sum_dim", _sum_reverse, LINEAR),
    unary("float_mean", _mean_reverse, LINEAR),
    unary_params("float_mean_dim", _mean_reverse, LINEAR),
    unary("float_prod", _prod_reverse, _prod_tangent, saves_inputs=True),
    unary_params("float_prod_dim", _prod_dim_reverse, _prod_dim_tangent, saves_inputs=True),
    unary("float_max", _extreme_reverse, _extreme_tangent, saves_inputs=True, saves_output=True),
    unary("float_min", _extreme_reverse, _extreme_tangent, saves_inputs=True, saves_output=True),
    indexed("float_max_dim_with_indices", _picked_reverse, _picked_tangent),
    indexed("float_min_dim_with_indices", _picked_reverse, _picked_tangent),
    indexed("float_cummax_with_indices", _picked_reverse, _picked_tangent),
    indexed("float_cummin_with_indices", _picked_reverse, _picked_tangent),
    indexed("float_sort_with_indices", _picked_reverse, _picked_tangent),
    indexed("float_topk_with_indices", _picked_reverse, _picked_tangent, dim_arg=1),
    unary_params("float_cumsum", _cumsum_reverse, LINEAR),
    unary_params("float_cumprod", _cumprod_reverse, _cumprod_tangent, saves_inputs=True),
)


@reverse.generated(REDUCTION)
class AutodiffReductionOps(AutodiffOps):
    """The reductions and scans, recorded with their reverse rules."""


@tangent.generated(REDUCTION)
class ForwardReductionOps(ForwardOps):
    """The reductions and scans, with their tangents."""
