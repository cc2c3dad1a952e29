"""Resizing one axis at a time with torch's coordinate mapping, for the interpolate modes and
dims the backend's 2-d op does not cover: linear (1-d, 2-d, 3-d), bicubic, nearest on 3-d and
5-d input, and any mode with a given ``scale_factor`` (``recompute_scale_factor`` False or
None), whose source coordinate of output index ``i`` is ``i / scale_factor`` (nearest) or
``(i + 0.5) / scale_factor - 0.5`` (linear, cubic), not ``i * in / out`` as for a given size.
Taps are picked with ``index_select`` at host-computed indices and weighted by host-computed
weights, so the result is differentiable in both modes on every backend.
"""

from __future__ import annotations

import math

import numpy as np

from burnpy.tensor.tensor import Tensor

_CUBIC_A = -0.75  # torch's cubic convolution coefficient


def _indices(x: Tensor, values: list[int]) -> Tensor:
    return Tensor.from_data(values, backend=x.backend, device=x.device,
                            dtype=x.backend.int_dtype)


def _source_scale(size: int, out: int, factor: float | None, align_corners: bool) -> float:
    """torch's ``area_pixel_compute_scale``: input samples per output sample."""
    if align_corners:
        return (size - 1) / (out - 1) if out > 1 else 0.0
    return 1.0 / factor if factor is not None else size / out


def _nearest(size: int, out: int, factor: float | None) -> list[int]:
    """torch's nearest source indices, with its float32 scale and product."""
    if out == size:
        return list(range(out))
    if out == 2 * size:
        return [i // 2 for i in range(out)]
    scale = np.float32(1.0 / factor if factor is not None else np.float32(size) / out)
    return [min(math.floor(np.float32(i) * scale), size - 1) for i in range(out)]


def _cubic_weights(t: float) -> tuple[float, float, float, float]:
    """torch's cubic convolution weights of the four taps around a fraction ``t``."""
    a = _CUBIC_A

    def near(s: float) -> float:  # |s| <= 1
        return ((a + 2) * s - (a + 3)) * s * s + 1

    def far(s: float) -> float:  # 1 < |s| < 2
        return ((a * s - 5 * a) * s + 8 * a) * s - 4 * a

    return far(t + 1), near(t), near(1 - t), far(2 - t)


def _weighted(x: Tensor, dim: int, taps: list[list[int]], weights: list[list[float]]
              ) -> Tensor:
    """``sum_k weights[k] * x.index_select(dim, taps[k])``, the weights along ``dim``."""
    shape = [1] * x.ndim
    shape[dim] = len(taps[0])
    total: Tensor | None = None
    for index, w in zip(taps, weights, strict=True):
        weight = Tensor.from_data(w, backend=x.backend, device=x.device,
                                  dtype=x.dtype).reshape(shape)
        term = x.index_select(dim, _indices(x, index)) * weight
        total = term if total is None else total + term
    assert total is not None
    return total


def resize_axis(x: Tensor, dim: int, out: int, factor: float | None, mode: str,
                align_corners: bool = False) -> Tensor:
    """``x`` resized along ``dim`` to ``out`` samples as torch's ``mode`` ("nearest",
    "linear" or "cubic"); ``factor`` is the given scale factor, None for a given size."""
    size = x.shape[dim]
    if mode == "nearest":
        return x.index_select(dim, _indices(x, _nearest(size, out, factor)))
    scale = _source_scale(size, out, factor, align_corners)
    cubic = mode == "cubic"
    taps: list[list[int]] = [[] for _ in range(4 if cubic else 2)]
    weights: list[list[float]] = [[] for _ in taps]
    for i in range(out):
        src = scale * i if align_corners else scale * (i + 0.5) - 0.5
        if not cubic:
            src = max(src, 0.0)
        # torch's guard: the base tap stays inside, the fraction in [0, 1].
        base = min(math.floor(src), size - 1)
        t = min(max(src - base, 0.0), 1.0)
        if cubic:
            for k, w in enumerate(_cubic_weights(t)):
                taps[k].append(min(max(base - 1 + k, 0), size - 1))
                weights[k].append(w)
        else:
            taps[0].append(base)
            taps[1].append(min(base + 1, size - 1))
            weights[0].append(1.0 - t)
            weights[1].append(t)
    return _weighted(x, dim, taps, weights)
