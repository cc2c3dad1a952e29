"""torch.nn's loss modules: each holds its options (``reduction`` and the loss's own) and
calls its ``burnpy.nn.functional`` loss."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from burnpy.backend.device import Device
from burnpy.backend.dtype import DTypeLike
from burnpy.backend.errors import (
    IndexOutOfBoundsError,
    InvalidArgumentError,
    KindError,
    ShapeError,
    describe,
)
from burnpy.nn import functional as F
from burnpy.nn.container import Sequential
from burnpy.nn.functional._common import _host
from burnpy.nn.functional.loss import _check_chunking_options
from burnpy.nn.linear import Linear
from burnpy.nn.module import Module
from burnpy.tensor import Tensor

if TYPE_CHECKING:
    from burnpy.backend.base import Backend


class _Loss(Module):
    """A loss with torch's ``reduction`` ("mean", "sum" or "none")."""

    def __init__(self, *, reduction: str = "mean") -> None:
        self.reduction = reduction

    def extra_repr(self) -> str:
        return f"reduction={self.reduction!r}"


class _WeightedLoss(_Loss):
    """A loss with torch's ``weight`` (per class or element): a buffer, as torch's (saved,
    moved and loaded with the module, never trained)."""

    weight: Tensor | None

    def __init__(self, weight: Tensor | None = None, *, reduction: str = "mean") -> None:
        super().__init__(reduction=reduction)
        self._constant("weight", weight)

    def _constant(self, name: str, value: Tensor | None) -> None:
        """``value`` as the buffer ``name`` (None: no buffer, as torch's)."""
        if value is None:
            setattr(self, name, None)
        else:
            self.register_buffer(name, value)


class L1Loss(_Loss):
    """Mean (or summed) absolute error."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """``|input - target|``, reduced."""
        return F.l1_loss(input, target, reduction=self.reduction)


class MSELoss(_Loss):
    """Mean (or summed) squared error."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """``(input - target)^2``, reduced."""
        return F.mse_loss(input, target, reduction=self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    """Cross entropy of logits against class indices or probabilities."""

    def __init__(self, weight: Tensor | None = None, *, ignore_index: int = -100,
                 reduction: str = "mean", label_smoothing: float = 0.0) -> None:
        super().__init__(weight, reduction=reduction)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """Logits ``[N, C, *]`` against targets ``[N, *]`` (or probabilities)."""
        return F.cross_entropy(input, target, self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction,
                               label_smoothing=self.label_smoothing)


class NLLLoss(_WeightedLoss):
    """Negative log likelihood of log-probabilities at class indices."""

    def __init__(self, weight: Tensor | None = None, *, ignore_index: int = -100,
                 reduction: str = "mean") -> None:
        super().__init__(weight, reduction=reduction)
        self.ignore_index = ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """Log-probabilities ``[N, C, *]`` against class indices ``[N, *]``."""
        return F.nll_loss(input, target, self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class BCELoss(_WeightedLoss):
    """Binary cross entropy of probabilities."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """Probabilities against targets in [0, 1], same shape."""
        return F.binary_cross_entropy(input, target, self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_WeightedLoss):
    """Binary cross entropy of logits (stable), with optional ``pos_weight`` (a buffer too)."""

    pos_weight: Tensor | None

    def __init__(self, weight: Tensor | None = None, *, reduction: str = "mean",
                 pos_weight: Tensor | None = None) -> None:
        super().__init__(weight, reduction=reduction)
        self._constant("pos_weight", pos_weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """Logits against targets in [0, 1], same shape."""
        return F.binary_cross_entropy_with_logits(input, target, self.weight,
                                                  reduction=self.reduction,
                                                  pos_weight=self.pos_weight)


class KLDivLoss(_Loss):
    """KL divergence of log-probabilities from a target distribution."""

    def __init__(self, *, reduction: str = "mean", log_target: bool = False) -> None:
        super().__init__(reduction=reduction)
        self.log_target = log_target

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """Log-probabilities against probabilities (log-probabilities with log_target)."""
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class SmoothL1Loss(_Loss):
    """Quadratic below ``beta``, L1 beyond."""

    def __init__(self, *, reduction: str = "mean", beta: float = 1.0) -> None:
        super().__init__(reduction=reduction)
        self.beta = beta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """The smooth L1 error, reduced."""
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """Quadratic below ``delta``, linear beyond."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """The Huber error, reduced."""
        return F.huber_loss(input, target, self.reduction, self.delta)


class PoissonNLLLoss(_Loss):
    """Poisson negative log likelihood."""

    def __init__(self, log_input: bool = True, full: bool = False, *, eps: float = 1e-8,
                 reduction: str = "mean") -> None:
        super().__init__(reduction=reduction)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input: Tensor, target: Tensor) -> Tensor:
        """Rates (or log rates) against counts."""
        return F.poisson_nll_loss(log_input, target, self.log_input, self.full, eps=self.eps,
                                  reduction=self.reduction)


class GaussianNLLLoss(_Loss):
    """Gaussian negative log likelihood with a predicted variance."""

    def __init__(self, *, full: bool = False, eps: float = 1e-6,
                 reduction: str = "mean") -> None:
        super().__init__(reduction=reduction)
        self.full, self.eps = full, eps

    def forward(self, input: Tensor, target: Tensor, var: Tensor | float) -> Tensor:
        """Means and variances against targets."""
        return F.gaussian_nll_loss(input, target, var, self.full, self.eps, self.reduction)


class MarginRankingLoss(_Loss):
    """``max(0, -y (x1 - x2) + margin)``."""

    def __init__(self, margin: float = 0.0, *, reduction: str = "mean") -> None:
        super().__init__(reduction=reduction)
        self.margin = margin

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        """Scores ranked by labels in {1, -1}."""
        return F.margin_ranking_loss(input1, input2, target, self.margin,
                                     reduction=self.reduction)


class TripletMarginLoss(_Loss):
    """``max(d(a, p) - d(a, n) + margin, 0)``."""

    def __init__(self, margin: float = 1.0, p: float = 2.0, eps: float = 1e-6,
                 swap: bool = False, *, reduction: str = "mean") -> None:
        super().__init__(reduction=reduction)
        self.margin, self.norm, self.eps, self.swap = margin, p, eps, swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        """Embeddings ``[N, D]`` (or ``[D]``) of anchors, positives and negatives."""
        return F.triplet_margin_loss(anchor, positive, negative, self.margin, self.norm,
                                     self.eps, self.swap, reduction=self.reduction)


class CosineEmbeddingLoss(_Loss):
    """``1 - cos`` for similar pairs, ``max(0, cos - margin)`` for dissimilar ones."""

    def __init__(self, margin: float = 0.0, *, reduction: str = "mean") -> None:
        super().__init__(reduction=reduction)
        self.margin = margin

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        """Pairs ``[N, D]`` with labels in {1, -1}."""
        return F.cosine_embedding_loss(input1, input2, target, self.margin,
                                       reduction=self.reduction)


class CTCLoss(_Loss):
    """Connectionist temporal classification loss."""

    def __init__(self, blank: int = 0, reduction: str = "mean",
                 zero_infinity: bool = False) -> None:
        super().__init__(reduction=reduction)
        self.blank, self.zero_infinity = blank, zero_infinity

    def forward(self, log_probs: Tensor, targets: Tensor,
                input_lengths: Tensor | Sequence[int],
                target_lengths: Tensor | Sequence[int]) -> Tensor:
        """``log_probs [T, N, C]`` against label sequences."""
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank,
                          self.reduction, self.zero_infinity)


class HingeEmbeddingLoss(_Loss):
    """``x`` for similar pairs (``y = 1``), ``max(0, margin - x)`` for dissimilar ones."""

    def __init__(self, margin: float = 1.0, *, reduction: str = "mean") -> None:
        super().__init__(reduction=reduction)
        self.margin = margin

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """Distances against labels in {1, -1}, same shape."""
        return F.hinge_embedding_loss(input, target, self.margin, reduction=self.reduction)


class SoftMarginLoss(_Loss):
    """Two-class logistic loss ``log(1 + exp(-y x))``."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """Scores against labels in {1, -1}, same shape."""
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """One-versus-all logistic loss over ``C`` labels, averaged over them."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """Scores ``[N, C]`` against 0/1 targets ``[N, C]``."""
        return F.multilabel_soft_margin_loss(input, target, self.weight,
                                             reduction=self.reduction)


class MultiLabelMarginLoss(_Loss):
    """Multi-label hinge loss: each listed class above each unlisted one by a margin of 1."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """Scores ``[N, C]`` against int ``[N, C]`` class lists ended by -1."""
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class MultiMarginLoss(_WeightedLoss):
    """Multi-class hinge loss ``max(0, margin - x[y] + x[i])^p`` over the other classes."""

    def __init__(self, p: int = 1, margin: float = 1.0, weight: Tensor | None = None, *,
                 reduction: str = "mean") -> None:
        super().__init__(weight, reduction=reduction)
        self.p, self.margin = p, margin

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """Scores ``[N, C]`` against class indices ``[N]``."""
        return F.multi_margin_loss(input, target, self.p, self.margin, self.weight,
                                   reduction=self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    """``max(d(a, p) - d(a, n) + margin, 0)`` with any distance function."""

    def __init__(self, *, distance_function: Callable[[Tensor, Tensor], Tensor] | None = None,
                 margin: float = 1.0, swap: bool = False, reduction: str = "mean") -> None:
        super().__init__(reduction=reduction)
        self.distance_function, self.margin, self.swap = distance_function, margin, swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        """Embeddings of anchors, positives and negatives."""
        return F.triplet_margin_with_distance_loss(
            anchor, positive, negative, distance_function=self.distance_function,
            margin=self.margin, swap=self.swap, reduction=self.reduction)


class LinearCrossEntropyLoss(_WeightedLoss):
    """A bias-free (by default) ``Linear`` to ``num_classes * prod(out_features)`` logits and
    cross entropy on them, as torch's: parameters ``linear.weight`` (flat
    ``[C * prod(out_features), in_features]``) and ``linear.bias``, class ``weight`` a buffer.
    torch's ``options`` may choose any chunking (it saves memory, the result is the same);
    an accumulation dtype or policy is refused."""

    def __init__(self, in_features: int, num_classes: int, *,
                 out_features: tuple[int, ...] = (), bias: bool = False,
                 backend: type[Backend] | None = None, device: Device | None = None,
                 dtype: DTypeLike | None = None, reduction: str = "mean",
                 weight: Tensor | None = None, ignore_index: int | None = None,
                 label_smoothing: float = 0.0, options: object = None) -> None:
        _check_chunking_options("LinearCrossEntropyLoss", options)
        if weight is not None and weight.shape != (num_classes,):
            raise ShapeError(f"LinearCrossEntropyLoss: weight must have shape ({num_classes},), "
                             f"got {describe(weight.shape)}")
        if not 0.0 <= label_smoothing <= 1.0:
            raise InvalidArgumentError(f"LinearCrossEntropyLoss: label_smoothing must be in "
                                       f"[0, 1], got {label_smoothing}")
        super().__init__(weight, reduction=reduction)
        self.num_classes, self.out_features = num_classes, tuple(out_features)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing
        self.linear = Linear(in_features, math.prod(self.out_features) * num_classes, bias,
                             backend=backend, device=device, dtype=dtype)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """Features ``[N, in_features]`` (or ``[in_features]``) against class indices
        ``[N, *out_features]`` or class probabilities ``[N, C, *out_features]``."""
        classes = (self.num_classes, *self.out_features)
        bias = self.linear.bias
        return F.linear_cross_entropy(
            input, self.linear.weight.reshape(*classes, self.linear.in_features), target,
            linear_bias=None if bias is None else bias.reshape(classes), weight=self.weight,
            reduction=self.reduction, ignore_index=self.ignore_index,
            label_smoothing=self.label_smoothing)

    def extra_repr(self) -> str:
        return (f"in_features={self.linear.in_features}, num_classes={self.num_classes}, "
                f"out_features={self.out_features}, bias={self.linear.bias is not None}, "
                f"reduction={self.reduction}, ignore_index={self.ignore_index}, "
                f"label_smoothing={self.label_smoothing}")


class ASMoutput(NamedTuple):
    """What ``AdaptiveLogSoftmaxWithLoss`` returns: each sample's log-probability of its
    target, and the mean negative of them."""

    output: Tensor
    loss: Tensor


class AdaptiveLogSoftmaxWithLoss(Module):
    """Efficient softmax over many classes (Grave et al.): a ``head`` Linear scores the
    ``cutoffs[0]`` frequent classes and one entry per cluster; cluster ``i`` has a ``tail``
    of two bias-free Linears (``in_features // div_value**(i+1)`` wide) over its classes.
    torch's parameter names (``head.weight``, ``tail.0.0.weight``...) and initialization."""

    def __init__(self, in_features: int, n_classes: int, cutoffs: Sequence[int],
                 div_value: float = 4.0, head_bias: bool = False, *,
                 backend: type[Backend] | None = None, device: Device | None = None,
                 dtype: DTypeLike | None = None) -> None:
        cuts = list(cutoffs)
        if (not cuts or cuts != sorted(cuts) or min(cuts) <= 0 or max(cuts) > n_classes - 1
                or len(set(cuts)) != len(cuts) or any(int(c) != c for c in cuts)):
            raise InvalidArgumentError(
                f"AdaptiveLogSoftmaxWithLoss: cutoffs {cuts} must be unique positive ints in "
                f"increasing order, each between 1 and n_classes - 1 = {n_classes - 1}")
        self.in_features, self.n_classes = in_features, n_classes
        self.cutoffs = [int(c) for c in cuts] + [n_classes]
        self.div_value, self.head_bias = div_value, head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        kw: dict[str, Any] = {"backend": backend, "device": device, "dtype": dtype}
        self.head = Linear(in_features, self.head_size, head_bias, **kw)
        self.tail = [Sequential(Linear(in_features, hidden, False, **kw),
                                Linear(hidden, high - low, False, **kw))
                     for i, (low, high) in enumerate(itertools.pairwise(self.cutoffs))
                     for hidden in [int(in_features // (div_value ** (i + 1)))]]

    def forward(self, input: Tensor, target: Tensor) -> ASMoutput:
        """``input [N, in_features]`` and int ``target [N]`` (or ``[in_features]`` and a 0-d
        target) -> ``(output [N], loss)``: each target's log-probability and their mean
        negative."""
        name = "AdaptiveLogSoftmaxWithLoss"
        if target.ndim > 1 or input.ndim != target.ndim + 1 or (
                target.ndim == 1 and input.shape[0] != target.shape[0]):
            raise ShapeError(f"{name}: input [N, in_features] and target [N] (or "
                             f"[in_features] and a 0-d target) expected, got input "
                             f"{describe(input.shape)} and target {describe(target.shape)}")
        if target.kind != "int":
            raise KindError(f"{name}: target must be an int tensor, got {target.kind}")
        batched = target.ndim == 1
        x = input if batched else input.unsqueeze(0)
        labels = np.asarray(target.to_numpy()).reshape(-1).astype(np.int64)
        if labels.size and (labels.min() < 0 or labels.max() >= self.n_classes):
            raise IndexOutOfBoundsError(f"{name}: target values must be in [0, "
                                        f"{self.n_classes - 1}], got [{labels.min()}, "
                                        f"{labels.max()}]")
        cluster = np.searchsorted(np.asarray(self.cutoffs), labels, side="right")
        head_column = np.where(cluster == 0, labels, self.shortlist_size + cluster - 1)
        head_logprob = self.head(x).log_softmax(1)
        out = head_logprob.gather(1, _host(x, head_column).unsqueeze(1)).squeeze(1)
        order = [np.flatnonzero(cluster == 0)]
        parts = [Tensor.zeros((len(order[0]),), backend=x.backend, device=x.device,
                              dtype=x.dtype)]
        for i, low in enumerate(self.cutoffs[:-1]):
            rows = np.flatnonzero(cluster == i + 1)
            if not len(rows):
                continue
            logprob = self.tail[i](x.index_select(0, _host(x, rows))).log_softmax(1)
            parts.append(logprob.gather(1, _host(x, labels[rows] - low).unsqueeze(1))
                         .squeeze(1))
            order.append(rows)
        restore = np.argsort(np.concatenate(order), kind="stable")
        out = out + Tensor.cat(parts).index_select(0, _host(x, restore))
        return ASMoutput(out if batched else out.squeeze(0), (-out).mean())

    def log_prob(self, input: Tensor) -> Tensor:
        """Log-probabilities ``[N, n_classes]`` of every class for ``input [N, in_features]``."""
        head_logprob = self.head(input).log_softmax(1)
        parts = [head_logprob[:, :self.shortlist_size]]
        for i, tail in enumerate(self.tail):
            parts.append(tail(input).log_softmax(1)
                         + head_logprob[:, self.shortlist_size + i].unsqueeze(1))
        return Tensor.cat(parts, 1)

    def predict(self, input: Tensor) -> Tensor:
        """The most probable class ``[N]`` of each row of ``input [N, in_features]`` (the
        head alone decides when it picks a frequent class for every row)."""
        best = self.head(input).argmax(1)
        if not bool((best >= self.shortlist_size).any()):
            return best
        return self.log_prob(input).argmax(1)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, n_classes={self.n_classes}, "
                f"cutoffs={self.cutoffs[:-1]}, div_value={self.div_value}, "
                f"head_bias={self.head_bias}")

