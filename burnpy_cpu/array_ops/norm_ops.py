"""Fused batch, layer and RMS normalization over an array module ``xp`` (NumPy on the CPU, CuPy on
CUDA).

The protocol's composition takes about a dozen backend ops each way; here the statistics are
two einsum reductions over a ``[n, c, positions]`` view and the normalization a few
elementwise passes over ``[n, c * positions]`` rows against per-channel values repeated along
the positions (NumPy's inner loop then runs whole rows instead of ``positions``-long pieces).
Layer and RMS norm work on ``[rows, width]`` with per-row statistics as ``[rows, 1]`` columns.
16-bit floats are computed in float32, as torch does on the CPU.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy

from burnpy_cpu import memory
from burnpy_cpu.array_ops._shared import narrowed, ones, row_kernels, widened
from burnpy_cpu.numba_kernels import COMPILED_FLOATS
from burnpy_cpu.numba_kernels import batch_norm as fused_batch_norm
from burnpy_cpu.numba_kernels import batch_norm_backward as fused_batch_norm_backward

A = Any  # an ``xp.ndarray``


class _Batch:
    """``x [n, c, *]`` viewed for batch norm: ``[n, c * positions]`` rows in a dtype to compute
    in, the channel mean, the centered rows and the biased variance."""

    __slots__ = ("centered", "count", "mean", "positions", "var", "xp")

    def __init__(self, xp: Any, x: A, mean: A | None = None, var: A | None = None) -> None:
        """Statistics computed from ``x``, or the forward's ``mean`` and ``var`` when given."""
        n, c = x.shape[0], x.shape[1]
        self.xp, self.positions = xp, math.prod(x.shape[2:])
        self.count = n * self.positions
        rows = widened(xp, x.reshape(n, c * self.positions))
        self.mean = (self.channel_sum(rows) / self.count if mean is None
                     else widened(xp, mean))
        self.centered = rows - self.spread(self.mean)
        self.var = (self.channel_dot(self.centered, self.centered) / self.count if var is None
                    else widened(xp, var))

    def channel_sum(self, rows: A) -> A:
        """Per-channel sums of ``[n, c * positions]`` rows (einsum: ~3x NumPy's two-axis sum)."""
        n = rows.shape[0]
        return self.xp.einsum("ncp->c", rows.reshape(n, -1, self.positions))

    def channel_dot(self, a: A, b: A) -> A:
        """Per-channel sums of ``a * b`` without materializing the product."""
        n = a.shape[0]
        return self.xp.einsum("ncp,ncp->c", a.reshape(n, -1, self.positions),
                              b.reshape(n, -1, self.positions))

    def spread(self, per_channel: A) -> A:
        """A ``[c]`` vector repeated along the positions, broadcasting against the rows."""
        return self.xp.repeat(per_channel, self.positions)



class ArrayNormOps:
    """``batch_norm`` and ``batch_norm_backward`` as a handful of fused array passes."""

    xp: ClassVar[Any]

    @classmethod
    def batch_norm(cls, x: A, weight: A | None, bias: A | None,
                   eps: float) -> tuple[A, A, A]:
        """Training-mode batch normalization: ``(y, mean [c], var [c])``, var biased."""
        xp, dtype = cls.xp, x.dtype
        if xp is numpy and dtype in COMPILED_FLOATS and x.size and all(
                p is None or p.dtype == dtype for p in (weight, bias)):
            n, c = x.shape[:2]
            y, mean, var = fused_batch_norm(
                numpy.ascontiguousarray(x).reshape(n, c, x.size // (n * c)),
                None if weight is None else numpy.ascontiguousarray(weight),
                None if bias is None else numpy.ascontiguousarray(bias), eps)
            return y.reshape(x.shape), mean.astype(dtype), var.astype(dtype)
        batch = _Batch(xp, x)
        scale = 1.0 / xp.sqrt(batch.var + eps)
        if weight is not None:
            scale *= weight
        y = batch.centered
        y *= batch.spread(scale)
        if bias is not None:
            y += batch.spread(bias)
        return (narrowed(xp, y.reshape(x.shape), dtype),
                narrowed(xp, batch.mean, dtype), narrowed(xp, batch.var, dtype))

    @classmethod
    def batch_norm_backward(cls, x: A, weight: A | None, grad: A, eps: float,
                            mean: A | None = None, var: A | None = None) -> tuple[A, A, A]:
        """Gradients in ``(x, weight, bias)``: with ``xhat = (x - mean) * invstd`` and
        ``scale = weight * invstd``, ``dx = scale * (g - mean(g)) - xhat * scale *
        mean(g * xhat)`` per channel; the forward's ``mean`` and ``var`` are reused when
        given (16-bit inputs recompute them: the forward rounded them to 16 bits)."""
        xp, dtype = cls.xp, x.dtype
        if xp is numpy and dtype in (numpy.float32, numpy.float64) and x.size \
                and mean is not None and var is not None:
            return _compiled_batch_norm_backward(x, weight, grad, eps, mean, var)
        reuse = x.dtype.itemsize >= 4
        batch = _Batch(xp, x, mean if reuse else None, var if reuse else None)
        g = widened(xp, grad.reshape(batch.centered.shape))
        invstd = 1.0 / xp.sqrt(batch.var + eps)
        grad_bias = batch.channel_sum(g)
        grad_weight = batch.channel_dot(g, batch.centered) * invstd
        scale = invstd if weight is None else invstd * weight
        grad_x = g * batch.spread(scale)
        grad_x -= batch.spread(scale * grad_bias / batch.count)
        centered = batch.centered
        centered *= batch.spread(scale * invstd * grad_weight / batch.count)
        grad_x -= centered
        return (narrowed(xp, grad_x.reshape(x.shape), dtype),
                narrowed(xp, grad_weight, dtype), narrowed(xp, grad_bias, dtype))

    @classmethod
    def layer_norm(cls, x: A, normalized_ndim: int, weight: A | None, bias: A | None,
                   eps: float) -> A:
        """Normalize over the trailing ``normalized_ndim`` dims, then scale and shift."""
        xp, dtype = cls.xp, x.dtype
        if xp is numpy and dtype.itemsize == 2:  # 16-bit floats: the float32 kernel, one rounding
            return narrowed(xp, cls.layer_norm(widened(xp, x), normalized_ndim,
                                               _widened(weight), _widened(bias), eps), dtype)
        # the compiled kernel first, whatever the size: a decoding step's [1, 1, width] row
        # costs one call of about a microsecond there against a dozen NumPy calls
        rows = _kernel_rows(xp, x, normalized_ndim, weight, bias)
        if rows is not None:
            out = memory.empty(rows.shape, dtype)
            width = rows.shape[1]
            row_kernels().layer_norm(rows, _or_ones(weight, width, dtype),
                                     _or_zeros(bias, width, dtype), eps, out)
            return out.reshape(x.shape)
        if xp is numpy and x.size <= _FEW_ELEMENTS and x.dtype.itemsize >= 4:
            return _small_layer_norm(x, normalized_ndim, weight, bias, eps)
        centered, invstd = _row_statistics(xp, x, normalized_ndim, eps)
        centered *= invstd
        if weight is not None:
            centered *= weight.reshape(-1)
        if bias is not None:
            centered += bias.reshape(-1)
        return narrowed(xp, centered.reshape(x.shape), dtype)

    @classmethod
    def layer_norm_backward(cls, x: A, normalized_ndim: int, weight: A | None, grad: A,
                            eps: float) -> tuple[A, A, A]:
        """Gradients in ``(x, weight, bias)``: with ``xhat`` the normalized rows and
        ``gh = g * weight``, ``dx = invstd * (gh - mean(gh) - xhat * mean(gh * xhat))``."""
        xp, dtype = cls.xp, x.dtype
        if xp is numpy and dtype.itemsize == 2:  # 16-bit floats: the float32 kernel, one rounding
            grads = cls.layer_norm_backward(widened(xp, x), normalized_ndim, _widened(weight),
                                            _widened(grad), eps)
            return (narrowed(xp, grads[0], dtype), narrowed(xp, grads[1], dtype),
                    narrowed(xp, grads[2], dtype))
        rows = _kernel_rows(xp, x, normalized_ndim, weight, grad)
        if rows is not None:
            trailing = x.shape[x.ndim - normalized_ndim:]
            width = rows.shape[1]
            grad_x = memory.empty(rows.shape, dtype)
            # float64 column sums, weight's and bias's gradients
            grad_weight, grad_bias = numpy.zeros(width), numpy.zeros(width)
            row_kernels().layer_norm_backward(
                rows, _or_ones(weight, width, dtype),
                numpy.ascontiguousarray(grad.reshape(rows.shape)), eps, grad_x, grad_weight,
                grad_bias)
            return (grad_x.reshape(x.shape),
                    narrowed(xp, grad_weight, dtype).reshape(trailing),
                    narrowed(xp, grad_bias, dtype).reshape(trailing))
        xhat, invstd = _row_statistics(xp, x, normalized_ndim, eps)
        xhat *= invstd
        g = widened(xp, grad.reshape(xhat.shape))
        trailing = x.shape[x.ndim - normalized_ndim:]
        grad_weight = xp.einsum("rk,rk->k", g, xhat).reshape(trailing)
        grad_bias = g.sum(axis=0).reshape(trailing)
        g_hat = g if weight is None else g * weight.reshape(-1)
        divisor = max(xhat.shape[1], 1)
        projection = _row_sums(xp, g_hat * xhat)
        projection /= divisor
        grad_x = g_hat - _row_sums(xp, g_hat) / divisor
        xhat *= projection
        grad_x -= xhat
        grad_x *= invstd
        return (narrowed(xp, grad_x.reshape(x.shape), dtype),
                narrowed(xp, grad_weight, dtype), narrowed(xp, grad_bias, dtype))

    @classmethod
    def rms_norm(cls, x: A, normalized_ndim: int, weight: A | None, eps: float) -> A:
        """``x / sqrt(mean(x^2) + eps) * weight`` over the trailing dims: one dot per row
        for the mean square, then two in-place passes."""
        xp, dtype = cls.xp, x.dtype
        rows, inv = _inv_rms(xp, x, normalized_ndim, eps)
        y = rows * inv
        if weight is not None:
            y *= widened(xp, weight).reshape(-1)
        return narrowed(xp, y.reshape(x.shape), dtype)

    @classmethod
    def rms_norm_backward(cls, x: A, normalized_ndim: int, weight: A | None, grad: A,
                          eps: float) -> tuple[A, A]:
        """Gradients in ``(x, weight)``: with ``xhat = x / rms`` and ``gh = g * weight``,
        ``dx = (gh - xhat * mean(gh * xhat)) / rms``."""
        xp, dtype = cls.xp, x.dtype
        rows, inv = _inv_rms(xp, x, normalized_ndim, eps)
        xhat = rows * inv
        g = widened(xp, grad.reshape(xhat.shape))
        trailing = x.shape[x.ndim - normalized_ndim:]
        grad_weight = xp.einsum("rk,rk->k", g, xhat).reshape(trailing)
        g_hat = g if weight is None else g * widened(xp, weight).reshape(-1)
        projection = _row_sums(xp, g_hat * xhat)
        projection /= max(xhat.shape[1], 1)
        xhat *= projection
        grad_x = g_hat - xhat
        grad_x *= inv
        return narrowed(xp, grad_x.reshape(x.shape), dtype), narrowed(xp, grad_weight, dtype)


#: Inputs up to this many elements that the row kernel does not take (a weight of another
#: dtype) take ``_small_layer_norm``: at that size each NumPy call costs more than its
#: arithmetic.
_FEW_ELEMENTS = 2048


def _small_layer_norm(x: A, normalized_ndim: int, weight: A | None, bias: A | None,
                      eps: float) -> A:
    """``layer_norm`` of a small float32/float64 NumPy array: ``_row_statistics``'s arithmetic
    (the same results) inlined, everything after the centering in place."""
    shape = x.shape
    width = math.prod(shape[len(shape) - normalized_ndim:])
    if not width:
        return x.copy()
    rows = x.reshape(-1, width)
    column = ones(numpy, (width, 1), x.dtype)
    centered = rows - (rows @ column) / width
    var = (centered * centered) @ column
    var /= width
    var += eps
    centered *= 1.0 / numpy.sqrt(var)
    if weight is not None:
        centered *= weight.reshape(-1)
    if bias is not None:
        centered += bias.reshape(-1)
    return centered.reshape(shape)


def _kernel_rows(xp: Any, x: A, normalized_ndim: int, *others: A | None) -> A | None:
    """``x`` as C-contiguous ``[rows, width]`` rows when the compiled row kernels take it: a
    NumPy float32 or float64 array with rows and a width, the ``others`` given (weight, bias
    or grad) of its dtype; else None (the NumPy passes)."""
    dtype = x.dtype
    if xp is not numpy or dtype not in _KERNEL_DTYPES or not x.size:
        return None
    for other in others:  # a loop, not any(generator): this runs once per decoding step
        if other is not None and other.dtype != dtype:
            return None
    shape = x.shape
    width = math.prod(shape[len(shape) - normalized_ndim:])
    rows = x.reshape(-1, width)
    return rows if rows.flags.c_contiguous else numpy.ascontiguousarray(rows)


_KERNEL_DTYPES = (numpy.dtype(numpy.float32), numpy.dtype(numpy.float64))


def _widened(a: A | None) -> A | None:
    """A NumPy operand of a 16-bit float kernel in float32 (``None`` when absent)."""
    return None if a is None else widened(numpy, a)


def _or_ones(weight: A | None, width: int, dtype: Any) -> A:
    """``weight`` flat and C-contiguous, or ones standing for an absent one."""
    if weight is None:
        return ones(numpy, (width,), dtype)
    flat = weight.reshape(-1)
    return flat if flat.flags.c_contiguous else numpy.ascontiguousarray(flat)


def _or_zeros(bias: A | None, width: int, dtype: Any) -> A:
    """``bias`` flat and C-contiguous, or zeros standing for an absent one."""
    if bias is None:
        return numpy.zeros(width, dtype)
    flat = bias.reshape(-1)
    return flat if flat.flags.c_contiguous else numpy.ascontiguousarray(flat)


def _row_sums(xp: Any, rows: A) -> A:
    """The sums of ``[rows, width]`` rows as a ``[rows, 1]`` column: one matrix-vector
    product (NumPy's last-axis sum of narrow rows is several times slower)."""
    return xp.matmul(rows, ones(xp, (rows.shape[1], 1), rows.dtype))


def _compiled_batch_norm_backward(x: A, weight: A | None, grad: A, eps: float, mean: A,
                                  var: A) -> tuple[A, A, A]:
    """``batch_norm_backward`` on NumPy float32/float64 with the forward's statistics: one
    compiled kernel (``numba_kernels.batch_norm_backward``) over ``[n, c, positions]``."""
    n, c = x.shape[:2]
    invstd = 1.0 / numpy.sqrt(var.astype(numpy.float64) + eps)
    scale = invstd if weight is None else invstd * weight
    shape = (n, c, math.prod(x.shape[2:]))
    dx, grad_bias, sum_gx = fused_batch_norm_backward(
        numpy.ascontiguousarray(x).reshape(shape), numpy.ascontiguousarray(grad).reshape(shape),
        mean.astype(numpy.float64), invstd, scale)
    return (dx.reshape(x.shape), (sum_gx * invstd).astype(x.dtype),
            grad_bias.astype(x.dtype))


def _row_statistics(xp: Any, x: A, normalized_ndim: int, eps: float) -> tuple[A, A]:
    """``x`` as ``[rows, width]`` rows (computing dtype) minus their means, and each row's
    ``1 / sqrt(var + eps)`` as a ``[rows, 1]`` column."""
    width = math.prod(x.shape[x.ndim - normalized_ndim:])
    rows = widened(xp, x.reshape(-1, width) if width else x.reshape(0, 0))
    divisor = max(width, 1)  # an empty row has nothing to divide (and no warning to give)
    centered = rows - _row_sums(xp, rows) / divisor
    var = _row_sums(xp, centered * centered)
    var /= divisor
    var += eps
    return centered, 1.0 / xp.sqrt(var)


def _inv_rms(xp: Any, x: A, normalized_ndim: int, eps: float) -> tuple[A, A]:
    """``x`` as ``[rows, width]`` rows (computing dtype) and each row's
    ``1 / sqrt(mean(row^2) + eps)`` as a ``[rows, 1]`` column."""
    width = math.prod(x.shape[x.ndim - normalized_ndim:])
    rows = widened(xp, x.reshape(-1, width) if width else x.reshape(0, 0))
    mean_square = _row_sums(xp, rows * rows)
    mean_square /= max(width, 1)
    mean_square += eps
    return rows, 1.0 / xp.sqrt(mean_square)
