"""Custom differentiable ops built on Tensor: PyTorch-style ``Function`` (with its ``ctx``,
``FunctionCtx``, and ``once_differentiable``) and the node-step protocol ``GradFn`` recorded by
``apply_grad_fn``.

They sit one layer above ``burnpy.tensor`` (they take and return Tensors), so the autodiff
engine below never imports Tensor; ``burnpy.autodiff`` still offers them as attributes
(``burnpy.autodiff.Function``, torch's ``torch.autograd.Function``), as does ``burnpy``.
"""

from burnpy.custom_ops.function import Function, FunctionCtx, once_differentiable
from burnpy.custom_ops.grad_fn import GradFn, apply_grad_fn

__all__ = ["Function", "FunctionCtx", "GradFn", "apply_grad_fn", "once_differentiable"]
