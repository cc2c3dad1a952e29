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

from burnpy.autodiff.ops._define import (
    Params,
    Parents,
    Rule,
    Saved,
    any_tracked,
    as_float,
    binary,
    declare,
    dtype_of,
    indexed,
    indexed_write,
    on_primitive,
    on_primitives,
    unary,
    unary_params,
    untracked,
    zeros,
)
from burnpy.autodiff.tensor import AutodiffTensor
from burnpy.backend.dtype import DType

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _zero_grad(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
               parents: Parents) -> Rule:
    """Piecewise-constant ops (sign, round, floor, ceil, trunc): zero gradient."""
    return (zeros(B, grad.shape, grad),)


def _reverse_cumsum(B: Any, x: Any, dim: int) -> Any:
    """``out[k] = sum(x[k:])`` along ``dim``."""
    return B.float_flip(B.float_cumsum(B.float_flip(x, (dim,)), dim), (dim,))


def _window(shape: tuple[int, ...], dim: int, start: int, stop: int) -> tuple[slice, ...]:
    """Slices taking ``start:stop`` of ``dim`` and every earlier dim whole."""
    return tuple(slice(0, n) for n in shape[:dim]) + (slice(start, stop),)


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


class AutodiffFloatOps:
    """The float op family (``cls.InnerBackend`` is B, ``cls.record`` the strategy's)."""

    # ---- creation, transfer, conversion -------------------------------------------------------
    float_empty = untracked("float_empty", "Uninitialized constant storage.")
    float_full = untracked("float_full", "A constant filled tensor.")
    float_zeros = untracked("float_zeros", "A constant of zeros.")
    float_ones = untracked("float_ones", "A constant of ones.")
    float_random = untracked("float_random", "Constant random samples.")
    float_device = on_primitive("float_device", "The device of the inner primitive.")
    float_into_int = on_primitive("float_into_int", "Truncation into an untracked int tensor.")

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
                       B.float_slice(grad, _window(grad.shape, dim, start, start + size)))
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

    @staticmethod
    def _mask_fill_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                            parents: Parents) -> Rule:
        return (B.float_mask_fill(grad, params[0], 0.0),)

    float_mask_fill = unary_params(declare("float_mask_fill", _mask_fill_backward))

    # ---- arithmetic -----------------------------------------------------------------------------
    @staticmethod
    def _add_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                      parents: Parents) -> Rule:
        return grad, grad

    float_add = binary(declare("float_add", _add_backward))

    @staticmethod
    def _sub_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                      parents: Parents) -> Rule:
        return grad, None if parents[1] is None else B.float_neg(grad)

    float_sub = binary(declare("float_sub", _sub_backward))

    @staticmethod
    def _mul_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                      parents: Parents) -> Rule:
        lhs, rhs = inputs
        return (None if parents[0] is None else B.float_mul(grad, rhs),
                None if parents[1] is None else B.float_mul(grad, lhs))

    float_mul = binary(declare("float_mul", _mul_backward, saves_inputs=True))

    @staticmethod
    def _div_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                      parents: Parents) -> Rule:
        lhs, rhs = inputs
        return (None if parents[0] is None else B.float_div(grad, rhs),
                None if parents[1] is None else
                B.float_neg(B.float_div(B.float_mul(grad, lhs), B.float_mul(rhs, rhs))))

    float_div = binary(declare("float_div", _div_backward, saves_inputs=True))

    @staticmethod
    def _remainder_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                            parents: Parents) -> Rule:
        lhs, rhs = inputs
        return (grad, None if parents[1] is None else
                B.float_neg(B.float_mul(grad, B.float_floor(B.float_div(lhs, rhs)))))

    float_remainder = binary(declare("float_remainder", _remainder_backward, saves_inputs=True))

    @staticmethod
    def _identity_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                           parents: Parents) -> Rule:
        return (grad,)

    float_add_scalar = unary_params(declare("float_add_scalar", _identity_backward))
    float_sub_scalar = unary_params(declare("float_sub_scalar", _identity_backward))
    float_remainder_scalar = unary_params(declare("float_remainder_scalar", _identity_backward))

    @staticmethod
    def _mul_scalar_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                             parents: Parents) -> Rule:
        return (B.float_mul_scalar(grad, params[0]),)

    float_mul_scalar = unary_params(declare("float_mul_scalar", _mul_scalar_backward))

    @staticmethod
    def _div_scalar_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                             parents: Parents) -> Rule:
        return (B.float_div_scalar(grad, params[0]),)

    float_div_scalar = unary_params(declare("float_div_scalar", _div_scalar_backward))

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

    @staticmethod
    def _neg_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                      parents: Parents) -> Rule:
        return (B.float_neg(grad),)

    float_neg = unary(declare("float_neg", _neg_backward))

    @staticmethod
    def _recip_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                        parents: Parents) -> Rule:
        return (B.float_neg(B.float_mul(grad, B.float_mul(output, output))),)

    float_recip = unary(declare("float_recip", _recip_backward, saves_output=True))

    @staticmethod
    def _abs_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                      parents: Parents) -> Rule:
        return (B.float_mul(grad, B.float_sign(inputs[0])),)

    float_abs = unary(declare("float_abs", _abs_backward, saves_inputs=True))
    float_sign = unary(declare("float_sign", _zero_grad))
    float_round = unary(declare("float_round", _zero_grad))
    float_floor = unary(declare("float_floor", _zero_grad))
    float_ceil = unary(declare("float_ceil", _zero_grad))
    float_trunc = unary(declare("float_trunc", _zero_grad))

    @staticmethod
    def _exp_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                      parents: Parents) -> Rule:
        return (B.float_mul(grad, output),)

    float_exp = unary(declare("float_exp", _exp_backward, saves_output=True))

    @staticmethod
    def _expm1_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                        parents: Parents) -> Rule:
        return (B.float_mul(grad, B.float_add_scalar(output, 1.0)),)

    float_expm1 = unary(declare("float_expm1", _expm1_backward, saves_output=True))

    @staticmethod
    def _log_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                      parents: Parents) -> Rule:
        return (B.float_div(grad, inputs[0]),)

    float_log = unary(declare("float_log", _log_backward, saves_inputs=True))

    @staticmethod
    def _log1p_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                        parents: Parents) -> Rule:
        return (B.float_div(grad, B.float_add_scalar(inputs[0], 1.0)),)

    float_log1p = unary(declare("float_log1p", _log1p_backward, saves_inputs=True))

    @staticmethod
    def _sqrt_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                       parents: Parents) -> Rule:
        return (B.float_div(grad, B.float_mul_scalar(output, 2.0)),)

    float_sqrt = unary(declare("float_sqrt", _sqrt_backward, saves_output=True))

    @staticmethod
    def _square_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                         parents: Parents) -> Rule:
        return (B.float_mul(grad, B.float_mul_scalar(inputs[0], 2.0)),)

    float_square = unary(declare("float_square", _square_backward, saves_inputs=True))

    @staticmethod
    def _powf_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                       parents: Parents) -> Rule:
        base, exponent = inputs
        grad_base = grad_exponent = None
        if parents[0] is not None:
            # exponent * base ** (exponent - 1), zero where the exponent is 0 (torch's rule).
            slope = B.float_mul(exponent, B.float_powf(base, B.float_sub_scalar(exponent, 1.0)))
            slope = B.float_mask_fill(slope, B.float_equal_elem(exponent, 0.0), 0.0)
            grad_base = B.float_mul(grad, slope)
        if parents[1] is not None:
            # base ** exponent * log(base), zero where base == 0 and exponent >= 0.
            slope = B.float_mul(output, B.float_log(base))
            flat = B.bool_and(B.float_equal_elem(base, 0.0),
                              B.float_greater_equal_elem(exponent, 0.0))
            grad_exponent = B.float_mul(grad, B.float_mask_fill(slope, flat, 0.0))
        return grad_base, grad_exponent

    float_powf = binary(declare("float_powf", _powf_backward, saves_inputs=True,
                                saves_output=True))

    @staticmethod
    def _powf_scalar_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                              parents: Parents) -> Rule:
        exponent = params[0]
        if exponent == 0:
            return (zeros(B, grad.shape, grad),)
        slope = B.float_mul_scalar(B.float_powf_scalar(inputs[0], exponent - 1.0), exponent)
        return (B.float_mul(grad, slope),)

    float_powf_scalar = unary_params(declare("float_powf_scalar", _powf_scalar_backward,
                                             saves_inputs=True))

    @staticmethod
    def _sin_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                      parents: Parents) -> Rule:
        return (B.float_mul(grad, B.float_cos(inputs[0])),)

    float_sin = unary(declare("float_sin", _sin_backward, saves_inputs=True))

    @staticmethod
    def _cos_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                      parents: Parents) -> Rule:
        return (B.float_mul(grad, B.float_neg(B.float_sin(inputs[0]))),)

    float_cos = unary(declare("float_cos", _cos_backward, saves_inputs=True))

    @staticmethod
    def _tan_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                      parents: Parents) -> Rule:
        return (B.float_mul(grad, B.float_add_scalar(B.float_mul(output, output), 1.0)),)

    float_tan = unary(declare("float_tan", _tan_backward, saves_output=True))

    @staticmethod
    def _asin_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                       parents: Parents) -> Rule:
        return (B.float_div(grad, B.float_sqrt(_one_minus_square(B, inputs[0]))),)

    float_asin = unary(declare("float_asin", _asin_backward, saves_inputs=True))

    @staticmethod
    def _acos_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                       parents: Parents) -> Rule:
        return (B.float_neg(B.float_div(grad, B.float_sqrt(_one_minus_square(B, inputs[0])))),)

    float_acos = unary(declare("float_acos", _acos_backward, saves_inputs=True))

    @staticmethod
    def _atan_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                       parents: Parents) -> Rule:
        x = inputs[0]
        return (B.float_div(grad, B.float_add_scalar(B.float_mul(x, x), 1.0)),)

    float_atan = unary(declare("float_atan", _atan_backward, saves_inputs=True))

    @staticmethod
    def _sinh_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                       parents: Parents) -> Rule:
        return (B.float_mul(grad, B.float_cosh(inputs[0])),)

    float_sinh = unary(declare("float_sinh", _sinh_backward, saves_inputs=True))

    @staticmethod
    def _cosh_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                       parents: Parents) -> Rule:
        return (B.float_mul(grad, B.float_sinh(inputs[0])),)

    float_cosh = unary(declare("float_cosh", _cosh_backward, saves_inputs=True))

    @staticmethod
    def _tanh_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                       parents: Parents) -> Rule:
        return (B.float_mul(grad, _one_minus_square(B, output)),)

    float_tanh = unary(declare("float_tanh", _tanh_backward, saves_output=True))

    @staticmethod
    def _asinh_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                        parents: Parents) -> Rule:
        x = inputs[0]
        return (B.float_div(grad, B.float_sqrt(B.float_add_scalar(B.float_mul(x, x), 1.0))),)

    float_asinh = unary(declare("float_asinh", _asinh_backward, saves_inputs=True))

    @staticmethod
    def _acosh_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                        parents: Parents) -> Rule:
        x = inputs[0]
        return (B.float_div(grad, B.float_sqrt(B.float_sub_scalar(B.float_mul(x, x), 1.0))),)

    float_acosh = unary(declare("float_acosh", _acosh_backward, saves_inputs=True))

    @staticmethod
    def _atanh_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                        parents: Parents) -> Rule:
        return (B.float_div(grad, _one_minus_square(B, inputs[0])),)

    float_atanh = unary(declare("float_atanh", _atanh_backward, saves_inputs=True))

    @staticmethod
    def _atan2_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                        parents: Parents) -> Rule:
        y, x = inputs
        scaled = B.float_div(grad, B.float_add(B.float_mul(x, x), B.float_mul(y, y)))
        return (None if parents[0] is None else B.float_mul(scaled, x),
                None if parents[1] is None else B.float_neg(B.float_mul(scaled, y)))

    float_atan2 = binary(declare("float_atan2", _atan2_backward, saves_inputs=True))

    @staticmethod
    def _erf_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                      parents: Parents) -> Rule:
        x = inputs[0]
        density = B.float_mul_scalar(B.float_exp(B.float_neg(B.float_mul(x, x))),
                                     _TWO_OVER_SQRT_PI)
        return (B.float_mul(grad, density),)

    float_erf = unary(declare("float_erf", _erf_backward, saves_inputs=True))

    @staticmethod
    def _clamp_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                        parents: Parents) -> Rule:
        """torch's boundary rule: the gradient passes where min <= x <= max."""
        x = inputs[0]
        low, high = params
        inside = None
        if low is not None:
            inside = B.float_greater_equal_elem(x, low)
        if high is not None:
            below = B.float_lower_equal_elem(x, high)
            inside = below if inside is None else B.bool_and(inside, below)
        return (B.float_mask_fill(grad, B.bool_not(inside), 0.0),)

    float_clamp = unary_params(declare("float_clamp", _clamp_backward, saves_inputs=True))

    @staticmethod
    def _clamp_min_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                            parents: Parents) -> Rule:
        return (B.float_mask_fill(grad, B.float_lower_elem(inputs[0], params[0]), 0.0),)

    float_clamp_min = unary_params(declare("float_clamp_min", _clamp_min_backward,
                                           saves_inputs=True))

    @staticmethod
    def _clamp_max_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                            parents: Parents) -> Rule:
        return (B.float_mask_fill(grad, B.float_greater_elem(inputs[0], params[0]), 0.0),)

    float_clamp_max = unary_params(declare("float_clamp_max", _clamp_max_backward,
                                           saves_inputs=True))

    # ---- comparison (results are the inner backend's bools, never tracked) ---------------------
    float_equal = on_primitives("float_equal", "lhs == rhs.")
    float_not_equal = on_primitives("float_not_equal", "lhs != rhs.")
    float_greater = on_primitives("float_greater", "lhs > rhs.")
    float_greater_equal = on_primitives("float_greater_equal", "lhs >= rhs.")
    float_lower = on_primitives("float_lower", "lhs < rhs.")
    float_lower_equal = on_primitives("float_lower_equal", "lhs <= rhs.")
    float_equal_elem = on_primitive("float_equal_elem", "lhs == number.")
    float_not_equal_elem = on_primitive("float_not_equal_elem", "lhs != number.")
    float_greater_elem = on_primitive("float_greater_elem", "lhs > number.")
    float_greater_equal_elem = on_primitive("float_greater_equal_elem", "lhs >= number.")
    float_lower_elem = on_primitive("float_lower_elem", "lhs < number.")
    float_lower_equal_elem = on_primitive("float_lower_equal_elem", "lhs <= number.")
    float_is_nan = on_primitive("float_is_nan", "True where NaN.")
    float_is_inf = on_primitive("float_is_inf", "True where +-inf.")
    float_any = on_primitive("float_any", "Whether any element is non-zero.")
    float_any_dim = on_primitive("float_any_dim", "Whether any element along dim is non-zero.")
    float_all = on_primitive("float_all", "Whether every element is non-zero.")
    float_all_dim = on_primitive("float_all_dim", "Whether every element along dim is non-zero.")
    float_argmax = on_primitive("float_argmax", "Index of the max along dim (untracked).")
    float_argmin = on_primitive("float_argmin", "Index of the min along dim (untracked).")
    float_argsort = on_primitive("float_argsort", "Sorting indices along dim (untracked).")

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


def _one_minus_square(B: Any, x: Any) -> Any:
    """1 - x * x (as -(x * x) + 1, which rounds identically)."""
    return B.float_add_scalar(B.float_neg(B.float_mul(x, x)), 1.0)


def _others_product(B: Any, x: Any, dim: int) -> Any:
    """``out[k] = prod(x[j] for j != k)`` along ``dim``, without division (exact with zeros):
    the running product before k times the running product after k."""
    n = x.shape[dim]
    if n == 0:
        return x
    ones = B.float_ones(x.shape[:dim] + (1,) + x.shape[dim + 1:], B.float_device(x), dtype_of(x))
    before = B.float_cumprod(B.float_cat([ones, B.float_slice(x, _window(x.shape, dim, 0, n - 1))],
                                         dim), dim)
    tail = B.float_cat([B.float_slice(x, _window(x.shape, dim, 1, n)), ones], dim)
    after = B.float_flip(B.float_cumprod(B.float_flip(tail, (dim,)), dim), (dim,))
    return B.float_mul(before, after)
