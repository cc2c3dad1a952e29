"""Optimizer-update ops of the Backend protocol: one call per parameter and step.

An optimizer step is a dozen elementwise ops per parameter; through the Tensor layer each
costs a few microseconds of dispatch, which dominates for small models. These ops take float
primitives and return the new parameter and optimizer state in one backend call, so a backend
can fuse the arithmetic (fewer passes, fewer temporaries, no per-op dispatch).

Every op is provided, composed from float ops (torch.optim's update rules, equal to torch up
to rounding), so any backend (decorators included, whose float ops record a graph) gets a
correct update for free. Overrides must keep the composed arithmetic order, so every backend
rounds alike, and must never write into their inputs: the parameter and the state buffers may
be shared with user-held tensors or saved state dicts.
State buffers are None before a parameter's first step; the returned state replaces them.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, TypeAlias

from burnpy.backend.ops._marker import provided
from burnpy.backend.primitives import FloatPrimitive

if TYPE_CHECKING:
    from burnpy.backend.base import Backend

#: ``adam_step``'s result: the new parameter, both moments and the AMSGrad peak (or None).
AdamResult: TypeAlias = tuple[FloatPrimitive, FloatPrimitive, FloatPrimitive,
                              FloatPrimitive | None]
#: ``rmsprop_step``'s result: the new parameter, the square average, and the gradient average
#: and momentum buffer (each None when unused).
RmspropResult: TypeAlias = tuple[FloatPrimitive, FloatPrimitive, FloatPrimitive | None,
                                 FloatPrimitive | None]


class OptimOps:
    """Fused optimizer updates as provided ops (``cls`` is the concrete backend)."""

    @provided
    def sgd_step(cls: type[Backend], param: FloatPrimitive, grad: FloatPrimitive,
                 momentum_buffer: FloatPrimitive | None, *, lr: float, momentum: float = 0.0,
                 dampening: float = 0.0, weight_decay: float = 0.0,
                 nesterov: bool = False) -> tuple[FloatPrimitive, FloatPrimitive | None]:
        """torch's SGD: ``(new_param, new_momentum_buffer)``; the buffer stays None without
        momentum. The first step's buffer is the (decayed) gradient itself."""
        d = grad
        if weight_decay:
            d = cls.float_add(grad, cls.float_mul_scalar(param, weight_decay))
        buf = None
        if momentum:
            buf = d if momentum_buffer is None else cls.float_add(
                cls.float_mul_scalar(momentum_buffer, momentum),
                cls.float_mul_scalar(d, 1.0 - dampening))
            d = cls.float_add(d, cls.float_mul_scalar(buf, momentum)) if nesterov else buf
        return cls.float_sub(param, cls.float_mul_scalar(d, lr)), buf

    @provided
    def adam_step(cls: type[Backend], param: FloatPrimitive, grad: FloatPrimitive,
                  exp_avg: FloatPrimitive | None, exp_avg_sq: FloatPrimitive | None,
                  max_exp_avg_sq: FloatPrimitive | None, *, step: int, lr: float, beta1: float,
                  beta2: float, eps: float, weight_decay: float = 0.0, decoupled: bool = False,
                  amsgrad: bool = False) -> AdamResult:
        """torch's Adam (``decoupled=False``: L2 decay added to the gradient) or AdamW
        (``decoupled=True``: ``param * (1 - lr * weight_decay)`` first), optionally AMSGrad.

        ``step`` is the 1-based step count of this parameter (for the bias corrections).
        Returns ``(new_param, exp_avg, exp_avg_sq, max_exp_avg_sq)``, the last None unless
        ``amsgrad``.
        """
        if weight_decay:
            if decoupled:
                param = cls.float_mul_scalar(param, 1.0 - lr * weight_decay)
            else:
                grad = cls.float_add(grad, cls.float_mul_scalar(param, weight_decay))
        grad_sq = cls.float_mul_scalar(cls.float_square(grad), 1.0 - beta2)
        if exp_avg is None or exp_avg_sq is None:
            exp_avg = cls.float_mul_scalar(grad, 1.0 - beta1)
            exp_avg_sq = grad_sq
        else:
            exp_avg = cls.float_add(cls.float_mul_scalar(exp_avg, beta1),
                                    cls.float_mul_scalar(grad, 1.0 - beta1))
            exp_avg_sq = cls.float_add(cls.float_mul_scalar(exp_avg_sq, beta2), grad_sq)
        second = exp_avg_sq
        if amsgrad:
            if max_exp_avg_sq is not None:
                # max(peak, v) with NaN propagating, as torch.maximum.
                take = cls.bool_or(cls.float_greater(exp_avg_sq, max_exp_avg_sq),
                                   cls.float_is_nan(exp_avg_sq))
                second = cls.float_mask_where(max_exp_avg_sq, take, exp_avg_sq)
            max_exp_avg_sq = second
        else:
            max_exp_avg_sq = None
        denom = cls.float_add_scalar(
            cls.float_mul_scalar(cls.float_sqrt(second), 1.0 / math.sqrt(1.0 - beta2**step)),
            eps)
        update = cls.float_mul_scalar(cls.float_div(exp_avg, denom), lr / (1.0 - beta1**step))
        return cls.float_sub(param, update), exp_avg, exp_avg_sq, max_exp_avg_sq

    @provided
    def rmsprop_step(cls: type[Backend], param: FloatPrimitive, grad: FloatPrimitive,
                     square_avg: FloatPrimitive | None, grad_avg: FloatPrimitive | None,
                     momentum_buffer: FloatPrimitive | None, *, lr: float, alpha: float, eps: float,
                     weight_decay: float = 0.0, momentum: float = 0.0,
                     centered: bool = False) -> RmspropResult:
        """torch's RMSprop: ``(new_param, square_avg, grad_avg, momentum_buffer)``;
        ``grad_avg`` is None unless ``centered``, the buffer None without momentum."""
        if weight_decay:
            grad = cls.float_add(grad, cls.float_mul_scalar(param, weight_decay))
        sq = cls.float_mul_scalar(cls.float_square(grad), 1.0 - alpha)
        square_avg = sq if square_avg is None else cls.float_add(
            cls.float_mul_scalar(square_avg, alpha), sq)
        if centered:
            scaled = cls.float_mul_scalar(grad, 1.0 - alpha)
            grad_avg = scaled if grad_avg is None else cls.float_add(
                cls.float_mul_scalar(grad_avg, alpha), scaled)
            var = cls.float_sub(square_avg, cls.float_square(grad_avg))
            avg = cls.float_add_scalar(cls.float_sqrt(var), eps)
        else:
            grad_avg = None
            avg = cls.float_add_scalar(cls.float_sqrt(square_avg), eps)
        d = cls.float_div(grad, avg)
        buf = None
        if momentum:
            buf = d if momentum_buffer is None else cls.float_add(
                cls.float_mul_scalar(momentum_buffer, momentum), d)
            d = buf
        return cls.float_sub(param, cls.float_mul_scalar(d, lr)), square_avg, grad_avg, buf
