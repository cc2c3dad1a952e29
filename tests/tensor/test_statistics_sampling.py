"""Sampling from the backend's seeded generator (issue 16): multinomial, randint, randperm,
bernoulli, normal, rand_like, randn_like. Samples cannot equal torch's, so each is checked by its
distribution's statistics, and by determinism under ``seed``; plus the errors of the statistics
ops that the conformance cases cannot reach."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import burnpy as bp
from burnpy import Tensor
from burnpy.testing import backends_available

BACKENDS = backends_available()


def _probs(backend: type) -> Tensor:
    return Tensor.from_data([0.1, 0.2, 0.7, 0.0], backend=backend)


SAMPLERS: dict[str, Callable[[type], Tensor]] = {
    "multinomial": lambda b: _probs(b).multinomial(50, replacement=True),
    "multinomial_no_replacement": lambda b: Tensor.ones((12,), backend=b).multinomial(6),
    "randint": lambda b: bp.randint(2, 9, (40,), backend=b),
    "randperm": lambda b: bp.randperm(30, backend=b),
    "bernoulli": lambda b: Tensor.full((40,), 0.3, backend=b).bernoulli(),
    "normal": lambda b: bp.normal(Tensor.zeros((40,), backend=b), 2.0),
    "rand_like": lambda b: bp.rand_like(Tensor.zeros((40,), backend=b)),
    "randn_like": lambda b: bp.randn_like(Tensor.zeros((40,), backend=b)),
}


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.__name__)
@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_seeding_makes_samples_repeat(backend: type, name: str) -> None:
    draw = SAMPLERS[name]
    dev = backend.default_device()
    backend.seed(dev, 7)
    first = draw(backend).to_numpy()
    backend.seed(dev, 7)
    np.testing.assert_array_equal(draw(backend).to_numpy(), first)
    backend.seed(dev, 8)
    assert not np.array_equal(draw(backend).to_numpy(), first)


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.__name__)
def test_multinomial_with_replacement_draws_the_weights(backend: type) -> None:
    backend.seed(backend.default_device(), 0)
    weights = Tensor.from_data([[1.0, 2.0, 7.0, 0.0], [0.0, 0.0, 1.0, 1.0]], backend=backend)
    samples = weights.multinomial(20000, replacement=True).to_numpy()
    assert samples.shape == (2, 20000) and samples.dtype.kind == "i"  # the backend's int dtype
    freq0 = np.bincount(samples[0], minlength=4) / 20000
    freq1 = np.bincount(samples[1], minlength=4) / 20000
    np.testing.assert_allclose(freq0, [0.1, 0.2, 0.7, 0.0], atol=0.015)
    np.testing.assert_allclose(freq1, [0.0, 0.0, 0.5, 0.5], atol=0.015)
    assert freq0[3] == 0 and freq1[0] == freq1[1] == 0


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.__name__)
def test_multinomial_without_replacement_never_repeats(backend: type) -> None:
    backend.seed(backend.default_device(), 1)
    weights = Tensor.from_data([[0.1, 0.2, 0.7, 0.0]] * 4000, backend=backend)
    samples = weights.multinomial(3).to_numpy()
    assert all(len(set(row)) == 3 and 3 not in row for row in samples)
    np.testing.assert_allclose(np.bincount(samples[:, 0], minlength=4) / 4000,
                               [0.1, 0.2, 0.7, 0.0], atol=0.025)


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.__name__)
def test_integer_samplers_cover_their_range(backend: type) -> None:
    backend.seed(backend.default_device(), 2)
    ints = bp.randint(-3, 4, (6000,), backend=backend).to_numpy()
    assert ints.min() == -3 and ints.max() == 3
    np.testing.assert_allclose(np.bincount(ints + 3) / 6000, np.full(7, 1 / 7), atol=0.02)
    low_default = bp.randint(5, (2, 3), backend=backend).to_numpy()
    assert low_default.shape == (2, 3) and low_default.min() >= 0 and low_default.max() < 5
    perm = bp.randperm(200, backend=backend).to_numpy()
    assert perm.dtype.kind == "i" and sorted(perm) == list(range(200))
    assert bp.randperm(0, backend=backend).shape == (0,)


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.__name__)
def test_bernoulli_and_normal_match_their_moments(backend: type) -> None:
    backend.seed(backend.default_device(), 3)
    p = Tensor.from_data([0.1, 0.5, 0.9], backend=backend).reshape(3, 1).expand(3, 8000)
    draws = p.bernoulli().to_numpy()
    assert set(np.unique(draws)) <= {0.0, 1.0}
    np.testing.assert_allclose(draws.mean(1), [0.1, 0.5, 0.9], atol=0.02)
    assert abs(Tensor.zeros((8000,), backend=backend).bernoulli(0.25).to_numpy().mean()
               - 0.25) < 0.02
    mean = Tensor.from_data([[-5.0], [0.0], [5.0]], backend=backend)
    std = Tensor.from_data([0.5, 1.0, 2.0, 4.0], backend=backend)
    big = bp.normal(mean.expand(3, 4).reshape(3, 4, 1).expand(3, 4, 4000),
                    std.reshape(1, 4, 1).expand(3, 4, 4000)).to_numpy()
    np.testing.assert_allclose(big.mean(2), np.broadcast_to([[-5.0], [0.0], [5.0]], (3, 4)),
                               atol=0.2)
    np.testing.assert_allclose(big.std(2), np.broadcast_to([0.5, 1.0, 2.0, 4.0], (3, 4)),
                               rtol=0.06)
    assert bp.normal(mean, std).shape == (3, 4)
    assert bp.normal(1.0, std).shape == (4,)
    scalar = bp.normal(3.0, 0.5, (6000,), backend=backend).to_numpy()
    assert abs(scalar.mean() - 3.0) < 0.05 and abs(scalar.std() - 0.5) < 0.03
    u = bp.rand_like(Tensor.zeros((6000,), backend=backend)).to_numpy()
    assert u.min() >= 0.0 and u.max() < 1.0 and abs(u.mean() - 0.5) < 0.02
    z = bp.randn_like(Tensor.zeros((6000,), backend=backend)).to_numpy()
    assert abs(z.mean()) < 0.05 and abs(z.std() - 1.0) < 0.05


def test_samples_carry_no_gradient() -> None:
    backend = bp.Autodiff(bp.Tensor.zeros(()).backend)
    mean = Tensor.zeros((3,), backend=backend).require_grad()
    assert not bp.normal(mean, 1.0).is_require_grad()
    assert not Tensor.full((3,), 0.5, backend=backend).require_grad().bernoulli().is_require_grad()


@pytest.mark.parametrize(("call", "message"), [
    (lambda: bp.tensor([0.5, 0.5]).multinomial(3), "cannot draw 3 samples"),
    (lambda: bp.tensor([0.5, 0.0]).multinomial(2), "fewer than 2 categories"),
    (lambda: bp.tensor([0.5, -1.0]).multinomial(1, True), "non-negative"),
    (lambda: bp.tensor([0.0, 0.0]).multinomial(1, True), "positive total"),
    (lambda: bp.tensor([1.0, 2.0]).kthvalue(3), "outside"),
    (lambda: bp.searchsorted(bp.tensor([1.0]), 0.5, right=True, side="left"), "contradicts"),
    (lambda: bp.tensor([1.0]).histc(3, 2.0, 1.0), "must be >= min"),
    (lambda: bp.tensor([1, -1]).bincount(), "non-negative"),
    (lambda: bp.tensor([1.0, 2.0]).norm("nuc"), "nuclear"),
    (lambda: bp.var_mean(bp.tensor([1.0, 2.0]), correction=0, unbiased=True), "not both"),
    (lambda: bp.normal(0.0, 1.0), "size"),
    (lambda: bp.tensor([1, 2]).nanmean(), "float"),
    (lambda: bp.tensor([1.0]).median(1), "dim"),
])
def test_bad_arguments_raise_burnpy_errors(call: Callable[[], object], message: str) -> None:
    with pytest.raises(bp.BurnpyError, match=message):
        call()


def test_statistics_of_empty_inputs_follow_torch() -> None:
    assert np.isnan(Tensor.zeros((0,)).median().item())
    assert np.isnan(Tensor.zeros((0, 2)).nanmedian().item())
    assert bp.tensor([], dtype=bp.int64).bincount(minlength=3).tolist() == [0, 0, 0]
    assert bp.trapezoid(Tensor.zeros((2, 0))).tolist() == [0.0, 0.0]
    assert bp.tensor([], dtype=bp.int64).unique().shape == (0,)
