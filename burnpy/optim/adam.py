"""``Adam`` (L2 weight decay, optional AMSGrad) and ``AdamW`` (decoupled weight decay)."""

from __future__ import annotations

import math
from typing import Any

from burnpy.backend.errors import InvalidArgumentError
from burnpy.optim.optimizer import GradientClipping, Optimizer
from burnpy.tensor import Tensor


class Adam(Optimizer):
    """Adaptive moments (Kingma and Ba), torch's formulation and defaults."""

    decoupled_weight_decay = False

    def __init__(self, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0, amsgrad: bool = False,
                 grad_clipping: GradientClipping | None = None) -> None:
        super().__init__(lr, grad_clipping)
        if not (0.0 <= betas[0] < 1.0 and 0.0 <= betas[1] < 1.0):
            raise InvalidArgumentError(f"{type(self).__name__}: betas must be in [0, 1), got "
                                       f"{betas}")
        self.betas, self.eps = (float(betas[0]), float(betas[1])), eps
        self.weight_decay, self.amsgrad = weight_decay, amsgrad

    def update(self, name: str, param: Tensor, grad: Tensor, lr: float) -> Tensor:
        beta1, beta2 = self.betas
        if self.weight_decay:
            if self.decoupled_weight_decay:
                param = param * (1.0 - lr * self.weight_decay)
            else:
                grad = grad + param * self.weight_decay
        exp_avg = self._buffer(name, "exp_avg", param)
        exp_avg_sq = self._buffer(name, "exp_avg_sq", param)
        if exp_avg is None or exp_avg_sq is None:
            exp_avg = grad * (1.0 - beta1)
            exp_avg_sq = grad.square() * (1.0 - beta2)
        else:
            exp_avg = exp_avg * beta1 + grad * (1.0 - beta1)
            exp_avg_sq = exp_avg_sq * beta2 + grad.square() * (1.0 - beta2)
        self._store(name, exp_avg=exp_avg, exp_avg_sq=exp_avg_sq)
        second = exp_avg_sq
        if self.amsgrad:
            peak = self._buffer(name, "max_exp_avg_sq", param)
            second = exp_avg_sq if peak is None else peak.maximum(exp_avg_sq)
            self._store(name, max_exp_avg_sq=second)
        step = self.steps[name]
        bias_correction1 = 1.0 - beta1**step
        bias_correction2 = 1.0 - beta2**step
        denom = second.sqrt() * (1.0 / math.sqrt(bias_correction2)) + self.eps
        return param - (exp_avg / denom) * (lr / bias_correction1)

    def hyperparameters(self) -> dict[str, Any]:
        return {"lr": self.lr, "betas": list(self.betas), "eps": self.eps,
                "weight_decay": self.weight_decay, "amsgrad": self.amsgrad}


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov and Hutter): ``p *= 1 - lr * wd`` before
    the Adam step; torch's default ``weight_decay=0.01``."""

    decoupled_weight_decay = True

    def __init__(self, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2, amsgrad: bool = False,
                 grad_clipping: GradientClipping | None = None) -> None:
        super().__init__(lr, betas, eps, weight_decay, amsgrad, grad_clipping)
