"""``DataLoader``: batches of a dataset as tensors, shuffled reproducibly per epoch."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import TYPE_CHECKING, Protocol

import numpy as np

from burnpy.backend.device import Device
from burnpy.backend.errors import InvalidArgumentError
from burnpy.backend.registry import default_backend
from burnpy.data.dataset import Dataset
from burnpy.tensor import Tensor
from burnpy.tensor.creation import from_owned_data

if TYPE_CHECKING:
    from burnpy.backend.base import Backend


class Sampler(Protocol):
    """What ``DataLoader`` needs of a sampler: its length and each epoch's indices."""

    def __len__(self) -> int: ...

    def indices(self, epoch: int) -> np.ndarray:
        """The sample indices of ``epoch``, in visiting order."""
        ...


class DataLoader:
    """Iterates ``dataset`` in batches of ``batch_size`` as tuples of tensors on ``backend``.

    With ``shuffle``, epoch ``e`` visits the samples in the order drawn from ``(seed, e)``:
    iterating again moves to the next epoch, and ``set_epoch`` picks one, which is how a
    resumed run sees the same batches as an uninterrupted one. A ``sampler`` (such as
    ``burnpy.distributed.DistributedSampler``) gives each epoch's indices instead. Each batch's
    tensors hold their own memory (a dataset may refill the arrays it returned), except where
    the dataset sets ``fresh_batches = True`` (``ArrayDataset`` does): those are taken over.
    """

    def __init__(self, dataset: Dataset, batch_size: int = 1, shuffle: bool = False,
                 seed: int = 0, drop_last: bool = False, *,
                 backend: type[Backend] | None = None, device: Device | None = None,
                 sampler: Sampler | None = None) -> None:
        if batch_size < 1:
            raise InvalidArgumentError(f"DataLoader: batch_size must be >= 1, got {batch_size}")
        self.dataset, self.batch_size, self.shuffle = dataset, batch_size, shuffle
        self.seed, self.drop_last = seed, drop_last
        if backend is None:
            backend = default_backend()
        self.backend, self.device, self.sampler = backend, device, sampler
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        """The epoch whose order the next iteration uses."""
        self.epoch = epoch

    def __len__(self) -> int:
        n = len(self.dataset) if self.sampler is None else len(self.sampler)
        return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)

    def order(self, epoch: int) -> np.ndarray:
        """The sample indices of ``epoch`` in visiting order."""
        if self.sampler is not None:
            return self.sampler.indices(epoch)
        n = len(self.dataset)
        if not self.shuffle:
            return np.arange(n)
        return np.random.default_rng([self.seed, epoch]).permutation(n)

    def __iter__(self) -> Iterator[tuple[Tensor, ...]]:
        order = self.order(self.epoch)
        self.epoch += 1
        for i in range(len(self)):
            indices = order[i * self.batch_size:(i + 1) * self.batch_size]
            yield tuple(self._tensor(field) for field in self.dataset.get_batch(indices))

    def _tensor(self, field: np.ndarray) -> Tensor:
        """A batch field as a tensor; integer fields (labels) take the backend's int dtype.
        The field is copied unless the dataset says its batches are new arrays."""
        dtype = self.backend.int_dtype if field.dtype.kind in "iu" else None
        make = from_owned_data if getattr(self.dataset, "fresh_batches", False) \
            else Tensor.from_data
        return make(field, backend=self.backend, device=self.device, dtype=dtype)
