"""ONNX indexing operators beyond Gather: ScatterElements, ScatterND, GatherND, Compress,
ReverseSequence, Unique.

Index arithmetic (flattening N-d indices, sequence reversal maps) runs on the host, and the
data moves through burnpy's gather/scatter ops, so gradients reach data and updates.
"""

from __future__ import annotations

import math

import numpy as np

from burnpy.onnx.attributes import Attributes
from burnpy.onnx.registry import OpContext, Outputs, onnx_op
from burnpy.tensor import Tensor

Inputs = list[Tensor | None]

_REDUCE = {"add": "sum", "mul": "prod", "max": "amax", "min": "amin"}


def _host_indices(ctx: OpContext, indices: Tensor, sizes: tuple[int, ...]) -> np.ndarray:
    """N-d indices ``[..., k]`` into dims ``sizes`` (negatives wrapped), as flat offsets."""
    idx = indices.to_numpy().astype(np.int64)
    k = idx.shape[-1]
    bounds = np.array(sizes[:k], dtype=np.int64)
    idx = np.where(idx < 0, idx + bounds, idx)
    if np.any(idx < 0) or np.any(idx >= bounds):
        ctx.error(f"an index of {indices.shape} is out of bounds for dims {sizes[:k]}")
    return np.ravel_multi_index(tuple(np.moveaxis(idx, -1, 0)), sizes[:k]) if k else \
        np.zeros(idx.shape[:-1], dtype=np.int64)


def _scatter(ctx: OpContext, data: Tensor, dim: int, index: Tensor, updates: Tensor,
             reduction: str) -> Tensor:
    if reduction == "none":
        return data.scatter(dim, index, updates)
    if reduction not in _REDUCE:
        ctx.unsupported(f"reduction={reduction!r}", "reduction")
    return data.scatter_reduce(dim, index, updates, _REDUCE[reduction], include_self=True)


@onnx_op("Scatter", 9, attrs=("axis",))
@onnx_op("ScatterElements", 11, attrs=("axis", "reduction"))
def _scatter_elements(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX ScatterElements (torch.scatter, with an optional reduction), and Scatter, its
    name before opset 11."""
    data, indices, updates = (ctx.arg(inputs, i) for i in range(3))
    axis = attrs.int("axis", 0) % data.ndim
    index = indices.mask_where(indices < 0, indices + data.shape[axis]).cast(
        ctx.backend.int_dtype)
    return _scatter(ctx, data, axis, index, updates, attrs.string("reduction", "none"))


@onnx_op("ScatterND", 11, attrs=("reduction",))
def _scatter_nd(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX ScatterND: ``updates`` written (or reduced) at N-d index tuples of ``data``."""
    data, indices, updates = (ctx.arg(inputs, i) for i in range(3))
    k = indices.shape[-1]
    rest = data.shape[k:]
    flat = _host_indices(ctx, indices, data.shape).reshape(-1)
    rows = data.reshape([math.prod(data.shape[:k]), *rest])
    values = updates.reshape([flat.size, *rest])
    index = ctx.constant(flat.reshape([-1] + [1] * len(rest))).expand(values.shape)
    out = _scatter(ctx, rows, 0, index, values, attrs.string("reduction", "none"))
    return out.reshape(data.shape)


@onnx_op("GatherND", 11)
@onnx_op("GatherND", 12, attrs=("batch_dims",))
def _gather_nd(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX GatherND: slices of ``data`` at N-d index tuples, after ``batch_dims`` shared
    leading dims."""
    data, indices = ctx.arg(inputs, 0), ctx.arg(inputs, 1)
    b = attrs.int("batch_dims", 0)
    k = indices.shape[-1]
    batch = math.prod(data.shape[:b])
    inner = data.shape[b:]
    offsets = _host_indices(ctx, indices.reshape(batch, -1, k), inner)
    offsets = offsets + (np.arange(batch) * math.prod(inner[:k]))[:, None]
    rows = data.reshape([batch * math.prod(inner[:k]), *inner[k:]])
    picked = rows.index_select(0, ctx.constant(offsets.reshape(-1)))
    return picked.reshape(list(indices.shape[:-1]) + list(inner[k:]))


@onnx_op("Compress", 11, attrs=("axis",))
def _compress(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX Compress: the entries along ``axis`` (or of the flattened input) where the
    condition holds."""
    x, condition = ctx.arg(inputs, 0), ctx.arg(inputs, 1)
    keep = np.nonzero(condition.to_numpy().reshape(-1))[0].astype(np.int64)
    if "axis" not in attrs:
        return x.reshape(-1).index_select(0, ctx.constant(keep))
    axis = attrs.int("axis", 0) % x.ndim
    return x.index_select(axis, ctx.constant(keep))


@onnx_op("ReverseSequence", 10, attrs=("batch_axis", "time_axis"))
def _reverse_sequence(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX ReverseSequence: each batch entry's first ``sequence_lens[b]`` steps reversed."""
    x, lengths = ctx.arg(inputs, 0), ctx.arg(inputs, 1)
    batch_axis, time_axis = attrs.int("batch_axis", 1), attrs.int("time_axis", 0)
    steps = np.arange(x.shape[time_axis])[:, None]
    lens = lengths.to_numpy().astype(np.int64)[None, :]
    source = np.where(steps < lens, lens - 1 - steps, steps)  # [time, batch]
    if batch_axis < time_axis:
        source = source.T
    shape = [1] * x.ndim
    shape[time_axis], shape[batch_axis] = x.shape[time_axis], x.shape[batch_axis]
    index = ctx.constant(source.reshape(shape)).expand(x.shape)
    return x.gather(time_axis, index)


@onnx_op("Unique", 11, attrs=("axis", "sorted"))
def _unique(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX Unique: the distinct values (or slices along ``axis``), sorted or in order of first
    occurrence, with first indices, inverse indices and counts (int64)."""
    x = ctx.arg(inputs, 0)
    axis = attrs.int("axis", 0) % x.ndim if "axis" in attrs else None
    array = x.to_numpy()
    _, first, inverse, counts = np.unique(array, return_index=True, return_inverse=True,
                                          return_counts=True, axis=axis)
    inverse = inverse.reshape(-1)
    if not attrs.int("sorted", 1):
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        first, counts, inverse = first[order], counts[order], rank[inverse]
    index = ctx.constant(first.astype(np.int64))
    values = x.reshape(-1).index_select(0, index) if axis is None else \
        x.index_select(axis, index)
    return [values, index, ctx.constant(inverse.astype(np.int64)),
            ctx.constant(counts.astype(np.int64))]
