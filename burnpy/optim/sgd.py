"""``SGD`` with momentum, dampening, Nesterov momentum and L2 weight decay (torch's rules)."""

from __future__ import annotations

from typing import Any

from burnpy.backend.errors import InvalidArgumentError
from burnpy.optim.optimizer import GradientClipping, Optimizer
from burnpy.tensor import Tensor


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
        d = grad + param * self.weight_decay if self.weight_decay else grad
        if self.momentum:
            buf = self._buffer(name, "momentum_buffer", param)
            buf = d if buf is None else buf * self.momentum + d * (1.0 - self.dampening)
            self._store(name, momentum_buffer=buf)
            d = d + buf * self.momentum if self.nesterov else buf
        return param - d * lr

    def hyperparameters(self) -> dict[str, Any]:
        return {"lr": self.lr, "momentum": self.momentum, "dampening": self.dampening,
                "weight_decay": self.weight_decay, "nesterov": self.nesterov}
