"""``CudaKernelOps``: the CUDA backend's fused kernels in place of the shared array ops.

CuPy runs each array expression of the shared ops (``burnpy_cpu/array_ops``) as its own
kernel with its own temporary: gelu's backward is about ten launches and as many passes
over memory. Here each activation (and backward helper) is one elementwise kernel, softmax,
log_softmax, cross entropy and layer norm one block per row, and an Adam step one kernel
writing the new parameter and moments. Only float16, float32 and float64 take them (and
softmax only along the last dim); anything else falls through to the shared op, the next
class in the MRO.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from burnpy_cpu.array_ops.activation_ops import ArrayActivationOps, GeluApproximate
from burnpy_cpu.array_ops.float_ops import torch_scalar
from burnpy_cpu.array_ops.loss_ops import ArrayLossOps
from burnpy_cpu.array_ops.norm_ops import ArrayNormOps
from burnpy_cpu.array_ops.optim_ops import ArrayOptimOps
from burnpy_cuda import kernel_sources as src
from burnpy_cuda import kernels

A = Any  # a ``cupy.ndarray``


def _fused(x: A, *others: A | None) -> bool:
    """Whether ``x`` has a kernel dtype and every other array (None: absent state) the same."""
    dtype = x.dtype
    return dtype in kernels.KERNEL_DTYPES and all(o is None or o.dtype == dtype for o in others)


def _last_dim(x: A, dim: int) -> bool:
    """Whether a row kernel applies: a non-empty kernel-dtype ``x`` reduced along its last dim."""
    return x.ndim > 0 and x.size > 0 and dim in (-1, x.ndim - 1) and _fused(x)


def _width(x: A, normalized_ndim: int) -> int:
    """The number of values layer norm normalizes together: the trailing dims' product."""
    return math.prod(x.shape[x.ndim - normalized_ndim:])


class CudaKernelOps(ArrayNormOps, ArrayLossOps, ArrayActivationOps, ArrayOptimOps):
    """Fused-kernel overrides of activations, softmax, cross entropy, layer norm and the Adam
    step."""

    xp: ClassVar[Any]

    @classmethod
    def relu(cls, x: A) -> A:
        if not _fused(x):
            return super().relu(x)
        return kernels.elementwise(src.RELU, x.dtype)(x)

    @classmethod
    def relu_backward(cls, output: A, grad: A) -> A:
        if not _fused(grad, output):
            return super().relu_backward(output, grad)
        return kernels.elementwise(src.RELU_BACKWARD, grad.dtype)(output, grad)

    @classmethod
    def leaky_relu(cls, x: A, negative_slope: float) -> A:
        if not _fused(x):
            return super().leaky_relu(x, negative_slope)
        # The slope as given: the kernel rounds it to W (float32 for float16), as the shared
        # op multiplies a 16-bit float in float32 (torch's rule).
        return kernels.elementwise(src.LEAKY_RELU, x.dtype)(x, float(negative_slope))

    @classmethod
    def gelu(cls, x: A, approximate: GeluApproximate = "none") -> A:
        if not _fused(x):
            return super().gelu(x, approximate)
        spec = src.GELU_TANH if approximate == "tanh" else src.GELU
        return kernels.elementwise(spec, x.dtype)(x)

    @classmethod
    def gelu_backward(cls, x: A, grad: A, approximate: GeluApproximate = "none") -> A:
        if not _fused(x, grad):
            return super().gelu_backward(x, grad, approximate)
        spec = src.GELU_TANH_BACKWARD if approximate == "tanh" else src.GELU_BACKWARD
        return kernels.elementwise(spec, x.dtype)(x, grad)

    @classmethod
    def sigmoid(cls, x: A) -> A:
        if not _fused(x):
            return super().sigmoid(x)
        return kernels.elementwise(src.SIGMOID, x.dtype)(x)

    @classmethod
    def sigmoid_backward(cls, output: A, grad: A) -> A:
        if not _fused(grad, output):
            return super().sigmoid_backward(output, grad)
        return kernels.elementwise(src.SIGMOID_BACKWARD, grad.dtype)(output, grad)

    @classmethod
    def log_sigmoid(cls, x: A) -> A:
        if not _fused(x):
            return super().log_sigmoid(x)
        return kernels.elementwise(src.LOG_SIGMOID, x.dtype)(x)

    @classmethod
    def log_sigmoid_backward(cls, x: A, grad: A) -> A:
        if not _fused(x, grad):
            return super().log_sigmoid_backward(x, grad)
        return kernels.elementwise(src.LOG_SIGMOID_BACKWARD, x.dtype)(x, grad)

    @classmethod
    def silu(cls, x: A) -> A:
        if not _fused(x):
            return super().silu(x)
        return kernels.elementwise(src.SILU, x.dtype)(x)

    @classmethod
    def softplus(cls, x: A, beta: float = 1.0) -> A:
        if not _fused(x):
            return super().softplus(x, beta)
        return kernels.elementwise(src.SOFTPLUS, x.dtype)(x, float(beta))

    @classmethod
    def softmax(cls, x: A, dim: int) -> A:
        if not _last_dim(x, dim):
            return super().softmax(x, dim)
        return kernels.softmax_rows(x, log=False)

    @classmethod
    def log_softmax(cls, x: A, dim: int) -> A:
        if not _last_dim(x, dim):
            return super().log_softmax(x, dim)
        return kernels.softmax_rows(x, log=True)

    @classmethod
    def cross_entropy(cls, logits: A, target: A, ignore_index: int) -> A:
        if not (logits.ndim == 2 and _last_dim(logits, 1)):
            return super().cross_entropy(logits, target, ignore_index)
        return kernels.cross_entropy_rows(logits, target, int(ignore_index))

    @classmethod
    def cross_entropy_backward(cls, logits: A, target: A, ignore_index: int, grad: A) -> A:
        if not (logits.ndim == 2 and _last_dim(logits, 1) and _fused(logits, grad)):
            return super().cross_entropy_backward(logits, target, ignore_index, grad)
        return kernels.cross_entropy_backward_rows(logits, target, int(ignore_index), grad)

    @classmethod
    def layer_norm(cls, x: A, normalized_ndim: int, weight: A | None, bias: A | None,
                   eps: float) -> A:
        if not (x.size > 0 and _fused(x, weight, bias)):
            return super().layer_norm(x, normalized_ndim, weight, bias, eps)
        rows = x.reshape(-1, _width(x, normalized_ndim))
        return kernels.layer_norm_rows(rows, weight, bias, eps).reshape(x.shape)

    @classmethod
    def layer_norm_backward(cls, x: A, normalized_ndim: int, weight: A | None, grad: A,
                            eps: float) -> tuple[A, A, A]:
        """grad_x from the row kernel; grad_weight and grad_bias, sums down the rows, from the
        kernel's xhat with array ops (in float32 for float16, as the shared op)."""
        if not (x.size > 0 and _fused(x, weight, grad)):
            return super().layer_norm_backward(x, normalized_ndim, weight, grad, eps)
        rows = x.reshape(-1, _width(x, normalized_ndim))
        g = grad.reshape(rows.shape)
        grad_x, xhat = kernels.layer_norm_backward_rows(rows, weight, g, eps)
        g = g.astype(xhat.dtype, copy=False)
        trailing = x.shape[x.ndim - normalized_ndim:]
        grad_weight = cls.xp.einsum("rk,rk->k", g, xhat).reshape(trailing)
        grad_bias = g.sum(axis=0).reshape(trailing)
        return (grad_x.reshape(x.shape), grad_weight.astype(x.dtype, copy=False),
                grad_bias.astype(x.dtype, copy=False))

    @classmethod
    def adam_step(cls, param: A, grad: A, exp_avg: A | None, exp_avg_sq: A | None,
                  max_exp_avg_sq: A | None, *, step: int, lr: float, beta1: float,
                  beta2: float, eps: float, weight_decay: float = 0.0, decoupled: bool = False,
                  amsgrad: bool = False) -> tuple[A, A, A, A | None]:
        """One kernel writing the new parameter and moments into fresh arrays."""
        if not _fused(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq):
            return super().adam_step(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq,
                                     step=step, lr=lr, beta1=beta1, beta2=beta2, eps=eps,
                                     weight_decay=weight_decay, decoupled=decoupled,
                                     amsgrad=amsgrad)
        args = adam_arguments(param, grad, exp_avg, exp_avg_sq, step=step, lr=lr,
                              beta1=beta1, beta2=beta2, eps=eps, weight_decay=weight_decay,
                              decoupled=decoupled)
        if not amsgrad:
            new_param, new_avg, new_sq = kernels.elementwise(src.ADAM, param.dtype)(*args)
            return new_param, new_avg, new_sq, None
        has_max = max_exp_avg_sq is not None
        return kernels.elementwise(src.ADAM_AMSGRAD, param.dtype)(
            *args, max_exp_avg_sq if has_max else 0.0, int(has_max))


def adam_arguments(param: A, grad: A, exp_avg: A | None, exp_avg_sq: A | None, *, step: int,
                   lr: float, beta1: float, beta2: float, eps: float, weight_decay: float,
                   decoupled: bool) -> tuple[Any, ...]:
    """The arguments of ``kernel_sources.ADAM`` (AMSGrad's add the peak and its flag).

    The scalars are the composed default's (OptimOps.adam_step), computed in double
    precision as it does and rounded as its scalar ops round them: a multiplier to the dtype
    the product is computed in (float32 for float16, the parameter's dtype otherwise), eps to
    the parameter's dtype (``float_add_scalar`` rounds a 16-bit float's scalar first, as
    torch's add). Absent moments are passed as 0.0: a first step does not read them.
    """
    first = exp_avg is None or exp_avg_sq is None
    if not weight_decay:
        decay_mode, decay = 0, 0.0
    elif decoupled:
        decay_mode, decay = 1, 1.0 - lr * weight_decay
    else:
        decay_mode, decay = 2, weight_decay
    dtype = param.dtype
    decay, beta1, one_minus_beta1, beta2, one_minus_beta2, bias2, step_size = np.array(
        [decay, beta1, 1.0 - beta1, beta2, 1.0 - beta2, 1.0 / math.sqrt(1.0 - beta2**step),
         lr / (1.0 - beta1**step)], dtype=np.result_type(dtype, np.float32)).tolist()
    eps = torch_scalar(dtype, eps) if dtype.itemsize == 2 else float(dtype.type(eps))
    return (param, grad, 0.0 if first else exp_avg, 0.0 if first else exp_avg_sq, int(first),
            decay_mode, decay, beta1, one_minus_beta1, beta2, one_minus_beta2, bias2, eps,
            step_size)
