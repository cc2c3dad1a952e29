"""``SGD`` with momentum, dampening, Nesterov momentum and L2 weight decay (torch's rules), one
fused ``sgd_step`` backend call per parameter."""

from __future__ import annotations

from typing import Any

from burnpy.backend.errors import InvalidArgumentError
from burnpy.optim.optimizer import GradientClipping, Optimizer
from burnpy.tensor import Tensor
from burnpy.tensor._core import FLOAT
from burnpy.tensor._core import new as wrap


class SGD(Optimizer):
    """``p -= lr * d`` where ``d`` is the gradient (plus ``weight_decay * p``), optionally
    through a momentum buffer ``b = momentum * b + (1 - dampening) * d``."""

    def __init__(self, lr: float = 1e-3, momentum: float = 0.0, dampening: float = 0.0,
                 weight_decay: float = 0.0, nesterov: bool = False,
                 grad_clipping: GradientClipping | None = None) -> None:
        super().__init__(lr, grad_clipping)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise InvalidArgumentError("SGD: Nesterov momentum needs momentum > 0 and "
                                       "dampening = 0")
        if momentum < 0 or weight_decay < 0:
            raise InvalidArgumentError(f"SGD: momentum ({momentum}) and weight_decay "
                                       f"({weight_decay}) must be >= 0")
        self.momentum, self.dampening = momentum, dampening
        self.weight_decay, self.nesterov = weight_decay, nesterov

    def update(self, name: str, param: Tensor, grad: Tensor, lr: float) -> Tensor:
        b = param.backend
        buf = self._state(name, param, "momentum_buffer")[0] if self.momentum else None
        new, buf = b.sgd_step(param.primitive, grad.primitive, buf, lr=lr,
                              momentum=self.momentum, dampening=self.dampening,
                              weight_decay=self.weight_decay, nesterov=self.nesterov)
        self._store(name, b, momentum_buffer=buf)
        return wrap(b, new, FLOAT)

    def hyperparameters(self) -> dict[str, Any]:
        return {"lr": self.lr, "momentum": self.momentum, "dampening": self.dampening,
                "weight_decay": self.weight_decay, "nesterov": self.nesterov}
