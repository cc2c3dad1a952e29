"""``RMSprop`` (torch's formulation: optional centering, momentum and weight decay), one fused
``rmsprop_step`` backend call per parameter."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from burnpy.backend.errors import InvalidArgumentError
from burnpy.optim.optimizer import GradientClipping, Optimizer, Params
from burnpy.tensor import Tensor
from burnpy.tensor._core import FLOAT
from burnpy.tensor._core import new as wrap


class RMSprop(Optimizer):
    """Divides the gradient by a running RMS of recent gradients (Hinton)."""

    def __init__(self, params: Params | None = None, lr: float | Tensor = 1e-2,
                 alpha: float = 0.99, eps: float = 1e-8, weight_decay: float = 0.0,
                 momentum: float = 0.0, centered: bool = False, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False, *,
                 grad_clipping: GradientClipping | None = None) -> None:
        super().__init__(params, {"lr": lr, "alpha": alpha, "eps": eps,
                                  "weight_decay": weight_decay, "momentum": momentum,
                                  "centered": centered, "capturable": capturable,
                                  "foreach": foreach, "maximize": maximize,
                                  "differentiable": differentiable}, grad_clipping)

    def check_group(self, group: Mapping[str, Any]) -> None:
        super().check_group(group)
        if not 0.0 <= group["alpha"] <= 1.0 or group["momentum"] < 0:
            raise InvalidArgumentError(f"RMSprop: need alpha in [0, 1] and momentum >= 0, got "
                                       f"alpha={group['alpha']}, momentum={group['momentum']}")

    def update(self, key: Tensor, param: Tensor, grad: Tensor,
               group: Mapping[str, Any]) -> Tensor:
        b = param.backend
        centered, momentum = group["centered"], group["momentum"]
        square_avg, grad_avg, buf = self._state(key, param, "square_avg", "grad_avg",
                                                "momentum_buffer")
        new, square_avg, grad_avg, buf = b.rmsprop_step(
            param.primitive, grad.primitive, square_avg, grad_avg if centered else None,
            buf if momentum else None, lr=group["lr"], alpha=group["alpha"], eps=group["eps"],
            weight_decay=group["weight_decay"], momentum=momentum, centered=centered)
        self._store(key, b, square_avg=square_avg, grad_avg=grad_avg, momentum_buffer=buf)
        return wrap(b, new, FLOAT)
