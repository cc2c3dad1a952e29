"""float32 gelu, gelu_backward, erf and erfc on CpuBackend: computed in float32 by the compiled
kernels (issue 17), checked against float64 math on the same float32 inputs, against torch and
against the composition.

The exact form and erf/erfc form x^2 exactly (hi + lo by FMA) inside exp, so their relative
error carries no x^2 condition factor: measured over [-16, 16] (dense grid and 2M normal
samples) gelu 5.8e-7, its gradient 5.1e-7 (relative to |Phi| + |x phi|, as Phi + x phi
crosses 0), erf 2.5e-7, erfc 5.6e-7; the bounds below are those plus a margin. The tanh form
rounds u = k (x + c x^3) to float32 first, as torch does, so its bound is 1e-6 times
max(1, x^2). Results near or below the smallest normal float32 also get two subnormal steps
of absolute slack."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from scipy.special import erf, erfc

from burnpy import Tensor
from burnpy.autodiff import Autodiff
from burnpy.backend.ops.activation_ops import ActivationOps
from burnpy_cpu import CpuBackend
from burnpy_cpu.array_ops import _float32_kernels

X = np.concatenate([np.linspace(-16, 16, 640001),
                    np.random.default_rng(0).standard_normal(100000) * 4]).astype(np.float32)
XD = X.astype(np.float64)
COND = np.maximum(1.0, XD * XD)
K = np.sqrt(2 / np.pi)
SUBNORMAL = float(np.finfo(np.float32).smallest_subnormal)


def _phi_parts() -> tuple[np.ndarray, np.ndarray]:
    """Phi(x) and x phi(x) in float64."""
    return 0.5 * erfc(-XD / np.sqrt(2)), XD * np.exp(-0.5 * XD * XD) / np.sqrt(2 * np.pi)


def _tanh_parts() -> tuple[np.ndarray, np.ndarray]:
    """S = sigmoid(2u) and 2 x S (1 - S) du in float64, the tanh form's derivative terms."""
    u = K * (XD + 0.044715 * XD**3)
    s = 1 / (1 + np.exp(-2 * u))
    return s, 2 * XD * s * (1 - s) * K * (1 + 3 * 0.044715 * XD * XD)


def _check(got: np.ndarray, ref: np.ndarray, rtol: float, scale: np.ndarray | None = None,
           cond: np.ndarray | float = 1.0) -> None:
    """float32 ``got`` within ``rtol`` * ``cond`` of ``ref`` relative to ``scale`` (|ref| by
    default), plus two subnormal steps (the spacing of float32 below its smallest normal: a
    subnormal intermediate, rounded, then scaled by the gradient, and the result rounded)."""
    assert got.dtype == np.float32
    scale = np.abs(ref) if scale is None else scale
    finite = np.isfinite(ref)
    bound = rtol * np.broadcast_to(cond, ref.shape) * scale + 2 * SUBNORMAL
    assert (np.abs(got - ref)[finite] <= bound[finite]).all()


def test_exact_forward_relative_error() -> None:
    _check(CpuBackend.gelu(X), XD * _phi_parts()[0], 7e-7)


def test_exact_backward_relative_error() -> None:
    phi, xphi = _phi_parts()
    _check(CpuBackend.gelu_backward(X, np.full_like(X, 1.5)), 1.5 * (phi + xphi), 7e-7,
           1.5 * (np.abs(phi) + np.abs(xphi)))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_tanh_form() -> None:
    s, ds = _tanh_parts()
    _check(CpuBackend.gelu(X, "tanh"), XD * s, 1e-6, cond=COND)
    _check(CpuBackend.gelu_backward(X, np.ones_like(X), "tanh"), s + ds, 1e-6,
           np.abs(s) + np.abs(ds), COND)


def test_erf_and_erfc_relative_error() -> None:
    _check(CpuBackend.float_erf(X), erf(XD), 4e-7)
    _check(CpuBackend.float_erfc(X), erfc(XD), 7e-7)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_matches_torch_and_the_protocol_composition(approximate: str) -> None:
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((64, 32)) * 3).astype(np.float32)
    g = rng.standard_normal((64, 32)).astype(np.float32)
    tx, tg = torch.from_numpy(x), torch.from_numpy(g)
    fwd, bwd = CpuBackend.gelu, CpuBackend.gelu_backward
    ours = fwd(x, approximate)  # type: ignore[arg-type]
    ours_b = bwd(x, g, approximate)  # type: ignore[arg-type]
    # torch's float32 1 + erf(x / sqrt 2) (or 1 + tanh) and the protocol's composition, which
    # is built the same way, cancel in the left tail: an ulp of 1, times |x| / 2.
    theirs = torch.nn.functional.gelu(tx, approximate=approximate).numpy()
    theirs_b = torch.ops.aten.gelu_backward(tg, tx, approximate=approximate).numpy()
    composed = ActivationOps.gelu.__func__(CpuBackend, x, approximate)  # type: ignore[attr-defined]
    composed_b = ActivationOps.gelu_backward.__func__(  # type: ignore[attr-defined]
        CpuBackend, x, g, approximate)
    # Backward, the tanh form's 1 - tanh^2 cancels likewise, times x du (up to 40 here).
    for want, want_b in ((theirs, theirs_b), (composed, composed_b)):
        np.testing.assert_allclose(ours, want, rtol=2e-6, atol=1e-6)
        np.testing.assert_allclose(ours_b, want_b, rtol=2e-5, atol=1e-5)
    # A central difference of the float64 forward.
    xd, h = x.astype(np.float64), 1e-6
    fd = (fwd(xd + h, approximate) - fwd(xd - h, approximate)) / (2 * h)  # type: ignore[arg-type]
    np.testing.assert_allclose(ours_b, g * fd, rtol=1e-5, atol=1e-6)


def test_erf_matches_torch() -> None:
    x = np.random.default_rng(2).standard_normal(4096).astype(np.float32) * 3
    t = torch.from_numpy(x)
    np.testing.assert_allclose(CpuBackend.float_erf(x), torch.erf(t).numpy(), rtol=1e-6,
                               atol=1e-7)
    np.testing.assert_allclose(CpuBackend.float_erfc(x), torch.erfc(t).numpy(), rtol=3e-6,
                               atol=1e-30)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_special_values_match_the_float64_path(approximate: str) -> None:
    vals = np.array([-0.0, 0.0, np.inf, -np.inf, np.nan, 3e38, -3e38, 1.0, -14.4, -14.6],
                    np.float32)
    got = CpuBackend.gelu(vals, approximate)  # type: ignore[arg-type]
    ref = CpuBackend.gelu(vals.astype(np.float64), approximate)  # type: ignore[arg-type]
    np.testing.assert_allclose(got, ref.astype(np.float32), rtol=1e-6, atol=2 * SUBNORMAL)
    assert np.signbit(got[0]) and not np.signbit(got[1])
    # Gradients at +-3e38 are left out: x^3 overflows float32 in the tanh form (as before).
    vals = vals[[0, 1, 2, 3, 4, 7, 8, 9]]
    back = CpuBackend.gelu_backward(vals, np.ones_like(vals), approximate)  # type: ignore[arg-type]
    ref_b = CpuBackend.gelu_backward(vals.astype(np.float64), np.ones(8), approximate)  # type: ignore[arg-type]
    np.testing.assert_allclose(back, ref_b.astype(np.float32), rtol=1e-6, atol=2 * SUBNORMAL)


def test_erf_special_values() -> None:
    vals = np.array([-0.0, 0.0, np.inf, -np.inf, np.nan, 3e38, -3e38, 11.0, -11.0], np.float32)
    ref = vals.astype(np.float64)
    for ours, want in ((CpuBackend.float_erf(vals), erf(ref)),
                       (CpuBackend.float_erfc(vals), erfc(ref))):
        np.testing.assert_allclose(ours, want.astype(np.float32), rtol=2e-7, atol=0)
    assert np.signbit(CpuBackend.float_erf(vals)[0])


@pytest.mark.parametrize("dtype", [np.dtype(np.float16), np.dtype("bfloat16")])
def test_16_bit_floats_are_computed_in_float32(dtype: np.dtype) -> None:
    x = np.linspace(-6, 6, 101).astype(dtype)
    x32 = x.astype(np.float32)
    for ours, ref in ((CpuBackend.gelu(x), CpuBackend.gelu(x32)),
                      (CpuBackend.gelu_backward(x, x), CpuBackend.gelu_backward(x32, x32)),
                      (CpuBackend.float_erf(x), CpuBackend.float_erf(x32)),
                      (CpuBackend.float_erfc(x), CpuBackend.float_erfc(x32))):
        assert ours.dtype == dtype
        np.testing.assert_array_equal(ours, ref.astype(dtype))


def test_strided_inputs_and_float64_keep_working() -> None:
    base = (np.random.default_rng(3).standard_normal((40, 30)) * 3).astype(np.float32)
    x, g = base.T, base[::-1].T  # a transpose, and one with a negative stride
    for approximate in ("none", "tanh"):
        fwd, bwd = CpuBackend.gelu, CpuBackend.gelu_backward
        np.testing.assert_array_equal(fwd(x, approximate),  # type: ignore[arg-type]
                                      fwd(x.copy(), approximate))  # type: ignore[arg-type]
        np.testing.assert_array_equal(bwd(x, g, approximate),  # type: ignore[arg-type]
                                      bwd(x.copy(), g.copy(), approximate))  # type: ignore[arg-type]
    np.testing.assert_array_equal(CpuBackend.float_erf(x), CpuBackend.float_erf(x.copy()))
    xd = x.astype(np.float64)
    assert CpuBackend.gelu(xd).dtype == np.float64
    np.testing.assert_allclose(CpuBackend.float_erf(xd), erf(xd), rtol=1e-15)


def test_autodiff_training_path_uses_float32_gelu() -> None:
    x = np.linspace(-6, 6, 97).astype(np.float32)
    t = Tensor.from_data(x, backend=Autodiff(CpuBackend)).require_grad()
    grads = t.gelu().sum().backward()
    found = t.grad(grads)
    assert found is not None
    grad = found.to_numpy()
    assert grad.dtype == np.float32
    np.testing.assert_array_equal(grad, CpuBackend.gelu_backward(x, np.ones_like(x)))


def test_kernels_compile_without_a_writable_cache(tmp_path: Path) -> None:
    """Installed read-only with no writable user cache either, the kernels still compile (per
    process); with ``NUMBA_CACHE_DIR`` writable, they are cached there."""
    src = Path(_float32_kernels.__file__)
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where numba would need a directory")
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    shutil.copy(src, pkg / "kernels.py")
    (pkg / "__pycache__").write_text("not a directory: no in-tree cache")
    script = ("import numpy as np, kernels; x = np.linspace(-5, 5, 11, dtype=np.float32); "
              "print(*kernels.run(kernels.gelu, x).tolist())")
    expected = " ".join(str(v) for v in CpuBackend.gelu(np.linspace(-5, 5, 11, dtype=np.float32))
                        .tolist())
    env = {**os.environ, "PYTHONPATH": str(pkg), "PYTHONDONTWRITEBYTECODE": "1",
           "NUMBA_CACHE_DIR": str(blocked / "numba"), "XDG_CACHE_HOME": str(blocked / "xdg"),
           "HOME": str(blocked / "home")}
    run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                         text=True, check=True)
    assert run.stdout.split() == expected.split()
    cache = tmp_path / "cache"
    env["NUMBA_CACHE_DIR"] = str(cache)
    run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                         text=True, check=True)
    assert run.stdout.split() == expected.split()
    assert any(p.suffix == ".nbc" for p in cache.rglob("*"))
