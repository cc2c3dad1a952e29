# ruff: noqa: N803 - rules name the inner backend type ``B``, as Burn's generics do
"""Activations of the Autodiff backend: one recorded node each, so the inner backend's fused
kernels run forward and its ``*_backward`` helpers (or a short formula) run backward. All are
memory-bound. The ``*_backward`` helpers themselves are not recorded as single ops: on this
backend they run the protocol's composition, which records its float ops (second order).
"""

from __future__ import annotations

from typing import Any

from burnpy.autodiff.ops._define import Params, Parents, Rule, Saved, declare, unary, unary_params
from burnpy.autodiff.tensor import AutodiffTensor


class AutodiffActivationOps:
    """relu, gelu, sigmoid, log_sigmoid, silu, softmax, log_softmax, leaky_relu,
    hard_sigmoid and softplus, recorded."""

    @staticmethod
    def _relu_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                       parents: Parents) -> Rule:
        return (B.relu_backward(output, grad),)

    relu = unary(declare("relu", _relu_backward, saves_output=True))

    @staticmethod
    def _gelu_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                       parents: Parents) -> Rule:
        return (B.gelu_backward(inputs[0], grad, params[0]),)

    _GELU = declare("gelu", _gelu_backward, saves_inputs=True)

    @classmethod
    def gelu(cls, x: AutodiffTensor, approximate: str = "none") -> AutodiffTensor:
        out = cls.InnerBackend.gelu(x.primitive, approximate)
        if x.node is None:
            return AutodiffTensor(out)
        return cls.record(cls._GELU, out, (x,), (approximate,))

    @staticmethod
    def _sigmoid_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                          parents: Parents) -> Rule:
        return (B.sigmoid_backward(output, grad),)

    sigmoid = unary(declare("sigmoid", _sigmoid_backward, saves_output=True))

    @staticmethod
    def _log_sigmoid_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                              parents: Parents) -> Rule:
        return (B.log_sigmoid_backward(inputs[0], grad),)

    log_sigmoid = unary(declare("log_sigmoid", _log_sigmoid_backward, saves_inputs=True))

    @staticmethod
    def _silu_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                       parents: Parents) -> Rule:
        """silu'(x) = s (1 + x (1 - s)) with s = sigmoid(x)."""
        x = inputs[0]
        s = B.sigmoid(x)
        one_minus = B.float_add_scalar(B.float_neg(s), 1.0)
        slope = B.float_mul(s, B.float_add_scalar(B.float_mul(x, one_minus), 1.0))
        return (B.float_mul(grad, slope),)

    silu = unary(declare("silu", _silu_backward, saves_inputs=True))

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

    @staticmethod
    def _leaky_relu_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                             parents: Parents) -> Rule:
        """grad where x > 0, else grad * negative_slope (torch's rule at 0)."""
        positive = B.float_greater_elem(inputs[0], 0.0)
        return (B.float_mask_where(B.float_mul_scalar(grad, params[0]), positive, grad),)

    leaky_relu = unary_params(declare("leaky_relu", _leaky_relu_backward, saves_inputs=True))

    @staticmethod
    def _hard_sigmoid_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                               parents: Parents) -> Rule:
        """alpha * grad strictly inside the linear part, 0 on the flat parts (as torch)."""
        alpha, beta = params
        t = B.float_add_scalar(B.float_mul_scalar(inputs[0], alpha), beta)
        inside = B.bool_and(B.float_greater_elem(t, 0.0), B.float_lower_elem(t, 1.0))
        return (B.float_mask_fill(B.float_mul_scalar(grad, alpha), B.bool_not(inside), 0.0),)

    hard_sigmoid = unary_params(declare("hard_sigmoid", _hard_sigmoid_backward,
                                        saves_inputs=True))

    @staticmethod
    def _softplus_backward(B: Any, grad: Any, inputs: Saved, output: Any, params: Params,
                           parents: Parents) -> Rule:
        """grad * sigmoid(beta x)."""
        beta = params[0]
        return (B.float_mul(grad, B.sigmoid(B.float_mul_scalar(inputs[0], beta))),)

    _SOFTPLUS = declare("softplus", _softplus_backward, saves_inputs=True)

    @classmethod
    def softplus(cls, x: AutodiffTensor, beta: float = 1.0) -> AutodiffTensor:
        out = cls.InnerBackend.softplus(x.primitive, beta)
        if x.node is None:
            return AutodiffTensor(out)
        return cls.record(cls._SOFTPLUS, out, (x,), (beta,))

