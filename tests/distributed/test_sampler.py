"""DistributedSampler: the same shards as torch's, shuffled by epoch, with uneven lengths.

No mpiexec: the rank and world size are passed explicitly.
"""

from __future__ import annotations

import numpy as np
import pytest

from burnpy.backend.errors import InvalidArgumentError
from burnpy.data import ArrayDataset, DataLoader
from burnpy.distributed import DistributedSampler

CASES = [(10, 2), (10, 3), (10, 4), (7, 3), (5, 8), (1, 2), (12, 4), (13, 1), (100, 7)]


def shards(length: int, world: int, shuffle: bool, seed: int = 0,
           drop_last: bool = False) -> list[list[int]]:
    return [list(DistributedSampler(length, world, rank, shuffle=shuffle, seed=seed,
                                    drop_last=drop_last)) for rank in range(world)]


@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize(("length", "world"), CASES)
def test_unshuffled_shards_equal_torch(length: int, world: int, drop_last: bool) -> None:
    torch_data = pytest.importorskip("torch.utils.data")
    for rank in range(world):
        theirs = torch_data.DistributedSampler(range(length), num_replicas=world, rank=rank,
                                               shuffle=False, drop_last=drop_last)
        ours = DistributedSampler(length, world, rank, shuffle=False, drop_last=drop_last)
        assert list(ours) == list(theirs), (rank, world)
        assert len(ours) == len(theirs)


@pytest.mark.parametrize(("length", "world"), CASES)
def test_shards_are_equal_and_cover_the_data(length: int, world: int) -> None:
    for shuffle in (False, True):
        parts = shards(length, world, shuffle=shuffle, seed=3)
        sizes = {len(p) for p in parts}
        assert sizes == {-(-length // world)}  # equal shards, padded up
        merged = [i for p in parts for i in p]
        assert set(merged) == set(range(length))
        if length % world == 0:  # no padding: a partition
            assert sorted(merged) == list(range(length))
        else:  # the padding repeats the start of the order, as torch's
            assert len(merged) - length == (-length) % world


@pytest.mark.parametrize(("length", "world"), [(10, 3), (100, 7), (5, 8)])
def test_drop_last_drops_the_tail_without_repeats(length: int, world: int) -> None:
    parts = shards(length, world, shuffle=True, drop_last=True)
    merged = [i for p in parts for i in p]
    assert {len(p) for p in parts} == {length // world}
    assert len(set(merged)) == len(merged) == length // world * world


def test_shuffle_depends_on_epoch_and_seed_only() -> None:
    sampler = DistributedSampler(50, 2, 1, shuffle=True, seed=7)
    first = sampler.indices(0)
    np.testing.assert_array_equal(first, DistributedSampler(50, 2, 1, seed=7).indices(0))
    sampler.set_epoch(1)
    second = np.array(list(sampler))
    assert not np.array_equal(first, second)
    assert not np.array_equal(first, DistributedSampler(50, 2, 1, seed=8).indices(0))
    # Within an epoch, the ranks' shards partition the permutation.
    both = np.concatenate([DistributedSampler(50, 2, r, seed=7).indices(1) for r in (0, 1)])
    assert sorted(both.tolist()) == list(range(50))


def test_loader_with_sampler_gives_every_rank_the_same_batches_count() -> None:
    # 13 samples on 3 ranks: shards of 5 (two samples repeated), batches of 2: 2 full batches
    # and a last batch of 1 on every rank; drop_last on the loader drops it everywhere.
    data = ArrayDataset(np.arange(13, dtype=np.float32)[:, None], np.arange(13))
    for drop_last, sizes in ((False, [2, 2, 1]), (True, [2, 2])):
        seen = []
        for rank in range(3):
            loader = DataLoader(data, 2, drop_last=drop_last,
                                sampler=DistributedSampler(13, 3, rank, seed=1))
            loader.set_epoch(4)
            batches = list(loader)
            assert [len(b[1].to_numpy()) for b in batches] == sizes
            assert len(loader) == len(sizes)
            seen += [int(i) for b in batches for i in b[1].to_numpy()]
        if not drop_last:
            assert set(seen) == set(range(13))
        expected = np.concatenate([DistributedSampler(13, 3, r, seed=1).indices(4)[:len(seen) // 3]
                                   for r in range(3)])
        assert seen == expected.tolist()  # the loader follows the sampler's epoch-4 order


def test_defaults_without_a_group_and_bad_arguments() -> None:
    sampler = DistributedSampler(6, shuffle=False)
    assert (sampler.rank, sampler.num_replicas) == (0, 1)
    assert list(sampler) == list(range(6))
    with pytest.raises(InvalidArgumentError, match="rank 2 is not in"):
        DistributedSampler(6, 2, 2)
    with pytest.raises(InvalidArgumentError, match="empty"):
        DistributedSampler(0, 2, 0)
