"""What every classification head shares: the label fields of ``config.json`` (``id2label``,
``num_labels``, ``problem_type``) and transformers' loss for each ``problem_type``
(regression, single-label, multi-label), written once for the image and sequence
classifiers."""

from __future__ import annotations

from dataclasses import dataclass

from burnpy.backend.errors import ShapeError
from burnpy.models.modeling import ConfigError, PretrainedConfig
from burnpy.nn import functional as F
from burnpy.tensor import Tensor

PROBLEM_TYPES = ("regression", "single_label_classification", "multi_label_classification")


@dataclass(frozen=True)
class ClassificationConfig(PretrainedConfig):
    """A configuration with transformers' label fields: ``num_labels`` is the length of
    ``id2label`` when the file has it (as transformers derives it), else 2."""

    id2label: dict[str, str] | None = None
    num_labels: int = 2
    problem_type: str | None = None

    def __post_init__(self) -> None:
        """Derive ``num_labels`` from ``id2label``; ``ConfigError`` names a field that
        contradicts another or an unknown ``problem_type``."""
        owner = type(self).__name__
        n = self.num_labels
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise ConfigError(f"{owner}: config field num_labels must be an int >= 0, got "
                              f"{n!r}")
        if self.id2label is not None:
            if not isinstance(self.id2label, dict):
                raise ConfigError(f"{owner}: config field id2label must be an object, got "
                                  f"{self.id2label!r}")
            if self.num_labels not in (2, len(self.id2label)):
                raise ConfigError(f"{owner}: config field num_labels ({self.num_labels}) "
                                  f"differs from the {len(self.id2label)} entries of id2label")
            object.__setattr__(self, "num_labels", len(self.id2label))
        if self.problem_type is not None and self.problem_type not in PROBLEM_TYPES:
            raise ConfigError(f"{owner}: config field problem_type is {self.problem_type!r}, "
                              f"not one of {PROBLEM_TYPES}")
        if self.problem_type == "single_label_classification" and self.num_labels == 1:
            raise ConfigError(f"{owner}: config field problem_type is "
                              "'single_label_classification', which needs num_labels > 1")


def problem_type(config: ClassificationConfig, labels: Tensor) -> str:
    """The config's ``problem_type``, else transformers' choice from the labels: regression
    for one label, single-label for int labels, multi-label otherwise. (transformers stores
    the choice in its config; burnpy's config is frozen, so it is made at each call.)"""
    if config.problem_type is not None:
        return config.problem_type
    if config.num_labels == 1:
        return "regression"
    return "single_label_classification" if labels.kind == "int" else \
        "multi_label_classification"


def classification_loss(owner: str, config: ClassificationConfig, logits: Tensor,
                        labels: Tensor) -> Tensor:
    """transformers' loss of ``logits [batch, num_labels]`` against ``labels``: the mean
    squared error for regression, the mean cross entropy against class indices ``[batch]``
    (-100 ignored) for single-label, binary cross entropy with logits against ``[batch,
    num_labels]`` targets for multi-label. Without a ``problem_type`` it is chosen as
    transformers does: regression for one label, single-label for int labels."""
    n = config.num_labels
    problem = problem_type(config, labels)
    if labels.backend is not logits.backend or labels.device != logits.device:
        labels = labels.to_backend(logits.backend, logits.device)
    if problem == "single_label_classification":
        if labels.kind != "int" or labels.numel() != logits.numel() // n:
            raise ShapeError(f"{owner}: single-label classification needs int class indices, "
                             f"one per row of logits {list(logits.shape)}; got "
                             f"{labels.kind} labels {list(labels.shape)}")
        return F.cross_entropy(logits.reshape(-1, n), labels.reshape(-1))
    target = labels.cast(logits.dtype) if labels.dtype != logits.dtype else labels
    if problem == "regression" and n == 1:  # transformers squeezes both
        logits, target = logits.reshape(-1), target.reshape(-1)
    if target.shape != logits.shape:
        raise ShapeError(f"{owner}: {problem} labels must be shaped like the logits "
                         f"{list(logits.shape)}, got {list(labels.shape)}")
    if problem == "regression":
        return F.mse_loss(logits, target)
    return F.binary_cross_entropy_with_logits(logits, target)
