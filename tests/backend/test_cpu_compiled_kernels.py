"""The CPU backend's compiled (numba) elementwise kernels and its reused conv scratch buffers
agree with the NumPy paths they replace."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from burnpy.backend.ops.module_ops import ConvOptions
from burnpy_cpu import CpuBackend


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_backward_keeps_nan_outputs_and_zeroes_non_finite_gradients_elsewhere(
        dtype: Any) -> None:
    """grad where the output is positive or NaN; 0 elsewhere even for an inf or NaN grad
    (a multiply by the mask would give NaN); the strided fallback agrees."""
    output = np.array([[1.0, -1.0, 0.0], [np.nan, 2.0, -0.0]], dtype=dtype)
    grad = np.array([[1.0, np.inf, 3.0], [4.0, np.inf, np.nan]], dtype=dtype)
    want = np.array([[1.0, 0.0, 0.0], [4.0, np.inf, 0.0]], dtype=dtype)
    got = CpuBackend.relu_backward(output, grad)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(CpuBackend.relu_backward(output.T, grad.T), want.T)


def test_consecutive_convs_of_other_shapes_do_not_see_stale_scratch() -> None:
    """Scratch buffers are reused across calls: a small conv after a large one (and back)
    still matches torch, padding included."""
    rng = np.random.default_rng(0)
    opts = ConvOptions((1, 1), (1, 1), (1, 1), 1)
    # (batch, channels in, plane, channels out): the 16-channel ones run as Winograd, whose
    # slabs hold padding lanes past a partial 16-channel block
    for n, c, size, k in [(8, 16, 16, 4), (2, 3, 5, 4), (8, 16, 16, 4), (3, 4, 7, 4),
                          (8, 16, 16, 16), (2, 24, 7, 40), (8, 16, 16, 16), (3, 17, 5, 16)]:
        x = rng.standard_normal((n, c, size, size)).astype(np.float32) + 5.0
        w = rng.standard_normal((k, c, 3, 3)).astype(np.float32)
        grad = rng.standard_normal((n, k, size, size)).astype(np.float32)
        tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
        out = torch.nn.functional.conv2d(tx, tw, None, 1, 1)
        out.backward(torch.tensor(grad))
        for ours, ref in [(CpuBackend.conv(x, w, None, opts), out),
                          (CpuBackend.conv_weight_backward(x, w, grad, opts), tw.grad),
                          (CpuBackend.conv_x_backward(x, w, grad, opts), tx.grad)]:
            want = ref.detach().numpy()
            np.testing.assert_allclose(ours, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_max_pool_backward_sums_overlapping_windows_and_checks_indices() -> None:
    """Overlapping 3x3/stride-1 windows pick some inputs several times: their gradients add
    up (as torch's); an index outside the plane raises instead of writing out of bounds."""
    x = np.random.default_rng(1).standard_normal((2, 3, 6, 6)).astype(np.float32)
    out, idx = CpuBackend.max_pool_with_indices(x, (3, 3), (1, 1), (0, 0), (1, 1), False)
    grad = np.random.default_rng(2).standard_normal(out.shape).astype(np.float32)
    tx = torch.tensor(x, requires_grad=True)
    torch.nn.functional.max_pool2d(tx, 3, 1).backward(torch.tensor(grad))
    got = CpuBackend.max_pool_with_indices_backward(x, grad, idx)
    np.testing.assert_allclose(got, tx.grad.numpy(), rtol=1e-6, atol=1e-6)
    with pytest.raises(IndexError):
        CpuBackend.max_pool_with_indices_backward(x, grad, np.full_like(idx, 36))
