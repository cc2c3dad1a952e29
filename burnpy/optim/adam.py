"""``Adam`` (L2 weight decay, or decoupled with ``decoupled_weight_decay=True``; optional
AMSGrad) and ``AdamW`` (decoupled weight decay): one fused ``adam_step`` backend call per set
of alike parameters, concatenated."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from burnpy.backend.errors import InvalidArgumentError
from burnpy.optim.optimizer import GradientClipping, Optimizer, Params, concat_flat, split_flat
from burnpy.tensor import Tensor
from burnpy.tensor._core import FLOAT
from burnpy.tensor._core import new as wrap


class Adam(Optimizer):
    """Adaptive moments (Kingma and Ba), torch's formulation and defaults."""

    def __init__(self, params: Params | None = None, lr: float | Tensor = 1e-3,
                 betas: tuple[float | Tensor, float | Tensor] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, amsgrad: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None,
                 decoupled_weight_decay: bool = False,
                 grad_clipping: GradientClipping | None = None) -> None:
        super().__init__(params, {"lr": lr, "betas": (float(betas[0]), float(betas[1])),
                                  "eps": eps, "weight_decay": weight_decay, "amsgrad": amsgrad,
                                  "foreach": foreach, "maximize": maximize,
                                  "capturable": capturable, "differentiable": differentiable,
                                  "fused": fused, "decoupled_weight_decay": decoupled_weight_decay},
                         grad_clipping)

    def check_group(self, group: Mapping[str, Any]) -> None:
        super().check_group(group)
        betas = group["betas"]
        if not (0.0 <= betas[0] < 1.0 and 0.0 <= betas[1] < 1.0):
            raise InvalidArgumentError(f"{type(self).__name__}: betas must be in [0, 1), got "
                                       f"{tuple(betas)}")

    def update(self, key: Tensor, param: Tensor, grad: Tensor,
               group: Mapping[str, Any]) -> Tensor:
        return self._update_group([key], [param], [grad], group)[0]

    def update_many(self, keys: list[Tensor], params: list[Tensor], grads: list[Tensor],
                    group: Mapping[str, Any]) -> list[Tensor]:
        """Parameters alike in backend, dtypes, device, step count and state in use are
        concatenated and stepped by one ``adam_step`` (the rule is elementwise, so every value
        is what its own update gives), except on a backend that fuses elementwise chains
        (``Fusion(B)``), where each parameter's update is one kernel and copies would cost."""
        fuses = getattr(params[0].backend if params else None, "fuses_elementwise", None)
        if fuses is not None and fuses():  # each update is one fused kernel: no concatenation
            return [self._update_group([k], [p], [g], group)[0]
                    for k, p, g in zip(keys, params, grads, strict=True)]
        amsgrad = group["amsgrad"]
        alike: dict[tuple[Any, ...], list[int]] = {}
        for i, (key, p, g) in enumerate(zip(keys, params, grads, strict=True)):
            state = self.state.get(key, {})
            kind = (p.backend, p.dtype, g.dtype, p.device, self.steps[key],
                    "exp_avg" in state and "exp_avg_sq" in state,
                    amsgrad and "max_exp_avg_sq" in state)
            alike.setdefault(kind, []).append(i)
        out: list[Tensor | None] = [None] * len(params)
        for members in alike.values():
            news = self._update_group([keys[i] for i in members], [params[i] for i in members],
                                      [grads[i] for i in members], group)
            for i, new in zip(members, news, strict=True):
                out[i] = new
        return out  # type: ignore[return-value]

    def _update_group(self, keys: list[Tensor], params: list[Tensor], grads: list[Tensor],
                      group: Mapping[str, Any]) -> list[Tensor]:
        """One ``adam_step`` over the concatenation of ``params`` (alike, see
        ``update_many``; a lone parameter is only reshaped), split back into each parameter's
        value and state."""
        b = params[0].backend
        states = [self._state(k, p, "exp_avg", "exp_avg_sq", "max_exp_avg_sq")
                  for k, p in zip(keys, params, strict=True)]
        flat = [None if any(c is None for c in columns) else concat_flat(b, list(columns))
                for columns in zip(*states, strict=True)]
        amsgrad, betas = group["amsgrad"], group["betas"]
        new, exp_avg, exp_avg_sq, peak = b.adam_step(
            concat_flat(b, [p.primitive for p in params]),
            concat_flat(b, [g.primitive for g in grads]), flat[0], flat[1],
            flat[2] if amsgrad else None, step=self.steps[keys[0]], lr=group["lr"],
            beta1=float(betas[0]), beta2=float(betas[1]), eps=group["eps"],
            weight_decay=group["weight_decay"], decoupled=group["decoupled_weight_decay"],
            amsgrad=amsgrad)
        shapes = [p.shape for p in params]
        pieces = [None if a is None else split_flat(b, a, shapes)
                  for a in (exp_avg, exp_avg_sq, peak)]
        for i, key in enumerate(keys):
            self._store(key, b, **{name: None if piece is None else piece[i] for name, piece in
                                   zip(("exp_avg", "exp_avg_sq", "max_exp_avg_sq"), pieces,
                                       strict=True)})
        return [wrap(b, p, FLOAT) for p in split_flat(b, new, shapes)]


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov and Hutter): ``p *= 1 - lr * wd`` before
    the Adam step; torch's default ``weight_decay=0.01``."""

    def __init__(self, params: Params | None = None, lr: float | Tensor = 1e-3,
                 betas: tuple[float | Tensor, float | Tensor] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False, foreach: bool | None = None, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None,
                 grad_clipping: GradientClipping | None = None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable,
                         differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True, grad_clipping=grad_clipping)
