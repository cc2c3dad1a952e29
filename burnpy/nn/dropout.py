"""``Dropout``: zeroes elements with probability ``p`` in training, identity in eval."""

from __future__ import annotations

from burnpy.backend.errors import InvalidArgumentError
from burnpy.nn.functional.dropout import dropout
from burnpy.nn.module import Module
from burnpy.tensor import Tensor


class Dropout(Module):
    """Randomly zeroes elements with probability ``p`` while training (torch.nn.Dropout)."""

    def __init__(self, p: float = 0.5) -> None:
        if not 0.0 <= p <= 1.0:
            raise InvalidArgumentError(f"Dropout: p must be in [0, 1], got {p}")
        self.p = p

    def forward(self, x: Tensor) -> Tensor:
        """``x`` (any shape) with dropped elements zeroed and the rest scaled by ``1/(1-p)``;
        ``x`` itself in eval mode."""
        return dropout(x, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"
