# ruff: noqa: N803 - rules name the inner backend type ``B``, as Burn's generics do
"""Convolutions: conv and conv_transpose, and their weight-gradient kernels (recorded too, so
second derivatives flow through them). All are bilinear, and compute-bound: their outputs are
kept under balanced checkpointing. Provided ops not listed here (``conv1d``...,
``conv_x_backward``, ``conv_bias_backward``) run the protocol's composition on both decorators.
"""

from __future__ import annotations

from typing import Any

from burnpy.autodiff.rules import reverse, tangent
from burnpy.autodiff.rules.linalg import Bilinear
from burnpy.autodiff.rules.reverse import AutodiffOps
from burnpy.autodiff.rules.table import (
    Derivative,
    Grads,
    Inputs,
    Params,
    Parents,
    Saved,
    Tangents,
    weight_grad,
    with_bias,
)
from burnpy.autodiff.rules.tangent import ForwardOps


class _KernelTangent:
    """Tangent of a weight-gradient kernel ``name(x, weight, grad, options)``: bilinear in
    (x, grad), the weight fixing only the shape."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, B: Any, tangents: Tangents, inputs: Inputs, output: Any,
                 params: Params) -> Any:
        op = getattr(B, self.name)
        (x, g), (tx, tg), (weight, options) = inputs, tangents, params
        result = None if tx is None else op(tx, weight, g, options)
        if tg is not None:
            term = op(x, weight, tg, options)
            result = term if result is None else B.float_add(result, term)
        return result


def _conv_reverse(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                  parents: Parents) -> Grads:
    x, weight = inputs[0], inputs[1]
    options = params[0]
    return (None if parents[0] is None else B.conv_x_backward(x, weight, grad, options),
            None if parents[1] is None else B.conv_weight_backward(x, weight, grad, options),
            *(() if len(parents) == 2 else
              (None if parents[2] is None else B.conv_bias_backward(grad),)))


def _conv_weight_backward_reverse(B: Any, grad: Any, inputs: Saved, output: Any,
                                  params: Params, parents: Parents) -> Grads:
    """<conv_weight_backward(x, g), U> = <conv(x, U), g>: linear in x and in g."""
    x, g = inputs
    options = params[1]
    return (None if parents[0] is None else B.conv_x_backward(x, grad, g, options),
            None if parents[1] is None else B.conv(x, grad, None, options))


def _conv_transpose_reverse(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                            parents: Parents) -> Grads:
    x, weight = inputs[0], inputs[1]
    options = params[0]
    return (None if parents[0] is None else
            B.conv_transpose_x_backward(x, weight, grad, options),
            None if parents[1] is None else
            B.conv_transpose_weight_backward(x, weight, grad, options),
            *(() if len(parents) == 2 else
              (None if parents[2] is None else B.conv_bias_backward(grad),)))


def _conv_transpose_weight_backward_reverse(B: Any, grad: Any, inputs: Saved, output: Any,
                                            params: Params, parents: Parents) -> Grads:
    """<conv_transpose_weight_backward(x, g), U> = <conv_transpose(x, U), g>."""
    x, g = inputs
    options = params[1]
    return (None if parents[0] is None else B.conv_transpose_x_backward(x, grad, g, options),
            None if parents[1] is None else B.conv_transpose(x, grad, None, options))


#: name, reverse rule, tangent rule.
CONV: tuple[Derivative, ...] = (
    with_bias("conv", _conv_reverse, Bilinear("conv", 1)),
    weight_grad("conv_weight_backward", _conv_weight_backward_reverse,
                _KernelTangent("conv_weight_backward")),
    with_bias("conv_transpose", _conv_transpose_reverse, Bilinear("conv_transpose", 1)),
    weight_grad("conv_transpose_weight_backward", _conv_transpose_weight_backward_reverse,
                _KernelTangent("conv_transpose_weight_backward")),
)


@reverse.generated(CONV)
class AutodiffConvOps(AutodiffOps):
    """The convolutions, recorded with their reverse rules."""


@tangent.generated(CONV)
class ForwardConvOps(ForwardOps):
    """The convolutions, with their tangents."""
