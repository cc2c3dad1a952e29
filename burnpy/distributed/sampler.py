"""``DistributedSampler``: each rank's share of a data set, as torch's.

Every rank draws the same permutation from ``(seed, epoch)``, pads it by repeating its start
until it divides by the number of ranks (or drops the tail with ``drop_last``), and takes
every ``num_replicas``-th index from its rank on: equal shards, so every rank runs the same
number of steps and no collective waits for a rank that has run out of data.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

from burnpy.backend.errors import InvalidArgumentError
from burnpy.distributed.group import get_rank, get_world_size


class DistributedSampler:
    """The indices of rank ``rank``'s shard of ``length`` samples; ``set_epoch`` reshuffles.

    ``num_replicas`` and ``rank`` default to the process group's. Pass it to
    ``DataLoader(..., sampler=...)``.
    """

    def __init__(self, length: int, num_replicas: int | None = None, rank: int | None = None,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False) -> None:
        self.num_replicas = get_world_size() if num_replicas is None else num_replicas
        self.rank = get_rank() if rank is None else rank
        if self.num_replicas < 1 or not 0 <= self.rank < self.num_replicas:
            raise InvalidArgumentError(f"DistributedSampler: rank {self.rank} is not in "
                                       f"[0, {self.num_replicas})")
        if length < 1:
            raise InvalidArgumentError(f"DistributedSampler: the data set is empty ({length})")
        self.length, self.shuffle, self.seed, self.drop_last = length, shuffle, seed, drop_last
        self.epoch = 0
        if drop_last and length % self.num_replicas:
            self.num_samples = length // self.num_replicas
        else:
            self.num_samples = math.ceil(length / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas

    def set_epoch(self, epoch: int) -> None:
        """The epoch whose shuffle the next ``indices()`` uses."""
        self.epoch = epoch

    def indices(self, epoch: int | None = None) -> np.ndarray:
        """This rank's sample indices for ``epoch`` (default: the one set)."""
        epoch = self.epoch if epoch is None else epoch
        order = np.random.default_rng([self.seed, epoch]).permutation(self.length) \
            if self.shuffle else np.arange(self.length)
        if self.total_size > self.length:
            order = np.resize(order, self.total_size)  # repeat from the start, as torch pads
        else:
            order = order[:self.total_size]
        return order[self.rank:self.total_size:self.num_replicas]

    def __iter__(self) -> Iterator[int]:
        return iter(self.indices().tolist())

    def __len__(self) -> int:
        return self.num_samples
