"""Fused cross entropy over an array module ``xp`` (NumPy on the CPU, CuPy on CUDA).

The protocol's composition builds a one-hot matrix from a class arange and multiplies it in;
here the target logits are gathered directly and the backward writes ``softmax - 1`` at the
targets in place, so the loss and its gradient are each a few passes over ``[n, c]``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy

from burnpy_cpu import memory
from burnpy_cpu.array_ops._shared import narrowed, ones, row_kernels, widened

A = Any  # an ``xp.ndarray``



#: The smallest row sum of ``exp(x - global max)`` trusted: a row whose largest logit lies
#: more than ~46 below the global maximum falls back to per-row maxima (its terms would
#: approach float32's subnormals).
_TRUSTED_SUM = 1e-20


def _exp_and_sums(xp: Any, x: A) -> tuple[A, A, A]:
    """``exp(x - shift)``, its row sums ``[n]`` and the shift (``[n]`` or a scalar), for a
    log-sum-exp and a softmax. On NumPy the shift is the one global maximum and the sums one
    matrix-vector product: NumPy's per-row maxima and sums of narrow ``[n, classes]`` rows
    cost 3x that; a row too far below the maximum (or a non-finite logit) brings back the
    per-row maxima, which a device backend always uses (no host round trip there)."""
    if xp is numpy and x.size:
        shift = x.max()
        e = x - shift
        xp.exp(e, out=e)
        sums = e @ ones(xp, (x.shape[1],), e.dtype)
        if (sums >= _TRUSTED_SUM).all():
            return e, sums, shift
    peak = x.max(axis=1, keepdims=True) if x.shape[1] else xp.zeros((x.shape[0], 1), x.dtype)
    e = xp.exp(x - peak)
    return e, e.sum(axis=1), peak[:, 0]


def _rows_and_targets(xp: Any, target: A, ignore_index: int) -> tuple[A, A, A]:
    """Row numbers, a target index safe to gather with (0 on ignored rows) and the kept-row
    mask; no host round trip, so a device backend never waits here."""
    kept = target != ignore_index
    return xp.arange(target.shape[0]), xp.where(kept, target, 0), kept


def _takes_kernels(xp: Any, logits: A, target: A) -> bool:
    """Whether the compiled row kernels take these: NumPy float32 or float64 ``[n, c]``
    logits with classes, integer targets."""
    return (xp is numpy and logits.dtype in _KERNEL_DTYPES and logits.ndim == 2
            and logits.shape[1] > 0 and target.dtype.kind in "iu")


_KERNEL_DTYPES = (numpy.dtype(numpy.float32), numpy.dtype(numpy.float64))


def _shifted_exp(logits: A) -> tuple[A, A, A]:
    """C-contiguous logits, ``exp(logits - row max)`` (a new array) and the row maxima."""
    x = numpy.ascontiguousarray(logits)
    e = memory.empty(x.shape, x.dtype)
    peaks = numpy.empty(x.shape[0], x.dtype)
    row_kernels().shift_rows(x, e, peaks)
    numpy.exp(e, out=e)
    return x, e, peaks


class ArrayLossOps:
    """``cross_entropy`` and its backward as gathers and row-wise passes."""

    xp: ClassVar[Any]

    @classmethod
    def cross_entropy(cls, logits: A, target: A, ignore_index: int) -> A:
        """``logsumexp(row) - row[target]`` per row; exactly 0 on ignored rows, whatever
        their logits hold (torch's value)."""
        xp, dtype = cls.xp, logits.dtype
        if xp is numpy and dtype.itemsize == 2:  # 16-bit floats: the float32 kernel, one rounding
            return narrowed(xp, cls.cross_entropy(widened(xp, logits), target, ignore_index),
                            dtype)
        if _takes_kernels(xp, logits, target):
            x, e, peaks = _shifted_exp(logits)
            loss = numpy.empty(x.shape[0], dtype)
            row_kernels().cross_entropy(x, e, peaks, numpy.ascontiguousarray(target),
                                        ignore_index, loss)
            return loss
        x = widened(xp, logits)
        _, sums, shift = _exp_and_sums(xp, x)
        lse = xp.log(sums) + shift
        rows, safe, kept = _rows_and_targets(xp, target, ignore_index)
        loss = xp.where(kept, lse - x[rows, safe], 0)
        return narrowed(xp, loss, dtype)

    @classmethod
    def cross_entropy_backward(cls, logits: A, target: A, ignore_index: int, grad: A) -> A:
        """``(softmax(row) - one_hot(target)) * grad`` per row, 0 on ignored rows."""
        xp, dtype = cls.xp, logits.dtype
        if xp is numpy and dtype.itemsize == 2:  # 16-bit floats: the float32 kernel, one rounding
            return narrowed(xp, cls.cross_entropy_backward(widened(xp, logits), target,
                                                           ignore_index, widened(xp, grad)),
                            dtype)
        if _takes_kernels(xp, logits, target) and grad.dtype == dtype:
            _, e, _ = _shifted_exp(logits)
            row_kernels().cross_entropy_backward(e, numpy.ascontiguousarray(target),
                                                 ignore_index, numpy.ascontiguousarray(grad))
            return e
        x = widened(xp, logits)
        e, sums, _ = _exp_and_sums(xp, x)
        rows, safe, kept = _rows_and_targets(xp, target, ignore_index)
        g = xp.where(kept, widened(xp, grad), 0)
        e *= (g / sums)[:, None]  # the softmax and the row's grad in one pass
        e[rows, safe] -= g
        if xp is not numpy or not kept.all():  # ignored rows are 0 even where logits are not finite
            e = xp.where(kept[:, None], e, 0)
        return narrowed(xp, e, dtype)
