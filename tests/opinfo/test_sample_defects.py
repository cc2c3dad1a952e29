"""The op defects issue 27 found by running every OpInfo sample, each against torch: select's
meaning, unique over a moved or empty dim, and the rest listed in the issue's item 7."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import burnpy as bp
from burnpy import Autodiff, BurnpyError, Tensor
from burnpy_cpu import CpuBackend

AD = Autodiff(CpuBackend)
RNG = np.random.default_rng(27)


def _np(t: Any) -> np.ndarray:
    return t.detach().numpy() if isinstance(t, torch.Tensor) else t.to_numpy()


def _same(got: Any, want: Any, tol: float = 1e-12) -> None:
    """Same shape, dtype name and values (floats to ``tol``)."""
    if isinstance(want, tuple | list):
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            _same(g, w, tol)
        return
    assert got.shape == tuple(want.shape)
    assert got.dtype.name == str(want.dtype).removeprefix("torch.").replace("bool", "bool_")
    np.testing.assert_allclose(_np(got), _np(want), rtol=tol, atol=tol)


# ---- select is torch's select ---------------------------------------------------------------

@pytest.mark.parametrize(("dim", "index"), [(0, 1), (1, -1), (-1, 0), (2, -4)])
def test_select_is_torchs_slice_with_gradient(dim: int, index: int) -> None:
    x = RNG.standard_normal((3, 2, 4))
    tx = torch.tensor(x, requires_grad=True)
    bx = Tensor.from_data(x, backend=AD).require_grad()
    want, got = tx.select(dim, index), bx.select(dim, index)
    _same(got, want)
    cot = RNG.standard_normal(tuple(want.shape))
    (gt,) = torch.autograd.grad((want * torch.tensor(cot)).sum(), tx)
    gb = bx.grad((got * Tensor.from_data(cot, backend=AD)).sum().backward())
    assert gb is not None
    np.testing.assert_array_equal(gb.to_numpy(), gt.numpy())


def test_select_takes_a_0d_int_tensor_and_refuses_out_of_range() -> None:
    x = Tensor.from_data(np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(x.select(1, bp.tensor(2)).to_numpy(), [2.0, 5.0])
    with pytest.raises(BurnpyError, match="select: index 3 is out of bounds for dim 1"):
        x.select(1, 3)


def test_index_select_is_burns_select() -> None:
    x = Tensor.from_data(np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(x.index_select(1, [2, 0]).to_numpy(), [[2, 0], [5, 3]])


# ---- unique over dims -----------------------------------------------------------------------

def test_unique_dim_orders_slices_as_torch() -> None:
    # Slice c of dim 2 is the 2x2 matrix x[:, :, c]; torch compares it in (dim 0, dim 1) order.
    x = torch.tensor([[[0, 0], [1, 0]], [[0, 1], [0, 0]]], dtype=torch.float64)
    want = torch.unique(x, sorted=True, return_inverse=True, return_counts=True, dim=2)
    got = bp.unique(Tensor.from_data(x.numpy()), sorted=True, return_inverse=True,
                    return_counts=True, dim=2)
    _same(got, want)


@pytest.mark.parametrize("fn", ["unique", "unique_consecutive"])
@pytest.mark.parametrize(("shape", "dim"), [((3, 0, 2), 1), ((0, 3), 0), ((0,), 0)])
def test_unique_over_a_zero_size_dim(fn: str, shape: tuple[int, ...], dim: int) -> None:
    want = getattr(torch, fn)(torch.zeros(shape, dtype=torch.float64), return_inverse=True,
                              return_counts=True, dim=dim)
    got = getattr(bp, fn)(Tensor.zeros(shape, dtype="float64"), return_inverse=True,
                          return_counts=True, dim=dim)
    _same(got, want)


def test_unique_refuses_empty_slices_as_torch() -> None:
    with pytest.raises(RuntimeError):
        torch.unique(torch.zeros(2, 0), dim=0)
    with pytest.raises(BurnpyError, match=r"unique: the slices along dim 0 of shape \(2, 0\)"):
        bp.unique(Tensor.zeros((2, 0)), dim=0)
