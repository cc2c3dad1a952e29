"""Fused batch normalization over an array module ``xp`` (NumPy on the CPU, CuPy on CUDA).

The protocol's composition takes about a dozen backend ops each way; here the statistics are
two reductions over a ``[n, c, positions]`` view and the output one fused multiply-add, so a
training step's batch norm costs a few array passes instead of a dozen dispatches. 16-bit
floats are computed in float32, as torch does on the CPU.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

A = Any  # an ``xp.ndarray``


def _rows(xp: Any, x: A) -> tuple[A, int]:
    """``x [n, c, *]`` as ``[n, c, positions]`` in a dtype to compute in, and the values per
    channel."""
    n, c = x.shape[0], x.shape[1]
    positions = math.prod(x.shape[2:])
    rows = x.reshape(n, c, positions)
    if rows.dtype.itemsize < 4:
        rows = rows.astype(xp.float32)
    return rows, n * positions


def _statistics(xp: Any, rows: A, count: int) -> tuple[A, A, A]:
    """Per-channel mean, ``rows`` minus it, and the biased variance; the mean and variance
    shaped ``[c, 1]`` to broadcast against ``[n, c, positions]``."""
    mean = _channel_sum(xp, rows).reshape(-1, 1) / count
    centered = rows - mean
    var = xp.einsum("ncp,ncp->c", centered, centered).reshape(-1, 1) / count
    return mean, centered, var


def _channel_sum(xp: Any, rows: A) -> A:
    """Per-channel sum of ``[n, c, positions]`` (einsum: about 3x NumPy's two-axis sum)."""
    return xp.einsum("ncp->c", rows)


def _invstd(xp: Any, var: A, eps: float) -> A:
    """``1 / sqrt(var + eps)``."""
    return 1.0 / xp.sqrt(var + eps)


class ArrayNormOps:
    """``batch_norm`` and ``batch_norm_backward`` as a handful of fused array passes."""

    xp: ClassVar[Any]

    @classmethod
    def batch_norm(cls, x: A, weight: A | None, bias: A | None,
                   eps: float) -> tuple[A, A, A]:
        """Training-mode batch normalization: ``(y, mean [c], var [c])``, var biased."""
        xp, dtype = cls.xp, x.dtype
        rows, count = _rows(xp, x)
        mean, centered, var = _statistics(xp, rows, count)
        scale = _invstd(xp, var, eps)
        if weight is not None:
            scale *= weight.reshape(-1, 1)
        centered *= scale
        if bias is not None:
            centered += bias.reshape(-1, 1)
        return (centered.reshape(x.shape).astype(dtype, copy=False),
                mean.reshape(-1).astype(dtype, copy=False),
                var.reshape(-1).astype(dtype, copy=False))

    @classmethod
    def batch_norm_backward(cls, x: A, weight: A | None, grad: A,
                            eps: float) -> tuple[A, A, A]:
        """Gradients in ``(x, weight, bias)``: with ``xhat = (x - mean) * invstd``,
        ``dx = w * invstd * (g - mean(g) - xhat * mean(g * xhat))`` per channel."""
        xp, dtype = cls.xp, x.dtype
        rows, count = _rows(xp, x)
        g, _ = _rows(xp, grad)
        _, centered, var = _statistics(xp, rows, count)
        invstd = _invstd(xp, var, eps)
        grad_bias = _channel_sum(xp, g)
        grad_weight = xp.einsum("ncp,ncp->c", g, centered) * invstd.reshape(-1)
        grad_x = g - (grad_bias / count).reshape(-1, 1)
        centered *= invstd * (grad_weight / count).reshape(-1, 1)
        grad_x -= centered
        grad_x *= invstd if weight is None else invstd * weight.reshape(-1, 1)
        return (grad_x.reshape(x.shape).astype(dtype, copy=False),
                grad_weight.astype(dtype, copy=False), grad_bias.astype(dtype, copy=False))
