"""Resampling images: ``interpolate`` (one backend op for 2-d nearest and bilinear, else one
axis at a time), ``affine_grid`` and ``grid_sample``, ``pixel_shuffle`` and its inverse."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from burnpy.backend.errors import InvalidArgumentError, ShapeError, describe
from burnpy.backend.ops.module_ops import InterpolateMode
from burnpy.nn.functional._common import IntOrTuple, _float, _float_input, _host, _tuple
from burnpy.nn.functional._resize import resize_axis
from burnpy.tensor import Tensor
from burnpy.tensor._core import FLOAT, new
from burnpy.tensor.autocast_hook import autocast_op

_INTERPOLATE_DIMS = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}


def interpolate(x: Tensor, size: IntOrTuple | None = None,
                scale_factor: float | Sequence[float] | None = None, mode: str = "nearest",
                align_corners: bool | None = None,
                recompute_scale_factor: bool | None = None) -> Tensor:
    """Resize ``[n, c, *spatial]`` by ``size`` or ``scale_factor``: "nearest" (1 to 3 spatial
    dims), "linear" (1), "bilinear" or "bicubic" (2, cubic convolution with torch's A=-0.75
    and clamped border taps), "trilinear" (3). As torch's, a given ``scale_factor`` maps output
    coordinates through that factor unless ``recompute_scale_factor=True``, which uses the
    output size."""
    op = "interpolate"
    if mode != "nearest" and mode not in _INTERPOLATE_DIMS:
        raise InvalidArgumentError(f"{op}: mode must be 'nearest', 'linear', 'bilinear', "
                                   f"'bicubic' or 'trilinear', got {mode!r}")
    n = _INTERPOLATE_DIMS.get(mode, min(max(x.ndim - 2, 1), 3))
    _float_input(op, x, n)
    if mode == "nearest" and align_corners:
        raise InvalidArgumentError(f"{op}: align_corners only applies to the linear and cubic "
                                   f"modes")
    if (size is None) == (scale_factor is None):
        raise InvalidArgumentError(f"{op}: give exactly one of size and scale_factor")
    factors: tuple[float, ...] | None = None
    if size is not None:
        out = _tuple(op, "size", size, n, 1)
    else:
        given = (scale_factor,) * n if isinstance(scale_factor, int | float) else tuple(
            scale_factor)  # type: ignore[arg-type]
        if len(given) != n or any(f <= 0 for f in given):
            raise InvalidArgumentError(f"{op}: scale_factor must be {n} positive number(s), "
                                       f"got {scale_factor!r}")
        out = tuple(int(s * f) for s, f in zip(x.shape[2:], given, strict=True))
        if any(o < 1 for o in out):
            raise ShapeError(f"{op}: scale_factor {scale_factor} gives an empty output")
        if not recompute_scale_factor and any(
                s / o != 1 / f for s, o, f in zip(x.shape[2:], out, given, strict=True)):
            factors = tuple(float(f) for f in given)
    if n == 2 and mode in ("nearest", "bilinear") and (factors is None or (
            mode == "bilinear" and align_corners)):
        checked: InterpolateMode = "nearest" if mode == "nearest" else "bilinear"
        return new(x.backend, x.backend.interpolate(x.primitive, out, checked,
                                                    bool(align_corners)), FLOAT)
    axis_mode = "nearest" if mode == "nearest" else "cubic" if mode == "bicubic" else "linear"
    for d, o in enumerate(out):
        x = resize_axis(x, 2 + d, o, None if factors is None else factors[d], axis_mode,
                        bool(align_corners))
    return x


def affine_grid(theta: Tensor, size: Sequence[int], align_corners: bool | None = None
                ) -> Tensor:
    """The sampling grid ``[n, h, w, 2]`` (or ``[n, d, h, w, 3]``) of the affine maps
    ``theta [n, 2, 3]`` (``[n, 3, 4]``) over normalized output coordinates in [-1, 1]."""
    op = "affine_grid"
    _float(op, theta, "theta")
    dims = tuple(size)[2:]
    if len(dims) not in (2, 3) or theta.shape != (size[0], len(dims), len(dims) + 1):
        raise ShapeError(f"{op}: theta [n, {len(dims)}, {len(dims) + 1}] expected for size "
                         f"{tuple(size)}, got {describe(theta.shape)}")

    def axis(steps: int) -> np.ndarray:
        if steps == 1:
            return np.zeros(1)
        if align_corners:
            return np.linspace(-1.0, 1.0, steps)
        return (np.arange(steps) * 2 + 1) / steps - 1

    # Coordinates in (x, y[, z]) order: the last spatial dim varies along x.
    mesh = np.meshgrid(*[axis(s) for s in dims], indexing="ij")[::-1]
    base = np.stack([*mesh, np.ones(dims)], axis=-1).reshape(1, -1, len(dims) + 1)
    grid = _host(theta, base) @ theta.mT
    return grid.reshape(size[0], *dims, len(dims))


def _source_coordinate(coord: Tensor, size: int, padding_mode: str,
                       align_corners: bool) -> Tensor:
    """Normalized grid coordinates to input pixel coordinates, folded by ``padding_mode``."""
    pos = (coord + 1.0) * ((size - 1) / 2) if align_corners else ((coord + 1.0) * size - 1.0) / 2
    if padding_mode == "reflection":
        low, span = (0.0, float(size - 1)) if align_corners else (-0.5, float(size))
        if span <= 0:
            return pos * 0.0
        dist = (pos - low).abs()
        flips = (dist / span).floor().detach()
        extra = dist - flips * span
        even = (flips.remainder(2.0) == 0)
        pos = (low + span - extra).mask_where(even, extra + low)
    if padding_mode in ("border", "reflection"):
        pos = pos.clamp(0.0, float(size - 1))
    return pos


@autocast_op("grid_sample")
def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear",
                padding_mode: str = "zeros", align_corners: bool | None = None) -> Tensor:
    """Sample ``input [n, c, h, w]`` at the normalized (x, y) points of ``grid
    [n, oh, ow, 2]``: "bilinear" or "nearest", outside points read as zeros, the border
    or the reflection."""
    op = "grid_sample"
    _float_input(op, input, 2)
    _float(op, grid, "grid")
    n, c, h, w = input.shape
    if grid.ndim != 4 or grid.shape[0] != n or grid.shape[3] != 2:
        raise ShapeError(f"{op}: grid must be [{n}, oh, ow, 2] for input "
                         f"{describe(input.shape)}, got {describe(grid.shape)}")
    if mode not in ("bilinear", "nearest"):
        raise InvalidArgumentError(f"{op}: mode must be 'bilinear' or 'nearest', got {mode!r}")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise InvalidArgumentError(f"{op}: padding_mode must be 'zeros', 'border' or "
                                   f"'reflection', got {padding_mode!r}")
    oh, ow = grid.shape[1], grid.shape[2]
    ix = _source_coordinate(grid[..., 0], w, padding_mode, bool(align_corners))
    iy = _source_coordinate(grid[..., 1], h, padding_mode, bool(align_corners))
    flat = input.reshape(n, c, h * w)

    def read(xi: Tensor, yi: Tensor) -> Tensor:
        """``input`` at integer float coordinates, zero outside: ``[n, c, oh, ow]``."""
        inside = (xi >= 0) & (xi <= w - 1) & (yi >= 0) & (yi <= h - 1)
        index = (yi.clamp(0, h - 1) * w + xi.clamp(0, w - 1)).cast(input.backend.int_dtype)
        index = index.reshape(n, 1, oh * ow).expand(n, c, oh * ow)
        values = flat.gather(2, index).reshape(n, c, oh, ow)
        return values.mask_fill(~inside.unsqueeze(1), 0.0)

    if mode == "nearest":
        return read(ix.detach().round(), iy.detach().round())
    x0, y0 = ix.detach().floor(), iy.detach().floor()
    wx1, wy1 = (ix - x0).unsqueeze(1), (iy - y0).unsqueeze(1)
    wx0, wy0 = 1.0 - wx1, 1.0 - wy1
    return (read(x0, y0) * wx0 * wy0 + read(x0 + 1, y0) * wx1 * wy0
            + read(x0, y0 + 1) * wx0 * wy1 + read(x0 + 1, y0 + 1) * wx1 * wy1)


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """``[*, c * r^2, h, w]`` to ``[*, c, h * r, w * r]``."""
    r = upscale_factor
    if input.ndim < 3 or r < 1 or input.shape[-3] % (r * r):
        raise ShapeError(f"pixel_shuffle: input [*, c * {r}^2, h, w] expected, got "
                         f"{describe(input.shape)}")
    *lead, c, h, w = input.shape
    k = len(lead)
    x = input.reshape(*lead, c // (r * r), r, r, h, w)
    x = x.permute(*range(k), k, k + 3, k + 1, k + 4, k + 2)
    return x.reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """``[*, c, h * r, w * r]`` to ``[*, c * r^2, h, w]`` (the inverse of pixel_shuffle)."""
    r = downscale_factor
    if input.ndim < 3 or r < 1 or input.shape[-1] % r or input.shape[-2] % r:
        raise ShapeError(f"pixel_unshuffle: input [*, c, h * {r}, w * {r}] expected, got "
                         f"{describe(input.shape)}")
    *lead, c, h, w = input.shape
    k = len(lead)
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    x = x.permute(*range(k), k, k + 2, k + 4, k + 1, k + 3)
    return x.reshape(*lead, c * r * r, h // r, w // r)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """``[n, c, *]`` with its channels, read as ``groups`` groups of ``c / groups``,
    interleaved (ShuffleNet's shuffle): channel ``g * (c / groups) + i`` moves to
    ``i * groups + g``."""
    if input.ndim < 3 or groups < 1 or input.shape[1] % groups:
        raise ShapeError(f"channel_shuffle: input [n, c, *] (3-d or more) with c divisible by "
                         f"groups={groups} expected, got {describe(input.shape)}")
    n, c = input.shape[:2]
    x = input.reshape(n, groups, c // groups, *input.shape[2:])
    return x.transpose(1, 2).reshape(input.shape)
