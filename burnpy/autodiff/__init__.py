"""Reverse-mode automatic differentiation as a decorator backend.

``Autodiff(B)`` / ``Autodiff[B, C]`` wraps any backend ``B``; ``C`` is ``NoCheckpointing``
(default) or ``BalancedCheckpointing``. ``backward`` returns ``Gradients`` holding B's float
primitives; see ``AutodiffBackend`` for the full API.
"""

from typing import TYPE_CHECKING

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

# Custom ops (Function, GradFn) are built on Tensor, one layer up in ``burnpy.custom_ops``:
# they are attributes of this package too, as torch's ``torch.autograd.Function``, imported on
# first use, so that importing the engine never imports Tensor (tests/test_layers.py).
_CUSTOM_OPS = ("Function", "FunctionCtx", "GradFn", "apply_grad_fn", "once_differentiable")

__all__ += list(_CUSTOM_OPS)


def __getattr__(name: str) -> object:
    """``burnpy.autodiff.Function`` and the other custom-op names of ``burnpy.custom_ops``,
    imported the first time one is asked for."""
    if name in _CUSTOM_OPS:
        from burnpy import custom_ops

        return getattr(custom_ops, name)
    raise AttributeError(f"module 'burnpy.autodiff' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The package's names, the lazily imported custom-op names included."""
    return sorted({*globals(), *_CUSTOM_OPS})


if TYPE_CHECKING:  # type checkers see the re-exported names as what they are
    from burnpy.custom_ops import Function as Function
    from burnpy.custom_ops import FunctionCtx as FunctionCtx
    from burnpy.custom_ops import GradFn as GradFn
    from burnpy.custom_ops import apply_grad_fn as apply_grad_fn
    from burnpy.custom_ops import once_differentiable as once_differentiable
