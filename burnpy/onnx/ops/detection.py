"""ONNX object-detection operators: NonMaxSuppression, RoiAlign, MaxRoiPool and DeformConv.

RoiAlign and DeformConv sample the input bilinearly with gathers whose integer corners are
computed on the host (RoiAlign, from the box coordinates) or detached (DeformConv, from the
offsets), so both differentiate under Autodiff in the input, and DeformConv also in the
weights, the offsets and the mask. MaxRoiPool crops each box and max-pools it adaptively.
NonMaxSuppression produces indices, so it runs on the host with NumPy.
"""

from __future__ import annotations

import math

import numpy as np

import burnpy.nn.functional as F
from burnpy.backend.dtype import DType
from burnpy.onnx.attributes import Attributes
from burnpy.onnx.registry import OpContext, Outputs, onnx_op
from burnpy.tensor import Tensor, cat

Inputs = list[Tensor | None]


def _corners(y: np.ndarray, x: np.ndarray, height: int, width: int
             ) -> tuple[np.ndarray, np.ndarray]:
    """RoiAlign's bilinear taps at points (y, x): flat indices [..., 4] into a height x
    width plane and their weights [..., 4], zero for points beyond one pixel outside."""
    outside = (y < -1.0) | (y > height) | (x < -1.0) | (x > width)
    y, x = np.maximum(y, 0.0), np.maximum(x, 0.0)
    y_low, x_low = y.astype(np.int64), x.astype(np.int64)
    y_edge, x_edge = y_low >= height - 1, x_low >= width - 1
    y_low = np.where(y_edge, height - 1, y_low)
    x_low = np.where(x_edge, width - 1, x_low)
    y = np.where(y_edge, y_low, y)
    x = np.where(x_edge, x_low, x)
    y_high = np.where(y_edge, y_low, y_low + 1)
    x_high = np.where(x_edge, x_low, x_low + 1)
    ly, lx = y - y_low, x - x_low
    hy, hx = 1.0 - ly, 1.0 - lx
    index = np.stack([y_low * width + x_low, y_low * width + x_high,
                      y_high * width + x_low, y_high * width + x_high], -1)
    weight = np.stack([hy * hx, hy * lx, ly * hx, ly * lx], -1)
    keep = ~outside[..., None]
    return np.where(keep, index, 0), np.where(keep, weight, 0.0)


@onnx_op("RoiAlign", 10, attrs=("mode", "output_height", "output_width", "sampling_ratio",
                                "spatial_scale"))
@onnx_op("RoiAlign", 16, attrs=("coordinate_transformation_mode", "mode", "output_height",
                                "output_width", "sampling_ratio", "spatial_scale"))
def _roi_align(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX RoiAlign: each box of ``rois [r, 4]`` (x1, y1, x2, y2) on image
    ``batch_indices[r]`` of ``X [n, c, h, w]`` pooled to ``[r, c, out_h, out_w]`` by
    averaging (or taking the largest weighted tap of) a grid of bilinear samples per bin.
    Opset 10 boxes are "output_half_pixel" (no half-pixel shift, at least one pixel)."""
    x, rois, batch = ctx.arg(inputs, 0), ctx.arg(inputs, 1), ctx.arg(inputs, 2)
    if x.kind != "float" or x.ndim != 4:
        ctx.error(f"X must be a float [n, c, h, w] tensor, got {x.dtype!r} {x.shape}")
    if rois.ndim != 2 or rois.shape[1] != 4 or batch.shape != (rois.shape[0],):
        ctx.error(f"rois [r, 4] and batch_indices [r] expected, got {rois.shape} and "
                  f"{batch.shape}")
    mode = attrs.string("mode", "avg")
    if mode not in ("avg", "max"):
        ctx.unsupported(f"mode {mode!r}", "mode")
    transform = attrs.string("coordinate_transformation_mode",
                             "half_pixel" if ctx.opset >= 16 else "output_half_pixel")
    if transform not in ("half_pixel", "output_half_pixel"):
        ctx.unsupported(f"coordinate_transformation_mode {transform!r}",
                        "coordinate_transformation_mode")
    half_pixel = transform == "half_pixel"
    out_h, out_w = attrs.int("output_height", 1), attrs.int("output_width", 1)
    ratio = attrs.int("sampling_ratio", 0)
    scale = attrs.float("spatial_scale", 1.0)
    n, c, height, width = x.shape
    boxes = rois.to_numpy().astype(np.float64) * scale - (0.5 if half_pixel else 0.0)
    images = batch.to_numpy().astype(np.int64).reshape(-1)
    if images.size and (images.min() < 0 or images.max() >= n):
        ctx.error(f"batch_indices must lie in [0, {n}), got {images.tolist()}")
    r = boxes.shape[0]
    sizes = boxes[:, 2:] - boxes[:, :2]  # (w, h)
    if not half_pixel:
        sizes = np.maximum(sizes, 1.0)
    grid_h = [ratio if ratio > 0 else max(math.ceil(s / out_h), 0) for s in sizes[:, 1]]
    grid_w = [ratio if ratio > 0 else max(math.ceil(s / out_w), 0) for s in sizes[:, 0]]
    samples = max([gh * gw for gh, gw in zip(grid_h, grid_w, strict=True)] + [1])
    index = np.zeros((r, out_h, out_w, samples, 4), dtype=np.int64)
    weight = np.zeros((r, out_h, out_w, samples, 4))
    valid = np.zeros((r, 1, 1, samples), dtype=bool)
    for i in range(r):
        gh, gw = grid_h[i], grid_w[i]
        bin_h, bin_w = sizes[i, 1] / out_h, sizes[i, 0] / out_w
        ys = boxes[i, 1] + np.arange(out_h)[:, None] * bin_h + \
            (np.arange(gh)[None, :] + 0.5) * bin_h / max(gh, 1)
        xs = boxes[i, 0] + np.arange(out_w)[:, None] * bin_w + \
            (np.arange(gw)[None, :] + 0.5) * bin_w / max(gw, 1)
        yy = np.broadcast_to(ys[:, None, :, None], (out_h, out_w, gh, gw))
        xx = np.broadcast_to(xs[None, :, None, :], (out_h, out_w, gh, gw))
        idx, wgt = _corners(yy.reshape(out_h, out_w, -1), xx.reshape(out_h, out_w, -1),
                            height, width)
        index[i, :, :, :gh * gw] = idx
        weight[i, :, :, :gh * gw] = wgt / (max(gh * gw, 1) if mode == "avg" else 1.0)
        valid[i, :, :, :gh * gw] = True
    taps = out_h * out_w * samples * 4
    planes = x.reshape(n, c, height * width).index_select(
        0, ctx.constant(images, np.int64).cast(ctx.backend.int_dtype))
    where = ctx.constant(index.reshape(r, 1, taps)).cast(ctx.backend.int_dtype)
    values = planes.gather(2, where.expand(r, c, taps))
    weighted = (values * ctx.constant(weight.reshape(r, 1, taps)).cast(x.dtype)).reshape(
        r, c, out_h, out_w, samples, 4)
    if mode == "avg":
        return weighted.sum(-1).sum(-1)
    best = weighted.amax(-1)
    keep = ctx.constant(np.broadcast_to(valid[:, None], best.shape).copy())
    return best.mask_fill(~keep, -math.inf).amax(-1)


def _round_half_away(v: float) -> int:
    return int(math.copysign(math.floor(abs(v) + 0.5), v))


@onnx_op("MaxRoiPool", 1, attrs=("pooled_shape", "spatial_scale"))
def _max_roi_pool(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX MaxRoiPool: each box of ``rois [r, 5]`` (image, x1, y1, x2, y2, scaled and
    rounded to pixels, both ends included) max-pooled to ``pooled_shape`` bins that split
    the box as adaptive pooling does; bins entirely outside the image are 0."""
    x, rois = ctx.arg(inputs, 0), ctx.arg(inputs, 1)
    if x.kind != "float" or x.ndim != 4 or rois.ndim != 2 or rois.shape[1] != 5:
        ctx.error(f"X [n, c, h, w] float and rois [r, 5] expected, got {x.dtype!r} "
                  f"{x.shape} and {rois.shape}")
    pooled = attrs.ints("pooled_shape")
    if pooled is None or len(pooled) != 2 or min(pooled) < 1:
        ctx.error(f"pooled_shape must be two positive ints, got {pooled}")
    scale = attrs.float("spatial_scale", 1.0)
    n, c, height, width = x.shape
    outs = []
    for image, *corners in rois.to_numpy().astype(np.float64).tolist():
        b = int(image)
        if not 0 <= b < n:
            ctx.error(f"roi image index {b} is outside [0, {n})")
        x1, y1, x2, y2 = (_round_half_away(v * scale) for v in corners)
        h, w = max(y2 - y1 + 1, 1), max(x2 - x1 + 1, 1)
        if y1 >= height or x1 >= width or y1 + h <= 0 or x1 + w <= 0:
            outs.append(Tensor.zeros((1, c, *pooled), backend=ctx.backend, device=x.device,
                                     dtype=x.dtype))
            continue
        region = F.pad(x[b:b + 1], (-x1, x1 + w - width, -y1, y1 + h - height),
                       value=-math.inf)
        best = F.adaptive_max_pool2d(region, pooled)
        outs.append(best.mask_fill(best.is_inf(), 0.0))
    if not outs:
        return Tensor.zeros((0, c, *pooled), backend=ctx.backend, device=x.device,
                            dtype=x.dtype)
    return cat(outs, 0)


@onnx_op("DeformConv", 19, attrs=("dilations", "group", "kernel_shape", "offset_group",
                                  "pads", "strides"))
def _deform_conv(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX DeformConv (2-d): each kernel tap reads ``X`` bilinearly (zero outside) at its
    regular position moved by ``offset [n, offset_group * kh * kw * 2, oh, ow]`` ((y, x)
    per tap), scaled by ``mask`` when given, then a grouped convolution with ``W``."""
    x, w, offset = ctx.arg(inputs, 0), ctx.arg(inputs, 1), ctx.arg(inputs, 2)
    bias, mask = ctx.optional(inputs, 3), ctx.optional(inputs, 4)
    if x.ndim != 4:
        ctx.unsupported(f"a {x.ndim - 2}-d DeformConv (input shape {x.shape})")
    n, ic, height, width = x.shape
    oc, icg, kh, kw = w.shape
    group, og = attrs.int("group", 1), attrs.int("offset_group", 1)
    kernel = attrs.ints("kernel_shape") or [kh, kw]
    sh, sw = attrs.ints("strides") or [1, 1]
    dh, dw = attrs.ints("dilations") or [1, 1]
    top, left, bottom, right = attrs.ints("pads") or [0, 0, 0, 0]
    oh = (height + top + bottom - (kh - 1) * dh - 1) // sh + 1
    ow = (width + left + right - (kw - 1) * dw - 1) // sw + 1
    taps = kh * kw
    if list(kernel) != [kh, kw] or icg * group != ic or oc % group or ic % og:
        ctx.error(f"W {w.shape} does not fit X {x.shape} with group {group}, offset_group "
                  f"{og} and kernel_shape {kernel}")
    if offset.shape != (n, og * taps * 2, oh, ow):
        ctx.error(f"offset must be [{n}, {og * taps * 2}, {oh}, {ow}], got {offset.shape}")
    if mask is not None and mask.shape != (n, og * taps, oh, ow):
        ctx.error(f"mask must be [{n}, {og * taps}, {oh}, {ow}], got {mask.shape}")
    ky, kx = np.meshgrid(np.arange(kh) * dh, np.arange(kw) * dw, indexing="ij")
    oy, ox = np.meshgrid(np.arange(oh) * sh - top, np.arange(ow) * sw - left, indexing="ij")
    base_y = (ky.reshape(taps, 1, 1) + oy[None]).astype(np.float64)
    base_x = (kx.reshape(taps, 1, 1) + ox[None]).astype(np.float64)
    moves = offset.reshape(n, og, taps, 2, oh, ow)
    py = moves[:, :, :, 0] + ctx.constant(base_y).cast(x.dtype)
    px = moves[:, :, :, 1] + ctx.constant(base_x).cast(x.dtype)
    y0, x0 = py.detach().floor(), px.detach().floor()
    wy1, wx1 = py - y0, px - x0
    planes = x.reshape(n, og, ic // og, height * width)
    points = taps * oh * ow
    sampled: Tensor | None = None
    for dy, wy in ((0, 1.0 - wy1), (1, wy1)):
        for dx, wx in ((0, 1.0 - wx1), (1, wx1)):
            yi, xi = y0 + dy, x0 + dx
            inside = (yi >= 0) & (yi <= height - 1) & (xi >= 0) & (xi <= width - 1)
            flat = (yi.clamp(0, height - 1) * width + xi.clamp(0, width - 1)).cast(
                ctx.backend.int_dtype).reshape(n, og, 1, points)
            values = planes.gather(3, flat.expand(n, og, ic // og, points))
            tap = (wy * wx).mask_fill(~inside, 0.0).reshape(n, og, 1, points)
            sampled = values * tap if sampled is None else sampled + values * tap
    assert sampled is not None
    if mask is not None:
        sampled = sampled * mask.reshape(n, og, 1, points)
    columns = sampled.reshape(n, group, icg * taps, oh * ow)
    out = w.reshape(1, group, oc // group, icg * taps) @ columns
    out = out.reshape(n, oc, oh, ow)
    return out if bias is None else out + bias.reshape(1, oc, 1, 1)


@onnx_op("NonMaxSuppression", 10, attrs=("center_point_box",))
def _non_max_suppression(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX NonMaxSuppression: per image and class, boxes by decreasing score (above
    score_threshold when given), each kept unless its IoU with a kept box exceeds
    iou_threshold, at most max_output_boxes_per_class (0 when omitted); returns
    ``[selected, 3]`` int64 (image, class, box). Computed on the host: it makes indices."""
    boxes_t, scores_t = ctx.arg(inputs, 0), ctx.arg(inputs, 1)
    limit_t, iou_t = ctx.optional(inputs, 2), ctx.optional(inputs, 3)
    score_t = ctx.optional(inputs, 4)
    boxes, scores = boxes_t.to_numpy().astype(np.float64), scores_t.to_numpy()
    if boxes.ndim != 3 or boxes.shape[2] != 4 or scores.ndim != 3 or \
            scores.shape[0] != boxes.shape[0] or scores.shape[2] != boxes.shape[1]:
        ctx.error(f"boxes [n, boxes, 4] and scores [n, classes, boxes] expected, got "
                  f"{boxes.shape} and {scores.shape}")
    center = attrs.int("center_point_box", 0)
    if center not in (0, 1):
        ctx.error(f"center_point_box must be 0 or 1, got {center}")
    limit = max(int(ctx.scalar(limit_t)), 0) if limit_t is not None and limit_t.numel() \
        else 0
    iou_limit = ctx.scalar(iou_t) if iou_t is not None and iou_t.numel() else 0.0
    score_limit = ctx.scalar(score_t) if score_t is not None and score_t.numel() else None
    if center:
        half = boxes[..., 2:] / 2
        lows, highs = boxes[..., :2] - half, boxes[..., :2] + half  # (x, y)
    else:
        lows = np.minimum(boxes[..., :2], boxes[..., 2:])[..., ::-1]  # (x, y)
        highs = np.maximum(boxes[..., :2], boxes[..., 2:])[..., ::-1]
    areas = np.prod(highs - lows, -1)
    selected: list[tuple[int, int, int]] = []
    for image in range(boxes.shape[0]):
        lo, hi, area = lows[image], highs[image], areas[image]
        for cls in range(scores.shape[1]):
            row = scores[image, cls]
            order = np.argsort(-row.astype(np.float64), kind="stable")
            if score_limit is not None:
                order = order[row[order] > score_limit]
            kept: list[int] = []
            for box in order.tolist():
                if len(kept) >= limit:
                    break
                if kept:
                    k = np.asarray(kept)
                    inter = np.prod(np.clip(np.minimum(hi[k], hi[box])
                                            - np.maximum(lo[k], lo[box]), 0.0, None), -1)
                    union = area[k] + area[box] - inter
                    with np.errstate(divide="ignore", invalid="ignore"):
                        iou = np.where((inter > 0) & (area[k] > 0) & (area[box] > 0)
                                       & (union > 0), inter / union, 0.0)
                    if (iou > iou_limit).any():
                        continue
                kept.append(box)
                selected.append((image, cls, box))
    return ctx.constant(np.asarray(selected, dtype=np.int64).reshape(-1, 3)).cast(
        DType.int64)
