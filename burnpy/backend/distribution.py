"""Random distributions accepted by ``random`` ops."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from burnpy.backend.errors import InvalidArgumentError


@dataclass(frozen=True, slots=True)
class Distribution:
    """A distribution: uniform on [low, high), normal(mean, std), or bernoulli(p).

    ``Distribution.default()`` is uniform on [0, 1), as in Burn.
    """

    kind: Literal["uniform", "normal", "bernoulli"]
    a: float = 0.0
    b: float = 1.0

    @staticmethod
    def default() -> Distribution:
        return Distribution("uniform", 0.0, 1.0)

    @staticmethod
    def uniform(low: float = 0.0, high: float = 1.0) -> Distribution:
        if not high > low:
            raise InvalidArgumentError(f"uniform: need low < high, got low={low}, high={high}")
        return Distribution("uniform", float(low), float(high))

    @staticmethod
    def normal(mean: float = 0.0, std: float = 1.0) -> Distribution:
        if std < 0:
            raise InvalidArgumentError(f"normal: std must be >= 0, got {std}")
        return Distribution("normal", float(mean), float(std))

    @staticmethod
    def bernoulli(p: float) -> Distribution:
        if not 0.0 <= p <= 1.0:
            raise InvalidArgumentError(f"bernoulli: p must be in [0, 1], got {p}")
        return Distribution("bernoulli", float(p), 0.0)
