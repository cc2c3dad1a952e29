"""burnpy's one p-norm (``Tensor.norm``, which ``linalg.vector_norm``, ``F.normalize``,
``F.pairwise_distance`` and ``F.embedding``'s ``max_norm`` call) against torch, values and
gradients, where the implementations used to differ: zero vectors, zero elements under a
fractional or negative ``p``, ``p = 0`` and tied extremes under ``±inf``."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import burnpy.nn.functional as F
from burnpy import Autodiff, Tensor, linalg
from burnpy_cpu import CpuBackend

AD = Autodiff(CpuBackend)
RNG = np.random.default_rng(0)

ORDERS = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, -1.0, -0.5, math.inf, -math.inf]
ROWS = {
    "plain": [[1.0, -2.0, 3.0], [0.5, 4.0, -1.0]],
    "zero rows": [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]],
    "zero elements": [[0.0, -2.0, 3.0], [0.0, 0.0, -1.0]],
    "ties": [[2.0, -2.0, 1.0], [3.0, 3.0, -3.0]],
}
WEIGHTS = np.array([1.0, 0.7])


def _torch_norm(x: np.ndarray, p: float) -> tuple[np.ndarray, np.ndarray]:
    """torch's row norms of ``x`` and the gradient of their weighted sum."""
    t = torch.tensor(x, requires_grad=True)
    y = torch.linalg.vector_norm(t, p, dim=1)
    (y * torch.tensor(WEIGHTS)).sum().backward()
    grad = np.zeros_like(x) if t.grad is None else t.grad.numpy()  # p = 0 has no graph
    return y.detach().numpy(), grad


def assert_norm_matches_torch(norm_rows: object, rows: str, p: float) -> None:
    """``norm_rows(x, p)`` (the norm over dim 1) against torch, value and gradient."""
    x = np.array(ROWS[rows])
    want, want_grad = _torch_norm(x, p)
    b = Tensor.from_data(x, backend=AD).require_grad()
    got = norm_rows(b, p)  # type: ignore[operator]
    grad = b.grad((got * Tensor.from_data(WEIGHTS, backend=AD)).sum().backward())
    assert grad is not None
    np.testing.assert_allclose(got.to_numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(grad.to_numpy(), want_grad, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("rows", ROWS)
@pytest.mark.parametrize("p", ORDERS)
def test_tensor_norm_matches_torch_at_zeros_and_ties(rows: str, p: float) -> None:
    assert_norm_matches_torch(lambda b, q: b.norm(q, 1), rows, p)


@pytest.mark.parametrize("rows", ROWS)
@pytest.mark.parametrize("p", ORDERS)
def test_linalg_vector_norm_is_the_same_norm(rows: str, p: float) -> None:
    assert_norm_matches_torch(lambda b, q: linalg.vector_norm(b, q, 1), rows, p)


def _torch_and_burnpy(x: np.ndarray) -> tuple[torch.Tensor, Tensor]:
    return torch.tensor(x, requires_grad=True), Tensor.from_data(x, backend=AD).require_grad()


@pytest.mark.parametrize("rows", ROWS)
@pytest.mark.parametrize("p", [0.5, 1.0, 2.0, 3.0, -1.0, math.inf])
def test_normalize_and_pairwise_distance_use_the_same_norm(rows: str, p: float) -> None:
    x = np.array(ROWS[rows])
    w = RNG.standard_normal(x.shape)
    t, b = _torch_and_burnpy(x)
    want = TF.normalize(t, p, 1)
    (want * torch.tensor(w)).sum().backward()
    got = F.normalize(b, p, 1)
    grad = b.grad((got * Tensor.from_data(w, backend=AD)).sum().backward())
    assert grad is not None and t.grad is not None
    np.testing.assert_allclose(got.to_numpy(), want.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(grad.to_numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)
    # x1 - x2 + eps is exactly x where x2 = eps: the distance's norm sees the zeros of x.
    t, b = _torch_and_burnpy(x)
    eps = np.full(x.shape, 1e-6)
    want = TF.pairwise_distance(t, torch.tensor(eps), p)
    (want * torch.tensor(WEIGHTS)).sum().backward()
    got = F.pairwise_distance(b, Tensor.from_data(eps, backend=AD), p)
    grad = b.grad((got * Tensor.from_data(WEIGHTS, backend=AD)).sum().backward())
    assert grad is not None and t.grad is not None
    np.testing.assert_allclose(got.to_numpy(), want.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(grad.to_numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("norm_type", [1.0, 3.0, math.inf])
def test_embedding_max_norm_measures_rows_with_the_same_norm(norm_type: float) -> None:
    table = RNG.standard_normal((5, 4)) * 3.0
    ids = np.array([[0, 2], [4, 2]])
    t_table = torch.tensor(table)
    want = TF.embedding(torch.tensor(ids), t_table, max_norm=1.5, norm_type=norm_type)
    b_table = Tensor.from_data(table, backend=AD)
    got = F.embedding(Tensor.from_data(ids, backend=AD), b_table, max_norm=1.5,
                      norm_type=norm_type)
    np.testing.assert_allclose(got.to_numpy(), want.numpy(), rtol=1e-12)
    np.testing.assert_allclose(b_table.to_numpy(), t_table.numpy(), rtol=1e-12)
