"""``Muon``: momentum orthogonalized by Newton-Schulz (Jordan et al.), torch's rules, names,
defaults and state key (``momentum_buffer``), for 2-d parameters.

torch runs the Newton-Schulz iteration in bfloat16 (tensor-core speed on GPUs); burnpy runs
it in the parameter's dtype, so its orthogonalized update is the more exact one and the two
agree to bfloat16's precision (about 3 significant digits of each step)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from burnpy.backend.errors import InvalidArgumentError, ShapeError
from burnpy.optim.optimizer import GradientClipping, Optimizer, Params, check_range
from burnpy.tensor import Tensor

#: torch's ``adjust_lr_fn`` choices: how a matrix's shape scales its rate.
ADJUST_LR_FNS = (None, "original", "match_rms_adamw")


def newton_schulz(grad: Tensor, coefficients: tuple[float, float, float], steps: int,
                  eps: float) -> Tensor:
    """The quintic Newton-Schulz approximation of ``U V^T`` for ``grad = U S V^T`` (singular
    values pushed near 1, as torch's), iterated on the wide orientation."""
    a, b, c = coefficients
    tall = grad.shape[0] > grad.shape[1]
    x = grad.T if tall else grad
    x = x / x.norm().clamp(min=eps)
    for _ in range(steps):
        gram = x @ x.T
        x = x * a + (gram * b + gram @ gram * c) @ x
    return x.T if tall else x


class Muon(Optimizer):
    """SGD-momentum whose update is orthogonalized (every singular value near 1), with
    decoupled weight decay; every parameter must be a matrix."""

    def __init__(self, params: Params | None = None, lr: float | Tensor = 1e-3,
                 weight_decay: float = 0.1, momentum: float = 0.95, nesterov: bool = True,
                 ns_coefficients: tuple[float, float, float] = (3.4445, -4.775, 2.0315),
                 eps: float = 1e-7, ns_steps: int = 5, adjust_lr_fn: str | None = None, *,
                 grad_clipping: GradientClipping | None = None) -> None:
        super().__init__(params, {"lr": lr, "weight_decay": weight_decay, "momentum": momentum,
                                  "nesterov": nesterov,
                                  "ns_coefficients": tuple(float(c) for c in ns_coefficients),
                                  "eps": eps, "ns_steps": ns_steps,
                                  "adjust_lr_fn": adjust_lr_fn}, grad_clipping)

    def check_group(self, group: Mapping[str, Any]) -> None:
        super().check_group(group)
        check_range("Muon", "momentum", group["momentum"], 0.0, math.inf)
        check_range("Muon", "weight_decay", group["weight_decay"], 0.0, math.inf)
        check_range("Muon", "ns_steps", group["ns_steps"], 0, 100)
        if group["adjust_lr_fn"] not in ADJUST_LR_FNS:
            raise InvalidArgumentError(f"Muon: adjust_lr_fn must be one of {ADJUST_LR_FNS}, "
                                       f"got {group['adjust_lr_fn']!r}")
        if len(group["ns_coefficients"]) != 3:
            raise InvalidArgumentError(f"Muon: ns_coefficients takes 3 values, got "
                                       f"{group['ns_coefficients']}")
        for p in group.get("params", []):
            if isinstance(p, Tensor):
                _matrix(p.shape)

    def update(self, key: Tensor, param: Tensor, grad: Tensor,
               group: Mapping[str, Any]) -> Tensor:
        rows, cols = _matrix(param.shape)
        momentum, lr = group["momentum"], group["lr"]
        (buf,) = self._tensors(key, param, "momentum_buffer")
        buf = grad * (1.0 - momentum) if buf is None else buf.lerp(grad, 1.0 - momentum)
        self._keep(key, momentum_buffer=buf)
        direction = grad.lerp(buf, momentum) if group["nesterov"] else buf
        ortho = newton_schulz(direction, group["ns_coefficients"], group["ns_steps"],
                              group["eps"])
        if group["adjust_lr_fn"] == "match_rms_adamw":
            ratio = 0.2 * math.sqrt(max(rows, cols))
        else:
            ratio = math.sqrt(max(1.0, rows / cols))
        return param * (1.0 - lr * group["weight_decay"]) - ortho * (lr * ratio)


def _matrix(shape: tuple[int, ...]) -> tuple[int, int]:
    """A parameter's two dims; anything but a matrix is an error, as torch's."""
    if len(shape) != 2:
        raise ShapeError(f"Muon: every parameter must be 2-d (a weight matrix), got one of "
                         f"shape {tuple(shape)}; give biases and norms to another optimizer "
                         "(AdamW) in their own param group or optimizer")
    return shape[0], shape[1]
