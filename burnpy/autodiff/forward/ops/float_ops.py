# ruff: noqa: N803, N806 - rules name the inner backend type ``B``, as Burn's generics do
"""Float ops of the ForwardAD backend: each op's primal and, next to it, its tangent rule.

A unary rule is ``rule(B, t, out, x, *params) -> tangent``, the convention of the table of
local partials (which generates the elementwise ops, ``burnpy.autodiff.derivatives``), written
with the inner backend ``B``'s ops only. Ops linear in their input (layout, indexing, sums)
push the tangent through the op itself; every op with a non-float result carries no tangent.
Provided ops not listed here (``float_max_dim``, ``float_sort``, ``float_cummax``...) run the
protocol's composition on this backend, which gives both the inner backend's values and the
right tangent.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from burnpy.autodiff.derivatives import without_derivative
from burnpy.autodiff.forward.ops._define import (
    ForwardOps,
    constant,
    indexed,
    linear_op,
    on_inner,
    on_inners,
    tangent_or_zeros,
    unary,
)
from burnpy.autodiff.forward.tensor import DeferredDualTensor, DualTensor
from burnpy.autodiff.rule_helpers import as_float, fit, window


def _cumprod_tangent(B: Any, x: Any, t: Any, dim: int) -> Any:
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


def _matmul_tangent(B: Any, a: Any, b: Any, ta: Any, tb: Any) -> Any:
    """ta @ b + a @ tb (one of the tangents may be None)."""
    if tb is None:
        return B.float_matmul(ta, b)
    if ta is None:
        return B.float_matmul(a, tb)
    return B.float_add(B.float_matmul(ta, b), B.float_matmul(a, tb))


def _matmul_shape(a: Any, b: Any) -> tuple[int, ...] | None:
    """The shape of ``a @ b`` (same ndim, same dtype, size-1 batch dims broadcasting), or
    None when the operands are not that simple case."""
    sa, sb = a.shape, b.shape
    if len(sa) != len(sb) or len(sa) < 2 or sa[-1] != sb[-2] or a.dtype != b.dtype:
        return None
    batch = []
    for m, n in zip(sa[:-2], sb[:-2], strict=True):
        if m != n and m != 1 and n != 1:
            return None
        batch.append(n if m == 1 else m)
    return (*batch, sa[-2], sb[-1])


@without_derivative(constant, on_inner, on_inners)
class ForwardFloatOps(ForwardOps):
    """The float op family (``cls.InnerBackend`` is B)."""

    # ---- creation, transfer, conversion -------------------------------------------------------
    float_from_data = constant("float_from_data", "A constant holding ``data``.")
    float_into_data = on_inner("float_into_data", "The primal's values on the host.")
    float_cast = linear_op("float_cast")
    float_to_device = linear_op("float_to_device")

    # ---- layout ---------------------------------------------------------------------------------
    float_reshape = linear_op("float_reshape")
    float_swap_dims = linear_op("float_swap_dims")
    float_permute = linear_op("float_permute")
    float_flip = linear_op("float_flip")
    float_expand = linear_op("float_expand")
    float_repeat_dim = linear_op("float_repeat_dim")
    float_unfold = linear_op("float_unfold")

    @classmethod
    def float_cat(cls, tensors: Sequence[DualTensor], dim: int) -> DualTensor:
        """Concatenated primals; missing tangents are zeros of their part."""
        B = cls.InnerBackend
        out = B.float_cat([t.primal for t in tensors], dim)
        if all(t.tangent is None for t in tensors):
            return DualTensor(out)
        return DualTensor(out, B.float_cat([tangent_or_zeros(B, t) for t in tensors], dim))

    # ---- indexing -------------------------------------------------------------------------------
    float_slice = linear_op("float_slice")
    float_gather = linear_op("float_gather")
    float_select = linear_op("float_select")

    @classmethod
    def float_slice_assign(cls, tensor: DualTensor, slices: tuple[slice, ...],
                           value: DualTensor) -> DualTensor:
        """The primals assigned, and the tangents assigned the same way."""
        B = cls.InnerBackend
        out = B.float_slice_assign(tensor.primal, slices, value.primal)
        if tensor.tangent is None and value.tangent is None:
            return DualTensor(out)
        return DualTensor(out, B.float_slice_assign(tangent_or_zeros(B, tensor), slices,
                                                    tangent_or_zeros(B, value)))

    @classmethod
    def _write(cls, name: str, additive: bool, tensor: DualTensor, dim: int, indices: Any,
               values: DualTensor) -> DualTensor:
        """scatter / scatter_add / select_assign / select_add: linear in (tensor, values), so
        the tangents are written the same way; an additive op leaves the tensor's tangent
        as it is when the values have none."""
        op = getattr(cls.InnerBackend, name)
        out = op(tensor.primal, dim, indices, values.primal)
        t_tensor, t_values = tensor.tangent, values.tangent
        if t_values is None and (t_tensor is None or additive):
            return DualTensor(out, t_tensor)
        B = cls.InnerBackend
        return DualTensor(out, op(tangent_or_zeros(B, tensor), dim, indices,
                                  tangent_or_zeros(B, values)))

    @classmethod
    def float_scatter(cls, tensor: DualTensor, dim: int, indices: Any,
                      values: DualTensor) -> DualTensor:
        return cls._write("float_scatter", False, tensor, dim, indices, values)

    @classmethod
    def float_scatter_add(cls, tensor: DualTensor, dim: int, indices: Any,
                          values: DualTensor) -> DualTensor:
        return cls._write("float_scatter_add", True, tensor, dim, indices, values)

    @classmethod
    def float_select_assign(cls, tensor: DualTensor, dim: int, indices: Any,
                            values: DualTensor) -> DualTensor:
        return cls._write("float_select_assign", False, tensor, dim, indices, values)

    @classmethod
    def float_select_add(cls, tensor: DualTensor, dim: int, indices: Any,
                         values: DualTensor) -> DualTensor:
        return cls._write("float_select_add", True, tensor, dim, indices, values)

    @classmethod
    def float_mask_where(cls, tensor: DualTensor, mask: Any, value: DualTensor) -> DualTensor:
        """``value`` where ``mask``, else ``tensor``: the tangents are picked the same way."""
        B = cls.InnerBackend
        out = B.float_mask_where(tensor.primal, mask, value.primal)
        if tensor.tangent is None and value.tangent is None:
            return DualTensor(out)
        return DualTensor(out, B.float_mask_where(tangent_or_zeros(B, tensor), mask,
                                                  tangent_or_zeros(B, value)))

    # ---- matrix product -------------------------------------------------------------------------
    @classmethod
    def float_matmul(cls, lhs: DualTensor, rhs: DualTensor) -> DualTensor:
        """``a @ b`` with tangent ``ta @ b + a @ tb``. With a tangent, the primal is deferred
        until read (the weight gradients of a forward-over-reverse HVP are read only for
        their tangents); operands B would reject or promote run eagerly."""
        B = cls.InnerBackend
        a, b = lhs.primal, rhs.primal
        ta, tb = lhs.tangent, rhs.tangent
        if ta is None and tb is None:
            return DualTensor(B.float_matmul(a, b))
        shape = _matmul_shape(a, b)
        if shape is None:
            out = B.float_matmul(a, b)
            return DualTensor(out, fit(B, _matmul_tangent(B, a, b, ta, tb), out))
        return DeferredDualTensor(lambda: B.float_matmul(a, b), shape, a.dtype,
                                  _matmul_tangent(B, a, b, ta, tb))


    # ---- reductions -----------------------------------------------------------------------------
    float_sum = linear_op("float_sum")
    float_sum_dim = linear_op("float_sum_dim")
    float_mean = linear_op("float_mean")
    float_mean_dim = linear_op("float_mean_dim")
    float_cumsum = linear_op("float_cumsum")

    @staticmethod
    def _prod_tangent(B: Any, t: Any, out: Any, x: Any) -> Any:
        """The last running product's tangent over the flattened tensor."""
        n = math.prod(x.shape)
        if n == 0:
            return None
        running = _cumprod_tangent(B, B.float_reshape(x, (n,)), B.float_reshape(t, (n,)), 0)
        return B.float_reshape(B.float_slice(running, (slice(n - 1, n),)), ())

    float_prod = unary("float_prod", _prod_tangent)

    @staticmethod
    def _prod_dim_tangent(B: Any, t: Any, out: Any, x: Any, dim: int) -> Any:
        """The last running product's tangent along ``dim``."""
        n = x.shape[dim]
        if n == 0:
            return None
        return B.float_slice(_cumprod_tangent(B, x, t, dim), window(x.shape, dim, n - 1, n))

    float_prod_dim = unary("float_prod_dim", _prod_dim_tangent)

    @staticmethod
    def _cumprod_rule(B: Any, t: Any, out: Any, x: Any, dim: int) -> Any:
        return _cumprod_tangent(B, x, t, dim)

    float_cumprod = unary("float_cumprod", _cumprod_rule)

    @staticmethod
    def _extreme_tangent(B: Any, t: Any, out: Any, x: Any) -> Any:
        """Full max/min: the mean tangent of the elements equal to the result (torch's rule,
        the transpose of the even split the reverse rule makes among ties)."""
        hits = as_float(B, B.float_equal(x, out), x)
        return B.float_div(B.float_sum(B.float_mul(t, hits)), B.float_sum(hits))

    float_max = unary("float_max", _extreme_tangent)
    float_min = unary("float_min", _extreme_tangent)
    float_max_dim_with_indices = indexed("float_max_dim_with_indices")
    float_min_dim_with_indices = indexed("float_min_dim_with_indices")
    float_cummax_with_indices = indexed("float_cummax_with_indices")
    float_cummin_with_indices = indexed("float_cummin_with_indices")
    float_sort_with_indices = indexed("float_sort_with_indices")
    float_topk_with_indices = indexed("float_topk_with_indices", dim_arg=1)

    # ---- gradient tracking (a forward-mode level tracks no graph of its own) ------------------
    @classmethod
    def float_is_require_grad(cls, tensor: DualTensor) -> bool:
        """Whether the primal is tracked by a reverse-mode level below this one."""
        return cls.InnerBackend.float_is_require_grad(tensor.primal)

    @staticmethod
    def float_detach(tensor: DualTensor) -> DualTensor:
        """The primal without its tangent (levels below keep their own tracking, as
        ``Autodiff``'s detach leaves the inner primitive alone)."""
        return tensor if tensor.tangent is None else DualTensor(tensor.primal)

