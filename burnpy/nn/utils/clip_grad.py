"""torch.nn.utils's gradient clipping, on burnpy's gradients.

torch keeps each gradient on its parameter (``p.grad``), so ``clip_grad_norm_(params, ...)``
finds them there. burnpy's ``backward()`` returns them instead, in a ``Gradients`` object, so
these functions take it as the keyword ``grads``: ``clip_grad_norm_(model.parameters(),
max_norm, grads=grads)`` clips, in that object, the gradients of the parameters given, and
returns the norm as torch's. A parameter without a gradient in ``grads`` is skipped, as
torch skips ``p.grad is None``. ``optim.clip_grad_norm(model, grads, ...)`` and
``optim.clip_grad_value`` are these over a whole module; ``optim.GradientClipping`` does the
same clipping inside an optimizer's step (``grad_clipping=``), where no call is needed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from burnpy.autodiff.gradients import Gradients
from burnpy.backend.errors import AutodiffError, InvalidArgumentError
from burnpy.tensor import Tensor

#: What torch's clipping functions take as ``parameters``: one tensor or several.
TensorOrTensors = Tensor | Iterable[Tensor]


def total_norm(grads: list[Tensor], norm_type: float = 2.0) -> Tensor:
    """The ``norm_type``-norm of all gradients taken as one vector (0-d tensor)."""
    if norm_type == math.inf:
        maxima = [g.abs().max() for g in grads]
        out = maxima[0]
        for m in maxima[1:]:
            out = out.maximum(m)
        return out
    if norm_type == 2.0 and len({(g.backend, g.dtype, g.device) for g in grads}) == 1:
        # One vector and one dot instead of three ops and an add per gradient.
        flat = Tensor.cat([g.reshape(-1) for g in grads]) if len(grads) > 1 else grads[0]
        return flat.reshape(-1).dot(flat.reshape(-1)).sqrt()
    total = grads[0].abs().pow(norm_type).sum()
    for g in grads[1:]:
        total = total + g.abs().pow(norm_type).sum()
    return total.pow(1.0 / norm_type)


def clip_norm(grads: list[Tensor], max_norm: float,
              norm_type: float = 2.0) -> tuple[list[Tensor], Tensor]:
    """Scale ``grads`` by ``min(1, max_norm / (norm + 1e-6))``; also returns the norm.

    The scale stays a tensor, so clipping never waits for the device.
    """
    if not grads:
        raise InvalidArgumentError("clip_norm: no gradients to clip")
    norm = total_norm(grads, norm_type)
    return _scaled(grads, max_norm, norm), norm


def _scaled(grads: list[Tensor], max_norm: float, norm: Tensor) -> list[Tensor]:
    scale = ((norm + 1e-6).recip() * max_norm).clamp(max=1.0)
    return [g * scale for g in grads]


def _with_grads(op: str, parameters: TensorOrTensors,
                grads: Gradients | None) -> tuple[Gradients, list[tuple[Tensor, Tensor]]]:
    """``grads`` and (parameter, its gradient there) for each parameter that has one."""
    if grads is None:
        raise InvalidArgumentError(
            f"{op}: burnpy's gradients are not stored on the parameters but returned by "
            f"backward(); pass them: {op}(model.parameters(), ..., grads=grads)")
    params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    out = []
    for p in params:
        if not p.backend.ad_enabled():
            raise AutodiffError(f"{op}: a parameter of shape {p.shape} is on "
                                f"{p.backend.name()}, which does not track gradients; build "
                                "the model on Autodiff(...)")
        g = p.grad(grads)
        if g is not None:
            out.append((p, g))
    return grads, out


def get_total_norm(tensors: TensorOrTensors, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """The ``norm_type``-norm of ``tensors`` taken as one vector (torch's; 0 for none)."""
    ts = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    if not ts:
        return Tensor.zeros(())
    norm = total_norm(ts, float(norm_type))
    if error_if_nonfinite and not math.isfinite(float(norm.item())):
        raise InvalidArgumentError(f"get_total_norm: the total norm of order {norm_type} is "
                                   "non-finite, so it cannot be clipped")
    return norm


def clip_grads_with_norm_(parameters: TensorOrTensors, max_norm: float, total_norm: Tensor,
                          foreach: bool | None = None, *,
                          grads: Gradients | None = None) -> None:
    """Scale the gradients in ``grads`` of ``parameters`` by
    ``min(1, max_norm / (total_norm + 1e-6))`` (torch's)."""
    found, pairs = _with_grads("clip_grads_with_norm_", parameters, grads)
    if pairs:
        scaled = _scaled([g for _, g in pairs], max_norm, total_norm)
        for (p, _), g in zip(pairs, scaled, strict=True):
            p.grad_replace(found, g)


def clip_grad_norm_(parameters: TensorOrTensors, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach: bool | None = None, *,
                    grads: Gradients | None = None) -> Tensor:
    """Clip, in ``grads``, the gradients of ``parameters`` to a global ``norm_type``-norm of at
    most ``max_norm``; returns their norm before clipping (torch's ``clip_grad_norm_``)."""
    _, pairs = _with_grads("clip_grad_norm_", parameters, grads)
    norm = get_total_norm([g for _, g in pairs], norm_type, error_if_nonfinite)
    clip_grads_with_norm_([p for p, _ in pairs], max_norm, norm, grads=grads)
    return norm


def clip_grad_value_(parameters: TensorOrTensors, clip_value: float,
                     foreach: bool | None = None, *, grads: Gradients | None = None) -> None:
    """Clamp, in ``grads``, every gradient of ``parameters`` to ``[-clip_value, clip_value]``
    (torch's ``clip_grad_value_``)."""
    found, pairs = _with_grads("clip_grad_value_", parameters, grads)
    for p, g in pairs:
        p.grad_replace(found, g.clamp(-clip_value, clip_value))
