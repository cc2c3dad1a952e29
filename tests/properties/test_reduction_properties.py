"""Property tests of reductions over random shapes, dims (one, several, all, negative) and
``keepdim`` against torch, values and gradients (``Autodiff(CpuBackend)`` against autograd)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from burnpy import Autodiff, Tensor
from burnpy_cpu import CpuBackend

AD = Autodiff(CpuBackend)
SHAPES = hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=4)
Reduce = Callable[[Any, Any, bool], Any]
# Ops taking several dims: dims=None means all (torch spells it dim=() for amax/amin).
MULTI: dict[str, Reduce] = {
    "sum": lambda t, d, k: t.sum(d, keepdim=k) if d is not None else t.sum(),
    "mean": lambda t, d, k: t.mean(d, keepdim=k) if d is not None else t.mean(),
    "amax": lambda t, d, k: t.amax(() if d is None else d, keepdim=k),
    "amin": lambda t, d, k: t.amin(() if d is None else d, keepdim=k),
    "var": lambda t, d, k: t.var(d, keepdim=k) if d is not None else t.var(),
    "std": lambda t, d, k: t.std(d, keepdim=k, correction=0) if d is not None
    else t.std(correction=0),
}
# Ops along one dim.
SINGLE: dict[str, Reduce] = {
    "prod": lambda t, d, k: t.prod(d, keepdim=k),
    "max_values": lambda t, d, k: t.max(d, keepdim=k).values,
    "min_values": lambda t, d, k: t.min(d, keepdim=k).values,
    "logsumexp": lambda t, d, k: t.logsumexp(d, keepdim=k),
    "cumsum": lambda t, d, k: t.cumsum(d),
    "softmax": lambda t, d, k: t.softmax(d),
}


def _values(shape: tuple[int, ...], seed: int, ties: bool) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if ties:  # few levels: ties, the interesting case of amax/amin's shared gradient
        return rng.integers(-2, 3, shape).astype(np.float64)
    return rng.standard_normal(shape)


def _compare(name: str, fn: Reduce, arr: np.ndarray, dim: Any, keepdim: bool,
             seed: int) -> None:
    x = Tensor.from_data(arr, backend=AD).require_grad()
    tx = torch.tensor(arr, requires_grad=True)
    ours, theirs = fn(x, dim, keepdim), fn(tx, dim, keepdim)
    assert ours.shape == tuple(theirs.shape), (name, dim, keepdim)
    np.testing.assert_allclose(ours.to_numpy(), theirs.detach().numpy(), rtol=1e-12,
                               atol=1e-12, equal_nan=True)
    np.testing.assert_allclose(fn(Tensor.from_data(arr.astype(np.float32)), dim,
                                  keepdim).to_numpy(),
                               theirs.detach().numpy(), rtol=2e-5, atol=2e-5, equal_nan=True)
    w = np.random.default_rng(seed + 1).standard_normal(tuple(theirs.shape))
    grads = (ours * Tensor.from_data(w, backend=AD)).sum().backward()
    (theirs * torch.from_numpy(w)).sum().backward()
    g = x.grad(grads)
    assert g is not None and tx.grad is not None
    np.testing.assert_allclose(g.to_numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12,
                               equal_nan=True)


@pytest.mark.filterwarnings("ignore:var.*degrees of freedom:UserWarning")
@pytest.mark.parametrize("name", MULTI)
@given(data=st.data(), shape=SHAPES, keepdim=st.booleans(), ties=st.booleans(),
       seed=st.integers(0, 2**16))
def test_multi_dim_reduction_matches_torch(name: str, data: st.DataObject,
                                           shape: tuple[int, ...], keepdim: bool, ties: bool,
                                           seed: int) -> None:
    nd = len(shape)
    dims = data.draw(st.none() | st.integers(-nd, nd - 1)
                     | st.lists(st.integers(0, nd - 1), min_size=1, max_size=nd, unique=True)
                     .map(lambda ds: tuple(d - nd if i % 2 else d for i, d in enumerate(ds))))
    if name in ("var", "std"):  # a single element per group: torch and burnpy give NaN
        ties = False
    _compare(name, MULTI[name], _values(shape, seed, ties), dims, keepdim, seed)


@pytest.mark.parametrize("name", SINGLE)
@given(data=st.data(), shape=SHAPES, keepdim=st.booleans(), ties=st.booleans(),
       seed=st.integers(0, 2**16))
def test_single_dim_reduction_matches_torch(name: str, data: st.DataObject,
                                            shape: tuple[int, ...], keepdim: bool, ties: bool,
                                            seed: int) -> None:
    nd = len(shape)
    dim = data.draw(st.integers(-nd, nd - 1))
    _compare(name, SINGLE[name], _values(shape, seed, ties), dim, keepdim, seed)


@given(data=st.data(), shape=SHAPES, keepdim=st.booleans(), seed=st.integers(0, 2**16))
def test_int_reductions_match_torch(data: st.DataObject, shape: tuple[int, ...], keepdim: bool,
                                    seed: int) -> None:
    nd = len(shape)
    dim = data.draw(st.integers(-nd, nd - 1))
    arr = np.random.default_rng(seed).integers(-3, 4, shape)
    t, tt = Tensor.from_data(arr), torch.from_numpy(arr)
    pairs = [(t.sum(dim, keepdim=keepdim), tt.sum(dim, keepdim=keepdim)),
             (t.prod(dim, keepdim=keepdim), tt.prod(dim, keepdim=keepdim)),
             (t.amax(dim, keepdim=keepdim), tt.amax(dim, keepdim=keepdim)),
             (t.max(dim, keepdim=keepdim).values, tt.max(dim, keepdim=keepdim).values),
             (t.cumsum(dim), tt.cumsum(dim)), (t.argmax(dim, keepdim), None)]
    for ours, theirs in pairs[:-1]:
        assert ours.dtype.value == "int64"
        np.testing.assert_array_equal(ours.to_numpy(), theirs.numpy())
    np.testing.assert_array_equal(pairs[-1][0].to_numpy(),
                                  np.argmax(arr, axis=dim, keepdims=keepdim))
