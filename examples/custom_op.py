"""A custom differentiable op: ``softplus(x) = log(1 + exp(x))`` as a ``Function``.

It gets a gradient under ``Autodiff``, a tangent under ``ForwardAD`` (through ``jvp``), and a
second derivative under ``Autodiff(Autodiff(...))``, because its backward uses Tensor ops.

Run with ``.venv/bin/python examples/custom_op.py``.
"""

from __future__ import annotations

import numpy as np

from burnpy import Tensor
from burnpy.autodiff import Autodiff, Function, FunctionCtx, make_dual, unpack_dual
from burnpy_cpu import CpuBackend


class Softplus(Function):
    """``log(1 + exp(x))``, computed stably; its derivative is ``sigmoid(x)``."""

    @staticmethod
    def forward(ctx: FunctionCtx, x: Tensor) -> Tensor:
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        return x.clamp_min(0.0) + (-x.abs()).exp().log1p()

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> Tensor:
        (x,) = ctx.saved_tensors
        return grad * x.sigmoid()

    @staticmethod
    def jvp(ctx: FunctionCtx, tangent: Tensor) -> Tensor:
        (x,) = ctx.saved_tensors
        return tangent * x.sigmoid()


def main() -> None:
    values = np.array([-2.0, -0.5, 0.0, 1.0, 3.0])
    sigmoid = 1.0 / (1.0 + np.exp(-values))

    # Reverse mode: one recorded node whose backward is Softplus.backward.
    ad = Autodiff(CpuBackend)
    x = Tensor.from_data(values, backend=ad).require_grad()
    y = Softplus.apply(x)
    grad = x.grad(y.sum().backward())
    print("softplus(x):      ", y.to_numpy())
    print("d/dx:             ", grad.to_numpy(), " (sigmoid:", sigmoid, ")")

    # Forward mode: the tangent comes from Softplus.jvp.
    dual = make_dual(Tensor.from_data(values), Tensor.ones((5,), dtype="float64"))
    print("jvp along ones:   ", unpack_dual(Softplus.apply(dual)).tangent.to_numpy())

    # Second order: nest Autodiff. The outer backward runs Softplus.backward on tensors of the
    # inner Autodiff backend, which records it, so its result differentiates again.
    outer = Autodiff(ad)
    x_inner = Tensor.from_data(values, backend=ad).require_grad()
    x_outer = Tensor.from_inner(x_inner, backend=outer).require_grad()
    first = x_outer.grad(Softplus.apply(x_outer).sum().backward())
    second = x_inner.grad(first.sum().backward())
    print("d2/dx2:           ", second.to_numpy(), " (sigmoid'(x):", sigmoid * (1 - sigmoid),
          ")")


if __name__ == "__main__":
    main()
