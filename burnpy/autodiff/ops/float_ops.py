# ruff: noqa: N803, N806 - rules name the inner backend type ``B``, as Burn's generics do
"""Float ops of the Autodiff backend: each op's recording and, next to it, its backward rule.

A rule is ``rule(B, grad, inputs, output, params, parents) -> one gradient per float input``
(None for untracked inputs), written with the inner backend ``B``'s ops only, so rules are
themselves differentiable when ``B`` is an Autodiff backend. Gradients may keep the output's
broadcast shape: the graph un-broadcasts them once, centrally. Every op here is memory-bound
except ``float_matmul``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from burnpy.autodiff.derivatives import without_derivative
from burnpy.autodiff.ops._define import (
    AutodiffOps,
    Params,
    Parents,
    Rule,
    Saved,
    any_tracked,
    binary,
    constant,
    declare,
    indexed,
    indexed_write,
    on_inner,
    on_inners,
    unary,
    unary_params,
)
from burnpy.autodiff.rule_helpers import as_float, dtype_of, window, zeros
from burnpy.autodiff.tensor import AutodiffTensor
from burnpy.backend.dtype import DType


def _reverse_cumsum(B: Any, x: Any, dim: int) -> Any:
    """``out[k] = sum(x[k:])`` along ``dim``."""
    return B.float_flip(B.float_cumsum(B.float_flip(x, (dim,)), dim), (dim,))


def _pad_to(B: Any, grad: Any, shape: tuple[int, ...]) -> Any:
    """``grad`` placed at the origin of zeros of ``shape`` (for values larger than indices)."""
    if tuple(grad.shape) == shape:
        return grad
    return B.float_slice_assign(zeros(B, shape, grad), tuple(slice(0, n) for n in grad.shape),
                                grad)


def _indexed_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                      parents: Parents) -> Rule:
    """Values picked at saved ``indices`` along ``dim``: the gradient goes back to them."""
    dim, indices = params
    return (B.float_scatter_add(zeros(B, parents[0].shape, grad), dim, indices, grad),)


def _indexed_forward(B: Any, inputs: tuple[Any, ...], params: tuple[Any, ...]) -> Any:
    """The values at the saved indices, which is what max/sort/topk... returned."""
    return B.float_gather(inputs[0], params[0], params[1])


def _indexed_op(name: str) -> Any:
    return declare(name, _indexed_backward, forward=_indexed_forward)


@without_derivative(constant, on_inner, on_inners)
class AutodiffFloatOps(AutodiffOps):
    """The float op family (``cls.InnerBackend`` is B, ``cls.record`` the strategy's)."""

    # ---- transfer, conversion ------------------------------------------------------------------

    @staticmethod
    def _cast_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                       parents: Parents) -> Rule:
        return (B.float_cast(grad, params[1]),)

    _CAST = declare("float_cast", _cast_backward,
                    forward=lambda B, inputs, params: B.float_cast(inputs[0], params[0]))

    @classmethod
    def float_cast(cls, tensor: AutodiffTensor, dtype: DType) -> AutodiffTensor:
        out = cls.InnerBackend.float_cast(tensor.primitive, dtype)
        if tensor.node is None:
            return AutodiffTensor(out)
        return cls.record(cls._CAST, out, (tensor,), (dtype, dtype_of(tensor)))

    @staticmethod
    def _to_device_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                            parents: Parents) -> Rule:
        return (B.float_to_device(grad, params[1]),)

    _TO_DEVICE = declare("float_to_device", _to_device_backward,
                         forward=lambda B, inputs, params: B.float_to_device(inputs[0], params[0]))

    @classmethod
    def float_to_device(cls, tensor: AutodiffTensor, device: Any) -> AutodiffTensor:
        B = cls.InnerBackend
        out = B.float_to_device(tensor.primitive, device)
        if tensor.node is None:
            return AutodiffTensor(out)
        return cls.record(cls._TO_DEVICE, out, (tensor,),
                          (device, B.float_device(tensor.primitive)))

    # ---- layout ---------------------------------------------------------------------------------
    @staticmethod
    def _reshape_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                          parents: Parents) -> Rule:
        return (B.float_reshape(grad, parents[0].shape),)

    float_reshape = unary_params(declare("float_reshape", _reshape_backward))

    @staticmethod
    def _swap_dims_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                            parents: Parents) -> Rule:
        return (B.float_swap_dims(grad, params[0], params[1]),)

    float_swap_dims = unary_params(declare("float_swap_dims", _swap_dims_backward))

    @staticmethod
    def _permute_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                          parents: Parents) -> Rule:
        axes = params[0]
        inverse = [0] * len(axes)
        for i, a in enumerate(axes):
            inverse[a] = i
        return (B.float_permute(grad, tuple(inverse)),)

    float_permute = unary_params(declare("float_permute", _permute_backward))

    @staticmethod
    def _flip_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                       parents: Parents) -> Rule:
        return (B.float_flip(grad, params[0]),)

    float_flip = unary_params(declare("float_flip", _flip_backward))

    @staticmethod
    def _expand_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                         parents: Parents) -> Rule:
        return (grad,)  # the graph sums the stretched dims away

    float_expand = unary_params(declare("float_expand", _expand_backward))

    @staticmethod
    def _repeat_dim_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                             parents: Parents) -> Rule:
        dim, times = params
        shape = parents[0].shape
        split = B.float_reshape(grad, shape[:dim] + (times, shape[dim]) + shape[dim + 1:])
        return (B.float_reshape(B.float_sum_dim(split, dim), shape),)

    float_repeat_dim = unary_params(declare("float_repeat_dim", _repeat_dim_backward))

    @staticmethod
    def _cat_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                      parents: Parents) -> Rule:
        dim, sizes = params
        out, start = [], 0
        for parent, size in zip(parents, sizes, strict=True):
            out.append(None if parent is None else
                       B.float_slice(grad, window(grad.shape, dim, start, start + size)))
            start += size
        return tuple(out)

    _CAT = declare("float_cat", _cat_backward,
                   forward=lambda B, inputs, params: B.float_cat(list(inputs), params[0]))

    @classmethod
    def float_cat(cls, tensors: Sequence[AutodiffTensor], dim: int) -> AutodiffTensor:
        tensors = tuple(tensors)
        out = cls.InnerBackend.float_cat([t.primitive for t in tensors], dim)
        if not any_tracked(tensors):
            return AutodiffTensor(out)
        return cls.record(cls._CAT, out, tensors, (dim, tuple(t.shape[dim] for t in tensors)))

    @staticmethod
    def _unfold_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                         parents: Parents) -> Rule:
        dim, size, step = params
        shape = parents[0].shape
        windows, nd = grad.shape[dim], len(grad.shape)
        # Put each window's elements right after its window index, then add every element
        # back at its source position ``window * step + offset``.
        axes = list(range(nd - 1))
        axes.insert(dim + 1, nd - 1)
        flat = B.float_reshape(B.float_permute(grad, tuple(axes)),
                               shape[:dim] + (windows * size,) + shape[dim + 1:])
        device = B.float_device(grad)
        starts = B.int_reshape(B.int_arange(0, windows * step, step, device, B.int_dtype),
                               (windows, 1))
        offsets = B.int_reshape(B.int_arange(0, size, 1, device, B.int_dtype), (1, size))
        positions = B.int_reshape(B.int_add(starts, offsets), (windows * size,))
        return (B.float_select_add(zeros(B, shape, grad), dim, positions, flat),)

    float_unfold = unary_params(declare("float_unfold", _unfold_backward))

    # ---- indexing -------------------------------------------------------------------------------
    @staticmethod
    def _slice_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                        parents: Parents) -> Rule:
        return (B.float_slice_assign(zeros(B, parents[0].shape, grad), params[0], grad),)

    float_slice = unary_params(declare("float_slice", _slice_backward))

    @staticmethod
    def _slice_assign_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                               parents: Parents) -> Rule:
        slices, value_shape = params
        return (None if parents[0] is None else
                B.float_slice_assign(grad, slices, zeros(B, value_shape, grad)),
                None if parents[1] is None else B.float_slice(grad, slices))

    _SLICE_ASSIGN = declare(
        "float_slice_assign", _slice_assign_backward,
        forward=lambda B, inputs, params: B.float_slice_assign(inputs[0], params[0], inputs[1]))

    @classmethod
    def float_slice_assign(cls, tensor: AutodiffTensor, slices: tuple[slice, ...],
                           value: AutodiffTensor) -> AutodiffTensor:
        out = cls.InnerBackend.float_slice_assign(tensor.primitive, slices, value.primitive)
        if tensor.node is None and value.node is None:
            return AutodiffTensor(out)
        return cls.record(cls._SLICE_ASSIGN, out, (tensor, value), (slices, value.shape))

    @staticmethod
    def _gather_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                         parents: Parents) -> Rule:
        dim, indices = params
        return (B.float_scatter_add(zeros(B, parents[0].shape, grad), dim, indices, grad),)

    float_gather = unary_params(declare("float_gather", _gather_backward))

    @staticmethod
    def _scatter_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                          parents: Parents) -> Rule:
        dim, indices = params
        return (None if parents[0] is None else
                B.float_scatter(grad, dim, indices, zeros(B, indices.shape, grad)),
                None if parents[1] is None else
                _pad_to(B, B.float_gather(grad, dim, indices), parents[1].shape))

    float_scatter = indexed_write("float_scatter", _scatter_backward)

    @staticmethod
    def _scatter_add_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                              parents: Parents) -> Rule:
        dim, indices = params
        return (grad, None if parents[1] is None else
                _pad_to(B, B.float_gather(grad, dim, indices), parents[1].shape))

    float_scatter_add = indexed_write("float_scatter_add", _scatter_add_backward)

    @staticmethod
    def _select_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                         parents: Parents) -> Rule:
        dim, indices = params
        return (B.float_select_add(zeros(B, parents[0].shape, grad), dim, indices, grad),)

    float_select = unary_params(declare("float_select", _select_backward))

    @staticmethod
    def _select_assign_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                                parents: Parents) -> Rule:
        dim, indices = params
        picked = B.float_select(grad, dim, indices)
        return (None if parents[0] is None else
                B.float_select_assign(grad, dim, indices, zeros(B, picked.shape, grad)),
                None if parents[1] is None else picked)

    float_select_assign = indexed_write("float_select_assign", _select_assign_backward)

    @staticmethod
    def _select_add_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                             parents: Parents) -> Rule:
        dim, indices = params
        return (grad, None if parents[1] is None else B.float_select(grad, dim, indices))

    float_select_add = indexed_write("float_select_add", _select_add_backward)

    @staticmethod
    def _mask_where_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                             parents: Parents) -> Rule:
        mask = params[0]
        return (None if parents[0] is None else B.float_mask_fill(grad, mask, 0.0),
                None if parents[1] is None else B.float_mask_fill(grad, B.bool_not(mask), 0.0))

    _MASK_WHERE = declare("float_mask_where", _mask_where_backward,
                          forward=lambda B, inputs, params:
                          B.float_mask_where(inputs[0], params[0], inputs[1]))

    @classmethod
    def float_mask_where(cls, tensor: AutodiffTensor, mask: Any,
                         value: AutodiffTensor) -> AutodiffTensor:
        out = cls.InnerBackend.float_mask_where(tensor.primitive, mask, value.primitive)
        if tensor.node is None and value.node is None:
            return AutodiffTensor(out)
        return cls.record(cls._MASK_WHERE, out, (tensor, value), (mask,))

    # ---- matrix product -------------------------------------------------------------------------
    @staticmethod
    def _matmul_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                         parents: Parents) -> Rule:
        lhs, rhs = inputs
        nd = len(grad.shape)
        return (None if parents[0] is None else
                B.float_matmul(grad, B.float_swap_dims(rhs, nd - 2, nd - 1)),
                None if parents[1] is None else
                B.float_matmul(B.float_swap_dims(lhs, nd - 2, nd - 1), grad))

    float_matmul = binary(declare("float_matmul", _matmul_backward, saves_inputs=True,
                                  compute_bound=True))


    # ---- reductions -----------------------------------------------------------------------------
    @staticmethod
    def _sum_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                      parents: Parents) -> Rule:
        return (B.float_expand(grad, parents[0].shape),)

    float_sum = unary(declare("float_sum", _sum_backward))
    float_sum_dim = unary_params(declare("float_sum_dim", _sum_backward))

    @staticmethod
    def _mean_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                       parents: Parents) -> Rule:
        shape = parents[0].shape
        count = shape[params[0]] if params else math.prod(shape)
        return (B.float_expand(B.float_div_scalar(grad, float(count)), shape),)

    float_mean = unary(declare("float_mean", _mean_backward))
    float_mean_dim = unary_params(declare("float_mean_dim", _mean_backward))

    @staticmethod
    def _prod_dim_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                           parents: Parents) -> Rule:
        return (B.float_mul(grad, _others_product(B, inputs[0], params[0])),)

    float_prod_dim = unary_params(declare("float_prod_dim", _prod_dim_backward,
                                          saves_inputs=True))

    @staticmethod
    def _prod_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                       parents: Parents) -> Rule:
        x = inputs[0]
        flat = B.float_reshape(x, (math.prod(x.shape),))
        return (B.float_mul(grad, B.float_reshape(_others_product(B, flat, 0), x.shape)),)

    float_prod = unary(declare("float_prod", _prod_backward, saves_inputs=True))

    @staticmethod
    def _extreme_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                          parents: Parents) -> Rule:
        """Full max/min: the gradient is shared evenly by every element equal to the result."""
        hits = as_float(B, B.float_equal(inputs[0], output), grad)
        return (B.float_mul(hits, B.float_div(grad, B.float_sum(hits))),)

    float_max = unary(declare("float_max", _extreme_backward, saves_inputs=True,
                              saves_output=True))
    float_min = unary(declare("float_min", _extreme_backward, saves_inputs=True,
                              saves_output=True))
    float_max_dim_with_indices = indexed(_indexed_op("float_max_dim_with_indices"))
    float_min_dim_with_indices = indexed(_indexed_op("float_min_dim_with_indices"))
    float_cummax_with_indices = indexed(_indexed_op("float_cummax_with_indices"))
    float_cummin_with_indices = indexed(_indexed_op("float_cummin_with_indices"))
    float_sort_with_indices = indexed(_indexed_op("float_sort_with_indices"))
    float_topk_with_indices = indexed(_indexed_op("float_topk_with_indices"), dim_arg=1)

    @staticmethod
    def _cumsum_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                         parents: Parents) -> Rule:
        return (_reverse_cumsum(B, grad, params[0]),)

    float_cumsum = unary_params(declare("float_cumsum", _cumsum_backward))

    @staticmethod
    def _cumprod_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                          parents: Parents) -> Rule:
        """Exact with zeros, without dividing by one. Per slice, with z its first zero,
        ``x = u`` except ``u[z] = 1``, and ``w = x[z]`` (0, kept as a factor so the rule's own
        derivative stays right): ``y = cumprod(u) * m`` with ``m = w`` from z on, else 1, and
        ``dx[k] = sum(g * y from k on) / u[k]``, except ``dx[z] = sum(g * cumprod(u) from z
        on)`` and ``dx = 0`` at later zeros."""
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

    float_cumprod = unary_params(declare("float_cumprod", _cumprod_backward, saves_inputs=True))


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
