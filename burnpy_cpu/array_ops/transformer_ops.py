"""A transformer's fused ops over an array module ``xp`` (NumPy on the CPU, CuPy on CUDA):
scaled dot-product attention, linear layers and the embedding's gradient.

Attention keeps its scores transposed, ``[..., keys, queries]``, in one buffer: the softmax
then reduces over the keys along the second-to-last axis, where each step of a reduction is
an elementwise pass over a whole contiguous ``[queries]`` row (NumPy's last-axis reductions
over 64-wide rows run 2-3x slower), the sums are one matmul with a row of ones, and the
causal mask is one ``[keys, queries]`` additive block broadcast over batch and heads. The
weights are handed out as the transposed view of that buffer, so ``weights @ value`` and
every backward matmul are BLAS calls on a plain or transposed contiguous operand. 16-bit
floats are computed in float32, as torch does on the CPU.
"""

from __future__ import annotations

import math
import operator
from typing import Any, ClassVar

import numpy

from burnpy_cpu import memory
from burnpy_cpu.array_ops._shared import narrowed, ones, widened

A = Any  # an ``xp.ndarray``


def _scale(query: A, scale: float | None) -> float:
    """The scores' factor: ``scale``, or ``1 / sqrt(dim)`` (torch's default)."""
    return scale if scale is not None else 1.0 / math.sqrt(query.shape[-1])


def _column_max(xp: Any, a: A) -> A:
    """The maxima of ``a`` over its second-to-last axis (kept, size 1), by halving: each
    step is one elementwise maximum of two contiguous half blocks (with few columns, as in
    a cached decoding step, one reduction costs fewer calls)."""
    n = a.shape[-2]
    if a.shape[-1] < 8:
        return a.max(axis=-2, keepdims=True)
    while n > 1:
        half = n // 2
        folded = xp.maximum(a[..., :half, :], a[..., half:2 * half, :])
        if n % 2:
            xp.maximum(folded[..., :1, :], a[..., 2 * half:, :], out=folded[..., :1, :])
        a, n = folded, half
    return a


def _column_sum(xp: Any, a: A) -> A:
    """The sums of ``a`` over its second-to-last axis (kept, size 1), as one matmul with a
    row of ones."""
    return xp.matmul(ones(xp, (1, a.shape[-2]), a.dtype), a)


#: The smallest softmax denominator trusted after shifting by the global maximum (a column
#: whose largest allowed score lies ~46 below it falls back to per-column maxima).
_TRUSTED_SUM = 1e-20


def _softmax_by_global_shift(xp: Any, scores: A, mask: A | None, is_causal: bool) -> bool:
    """Overwrite ``scores [..., lk, lq]`` with their column softmax, shifted by the one global
    maximum and masked by zeroing after the exponential: one full reduction instead of
    per-column maxima. False when a column's sum is too small to trust (a column far below
    the maximum, a fully masked one, a non-finite score): the caller then starts again with
    per-column maxima."""
    scores -= scores.max()
    xp.exp(scores, out=scores)
    if is_causal:  # keep key position <= query position (torch's top-left alignment)
        scores *= xp.triu(ones(xp, scores.shape[-2:], scores.dtype))
    if mask is not None:
        scores *= mask
    sums = _column_sum(xp, scores)
    if not (sums >= _TRUSTED_SUM).all():
        return False
    scores /= sums
    return True


def _one_query_attention(query: A, key: A, value: A, scale: float | None) -> A:
    """Unmasked attention of a single query row per head (a cached decoding step) on NumPy:
    the scores as one ``[..., 1, keys]`` row each, reduced along the last axis, in the fewest
    NumPy calls (at this size a call costs more than its arithmetic)."""
    scores = query @ key.swapaxes(-1, -2)
    scores *= query.dtype.type(_scale(query, scale))
    scores -= numpy.maximum.reduce(scores, axis=-1, keepdims=True)
    numpy.exp(scores, out=scores)
    scores /= numpy.add.reduce(scores, axis=-1, keepdims=True)
    return (scores @ value).astype(query.dtype, copy=False)


def _matmul(xp: Any, a: A, b: A) -> A:
    """``a @ b``; on NumPy onto CpuBackend's cached memory (``burnpy_cpu.memory``)."""
    return memory.matmul(a, b) if xp is numpy else xp.matmul(a, b)


_multiply = memory.binary(numpy.multiply, operator.mul)


def _empty(xp: Any, shape: tuple[int, ...], dtype: Any) -> A:
    """An uninitialised array to write into; on NumPy from CpuBackend's cached memory."""
    return memory.empty(shape, dtype) if xp is numpy else xp.empty(shape, dtype=dtype)


class ArrayTransformerOps:
    """``attention`` (its weights, its backward), ``linear`` and ``embedding_backward``."""

    xp: ClassVar[Any]
    float_matmul: ClassVar[Any]

    @classmethod
    def linear(cls, x: A, weight: A, bias: A | None) -> A:
        """``x @ weight.T + bias``: one matmul over the flattened rows, the bias added in
        place into its fresh result (the composition allocates a second output). 16-bit
        floats of one dtype are multiplied and biased in float32 and rounded once, as torch's
        CPU kernels (rounding the product first would round twice, and add in 16 bits)."""
        shape = x.shape
        dtype = x.dtype
        if dtype.itemsize == 2 and weight.dtype == dtype and (bias is None
                                                            or bias.dtype == dtype):
            xp = cls.xp
            out = widened(xp, x.reshape(-1, shape[-1])) @ widened(xp, weight).T
            if bias is not None:
                out += widened(xp, bias)
            return narrowed(xp, out, dtype).reshape((*shape[:-1], weight.shape[0]))
        out = cls.float_matmul(x.reshape(-1, shape[-1]), weight.T)
        if bias is not None:
            if bias.dtype == out.dtype:
                out += bias
            else:  # mixed dtypes promote, as float_add does
                out = out + bias
        return out.reshape((*shape[:-1], weight.shape[0]))

    @classmethod
    def _transposed_weights(cls, query: A, key: A, mask: A | None, scale: float | None,
                            is_causal: bool) -> A:
        """The softmax weights as a contiguous ``[..., lk, lq]`` buffer (computing dtype)."""
        xp = cls.xp
        q, k = widened(xp, query), widened(xp, key)
        dtype = q.dtype
        lq, lk = q.shape[-2], k.shape[-2]
        if mask is not None:  # a mask of rank < 2 broadcasts along the queries
            mask = mask.reshape((1,) * (2 - mask.ndim) + mask.shape) if mask.ndim < 2 else mask
            batch = numpy.broadcast_shapes(q.shape[:-2], k.shape[:-2], mask.shape[:-2])
            if batch != q.shape[:-2]:  # the mask widens the batch: so do the scores
                q = xp.broadcast_to(q, (*batch, *q.shape[-2:]))
            mask = mask.swapaxes(-1, -2)
        scaled_qt = _empty(xp, (*q.shape[:-2], q.shape[-1], lq), dtype)
        xp.multiply(q.swapaxes(-1, -2), dtype.type(_scale(query, scale)), out=scaled_qt)
        scores = _matmul(xp, k, scaled_qt)
        if xp is numpy and scores.size and lq >= 8:
            if _softmax_by_global_shift(xp, scores, mask, is_causal):
                return scores
            scores = xp.matmul(k, scaled_qt)  # overwritten: start again, per column
        if is_causal:  # key position > query position: -inf (torch's top-left alignment)
            scores += xp.tril(xp.full((lk, lq), -xp.inf, dtype=dtype), -1)
        if mask is None:
            scores -= _column_max(xp, scores)
            xp.exp(scores, out=scores)
            scores /= _column_sum(xp, scores)
            return scores
        xp.copyto(scores, dtype.type(-xp.inf), where=~mask)
        top = _column_max(xp, scores)
        dead = top == -xp.inf  # every key masked: zero weights, as torch's (not NaN)
        scores -= xp.where(dead, dtype.type(0), top)
        xp.exp(scores, out=scores)
        sums = _column_sum(xp, scores)
        xp.copyto(sums, dtype.type(1), where=dead)
        scores /= sums
        return scores

    @classmethod
    def attention_weights(cls, query: A, key: A, mask: A | None, scale: float | None,
                          is_causal: bool) -> A:
        """The softmax weights ``[..., lq, lk]`` (a transposed view of one buffer)."""
        weights = cls._transposed_weights(query, key, mask, scale, is_causal)
        return narrowed(cls.xp, weights, query.dtype).swapaxes(-1, -2)

    @classmethod
    def attention(cls, query: A, key: A, value: A, mask: A | None, scale: float | None,
                  is_causal: bool) -> A:
        """``weights @ value``, one batched matmul over batch and heads."""
        xp = cls.xp
        if (xp is numpy and query.shape[-2] == 1 and mask is None and not is_causal
                and query.dtype.itemsize >= 4 and key.shape[-2]):
            return _one_query_attention(query, key, value, scale)
        weights = cls._transposed_weights(query, key, mask, scale, is_causal)
        out = _matmul(xp, weights.swapaxes(-1, -2), widened(xp, value))
        return narrowed(xp, out, query.dtype)

    @classmethod
    def attention_backward(cls, query: A, key: A, value: A, mask: A | None,
                           scale: float | None, is_causal: bool, grad: A,
                           weights: A | None = None) -> tuple[A, A, A]:
        """``(dq, dk, dv)``, in the transposed layout: with ``wt`` the weights
        ``[..., lk, lq]``, ``dv = wt g``, ``dst = wt * (v g^T - colsum(wt * v g^T))``,
        ``dq = dst^T k * scale``, ``dk = dst q * scale``."""
        xp, dtype = cls.xp, query.dtype
        wt = (cls._transposed_weights(query, key, mask, scale, is_causal) if weights is None
              else widened(xp, weights).swapaxes(-1, -2))
        q, k, v, g = (widened(xp, a) for a in (query, key, value, grad))
        grad_value = _matmul(xp, wt, g)
        grad_scores = _matmul(xp, v, g.swapaxes(-1, -2))
        projected = _column_sum(xp, _multiply(grad_scores, wt))
        grad_scores -= projected
        grad_scores *= wt
        s = q.dtype.type(_scale(query, scale))
        grad_query = _matmul(xp, grad_scores.swapaxes(-1, -2), k)
        grad_query *= s
        grad_key = _matmul(xp, grad_scores, q)
        grad_key *= s
        return (narrowed(xp, grad_query, dtype), narrowed(xp, grad_key, dtype),
                narrowed(xp, grad_value, dtype))

    @classmethod
    def embedding_backward(cls, weight: A, grad: A, indices: A) -> A:
        """Rows of ``grad`` summed per index into a zero ``[vocab, dim]``: on NumPy the rows
        are sorted by index and each run summed by one ``add.reduceat`` (5x ``bincount``
        over every element, 6x ``add.at``); elsewhere by ``bincount``."""
        xp = cls.xp
        vocab, dim = weight.shape
        flat = indices.reshape(-1)
        rows = widened(xp, grad).reshape(flat.shape[0], dim)
        if xp is not numpy:
            linear = (flat[:, None] * dim + xp.arange(dim)).reshape(-1)
            summed = xp.bincount(linear, weights=rows.reshape(-1).astype(xp.float64),
                                 minlength=vocab * dim)
            return summed.reshape(vocab, dim).astype(weight.dtype, copy=False)
        out = numpy.zeros((vocab, dim), dtype=rows.dtype)
        if flat.shape[0]:
            order = numpy.argsort(flat, kind="stable")
            ordered = flat[order]
            starts = numpy.flatnonzero(numpy.concatenate(([True], ordered[1:] != ordered[:-1])))
            out[ordered[starts]] = numpy.add.reduceat(rows[order], starts, axis=0)
        return narrowed(xp, out, weight.dtype)
