"""Metrics accumulated over an epoch: the Learner always tracks the loss; add ``Accuracy``."""

from __future__ import annotations

from abc import ABC, abstractmethod

from burnpy.backend.errors import ShapeError, describe
from burnpy.tensor import Tensor


class Metric(ABC):
    """A running value over the batches of one epoch."""

    name: str = "metric"
    #: Shown as a percentage in logs and progress bars.
    percent: bool = False

    @abstractmethod
    def reset(self) -> None:
        """Forget the previous epoch."""

    @abstractmethod
    def update(self, output: Tensor, targets: Tensor) -> None:
        """Account for one batch's model output and targets."""

    @abstractmethod
    def value(self) -> float:
        """The metric over the batches seen since ``reset`` (NaN before any)."""

    def format(self, value: float) -> str:
        """``value`` as shown in logs: a percentage when ``percent``, else 4 decimals."""
        return f"{value * 100:.2f}%" if self.percent else f"{value:.4f}"


class Accuracy(Metric):
    """The fraction of samples whose highest-scoring class (dim 1) is the target class."""

    name = "accuracy"
    percent = True

    def __init__(self) -> None:
        self.correct = 0
        self.total = 0

    def reset(self) -> None:
        self.correct = 0
        self.total = 0

    def update(self, output: Tensor, targets: Tensor) -> None:
        if output.ndim < 2 or targets.shape != output.shape[:1] + output.shape[2:]:
            raise ShapeError(f"Accuracy: output [N, C, *] {describe(output.shape)} and targets "
                             f"[N, *] {describe(targets.shape)} do not fit")
        self.correct += int((output.argmax(1) == targets).sum().item())
        self.total += targets.numel()

    def value(self) -> float:
        return self.correct / self.total if self.total else float("nan")


class Mean:
    """A sample-weighted running mean (the epoch loss)."""

    def __init__(self) -> None:
        self.total = 0.0
        self.count = 0

    def add(self, value: float, n: int) -> None:
        """Account for ``n`` samples whose mean is ``value``."""
        self.total += value * n
        self.count += n

    def value(self) -> float:
        """The mean over the samples added (NaN before any)."""
        return self.total / self.count if self.count else float("nan")
