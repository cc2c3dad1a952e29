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

# Forward mode: the ForwardAD decorator and the Tensor-level tangent seeding.
from burnpy.autodiff.forward import ForwardAD, make_dual, unpack_dual

__all__ += ["ForwardAD", "make_dual", "unpack_dual"]

# Custom ops: the GradFn node-step protocol and PyTorch-style Functions.
from burnpy.autodiff.function import (  # noqa: E402
    Function,
    FunctionCtx,
    once_differentiable,
)
from burnpy.autodiff.grad_fn import GradFn, apply_grad_fn  # noqa: E402

__all__ += ["Function", "FunctionCtx", "GradFn", "apply_grad_fn", "once_differentiable"]
