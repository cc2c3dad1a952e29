"""``dropout``: zeroes elements with probability ``p`` in training, identity in eval."""

from __future__ import annotations

from burnpy.backend.distribution import Distribution
from burnpy.backend.errors import InvalidArgumentError
from burnpy.tensor import Tensor


def dropout(x: Tensor, p: float = 0.5, training: bool = True) -> Tensor:
    """Keep each element with probability ``1 - p``, scaled by ``1 / (1 - p)``.

    The Bernoulli mask comes from the backend's seeded generator (``backend.seed``).
    """
    if not 0.0 <= p <= 1.0:
        raise InvalidArgumentError(f"dropout: p must be in [0, 1], got {p}")
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return x * 0.0
    keep = Tensor.random(x.shape, Distribution.bernoulli(1.0 - p), backend=x.backend,
                         device=x.device, dtype=x.dtype)
    return x * (keep * (1.0 / (1.0 - p)))
