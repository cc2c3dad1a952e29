"""``RMSprop`` (torch's formulation: optional centering, momentum and weight decay)."""

from __future__ import annotations

from typing import Any

from burnpy.backend.errors import InvalidArgumentError
from burnpy.optim.optimizer import GradientClipping, Optimizer
from burnpy.tensor import Tensor


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
        if self.weight_decay:
            grad = grad + param * self.weight_decay
        alpha = self.alpha
        square_avg = self._buffer(name, "square_avg", param)
        sq = grad.square() * (1.0 - alpha)
        square_avg = sq if square_avg is None else square_avg * alpha + sq
        self._store(name, square_avg=square_avg)
        if self.centered:
            grad_avg = self._buffer(name, "grad_avg", param)
            grad_avg = (grad * (1.0 - alpha) if grad_avg is None
                        else grad_avg * alpha + grad * (1.0 - alpha))
            self._store(name, grad_avg=grad_avg)
            avg = (square_avg - grad_avg.square()).sqrt() + self.eps
        else:
            avg = square_avg.sqrt() + self.eps
        if self.momentum:
            buf = self._buffer(name, "momentum_buffer", param)
            buf = grad / avg if buf is None else buf * self.momentum + grad / avg
            self._store(name, momentum_buffer=buf)
            return param - buf * lr
        return param - (grad / avg) * lr

    def hyperparameters(self) -> dict[str, Any]:
        return {"lr": self.lr, "alpha": self.alpha, "eps": self.eps,
                "weight_decay": self.weight_decay, "momentum": self.momentum,
                "centered": self.centered}
