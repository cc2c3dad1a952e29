# ruff: noqa: N803 - rules name the inner backend type ``B``, as Burn's generics do
"""Layout ops: cast, to_device, reshape, swap_dims, permute, flip, expand, repeat_dim, cat and
unfold. Each is linear in its input, so its tangent is the op itself (``LINEAR``); each
reverse rule sits in the table next to it."""

from __future__ import annotations

from typing import Any

from burnpy.autodiff.rule_helpers import dtype_of, window, zeros
from burnpy.autodiff.rules import reverse, tangent
from burnpy.autodiff.rules.reverse import AutodiffOps
from burnpy.autodiff.rules.table import (
    LINEAR,
    Derivative,
    Grads,
    Params,
    Parents,
    Saved,
    convert,
    sequence,
    unary_params,
)
from burnpy.autodiff.rules.tangent import ForwardOps


def _cast_reverse(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                  parents: Parents) -> Grads:
    return (B.float_cast(grad, params[1]),)


def _to_device_reverse(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                       parents: Parents) -> Grads:
    return (B.float_to_device(grad, params[1]),)


def _reshape_reverse(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                     parents: Parents) -> Grads:
    return (B.float_reshape(grad, parents[0].shape),)


def _swap_dims_reverse(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                       parents: Parents) -> Grads:
    return (B.float_swap_dims(grad, params[0], params[1]),)


def _permute_reverse(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                     parents: Parents) -> Grads:
    axes = params[0]
    inverse = [0] * len(axes)
    for i, a in enumerate(axes):
        inverse[a] = i
    return (B.float_permute(grad, tuple(inverse)),)


def _flip_reverse(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                  parents: Parents) -> Grads:
    return (B.float_flip(grad, params[0]),)


def _expand_reverse(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                    parents: Parents) -> Grads:
    return (grad,)  # the graph sums the stretched dims away


def _repeat_dim_reverse(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                        parents: Parents) -> Grads:
    dim, times = params
    shape = parents[0].shape
    split = B.float_reshape(grad, shape[:dim] + (times, shape[dim]) + shape[dim + 1:])
    return (B.float_reshape(B.float_sum_dim(split, dim), shape),)


def _cat_reverse(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                 parents: Parents) -> Grads:
    dim, sizes = params
    out, start = [], 0
    for parent, size in zip(parents, sizes, strict=True):
        out.append(None if parent is None else
                   B.float_slice(grad, window(grad.shape, dim, start, start + size)))
        start += size
    return tuple(out)


def _unfold_reverse(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                    parents: Parents) -> Grads:
    dim, size, step = params
    shape = parents[0].shape
    windows, nd = grad.shape[dim], len(grad.shape)
    # Put each window's elements right after its window index, then add every element back
    # at its source position ``window * step + offset``.
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


def _source_dtype(B: Any, x: Any) -> Any:
    return dtype_of(x)


def _source_device(B: Any, x: Any) -> Any:
    return B.float_device(x)


#: name, reverse rule, tangent rule.
LAYOUT: tuple[Derivative, ...] = (
    convert("float_cast", _cast_reverse, LINEAR, _source_dtype),
    convert("float_to_device", _to_device_reverse, LINEAR, _source_device),
    unary_params("float_reshape", _reshape_reverse, LINEAR),
    unary_params("float_swap_dims", _swap_dims_reverse, LINEAR),
    unary_params("float_permute", _permute_reverse, LINEAR),
    unary_params("float_flip", _flip_reverse, LINEAR),
    unary_params("float_expand", _expand_reverse, LINEAR),
    unary_params("float_repeat_dim", _repeat_dim_reverse, LINEAR),
    sequence("float_cat", _cat_reverse, LINEAR),
    unary_params("float_unfold", _unfold_reverse, LINEAR),
)


@reverse.generated(LAYOUT)
class AutodiffLayoutOps(AutodiffOps):
    """The layout ops, recorded with their reverse rules."""


@tangent.generated(LAYOUT)
class ForwardLayoutOps(ForwardOps):
    """The layout ops, with their tangents."""
