# ruff: noqa: N803 - rules name the inner backend type ``B``, as Burn's generics do
"""Softmax, log-softmax and ``relu_backward`` of the ForwardAD backend. The elementwise
activations (relu, gelu, sigmoid...) come from the table of local partials
(``burnpy.autodiff.derivatives``); their ``*_backward`` helpers other than ``relu_backward``
(linear in the gradient) run the protocol's composition on this backend, which differentiates
them again (forward-over-reverse)."""

from __future__ import annotations

from typing import Any

from burnpy.autodiff.forward.ops._define import ForwardOps, linear_in_grad, unary


class ForwardActivationOps(ForwardOps):
    """softmax and log_softmax with their tangent rules, and relu_backward."""

    relu_backward = linear_in_grad("relu_backward")

    @staticmethod
    def _softmax_tangent(B: Any, t: Any, out: Any, x: Any, dim: int) -> Any:
        """y (t - sum(t y)) along dim."""
        return B.float_mul(out, B.float_sub(t, B.float_sum_dim(B.float_mul(t, out), dim)))

    softmax = unary("softmax", _softmax_tangent)

    @staticmethod
    def _log_softmax_tangent(B: Any, t: Any, out: Any, x: Any, dim: int) -> Any:
        """t - sum(t exp(y)) along dim."""
        return B.float_sub(t, B.float_sum_dim(B.float_mul(t, B.float_exp(out)), dim))

    log_softmax = unary("log_softmax", _log_softmax_tangent)
