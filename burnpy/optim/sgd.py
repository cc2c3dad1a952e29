"""``SGD`` with momentum, dampening, Nesterov momentum and L2 weight decay (torch's rules), one
fused ``sgd_step`` backend call per parameter."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from burnpy.backend.errors import InvalidArgumentError
from burnpy.optim.optimizer import GradientClipping, Optimizer, Params
from burnpy.tensor import Tensor
from burnpy.tensor._core import FLOAT
from burnpy.tensor._core import new as wrap


class SGD(Optimizer):
    """``p -= lr * d`` where ``d`` is the gradient (plus ``weight_decay * p``), optionally
    through a momentum buffer ``b = momentum * b + (1 - dampening) * d``."""

    def __init__(self, params: Params | None = None, lr: float | Tensor = 1e-3,
                 momentum: float = 0.0, dampening: float = 0.0,
                 weight_decay: float | Tensor = 0.0, nesterov: bool = False, *,
                 maximize: bool = False, foreach: bool | None = None,
                 differentiable: bool = False, fused: bool | None = None,
                 grad_clipping: GradientClipping | None = None) -> None:
        super().__init__(params, {"lr": lr, "momentum": momentum, "dampening": dampening,
                                  "weight_decay": weight_decay, "nesterov": nesterov,
                                  "maximize": maximize, "foreach": foreach,
                                  "differentiable": differentiable, "fused": fused},
                         grad_clipping)

    def check_group(self, group: Mapping[str, Any]) -> None:
        super().check_group(group)
        if group["nesterov"] and (group["momentum"] <= 0 or group["dampening"] != 0):
            raise InvalidArgumentError("SGD: Nesterov momentum needs momentum > 0 and "
                                       "dampening = 0")
        if group["momentum"] < 0 or group["weight_decay"] < 0:
            raise InvalidArgumentError(f"SGD: momentum ({group['momentum']}) and weight_decay "
                                       f"({group['weight_decay']}) must be >= 0")

    def update(self, key: Tensor, param: Tensor, grad: Tensor,
               group: Mapping[str, Any]) -> Tensor:
        b = param.backend
        momentum = group["momentum"]
        buf = self._state(key, param, "momentum_buffer")[0] if momentum else None
        new, buf = b.sgd_step(param.primitive, grad.primitive, buf, lr=group["lr"],
                              momentum=momentum, dampening=group["dampening"],
                              weight_decay=group["weight_decay"], nesterov=group["nesterov"])
        self._store(key, b, momentum_buffer=buf)
        return wrap(b, new, FLOAT)
