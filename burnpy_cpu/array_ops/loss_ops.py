"""Fused cross entropy over an array module ``xp`` (NumPy on the CPU, CuPy on CUDA).

The protocol's composition builds a one-hot matrix from a class arange and multiplies it in;
here the target logits are gathered directly and the backward writes ``softmax - 1`` at the
targets in place, so the loss and its gradient are each a few passes over ``[n, c]``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from burnpy_cpu.array_ops._shared import widened

A = Any  # an ``xp.ndarray``



def _rows_and_targets(xp: Any, target: A, ignore_index: int) -> tuple[A, A, A]:
    """Row numbers, a target index safe to gather with (0 on ignored rows) and the kept-row
    mask; no host round trip, so a device backend never waits here."""
    kept = target != ignore_index
    return xp.arange(target.shape[0]), xp.where(kept, target, 0), kept


class ArrayLossOps:
    """``cross_entropy`` and its backward as gathers and row-wise passes."""

    xp: ClassVar[Any]

    @classmethod
    def cross_entropy(cls, logits: A, target: A, ignore_index: int) -> A:
        """``logsumexp(row) - row[target]`` per row; exactly 0 on ignored rows, whatever
        their logits hold (torch's value)."""
        xp, dtype = cls.xp, logits.dtype
        x = widened(xp, logits)
        peak = x.max(axis=1, keepdims=True)
        lse = xp.log(xp.exp(x - peak).sum(axis=1)) + peak[:, 0]
        rows, safe, kept = _rows_and_targets(xp, target, ignore_index)
        loss = xp.where(kept, lse - x[rows, safe], 0)
        return loss.astype(dtype, copy=False)

    @classmethod
    def cross_entropy_backward(cls, logits: A, target: A, ignore_index: int, grad: A) -> A:
        """``(softmax(row) - one_hot(target)) * grad`` per row, 0 on ignored rows."""
        xp, dtype = cls.xp, logits.dtype
        x = widened(xp, logits)
        e = xp.exp(x - x.max(axis=1, keepdims=True))
        e /= e.sum(axis=1, keepdims=True)
        rows, safe, kept = _rows_and_targets(xp, target, ignore_index)
        e[rows, safe] -= 1.0
        e *= widened(xp, grad)[:, None]
        return xp.where(kept[:, None], e, 0).astype(dtype, copy=False)
