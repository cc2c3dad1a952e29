"""Loss functions with torch.nn.functional's signatures, built on Tensor ops, so they
differentiate in both modes on every backend (plain cross entropy of ``[n, c]`` logits is one
backend op).

``reduction`` is ``"mean"`` (default), ``"sum"`` or ``"none"`` (the per-element losses).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from burnpy.backend.errors import (
    IndexOutOfBoundsError,
    InvalidArgumentError,
    KindError,
    ShapeError,
    describe,
)
from burnpy.capture import check_values, recording_active
from burnpy.nn.functional._common import _host
from burnpy.nn.functional.distance import pairwise_distance
from burnpy.nn.functional.linear import linear
from burnpy.tensor import Tensor
from burnpy.tensor._core import FLOAT, check_same_backend, new
from burnpy.tensor.autocast_hook import autocast_op

if TYPE_CHECKING:
    from burnpy.backend.base import Backend

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


def _as_float(target: Tensor, input: Tensor) -> Tensor:
    """An int or bool ``target`` in ``input``'s float dtype, as torch's type promotion."""
    return target if target.kind == "float" else target.cast(input.dtype)


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _class_weight(weight: Tensor, ndim: int) -> Tensor:
    """``weight [C]`` shaped to broadcast along dim 1 of an ``ndim``-d input."""
    return weight.reshape((1, weight.shape[0]) + (1,) * (ndim - 2))


@autocast_op("nll_loss")
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


@autocast_op("cross_entropy")
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


def _check_targets(classes: int, ignore_index: int, b: type[Backend], p: Any) -> np.ndarray:
    """The int targets ``p`` of ``b`` on the host, raising unless each is a class index in
    ``[0, classes)`` or ``ignore_index``."""
    labels = b.int_into_data(p).array
    bad = (labels != ignore_index) & ((labels < 0) | (labels >= classes))
    if bad.any():
        raise IndexOutOfBoundsError(f"cross_entropy: target {int(labels[bad][0])} is out of "
                                    f"range for {classes} classes (and is not ignore_index "
                                    f"{ignore_index})")
    return labels


def _fused_cross_entropy(logits: Tensor, target: Tensor, ignore_index: int,
                         reduction: str) -> Tensor:
    """Plain cross entropy of ``[n, c]`` logits at class indices, one backend op (the
    common training case); the targets are checked on the host first, except while a
    ``Capture`` recording is active (``bp.compile``), whose replays read no values on the host."""
    check_same_backend("cross_entropy", logits, target)
    c = logits.shape[1]
    recording = recording_active()
    if recording:  # kept in the graph: each replay checks its targets again
        check_values(target.primitive, functools.partial(_check_targets, c, ignore_index))
    else:
        labels = _check_targets(c, ignore_index, target.backend, target.primitive)
    b = logits.backend
    loss = new(b, b.cross_entropy(logits.primitive, target.primitive, ignore_index), FLOAT)
    if reduction == "none":
        return loss
    total = loss.sum()
    if reduction == "sum":
        return total
    if recording:  # the count of kept targets stays on the device
        return total * target.not_equal(ignore_index).float().sum().recip()
    kept = len(labels) - int((labels == ignore_index).sum())
    return total * (1.0 / kept) if kept else total * math.nan


@autocast_op("mse_loss")
def mse_loss(input: Tensor, target: Tensor, *, reduction: str = "mean") -> Tensor:
    """Squared error ``(input - target)^2``."""
    _check("mse_loss", reduction, input)
    _check_same_shape("mse_loss", input, target)
    return _reduce((input - target).square(), reduction)


@autocast_op("l1_loss")
def l1_loss(input: Tensor, target: Tensor, *, reduction: str = "mean") -> Tensor:
    """Absolute error ``|input - target|``."""
    _check("l1_loss", reduction, input)
    _check_same_shape("l1_loss", input, target)
    return _reduce((input - target).abs(), reduction)


@autocast_op("huber_loss")
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


@autocast_op("binary_cross_entropy_with_logits")
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


@autocast_op("kl_div")
def kl_div(input: Tensor, target: Tensor, *, reduction: str = "mean",
           log_target: bool = False) -> Tensor:
    """KL divergence ``target * (log target - input)`` of log-probabilities ``input``
    (``reduction="batchmean"``: the sum divided by the batch size; 0 where target is 0)."""
    op = "kl_div"
    _check(op, "mean" if reduction == "batchmean" else reduction, input)
    if log_target:
        loss = target.exp() * (target - input)
    else:
        safe = target.mask_fill(target == 0, 1.0)
        loss = target * (safe.log() - input)
    if reduction == "batchmean":
        return loss.sum() / (input.shape[0] if input.ndim else 1)
    return _reduce(loss, reduction)


@autocast_op("smooth_l1_loss")
def smooth_l1_loss(input: Tensor, target: Tensor, *, reduction: str = "mean",
                   beta: float = 1.0) -> Tensor:
    """``0.5 d^2 / beta`` for ``|d| < beta``, ``|d| - beta / 2`` beyond (beta = 0: L1)."""
    op = "smooth_l1_loss"
    _check(op, reduction, input)
    _check_same_shape(op, input, target)
    if beta < 0:
        raise InvalidArgumentError(f"{op}: beta must be >= 0, got {beta}")
    abs_diff = (input - target).abs()
    if beta == 0:
        return _reduce(abs_diff, reduction)
    quadratic = abs_diff.clamp(max=beta)
    return _reduce(quadratic.square() * (0.5 / beta) + (abs_diff - quadratic), reduction)


@autocast_op("binary_cross_entropy")
def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                         *, reduction: str = "mean") -> Tensor:
    """``-[y log x + (1 - y) log(1 - x)]`` of probabilities ``x``, each log clamped at -100
    (torch's)."""
    op = "binary_cross_entropy"
    _check(op, reduction, input)
    _check_same_shape(op, input, target)
    loss = -(target * input.log().clamp(min=-100.0)
             + (1.0 - target) * (1.0 - input).log().clamp(min=-100.0))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


@autocast_op("poisson_nll_loss")
def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True,
                     full: bool = False, *, eps: float = 1e-8,
                     reduction: str = "mean") -> Tensor:
    """Poisson negative log likelihood: ``exp(x) - y x`` for a log rate (``log_input``),
    ``x - y log(x + eps)`` for a rate; ``full`` adds Stirling's ``log(y!)`` term for y > 1."""
    op = "poisson_nll_loss"
    _check(op, reduction, input)
    loss = input.exp() - target * input if log_input else input - target * (input + eps).log()
    if full:
        safe = target.mask_fill(target <= 1, 1.0)
        stirling = safe * safe.log() - safe + (safe * (2 * math.pi)).log() * 0.5
        loss = loss + stirling.mask_fill(target <= 1, 0.0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(input: Tensor, target: Tensor, var: Tensor | float, full: bool = False,
                      eps: float = 1e-6, reduction: str = "mean") -> Tensor:
    """``0.5 (log var + (x - y)^2 / var)`` (+ ``0.5 log 2 pi`` when ``full``), ``var``
    clamped below at ``eps`` for the value only (the gradient passes as torch's)."""
    op = "gaussian_nll_loss"
    _check(op, reduction, input)
    if not isinstance(var, Tensor):
        if var < 0:
            raise InvalidArgumentError(f"{op}: var must not be negative, got {var}")
        var = input.full_like(float(var))
    if var.shape != input.shape:
        if input.shape[:-1] == var.shape:
            var = var.unsqueeze(-1)
        elif var.ndim != input.ndim or sum(
                v for i, v in zip(input.shape, var.shape, strict=True) if i != v) != 1:
            raise ShapeError(f"{op}: var {describe(var.shape)} does not fit input "
                             f"{describe(input.shape)}: it must have its shape, that shape "
                             "without the last dim, or size 1 in one dim where they differ")
    if bool((var < 0).any()):
        raise InvalidArgumentError(f"{op}: var has negative entries")
    var = var + (var.clamp(min=eps) - var).detach()
    loss = (var.log() + (input - target).square() / var) * 0.5
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


@autocast_op("margin_ranking_loss")
def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        *, reduction: str = "mean") -> Tensor:
    """``max(0, -y (x1 - x2) + margin)`` for labels ``y`` in {1, -1} (int labels promoted to
    the inputs' dtype, as torch's)."""
    _check("margin_ranking_loss", reduction, input1)
    y = _as_float(target, input1)
    return _reduce((-y * (input1 - input2) + margin).clamp(min=0.0), reduction)


@autocast_op("triplet_margin_loss")
def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor,
                        margin: float = 1.0, p: float = 2.0, eps: float = 1e-6,
                        swap: bool = False, *, reduction: str = "mean") -> Tensor:
    """``max(d(a, p) - d(a, n) + margin, 0)`` with the ``p``-norm pairwise distance
    (``swap``: d(a, n) replaced by d(p, n) where smaller)."""
    _check("triplet_margin_loss", reduction, anchor)
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = d_neg.minimum(pairwise_distance(positive, negative, p, eps))
    return _reduce((d_pos - d_neg + margin).clamp(min=0.0), reduction)


@autocast_op("cosine_embedding_loss")
def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                          *, reduction: str = "mean") -> Tensor:
    """``1 - cos(x1, x2)`` where ``y = 1``, ``max(0, cos(x1, x2) - margin)`` where
    ``y = -1`` (cosine along the last dim, torch's 1e-12 guard)."""
    _check("cosine_embedding_loss", reduction, input1)
    dim = input1.ndim - 1
    dot = (input1 * input2).sum(dim)
    cos = dot / ((input1.square().sum(dim) + 1e-12) * (input2.square().sum(dim) + 1e-12)).sqrt()
    positive = (1.0 - cos).mask_fill(target != 1, 0.0)
    negative = (cos - margin).clamp(min=0.0).mask_fill(target != -1, 0.0)
    return _reduce(positive + negative, reduction)


_NEG = -1e30  # log(0) in the CTC recursion: finite, so the gradient of logsumexp stays finite


@autocast_op("ctc_loss")
def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths: Tensor | Sequence[int],
             target_lengths: Tensor | Sequence[int], blank: int = 0, reduction: str = "mean",
             zero_infinity: bool = False) -> Tensor:
    """Connectionist temporal classification loss of ``log_probs [T, N, C]`` (or ``[T, C]``)
    against ``targets [N, S]`` (or concatenated, 1-d), by the log-space forward recursion.

    ``"mean"`` divides each sample's loss by its target length, then averages; an impossible
    alignment costs inf (0 with ``zero_infinity``)."""
    op = "ctc_loss"
    _check(op, reduction, log_probs)
    if log_probs.ndim == 2:
        out = ctc_loss(log_probs.unsqueeze(1), targets.reshape(1, -1) if targets.ndim == 1
                       else targets, input_lengths, target_lengths, blank, reduction,
                       zero_infinity)
        return out.squeeze(0) if reduction == "none" else out
    if log_probs.ndim != 3:
        raise ShapeError(f"{op}: log_probs must be [T, N, C], got {describe(log_probs.shape)}")
    t_max, n, c = log_probs.shape
    lengths_in = [int(v) for v in (input_lengths.tolist() if isinstance(input_lengths, Tensor)
                                   else input_lengths)]
    lengths_tg = [int(v) for v in (target_lengths.tolist() if isinstance(target_lengths, Tensor)
                                   else target_lengths)]
    labels = np.asarray(targets.to_numpy()).astype(np.int64)
    if len(lengths_in) != n or len(lengths_tg) != n:
        raise ShapeError(f"{op}: input_lengths and target_lengths need {n} entries")
    if not 0 <= blank < c:
        raise InvalidArgumentError(f"{op}: blank {blank} is not a class of {c}")
    offsets = np.concatenate([[0], np.cumsum(lengths_tg)])
    losses = []
    for b in range(n):
        steps, length = lengths_in[b], lengths_tg[b]
        if not 0 < steps <= t_max:
            raise ShapeError(f"{op}: input length {steps} is not in [1, {t_max}]")
        row = labels[b, :length] if labels.ndim == 2 else labels[offsets[b]:offsets[b + 1]]
        if len(row) != length or ((row < 0) | (row >= c) | (row == blank)).any():
            raise InvalidArgumentError(f"{op}: targets of sample {b} must be {length} "
                                       f"non-blank classes in [0, {c})")
        ext = np.full(2 * length + 1, blank, dtype=np.int64)
        ext[1::2] = row
        skip = np.zeros(len(ext), dtype=bool)
        skip[3::2] = row[1:] != row[:-1]  # a label may follow the previous one past a blank
        emissions = log_probs[:steps, b, :].index_select(1, [int(v) for v in ext])
        start = np.full(len(ext), _NEG)
        start[:2] = 0.0
        alpha = emissions[0] + _host(log_probs, start)
        pad1 = Tensor.full((1,), _NEG, backend=log_probs.backend, device=log_probs.device,
                           dtype=log_probs.dtype)
        pad2 = Tensor.full((2,), _NEG, backend=log_probs.backend, device=log_probs.device,
                           dtype=log_probs.dtype)
        skip_mask = _host(log_probs, ~skip)
        for t in range(1, steps):
            one = Tensor.cat([pad1, alpha[:-1]])
            two = Tensor.cat([pad2, alpha[:-2]]).mask_fill(skip_mask, _NEG)
            alpha = Tensor.stack([alpha, one, two]).logsumexp(0) + emissions[t]
        tail = alpha[-2:] if length else alpha[-1:]
        losses.append(-tail.logsumexp(0))
    loss = Tensor.stack(losses)
    impossible = loss > -_NEG / 2
    loss = loss.mask_fill(impossible, 0.0 if zero_infinity else math.inf)
    if reduction == "mean":
        divisor = _host(log_probs, np.maximum(np.asarray(lengths_tg, dtype=np.float64), 1.0))
        return (loss / divisor).mean()
    return _reduce(loss, reduction)


@autocast_op("hinge_embedding_loss")
def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, *,
                         reduction: str = "mean") -> Tensor:
    """``x`` where ``y = 1``, ``max(0, margin - x)`` where ``y = -1`` (a label in neither set
    gets both terms, as torch's)."""
    op = "hinge_embedding_loss"
    _check(op, reduction, input)
    _check_same_shape(op, input, target)
    below_margin = (margin - input).clamp(min=0.0).mask_fill(target == 1, 0.0)
    return _reduce(below_margin + input.mask_fill(target == -1, 0.0), reduction)


@autocast_op("soft_margin_loss")
def soft_margin_loss(input: Tensor, target: Tensor, *, reduction: str = "mean") -> Tensor:
    """Two-class logistic loss ``log(1 + exp(-y x))`` for labels ``y`` in {1, -1}."""
    op = "soft_margin_loss"
    _check(op, reduction, input)
    _check_same_shape(op, input, target)
    return _reduce((-(target * input)).softplus(), reduction)


def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                *, reduction: str = "mean") -> Tensor:
    """One-versus-all logistic loss of ``input [N, C]`` (or ``[C]``) against 0/1 ``target``
    (float or int), ``weight [C]`` weighing classes, averaged over the classes: one value per
    sample."""
    op = "multilabel_soft_margin_loss"
    _check(op, reduction, input)
    _check_same_shape(op, input, target)
    if input.ndim not in (1, 2):
        raise ShapeError(f"{op}: input must be [N, C] or [C], got {describe(input.shape)}")
    target = _as_float(target, input)
    loss = -(target * input.log_sigmoid() + (1.0 - target) * (-input).log_sigmoid())
    if weight is not None:
        loss = loss * weight
    return _reduce(loss.sum(input.ndim - 1) / input.shape[-1], reduction)


def _margin_batch(op: str, input: Tensor, target: Tensor, target_ndim: int) -> tuple[Tensor,
                                                                                     Tensor]:
    """``input`` as ``[N, C]`` and int ``target`` as ``[N]`` (``target_ndim`` 1) or ``[N, C]``
    (2), an unbatched pair given a batch of one."""
    if target.kind != "int":
        raise KindError(f"{op}: target must be an int tensor of class indices, got "
                        f"{target.kind}")
    if input.ndim not in (1, 2) or target.ndim != input.ndim + target_ndim - 2:
        want = "[N] (or 0-d for an input [C])" if target_ndim == 1 else "[N, C] (or [C])"
        raise ShapeError(f"{op}: input must be [N, C] or [C] and target {want}, got input "
                         f"{describe(input.shape)} and target {describe(target.shape)}")
    if input.ndim == 1:
        input, target = input.unsqueeze(0), target.unsqueeze(0)
    if target.shape[0] != input.shape[0] or (target_ndim == 2 and target.shape != input.shape):
        raise ShapeError(f"{op}: input {describe(input.shape)} and target "
                         f"{describe(target.shape)} do not fit")
    return input, target


@autocast_op("multi_margin_loss")
def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0,
                      weight: Tensor | None = None, *, reduction: str = "mean") -> Tensor:
    """Multi-class hinge loss of ``input [N, C]`` (or ``[C]``) at class indices:
    ``sum_{i != y} w[y] max(0, margin - x[y] + x[i])^p / C`` per sample (``p`` is 1 or 2;
    ``weight [C]`` is a constant, as torch's, which gives it no gradient)."""
    op = "multi_margin_loss"
    _check(op, reduction, input)
    if p not in (1, 2):
        raise InvalidArgumentError(f"{op}: p must be 1 or 2, got {p}")
    unbatched = input.ndim == 1
    x, t = _margin_batch(op, input, target, 1)
    n, c = x.shape
    if weight is not None and weight.shape != (c,):
        raise ShapeError(f"{op}: weight must have shape ({c},), got {describe(weight.shape)}")
    if n and not bool(((t >= 0) & (t < c)).all()):
        raise IndexOutOfBoundsError(f"{op}: a target is out of range for {c} classes")
    column = t.unsqueeze(1)
    z = (x - x.gather(1, column) + margin).clamp(min=0.0)
    if p == 2:
        z = z.square()
    if weight is not None:
        z = z * weight.detach().gather(0, t).unsqueeze(1)
    classes = Tensor.arange(c, backend=t.backend, device=t.device).unsqueeze(0)
    loss = z.mask_fill(column == classes, 0.0).sum(1) / c
    return _reduce(loss.squeeze(0) if unbatched else loss, reduction)


@autocast_op("multilabel_margin_loss")
def multilabel_margin_loss(input: Tensor, target: Tensor, *, reduction: str = "mean") -> Tensor:
    """Multi-label hinge loss of ``input [N, C]`` (or ``[C]``): each row of int ``target``
    (values in ``[-1, C)``) lists the sample's classes up to its first -1;
    ``sum_{j listed} sum_{i not listed} max(0, 1 - (x[j] - x[i])) / C`` per sample."""
    op = "multilabel_margin_loss"
    _check(op, reduction, input)
    unbatched = input.ndim == 1
    x, t = _margin_batch(op, input, target, 2)
    n, c = x.shape
    labels = np.asarray(t.to_numpy()).astype(np.int64)
    bad = (labels < -1) | (labels >= c)
    if bad.any():  # anywhere, past the end of the list too, as torch's check
        raise IndexOutOfBoundsError(f"{op}: target {int(labels[bad][0])} is out of range "
                                    f"[-1, {c}) for {c} classes")
    listed = np.cumprod(labels >= 0, axis=1).astype(bool)  # up to the first -1
    counts = np.zeros((n, c))
    rows = np.broadcast_to(np.arange(n)[:, None], labels.shape)
    np.add.at(counts, (rows[listed], labels[listed]), 1.0)
    pairs = counts[:, :, None] * (counts == 0)[:, None, :]  # [n, listed j, unlisted i]
    z = (1.0 - x.unsqueeze(2) + x.unsqueeze(1)).clamp(min=0.0)
    loss = (z * _host(x, pairs)).sum((1, 2)) / c
    return _reduce(loss.squeeze(0) if unbatched else loss, reduction)


def triplet_margin_with_distance_loss(
        anchor: Tensor, positive: Tensor, negative: Tensor, *,
        distance_function: Callable[[Tensor, Tensor], Tensor] | None = None,
        margin: float = 1.0, swap: bool = False, reduction: str = "mean") -> Tensor:
    """``max(d(a, p) - d(a, n) + margin, 0)`` with any ``distance_function`` (default the
    pairwise Euclidean distance; ``swap``: d(a, n) replaced by d(p, n) where smaller)."""
    op = "triplet_margin_with_distance_loss"
    _check(op, reduction, anchor)
    if margin <= 0:
        raise InvalidArgumentError(f"{op}: margin must be greater than 0, got {margin}")
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise ShapeError(f"{op}: anchor, positive and negative must have the same number of "
                         f"dims, got {describe(anchor.shape)}, {describe(positive.shape)} and "
                         f"{describe(negative.shape)}")
    distance = pairwise_distance if distance_function is None else distance_function
    d_pos, d_neg = distance(anchor, positive), distance(anchor, negative)
    if swap:
        d_neg = d_neg.minimum(distance(positive, negative))
    return _reduce((d_pos - d_neg + margin).clamp(min=0.0), reduction)


def _check_chunking_options(op: str, options: object) -> None:
    """Take torch's ``LinearCrossEntropyOptions`` where they only choose a chunking (the
    result is the same: burnpy computes unchunked), refuse an accumulation dtype or policy,
    which would change the numbers."""
    if options is not None and (getattr(options, "acc_dtype", None) is not None
                                or getattr(options, "acc_policy", "auto") != "auto"):
        raise InvalidArgumentError(
            f"{op}: options={options!r}: an accumulation dtype or policy other than 'auto' is "
            "not taken (burnpy accumulates in the input's dtype, unchunked)")


def linear_cross_entropy(input: Tensor, linear_weight: Tensor, target: Tensor, *,
                         linear_bias: Tensor | None = None, weight: Tensor | None = None,
                         reduction: str = "mean", ignore_index: int | None = None,
                         label_smoothing: float = 0.0, options: object = None) -> Tensor:
    """``cross_entropy(linear(input, linear_weight, linear_bias), target, ...)`` for
    ``input [N, in]`` (or ``[in]``) and ``linear_weight [C, d_1.., d_K, in]``: logits
    ``[N, C, d_1.., d_K]``, targets as ``cross_entropy``'s (``ignore_index`` None means -100
    and is refused with class probabilities). torch's ``options``
    (``LinearCrossEntropyOptions``) choose how to chunk the batch to save memory, which does
    not change the result: burnpy computes the logits unchunked whatever the chunking, and
    refuses options that would change the numbers (an accumulation dtype or policy)."""
    op = "linear_cross_entropy"
    _check(op, reduction, input)
    _check_chunking_options(op, options)
    if input.ndim not in (1, 2) or linear_weight.ndim < 2 or (
            input.shape[-1] != linear_weight.shape[-1]):
        raise ShapeError(f"{op}: input [N, in] or [in] {describe(input.shape)} and "
                         f"linear_weight [C, *out_features, in] {describe(linear_weight.shape)} "
                         "do not fit")
    classes = linear_weight.shape[:-1]
    if linear_bias is not None and linear_bias.shape != classes:
        raise ShapeError(f"{op}: linear_bias must have shape {describe(classes)}, got "
                         f"{describe(linear_bias.shape)}")
    if len(classes) > 1 and input.ndim == 1:
        raise ShapeError(f"{op}: out_features {describe(classes[1:])} need a batched input "
                         f"[N, in], got {describe(input.shape)}")
    logits_shape = (*input.shape[:-1], *classes)
    if target.shape == logits_shape and ignore_index is not None:
        raise InvalidArgumentError(f"{op}: ignore_index cannot be given with class "
                                   "probabilities as the target")
    flat = math.prod(classes)
    logits = linear(input, linear_weight.reshape(flat, linear_weight.shape[-1]),
                    None if linear_bias is None else linear_bias.reshape(flat))
    return cross_entropy(logits.reshape(logits_shape), target, weight,
                         ignore_index=-100 if ignore_index is None else ignore_index,
                         reduction=reduction, label_smoothing=label_smoothing)
