# ruff: noqa: N803 - rules name the inner backend type ``B``, as Burn's generics do
"""Softmax, log-softmax and relu_backward: one node each, so the inner backend's fused kernels
run forward. The elementwise activations (relu, gelu, sigmoid...) come from the table of local
partials (``burnpy.ir.elementwise``); their ``*_backward`` helpers run the protocol's
composition on both decorators, except ``relu_backward`` on ForwardAD (linear in the
gradient)."""

from __future__ import annotations

from typing import Any

from burnpy.autodiff.rules import reverse, tangent
from burnpy.autodiff.rules.reverse import AutodiffOps
from burnpy.autodiff.rules.table import (
    COMPOSED,
    LINEAR,
    Derivative,
    Grads,
    Inputs,
    Params,
    Parents,
    Saved,
    Tangents,
    linear_in_grad,
    unary_params,
)
from burnpy.autodiff.rules.tangent import ForwardOps


def _softmax_reverse(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                     parents: Parents) -> Grads:
    """y (g - sum(g y)) along dim."""
    inner = B.float_sum_dim(B.float_mul(grad, output), params[0])
    return (B.float_mul(output, B.float_sub(grad, inner)),)


def _softmax_tangent(B: Any, tangents: Tangents, inputs: Inputs, output: Any,
                     params: Params) -> Any:
    """y (t - sum(t y)) along dim."""
    t = tangents[0]
    return B.float_mul(output, B.float_sub(t, B.float_sum_dim(B.float_mul(t, output),
                                                              params[0])))


def _log_softmax_reverse(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                         parents: Parents) -> Grads:
    """g - exp(y) sum(g) along dim."""
    total = B.float_sum_dim(grad, params[0])
    return (B.float_sub(grad, B.float_mul(B.float_exp(output), total)),)


def _log_softmax_tangent(B: Any, tangents: Tangents, inputs: Inputs, output: Any,
                         params: Params) -> Any:
    """t - sum(t exp(y)) along dim."""
    t = tangents[0]
    return B.float_sub(t, B.float_sum_dim(B.float_mul(t, B.float_exp(output)), params[0]))


#: name, reverse rule, tangent rule.
ACTIVATION: tuple[Derivative, ...] = (
    unary_params("softmax", _softmax_reverse, _softmax_tangent, saves_output=True),
    unary_params("log_softmax", _log_softmax_reverse, _log_softmax_tangent, saves_output=True),
    linear_in_grad("relu_backward", COMPOSED, LINEAR),
)


@reverse.generated(ACTIVATION)
class AutodiffActivationOps(AutodiffOps):
    """softmax and log_softmax, recorded with their reverse rules."""


@tangent.generated(ACTIVATION)
class ForwardActivationOps(ForwardOps):
    """softmax, log_softmax and relu_backward, with their tangents."""
