"""Random numbers generated on the device (Philox 4x32-10): reproducible under ``seed``,
different across calls and seeds, with the moments of their distributions."""

from __future__ import annotations

import numpy as np

import burnpy as bp
from burnpy import Tensor
from burnpy_wgpu import WgpuBackend

B = WgpuBackend
DEV = B.default_device()
N = 400_000


def _draw(dist: bp.Distribution, n: int = N) -> np.ndarray:
    return Tensor.random((n,), dist, backend=B).to_numpy().astype(np.float64)


def test_seed_replays_the_same_sequence() -> None:
    B.seed(DEV, 1234)
    first = [_draw(bp.Distribution.normal(), 1000), _draw(bp.Distribution.default(), 77)]
    B.seed(DEV, 1234)
    again = [_draw(bp.Distribution.normal(), 1000), _draw(bp.Distribution.default(), 77)]
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a, b)
    B.seed(DEV, 1235)
    assert not np.array_equal(_draw(bp.Distribution.normal(), 1000), first[0])


def test_successive_calls_differ() -> None:
    B.seed(DEV, 7)
    a, b = _draw(bp.Distribution.default(), 1000), _draw(bp.Distribution.default(), 1000)
    assert not np.array_equal(a, b)
    assert len(np.unique(a)) > 990


def test_uniform_moments_and_range() -> None:
    B.seed(DEV, 1)
    u = _draw(bp.Distribution.uniform(-2.0, 3.0))
    assert u.min() >= -2.0 and u.max() < 3.0
    assert abs(u.mean() - 0.5) < 0.02
    assert abs(u.var() - 25 / 12) < 0.03
    counts = np.histogram(u, bins=10, range=(-2, 3))[0]
    assert counts.min() > 0.95 * N / 10


def test_normal_moments() -> None:
    B.seed(DEV, 2)
    z = _draw(bp.Distribution.normal(1.5, 2.0))
    assert abs(z.mean() - 1.5) < 0.02
    assert abs(z.std() - 2.0) < 0.02
    standard = (z - 1.5) / 2.0
    assert abs(np.mean(standard**3)) < 0.03
    assert abs(np.mean(standard**4) - 3.0) < 0.06


def test_bernoulli_frequency() -> None:
    B.seed(DEV, 3)
    b = _draw(bp.Distribution.bernoulli(0.3))
    assert set(np.unique(b)) <= {0.0, 1.0}
    assert abs(b.mean() - 0.3) < 0.005


def test_randint_covers_its_range_uniformly() -> None:
    B.seed(DEV, 4)
    r = Tensor.randint(-5, 6, (N,), backend=B).to_numpy()
    assert r.dtype == np.int32
    assert r.min() == -5 and r.max() == 5
    counts = np.bincount(r + 5)
    assert counts.min() > 0.95 * N / 11
