"""ONNX operators on shapes and layouts: Reshape, Transpose, Concat, Slice, Gather, Squeeze,
Unsqueeze, Shape, Expand, Split, Pad, constants and index generators.

Shape-valued inputs (Reshape's shape, Slice's starts...) are int64 tensors read to the host,
since the output's shape depends on them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from burnpy.onnx.attributes import Attributes
from burnpy.onnx.dtypes import burnpy_dtype
from burnpy.onnx.registry import OpContext, Outputs, onnx_op
from burnpy.tensor import Tensor, cat

Inputs = list[Tensor | None]


def _axis(ctx: OpContext, axis: int, ndim: int) -> int:
    """``axis`` in [0, ndim), negative ones counted from the end."""
    if not -ndim <= axis < ndim:
        ctx.error(f"axis {axis} is out of range for rank {ndim}")
    return axis % ndim


def _axes(ctx: OpContext, axes: Sequence[int], ndim: int) -> list[int]:
    out = [_axis(ctx, a, ndim) for a in axes]
    if len(set(out)) != len(out):
        ctx.error(f"repeated axes {list(axes)}")
    return out


@onnx_op("Reshape", 5)
@onnx_op("Reshape", 14, attrs=("allowzero",))
def _reshape(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX Reshape: 0 copies the input's dim (unless allowzero), -1 is inferred."""
    x = ctx.arg(inputs, 0)
    shape = ctx.ints(ctx.arg(inputs, 1))
    if not attrs.int("allowzero", 0):
        shape = [x.shape[i] if d == 0 else d for i, d in enumerate(shape)]
    return x.reshape(shape)


@onnx_op("Flatten", 1, attrs=("axis",))
def _flatten(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX Flatten: a matrix of the dims before ``axis`` by the dims from it."""
    x = ctx.arg(inputs, 0)
    axis = attrs.int("axis", 1)
    axis = axis + x.ndim if axis < 0 else axis
    if not 0 <= axis <= x.ndim:
        ctx.error(f"axis {axis} is out of range for rank {x.ndim}")
    rows = int(np.prod(x.shape[:axis], dtype=np.int64))
    return x.reshape(rows, int(np.prod(x.shape[axis:], dtype=np.int64)))


@onnx_op("Transpose", 1, attrs=("perm",))
def _transpose(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX Transpose (dims reversed when ``perm`` is absent)."""
    x = ctx.arg(inputs, 0)
    perm = attrs.ints("perm")
    return x.permute(list(range(x.ndim))[::-1] if perm is None else perm)


@onnx_op("Concat", 4, attrs=("axis",))
def _concat(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX Concat along ``axis``."""
    tensors = [ctx.arg(inputs, i) for i in range(len(inputs))]
    return cat(tensors, _axis(ctx, attrs.int("axis", 0), tensors[0].ndim))


@onnx_op("Squeeze", 1, attrs=("axes",))
def _squeeze_attr(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX Squeeze before opset 13 (axes an attribute)."""
    return _squeeze(ctx, ctx.arg(inputs, 0), attrs.ints("axes"))


@onnx_op("Squeeze", 13)
def _squeeze_input(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX Squeeze from opset 13 (axes an optional input)."""
    axes = ctx.optional(inputs, 1)
    return _squeeze(ctx, ctx.arg(inputs, 0), None if axes is None else ctx.ints(axes))


def _squeeze(ctx: OpContext, x: Tensor, axes: list[int] | None) -> Tensor:
    if axes is None:
        return x.reshape([d for d in x.shape if d != 1])
    dims = _axes(ctx, axes, x.ndim)
    if any(x.shape[d] != 1 for d in dims):
        ctx.error(f"cannot squeeze axes {axes} of shape {x.shape}")
    return x.reshape([d for i, d in enumerate(x.shape) if i not in dims])


@onnx_op("Unsqueeze", 1, attrs=("axes",))
def _unsqueeze_attr(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX Unsqueeze before opset 13 (axes an attribute)."""
    return _unsqueeze(ctx, ctx.arg(inputs, 0), attrs.ints("axes") or [])


@onnx_op("Unsqueeze", 13)
def _unsqueeze_input(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX Unsqueeze from opset 13 (axes an input)."""
    return _unsqueeze(ctx, ctx.arg(inputs, 0), ctx.ints(ctx.arg(inputs, 1)))


def _unsqueeze(ctx: OpContext, x: Tensor, axes: list[int]) -> Tensor:
    rank = x.ndim + len(axes)
    dims = set(_axes(ctx, axes, rank))
    shape, it = [], iter(x.shape)
    for i in range(rank):
        shape.append(1 if i in dims else next(it))
    return x.reshape(shape)


@onnx_op("Shape", 1)
@onnx_op("Shape", 15, attrs=("start", "end"))
def _shape(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX Shape: the dims (from ``start`` to ``end``) as an int64 tensor."""
    shape = ctx.arg(inputs, 0).shape
    end = attrs.int("end", len(shape)) if "end" in attrs else len(shape)
    return ctx.constant(np.array(shape[attrs.int("start", 0):end], dtype=np.int64))


@onnx_op("Size", 1)
def _size(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX Size: the element count as an int64 scalar."""
    return ctx.constant(np.array(ctx.arg(inputs, 0).numel(), dtype=np.int64))


@onnx_op("Expand", 8)
def _expand(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX Expand: broadcast to ``shape`` (which may itself broadcast up)."""
    x = ctx.arg(inputs, 0)
    shape = np.broadcast_shapes(x.shape, tuple(ctx.ints(ctx.arg(inputs, 1))))
    return x.expand(shape)


@onnx_op("Tile", 6)
def _tile(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX Tile: repeat along each dim."""
    return ctx.arg(inputs, 0).repeat(ctx.ints(ctx.arg(inputs, 1)))


def _slice(ctx: OpContext, x: Tensor, starts: list[int], ends: list[int],
           axes: list[int] | None, steps: list[int] | None) -> Tensor:
    axes = list(range(len(starts))) if axes is None else _axes(ctx, axes, x.ndim)
    steps = [1] * len(starts) if steps is None else steps
    key: list[slice] = [slice(None)] * x.ndim
    for axis, start, end, step in zip(axes, starts, ends, steps, strict=True):
        dim = x.shape[axis]
        if step == 0:
            ctx.error("a step of 0")
        start = start + dim if start < 0 else start
        end = end + dim if end < 0 else end
        if step > 0:
            key[axis] = slice(min(max(start, 0), dim), min(max(end, 0), dim), step)
        else:
            start = min(max(start, 0), dim - 1)
            end = min(max(end, -1), dim - 1)
            key[axis] = slice(start, None if end < 0 else end, step)
    return x[tuple(key)]


@onnx_op("Slice", 1, attrs=("starts", "ends", "axes"))
def _slice_attr(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX Slice before opset 10 (bounds as attributes)."""
    return _slice(ctx, ctx.arg(inputs, 0), attrs.ints("starts") or [], attrs.ints("ends") or [],
                  attrs.ints("axes"), None)


@onnx_op("Slice", 10)
def _slice_input(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX Slice from opset 10 (bounds, axes and steps as inputs)."""
    axes, steps = ctx.optional(inputs, 3), ctx.optional(inputs, 4)
    return _slice(ctx, ctx.arg(inputs, 0), ctx.ints(ctx.arg(inputs, 1)),
                  ctx.ints(ctx.arg(inputs, 2)), None if axes is None else ctx.ints(axes),
                  None if steps is None else ctx.ints(steps))


def _wrap_indices(indices: Tensor, dim: int) -> Tensor:
    """Negative indices counted from the end of a dim of size ``dim``."""
    return indices.mask_where(indices < 0, indices + dim)


@onnx_op("Gather", 1, attrs=("axis",))
def _gather(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX Gather: entries of ``axis`` picked by an index tensor of any shape."""
    x, indices = ctx.arg(inputs, 0), ctx.arg(inputs, 1)
    axis = _axis(ctx, attrs.int("axis", 0), x.ndim)
    flat = _wrap_indices(indices, x.shape[axis]).reshape(-1).cast(ctx.backend.int_dtype)
    picked = x.index_select(axis, flat)
    return picked.reshape(x.shape[:axis] + indices.shape + x.shape[axis + 1:])


@onnx_op("GatherElements", 11, attrs=("axis",))
def _gather_elements(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX GatherElements (torch.gather)."""
    x, indices = ctx.arg(inputs, 0), ctx.arg(inputs, 1)
    axis = _axis(ctx, attrs.int("axis", 0), x.ndim)
    return x.gather(axis, _wrap_indices(indices, x.shape[axis]).cast(ctx.backend.int_dtype))


@onnx_op("Split", 2, attrs=("axis", "split"))
def _split_attr(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX Split before opset 13 (sizes as an attribute)."""
    return _split(ctx, ctx.arg(inputs, 0), attrs.int("axis", 0), attrs.ints("split"), None)


@onnx_op("Split", 13, attrs=("axis",))
@onnx_op("Split", 18, attrs=("axis", "num_outputs"))
def _split_input(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX Split from opset 13 (sizes as an optional input, or ``num_outputs``)."""
    sizes = ctx.optional(inputs, 1)
    num = attrs.int("num_outputs", 0) if "num_outputs" in attrs else None
    return _split(ctx, ctx.arg(inputs, 0), attrs.int("axis", 0),
                  None if sizes is None else ctx.ints(sizes), num)


def _split(ctx: OpContext, x: Tensor, axis: int, sizes: list[int] | None,
           num_outputs: int | None) -> Outputs:
    axis = _axis(ctx, axis, x.ndim)
    dim = x.shape[axis]
    if sizes is None:
        if num_outputs is None:
            num_outputs = ctx.num_outputs
        chunk = -(-dim // num_outputs)
        sizes = [min(chunk, dim - i * chunk) for i in range(num_outputs)]
    if sum(sizes) != dim:
        ctx.error(f"split sizes {sizes} do not sum to dim {axis} of shape {x.shape}")
    return list(x.split_with_sizes(sizes, axis))


@onnx_op("Constant", 1, attrs=("value", "value_float", "value_floats", "value_int",
                               "value_ints"))
def _constant(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX Constant: a tensor, or a float/int scalar or list attribute."""
    value = attrs.tensor("value")
    if value is not None:
        return ctx.constant(value)
    if "value_float" in attrs:
        return ctx.constant(np.float32(attrs.float("value_float", 0.0)))
    if "value_floats" in attrs:
        return ctx.constant(np.array(attrs.floats("value_floats"), dtype=np.float32))
    if "value_int" in attrs:
        return ctx.constant(np.int64(attrs.int("value_int", 0)))
    if "value_ints" in attrs:
        return ctx.constant(np.array(attrs.ints("value_ints"), dtype=np.int64))
    ctx.unsupported("a Constant without a tensor, float or int value")


@onnx_op("ConstantOfShape", 9, attrs=("value",))
def _constant_of_shape(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX ConstantOfShape: ``value`` (default float32 0) repeated to a shape."""
    value = attrs.tensor("value")
    fill = np.zeros(1, np.float32) if value is None else value.reshape(-1)
    shape = ctx.ints(ctx.arg(inputs, 0))
    return ctx.constant(np.full(shape, fill[0], dtype=fill.dtype))


@onnx_op("Range", 11)
def _range(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX Range: ``start, start + delta, ...`` below ``limit``, in the inputs' dtype."""
    start, limit, delta = (ctx.arg(inputs, i) for i in range(3))
    values = [ctx.host(t).reshape(-1)[0] for t in (start, limit, delta)]
    n = max(int(np.ceil((values[1] - values[0]) / values[2])), 0)
    out = values[0] + np.arange(n, dtype=start.dtype.numpy) * values[2]
    return ctx.constant(out.astype(start.dtype.numpy))


@onnx_op("EyeLike", 9, attrs=("dtype", "k"))
def _eye_like(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX EyeLike: ones on diagonal ``k`` of a matrix shaped as the input."""
    x = ctx.arg(inputs, 0)
    dtype = burnpy_dtype(attrs.int("dtype", 0), ctx.label) if "dtype" in attrs else x.dtype
    return ctx.constant(np.eye(x.shape[0], x.shape[1], attrs.int("k", 0),
                               dtype=dtype.numpy))


@onnx_op("Trilu", 14, attrs=("upper",))
def _trilu(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX Trilu: the upper or lower triangle from diagonal ``k``."""
    x = ctx.arg(inputs, 0)
    k_input = ctx.optional(inputs, 1)
    k = 0 if k_input is None else ctx.ints(k_input)[0]
    return x.triu(k) if attrs.int("upper", 1) else x.tril(k)


@onnx_op("DepthToSpace", 11, attrs=("blocksize", "mode"))
def _depth_to_space(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX DepthToSpace (DCR or CRD order of the channel blocks)."""
    x = ctx.arg(inputs, 0)
    b = attrs.int("blocksize", 0)
    n, c, h, w = x.shape
    if attrs.string("mode", "DCR") == "DCR":
        y = x.reshape(n, b, b, c // (b * b), h, w).permute(0, 3, 4, 1, 5, 2)
    else:
        y = x.reshape(n, c // (b * b), b, b, h, w).permute(0, 1, 4, 2, 5, 3)
    return y.reshape(n, c // (b * b), h * b, w * b)


@onnx_op("SpaceToDepth", 1, attrs=("blocksize", "mode"))
def _space_to_depth(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX SpaceToDepth (DCR or CRD order of the channel blocks)."""
    x = ctx.arg(inputs, 0)
    b = attrs.int("blocksize", 0)
    n, c, h, w = x.shape
    y = x.reshape(n, c, h // b, b, w // b, b)
    y = y.permute(0, 3, 5, 1, 2, 4) if attrs.string("mode", "DCR") == "DCR" else \
        y.permute(0, 1, 3, 5, 2, 4)
    return y.reshape(n, c * b * b, h // b, w // b)


@onnx_op("Pad", 11, attrs=("mode",))
@onnx_op("Pad", 18, attrs=("mode",))
def _pad(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX Pad (constant, reflect, edge or wrap), pads as begins then ends per axis."""
    x = ctx.arg(inputs, 0)
    pads = ctx.ints(ctx.arg(inputs, 1))
    value_input = ctx.optional(inputs, 2)
    axes_input = ctx.optional(inputs, 3)
    axes = (list(range(x.ndim)) if axes_input is None
            else _axes(ctx, ctx.ints(axes_input), x.ndim))
    mode = attrs.string("mode", "constant")
    value = 0.0 if value_input is None else ctx.host(value_input).reshape(-1)[0].item()
    n = len(axes)
    widths = [(0, 0)] * x.ndim
    for i, axis in enumerate(axes):
        widths[axis] = (pads[i], pads[i + n])
    return _pad_tensor(ctx, x, widths, mode, value)


def _pad_tensor(ctx: OpContext, x: Tensor, widths: list[tuple[int, int]], mode: str,
                value: float) -> Tensor:
    """``x`` padded by (before, after) per dim; negative widths crop."""
    for axis, (before, after) in enumerate(widths):
        if before < 0 or after < 0:
            key = [slice(None)] * x.ndim
            key[axis] = slice(max(-before, 0), x.shape[axis] - max(-after, 0))
            x = x[tuple(key)]
            before, after = max(before, 0), max(after, 0)
        if before == 0 and after == 0:
            continue
        dim = x.shape[axis]
        if mode == "constant":
            parts = []
            for width in (before, after):
                shape = list(x.shape)
                shape[axis] = width
                parts.append(Tensor.full(shape, value, backend=x.backend, device=x.device,
                                         dtype=x.dtype))
            x = cat([parts[0], x, parts[1]], axis)
            continue
        if mode == "reflect":
            index = np.abs(np.arange(-before, dim + after))
            period = 2 * (dim - 1) if dim > 1 else 1
            index = index % period
            index = np.where(index >= dim, period - index, index)
        elif mode == "edge":
            index = np.clip(np.arange(-before, dim + after), 0, dim - 1)
        elif mode == "wrap":
            index = np.arange(-before, dim + after) % dim
        else:
            ctx.unsupported(f"mode={mode!r}", "mode")
        x = x.index_select(axis, ctx.constant(index.astype(np.int64)))
    return x


@onnx_op("OneHot", 11, attrs=("axis",))
def _one_hot(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX OneHot: ``values[1]`` where the class matches the index, else ``values[0]``."""
    indices, depth_t, values = (ctx.arg(inputs, i) for i in range(3))
    depth = int(ctx.host(depth_t).reshape(-1)[0])
    rank = indices.ndim + 1
    axis = _axis(ctx, attrs.int("axis", -1), rank)
    idx = indices.to_numpy().astype(np.int64)
    idx = np.where(idx < 0, idx + depth, idx)
    classes = np.arange(depth).reshape([-1 if i == axis else 1 for i in range(rank)])
    hot = np.expand_dims(idx, axis) == classes
    off, on = values[0:1].reshape([]), values[1:2].reshape([])
    mask = ctx.constant(hot)
    return off.expand(mask.shape).mask_where(mask, on.expand(mask.shape))


@onnx_op("NonZero", 9)
def _nonzero(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX NonZero: the indices of non-zero entries, one row per dim (int64)."""
    x = ctx.arg(inputs, 0)
    return ctx.constant(np.array(np.nonzero(x.to_numpy()), dtype=np.int64).reshape(x.ndim, -1))
