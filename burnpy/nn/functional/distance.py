"""Distances and similarities along a dim: ``cosine_similarity``, ``pairwise_distance``."""

from __future__ import annotations

from burnpy.nn.functional._common import _float
from burnpy.tensor import Tensor
from burnpy.tensor.checks import broadcast_shapes


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """``x1 . x2 / (max(||x1||, eps) * max(||x2||, eps))`` along ``dim``, as torch: ``x1`` and
    ``x2`` are broadcast to one shape first, so the norms are over the broadcast ``dim``; the
    clamp at ``eps`` changes the value but not the gradient (torch clamps without grad)."""
    op = "cosine_similarity"
    _float(op, x1, "x1")
    _float(op, x2, "x2")
    shape = broadcast_shapes(op, x1.shape, x2.shape)
    a, b = x1.expand(shape), x2.expand(shape)

    def clamped_norm(x: Tensor) -> Tensor:
        norm = x.square().sum(dim, keepdim=True).sqrt()
        return norm + (norm.clamp(min=eps) - norm).detach()

    return ((a / clamped_norm(a)) * (b / clamped_norm(b))).sum(dim)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    """``||x1 - x2 + eps||_p`` along the last dim."""
    _float("pairwise_distance", x1, "x1")
    diff = x1 - x2 + eps
    return diff.norm(p, -1, keepdim)
