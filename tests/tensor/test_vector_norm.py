"""burnpy's one p-norm against torch.linalg.vector_norm, values and gradients, where the
implementations used to differ: zero vectors, zero elements under a fractional or negative
``p``, ``p = 0`` and tied extremes under ``±inf``."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from burnpy import Autodiff, Tensor
from burnpy_cpu import CpuBackend

AD = Autodiff(CpuBackend)

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
