# ruff: noqa: N803 - rules name the inner backend type ``B``, as Burn's generics do
"""Indexing ops: slice, slice_assign, gather, scatter, scatter_add, select, select_assign,
select_add and mask_where. All are linear in their float inputs, so the tangent is the op
itself (``LINEAR``), except the additive writes, which leave the tensor's tangent as it is
where the values carry none."""

from __future__ import annotations

from typing import Any

from burnpy.autodiff.rule_helpers import or_zeros, zeros
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
    assign,
    indexed_write,
    unary_params,
)
from burnpy.autodiff.rules.tangent import ForwardOps


def _pad_to(B: Any, grad: Any, shape: tuple[int, ...]) -> Any:
    """``grad`` placed at the origin of zeros of ``shape`` (for values larger than indices)."""
    if tuple(grad.shape) == shape:
        return grad
    return B.float_slice_assign(zeros(B, shape, grad), tuple(slice(0, n) for n in grad.shape),
                                grad)


def _slice_reverse(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                   parents: Parents) -> Grads:
    shape, slices = parents[0].shape, params[0]
    cut = [d for d, (s, n) in enumerate(zip(slices, shape, strict=False))
           if (s.start or 0, s.stop, s.step or 1) != (0, n, 1)]
    if (len(cut) == 1 and (slices[cut[0]].step or 1) == 1
            and slices[cut[0]].stop is not None):
        # A contiguous run along one dim (a chunk, a split): zeros cat around the gradient
        # write the result once, where filling a copy of zeros reads and writes it twice.
        d, s = cut[0], slices[cut[0]]
        start, stop = s.start or 0, s.stop
        pieces = [zeros(B, (*shape[:d], n, *shape[d + 1:]), grad) if n else None
                  for n in (start, shape[d] - stop)]
        return (B.float_cat([p for p in (pieces[0], grad, pieces[1]) if p is not None], d),)
    return (B.float_slice_assign(zeros(B, shape, grad), slices, grad),)


def _slice_assign_reverse(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                          parents: Parents) -> Grads:
    slices, value_shape = params
    return (None if parents[0] is None else
            B.float_slice_assign(grad, slices, zeros(B, value_shape, grad)),
            None if parents[1] is None else B.float_slice(grad, slices))


def _gather_reverse(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                    parents: Parents) -> Grads:
    dim, indices = params
    return (B.float_scatter_add(zeros(B, parents[0].shape, grad), dim, indices, grad),)


def _scatter_reverse(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                     parents: Parents) -> Grads:
    dim, indices = params
    return (None if parents[0] is None else
            B.float_scatter(grad, dim, indices, zeros(B, indices.shape, grad)),
            None if parents[1] is None else
            _pad_to(B, B.float_gather(grad, dim, indices), parents[1].shape))


def _scatter_add_tangent(B: Any, tangents: Tangents, inputs: Inputs, output: Any,
                         params: Params) -> Any:
    """The tensor's tangent as it is where the values carry none."""
    t_tensor, t_values = tangents
    if t_values is None:
        return t_tensor
    return B.float_scatter_add(or_zeros(B, t_tensor, inputs[0]), *params, t_values)


def _scatter_add_reverse(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                         parents: Parents) -> Grads:
    dim, indices = params
    return (grad, None if parents[1] is None else
            _pad_to(B, B.float_gather(grad, dim, indices), parents[1].shape))


def _select_reverse(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                    parents: Parents) -> Grads:
    dim, indices = params
    return (B.float_select_add(zeros(B, parents[0].shape, grad), dim, indices, grad),)


def _select_assign_reverse(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                           parents: Parents) -> Grads:
    dim, indices = params
    picked = B.float_select(grad, dim, indices)
    return (None if parents[0] is None else
            B.float_select_assign(grad, dim, indices, zeros(B, picked.shape, grad)),
            None if parents[1] is None else picked)


def _select_add_tangent(B: Any, tangents: Tangents, inputs: Inputs, output: Any,
                        params: Params) -> Any:
    """The tensor's tangent as it is where the values carry none."""
    t_tensor, t_values = tangents
    if t_values is None:
        return t_tensor
    return B.float_select_add(or_zeros(B, t_tensor, inputs[0]), *params, t_values)


def _select_add_reverse(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                        parents: Parents) -> Grads:
    dim, indices = params
    return (grad, None if parents[1] is None else B.float_select(grad, dim, indices))


def _mask_where_reverse(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                        parents: Parents) -> Grads:
    mask = params[0]
    return (None if parents[0] is None else B.float_mask_fill(grad, mask, 0.0),
            None if parents[1] is None else B.float_mask_fill(grad, B.bool_not(mask), 0.0))


#: name, reverse rule, tangent rule.
INDEXING: tuple[Derivative, ...] = (
    unary_params("float_slice", _slice_reverse, LINEAR),
    assign("float_slice_assign", _slice_assign_reverse, LINEAR),
    unary_params("float_gather", _gather_reverse, LINEAR),
    indexed_write("float_scatter", _scatter_reverse, LINEAR),
    indexed_write("float_scatter_add", _scatter_add_reverse, _scatter_add_tangent),
    unary_params("float_select", _select_reverse, LINEAR),
    indexed_write("float_select_assign", _select_assign_reverse, LINEAR),
    indexed_write("float_select_add", _select_add_reverse, _select_add_tangent),
    assign("float_mask_where", _mask_where_reverse, LINEAR),
)


@reverse.generated(INDEXING)
class AutodiffIndexingOps(AutodiffOps):
    """The indexing ops, recorded with their reverse rules."""


@tangent.generated(INDEXING)
class ForwardIndexingOps(ForwardOps):
    """The indexing ops, with their tangents."""
