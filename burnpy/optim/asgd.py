"""``ASGD``: averaged stochastic gradient descent (Polyak and Juditsky), torch's rules, names,
defaults and state keys (``eta``, ``ax``), written with Tensor ops on the inner backend."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from burnpy.optim.optimizer import (
    GradientClipping,
    Optimizer,
    Params,
    check_range,
    weight_decay_step,
)
from burnpy.tensor import Tensor


class ASGD(Optimizer):
    """SGD with a decaying rate ``eta`` and a running average ``ax`` of the iterates, taken
    from step ``t0`` on (``state[p]["ax"]`` is the averaged model)."""

    def __init__(self, params: Params | None = None, lr: float | Tensor = 1e-2,
                 lambd: float = 1e-4, alpha: float = 0.75, t0: float = 1e6,
                 weight_decay: float = 0.0, foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False, *,
                 grad_clipping: GradientClipping | None = None) -> None:
        super().__init__(params, {"lr": lr, "lambd": lambd, "alpha": alpha, "t0": t0,
                                  "weight_decay": weight_decay, "foreach": foreach,
                                  "maximize": maximize, "differentiable": differentiable,
                                  "capturable": capturable}, grad_clipping)

    def check_group(self, group: Mapping[str, Any]) -> None:
        super().check_group(group)
        check_range("ASGD", "weight_decay", group["weight_decay"], 0.0, math.inf)

    def update(self, key: Tensor, param: Tensor, grad: Tensor,
               group: Mapping[str, Any]) -> Tensor:
        eta, ax = self._tensors(key, param, "eta", "ax")
        lr, step, lambd = group["lr"], self.steps[key], group["lambd"]
        if eta is None:
            eta = param.sum().full_like(lr)  # a 0-d tensor, as torch's state (no host sync)
        param, grad = weight_decay_step(param, grad, lr, group["weight_decay"])
        param = param * (1.0 - lambd * eta) - grad * eta
        # mu, the averaging weight of this step, was set by the previous one: 1 until t0.
        mu = 1.0 / max(1.0, step - 1 - group["t0"])
        ax = param if mu == 1.0 or ax is None else ax + (param - ax) * mu
        eta = eta.full_like(lr / (1.0 + lambd * lr * step) ** group["alpha"])
        self._keep(key, eta=eta, ax=ax)
        return param
