"""``Rprop``: resilient backpropagation (Riedmiller and Braun), torch's rules, names, defaults
and state keys (``prev``, ``step_size``), written with Tensor ops on the inner backend."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from burnpy.backend.errors import InvalidArgumentError
from burnpy.optim.optimizer import GradientClipping, Optimizer, Params
from burnpy.tensor import Tensor


class Rprop(Optimizer):
    """Each coordinate moves by its own step size along the gradient's sign: the size grows
    by ``etas[1]`` while the sign holds and shrinks by ``etas[0]`` when it flips (that step
    is then skipped), within ``step_sizes``."""

    def __init__(self, params: Params | None = None, lr: float | Tensor = 1e-2,
                 etas: tuple[float, float] = (0.5, 1.2),
                 step_sizes: tuple[float, float] = (1e-6, 50), *, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False,
                 grad_clipping: GradientClipping | None = None) -> None:
        super().__init__(params, {"lr": lr, "etas": (float(etas[0]), float(etas[1])),
                                  "step_sizes": (float(step_sizes[0]), float(step_sizes[1])),
                                  "capturable": capturable, "foreach": foreach,
                                  "maximize": maximize, "differentiable": differentiable},
                         grad_clipping)

    def check_group(self, group: Mapping[str, Any]) -> None:
        super().check_group(group)
        minus, plus = group["etas"]
        if not 0.0 < minus < 1.0 < plus:
            raise InvalidArgumentError(f"Rprop: need 0 < etas[0] < 1 < etas[1], got "
                                       f"{group['etas']}")

    def update(self, key: Tensor, param: Tensor, grad: Tensor,
               group: Mapping[str, Any]) -> Tensor:
        prev, step_size = self._tensors(key, param, "prev", "step_size")
        if prev is None or step_size is None:
            prev, step_size = param.zeros_like(), param.full_like(group["lr"])
        minus, plus = group["etas"]
        low, high = group["step_sizes"]
        product = grad * prev
        flipped = product < 0
        factor = product.full_like(1.0).mask_fill(product > 0, plus).mask_fill(flipped, minus)
        step_size = (step_size * factor).clamp(low, high)
        grad = grad.mask_fill(flipped, 0.0)
        self._keep(key, prev=grad, step_size=step_size)
        return param - grad.sign() * step_size
