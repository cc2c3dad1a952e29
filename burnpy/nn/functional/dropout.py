"""Dropout with torch's signatures: elementwise (``dropout``, ``alpha_dropout``) and
channel-wise (``dropout1d/2d/3d``, ``feature_alpha_dropout``: one draw per sample and channel,
broadcast over the spatial dims), identity in eval. Masks come from the backend's seeded
generator (``backend.seed``)."""

from __future__ import annotations

import math
import warnings

from burnpy.backend.distribution import Distribution
from burnpy.backend.errors import InvalidArgumentError, ShapeError, describe
from burnpy.nn.functional._common import _inplace
from burnpy.tensor import Tensor

#: ``-selu scale * selu alpha``: the value SELU saturates to, which alpha dropout drops to.
_ALPHA = 1.7580993408473766


def _dropout(op: str, x: Tensor, p: float, training: bool, inplace: bool, drawn: int | None,
             alpha: bool) -> Tensor:
    """torch's ``_dropout_impl``: a Bernoulli(1 - p) mask, per element or, channel-wise, over
    the leading ``drawn`` dims (sample and channel) only; kept values scaled by
    ``1 / (1 - p)``, or, for ``alpha``, the affine map keeping SELU's mean and variance with
    dropped values at SELU's saturation."""
    if not 0.0 <= p <= 1.0:
        raise InvalidArgumentError(f"{op}: p must be in [0, 1], got {p}")
    if not training or p == 0.0 or x.numel() == 0:
        return x
    if p == 1.0:
        return _inplace(x, lambda t: t * 0.0, inplace)
    if drawn is not None and x.ndim < drawn:
        raise ShapeError(f"{op}: input must be [batch, channels, *], got {describe(x.shape)}")
    shape = x.shape if drawn is None else x.shape[:drawn] + (1,) * (x.ndim - drawn)
    keep = Tensor.random(shape, Distribution.bernoulli(1.0 - p), backend=x.backend,
                         device=x.device, dtype=x.dtype)
    if not alpha:
        return _inplace(x, lambda t: t * (keep * (1.0 / (1.0 - p))), inplace)
    a = 1.0 / math.sqrt((_ALPHA * _ALPHA * p + 1.0) * (1.0 - p))
    shift = (keep - 1.0) * (_ALPHA * a) + _ALPHA * a * p
    return _inplace(x, lambda t: t * (keep * a) + shift, inplace)


def dropout(input: Tensor, p: float = 0.5, training: bool = True,
            inplace: bool = False) -> Tensor:
    """Keep each element with probability ``1 - p``, scaled by ``1 / (1 - p)``."""
    return _dropout("dropout", input, p, training, inplace, None, False)


def _batched(op: str, x: Tensor, n: int, p: float, training: bool, inplace: bool) -> Tensor:
    """Channel dropout of ``[batch, channels, *n]`` or unbatched ``[channels, *n]``."""
    if x.ndim not in (n + 1, n + 2):
        raise ShapeError(f"{op}: input must be [batch, channels, {n} spatial dim(s)] or "
                         f"unbatched, got {describe(x.shape)}")
    return _dropout(op, x, p, training, inplace, x.ndim - n, False)


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of ``[n, c, l]`` (or unbatched ``[c, l]``) with probability ``p``,
    scaling the rest by ``1 / (1 - p)``."""
    return _batched("dropout1d", input, 1, p, training, inplace)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of ``[n, c, h, w]`` with probability ``p``. As torch, a 3-d input
    is read as ``[n, c, l]`` (channel-wise 1-d dropout), with torch's warning."""
    if input.ndim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that "
                      "channel-wise 1D dropout behavior is desired - input is interpreted as "
                      "shape (N, C, L). Use dropout1d for that behavior.", stacklevel=2)
    elif input.ndim != 4:
        warnings.warn(f"dropout2d: Received a {input.ndim}-D input to dropout2d, which is "
                      f"deprecated; expected a 4-D input (N, C, H, W).", stacklevel=2)
    return _dropout("dropout2d", input, p, training, inplace, 2, False)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of ``[n, c, d, h, w]`` (or unbatched ``[c, d, h, w]``) with
    probability ``p``, scaling the rest by ``1 / (1 - p)``."""
    return _batched("dropout3d", input, 3, p, training, inplace)


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                  inplace: bool = False) -> Tensor:
    """Dropout for SELU networks: dropped elements become SELU's saturation value and an
    affine map keeps the mean and variance (torch's ``alpha_dropout``)."""
    return _dropout("alpha_dropout", input, p, training, inplace, None, True)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                          inplace: bool = False) -> Tensor:
    """Alpha dropout of whole channels of ``[n, c, *]`` (one draw per sample and channel)."""
    return _dropout("feature_alpha_dropout", input, p, training, inplace, 2, True)
