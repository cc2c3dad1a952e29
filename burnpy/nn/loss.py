"""torch.nn's loss modules: each holds its options (``reduction`` and the loss's own) and
calls its ``burnpy.nn.functional`` loss."""

from __future__ import annotations

from collections.abc import Sequence

from burnpy.nn import functional as F
from burnpy.nn.module import Module
from burnpy.tensor import Tensor


class _Loss(Module):
    """A loss with torch's ``reduction`` ("mean", "sum" or "none")."""

    def __init__(self, *, reduction: str = "mean") -> None:
        self.reduction = reduction

    def extra_repr(self) -> str:
        return f"reduction={self.reduction!r}"


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


class CrossEntropyLoss(_Loss):
    """Cross entropy of logits against class indices or probabilities."""

    def __init__(self, weight: Tensor | None = None, *, ignore_index: int = -100,
                 reduction: str = "mean", label_smoothing: float = 0.0) -> None:
        super().__init__(reduction=reduction)
        self.weight, self.ignore_index, self.label_smoothing = (weight, ignore_index,
                                                                label_smoothing)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """Logits ``[N, C, *]`` against targets ``[N, *]`` (or probabilities)."""
        return F.cross_entropy(input, target, self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction,
                               label_smoothing=self.label_smoothing)


class NLLLoss(_Loss):
    """Negative log likelihood of log-probabilities at class indices."""

    def __init__(self, weight: Tensor | None = None, *, ignore_index: int = -100,
                 reduction: str = "mean") -> None:
        super().__init__(reduction=reduction)
        self.weight, self.ignore_index = weight, ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """Log-probabilities ``[N, C, *]`` against class indices ``[N, *]``."""
        return F.nll_loss(input, target, self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class BCELoss(_Loss):
    """Binary cross entropy of probabilities."""

    def __init__(self, weight: Tensor | None = None, *, reduction: str = "mean") -> None:
        super().__init__(reduction=reduction)
        self.weight = weight

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """Probabilities against targets in [0, 1], same shape."""
        return F.binary_cross_entropy(input, target, self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Binary cross entropy of logits (stable), with optional ``pos_weight``."""

    def __init__(self, weight: Tensor | None = None, *, reduction: str = "mean",
                 pos_weight: Tensor | None = None) -> None:
        super().__init__(reduction=reduction)
        self.weight, self.pos_weight = weight, pos_weight

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

    def forward(self, input: Tensor, target: Tensor, var: Tensor) -> Tensor:
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
