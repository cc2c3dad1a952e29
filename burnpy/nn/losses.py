"""Loss functions with torch.nn.functional's signatures (also exported from
``burnpy.nn.functional``). Built on Tensor ops, so they differentiate through Autodiff.

``reduction`` is ``"mean"`` (default), ``"sum"`` or ``"none"`` (the per-element losses).
"""

from __future__ import annotations

import math

from burnpy.backend.errors import (
    IndexOutOfBoundsError,
    InvalidArgumentError,
    KindError,
    ShapeError,
    describe,
)
from burnpy.tensor import Tensor
from burnpy.tensor._core import FLOAT, check_same_backend, new

_REDUCTIONS = ("mean", "sum", "none")


def _check(op: str, reduction: str, x: Tensor) -> None:
    if reduction not in _REDUCTIONS:
        raise InvalidArgumentError(f"{op}: reduction must be one of {_REDUCTIONS}, got "
                                   f"{reduction!r}")
    if x.kind != "float":
        raise KindError(f"{op}: input must be a float tensor, got {x.kind} ({x.dtype!r})")


def _check_same_shape(op: str, x: Tensor, target: Tensor) -> None:
    if target.shape != x.shape:
        raise ShapeError(f"{op}: target shape {describe(target.shape)} differs from the input "
                         f"shape {describe(x.shape)}")


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _class_weight(weight: Tensor, ndim: int) -> Tensor:
    """``weight [C]`` shaped to broadcast along dim 1 of an ``ndim``-d input."""
    return weight.reshape((1, weight.shape[0]) + (1,) * (ndim - 2))


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
             *, ignore_index: int = -100, reduction: str = "mean") -> Tensor:
    """Negative log likelihood of log-probabilities ``input [N, C, *]`` at int ``target [N, *]``
    (or unbatched: ``input [C]``, a 0-d ``target``).

    ``weight [C]`` weighs classes (the mean divides by the summed weights of the targets);
    targets equal to ``ignore_index`` contribute nothing.
    """
    op = "nll_loss"
    _check(op, reduction, input)
    if input.ndim == 1:
        out = nll_loss(input.unsqueeze(0), target.unsqueeze(0), weight,
                       ignore_index=ignore_index, reduction=reduction)
        return out.squeeze(0) if reduction == "none" else out
    picked, _ = _class_weights(op, input, target, weight, ignore_index)
    loss = -(input * picked)
    if reduction == "none":
        return loss.sum(1)
    total = loss.sum()
    return total / picked.sum() if reduction == "mean" else total


def _class_weights(op: str, logp: Tensor, target: Tensor, weight: Tensor | None,
                   ignore_index: int) -> tuple[Tensor, Tensor]:
    """(``[N, C, *]`` weight of each sample's target class, 0 elsewhere and where ignored;
    ``[N, *]`` 1.0 where the target is not ignored). Untracked: one compare, no gather."""
    if target.kind != "int":
        raise KindError(f"{op}: class targets must be an int tensor, got {target.kind}")
    if logp.ndim < 2 or target.shape != (logp.shape[0],) + logp.shape[2:]:
        raise ShapeError(f"{op}: input [N, C, *] {describe(logp.shape)} and target [N, *] "
                         f"{describe(target.shape)} do not fit")
    c = logp.shape[1]
    if weight is not None and weight.shape != (c,):
        raise ShapeError(f"{op}: weight must have shape ({c},), got {describe(weight.shape)}")
    classes = Tensor.arange(c, backend=target.backend, device=target.device)
    one_hot = target.unsqueeze(1) == classes.reshape((1, c) + (1,) * (logp.ndim - 2))
    ignored = target == ignore_index
    if 0 <= ignore_index < c:
        one_hot = one_hot & ~ignored.unsqueeze(1)
    kept = one_hot.any(1)
    if not bool((kept | ignored).all()):
        bad = target.mask_fill(kept | ignored, 0).abs().argmax()
        raise IndexOutOfBoundsError(f"{op}: target {int(target.flatten()[bad])} is out of "
                                    f"range for {c} classes (and is not ignore_index "
                                    f"{ignore_index})")
    picked = one_hot.cast(logp.dtype)
    if weight is not None:
        picked = picked * _class_weight(weight.detach(), logp.ndim)
    return picked, kept.cast(logp.dtype)


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                  *, ignore_index: int = -100, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """Cross entropy of logits ``input [N, C, *]`` (or ``[C]``) against int class indices
    ``[N, *]`` or class probabilities shaped like ``input`` (torch's formula, including
    ``weight``, ``ignore_index`` and ``label_smoothing``)."""
    op = "cross_entropy"
    _check(op, reduction, input)
    if not 0.0 <= label_smoothing <= 1.0:
        raise InvalidArgumentError(f"{op}: label_smoothing must be in [0, 1], got "
                                   f"{label_smoothing}")
    if input.ndim == 1:
        out = cross_entropy(input.unsqueeze(0), target.unsqueeze(0), weight,
                            ignore_index=ignore_index, reduction=reduction,
                            label_smoothing=label_smoothing)
        return out.squeeze(0) if reduction == "none" else out
    c = input.shape[1]
    if (target.kind == "int" and weight is None and not label_smoothing and input.ndim == 2
            and target.shape == (input.shape[0],)):
        return _fused_cross_entropy(input, target, ignore_index, reduction)
    logp = input.log_softmax(1)
    if target.kind == "float":
        if target.shape != input.shape:
            raise ShapeError(
                f"{op}: target of shape {describe(target.shape)} and dtype {target.dtype!r} "
                f"for input of shape {describe(input.shape)} ({input.dtype!r}, "
                f"{input.device}): class indices must be an int tensor (target.long() or "
                f".int()) of shape {describe((input.shape[0], *input.shape[2:]))}; class "
                f"probabilities must be float with the input's shape {describe(input.shape)}")
        if label_smoothing:
            target = target * (1.0 - label_smoothing) + label_smoothing / c
        if weight is not None:
            target = target * _class_weight(weight, input.ndim)
        loss = -(logp * target).sum(1)
        if reduction == "mean":
            return loss.sum() / (input.numel() // c)
        return _reduce(loss, reduction)
    picked, kept = _class_weights(op, logp, target, weight, ignore_index)
    if label_smoothing:
        # (1 - s) * nll + s / c * (the loss against a uniform target), in one product.
        spread = kept.unsqueeze(1) * (label_smoothing / c)
        if weight is not None:
            spread = spread * _class_weight(weight.detach(), input.ndim)
        coefficients = picked * (1.0 - label_smoothing) + spread
    else:
        coefficients = picked
    loss = -(logp * coefficients)
    if reduction == "none":
        return loss.sum(1)
    total = loss.sum()
    return total / picked.sum() if reduction == "mean" else total


def _fused_cross_entropy(logits: Tensor, target: Tensor, ignore_index: int,
                         reduction: str) -> Tensor:
    """Plain cross entropy of ``[n, c]`` logits at class indices, one backend op (the
    common training case); the targets are checked on the host first."""
    check_same_backend("cross_entropy", logits, target)
    c = logits.shape[1]
    labels = target.to_numpy()
    ignored = labels == ignore_index
    bad = ~ignored & ((labels < 0) | (labels >= c))
    if bad.any():
        raise IndexOutOfBoundsError(f"cross_entropy: target {int(labels[bad][0])} is out of "
                                    f"range for {c} classes (and is not ignore_index "
                                    f"{ignore_index})")
    b = logits.backend
    loss = new(b, b.cross_entropy(logits.primitive, target.primitive, ignore_index), FLOAT)
    if reduction == "none":
        return loss
    total = loss.sum()
    if reduction == "sum":
        return total
    kept = len(labels) - int(ignored.sum())
    return total * (1.0 / kept) if kept else total * math.nan


def mse_loss(input: Tensor, target: Tensor, *, reduction: str = "mean") -> Tensor:
    """Squared error ``(input - target)^2``."""
    _check("mse_loss", reduction, input)
    _check_same_shape("mse_loss", input, target)
    return _reduce((input - target).square(), reduction)


def l1_loss(input: Tensor, target: Tensor, *, reduction: str = "mean") -> Tensor:
    """Absolute error ``|input - target|``."""
    _check("l1_loss", reduction, input)
    _check_same_shape("l1_loss", input, target)
    return _reduce((input - target).abs(), reduction)


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean",
               delta: float = 1.0) -> Tensor:
    """Quadratic for ``|d| <= delta``, linear beyond: ``0.5 d^2`` or ``delta (|d| - delta/2)``."""
    _check("huber_loss", reduction, input)
    _check_same_shape("huber_loss", input, target)
    if delta <= 0:
        raise InvalidArgumentError(f"huber_loss: delta must be positive, got {delta}")
    abs_diff = (input - target).abs()
    quadratic = abs_diff.clamp(max=delta)
    loss = quadratic.square() * 0.5 + (abs_diff - quadratic) * delta
    return _reduce(loss, reduction)


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor,
                                     weight: Tensor | None = None, *, reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    """``-[p y log sigmoid(x) + (1 - y) log(1 - sigmoid(x))]``, computed stably from logits.

    ``pos_weight`` (broadcast along the last dim) weighs positives; ``weight`` each element.
    """
    op = "binary_cross_entropy_with_logits"
    _check(op, reduction, input)
    _check_same_shape(op, input, target)
    log_sig = input.log_sigmoid()
    if pos_weight is not None:
        log_sig = log_sig * ((pos_weight - 1.0) * target + 1.0)
    loss = (1.0 - target) * input - log_sig
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)
