"""Resizing with torch's default coordinate mapping for a given ``scale_factor``
(``recompute_scale_factor`` False or None): the source coordinate of output index ``i`` is
``i / scale_factor`` (nearest) or ``(i + 0.5) / scale_factor - 0.5`` (bilinear), not
``i * in / out`` as for a given size. Written with ``index_select`` and arithmetic on the
Tensor, so it is differentiable in both modes on every backend.
"""

from __future__ import annotations

import math

from burnpy.tensor.tensor import Tensor


def _indices(x: Tensor, values: list[int]) -> Tensor:
    return Tensor.from_data(values, backend=x.backend, device=x.device,
                            dtype=x.backend.int_dtype)


def resize_axis(x: Tensor, dim: int, out: int, factor: float, mode: str) -> Tensor:
    """``x`` resized along ``dim`` to ``out`` samples with torch's mapping for ``factor``."""
    size = x.shape[dim]
    scale = 1.0 / factor
    if mode == "nearest":
        src = [min(math.floor(i * scale), size - 1) for i in range(out)]
        return x.index_select(dim, _indices(x, src))
    pos = [max((i + 0.5) * scale - 0.5, 0.0) for i in range(out)]
    lo = [min(math.floor(p), size - 1) for p in pos]
    hi = [min(i + 1, size - 1) for i in lo]
    w = [p - i for p, i in zip(pos, lo, strict=True)]
    shape = [1] * x.ndim
    shape[dim] = out
    weight = Tensor.from_data(w, backend=x.backend, device=x.device,
                              dtype=x.dtype).reshape(shape)
    a = x.index_select(dim, _indices(x, lo))
    b = x.index_select(dim, _indices(x, hi))
    return a + (b - a) * weight
