"""``std`` of a constant group has gradient 0, as torch's (found by the reduction property
tests: burnpy gave sqrt's NaN)."""

from __future__ import annotations

import numpy as np
import torch

from burnpy import Autodiff, Tensor
from burnpy_cpu import CpuBackend


def test_std_gradient_of_a_constant_group_is_zero_as_torch() -> None:
    arr = np.array([[2.0, 2.0, 2.0], [1.0, -1.0, 3.0]])
    x = Tensor.from_data(arr, backend=Autodiff(CpuBackend)).require_grad()
    tx = torch.tensor(arr, requires_grad=True)
    ours, theirs = x.std(1, correction=0), tx.std(1, correction=0)
    np.testing.assert_allclose(ours.to_numpy(), theirs.detach().numpy(), rtol=1e-14)
    g = x.grad(ours.sum().backward())
    theirs.sum().backward()
    assert g is not None and tx.grad is not None
    assert g.to_numpy()[0].tolist() == [0.0, 0.0, 0.0]
    np.testing.assert_allclose(g.to_numpy(), tx.grad.numpy(), rtol=1e-14)
