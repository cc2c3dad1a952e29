"""Datasets: indexable collections of samples that hand out whole batches at once."""

from __future__ import annotations

from typing import ClassVar, Protocol

import numpy as np

from burnpy.backend.errors import InvalidArgumentError, ShapeError


class Dataset(Protocol):
    """What ``DataLoader`` needs: a length and a batch of samples by index."""

    def __len__(self) -> int: ...

    def get_batch(self, indices: np.ndarray) -> tuple[np.ndarray, ...]:
        """The fields of the samples at ``indices``, each stacked on a new first dim."""
        ...


class ArrayDataset:
    """Samples are rows of aligned NumPy arrays: ``ArrayDataset(images, labels)``."""

    #: ``get_batch`` gathers new arrays on every call, so a ``DataLoader``'s tensors take them
    #: over without a copy (any dataset whose batches are new arrays may say so too).
    fresh_batches: ClassVar[bool] = True

    def __init__(self, *arrays: np.ndarray) -> None:
        if not arrays:
            raise InvalidArgumentError("ArrayDataset: give at least one array")
        self.arrays = tuple(np.asarray(a) for a in arrays)
        n = len(self.arrays[0])
        if any(a.ndim == 0 or len(a) != n for a in self.arrays):
            raise ShapeError(f"ArrayDataset: every array needs the same first dim, got "
                             f"{[a.shape for a in self.arrays]}")

    def __len__(self) -> int:
        return len(self.arrays[0])

    def __getitem__(self, index: int) -> tuple[np.ndarray, ...]:
        return tuple(a[index] for a in self.arrays)

    def get_batch(self, indices: np.ndarray) -> tuple[np.ndarray, ...]:
        return tuple(a[indices] for a in self.arrays)

    def subset(self, indices: np.ndarray | list[int]) -> ArrayDataset:
        """The samples at ``indices``, as a new dataset."""
        return ArrayDataset(*self.get_batch(np.asarray(indices)))

    def split(self, fraction: float, seed: int = 0) -> tuple[ArrayDataset, ArrayDataset]:
        """A random ``(fraction, 1 - fraction)`` split, reproducible with ``seed``."""
        if not 0.0 < fraction < 1.0:
            raise InvalidArgumentError(f"split: fraction must be in (0, 1), got {fraction}")
        order = np.random.default_rng(seed).permutation(len(self))
        cut = round(len(self) * fraction)
        return self.subset(order[:cut]), self.subset(order[cut:])
