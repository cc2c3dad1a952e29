"""ONNX image operators: Resize (and its predecessor Upsample), GridSample, AffineGrid,
CenterCropPad, Col2Im.

Resize is separable: along each resized axis the output is a fixed linear map of the input
(nearest, linear or cubic taps, antialiased or not, with ONNX's coordinate transformations),
so each axis becomes one matrix ``W [out, in]`` built on the host and applied with a matmul.
That runs on any backend and differentiates under Autodiff.
"""

from __future__ import annotations

import math

import numpy as np

import burnpy.nn.functional as F
from burnpy.onnx.attributes import Attributes
from burnpy.onnx.ops.shape import _pad_tensor
from burnpy.onnx.registry import OpContext, Outputs, onnx_op
from burnpy.tensor import Tensor

Inputs = list[Tensor | None]

_COORDINATE_MODES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",
                     "align_corners", "asymmetric", "tf_crop_and_resize")
_NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def _source_coordinates(mode: str, out_size: int, in_size: int, scale: float,
                        roi: tuple[float, float]) -> np.ndarray:
    """The input coordinate each output position samples (ONNX's coordinate modes)."""
    y = np.arange(out_size, dtype=np.float64)
    width = scale * in_size  # the unrounded output length the modes refer to
    if mode == "align_corners":
        return np.zeros(out_size) if width == 1 else y * (in_size - 1) / (width - 1)
    if mode == "asymmetric":
        return y / scale
    if mode == "tf_crop_and_resize":
        start, end = roi
        if width == 1:
            return np.full(out_size, (end - start) * (in_size - 1) / 2 + start * (in_size - 1))
        return y * (end - start) * (in_size - 1) / (width - 1) + start * (in_size - 1)
    if mode == "pytorch_half_pixel":
        return np.full(out_size, -0.5) if width == 1 else (y + 0.5) / scale - 0.5
    if mode == "half_pixel_symmetric":
        offset = in_size / 2 * (1 - out_size / width)
        return offset + (y + 0.5) / scale - 0.5
    return (y + 0.5) / scale - 0.5  # half_pixel


def _cubic(x: np.ndarray, a: float) -> np.ndarray:
    """Keys' cubic convolution kernel with parameter ``a``."""
    x = np.abs(x)
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return np.where(x <= 1, near, np.where(x < 2, far, 0.0))


def _taps(kind: str, ratio: np.ndarray, scale: float, attrs: Attributes, nearest_mode: str,
          antialias: bool) -> tuple[np.ndarray, int]:
    """Per output position, the tap weights [out, n] and the kernel's first offset relative
    to floor(x) (for ``ratio`` in (0, 1], the fraction of the source coordinate past it)."""
    r = ratio[:, None]
    if kind == "nearest":
        whole = r == 1
        if nearest_mode == "round_prefer_floor":
            right = r > 0.5
        elif nearest_mode == "round_prefer_ceil":
            right = r >= 0.5
        else:
            right = np.full_like(r, nearest_mode == "ceil", dtype=bool)
        right = right | whole
        return np.concatenate([~right, right], axis=1).astype(np.float64), 0
    if kind == "linear":
        if not antialias or scale >= 1:
            return np.concatenate([1 - r, r], axis=1), 0
        start = math.floor(-1 / scale) + 1
        offsets = np.arange(start, 2 - start)
        weights = np.clip(1 - np.abs((offsets[None, :] - r) * scale), 0, 1)
        return weights / weights.sum(axis=1, keepdims=True), start
    a = attrs.float("cubic_coeff_a", -0.75)
    if antialias and scale < 1:
        start = math.floor(-2 / scale) + 1
        offsets = np.arange(start, 2 - start)
        weights = _cubic(scale * (offsets[None, :] - r), a)
        return weights / weights.sum(axis=1, keepdims=True), start
    offsets = np.arange(-1, 3)
    return _cubic(offsets[None, :] - r, a), -1


def _axis_matrix(attrs: Attributes, kind: str, coordinate_mode: str, nearest_mode: str,
                 in_size: int, out_size: int, scale: float,
                 roi: tuple[float, float]) -> tuple[np.ndarray, np.ndarray | None]:
    """``W [out, in]`` mapping one axis of the input to the output, and the mask of output
    positions that take the extrapolation value (tf_crop_and_resize), or None."""
    x = _source_coordinates(coordinate_mode, out_size, in_size, scale, roi)
    base = np.floor(x)
    ratio = np.where(x == base, 1.0, x - base)
    # With ratio 1 on whole coordinates, the taps start one pixel to the left of x.
    left = np.where(x == base, base - 1, base).astype(np.int64)
    weights, start = _taps(kind, ratio, scale, attrs, nearest_mode,
                           bool(attrs.int("antialias", 0)))
    index = left[:, None] + start + np.arange(weights.shape[1])[None, :]
    if attrs.int("exclude_outside", 0):
        weights = np.where((index < 0) | (index >= in_size), 0.0, weights)
        total = weights.sum(axis=1, keepdims=True)
        weights = weights / np.where(total == 0, 1.0, total)
    matrix = np.zeros((out_size, in_size))
    rows = np.repeat(np.arange(out_size), weights.shape[1])
    np.add.at(matrix, (rows, np.clip(index, 0, in_size - 1).reshape(-1)), weights.reshape(-1))
    outside = None
    if coordinate_mode == "tf_crop_and_resize":
        outside = (x < 0) | (x > in_size - 1)
        matrix[outside] = 0.0
    return matrix, outside


def _resize(ctx: OpContext, x: Tensor, attrs: Attributes, kind: str, coordinate_mode: str,
            nearest_mode: str, scales: list[float] | None, sizes: list[int] | None,
            roi: list[float] | None, axes: list[int] | None) -> Tensor:
    if kind not in ("nearest", "linear", "cubic"):
        ctx.unsupported(f"mode={kind!r}", "mode")
    if coordinate_mode not in _COORDINATE_MODES:
        ctx.unsupported(f"coordinate_transformation_mode={coordinate_mode!r}",
                        "coordinate_transformation_mode")
    if kind == "nearest" and nearest_mode not in _NEAREST_MODES:
        ctx.unsupported(f"nearest_mode={nearest_mode!r}", "nearest_mode")
    rank = x.ndim
    axes = list(range(rank)) if axes is None else [a % rank for a in axes]
    full_roi = [0.0] * rank + [1.0] * rank
    if roi:
        for i, a in enumerate(axes):
            full_roi[a], full_roi[a + rank] = roi[i], roi[i + len(axes)]
    if sizes is not None:
        factors = [sizes[i] / x.shape[a] for i, a in enumerate(axes)]
        policy = attrs.string("keep_aspect_ratio_policy", "stretch")
        if policy in ("not_larger", "not_smaller"):
            common = min(factors) if policy == "not_larger" else max(factors)
            factors = [common] * len(axes)
            sizes = [int(common * x.shape[a] + 0.5) for a in axes]
        elif policy != "stretch":
            ctx.unsupported(f"keep_aspect_ratio_policy={policy!r}", "keep_aspect_ratio_policy")
        out_sizes = list(sizes)
    elif scales is not None:
        factors = list(scales)
        out_sizes = [int(f * x.shape[a]) for f, a in zip(factors, axes, strict=True)]
    else:
        ctx.error("one of scales and sizes is required")
    compute = x if x.kind == "float" else x.cast("float32")
    extrapolation = attrs.float("extrapolation_value", 0.0)
    for axis, scale, size in zip(axes, factors, out_sizes, strict=True):
        window = (full_roi[axis], full_roi[axis + rank])
        if math.isclose(scale, 1.0) and size == x.shape[axis] and window == (0.0, 1.0):
            continue
        matrix, outside = _axis_matrix(attrs, kind, coordinate_mode, nearest_mode,
                                       x.shape[axis], size, scale, window)
        w = ctx.constant(matrix.T.astype(compute.dtype.numpy))
        compute = (compute.movedim(axis, -1) @ w).movedim(-1, axis)
        if outside is not None and outside.any():
            shape = [1] * rank
            shape[axis] = size
            mask = ctx.constant(outside.reshape(shape)).expand(compute.shape)
            compute = compute.mask_fill(mask, extrapolation)
    if x.kind == "float":
        return compute
    info = np.iinfo(x.dtype.numpy)
    return compute.round().clamp(float(info.min), float(info.max)).cast(x.dtype)


_RESIZE_ATTRS = ("coordinate_transformation_mode", "cubic_coeff_a", "exclude_outside",
                 "extrapolation_value", "mode", "nearest_mode")


def _by_scales(ctx: OpContext, inputs: Inputs, attrs: Attributes, nearest_mode: str) -> Tensor:
    x, scales = ctx.arg(inputs, 0), ctx.arg(inputs, 1)
    return _resize(ctx, x, attrs, attrs.string("mode", "nearest"), "asymmetric", nearest_mode,
                   [float(v) for v in ctx.host(scales).reshape(-1)], None, None, None)


@onnx_op("Resize", 10, attrs=("mode",))
def _resize_10(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX Resize at opset 10: scales only, asymmetric coordinates."""
    return _by_scales(ctx, inputs, attrs, "round_prefer_floor")


@onnx_op("Upsample", 9, attrs=("mode",))
def _upsample(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX Upsample: Resize by scales, asymmetric coordinates, nearest taking the floor."""
    return _by_scales(ctx, inputs, attrs, "floor")


@onnx_op("Resize", 11, attrs=_RESIZE_ATTRS)
@onnx_op("Resize", 18, attrs=(*_RESIZE_ATTRS, "antialias", "axes", "keep_aspect_ratio_policy"))
def _resize_11(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX Resize from opset 11: roi, scales or sizes, coordinate and nearest modes, cubic
    parameters, and from 18 antialiasing, axes and the aspect-ratio policy."""
    x = ctx.arg(inputs, 0)
    roi, scales, sizes = (ctx.optional(inputs, i) for i in (1, 2, 3))

    def values(t: Tensor | None) -> list[float] | None:
        return None if t is None or t.numel() == 0 else \
            [float(v) for v in ctx.host(t).reshape(-1)]

    size_values = values(sizes)
    return _resize(ctx, x, attrs, attrs.string("mode", "nearest"),
                   attrs.string("coordinate_transformation_mode", "half_pixel"),
                   attrs.string("nearest_mode", "round_prefer_floor"), values(scales),
                   None if size_values is None else [int(v) for v in size_values],
                   values(roi), attrs.ints("axes"))


def _reflect(x: np.ndarray, low: float, high: float) -> np.ndarray:
    """``x`` reflected at ``low`` and ``high`` until inside them."""
    span = high - low
    if span <= 0:
        return np.full_like(x, low)
    below = x < low
    distance = np.where(below, low - x, x - high)
    flips = np.floor(distance / span)
    rest = distance - flips * span
    even = flips % 2 == 0
    inward = np.where(below, np.where(even, low + rest, high - rest),
                      np.where(even, high - rest, low + rest))
    return np.where((x < low) | (x > high), inward, x)


def _cubic_taps(t: np.ndarray) -> list[np.ndarray]:
    """The four cubic convolution weights (a = -0.75) at offsets -1, 0, 1, 2 from floor(x)."""
    return [_cubic(t + 1, -0.75), _cubic(t, -0.75), _cubic(1 - t, -0.75), _cubic(2 - t, -0.75)]


def _grid_sample_nd(ctx: OpContext, x: Tensor, grid: Tensor, mode: str, padding: str,
                    align_corners: bool) -> Tensor:
    """GridSample over any number of spatial dims: tap indices and weights from the grid on
    the host, values gathered from ``x`` (gradients reach ``x``, not the grid)."""
    n, c = x.shape[:2]
    spatial = x.shape[2:]
    points = grid.to_numpy().astype(np.float64).reshape(n, -1, len(spatial))[..., ::-1]
    taps: list[list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = []  # per dim
    for d, size in enumerate(spatial):
        coord = points[..., d]
        coord = ((coord + 1) / 2 * (size - 1) if align_corners
                 else ((coord + 1) * size - 1) / 2)
        low, high = (0.0, size - 1.0) if align_corners else (-0.5, size - 0.5)
        if mode == "nearest":
            coord = np.rint(coord)
        outside = (coord < low) | (coord > high)
        if padding == "border":
            coord = np.where(outside, np.clip(coord, 0, size - 1), coord)
        elif padding == "reflection":
            coord = _reflect(coord, low, high)
        base = np.floor(coord)
        if mode == "nearest":
            offsets, weights = [0], [np.ones_like(coord)]
            base = coord
        elif mode == "linear":
            offsets, weights = [0, 1], [1 - (coord - base), coord - base]
        else:
            offsets, weights = [-1, 0, 1, 2], _cubic_taps(coord - base)
        dim_taps = []
        for offset, weight in zip(offsets, weights, strict=True):
            index = base + offset
            valid = np.ones_like(index, dtype=bool)
            if padding == "zeros":
                valid = (index >= 0) & (index <= size - 1)
            elif padding == "reflection":
                index = np.trunc(_reflect(index, low, high))
            index = np.clip(index, 0, size - 1).astype(np.int64)
            dim_taps.append((index, weight, valid))
        taps.append(dim_taps)
    strides = [math.prod(spatial[d + 1:]) for d in range(len(spatial))]
    flat = x.reshape(n, c, -1)
    out: Tensor | None = None
    for combo in np.ndindex(*[len(t) for t in taps]):
        index = sum(taps[d][i][0] * strides[d] for d, i in enumerate(combo))
        weight = np.prod([taps[d][i][1] * taps[d][i][2] for d, i in enumerate(combo)], axis=0)
        index_t = ctx.constant(np.asarray(index, dtype=np.int64)).unsqueeze(1)
        picked = flat.gather(2, index_t.expand(n, c, index_t.shape[2]))
        term = picked * ctx.constant(weight.astype(x.dtype.numpy)).unsqueeze(1)
        out = term if out is None else out + term
    return (flat.narrow(2, 0, 0) if out is None else out).reshape(n, c, *grid.shape[1:-1])


@onnx_op("GridSample", 16, attrs=("align_corners", "mode", "padding_mode"))
@onnx_op("GridSample", 20, attrs=("align_corners", "mode", "padding_mode"))
def _grid_sample(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX GridSample: 2-d bilinear and nearest through ``F.grid_sample`` (differentiable in
    the grid too); cubic and 3-d sampling gather from taps computed on the host."""
    x, grid = ctx.arg(inputs, 0), ctx.arg(inputs, 1)
    mode = attrs.string("mode", "bilinear" if ctx.opset < 20 else "linear")
    mode = {"bilinear": "linear", "bicubic": "cubic"}.get(mode, mode)
    if mode not in ("linear", "nearest", "cubic"):
        ctx.unsupported(f"mode={mode!r}", "mode")
    padding = attrs.string("padding_mode", "zeros")
    if padding not in ("zeros", "border", "reflection"):
        ctx.unsupported(f"padding_mode={padding!r}", "padding_mode")
    align_corners = bool(attrs.int("align_corners", 0))
    if x.ndim == 4 and mode != "cubic":
        return F.grid_sample(x, grid, "bilinear" if mode == "linear" else "nearest", padding,
                             align_corners)
    return _grid_sample_nd(ctx, x, grid, mode, padding, align_corners)


@onnx_op("AffineGrid", 20, attrs=("align_corners",))
def _affine_grid(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX AffineGrid: normalized sampling points of affine maps (``F.affine_grid``)."""
    theta, size = ctx.arg(inputs, 0), ctx.ints(ctx.arg(inputs, 1))
    return F.affine_grid(theta, size, bool(attrs.int("align_corners", 0)))


@onnx_op("CenterCropPad", 18, attrs=("axes",))
def _center_crop_pad(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX CenterCropPad: each given axis cropped or zero-padded to its new length, centred
    (an odd difference puts the extra element at the end when padding, the start when
    cropping)."""
    x, shape = ctx.arg(inputs, 0), ctx.ints(ctx.arg(inputs, 1))
    axes = [a % x.ndim for a in (attrs.ints("axes") or range(x.ndim))]
    for axis, size in zip(axes, shape, strict=True):
        dim = x.shape[axis]
        if size < dim:
            start = (dim - size) // 2
            x = x.narrow(axis, start, size)
        elif size > dim:
            before = (size - dim) // 2
            widths = [(0, 0)] * x.ndim
            widths[axis] = (before, size - dim - before)
            x = _pad_tensor(ctx, x, widths, "constant", 0.0)
    return x


@onnx_op("Col2Im", 18, attrs=("dilations", "pads", "strides"))
def _col2im(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX Col2Im: the columns ``[n, c * prod(block), blocks]`` summed back into an image of
    any rank (``F.fold`` for 2-d images with symmetric pads, else a scatter-add)."""
    x = ctx.arg(inputs, 0)
    image, block = ctx.ints(ctx.arg(inputs, 1)), ctx.ints(ctx.arg(inputs, 2))
    dims = len(image)
    pads = attrs.ints("pads") or [0] * (2 * dims)
    dilations = attrs.ints("dilations") or [1] * dims
    strides = attrs.ints("strides") or [1] * dims
    if dims == 2 and pads[:2] == pads[2:]:
        return F.fold(x, image, block, dilations, pads[:2], strides)
    padded = [size + pads[i] + pads[i + dims] for i, size in enumerate(image)]
    counts = [(p - (k - 1) * d - 1) // s + 1
              for p, k, d, s in zip(padded, block, dilations, strides, strict=True)]
    # Destination of each (kernel offset, block) pair in the padded image, row major.
    kernel = np.stack(np.meshgrid(*[np.arange(k) for k in block], indexing="ij"), -1)
    starts = np.stack(np.meshgrid(*[np.arange(c) for c in counts], indexing="ij"), -1)
    position = (kernel.reshape(-1, 1, dims) * dilations
                + starts.reshape(1, -1, dims) * strides)
    index = np.ravel_multi_index(tuple(np.moveaxis(position, -1, 0)), padded).reshape(-1)
    n, channels = x.shape[0], x.shape[1] // math.prod(block)
    values = x.reshape(n, channels, -1)
    target = Tensor.zeros([n, channels, math.prod(padded)], backend=x.backend,
                          device=x.device, dtype=x.dtype)
    index_t = ctx.constant(index.astype(np.int64)).reshape(1, 1, -1).expand(values.shape)
    out = target.scatter_add(2, index_t, values).reshape(n, channels, *padded)
    return _pad_tensor(ctx, out, [(0, 0), (0, 0)] + [(-pads[i], -pads[i + dims])
                                                     for i in range(dims)], "constant", 0.0)
