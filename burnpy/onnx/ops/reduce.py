"""ONNX reductions (ReduceSum, ReduceMean, ReduceMax...), ArgMax/ArgMin, CumSum and TopK.

Reduce ops take their axes as an attribute before opset 18 (ReduceSum: 13) and as an input
from then on; with no axes they reduce everything, or nothing under noop_with_empty_axes.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from burnpy.onnx.attributes import Attributes
from burnpy.onnx.registry import OpContext, Outputs, onnx_op
from burnpy.tensor import Tensor, cat

Inputs = list[Tensor | None]


def _reduce(op_type: str, input_since: int, fn: Callable[[Tensor, list[int]], Tensor],
            empty: float | None) -> None:
    """Register ``op_type`` in both forms; ``fn(x, dims)`` reduces with keepdim, ``empty`` is
    the value of a reduction over no elements (None: an error)."""

    def run(ctx: OpContext, inputs: Inputs, attrs: Attributes, axes: list[int] | None) -> Tensor:
        x = ctx.arg(inputs, 0)
        keep = bool(attrs.int("keepdims", 1))
        if not axes:
            if attrs.int("noop_with_empty_axes", 0):
                return x
            axes = list(range(x.ndim))
        dims = sorted({a % x.ndim if x.ndim else 0 for a in axes}) if x.ndim else []
        if x.kind == "bool":
            if op_type not in ("ReduceMax", "ReduceMin"):
                ctx.unsupported(f"bool input of {op_type}")
            # Over bools the max is any, the min all (ONNX allows them from opset 20).
            as_int = run(ctx, [x.cast("int8")], attrs, axes)
            return as_int.cast("bool")
        if any(x.shape[d] == 0 for d in dims):
            if empty is None:
                ctx.error(f"reduction over an empty dim of shape {x.shape}")
            shape = [1 if i in dims else n for i, n in enumerate(x.shape)]
            out = ctx.constant(np.full(shape, empty, dtype=x.dtype.numpy))
        else:
            out = fn(x, dims) if dims else x
        if not keep:
            out = out.reshape([n for i, n in enumerate(out.shape) if i not in dims])
        return out

    def with_attr(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
        return run(ctx, inputs, attrs, attrs.ints("axes"))

    def with_input(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
        axes = ctx.optional(inputs, 1)
        return run(ctx, inputs, attrs, None if axes is None else ctx.ints(axes))

    with_attr.__doc__ = f"ONNX {op_type} with the axes as an attribute."
    with_input.__doc__ = f"ONNX {op_type} with the axes as an input."
    onnx_op(op_type, 1, attrs=("axes", "keepdims"))(with_attr)
    onnx_op(op_type, input_since, attrs=("keepdims", "noop_with_empty_axes"))(with_input)


def _log_sum_exp(x: Tensor, dims: list[int]) -> Tensor:
    peak = x.amax(dims, keepdim=True)
    peak = peak.mask_fill(peak.isinf(), 0.0)
    return (x - peak).exp().sum(dims, keepdim=True).log() + peak


_reduce("ReduceSum", 13, lambda x, d: x.sum(d, keepdim=True), 0)
_reduce("ReduceMean", 18, lambda x, d: x.mean(d, keepdim=True), math.nan)
_reduce("ReduceProd", 18, lambda x, d: x.prod(d, keepdim=True), 1)
_reduce("ReduceMax", 18, lambda x, d: x.amax(d, keepdim=True), -math.inf)
_reduce("ReduceMin", 18, lambda x, d: x.amin(d, keepdim=True), math.inf)
_reduce("ReduceSumSquare", 18, lambda x, d: (x * x).sum(d, keepdim=True), 0)
_reduce("ReduceL1", 18, lambda x, d: x.abs().sum(d, keepdim=True), 0)
_reduce("ReduceL2", 18, lambda x, d: (x * x).sum(d, keepdim=True).sqrt(), 0)
_reduce("ReduceLogSum", 18, lambda x, d: x.sum(d, keepdim=True).log(), -math.inf)
_reduce("ReduceLogSumExp", 18, _log_sum_exp, -math.inf)


def _arg(op_type: str, largest: bool) -> None:
    def run(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
        x = ctx.arg(inputs, 0)
        axis = attrs.int("axis", 0) % max(x.ndim, 1)
        keep = bool(attrs.int("keepdims", 1))
        last = attrs.int("select_last_index", 0)
        if last:
            x = x.flip(axis)
        index = x.argmax(axis, keepdim=True) if largest else x.argmin(axis, keepdim=True)
        if last:
            index = (x.shape[axis] - 1) - index
        return index if keep else index.squeeze(axis)

    run.__doc__ = f"ONNX {op_type}: int64 indices of the first (or last) extreme value."
    onnx_op(op_type, 1, attrs=("axis", "keepdims", "select_last_index"))(run)


_arg("ArgMax", True)
_arg("ArgMin", False)


@onnx_op("TopK", 10)
@onnx_op("TopK", 11, attrs=("axis", "largest", "sorted"))
def _topk(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX TopK: the k largest (or smallest) values along an axis and their int64 indices."""
    x = ctx.arg(inputs, 0)
    k = ctx.ints(ctx.arg(inputs, 1))[0]
    axis = attrs.int("axis", -1) % x.ndim
    largest = bool(attrs.int("largest", 1))
    # ONNX breaks ties by the lower index: a stable sort gives that order.
    array = x.to_numpy()
    if largest:  # descending, ties by lower index: a stable sort of the reversed values
        n = array.shape[axis]
        order = (n - 1) - np.flip(np.argsort(np.flip(array, axis), axis=axis, kind="stable"),
                                  axis)
    else:
        order = np.argsort(array, axis=axis, kind="stable")
    index = np.take(order, np.arange(k), axis=axis).astype(np.int64)
    index_t = ctx.constant(index)
    return [x.gather(axis, index_t), index_t]


def _cumulative(op_type: str, since: int, product: bool) -> None:
    """Register ONNX ``op_type`` (CumSum, CumProd): the running sum or product along an axis
    given as an input, inclusive or exclusive (shifted by one, starting from the identity),
    forwards or in ``reverse``."""

    def run(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
        x = ctx.arg(inputs, 0)
        axis = ctx.ints(ctx.arg(inputs, 1))[0] % x.ndim
        reverse = attrs.int("reverse", 0)
        if reverse:
            x = x.flip(axis)
        if attrs.int("exclusive", 0):
            first = x.narrow(axis, 0, 1)
            identity = first.ones_like() if product else first.zeros_like()
            x = cat([identity, x.narrow(axis, 0, x.shape[axis] - 1)], axis)
        out = (x.cumprod(axis) if product else x.cumsum(axis)).cast(x.dtype)
        return out.flip(axis) if reverse else out

    run.__doc__ = f"ONNX {op_type}: the running {'product' if product else 'sum'} along an axis."
    onnx_op(op_type, since, attrs=("exclusive", "reverse"))(run)


_cumulative("CumSum", 11, product=False)
_cumulative("CumProd", 26, product=True)
