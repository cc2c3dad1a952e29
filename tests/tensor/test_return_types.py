"""``max(dim)``, ``min(dim)``, ``sort``, ``topk``, ``cummax``, ``cummin`` return torch's
``(values, indices)`` named tuple (issue 15): ``values, idx = t.max(dim=1)`` used to unpack the
rows of the values tensor. ``amax``/``amin`` give values, with torch's tie-sharing gradient."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

from burnpy import Autodiff, Tensor
from burnpy.tensor.reduction import ValuesIndices
from burnpy_cpu import CpuBackend

AD = Autodiff(CpuBackend)


def _with_ties(seed: int, shape: tuple[int, ...]) -> np.ndarray:
    """float64 values drawn from few levels, so rows hold ties."""
    return np.random.default_rng(seed).integers(-2, 3, size=shape).astype(np.float64)


def _distinct(seed: int, shape: tuple[int, ...]) -> np.ndarray:
    return np.random.default_rng(seed).permutation(int(np.prod(shape))).reshape(shape) * 0.5


def test_unpacking_max_dim_gives_values_and_indices_not_rows() -> None:
    t = Tensor.from_data([[1.0, 5.0, 2.0], [7.0, 0.0, 3.0], [4.0, 4.0, 9.0]])
    values, idx = t.max(dim=1)
    assert values.tolist() == [5.0, 7.0, 9.0]
    assert idx.tolist() == [1, 0, 2]
    out = t.min(dim=0)
    assert isinstance(out, ValuesIndices) and isinstance(out, tuple)
    assert out.values.tolist() == [1.0, 0.0, 2.0] and out.indices.tolist() == [0, 1, 0]
    assert repr(out).startswith("ValuesIndices(values=Tensor(")


def test_full_max_and_min_are_0d_tensors() -> None:
    t = Tensor.from_data([[1.0, 5.0], [-7.0, 3.0]])
    assert t.max().shape == () and t.max().item() == 5.0
    assert t.min().shape == () and t.min().item() == -7.0


def test_max_of_a_tensor_is_the_elementwise_maximum_as_torch() -> None:
    a, b = Tensor.from_data([1.0, 5.0, -2.0]), Tensor.from_data([3.0, 4.0, -1.0])
    assert a.max(b).tolist() == [3.0, 5.0, -1.0]
    assert a.min(b).tolist() == [1.0, 4.0, -2.0]


Op = Callable[[Any], Any]
# Ops whose indices are deterministic among ties in both libraries; ties are drawn for them.
TIED: dict[str, Op] = {
    "max_dim1": lambda t: t.max(dim=1),
    "max_dim0_keepdim": lambda t: t.max(0, keepdim=True),
    "min_dim_neg": lambda t: t.min(dim=-1),
    "min_dim1_keepdim": lambda t: t.min(1, True),
    "cummax_dim1": lambda t: t.cummax(1),
    "cummin_dim0": lambda t: t.cummin(dim=0),
    "sort_stable": lambda t: t.sort(dim=-1, stable=True) if isinstance(t, torch.Tensor)
    else t.sort(dim=-1),
    "sort_stable_descending": lambda t: t.sort(dim=0, descending=True, stable=True)
    if isinstance(t, torch.Tensor) else t.sort(0, descending=True),
}
# torch documents no order among ties for these: drawn with distinct values.
DISTINCT: dict[str, Op] = {
    "sort_default": lambda t: t.sort(),
    "topk": lambda t: t.topk(2),
    "topk_smallest_dim0": lambda t: t.topk(2, dim=0, largest=False, sorted=True),
    "topk_keywords": lambda t: t.topk(k=3, dim=1),
}


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("name", [*TIED, *DISTINCT])
def test_values_indices_and_gradient_match_torch(name: str, seed: int) -> None:
    fn = TIED.get(name) or DISTINCT[name]
    arr = (_with_ties if name in TIED else _distinct)(seed, (4, 5))
    x = Tensor.from_data(arr, backend=AD).require_grad()
    tx = torch.tensor(arr, requires_grad=True)
    ours, theirs = fn(x), fn(tx)
    assert type(ours) is ValuesIndices and len(ours) == 2
    np.testing.assert_array_equal(ours.values.to_numpy(), theirs.values.detach().numpy())
    np.testing.assert_array_equal(ours.indices.to_numpy(), theirs.indices.numpy())
    values, indices = ours
    assert values.shape == tuple(theirs.values.shape) and indices.dtype.is_int
    weights = np.arange(1.0, 1.0 + theirs.values.numel()).reshape(theirs.values.shape)
    grads = (ours.values * Tensor.from_data(weights, backend=AD)).sum().backward()
    (theirs.values * torch.tensor(weights)).sum().backward()
    gx = x.grad(grads)
    assert gx is not None and tx.grad is not None
    np.testing.assert_allclose(gx.to_numpy(), tx.grad.numpy(), rtol=1e-12)


def test_gradient_through_max_values_reaches_the_index() -> None:
    x = Tensor.from_data([[1.0, 3.0, 3.0], [2.0, 0.0, 2.0]], backend=AD).require_grad()
    grads = x.max(dim=1).values.sum().backward()
    g = x.grad(grads)
    assert g is not None and g.tolist() == [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]


def test_burn_names_stay_as_aliases() -> None:
    t = Tensor.from_data(_distinct(0, (3, 4)))
    pairs = [(t.max_with_indices(1), t.max(1)), (t.min_with_indices(0, True), t.min(0, True)),
             (t.sort_with_indices(0, True), t.sort(0, True)),
             (t.topk_with_indices(2), t.topk(2)), (t.cummax_with_indices(1), t.cummax(1)),
             (t.cummin_with_indices(0), t.cummin(0))]
    for alias, named in pairs:
        assert type(alias) is ValuesIndices
        assert alias.values.tolist() == named.values.tolist()
        assert alias.indices.tolist() == named.indices.tolist()
    assert t.argsort(1).tolist() == t.sort(1).indices.tolist()


AMAX_DIMS: list[Any] = [None, (), 0, 1, -1, (0, 2), (2, 0, 1), [1, 2]]


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dim", AMAX_DIMS, ids=str)
@pytest.mark.parametrize("op", ["amax", "amin"])
def test_amax_amin_values_and_tie_sharing_gradient_match_torch(op: str, dim: Any,
                                                                keepdim: bool) -> None:
    arr = _with_ties(7, (3, 4, 2))
    x = Tensor.from_data(arr, backend=AD).require_grad()
    tx = torch.tensor(arr, requires_grad=True)
    tdim = () if dim is None else dim
    ours, theirs = getattr(x, op)(dim, keepdim=keepdim), getattr(tx, op)(tdim, keepdim=keepdim)
    assert ours.shape == tuple(theirs.shape)
    np.testing.assert_array_equal(ours.to_numpy(), theirs.detach().numpy())
    weights = np.arange(1.0, 1.0 + theirs.numel()).reshape(theirs.shape)
    grads = (ours * Tensor.from_data(weights, backend=AD)).sum().backward()
    (theirs * torch.tensor(weights)).sum().backward()
    gx = x.grad(grads)
    assert gx is not None and tx.grad is not None
    np.testing.assert_allclose(gx.to_numpy(), tx.grad.numpy(), rtol=1e-12)


def test_amax_keeps_infinities_and_nan_exact_under_autodiff() -> None:
    inf, nan = float("inf"), float("nan")
    arr = np.array([[1.0, inf, inf], [-inf, -inf, -inf], [0.1, 0.1, 0.1], [nan, 2.0, 1.0]])
    x = Tensor.from_data(arr, backend=AD).require_grad()
    np.testing.assert_array_equal(x.amax(1).to_numpy(), torch.tensor(arr).amax(1).numpy())
    np.testing.assert_array_equal(x.amin(1).to_numpy(), torch.tensor(arr).amin(1).numpy())


def test_amax_on_ints_and_plain_backends() -> None:
    t = Tensor.from_data([[3, 1, 4], [1, 5, 9]])
    assert t.amax(1).tolist() == [4, 9] and t.amin(0).tolist() == [1, 1, 4]
    assert t.amax().item() == 9 and t.amax((0, 1), keepdim=True).shape == (1, 1)
