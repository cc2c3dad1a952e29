# ruff: noqa: N803, N806 - rules name the inner backend type ``B``, as Burn's generics do
"""Activations of the ForwardAD backend: the inner backend's fused kernels compute the primal
and its ``*_backward`` helpers (or a short formula) the tangent, since an activation's JVP is
its backward with the tangent as the incoming gradient. ``relu_backward`` is linear in the
gradient; the other ``*_backward`` helpers run the protocol's composition on this backend,
which differentiates them again (forward-over-reverse)."""

from __future__ import annotations

from typing import Any

from burnpy.autodiff.forward.ops._define import linear_in_grad, unary
from burnpy.autodiff.forward.tensor import DualTensor


class ForwardActivationOps:
    """relu, gelu, sigmoid, log_sigmoid, silu, softmax, log_softmax, leaky_relu,
    hard_sigmoid and softplus, with tangents."""

    @staticmethod
    def _relu_tangent(B: Any, x: Any, out: Any, t: Any) -> Any:
        return B.relu_backward(out, t)

    relu = unary("relu", _relu_tangent)
    relu_backward = linear_in_grad("relu_backward")

    @classmethod
    def gelu(cls, x: DualTensor, approximate: str = "none") -> DualTensor:
        """gelu; tangent ``gelu_backward(x, t)``."""
        B = cls.InnerBackend
        out = B.gelu(x.primal, approximate)
        t = x.tangent
        return DualTensor(out, None if t is None else B.gelu_backward(x.primal, t, approximate))

    @staticmethod
    def _sigmoid_tangent(B: Any, x: Any, out: Any, t: Any) -> Any:
        return B.sigmoid_backward(out, t)

    sigmoid = unary("sigmoid", _sigmoid_tangent)

    @staticmethod
    def _log_sigmoid_tangent(B: Any, x: Any, out: Any, t: Any) -> Any:
        return B.log_sigmoid_backward(x, t)

    log_sigmoid = unary("log_sigmoid", _log_sigmoid_tangent)

    @staticmethod
    def _silu_tangent(B: Any, x: Any, out: Any, t: Any) -> Any:
        """silu'(x) = s (1 + x (1 - s)) with s = sigmoid(x)."""
        s = B.sigmoid(x)
        one_minus = B.float_add_scalar(B.float_neg(s), 1.0)
        slope = B.float_mul(s, B.float_add_scalar(B.float_mul(x, one_minus), 1.0))
        return B.float_mul(t, slope)

    silu = unary("silu", _silu_tangent)

    @staticmethod
    def _softmax_tangent(B: Any, x: Any, out: Any, t: Any, dim: int) -> Any:
        """y (t - sum(t y)) along dim."""
        return B.float_mul(out, B.float_sub(t, B.float_sum_dim(B.float_mul(t, out), dim)))

    softmax = unary("softmax", _softmax_tangent)

    @staticmethod
    def _log_softmax_tangent(B: Any, x: Any, out: Any, t: Any, dim: int) -> Any:
        """t - sum(t exp(y)) along dim."""
        return B.float_sub(t, B.float_sum_dim(B.float_mul(t, B.float_exp(out)), dim))

    log_softmax = unary("log_softmax", _log_softmax_tangent)

    @staticmethod
    def _leaky_relu_tangent(B: Any, x: Any, out: Any, t: Any, negative_slope: float) -> Any:
        """t where x > 0, else t * negative_slope (torch's rule at 0)."""
        positive = B.float_greater_elem(x, 0.0)
        return B.float_mask_where(B.float_mul_scalar(t, negative_slope), positive, t)

    leaky_relu = unary("leaky_relu", _leaky_relu_tangent)

    @staticmethod
    def _hard_sigmoid_tangent(B: Any, x: Any, out: Any, t: Any, alpha: float,
                              beta: float) -> Any:
        """alpha * t strictly inside the linear part, 0 on the flat parts (as torch)."""
        z = B.float_add_scalar(B.float_mul_scalar(x, alpha), beta)
        inside = B.bool_and(B.float_greater_elem(z, 0.0), B.float_lower_elem(z, 1.0))
        return B.float_mask_fill(B.float_mul_scalar(t, alpha), B.bool_not(inside), 0.0)

    hard_sigmoid = unary("hard_sigmoid", _hard_sigmoid_tangent)

    @classmethod
    def softplus(cls, x: DualTensor, beta: float = 1.0) -> DualTensor:
        """softplus; tangent ``t * sigmoid(beta x)``."""
        B = cls.InnerBackend
        out = B.softplus(x.primal, beta)
        t = x.tangent
        if t is None:
            return DualTensor(out)
        return DualTensor(out, B.float_mul(t, B.sigmoid(B.float_mul_scalar(x.primal, beta))))
