"""Activation ops of the Backend protocol (Burn's ``ActivationOps``), with backward helpers.

Every one is provided, composed from float ops, so a new backend gets them for free; fast
backends override the ones that pay (a fused kernel, a better-conditioned formula).
"""

from __future__ import annotations

import math
from typing import Any, Literal

F = Any
GeluApproximate = Literal["none", "tanh"]
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


class ActivationOps:
    """Activations as provided ops (``cls`` is the concrete backend)."""

    @classmethod
    def relu(cls, x: F) -> F:
        return cls.float_clamp_min(x, 0.0)

    @classmethod
    def relu_backward(cls, output: F, grad: F) -> F:
        """Gradient of relu given its output: grad where output > 0."""
        return cls.float_mask_fill(grad, cls.float_lower_equal_elem(output, 0.0), 0.0)

    @classmethod
    def leaky_relu(cls, x: F, negative_slope: float) -> F:
        neg = cls.float_lower_elem(x, 0.0)
        return cls.float_mask_where(x, neg, cls.float_mul_scalar(x, negative_slope))

    @classmethod
    def gelu(cls, x: F, approximate: GeluApproximate = "none") -> F:
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

    @classmethod
    def gelu_backward(cls, x: F, grad: F, approximate: GeluApproximate = "none") -> F:
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

    @classmethod
    def sigmoid(cls, x: F) -> F:
        """1 / (1 + exp(-x)), computed as exp(-softplus(-x)) so large |x| neither overflows
        nor loses the tiny tail."""
        return cls.float_exp(cls.float_neg(cls._softplus(cls.float_neg(x))))

    @classmethod
    def sigmoid_backward(cls, output: F, grad: F) -> F:
        """Gradient of sigmoid given its output: grad * s * (1 - s)."""
        one_minus = cls.float_add_scalar(cls.float_neg(output), 1.0)
        return cls.float_mul(grad, cls.float_mul(output, one_minus))

    @classmethod
    def log_sigmoid(cls, x: F) -> F:
        """log(sigmoid(x)) = -softplus(-x), stable for large |x|."""
        return cls.float_neg(cls._softplus(cls.float_neg(x)))

    @classmethod
    def log_sigmoid_backward(cls, x: F, grad: F) -> F:
        """Gradient of log_sigmoid: grad * sigmoid(-x)."""
        return cls.float_mul(grad, cls.sigmoid(cls.float_neg(x)))

    @classmethod
    def silu(cls, x: F) -> F:
        return cls.float_mul(x, cls.sigmoid(x))

    @classmethod
    def hard_sigmoid(cls, x: F, alpha: float, beta: float) -> F:
        """clamp(alpha * x + beta, 0, 1) (torch's hardsigmoid is alpha=1/6, beta=0.5)."""
        return cls.float_clamp(cls.float_add_scalar(cls.float_mul_scalar(x, alpha), beta), 0.0, 1.0)

    @classmethod
    def softmax(cls, x: F, dim: int) -> F:
        """exp(x - max) normalized along ``dim``."""
        shifted = cls.float_sub(x, cls.float_detach(cls.float_max_dim(x, dim)))
        e = cls.float_exp(shifted)
        return cls.float_div(e, cls.float_sum_dim(e, dim))

    @classmethod
    def log_softmax(cls, x: F, dim: int) -> F:
        """x - logsumexp(x) along ``dim``."""
        shifted = cls.float_sub(x, cls.float_detach(cls.float_max_dim(x, dim)))
        lse = cls.float_log(cls.float_sum_dim(cls.float_exp(shifted), dim))
        return cls.float_sub(shifted, lse)

    @classmethod
    def _softplus(cls, x: F) -> F:
        """log(1 + exp(x)) = max(x, 0) + log1p(exp(-|x|))."""
        pos = cls.float_clamp_min(x, 0.0)
        tail = cls.float_log1p(cls.float_exp(cls.float_neg(cls.float_abs(x))))
        return cls.float_add(pos, tail)

    @classmethod
    def softplus(cls, x: F, beta: float = 1.0) -> F:
        if beta == 1.0:
            return cls._softplus(x)
        return cls.float_div_scalar(cls._softplus(cls.float_mul_scalar(x, beta)), beta)


