"""float32 gelu and gelu_backward on CpuBackend: computed in float32 (issue 17), checked against
float64 references. Relative error is bounded by 1e-6 times max(1, x^2), x^2 being gelu's
condition number in the left tail (where half an ulp of input already moves it that much)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.special import erfc

from burnpy import Tensor
from burnpy.autodiff import Autodiff
from burnpy_cpu import CpuBackend

X = np.linspace(-10, 10, 400001).astype(np.float32)
XD = X.astype(np.float64)
COND = np.maximum(1.0, XD * XD)
K = np.sqrt(2 / np.pi)


def _phi_parts() -> tuple[np.ndarray, np.ndarray]:
    """Phi(x) and x phi(x) in float64."""
    return 0.5 * erfc(-XD / np.sqrt(2)), XD * np.exp(-0.5 * XD * XD) / np.sqrt(2 * np.pi)


def _tanh_parts() -> tuple[np.ndarray, np.ndarray]:
    """S = sigmoid(2u) and 2 x S (1 - S) du in float64, the tanh form's derivative terms."""
    u = K * (XD + 0.044715 * XD**3)
    s = 1 / (1 + np.exp(-2 * u))
    return s, 2 * XD * s * (1 - s) * K * (1 + 3 * 0.044715 * XD * XD)


def test_exact_forward_relative_error() -> None:
    got = CpuBackend.gelu(X)
    assert got.dtype == np.float32
    ref = XD * _phi_parts()[0]
    rel = np.abs(got - ref) / np.abs(np.where(ref == 0, 1, ref))
    assert (rel / COND).max() < 1e-6


def test_exact_backward_relative_error() -> None:
    grad = np.full_like(X, 1.5)
    got = CpuBackend.gelu_backward(X, grad)
    assert got.dtype == np.float32
    phi, xphi = _phi_parts()
    err = np.abs(got - 1.5 * (phi + xphi)) / (1.5 * (np.abs(phi) + np.abs(xphi)))
    assert (err / COND).max() < 1e-6


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_tanh_form() -> None:
    s, ds = _tanh_parts()
    ref = XD * s
    got = CpuBackend.gelu(X, "tanh")
    nz = ref != 0
    assert ((np.abs(got - ref)[nz] / np.abs(ref[nz])) / COND[nz]).max() < 1e-6
    back = CpuBackend.gelu_backward(X, np.ones_like(X), "tanh")
    assert ((np.abs(back - (s + ds)) / (np.abs(s) + np.abs(ds))) / COND).max() < 1e-6


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_backward_matches_torch_and_composition(approximate: str) -> None:
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((64, 32)) * 3).astype(np.float32)
    g = rng.standard_normal((64, 32)).astype(np.float32)
    ours = CpuBackend.gelu_backward(x, g, approximate)  # type: ignore[arg-type]
    theirs = torch.ops.aten.gelu_backward(torch.from_numpy(g), torch.from_numpy(x),
                                          approximate=approximate).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=2e-5, atol=1e-6)
    # The composition: a central difference of the float64 forward.
    xd, h = x.astype(np.float64), 1e-6
    fwd = CpuBackend.gelu
    fd = (fwd(xd + h, approximate) - fwd(xd - h, approximate)) / (2 * h)  # type: ignore[arg-type]
    np.testing.assert_allclose(ours, g * fd, rtol=1e-5, atol=1e-6)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_special_values_match_the_float64_path(approximate: str) -> None:
    vals = np.array([-0.0, 0.0, np.inf, -np.inf, np.nan, 3e38, -3e38, 1.0], np.float32)
    got = CpuBackend.gelu(vals, approximate)  # type: ignore[arg-type]
    ref = CpuBackend.gelu(vals.astype(np.float64), approximate)  # type: ignore[arg-type]
    np.testing.assert_allclose(got, ref.astype(np.float32), rtol=1e-6)
    assert np.signbit(got[0]) and not np.signbit(got[1])
    # Gradients at +-3e38 are left out: x^3 overflows float32 in the tanh form (as before).
    vals = vals[[0, 1, 2, 3, 4, 7]]
    back = CpuBackend.gelu_backward(vals, np.ones_like(vals), approximate)  # type: ignore[arg-type]
    ref_b = CpuBackend.gelu_backward(vals.astype(np.float64), np.ones(6), approximate)  # type: ignore[arg-type]
    np.testing.assert_allclose(back, ref_b.astype(np.float32), rtol=1e-6)


def test_autodiff_training_path_uses_float32_gelu() -> None:
    x = np.linspace(-6, 6, 97).astype(np.float32)
    t = Tensor.from_data(x, backend=Autodiff(CpuBackend)).require_grad()
    grads = t.gelu().sum().backward()
    found = t.grad(grads)
    assert found is not None
    grad = found.to_numpy()
    assert grad.dtype == np.float32
    np.testing.assert_array_equal(grad, CpuBackend.gelu_backward(x, np.ones_like(x)))
