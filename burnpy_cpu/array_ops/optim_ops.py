"""Fused optimizer updates over an array module: NumPy for CpuBackend, CuPy for CudaBackend.

Each update is a short chain of ufunc calls writing into arrays it allocated itself
(``out=``), instead of one dispatch and one fresh array per elementwise op. The ufuncs run in
the composed default's order on the same operands, so results are bitwise equal to it (the
scalars stay Python floats: a NumPy scalar would widen float32 work to float64). Input
arrays are never written: parameters and state buffers may be shared with user-held tensors.
Only float32 and float64 take the fused path; other dtypes (half precision, whose scalar ops
the float ops cast back from a widened result) and mixed dtypes use the composed default. On
NumPy, Adam's chain runs as one compiled pass instead (``_optim_kernels``: the same operations,
so the same bits, reading each array once).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from burnpy.backend.ops.optim_ops import OptimOps
from burnpy_cpu import memory
from burnpy_cpu.array_ops._shared import A, optim_kernels

_FUSED = (np.dtype(np.float32), np.dtype(np.float64))


def _fusable(param: A, *others: A | None) -> bool:
    """Whether every array is float32, or every one float64 (None entries are absent state).

    Compares dtype objects by identity (native float dtypes are singletons; anything else
    merely takes the composed path) and builds a list rather than running ``all`` over a
    generator: this check runs once per parameter and step.
    """
    dtype = param.dtype
    return dtype in _FUSED and not [o for o in others if o is not None and o.dtype is not dtype]


def _adam_compiled(param: A, grad: A, exp_avg: A | None, exp_avg_sq: A | None,
                   max_exp_avg_sq: A | None, *, step: int, lr: float, beta1: float,
                   beta2: float, eps: float, weight_decay: float, decoupled: bool,
                   amsgrad: bool) -> tuple[A, A, A, A | None]:
    """``adam_step`` on NumPy arrays of one float dtype as one compiled pass
    (``_optim_kernels.adam_update``): the ufunc chain's operations and scalars, so its
    results bit for bit, and fresh arrays as its (on CpuBackend's cached memory)."""
    dtype = param.dtype
    scalar = dtype.type
    flat = [None if a is None else np.ravel(a)
            for a in (param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq)]
    moments = flat[2] is not None and flat[3] is not None
    new_param, new_avg, new_sq = (memory.empty((param.size,), dtype) for _ in range(3))
    peak = amsgrad and flat[4] is not None
    new_max = np.empty(param.size if peak else 0, dtype)
    empty = new_max[:0]
    optim_kernels().adam_update(
        flat[0], flat[1], flat[2] if moments else empty, flat[3] if moments else empty,
        flat[4] if peak else empty, new_param, new_avg, new_sq, new_max, moments,
        scalar(weight_decay if weight_decay and not decoupled else 0.0),
        scalar(1.0 - lr * weight_decay if weight_decay and decoupled else 1.0), scalar(beta1),
        scalar(1.0 - beta1), scalar(beta2), scalar(1.0 - beta2),
        scalar(1.0 / math.sqrt(1.0 - beta2**step)), scalar(eps),
        scalar(lr / (1.0 - beta1**step)))
    shape = param.shape
    new_sq = new_sq.reshape(shape)
    # AMSGrad's first maximum is the second moment itself, as the chain returns it
    return (new_param.reshape(shape), new_avg.reshape(shape), new_sq,
            new_max.reshape(shape) if peak else new_sq if amsgrad else None)


class ArrayOptimOps(OptimOps):
    """The optimizer-update op family on ``xp`` arrays."""

    xp: ClassVar[Any]

    @classmethod
    def sgd_step(cls, param: A, grad: A, momentum_buffer: A | None, *, lr: float,
                 momentum: float = 0.0, dampening: float = 0.0, weight_decay: float = 0.0,
                 nesterov: bool = False) -> tuple[A, A | None]:
        if not _fusable(param, grad, momentum_buffer):
            return super().sgd_step(param, grad, momentum_buffer, lr=lr, momentum=momentum,
                                    dampening=dampening, weight_decay=weight_decay,
                                    nesterov=nesterov)
        xp = cls.xp
        mul, add = xp.multiply, xp.add
        # ``scratch``: an array of ours that no returned state refers to (None: allocate).
        scratch = None
        d = grad
        if weight_decay:
            scratch = mul(param, weight_decay)
            d = add(grad, scratch, out=scratch)
        buf = None
        if momentum:
            if momentum_buffer is None:
                buf, scratch = d, None
            else:
                buf = mul(momentum_buffer, momentum)
                scratch = mul(d, 1.0 - dampening)
                add(buf, scratch, out=buf)
            if nesterov:
                scratch = mul(buf, momentum, out=scratch)
                d = add(d, scratch, out=scratch)
            else:
                d = buf
        out = mul(d, lr, out=scratch)
        return xp.subtract(param, out, out=out), buf

    @classmethod
    def adam_step(cls, param: A, grad: A, exp_avg: A | None, exp_avg_sq: A | None,
                  max_exp_avg_sq: A | None, *, step: int, lr: float, beta1: float,
                  beta2: float, eps: float, weight_decay: float = 0.0, decoupled: bool = False,
                  amsgrad: bool = False) -> tuple[A, A, A, A | None]:
        if not _fusable(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq):
            return super().adam_step(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq,
                                     step=step, lr=lr, beta1=beta1, beta2=beta2, eps=eps,
                                     weight_decay=weight_decay, decoupled=decoupled,
                                     amsgrad=amsgrad)
        xp = cls.xp
        if xp is np:
            return _adam_compiled(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, step=step,
                                  lr=lr, beta1=beta1, beta2=beta2, eps=eps,
                                  weight_decay=weight_decay, decoupled=decoupled,
                                  amsgrad=amsgrad)
        mul, add = xp.multiply, xp.add
        if weight_decay:
            if decoupled:
                param = mul(param, 1.0 - lr * weight_decay)
            else:
                decayed = mul(param, weight_decay)
                grad = add(grad, decayed, out=decayed)
        if exp_avg is None or exp_avg_sq is None:
            new_avg = mul(grad, 1.0 - beta1)
            new_sq = xp.square(grad)
            mul(new_sq, 1.0 - beta2, out=new_sq)
            scratch = None
        else:
            scratch = mul(grad, 1.0 - beta1)
            new_avg = mul(exp_avg, beta1)
            add(new_avg, scratch, out=new_avg)
            xp.square(grad, out=scratch)
            mul(scratch, 1.0 - beta2, out=scratch)
            new_sq = mul(exp_avg_sq, beta2)
            add(new_sq, scratch, out=new_sq)
        second = new_sq
        new_max = None
        if amsgrad:
            # np.maximum propagates NaN like the default's mask; ties keep the same value.
            if max_exp_avg_sq is not None:
                second = xp.maximum(max_exp_avg_sq, new_sq)
            new_max = second
        denom = xp.sqrt(second, out=scratch)
        mul(denom, 1.0 / math.sqrt(1.0 - beta2**step), out=denom)
        add(denom, eps, out=denom)
        update = xp.divide(new_avg, denom, out=denom)
        mul(update, lr / (1.0 - beta1**step), out=update)
        return xp.subtract(param, update, out=update), new_avg, new_sq, new_max

    @classmethod
    def rmsprop_step(cls, param: A, grad: A, square_avg: A | None, grad_avg: A | None,
                     momentum_buffer: A | None, *, lr: float, alpha: float, eps: float,
                     weight_decay: float = 0.0, momentum: float = 0.0,
                     centered: bool = False) -> tuple[A, A, A | None, A | None]:
        if not _fusable(param, grad, square_avg, grad_avg, momentum_buffer):
            return super().rmsprop_step(param, grad, square_avg, grad_avg, momentum_buffer,
                                        lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                                        momentum=momentum, centered=centered)
        xp = cls.xp
        mul, add = xp.multiply, xp.add
        if weight_decay:
            decayed = mul(param, weight_decay)
            grad = add(grad, decayed, out=decayed)
        sq = xp.square(grad)
        mul(sq, 1.0 - alpha, out=sq)
        if square_avg is None:
            new_sq, scratch = sq, None
        else:
            new_sq = mul(square_avg, alpha)
            add(new_sq, sq, out=new_sq)
            scratch = sq
        new_grad_avg = None
        if centered:
            new_grad_avg = mul(grad, 1.0 - alpha)
            if grad_avg is not None:
                scaled = new_grad_avg
                new_grad_avg = mul(grad_avg, alpha)
                add(new_grad_avg, scaled, out=new_grad_avg)
            avg = xp.square(new_grad_avg, out=scratch)
            xp.subtract(new_sq, avg, out=avg)
            xp.sqrt(avg, out=avg)
        else:
            avg = xp.sqrt(new_sq, out=scratch)
        add(avg, eps, out=avg)
        d = xp.divide(grad, avg, out=avg)
        buf = None
        scratch = d
        if momentum:
            if momentum_buffer is None:
                buf, scratch = d, None
            else:
                buf = mul(momentum_buffer, momentum)
                add(buf, d, out=buf)
            d = buf
        out = mul(d, lr, out=scratch)
        return xp.subtract(param, out, out=out), new_sq, new_grad_avg, buf
