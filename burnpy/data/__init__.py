"""Data loading: array datasets and a batching, shuffling ``DataLoader``."""

from burnpy.data.dataloader import DataLoader
from burnpy.data.dataset import ArrayDataset, Dataset

__all__ = ["ArrayDataset", "DataLoader", "Dataset"]
