"""Pools of ``[batch, channels, *spatial]`` (or unbatched) inputs with torch's signatures and
defaults (stride = kernel): average, max, adaptive and power-average. The 1-d and 2-d average,
max and adaptive-average pools are one backend op; the 3-d, adaptive-max and power pools are
compositions of Tensor ops over the unfolded windows."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from burnpy.backend.distribution import Distribution
from burnpy.backend.errors import InvalidArgumentError, ShapeError, describe
from burnpy.backend.ops.module_ops import pool_output_size
from burnpy.nn.functional._common import IntOrTuple, _float_input, _host, _ints, _tuple, _unbatched
from burnpy.nn.functional.padding import pad
from burnpy.tensor import Tensor
from burnpy.tensor._core import FLOAT, INT, new
from burnpy.tensor.autocast_hook import autocast_op


def _pool_args(op: str, n: int, x: Tensor, kernel_size: IntOrTuple, stride: IntOrTuple | None,
               padding: IntOrTuple, dilation: IntOrTuple,
               ceil_mode: bool) -> tuple[tuple[int, ...], ...]:
    _float_input(op, x, n)
    k = _tuple(op, "kernel_size", kernel_size, n, 1)
    st = k if stride is None or stride == () else _tuple(op, "stride", stride, n, 1)
    pad = _tuple(op, "padding", padding, n, 0)
    dil = _tuple(op, "dilation", dilation, n, 1)
    for kk, p in zip(k, pad, strict=True):
        if p * 2 > kk:
            raise InvalidArgumentError(f"{op}: padding {pad} must be at most half the kernel "
                                       f"{k}")
    for size, kk, s, p, d in zip(x.shape[2:], k, st, pad, dil, strict=True):
        if pool_output_size(size, kk, s, p, d, ceil_mode) < 1:
            raise ShapeError(f"{op}: kernel {k} does not fit the input {describe(x.shape)} "
                             f"with padding {pad}")
    return k, st, pad, dil


def avg_pool1d(x: Tensor, kernel_size: IntOrTuple, stride: IntOrTuple | None = None,
               padding: IntOrTuple = 0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """1-d average pool (torch's defaults: stride = kernel, padding counted); unbatched input
    taken as a batch of one, ``divisor_override`` divides each window's sum instead of its
    size."""
    return _avg_pool("avg_pool1d", 1, x, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


def avg_pool2d(x: Tensor, kernel_size: IntOrTuple, stride: IntOrTuple | None = None,
               padding: IntOrTuple = 0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """2-d average pool; unbatched input taken as a batch of one, ``divisor_override`` divides
    each window's sum instead of its size."""
    return _avg_pool("avg_pool2d", 2, x, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


def _avg_pool(op: str, n: int, x: Tensor, kernel_size: IntOrTuple, stride: IntOrTuple | None,
              padding: IntOrTuple, ceil_mode: bool, count_include_pad: bool,
              divisor_override: int | None) -> Tensor:
    if _unbatched(x, n):
        return _avg_pool(op, n, x.unsqueeze(0), kernel_size, stride, padding, ceil_mode,
                         count_include_pad, divisor_override).squeeze(0)
    k, st, pad, _ = _pool_args(op, n, x, kernel_size, stride, padding, 1, ceil_mode)
    if divisor_override is None:
        return new(x.backend, x.backend.avg_pool(x.primitive, k, st, pad, count_include_pad,
                                                 ceil_mode), FLOAT)
    if divisor_override == 0:
        raise InvalidArgumentError(f"{op}: divisor_override must not be 0")
    mean = new(x.backend, x.backend.avg_pool(x.primitive, k, st, pad, True, ceil_mode), FLOAT)
    # The window sizes the padded mean divided by (windows past the padding are clipped).
    sizes: Tensor | None = None
    for i, (size, kk, s, p) in enumerate(zip(x.shape[2:], k, st, pad, strict=True)):
        out = pool_output_size(size, kk, s, p, 1, ceil_mode)
        counts = [min(o * s - p + kk, size + p) - (o * s - p) for o in range(out)]
        shape = [1] * x.ndim
        shape[2 + i] = out
        axis = Tensor.from_data(counts, backend=x.backend, device=x.device,
                                dtype=x.dtype).reshape(shape)
        sizes = axis if sizes is None else sizes * axis
    assert sizes is not None
    return mean * (sizes / float(divisor_override))


def _max_pool(op: str, n: int, x: Tensor, kernel_size: IntOrTuple, stride: IntOrTuple | None,
              padding: IntOrTuple, dilation: IntOrTuple, ceil_mode: bool,
              return_indices: bool) -> Tensor | tuple[Tensor, Tensor]:
    if _unbatched(x, n):
        out = _max_pool(op, n, x.unsqueeze(0), kernel_size, stride, padding, dilation,
                        ceil_mode, return_indices)
        if isinstance(out, tuple):
            return out[0].squeeze(0), out[1].squeeze(0)
        return out.squeeze(0)
    k, st, pad, dil = _pool_args(op, n, x, kernel_size, stride, padding, dilation, ceil_mode)
    b = x.backend
    if return_indices:
        values, indices = b.max_pool_with_indices(x.primitive, k, st, pad, dil, ceil_mode)
        return new(b, values, FLOAT), new(b, indices, INT)
    return new(b, b.max_pool(x.primitive, k, st, pad, dil, ceil_mode), FLOAT)


def max_pool1d(x: Tensor, kernel_size: IntOrTuple, stride: IntOrTuple | None = None,
               padding: IntOrTuple = 0, dilation: IntOrTuple = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> Any:
    """1-d max pool; with ``return_indices`` also the flat input index of each max."""
    return _max_pool("max_pool1d", 1, x, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


def max_pool2d(x: Tensor, kernel_size: IntOrTuple, stride: IntOrTuple | None = None,
               padding: IntOrTuple = 0, dilation: IntOrTuple = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> Any:
    """2-d max pool; with ``return_indices`` also the flat index within each input plane."""
    return _max_pool("max_pool2d", 2, x, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


def _adaptive_avg(op: str, n: int, x: Tensor, output_size: int | Sequence[int | None]) -> Tensor:
    if _unbatched(x, n):
        return _adaptive_avg(op, n, x.unsqueeze(0), output_size).squeeze(0)
    _float_input(op, x, n)
    # None keeps that dim's input size (torch's rule).
    spec: IntOrTuple = output_size if isinstance(output_size, int) else tuple(
        x.shape[2 + i] if o is None else o
        for i, o in enumerate(output_size) if o is not None or 2 + i < x.ndim)
    size = _tuple(op, "output_size", spec, n, 1)
    return new(x.backend, x.backend.adaptive_avg_pool(x.primitive, size), FLOAT)


def adaptive_avg_pool1d(x: Tensor, output_size: int | Sequence[int | None]) -> Tensor:
    """Average pool to a fixed output length (None keeps the input's)."""
    return _adaptive_avg("adaptive_avg_pool1d", 1, x, output_size)


def adaptive_avg_pool2d(x: Tensor, output_size: int | Sequence[int | None]) -> Tensor:
    """Average pool to a fixed output height and width (None keeps the input's)."""
    return _adaptive_avg("adaptive_avg_pool2d", 2, x, output_size)


def _windows(op: str, x: Tensor, n: int, kernel_size: IntOrTuple, stride: IntOrTuple | None,
             padding: IntOrTuple, dilation: IntOrTuple, ceil_mode: bool,
             fill: float) -> tuple[Tensor, list[int], tuple[tuple[int, ...], ...]]:
    """The pooling windows of ``[b, c, *n]`` as ``[b, c, *out, *kernel]`` (padded with
    ``fill``), the trailing ceil-mode extension of each dim, and (kernel, stride, padding,
    dilation)."""
    _float_input(op, x, n)
    k = _ints(op, "kernel_size", kernel_size, n, 1)
    s = k if stride is None or stride == () else _ints(op, "stride", stride, n, 1)
    p = _ints(op, "padding", padding, n, 0)
    d = _ints(op, "dilation", dilation, n, 1)
    if any(pp * 2 > kk for pp, kk in zip(p, k, strict=True)):
        raise InvalidArgumentError(f"{op}: padding {p} must be at most half the kernel {k}")
    widths: list[int] = []
    extras: list[int] = []
    for i in range(n):
        size, span = x.shape[2 + i], d[i] * (k[i] - 1) + 1
        top = size + 2 * p[i] - span
        count = (-(-top // s[i]) if ceil_mode else top // s[i]) + 1
        if ceil_mode and (count - 1) * s[i] >= size + p[i]:
            count -= 1
        if top < 0 or count < 1:
            raise ShapeError(f"{op}: kernel {k} does not fit the input {describe(x.shape)} "
                             f"with padding {p}")
        extra = max((count - 1) * s[i] + span - (size + 2 * p[i]), 0)
        extras.append(extra)
        widths = [p[i], p[i] + extra, *widths]
    padded = pad(x, widths, value=fill) if any(widths) else x
    for i in range(n):
        span = d[i] * (k[i] - 1) + 1
        padded = padded.unfold(2 + i, span, s[i])
    if any(dd > 1 for dd in d):
        padded = padded[(Ellipsis, *(slice(None, None, dd) for dd in d))]
    return padded, extras, (k, s, p, d)


@autocast_op("avg_pool3d")
def avg_pool3d(input: Tensor, kernel_size: IntOrTuple, stride: IntOrTuple | None = None,
               padding: IntOrTuple = 0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """3-d average pool of ``[n, c, d, h, w]`` or unbatched ``[c, d, h, w]`` (torch's
    defaults: stride = kernel)."""
    op = "avg_pool3d"
    if input.ndim == 4:  # unbatched [c, d, h, w], as torch: a batch of one
        return avg_pool3d(input.unsqueeze(0), kernel_size, stride, padding, ceil_mode,
                          count_include_pad, divisor_override).squeeze(0)
    win, extras, (k, s, p, _) = _windows(op, input, 3, kernel_size, stride, padding, 1,
                                         ceil_mode, 0.0)
    total = win.sum((-3, -2, -1))
    if divisor_override is not None:
        if divisor_override == 0:  # torch takes any other int, a negative one too
            raise InvalidArgumentError(f"{op}: divisor_override must not be 0")
        return total / float(divisor_override)
    return total / _divisor(input, k, s, p, extras, count_include_pad)


def _divisor(x: Tensor, k: tuple[int, ...], s: tuple[int, ...], p: tuple[int, ...],
             extras: list[int], count_include_pad: bool) -> Tensor:
    """The cell count of each pooling window: its cells inside the padded (or, without
    ``count_include_pad``, the original) input; ceil mode's extension never counts."""
    inner = [pp if count_include_pad else 0 for pp in p]
    counts = np.pad(np.ones(x.shape[2:]), [(ii, ii) for ii in inner], constant_values=1.0)
    counts = np.pad(counts, [(pp - ii, pp - ii + e) for pp, ii, e in zip(p, inner, extras,
                                                                         strict=True)])
    for i in range(len(k)):
        counts = np.lib.stride_tricks.sliding_window_view(counts, k[i], axis=i)[
            (slice(None),) * i + (slice(None, None, s[i]),)]
    return _host(x, counts.sum(axis=tuple(range(-len(k), 0))))


@autocast_op("max_pool3d")
def max_pool3d(input: Tensor, kernel_size: IntOrTuple, stride: IntOrTuple | None = None,
               padding: IntOrTuple = 0, dilation: IntOrTuple = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> Any:
    """3-d max pool of ``[n, c, d, h, w]`` or unbatched ``[c, d, h, w]``; with
    ``return_indices`` also the flat index of each max within the input's ``d * h * w`` volume
    (in the backend's int dtype, as ``max_pool2d``'s)."""
    op = "max_pool3d"
    if input.ndim == 4:  # unbatched [c, d, h, w], as torch: a batch of one
        out = max_pool3d(input.unsqueeze(0), kernel_size, stride, padding, dilation, ceil_mode,
                         return_indices)
        return (out[0].squeeze(0), out[1].squeeze(0)) if return_indices else out.squeeze(0)
    win, _, (k, s, p, d) = _windows(op, input, 3, kernel_size, stride, padding, dilation,
                                    ceil_mode, -math.inf)
    n, c, od, oh, ow = win.shape[:5]
    values, local = win.reshape(n, c, od, oh, ow, -1).max(-1)
    if not return_indices:
        return values
    sizes = input.shape[2:]
    kz, rest = local // (k[1] * k[2]), local % (k[1] * k[2])
    ky, kx = rest // k[2], rest % k[2]
    grids = np.meshgrid(np.arange(od), np.arange(oh), np.arange(ow), indexing="ij")
    starts = [_host(input, (g * s[i] - p[i]).astype(np.int64)) for i, g in enumerate(grids)]
    z, y, x = (starts[0] + kz * d[0], starts[1] + ky * d[1], starts[2] + kx * d[2])
    return values, (z * sizes[1] + y) * sizes[2] + x


def _adaptive_bounds(size: int, out: int) -> list[tuple[int, int]]:
    """torch's adaptive windows: [floor(i * size / out), ceil((i + 1) * size / out))."""
    return [(i * size // out, -(-(i + 1) * size // out)) for i in range(out)]


def _adaptive_by_dims(op: str, x: Tensor, n: int, output_size: int | Sequence[int | None] | None,
              reduce: str) -> Tensor:
    """An adaptive pool separable by dims: each dim pooled in turn (mean or max). An
    unbatched ``[c, *spatial]`` input is taken as a batch of one (as torch)."""
    if x.ndim == n + 1:
        return _adaptive_by_dims(op, x.unsqueeze(0), n, output_size, reduce).squeeze(0)
    _float_input(op, x, n)
    sizes = (output_size,) * n if output_size is None or isinstance(output_size, int) else (
        tuple(output_size))
    if len(sizes) != n:
        raise InvalidArgumentError(f"{op}: output_size must be an int or {n} ints, got "
                                   f"{output_size!r}")
    out = x
    for i, want in enumerate(sizes):
        dim, size = 2 + i, x.shape[2 + i]
        target = size if want is None else want
        if target < 1:
            raise InvalidArgumentError(f"{op}: output_size must be >= 1, got {output_size!r}")
        if target == size:
            continue
        parts = [out.narrow(dim, lo, hi - lo) for lo, hi in _adaptive_bounds(size, target)]
        out = Tensor.cat([pt.mean(dim, keepdim=True) if reduce == "mean"
                          else pt.amax(dim, keepdim=True) for pt in parts], dim)
    return out


@autocast_op("adaptive_avg_pool3d")
def adaptive_avg_pool3d(input: Tensor, output_size: int | Sequence[int | None] | None
                        ) -> Tensor:
    """Average pool ``[n, c, d, h, w]`` to a fixed ``output_size`` (None keeps a dim)."""
    return _adaptive_by_dims("adaptive_avg_pool3d", input, 3, output_size, "mean")


def _adaptive_max(op: str, x: Tensor, n: int, output_size: int | Sequence[int | None],
                  return_indices: bool) -> Any:
    if not return_indices:
        return _adaptive_by_dims(op, x, n, output_size, "max")
    if x.ndim == n + 1:
        values, indices = _adaptive_max(op, x.unsqueeze(0), n, output_size, True)
        return values.squeeze(0), indices.squeeze(0)
    _float_input(op, x, n)
    given = (output_size,) * n if isinstance(output_size, int) else tuple(output_size)
    if len(given) != n:
        raise InvalidArgumentError(f"{op}: output_size must be an int or {n} ints, got "
                                   f"{output_size!r}")
    sizes = _ints(op, "output_size", tuple(  # None keeps that dim's input size
        x.shape[2 + i] if o is None else o for i, o in enumerate(given)), n, 1)
    b, c = x.shape[:2]
    values, indices = [], []
    spatial = x.shape[2:]
    for window in itertools.product(*(_adaptive_bounds(size, out)
                                      for size, out in zip(spatial, sizes, strict=True))):
        part = x[(Ellipsis, *(slice(lo, hi) for lo, hi in window))]
        best, local = part.reshape(b, c, -1).max(-1)
        values.append(best)
        flat: Tensor | int = 0  # the window's local flat index, unravelled into the input's
        for i, (lo, hi) in enumerate(window):
            inner = math.prod(h - lo_ for lo_, h in window[i + 1:])
            flat = flat * spatial[i] + (local // inner) % (hi - lo) + lo
        assert isinstance(flat, Tensor)
        indices.append(flat)
    shape = (b, c, *sizes)
    return (Tensor.stack(values, -1).reshape(shape), Tensor.stack(indices, -1).reshape(shape))


def adaptive_max_pool1d(input: Tensor, output_size: int | Sequence[int | None],
                        return_indices: bool = False) -> Any:
    """Max pool ``[n, c, l]`` to a fixed length; with ``return_indices`` also each max's
    input position."""
    return _adaptive_max("adaptive_max_pool1d", input, 1, output_size, return_indices)


def adaptive_max_pool2d(input: Tensor, output_size: int | Sequence[int | None],
                        return_indices: bool = False) -> Any:
    """Max pool ``[n, c, h, w]`` to a fixed size; with ``return_indices`` also each max's
    flat index within the input plane."""
    return _adaptive_max("adaptive_max_pool2d", input, 2, output_size, return_indices)


@autocast_op("adaptive_max_pool3d")
def adaptive_max_pool3d(input: Tensor, output_size: int | Sequence[int | None],
                        return_indices: bool = False) -> Any:
    """Max pool ``[n, c, d, h, w]`` to a fixed size; with ``return_indices`` also each max's
    flat index within the input volume."""
    return _adaptive_max("adaptive_max_pool3d", input, 3, output_size, return_indices)


def _lp_pool(op: str, n: int, input: Tensor, norm_type: float, kernel_size: IntOrTuple,
             stride: IntOrTuple | None, ceil_mode: bool) -> Tensor:
    if input.ndim == n + 1:  # unbatched, as torch: a batch of one
        return _lp_pool(op, n, input.unsqueeze(0), norm_type, kernel_size, stride,
                        ceil_mode).squeeze(0)
    win, extras, (k, s, p, _) = _windows(op, input, n, kernel_size, stride, 0, 1, ceil_mode,
                                         0.0)
    total = win.pow(float(norm_type)).sum(tuple(range(-n, 0)))
    if any(extras):  # torch's form: a clipped ceil-mode window's mean times the kernel size
        total = total * (math.prod(k) / _divisor(input, k, s, p, extras, True))
    return total.pow(1.0 / norm_type)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size: int, stride: int | None = None,
              ceil_mode: bool = False) -> Tensor:
    """Power-average pool: ``(sum of x^p over each window) ^ (1/p)`` of ``[n, c, l]``."""
    return _lp_pool("lp_pool1d", 1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input: Tensor, norm_type: float, kernel_size: IntOrTuple,
              stride: IntOrTuple | None = None, ceil_mode: bool = False) -> Tensor:
    """Power-average pool: ``(sum of x^p over each window) ^ (1/p)`` of ``[n, c, h, w]``."""
    return _lp_pool("lp_pool2d", 2, input, norm_type, kernel_size, stride, ceil_mode)


@autocast_op("lp_pool3d")
def lp_pool3d(input: Tensor, norm_type: float, kernel_size: IntOrTuple,
              stride: IntOrTuple | None = None, ceil_mode: bool = False) -> Tensor:
    """Power-average pool: ``(sum of x^p over each window) ^ (1/p)`` of ``[n, c, d, h, w]``."""
    return _lp_pool("lp_pool3d", 3, input, norm_type, kernel_size, stride, ceil_mode)


def _fractional_starts(sample: np.ndarray, size: int, out: int, kernel: int) -> np.ndarray:
    """torch's pseudo-random window starts of one dim: ``int((i + u) * alpha) - int(u *
    alpha)`` with ``alpha = (size - kernel) / (out - 1)``, the last window at the end; ``u``
    (one per plane) in the input's precision, as torch computes them."""
    i = np.arange(out - 1, dtype=sample.dtype)[None, :]
    u = sample[:, None]
    alpha = sample.dtype.type(size - kernel) / sample.dtype.type(max(out - 1, 1))
    inner = ((i + u) * alpha).astype(np.int64) - (u * alpha).astype(np.int64)
    return np.concatenate([inner, np.full((sample.shape[0], 1), size - kernel)], axis=1)


def _fractional_max_pool(op: str, n: int, x: Tensor, kernel_size: IntOrTuple,
                         output_size: IntOrTuple | None,
                         output_ratio: float | Sequence[float] | None, return_indices: bool,
                         random_samples: Tensor | None) -> Any:
    if x.ndim == n + 1:  # unbatched, as torch: a batch of one (the samples' first row)
        if random_samples is not None and random_samples.ndim == 3:
            random_samples = random_samples[:1]
        out = _fractional_max_pool(op, n, x.unsqueeze(0), kernel_size, output_size,
                                   output_ratio, return_indices, random_samples)
        return (out[0].squeeze(0), out[1].squeeze(0)) if return_indices else out.squeeze(0)
    _float_input(op, x, n)
    k = _ints(op, "kernel_size", kernel_size, n, 1)
    spatial = x.shape[2:]
    if output_size is not None:
        sizes = _ints(op, "output_size", output_size, n, 1)
    elif output_ratio is not None:
        ratios = ((output_ratio,) * n if isinstance(output_ratio, int | float)
                  else tuple(output_ratio))
        if len(ratios) != n or not all(0.0 < r < 1.0 for r in ratios):
            raise InvalidArgumentError(f"{op}: output_ratio must be {n} number(s) in (0, 1), "
                                       f"got {output_ratio!r}")
        sizes = tuple(int(s * r) for s, r in zip(spatial, ratios, strict=True))
    else:
        raise InvalidArgumentError(f"{op}: give output_size or output_ratio")
    for size, kk, o in zip(spatial, k, sizes, strict=True):
        if o < 1 or o + kk - 1 > size:
            raise ShapeError(f"{op}: output {sizes} with kernel {k} does not fit the input "
                             f"{describe(x.shape)} (output + kernel - 1 must be <= input)")
    b, c = x.shape[:2]
    if random_samples is None:
        random_samples = Tensor.random((b, c, n), Distribution.uniform(0.0, 1.0),
                                       backend=x.backend, device=x.device, dtype=x.dtype)
    if random_samples.shape != (b, c, n):
        raise ShapeError(f"{op}: _random_samples must be [{b}, {c}, {n}] for input "
                         f"{describe(x.shape)}, got {describe(random_samples.shape)}")
    samples = random_samples.to_numpy().reshape(b * c, n)
    if samples.dtype.kind != "f" or samples.dtype.itemsize < 4:
        samples = samples.astype(np.float32)
    # torch draws the width's sample first in 2-d, the depth's first in 3-d
    order = (1, 0) if n == 2 else tuple(range(n))
    starts = [_fractional_starts(samples[:, order[d]], spatial[d], sizes[d], k[d])
              for d in range(n)]
    # flat input index of every window cell: [planes, *out, *kernel]
    flat = np.zeros((b * c, *sizes, *k), dtype=np.int64)
    for d in range(n):
        at = [1] * (1 + 2 * n)
        at[0], at[1 + d] = b * c, sizes[d]
        offset = [1] * (1 + 2 * n)
        offset[1 + n + d] = k[d]
        cell = starts[d].reshape(at) + np.arange(k[d]).reshape(offset)
        flat = flat * spatial[d] + cell
    index = _host(x, flat.reshape(b, c, -1))
    windows = x.reshape(b, c, -1).gather(2, index).reshape(b, c, math.prod(sizes), -1)
    values, local = windows.max(-1)
    if not return_indices:
        return values.reshape(b, c, *sizes)
    where = index.reshape(b, c, math.prod(sizes), -1).gather(3, local.unsqueeze(-1))
    return values.reshape(b, c, *sizes), where.reshape(b, c, *sizes)


@autocast_op("fractional_max_pool2d")
def fractional_max_pool2d(input: Tensor, kernel_size: IntOrTuple,
                          output_size: IntOrTuple | None = None,
                          output_ratio: float | Sequence[float] | None = None,
                          return_indices: bool = False,
                          _random_samples: Tensor | None = None) -> Any:
    """Max over pseudo-randomly placed windows of ``[n, c, h, w]`` (Graham's fractional max
    pooling) to ``output_size`` or ``output_ratio`` of the input; ``_random_samples
    [n, c, 2]`` in [0, 1) fix the placement (drawn from the backend's generator otherwise)."""
    return _fractional_max_pool("fractional_max_pool2d", 2, input, kernel_size, output_size,
                                output_ratio, return_indices, _random_samples)


@autocast_op("fractional_max_pool3d")
def fractional_max_pool3d(input: Tensor, kernel_size: IntOrTuple,
                          output_size: IntOrTuple | None = None,
                          output_ratio: float | Sequence[float] | None = None,
                          return_indices: bool = False,
                          _random_samples: Tensor | None = None) -> Any:
    """Fractional max pooling of ``[n, c, d, h, w]`` (as ``fractional_max_pool2d``;
    ``_random_samples [n, c, 3]``)."""
    return _fractional_max_pool("fractional_max_pool3d", 3, input, kernel_size, output_size,
                                output_ratio, return_indices, _random_samples)


def _max_unpool(op: str, n: int, x: Tensor, indices: Tensor, kernel_size: IntOrTuple,
                stride: IntOrTuple | None, padding: IntOrTuple,
                output_size: Sequence[int] | None) -> Tensor:
    if x.ndim == n + 1:  # unbatched, as torch: a batch of one
        return _max_unpool(op, n, x.unsqueeze(0), indices.unsqueeze(0), kernel_size, stride,
                           padding, output_size).squeeze(0)
    _float_input(op, x, n)
    if indices.kind is not INT or indices.shape != x.shape:
        raise ShapeError(f"{op}: indices must be an int tensor of the input's shape "
                         f"{describe(x.shape)}, got {indices.kind} {describe(indices.shape)}")
    k = _tuple(op, "kernel_size", kernel_size, n, 1)
    s = k if stride is None or stride == () else _tuple(op, "stride", stride, n, 1)
    p = _tuple(op, "padding", padding, n, 0)
    default = tuple((size - 1) * ss - 2 * pp + kk
                    for size, kk, ss, pp in zip(x.shape[2:], k, s, p, strict=True))
    sizes = default
    if output_size is not None:
        given = tuple(output_size)
        sizes = given[-n:] if len(given) in (n, n + 2) else ()
        if len(sizes) != n or any(not d - ss < o < d + ss
                                  for o, d, ss in zip(sizes, default, s, strict=True)):
            raise ShapeError(f"{op}: output_size {given} must give {n} spatial sizes each "
                             f"within a stride of {default}")
    b, c = x.shape[:2]
    volume = math.prod(sizes)
    if x.numel() and not 0 <= int(indices.min().item()) <= int(indices.max().item()) < volume:
        raise ShapeError(f"{op}: indices must lie in [0, {volume}) for the output "
                         f"{describe((b, c, *sizes))}")
    zeros = Tensor.zeros((b, c, volume), backend=x.backend, device=x.device, dtype=x.dtype)
    return zeros.scatter(2, indices.reshape(b, c, -1), x.reshape(b, c, -1)).reshape(
        b, c, *sizes)


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size: IntOrTuple,
                 stride: IntOrTuple | None = None, padding: IntOrTuple = 0,
                 output_size: Sequence[int] | None = None) -> Tensor:
    """The inverse of ``max_pool1d``: each value of ``[n, c, l]`` put back at its
    ``indices`` (from ``return_indices=True``), zeros elsewhere."""
    return _max_unpool("max_unpool1d", 1, input, indices, kernel_size, stride, padding,
                       output_size)


@autocast_op("max_unpool2d")
def max_unpool2d(input: Tensor, indices: Tensor, kernel_size: IntOrTuple,
                 stride: IntOrTuple | None = None, padding: IntOrTuple = 0,
                 output_size: Sequence[int] | None = None) -> Tensor:
    """The inverse of ``max_pool2d``: each value of ``[n, c, h, w]`` put back at its flat
    ``indices`` within the output plane, zeros elsewhere."""
    return _max_unpool("max_unpool2d", 2, input, indices, kernel_size, stride, padding,
                       output_size)


@autocast_op("max_unpool3d")
def max_unpool3d(input: Tensor, indices: Tensor, kernel_size: IntOrTuple,
                 stride: IntOrTuple | None = None, padding: IntOrTuple = 0,
                 output_size: Sequence[int] | None = None) -> Tensor:
    """The inverse of ``max_pool3d``: each value of ``[n, c, d, h, w]`` put back at its flat
    ``indices`` within the output volume, zeros elsewhere."""
    return _max_unpool("max_unpool3d", 3, input, indices, kernel_size, stride, padding,
                       output_size)
