"""Activations as fused array code over an array module (``xp``: NumPy or CuPy).

Each op is a few whole-array expressions instead of the protocol's chain of backend ops, and
uses the well-conditioned form where one exists (sigmoid and log-sigmoid split by sign, gelu
through ``erfc``). float32 gelu and its gradient on NumPy run compiled float32 loops
(``_float32_kernels``). 16-bit floats are computed in float32 and cast back; other dtypes are
kept. Helpers are module-level functions taking ``xp`` so they cannot collide with other
mixins' private names.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, Literal

import numpy as np

from burnpy_cpu.array_ops._shared import float32_kernels, narrowed, widened
from burnpy_cpu.numba_kernels import COMPILED_FLOATS
from burnpy_cpu.numba_kernels import relu_backward as compiled_relu_backward

A = Any  # an ``xp.ndarray``
GeluApproximate = Literal["none", "tanh"]
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_GELU_CUBIC = 0.044715


def _fast_float32(xp: Any, *arrays: A) -> bool:
    """Whether the compiled float32 kernels apply: NumPy float32 arrays of one shape (CuPy
    keeps the generic code: the CUDA backend has its own fused kernels)."""
    first = arrays[0]
    return xp is np and all(a.dtype == np.float32 and a.shape == first.shape for a in arrays)


def _sigmoid(xp: Any, x: A) -> A:
    """exp(min(x, 0)) / (1 + exp(-|x|)): 1 / (1 + exp(-x)) for x >= 0 and exp(x) / (1 +
    exp(x)) below, so nothing overflows and both tails keep full relative accuracy; written
    without a masked select, which is slow on mixed signs."""
    return xp.exp(xp.minimum(x, 0)) / (1.0 + xp.exp(-xp.abs(x)))


def _softplus(xp: Any, x: A) -> A:
    """log(1 + exp(x)) as max(x, 0) + log1p(exp(-|x|)): exact for every x, no overflow."""
    return xp.maximum(x, 0) + xp.log1p(xp.exp(-xp.abs(x)))


class ArrayActivationOps:
    """Fused activations and their backward kernels; ``special`` provides ``erfc``
    (``scipy.special`` on the CPU backend)."""

    xp: ClassVar[Any]
    special: ClassVar[Any]

    @classmethod
    def relu(cls, x: A) -> A:
        """max(x, 0), NaN propagating."""
        return cls.xp.maximum(x, 0)

    @classmethod
    def relu_backward(cls, output: A, grad: A) -> A:
        """Gradient of relu given its output: grad where output > 0 (and where it is NaN).

        NumPy's ``where`` branches per element and costs 10x a multiply on a random mask, so
        on NumPy the mask multiplies the gradient; ``where`` remains for non-finite gradients,
        where ``inf * 0`` would give NaN instead of 0. A finite sum of ``grad`` proves every
        element finite in one cheap pass (an overflowing sum only takes the safe branch).
        """
        xp = cls.xp
        if (xp is np and output.dtype == grad.dtype and grad.dtype in COMPILED_FLOATS
                and output.shape == grad.shape and output.flags.c_contiguous
                and grad.flags.c_contiguous):
            return compiled_relu_backward(output, grad)
        keep = ~(output <= 0)
        if xp is np and math.isfinite(grad.sum()):
            return (grad * keep).astype(grad.dtype, copy=False)
        return xp.where(keep, grad, grad.dtype.type(0))

    @classmethod
    def leaky_relu(cls, x: A, negative_slope: float) -> A:
        """x, or negative_slope * x where x < 0: the larger of the two when the slope is at
        most 1, else the smaller (a branch-free select that propagates NaN). A 16-bit float's
        product is computed in float32 with the slope in float32 and rounded once, as torch's
        (NumPy and CuPy round float16's slope to float16 first)."""
        xp = cls.xp
        pick = xp.maximum if negative_slope <= 1 else xp.minimum
        if x.itemsize == 2:
            return pick(x, narrowed(xp, widened(xp, x) * negative_slope, x.dtype))
        return pick(x, x * negative_slope)  # float32 and float64 keep their dtype

    @classmethod
    def gelu(cls, x: A, approximate: GeluApproximate = "none") -> A:
        """x * Phi(x) with Phi = erfc(-x / sqrt 2) / 2 (accurate in the left tail), or torch's
        tanh form written as x * sigmoid(2u) since 1 + tanh(u) = 2 sigmoid(2u)."""
        xp, dtype = cls.xp, x.dtype
        x = widened(xp, x)
        if _fast_float32(xp, x):
            kernels = float32_kernels()
            kernel = kernels.gelu_tanh if approximate == "tanh" else kernels.gelu
            return narrowed(xp, kernels.run(kernel, x), dtype)
        if approximate == "tanh":
            u = (x + _GELU_CUBIC * (x * x * x)) * _SQRT_2_OVER_PI
            out = x * _sigmoid(xp, 2.0 * u)
        else:
            out = 0.5 * x * cls.special.erfc(x * -_INV_SQRT_2)
        return narrowed(xp, out, dtype)

    @classmethod
    def gelu_backward(cls, x: A, grad: A, approximate: GeluApproximate = "none") -> A:
        """Gradient of gelu: grad * (Phi(x) + x phi(x)), or the tanh form's derivative."""
        xp, dtype = cls.xp, x.dtype
        x, grad = widened(xp, x), widened(xp, grad)
        if _fast_float32(xp, x, grad):
            kernels = float32_kernels()
            kernel = kernels.gelu_tanh_backward if approximate == "tanh" else kernels.gelu_backward
            return narrowed(xp, kernels.run(kernel, x, grad), dtype)
        x2 = x * x
        if approximate == "tanh":
            u = (x + _GELU_CUBIC * (x2 * x)) * _SQRT_2_OVER_PI
            du = (1.0 + 3.0 * _GELU_CUBIC * x2) * _SQRT_2_OVER_PI
            s = _sigmoid(xp, 2.0 * u)
            deriv = s + 2.0 * x * s * _sigmoid(xp, -2.0 * u) * du
        else:
            cdf = 0.5 * cls.special.erfc(x * -_INV_SQRT_2)
            deriv = cdf + x * (xp.exp(-0.5 * x2) * _INV_SQRT_2PI)
        return narrowed(xp, grad * deriv, dtype)

    @classmethod
    def sigmoid(cls, x: A) -> A:
        """1 / (1 + exp(-x)) without overflow, accurate in both tails."""
        xp, dtype = cls.xp, x.dtype
        return narrowed(xp, _sigmoid(xp, widened(xp, x)), dtype)

    @classmethod
    def sigmoid_backward(cls, output: A, grad: A) -> A:
        """Gradient of sigmoid given its output: grad * s * (1 - s)."""
        return grad * ((1 - output) * output)

    @classmethod
    def log_sigmoid(cls, x: A) -> A:
        """log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|)), stable for large |x|."""
        xp, dtype = cls.xp, x.dtype
        x = widened(xp, x)
        return narrowed(xp, xp.minimum(x, 0) - xp.log1p(xp.exp(-xp.abs(x))), dtype)

    @classmethod
    def log_sigmoid_backward(cls, x: A, grad: A) -> A:
        """Gradient of log_sigmoid: grad * sigmoid(-x)."""
        xp, dtype = cls.xp, x.dtype
        return narrowed(xp, widened(xp, grad) * _sigmoid(xp, -widened(xp, x)), dtype)

    @classmethod
    def silu(cls, x: A) -> A:
        """x * sigmoid(x)."""
        xp, dtype = cls.xp, x.dtype
        x = widened(xp, x)
        return narrowed(xp, x * _sigmoid(xp, x), dtype)

    @classmethod
    def hard_sigmoid(cls, x: A, alpha: float, beta: float) -> A:
        """clamp(alpha * x + beta, 0, 1) (torch's hardsigmoid is alpha=1/6, beta=0.5); a 16-bit
        float computed in float32 and rounded once, as torch's (NumPy and CuPy would round
        float16's product and sum to float16 each)."""
        xp = cls.xp
        if x.itemsize == 2:
            return narrowed(xp, xp.clip(widened(xp, x) * alpha + beta, 0, 1), x.dtype)
        return xp.clip(x * alpha + beta, 0, 1)  # float32 and float64 keep their dtype

    @classmethod
    def softmax(cls, x: A, dim: int) -> A:
        """exp(x - max) normalized along ``dim``."""
        xp, dtype = cls.xp, x.dtype
        if x.size == 0:
            return x.copy()
        x = widened(xp, x)
        e = xp.exp(x - x.max(axis=dim, keepdims=True))
        e /= e.sum(axis=dim, keepdims=True)
        return narrowed(xp, e, dtype)

    @classmethod
    def log_softmax(cls, x: A, dim: int) -> A:
        """(x - max) - log(sum(exp(x - max))) along ``dim``."""
        xp, dtype = cls.xp, x.dtype
        if x.size == 0:
            return x.copy()
        x = widened(xp, x)
        shifted = x - x.max(axis=dim, keepdims=True)
        out = shifted - xp.log(xp.exp(shifted).sum(axis=dim, keepdims=True))
        return narrowed(xp, out, dtype)

    @classmethod
    def softplus(cls, x: A, beta: float = 1.0) -> A:
        """log(1 + exp(beta x)) / beta, exact for every x (torch instead returns x once
        beta x > 20, a relative difference below 1e-9)."""
        xp, dtype = cls.xp, x.dtype
        x = widened(xp, x)
        out = _softplus(xp, x) if beta == 1.0 else _softplus(xp, x * beta) / beta
        return narrowed(xp, out, dtype)
