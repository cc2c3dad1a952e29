"""The per-coordinate adaptive optimizers beyond Adam: ``Adagrad``, ``Adadelta``, ``Adamax``,
``NAdam``, ``RAdam`` and ``Adafactor`` (torch's update rules, names, defaults and state
keys), each written once with Tensor ops on the inner backend (a few elementwise passes per
parameter; no per-element Python). ``SparseAdam`` is a clear error: burnpy has no sparse
gradients."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import ml_dtypes

from burnpy.backend.errors import InvalidArgumentError
from burnpy.optim.optimizer import (
    GradientClipping,
    Optimizer,
    Params,
    check_range,
    weight_decay_step,
)
from burnpy.tensor import Tensor


def _zeros(t: Tensor | None, like: Tensor) -> Tensor:
    """A state buffer, zeros before the first step (torch's lazy initialisation)."""
    return like.zeros_like() if t is None else t


class Adagrad(Optimizer):
    """Divides by the root of the running sum of squared gradients (Duchi et al.), with
    torch's ``lr_decay`` and ``initial_accumulator_value``."""

    def __init__(self, params: Params | None = None, lr: float | Tensor = 1e-2,
                 lr_decay: float = 0.0, weight_decay: float = 0.0,
                 initial_accumulator_value: float = 0.0, eps: float = 1e-10,
                 foreach: bool | None = None, *, maximize: bool = False,
                 differentiable: bool = False, fused: bool | None = None,
                 grad_clipping: GradientClipping | None = None) -> None:
        super().__init__(params, {"lr": lr, "lr_decay": lr_decay, "weight_decay": weight_decay,
                                  "initial_accumulator_value": initial_accumulator_value,
                                  "eps": eps, "foreach": foreach, "maximize": maximize,
                                  "differentiable": differentiable, "fused": fused},
                         grad_clipping)

    def check_group(self, group: Mapping[str, Any]) -> None:
        super().check_group(group)
        for option in ("lr_decay", "weight_decay", "initial_accumulator_value", "eps"):
            check_range("Adagrad", option, group[option], 0.0, math.inf)

    def update(self, key: Tensor, param: Tensor, grad: Tensor,
               group: Mapping[str, Any]) -> Tensor:
        (total,) = self._tensors(key, param, "sum")
        if total is None:
            total = param.full_like(group["initial_accumulator_value"])
        param, grad = weight_decay_step(param, grad, group["lr"], group["weight_decay"])
        clr = group["lr"] / (1.0 + (self.steps[key] - 1) * group["lr_decay"])
        total = total + grad * grad
        self._keep(key, sum=total)
        return param - grad / (total.sqrt() + group["eps"]) * clr


class Adadelta(Optimizer):
    """Scales each step by the ratio of running RMS of updates and of gradients (Zeiler)."""

    def __init__(self, params: Params | None = None, lr: float | Tensor = 1.0, rho: float = 0.9,
                 eps: float = 1e-6, weight_decay: float = 0.0, foreach: bool | None = None, *,
                 capturable: bool = False, maximize: bool = False,
                 differentiable: bool = False,
                 grad_clipping: GradientClipping | None = None) -> None:
        super().__init__(params, {"lr": lr, "rho": rho, "eps": eps,
                                  "weight_decay": weight_decay, "foreach": foreach,
                                  "capturable": capturable, "maximize": maximize,
                                  "differentiable": differentiable}, grad_clipping)

    def check_group(self, group: Mapping[str, Any]) -> None:
        super().check_group(group)
        check_range("Adadelta", "rho", group["rho"], 0.0, 1.0, closed_high=True)
        check_range("Adadelta", "eps", group["eps"], 0.0, math.inf)
        check_range("Adadelta", "weight_decay", group["weight_decay"], 0.0, math.inf)

    def update(self, key: Tensor, param: Tensor, grad: Tensor,
               group: Mapping[str, Any]) -> Tensor:
        square_avg, acc_delta = (_zeros(t, param) for t in
                                 self._tensors(key, param, "square_avg", "acc_delta"))
        rho, eps = group["rho"], group["eps"]
        param, grad = weight_decay_step(param, grad, group["lr"], group["weight_decay"])
        square_avg = square_avg * rho + grad * grad * (1.0 - rho)
        delta = (acc_delta + eps).sqrt() / (square_avg + eps).sqrt() * grad
        acc_delta = acc_delta * rho + delta * delta * (1.0 - rho)
        self._keep(key, square_avg=square_avg, acc_delta=acc_delta)
        return param - delta * group["lr"]


class _Betas(Optimizer):
    """Checks the ``betas`` and ``eps`` of the Adam family."""

    def check_group(self, group: Mapping[str, Any]) -> None:
        super().check_group(group)
        name = type(self).__name__
        check_range(name, "betas[0]", group["betas"][0], 0.0, 1.0)
        check_range(name, "betas[1]", group["betas"][1], 0.0, 1.0)
        check_range(name, "eps", group["eps"], 0.0, math.inf)
        check_range(name, "weight_decay", group["weight_decay"], 0.0, math.inf)


def _betas(betas: tuple[float | Tensor, float | Tensor]) -> tuple[float, float]:
    return float(betas[0]), float(betas[1])


class Adamax(_Betas):
    """Adam with the infinity norm in place of the second moment (Kingma and Ba)."""

    def __init__(self, params: Params | None = None, lr: float | Tensor = 2e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False,
                 grad_clipping: GradientClipping | None = None) -> None:
        super().__init__(params, {"lr": lr, "betas": _betas(betas), "eps": eps,
                                  "weight_decay": weight_decay, "foreach": foreach,
                                  "maximize": maximize, "differentiable": differentiable,
                                  "capturable": capturable}, grad_clipping)

    def update(self, key: Tensor, param: Tensor, grad: Tensor,
               group: Mapping[str, Any]) -> Tensor:
        exp_avg, exp_inf = (_zeros(t, param) for t in
                            self._tensors(key, param, "exp_avg", "exp_inf"))
        beta1, beta2 = group["betas"]
        param, grad = weight_decay_step(param, grad, group["lr"], group["weight_decay"])
        exp_avg = exp_avg.lerp(grad, 1.0 - beta1)
        exp_inf = (exp_inf * beta2).maximum(grad.abs() + group["eps"])
        self._keep(key, exp_avg=exp_avg, exp_inf=exp_inf)
        clr = group["lr"] / (1.0 - beta1 ** self.steps[key])
        return param - exp_avg / exp_inf * clr


class NAdam(_Betas):
    """Adam with Nesterov momentum (Dozat), torch's momentum-decay schedule ``mu_t``."""

    def __init__(self, params: Params | None = None, lr: float | Tensor = 2e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False,
                 grad_clipping: GradientClipping | None = None) -> None:
        super().__init__(params, {"lr": lr, "betas": _betas(betas), "eps": eps,
                                  "weight_decay": weight_decay, "momentum_decay": momentum_decay,
                                  "decoupled_weight_decay": decoupled_weight_decay,
                                  "foreach": foreach, "maximize": maximize,
                                  "capturable": capturable, "differentiable": differentiable},
                         grad_clipping)

    def check_group(self, group: Mapping[str, Any]) -> None:
        super().check_group(group)
        check_range("NAdam", "momentum_decay", group["momentum_decay"], 0.0, math.inf)

    def update(self, key: Tensor, param: Tensor, grad: Tensor,
               group: Mapping[str, Any]) -> Tensor:
        exp_avg, exp_avg_sq, mu_product = self._tensors(key, param, "exp_avg", "exp_avg_sq",
                                                        "mu_product")
        exp_avg, exp_avg_sq = _zeros(exp_avg, param), _zeros(exp_avg_sq, param)
        beta1, beta2 = group["betas"]
        lr, step, decay = group["lr"], self.steps[key], group["momentum_decay"]
        param, grad = weight_decay_step(param, grad, lr, group["weight_decay"],
                                        group["decoupled_weight_decay"])
        mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * decay))
        mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * decay))
        # The product of every step's mu, a 0-d tensor as torch's state (no host sync).
        mu_product = param.sum().full_like(mu) if mu_product is None else mu_product * mu
        exp_avg = exp_avg.lerp(grad, 1.0 - beta1)
        exp_avg_sq = exp_avg_sq * beta2 + grad * grad * (1.0 - beta2)
        self._keep(key, exp_avg=exp_avg, exp_avg_sq=exp_avg_sq, mu_product=mu_product)
        denom = (exp_avg_sq / (1.0 - beta2**step)).sqrt() + group["eps"]
        now = (1.0 - mu_product).recip() * (-lr * (1.0 - mu))
        ahead = (1.0 - mu_product * mu_next).recip() * (-lr * mu_next)
        return param + grad / denom * now + exp_avg / denom * ahead


class RAdam(_Betas):
    """Adam with the variance of the adaptive rate rectified (Liu et al.): plain momentum
    SGD until the rectification term is defined (``rho_t > 5``)."""

    def __init__(self, params: Params | None = None, lr: float | Tensor = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, decoupled_weight_decay: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False,
                 grad_clipping: GradientClipping | None = None) -> None:
        super().__init__(params, {"lr": lr, "betas": _betas(betas), "eps": eps,
                                  "weight_decay": weight_decay,
                                  "decoupled_weight_decay": decoupled_weight_decay,
                                  "foreach": foreach, "maximize": maximize,
                                  "capturable": capturable, "differentiable": differentiable},
                         grad_clipping)

    def update(self, key: Tensor, param: Tensor, grad: Tensor,
               group: Mapping[str, Any]) -> Tensor:
        exp_avg, exp_avg_sq = (_zeros(t, param) for t in
                               self._tensors(key, param, "exp_avg", "exp_avg_sq"))
        beta1, beta2 = group["betas"]
        lr, step = group["lr"], self.steps[key]
        param, grad = weight_decay_step(param, grad, lr, group["weight_decay"],
                                        group["decoupled_weight_decay"])
        exp_avg = exp_avg.lerp(grad, 1.0 - beta1)
        exp_avg_sq = exp_avg_sq * beta2 + grad * grad * (1.0 - beta2)
        self._keep(key, exp_avg=exp_avg, exp_avg_sq=exp_avg_sq)
        correction2 = 1.0 - beta2**step
        corrected = exp_avg / (1.0 - beta1**step)
        rho_inf = 2.0 / (1.0 - beta2) - 1.0
        rho_t = rho_inf - 2.0 * step * beta2**step / correction2
        if rho_t <= 5.0:
            return param - corrected * lr
        rect = math.sqrt((rho_t - 4.0) * (rho_t - 2.0) * rho_inf
                         / ((rho_inf - 4.0) * (rho_inf - 2.0) * rho_t))
        adaptive = (exp_avg_sq.sqrt() + group["eps"]).recip() * math.sqrt(correction2)
        return param - corrected * lr * adaptive * rect


class Adafactor(Optimizer):
    """Factored second moments (Shazeer and Stern), torch's formulation: a row and a column
    average for each matrix (over the last two dims), a full one for vectors, a relative
    step size and update clipping at RMS ``d``."""

    def __init__(self, params: Params | None = None, lr: float | Tensor = 1e-2,
                 beta2_decay: float = -0.8, eps: tuple[float | None, float] = (None, 1e-3),
                 d: float = 1.0, weight_decay: float = 0.0, *, foreach: bool | None = None,
                 maximize: bool = False,
                 grad_clipping: GradientClipping | None = None) -> None:
        super().__init__(params, {"lr": lr, "beta2_decay": beta2_decay, "eps": tuple(eps),
                                  "d": d, "weight_decay": weight_decay, "foreach": foreach,
                                  "maximize": maximize}, grad_clipping)

    def check_group(self, group: Mapping[str, Any]) -> None:
        super().check_group(group)
        if group["beta2_decay"] > 0:
            raise InvalidArgumentError(f"Adafactor: beta2_decay must be <= 0, got "
                                       f"{group['beta2_decay']}")
        eps1, eps2 = group["eps"]
        if (eps1 is not None and eps1 < 0) or eps2 < 0:
            raise InvalidArgumentError(f"Adafactor: eps values must be >= 0, got "
                                       f"{group['eps']}")
        check_range("Adafactor", "d", group["d"], 1.0, math.inf)
        check_range("Adafactor", "weight_decay", group["weight_decay"], 0.0, math.inf)

    def update(self, key: Tensor, param: Tensor, grad: Tensor,
               group: Mapping[str, Any]) -> Tensor:
        lr, step = group["lr"], self.steps[key]
        eps1, eps2 = group["eps"]
        if eps1 is None:
            eps1 = float(ml_dtypes.finfo(param.dtype.numpy).eps)
        beta = step ** group["beta2_decay"]  # 1 - beta2_t
        rho = min(lr, 1.0 / math.sqrt(step))
        size = math.sqrt(param.numel())
        alpha = (param.norm() / size).clamp(min=eps2) * rho
        param, _ = weight_decay_step(param, grad, lr, group["weight_decay"], decoupled=True)
        if grad.ndim > 1:
            row_var, col_var = self._tensors(key, param, "row_var", "col_var")
            row_mean = grad.square().mean(-1, keepdim=True)
            col_mean = grad.square().mean(-2, keepdim=True)
            row_var = row_mean * beta if row_var is None else row_var.lerp(row_mean, beta)
            col_var = col_mean * beta if col_var is None else col_var.lerp(col_mean, beta)
            self._keep(key, row_var=row_var, col_var=col_var)
            estimate = (row_var @ col_var) / row_var.mean(-2, keepdim=True).clamp(min=eps1)
        else:
            (variance,) = self._tensors(key, param, "variance")
            square = grad * grad
            estimate = square * beta if variance is None else variance.lerp(square, beta)
            self._keep(key, variance=estimate)
        update = estimate.clamp(min=eps1 * eps1).rsqrt() * grad
        denom = (update.norm() / (size * group["d"])).clamp(min=1.0)
        return param - update * (alpha / denom)


class SparseAdam:
    """torch's Adam for sparse gradients: burnpy has no sparse gradients, so building one is
    an error that names the dense alternative."""

    def __init__(self, params: Params | None = None, lr: float | Tensor = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 maximize: bool = False) -> None:
        raise InvalidArgumentError(
            "SparseAdam: burnpy has no sparse gradients (F.embedding refuses sparse=True), so "
            "SparseAdam would have nothing to update; use Adam or AdamW (dense: they also "
            "decay the moments of rows that got no gradient this step)")
