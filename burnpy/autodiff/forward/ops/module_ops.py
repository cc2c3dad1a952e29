# ruff: noqa: N803, N806 - rules name the inner backend type ``B``, as Burn's generics do
"""Module ops of the ForwardAD backend: primals and tangent rules.

Convolutions, their weight-gradient kernels and ``linear`` are bilinear, so their tangent is
the op applied to each tangent in turn, plus the bias's; pools, embedding and interpolation
are linear in their input and so are the backward kernels in the incoming gradient. Provided
ops not listed here (``conv1d``..., ``conv_x_backward``, ``conv_bias_backward``, ``max_pool``,
``attention``) run the protocol's composition on this backend.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from burnpy.autodiff.forward.ops._define import ForwardOps, linear_in_grad, linear_op
from burnpy.autodiff.forward.tensor import DualTensor
from burnpy.backend.ops.module_ops import ConvOptions, ConvTransposeOptions

Ints = tuple[int, ...]


def _bilinear(B: Any, op: Callable[..., Any], x: DualTensor, weight: DualTensor,
              bias: DualTensor | None, channel_dim: int, *params: Any) -> DualTensor:
    """``op(x, weight, bias, *params)`` bilinear in (x, weight) plus a bias along
    ``channel_dim``: tangent ``op(tx, w, tb) + op(x, tw)``, the bias tangent riding on
    whichever term runs first."""
    out = op(x.primal, weight.primal, None if bias is None else bias.primal, *params)
    t_bias = None if bias is None else bias.tangent
    tangent = None
    if x.tangent is not None:
        tangent = op(x.tangent, weight.primal, t_bias, *params)
        t_bias = None
    if weight.tangent is not None:
        term = op(x.primal, weight.tangent, t_bias, *params)
        tangent = term if tangent is None else B.float_add(tangent, term)
        t_bias = None
    if t_bias is not None:  # only the bias moves
        shape = [1] * len(out.shape)
        shape[channel_dim] = out.shape[channel_dim]
        tangent = B.float_expand(B.float_reshape(t_bias, tuple(shape)), out.shape)
    return DualTensor(out, tangent)


def _bilinear_backward(B: Any, op: Callable[..., Any], x: DualTensor, weight: DualTensor,
                       grad: DualTensor, options: Any) -> DualTensor:
    """A weight-gradient kernel: bilinear in (x, grad); the weight only fixes the shape."""
    w = weight.primal
    out = op(x.primal, w, grad.primal, options)
    tangent = None
    if x.tangent is not None:
        tangent = op(x.tangent, w, grad.primal, options)
    if grad.tangent is not None:
        term = op(x.primal, w, grad.tangent, options)
        tangent = term if tangent is None else B.float_add(tangent, term)
    return DualTensor(out, tangent)


class ForwardModuleOps(ForwardOps):
    """Convolution, pooling, embedding, interpolation and linear, with tangents."""

    # ---- convolution --------------------------------------------------------------------------
    @classmethod
    def conv(cls, x: DualTensor, weight: DualTensor, bias: DualTensor | None,
             options: ConvOptions) -> DualTensor:
        B = cls.InnerBackend
        return _bilinear(B, B.conv, x, weight, bias, 1, options)

    @classmethod
    def conv_transpose(cls, x: DualTensor, weight: DualTensor, bias: DualTensor | None,
                       options: ConvTransposeOptions) -> DualTensor:
        B = cls.InnerBackend
        return _bilinear(B, B.conv_transpose, x, weight, bias, 1, options)

    @classmethod
    def conv_weight_backward(cls, x: DualTensor, weight: DualTensor, grad: DualTensor,
                             options: ConvOptions) -> DualTensor:
        B = cls.InnerBackend
        return _bilinear_backward(B, B.conv_weight_backward, x, weight, grad, options)

    @classmethod
    def conv_transpose_weight_backward(cls, x: DualTensor, weight: DualTensor,
                                       grad: DualTensor,
                                       options: ConvTransposeOptions) -> DualTensor:
        B = cls.InnerBackend
        return _bilinear_backward(B, B.conv_transpose_weight_backward, x, weight, grad,
                                  options)

    # ---- pooling ------------------------------------------------------------------------------
    avg_pool = linear_op("avg_pool")
    avg_pool_backward = linear_in_grad("avg_pool_backward")
    adaptive_avg_pool = linear_op("adaptive_avg_pool")
    adaptive_avg_pool_backward = linear_in_grad("adaptive_avg_pool_backward")
    max_pool_with_indices_backward = linear_in_grad("max_pool_with_indices_backward")

    @classmethod
    def max_pool_with_indices(cls, x: DualTensor, kernel: Ints, stride: Ints, padding: Ints,
                              dilation: Ints, ceil_mode: bool) -> tuple[DualTensor, Any]:
        """The max of each window; its tangent is the input's at the window's flat index."""
        B = cls.InnerBackend
        values, indices = B.max_pool_with_indices(x.primal, kernel, stride, padding, dilation,
                                                  ceil_mode)
        t = x.tangent
        if t is None:
            return DualTensor(values), indices
        n, c = x.shape[0], x.shape[1]
        flat_t = B.float_reshape(t, (n, c, math.prod(x.shape[2:])))
        flat_idx = B.int_reshape(indices, (n, c, math.prod(values.shape[2:])))
        picked = B.float_reshape(B.float_gather(flat_t, 2, flat_idx), values.shape)
        return DualTensor(values, picked), indices

    # ---- embedding, interpolation, linear -------------------------------------------------------
    embedding = linear_op("embedding")
    embedding_backward = linear_in_grad("embedding_backward")
    interpolate = linear_op("interpolate")
    interpolate_backward = linear_in_grad("interpolate_backward")

    @classmethod
    def linear(cls, x: DualTensor, weight: DualTensor, bias: DualTensor | None) -> DualTensor:
        B = cls.InnerBackend
        return _bilinear(B, B.linear, x, weight, bias, len(x.shape) - 1)
