"""Distance layers: ``CosineSimilarity`` and ``PairwiseDistance``."""

from __future__ import annotations

from burnpy.nn import functional as F
from burnpy.nn.module import Module
from burnpy.tensor import Tensor


class CosineSimilarity(Module):
    """Cosine of the angle between ``x1`` and ``x2`` along ``dim``."""

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        self.dim, self.eps = dim, eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        """The cosines; ``dim`` reduced."""
        return F.cosine_similarity(x1, x2, self.dim, self.eps)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, eps={self.eps}"


class PairwiseDistance(Module):
    """``||x1 - x2 + eps||_p`` along the last dim."""

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        """The distances; the last dim reduced (kept with ``keepdim``)."""
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)

    def extra_repr(self) -> str:
        return f"p={self.norm}, eps={self.eps}, keepdim={self.keepdim}"
