# ruff: noqa: N803 - rules name the inner backend type ``B``, as Burn's generics do
"""Softmax and log-softmax of the Autodiff backend: one recorded node each, so the inner
backend's fused kernels run forward. The elementwise activations (relu, gelu, sigmoid...) come
from the table of local partials (``burnpy.autodiff.derivatives``).
"""

from __future__ import annotations

from typing import Any

from burnpy.autodiff.ops._define import (
    AutodiffOps,
    Params,
    Parents,
    Rule,
    Saved,
    declare,
    unary_params,
)


class AutodiffActivationOps(AutodiffOps):
    """softmax and log_softmax, recorded with their reverse rules."""

    @staticmethod
    def _softmax_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                          parents: Parents) -> Rule:
        """y (g - sum(g y)) along dim."""
        dim = params[0]
        inner = B.float_sum_dim(B.float_mul(grad, output), dim)
        return (B.float_mul(output, B.float_sub(grad, inner)),)

    softmax = unary_params(declare("softmax", _softmax_backward, saves_output=True))

    @staticmethod
    def _log_softmax_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                              parents: Parents) -> Rule:
        """g - exp(y) sum(g) along dim."""
        total = B.float_sum_dim(grad, params[0])
        return (B.float_sub(grad, B.float_mul(B.float_exp(output), total)),)

    log_softmax = unary_params(declare("log_softmax", _log_softmax_backward, saves_output=True))
