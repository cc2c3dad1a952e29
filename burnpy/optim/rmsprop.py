"""``RMSprop`` (torch's formulation: optional centering, momentum and weight decay), one fused
``rmsprop_step`` backend call per parameter."""

from __future__ import annotations

from typing import Any

from burnpy.backend.errors import InvalidArgumentError
from burnpy.optim.optimizer import GradientClipping, Optimizer
from burnpy.tensor import Tensor
from burnpy.tensor._core import FLOAT
from burnpy.tensor._core import new as wrap


class RMSprop(Optimizer):
    """Divides the gradient by a running RMS of recent gradients (Hinton)."""

    def __init__(self, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0.0, momentum: float = 0.0, centered: bool = False,
                 grad_clipping: GradientClipping | None = None) -> None:
        super().__init__(lr, grad_clipping)
        if not 0.0 <= alpha <= 1.0 or momentum < 0:
            raise InvalidArgumentError(f"RMSprop: need alpha in [0, 1] and momentum >= 0, got "
                                       f"alpha={alpha}, momentum={momentum}")
        self.alpha, self.eps, self.weight_decay = alpha, eps, weight_decay
        self.momentum, self.centered = momentum, centered

    def update(self, name: str, param: Tensor, grad: Tensor, lr: float) -> Tensor:
        b = param.backend
        square_avg, grad_avg, buf = self._state(name, param, "square_avg", "grad_avg",
                                                "momentum_buffer")
        new, square_avg, grad_avg, buf = b.rmsprop_step(
            param.primitive, grad.primitive, square_avg, grad_avg if self.centered else None,
            buf if self.momentum else None, lr=lr, alpha=self.alpha, eps=self.eps,
            weight_decay=self.weight_decay, momentum=self.momentum, centered=self.centered)
        self._store(name, b, square_avg=square_avg, grad_avg=grad_avg, momentum_buffer=buf)
        return wrap(b, new, FLOAT)

    def hyperparameters(self) -> dict[str, Any]:
        return {"lr": self.lr, "alpha": self.alpha, "eps": self.eps,
                "weight_decay": self.weight_decay, "momentum": self.momentum,
                "centered": self.centered}
