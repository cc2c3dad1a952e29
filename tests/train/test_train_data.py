"""ArrayDataset and DataLoader: batching, seeded per-epoch shuffling, drop_last."""

from __future__ import annotations

import numpy as np
import pytest

import burnpy as bp
from burnpy.autodiff import Autodiff
from burnpy.data import ArrayDataset, DataLoader
from burnpy_cpu import CpuBackend


def _data(n: int = 10) -> ArrayDataset:
    return ArrayDataset(np.arange(n * 2, dtype=np.float32).reshape(n, 2), np.arange(n))


def test_batches_in_order_with_a_short_last_batch() -> None:
    loader = DataLoader(_data(), batch_size=4)
    batches = list(loader)
    assert len(loader) == 3 and [b[1].tolist() for b in batches] == [
        [0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    x, y = batches[0]
    assert x.dtype is bp.float32 and y.dtype is bp.int64 and x.shape == (4, 2)
    assert len(DataLoader(_data(), 4, drop_last=True)) == 2
    assert [b[1].shape[0] for b in DataLoader(_data(), 4, drop_last=True)] == [4, 4]


def test_shuffle_is_seeded_per_epoch() -> None:
    loader = DataLoader(_data(), batch_size=10, shuffle=True, seed=5)
    first, second = (next(iter(loader))[1].tolist() for _ in range(2))
    assert first != second and sorted(first) == list(range(10))
    again = DataLoader(_data(), batch_size=10, shuffle=True, seed=5)
    again.set_epoch(1)
    assert next(iter(again))[1].tolist() == second
    other = DataLoader(_data(), batch_size=10, shuffle=True, seed=6)
    assert next(iter(other))[1].tolist() != first


def test_backend_subset_split_and_errors() -> None:
    ad = Autodiff(CpuBackend)
    x, _ = next(iter(DataLoader(_data(), 3, backend=ad)))
    assert x.backend is ad
    data = _data(10)
    assert data.subset([2, 5])[1][1] == 5 and len(data.subset([2, 5])) == 2
    train, test = data.split(0.7, seed=1)
    assert len(train) == 7 and len(test) == 3
    assert sorted(np.concatenate([train.arrays[1], test.arrays[1]]).tolist()) == list(range(10))
    with pytest.raises(bp.ShapeError, match="same first dim"):
        ArrayDataset(np.zeros(3), np.zeros(4))
    with pytest.raises(bp.InvalidArgumentError, match="batch_size"):
        DataLoader(data, 0)
    with pytest.raises(bp.InvalidArgumentError, match="fraction"):
        data.split(1.0)
