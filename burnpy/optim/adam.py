"""``Adam`` (L2 weight decay, optional AMSGrad) and ``AdamW`` (decoupled weight decay), one
fused ``adam_step`` backend call per parameter."""

from __future__ import annotations

from typing import Any

from burnpy.backend.errors import InvalidArgumentError
from burnpy.optim.optimizer import GradientClipping, Optimizer
from burnpy.tensor import Tensor
from burnpy.tensor._core import FLOAT
from burnpy.tensor._core import new as wrap


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
        b = param.backend
        exp_avg, exp_avg_sq, peak = self._state(name, param, "exp_avg", "exp_avg_sq",
                                                "max_exp_avg_sq")
        new, exp_avg, exp_avg_sq, peak = b.adam_step(
            param.primitive, grad.primitive, exp_avg, exp_avg_sq, peak if self.amsgrad else None,
            step=self.steps[name], lr=lr, beta1=self.betas[0], beta2=self.betas[1],
            eps=self.eps, weight_decay=self.weight_decay,
            decoupled=self.decoupled_weight_decay, amsgrad=self.amsgrad)
        self._store(name, b, exp_avg=exp_avg, exp_avg_sq=exp_avg_sq, max_exp_avg_sq=peak)
        return wrap(b, new, FLOAT)

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
