"""Activation ops of the Backend protocol (Burn's ``ActivationOps``), with backward helpers.

Every one is provided, composed from float ops, so a new backend gets them for free; fast
backends override the ones that pay (a fused kernel, a better-conditioned formula).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Literal

from burnpy.backend.ops._marker import provided
from burnpy.backend.primitives import FloatPrimitive

if TYPE_CHECKING:
    from burnpy.backend.base import Backend

GeluApproximate = Literal["none", "tanh"]
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


class ActivationOps:
    """Activations as provided ops (``cls`` is the concrete backend)."""

    @provided
    def relu(cls: type[Backend], x: FloatPrimitive) -> FloatPrimitive:
        return cls.float_clamp_min(x, 0.0)

    @provided
    def relu_backward(cls: type[Backend], output: FloatPrimitive,
                      grad: FloatPrimitive) -> FloatPrimitive:
        """Gradient of relu given its output: grad where output > 0."""
        return cls.float_mask_fill(grad, cls.float_lower_equal_elem(output, 0.0), 0.0)

    @provided
    def leaky_relu(cls: type[Backend], x: FloatPrimitive, negative_slope: float) -> FloatPrimitive:
        neg = cls.float_lower_elem(x, 0.0)
        return cls.float_mask_where(x, neg, cls.float_mul_scalar(x, negative_slope))

    @provided
    def gelu(cls: type[Backend], x: FloatPrimitive,
             approximate: GeluApproximate = "none") -> FloatPrimitive:
        """x * Phi(x) with the exact erf form, or torch's tanh approximation."""
        if approximate == "tanh":
            inner = cls.float_mul_scalar(
                cls.float_add(x, cls.float_mul_scalar(cls.float_powf_scalar(x, 3.0), 0.044715)),
                _SQRT_2_OVER_PI)
            half = cls.float_add_scalar(cls.float_tanh(inner), 1.0)
            return cls.float_mul(cls.float_mul_scalar(x, 0.5), half)
        cdf = cls.float_mul_scalar(
            cls.float_add_scalar(cls.float_erf(cls.float_mul_scalar(x, _INV_SQRT_2)), 1.0), 0.5)
        return cls.float_mul(x, cdf)

    @provided
    def gelu_backward(cls: type[Backend], x: FloatPrimitive, grad: FloatPrimitive,
                      approximate: GeluApproximate = "none") -> FloatPrimitive:
        """Gradient of gelu: Phi(x) + x * phi(x) for the exact form."""
        if approximate == "tanh":
            x3 = cls.float_powf_scalar(x, 3.0)
            inner = cls.float_mul_scalar(
                cls.float_add(x, cls.float_mul_scalar(x3, 0.044715)), _SQRT_2_OVER_PI)
            t = cls.float_tanh(inner)
            sech2 = cls.float_add_scalar(cls.float_neg(cls.float_mul(t, t)), 1.0)
            dinner = cls.float_mul_scalar(
                cls.float_add_scalar(cls.float_mul_scalar(cls.float_mul(x, x), 3 * 0.044715), 1.0),
                _SQRT_2_OVER_PI)
            left = cls.float_mul_scalar(cls.float_add_scalar(t, 1.0), 0.5)
            right = cls.float_mul(cls.float_mul_scalar(x, 0.5), cls.float_mul(sech2, dinner))
            return cls.float_mul(grad, cls.float_add(left, right))
        cdf = cls.float_mul_scalar(
            cls.float_add_scalar(cls.float_erf(cls.float_mul_scalar(x, _INV_SQRT_2)), 1.0), 0.5)
        pdf = cls.float_mul_scalar(
            cls.float_exp(cls.float_mul_scalar(cls.float_mul(x, x), -0.5)), _INV_SQRT_2PI)
        return cls.float_mul(grad, cls.float_add(cdf, cls.float_mul(x, pdf)))

    @provided
    def sigmoid(cls: type[Backend], x: FloatPrimitive) -> FloatPrimitive:
        """1 / (1 + exp(-x)), computed as exp(-softplus(-x)) so large |x| neither overflows
        nor loses the tiny tail."""
        return cls.float_exp(cls.float_neg(_softplus(cls, cls.float_neg(x))))

    @provided
    def sigmoid_backward(cls: type[Backend], output: FloatPrimitive,
                         grad: FloatPrimitive) -> FloatPrimitive:
        """Gradient of sigmoid given its output: grad * s * (1 - s)."""
        one_minus = cls.float_add_scalar(cls.float_neg(output), 1.0)
        return cls.float_mul(grad, cls.float_mul(output, one_minus))

    @provided
    def log_sigmoid(cls: type[Backend], x: FloatPrimitive) -> FloatPrimitive:
        """log(sigmoid(x)) = -softplus(-x), stable for large |x|."""
        return cls.float_neg(_softplus(cls, cls.float_neg(x)))

    @provided
    def log_sigmoid_backward(cls: type[Backend], x: FloatPrimitive,
                             grad: FloatPrimitive) -> FloatPrimitive:
        """Gradient of log_sigmoid: grad * sigmoid(-x)."""
        return cls.float_mul(grad, cls.sigmoid(cls.float_neg(x)))

    @provided
    def silu(cls: type[Backend], x: FloatPrimitive) -> FloatPrimitive:
        return cls.float_mul(x, cls.sigmoid(x))

    @provided
    def hard_sigmoid(cls: type[Backend], x: FloatPrimitive, alpha: float,
                     beta: float) -> FloatPrimitive:
        """clamp(alpha * x + beta, 0, 1) (torch's hardsigmoid is alpha=1/6, beta=0.5)."""
        return cls.float_clamp(cls.float_add_scalar(cls.float_mul_scalar(x, alpha), beta), 0.0, 1.0)

    @provided
    def softmax(cls: type[Backend], x: FloatPrimitive, dim: int) -> FloatPrimitive:
        """exp(x - max) normalized along ``dim``."""
        shifted = cls.float_sub(x, cls.float_detach(cls.float_max_dim(x, dim)))
        e = cls.float_exp(shifted)
        return cls.float_div(e, cls.float_sum_dim(e, dim))

    @provided
    def log_softmax(cls: type[Backend], x: FloatPrimitive, dim: int) -> FloatPrimitive:
        """x - logsumexp(x) along ``dim``."""
        shifted = cls.float_sub(x, cls.float_detach(cls.float_max_dim(x, dim)))
        lse = cls.float_log(cls.float_sum_dim(cls.float_exp(shifted), dim))
        return cls.float_sub(shifted, lse)

    @provided
    def softplus(cls: type[Backend], x: FloatPrimitive, beta: float = 1.0) -> FloatPrimitive:
        if beta == 1.0:
            return _softplus(cls, x)
        return cls.float_div_scalar(_softplus(cls, cls.float_mul_scalar(x, beta)), beta)


def _softplus(backend: type[Backend], x: FloatPrimitive) -> FloatPrimitive:
    """log(1 + exp(x)) = max(x, 0) + log1p(exp(-|x|)), shared by sigmoid, log_sigmoid and
    softplus."""
    pos = backend.float_clamp_min(x, 0.0)
    tail = backend.float_log1p(backend.float_exp(backend.float_neg(backend.float_abs(x))))
    return backend.float_add(pos, tail)
