"""CpuBackend's forward conv keeps what it derives from an immutable weight (its Winograd-domain
image, its channels-last rows layout, its finiteness) by the array's identity: only for a
read-only NumPy array that owns its memory, the entry dropped when the array is freed. Every
result is checked against torch, including after the values behind a weight change."""

from __future__ import annotations

import gc

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import burnpy as bp
import burnpy.nn.functional as bf
from burnpy_cpu import CpuBackend
from burnpy_cpu.array_ops import module_ops

torch.set_num_threads(1)

#: (x shape, weight shape, stride, padding): a Winograd conv (3x3, stride 1, 16+ channels)
#: and a channels-last rows conv (stride 2, a small plane).
CASES = {"winograd": ((2, 16, 10, 10), (24, 16, 3, 3), 1, 1),
         "rows": ((2, 32, 9, 9), (16, 32, 3, 3), 2, 1)}


def _conv(x: np.ndarray, w: np.ndarray, stride: int, padding: int) -> np.ndarray:
    out = bf.conv2d(bp.tensor(x, backend=CpuBackend), bp.from_numpy(w, backend=CpuBackend),
                    stride=stride, padding=padding)
    return out.to_numpy()


def _torch(x: np.ndarray, w: np.ndarray, stride: int, padding: int) -> np.ndarray:
    return F.conv2d(torch.from_numpy(x), torch.from_numpy(w.copy()), stride=stride,
                    padding=padding).numpy()


def _data(name: str, seed: int) -> tuple[np.ndarray, np.ndarray, int, int]:
    xs, ws, stride, padding = CASES[name]
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(xs).astype(np.float32),
            rng.standard_normal(ws).astype(np.float32), stride, padding)


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_read_only_weight_is_derived_once_and_forgotten_when_freed(name: str) -> None:
    x, w, stride, padding = _data(name, 0)
    w.flags.writeable = False
    key = id(w)
    for _ in range(2):
        np.testing.assert_allclose(_conv(x, w, stride, padding), _torch(x, w, stride, padding),
                                   rtol=1e-4, atol=1e-4)
        entry = module_ops._FROZEN[key]
        assert entry[0]() is w and len(entry[2]) == 1
    derived = next(iter(entry[2].values()))
    del w, entry
    gc.collect()
    assert key not in module_ops._FROZEN
    assert not derived.flags.writeable


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_weight_that_can_change_is_derived_at_every_call(name: str) -> None:
    """A writable array, and a read-only view of one, are never cached: writes into them
    between two calls show in the second result."""
    x, w, stride, padding = _data(name, 1)
    view = w[:]
    view.flags.writeable = False
    for weight in (w, view):
        before = len(module_ops._FROZEN)
        first = _conv(x, weight, stride, padding)
        np.testing.assert_allclose(first, _torch(x, weight, stride, padding), rtol=1e-4,
                                   atol=1e-4)
        w *= -0.5
        second = _conv(x, weight, stride, padding)
        np.testing.assert_allclose(second, _torch(x, weight, stride, padding), rtol=1e-4,
                                   atol=1e-4)
        np.testing.assert_allclose(second, -0.5 * first, rtol=1e-4, atol=1e-4)
        assert len(module_ops._FROZEN) == before


def test_a_non_finite_read_only_weight_takes_the_direct_path() -> None:
    """The cached finiteness keeps Winograd from turning an infinite weight into NaNs."""
    x, w, stride, padding = _data("winograd", 2)
    w[0, 0, 1, 1] = np.inf
    w.flags.writeable = False
    for _ in range(2):
        np.testing.assert_array_equal(np.isnan(_conv(x, w, stride, padding)),
                                      np.isnan(_torch(x, w, stride, padding)))
