"""The training loop: ``Learner`` with metrics, checkpoints, early stopping and a plot."""

from burnpy.train.learner import CheckpointError, Learner, TrainSummary, epoch_seed, to_backend
from burnpy.train.metrics import Accuracy, Mean, Metric
from burnpy.train.plot import plot_history

__all__ = ["Accuracy", "CheckpointError", "Learner", "Mean", "Metric", "TrainSummary",
           "epoch_seed", "plot_history", "to_backend"]
