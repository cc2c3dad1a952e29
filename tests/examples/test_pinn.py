"""The PINN example, ``python -m burnpy.examples.pinn``: its run, its reference solution and the
derivatives its residual is built from."""

from __future__ import annotations

import itertools
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from burnpy import Autodiff, DType, Tensor
from burnpy.examples import pinn
from burnpy.train.plot import matplotlib_available
from burnpy_cpu import CpuBackend

ROOT = Path(__file__).resolve().parents[2]
B = Autodiff(CpuBackend)


def test_short_run_reports_errors_and_plots(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert pinn.main(["--short", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("relative L2 error"))
    error = float(line.split(": ")[1].split()[0])
    assert math.isfinite(error) and error > 0
    assert "untrained relative L2 error: " in out
    assert (tmp_path / "burgers.png").is_file() == matplotlib_available()


def test_runs_as_a_module(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "burnpy.examples.pinn", "--short", "--dtype", "float64",
         "--out", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert "relative L2 error vs the Cole-Hopf solution" in result.stdout


def test_cole_hopf_initial_condition_and_symmetry() -> None:
    x = np.linspace(-1.0, 1.0, 41)
    np.testing.assert_allclose(pinn.cole_hopf(x, 0.0), -np.sin(np.pi * x), atol=1e-12)
    for t in (0.1, 0.5, 1.0):
        u = pinn.cole_hopf(x, t)
        np.testing.assert_allclose(u[::-1], -u, atol=1e-12)
        assert abs(u[0]) < 1e-12 and abs(u[-1]) < 1e-12  # the boundary condition


def test_cole_hopf_steepest_slope_matches_the_benchmark() -> None:
    # Basdevant et al. (1986): the slope at x = 0 peaks at t = 1.6037 / pi, at -152.00516.
    h, t = 1e-7, 1.6037 / math.pi
    slope = (pinn.cole_hopf(h, t) - pinn.cole_hopf(-h, t)) / (2 * h)
    assert slope == pytest.approx(-152.00516, abs=1e-3)


def test_cole_hopf_satisfies_the_equation() -> None:
    x, t, h = np.linspace(-0.9, 0.9, 7), 0.3, 1e-4
    u = pinn.cole_hopf(x, t)
    u_t = (pinn.cole_hopf(x, t + h) - pinn.cole_hopf(x, t - h)) / (2 * h)
    u_x = (pinn.cole_hopf(x + h, t) - pinn.cole_hopf(x - h, t)) / (2 * h)
    u_xx = (pinn.cole_hopf(x + h, t) - 2 * u + pinn.cole_hopf(x - h, t)) / h**2
    np.testing.assert_allclose(u_t + u * u_x - pinn.NU * u_xx, 0.0, atol=1e-5)


def _tiny(seed: int = 0) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """Weights of a 2-5-5-1 network and 7 points, float64."""
    rng = np.random.default_rng(seed)
    sizes = [2, 5, 5, 1]
    weights: list[np.ndarray] = []
    for a, b in itertools.pairwise(sizes):
        weights += [rng.normal(0.0, 0.8, (b, a)), rng.normal(0.0, 0.3, b)]
    return weights, rng.uniform(-1, 1, (7, 1)), rng.uniform(0, 1, (7, 1))


def _on(values: list[np.ndarray], backend: type = B) -> list[Tensor]:
    return [Tensor.from_data(v, backend=backend) for v in values]


def test_derivatives_match_torch_autograd() -> None:
    weights, x, t = _tiny()
    params = [p.require_grad() for p in _on(weights)]
    xs, ts = _on([x, t])
    ours = [d.inner().to_numpy() for d in pinn.derivatives(xs, ts, params)]

    tw = [torch.tensor(w, requires_grad=True) for w in weights]
    tx = torch.tensor(x, requires_grad=True)
    tt = torch.tensor(t, requires_grad=True)
    h = torch.cat([tx, tt * 2.0 - 1.0], 1)
    for i in range(0, len(tw), 2):
        h = torch.nn.functional.linear(h, tw[i], tw[i + 1])
        if i + 2 < len(tw):
            h = torch.tanh(h)
    ux, ut = torch.autograd.grad(h.sum(), (tx, tt), create_graph=True)
    (uxx,) = torch.autograd.grad(ux.sum(), tx)
    for name, got, want in zip(("u", "u_x", "u_t", "u_xx"), ours, (h, ux, ut, uxx), strict=True):
        np.testing.assert_allclose(got, want.detach().numpy(), rtol=1e-10, atol=1e-12,
                                   err_msg=name)


def test_residual_loss_parameter_gradient_matches_finite_differences() -> None:
    weights, x, t = _tiny(1)
    params = [p.require_grad() for p in _on(weights)]
    xs, ts = _on([x, t])
    loss = pinn.residual_loss(xs, ts, params)
    assert loss.dtype == DType.float64
    grads = loss.backward()
    analytic = [p.grad(grads) for p in params]
    assert all(g is not None for g in analytic)

    xp, tp = _on([x, t], CpuBackend)

    def value(ws: list[np.ndarray]) -> float:
        return float(pinn.residual_loss(xp, tp, _on(ws, CpuBackend)).item())

    eps = 1e-6
    for k, w in enumerate(weights):
        numeric = np.zeros_like(w)
        for idx in np.ndindex(w.shape):
            up = [v.copy() for v in weights]
            down = [v.copy() for v in weights]
            up[k][idx] += eps
            down[k][idx] -= eps
            numeric[idx] = (value(up) - value(down)) / (2 * eps)
        got = analytic[k]
        assert got is not None
        np.testing.assert_allclose(got.to_numpy(), numeric, rtol=1e-6, atol=1e-8,
                                   err_msg=f"parameter {k}")


def test_model_params_follow_the_layers() -> None:
    model = pinn.BurgersMLP(8, 2, backend=B, dtype=DType.float64)
    params = model.params()
    assert [tuple(p.shape) for p in params] == [(8, 2), (8,), (8, 8), (8,), (1, 8), (1,)]
    assert model.num_params() == sum(p.numel() for p in params)
    x = Tensor.from_data(np.zeros((3, 1)), backend=B)
    assert model(x, x).shape == (3, 1)
