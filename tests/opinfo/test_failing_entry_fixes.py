"""Regression tests, against torch, for the OpInfo entries that gave wrong numbers or leaked
exceptions: cosine_similarity's broadcasting, fractional var/std corrections, clamp's tensor
bounds, normalize's p=0, and torch's keywords index_put accumulate=, repeat_interleave
output_size=, searchsorted sorter= and cdist compute_mode=."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import burnpy as bp
import burnpy.nn.functional as F
from burnpy import Autodiff, BurnpyError, Tensor
from burnpy_cpu import CpuBackend
from tests.opinfo.opinfo_harness import run_entry

AD = Autodiff(CpuBackend)
RNG = np.random.default_rng(16)


def _check(tfn: Callable[..., torch.Tensor], bfn: Callable[..., Tensor],
           inputs: Sequence[np.ndarray]) -> None:
    """Forward and the gradient of every float64 input against torch."""
    ts = [torch.tensor(x, requires_grad=True) for x in inputs]
    bs = [Tensor.from_data(x, backend=AD).require_grad() for x in inputs]
    want, got = tfn(*ts), bfn(*bs)
    assert got.shape == tuple(want.shape)
    np.testing.assert_allclose(got.to_numpy(), want.detach().numpy(), rtol=1e-10, atol=1e-12)
    cot = RNG.uniform(0.5, 1.5, tuple(want.shape))
    tg = torch.autograd.grad((want * torch.tensor(cot)).sum(), ts, allow_unused=True)
    grads = (got * Tensor.from_data(cot, backend=AD)).sum().backward()
    for t, b, g in zip(ts, bs, tg, strict=True):
        gb = b.grad(grads)
        want_g = torch.zeros_like(t) if g is None else g
        got_g = np.zeros(t.shape) if gb is None else gb.to_numpy()
        np.testing.assert_allclose(got_g, want_g.numpy(), rtol=1e-10, atol=1e-12)


def test_cosine_similarity_broadcasts_before_the_norms() -> None:
    _check(lambda a, b: TF.cosine_similarity(a, b, dim=-2),
           lambda a, b: F.cosine_similarity(a, b, dim=-2),
           [RNG.standard_normal((1, 2, 3)), RNG.standard_normal((2, 1, 3))])


@pytest.mark.parametrize("correction", [1.3, 0.5, 4.0, 7.5])
def test_var_std_take_a_fractional_correction(correction: float) -> None:
    x = [RNG.standard_normal((5, 5, 5))]
    for name in ("var", "std"):
        if correction < 5:  # a divisor of 0 or less is inf (no gradient to compare)
            _check(lambda t, n=name: getattr(t, n)(1, correction=correction),
                   lambda t, n=name: getattr(t, n)(1, correction=correction), x)
    want = torch.var_mean(torch.tensor(x[0]), 1, correction=correction)
    got = bp.var_mean(Tensor.from_data(x[0], backend=CpuBackend), 1, correction=correction)
    for w, g in zip(want, got, strict=True):
        np.testing.assert_allclose(g.to_numpy(), w.numpy(), rtol=1e-12)


def test_var_with_no_degrees_of_freedom_is_inf_or_nan_as_torch() -> None:
    x = np.array([[1.0, 2.0], [3.0, 3.0]])
    want = torch.tensor(x).var(1, correction=3)
    got = Tensor.from_data(x, backend=CpuBackend).var(1, correction=3)
    np.testing.assert_array_equal(got.to_numpy(), want.numpy())


@pytest.mark.parametrize("bounds", ["min", "max", "both", "crossed", "equal"])
def test_clamp_with_tensor_bounds_routes_the_gradient_as_torch(bounds: str) -> None:
    x = np.round(RNG.standard_normal((4, 5)), 1)
    lo = np.round(RNG.standard_normal((5,)), 1) - 0.5
    hi = lo + (1.0 if bounds != "crossed" else -1.0) * (bounds != "equal")
    lo[0] = x[0, 0]  # ties with the input
    hi[1] = x[1, 1]
    if bounds == "equal":
        hi = lo.copy()
    if bounds == "min":
        _check(lambda a, b: a.clamp_min(b), lambda a, b: a.clamp_min(b), [x, lo])
    elif bounds == "max":
        _check(lambda a, b: a.clamp_max(b), lambda a, b: a.clamp_max(b), [x, hi])
    else:
        _check(lambda a, b, c: a.clamp(b, c), lambda a, b, c: a.clamp(b, c), [x, lo, hi])


def test_clamp_promotes_an_int_bound_and_refuses_a_float_bound_for_ints() -> None:
    x = Tensor.from_data(np.array([0.5, 3.5]), backend=CpuBackend)
    bound = Tensor.from_data(np.array([1, 2]), backend=CpuBackend)
    np.testing.assert_array_equal(x.clamp(min=bound).to_numpy(), [1.0, 3.5])
    with pytest.raises(BurnpyError, match=r"use \.float"):
        bound.clamp(max=x)


def test_normalize_p0_divides_by_the_count_of_non_zeros() -> None:
    x = RNG.standard_normal((3, 4))
    x[0, 1] = 0.0
    _check(lambda t: TF.normalize(t, p=0.0, dim=-1), lambda t: F.normalize(t, p=0.0, dim=-1), [x])


def test_repeat_interleave_checks_output_size() -> None:
    x = Tensor.from_data(np.arange(4.0).reshape(4, 1), backend=CpuBackend)
    r = Tensor.from_data(np.array([0, 1, 2, 3]), backend=CpuBackend)
    want = torch.arange(4.0).reshape(4, 1).repeat_interleave(torch.tensor([0, 1, 2, 3]), dim=0,
                                                             output_size=6)
    np.testing.assert_array_equal(x.repeat_interleave(r, 0, output_size=6).to_numpy(), want)
    with pytest.raises(BurnpyError, match="output_size=5"):
        x.repeat_interleave(r, 0, output_size=5)


def test_searchsorted_reads_the_sequence_through_sorter() -> None:
    seq = np.array([[3.0, 1.0, 2.0, 5.0], [0.5, 0.1, 0.9, 0.2]])
    vals = np.array([[2.0, 4.0, 0.0], [0.15, 0.5, 1.0]])
    sorter = np.argsort(seq, axis=-1)
    for right in (False, True):
        want = torch.searchsorted(torch.tensor(seq), torch.tensor(vals), right=right,
                                  sorter=torch.tensor(sorter))
        got = bp.searchsorted(Tensor.from_data(seq, backend=CpuBackend),
                              Tensor.from_data(vals, backend=CpuBackend), right=right,
                              sorter=Tensor.from_data(sorter, backend=CpuBackend))
        np.testing.assert_array_equal(got.to_numpy(), want.numpy())


def test_cdist_takes_compute_mode() -> None:
    a, b = RNG.standard_normal((3, 4)), RNG.standard_normal((5, 4))
    for mode in ("use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist"):
        _check(lambda s, t, m=mode: torch.cdist(s, t, 2.0, m),
               lambda s, t, m=mode: bp.cdist(s, t, 2.0, m), [a, b])
    with pytest.raises(BurnpyError, match="compute_mode"):
        bp.cdist(Tensor.from_data(a, backend=CpuBackend), Tensor.from_data(b, backend=CpuBackend),
                 compute_mode="fast")


@pytest.mark.parametrize("index", ["int", "bool"])
def test_index_put_accumulates(index: str) -> None:
    x = RNG.standard_normal((5, 5))
    if index == "int":
        idx = np.array([1, 3, 1])
        v = RNG.standard_normal((3, 5))
        ti, bi = torch.tensor(idx), Tensor.from_data(idx, backend=AD)
    else:
        idx = np.array([True, False, True, True, False])
        v = RNG.standard_normal((5,))
        ti, bi = torch.tensor(idx), Tensor.from_data(idx, backend=AD)
    _check(lambda a, b: a.index_put((ti,), b, accumulate=True),
           lambda a, b: a.index_put((bi,), b, accumulate=True), [x, v])


def test_the_harness_takes_torchs_zero_tensor_gradients() -> None:
    assert run_entry("sgn").status == "clean"
