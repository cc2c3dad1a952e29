"""Reverse-mode automatic differentiation as a decorator backend.

``Autodiff(B)`` / ``Autodiff[B, C]`` wraps any backend ``B``; ``C`` is ``NoCheckpointing``
(default) or ``BalancedCheckpointing``. ``backward`` returns ``Gradients`` holding B's float
primitives; see ``AutodiffBackend`` for the full API.
"""

from burnpy.autodiff.backend import Autodiff, AutodiffBackend
from burnpy.autodiff.checkpoint import BalancedCheckpointing, CheckpointStrategy, NoCheckpointing
from burnpy.autodiff.gradients import Gradients
from burnpy.autodiff.tensor import AutodiffTensor

__all__ = [
    "Autodiff", "AutodiffBackend", "AutodiffTensor", "BalancedCheckpointing",
    "CheckpointStrategy", "Gradients", "NoCheckpointing",
]
