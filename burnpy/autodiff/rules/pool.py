# ruff: noqa: N803 - rules name the inner backend type ``B``, as Burn's generics do
"""Pools, embedding and interpolation, and their ``*_backward`` kernels. All are linear in
their float input (the kernels in the incoming gradient, whose adjoint is the op itself), so
their tangent is the op itself (``LINEAR``), except max pooling's, which picks the tangent at
each window's max. The reverse rules call the inner backend's ``*_backward`` kernels.
Provided ops not listed here (``max_pool``, ``attention``...) run the protocol's composition.
"""

from __future__ import annotations

import math
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
    indexed,
    linear_in_grad,
    unary_params,
)
from burnpy.autodiff.rules.tangent import ForwardOps


def _avg_pool_reverse(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                      parents: Parents) -> Grads:
    return (B.avg_pool_backward(inputs[0], grad, *params),)


def _avg_pool_backward_reverse(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                               parents: Parents) -> Grads:
    """Linear in the incoming gradient, whose adjoint is the pool itself."""
    return (B.avg_pool(grad, *params[1:]),)


def _max_pool_reverse(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                      parents: Parents) -> Grads:
    return (B.max_pool_with_indices_backward(inputs[0], grad, params[-1]),)


def _max_pool_tangent(B: Any, tangents: Tangents, inputs: Inputs, output: Any,
                      params: Params) -> Any:
    """The input's tangent at each window's max (its flat index, ``params[-1]``)."""
    x, indices = inputs[0], params[-1]
    n, c = x.shape[0], x.shape[1]
    flat_t = B.float_reshape(tangents[0], (n, c, math.prod(x.shape[2:])))
    flat_idx = B.int_reshape(indices, (n, c, math.prod(output.shape[2:])))
    return B.float_reshape(B.float_gather(flat_t, 2, flat_idx), output.shape)


def _max_pool_forward(B: Any, inputs: tuple[Any, ...], params: tuple[Any, ...]) -> Any:
    return B.max_pool_with_indices(inputs[0], *params[:-1])[0]


def _adaptive_avg_pool_reverse(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                               parents: Parents) -> Grads:
    return (B.adaptive_avg_pool_backward(inputs[0], grad),)


def _adaptive_avg_pool_backward_reverse(B: Any, grad: Any, inputs: Saved, output: Any,
                                        params: Params, parents: Parents) -> Grads:
    """The pool back to the incoming gradient's spatial size."""
    return (B.adaptive_avg_pool(grad, tuple(parents[0].shape[2:])),)


def _embedding_reverse(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                       parents: Parents) -> Grads:
    return (B.embedding_backward(inputs[0], grad, params[0]),)


def _interpolate_reverse(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                         parents: Parents) -> Grads:
    return (B.interpolate_backward(inputs[0], grad, *params),)


def _interpolate_backward_reverse(B: Any, grad: Any, inputs: Saved, output: Any,
                                  params: Params, parents: Parents) -> Grads:
    return (B.interpolate(grad, *params[1:]),)


#: name, reverse rule, tangent rule.
POOL: tuple[Derivative, ...] = (
    unary_params("avg_pool", _avg_pool_reverse, LINEAR, saves_inputs=True),
    linear_in_grad("avg_pool_backward", _avg_pool_backward_reverse, LINEAR),
    indexed("max_pool_with_indices", _max_pool_reverse, _max_pool_tangent, dim_arg=None,
            saves_inputs=True, forward=_max_pool_forward),
    linear_in_grad("max_pool_with_indices_backward", COMPOSED, LINEAR),
    unary_params("adaptive_avg_pool", _adaptive_avg_pool_reverse, LINEAR, saves_inputs=True),
    linear_in_grad("adaptive_avg_pool_backward", _adaptive_avg_pool_backward_reverse, LINEAR),
    unary_params("embedding", _embedding_reverse, LINEAR, saves_inputs=True),
    linear_in_grad("embedding_backward", COMPOSED, LINEAR),
    unary_params("interpolate", _interpolate_reverse, LINEAR, saves_inputs=True),
    linear_in_grad("interpolate_backward", _interpolate_backward_reverse, LINEAR),
)


@reverse.generated(POOL)
class AutodiffPoolOps(AutodiffOps):
    """Pools, embedding and interpolation, recorded with their reverse rules."""


@tangent.generated(POOL)
class ForwardPoolOps(ForwardOps):
    """Pools, embedding and interpolation, with their tangents."""
