"""burnpy.linalg beyond the conformance table: torch's result conventions (empty outputs,
named tuples, drivers), the host round trip of the protocol's kernels, float32 gradients,
rank-deficient input, and the errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import burnpy as bp
from burnpy.autodiff import Autodiff
from burnpy.backend.errors import (
    AutodiffError,
    InvalidArgumentError,
    ShapeError,
    UnsupportedDTypeError,
)
from burnpy.backend.ops.linalg_ops import LinalgOps
from burnpy_cpu import CpuBackend

AD = Autodiff(CpuBackend)
RNG = np.random.default_rng(7)


def _t(arr: np.ndarray, backend: type = CpuBackend) -> bp.Tensor:
    return bp.Tensor.from_data(arr, backend=backend)


def _close(got: bp.Tensor, want: torch.Tensor, tol: float = 1e-10) -> None:
    np.testing.assert_allclose(got.to_numpy(), want.detach().numpy(), rtol=tol, atol=tol)


def test_host_round_trip_defaults_match_the_numpy_overrides() -> None:
    """The provided kernels (what WebGPU runs) equal CpuBackend's in-place ones."""
    a = RNG.standard_normal((2, 4, 3))
    sq = RNG.standard_normal((2, 3, 3)) + 4 * np.eye(3)
    spd = sq @ sq.transpose(0, 2, 1)
    calls = [("float_inv", (sq,)), ("float_solve", (sq, a[:, :3, :])),
             ("float_slogdet", (sq,)), ("float_cholesky", (spd,)), ("float_qr", (a, True)),
             ("float_eigh", (spd, True)), ("float_svd", (a, False))]
    for name, args in calls:
        prims = [arg if isinstance(arg, bool) else arg.copy() for arg in args]
        native = getattr(CpuBackend, name)(*prims)
        host = getattr(LinalgOps, name).__func__(CpuBackend, *prims)
        for n_out, h_out in zip(native if isinstance(native, tuple) else (native,),
                                host if isinstance(host, tuple) else (host,), strict=True):
            assert n_out.shape == h_out.shape and n_out.dtype == h_out.dtype, name
            np.testing.assert_allclose(n_out, h_out, rtol=1e-12, atol=1e-12)


def test_slogdet_and_qr_r_follow_torch_conventions() -> None:
    a = RNG.standard_normal((3, 3))
    sign, logabsdet = bp.linalg.slogdet(_t(a))
    want = torch.linalg.slogdet(torch.tensor(a))
    assert bp.linalg.slogdet(_t(a)).sign is not None
    _close(sign, want.sign)
    _close(logabsdet, want.logabsdet)
    q, r = bp.linalg.qr(_t(a), mode="r")
    assert q.shape == (0,)
    _close(r, torch.linalg.qr(torch.tensor(a), mode="r").R)


def test_full_matrices_svd_values_and_gauge_invariant_gradient() -> None:
    a = RNG.standard_normal((2, 5, 3))
    x = _t(a, AD).require_grad()
    u, s, vh = bp.linalg.svd(x, full_matrices=True)
    assert u.shape == (2, 5, 5) and vh.shape == (2, 3, 3)
    xt = torch.tensor(a, requires_grad=True)
    ut, st, vht = torch.linalg.svd(xt, full_matrices=True)
    _close(s, st)
    u_np = u.to_numpy()
    np.testing.assert_allclose(u_np.swapaxes(-1, -2) @ u_np,
                               np.broadcast_to(np.eye(5), (2, 5, 5)), atol=1e-12)
    w = RNG.standard_normal((2, 5, 3))
    loss = (((u.narrow(-1, 0, 3) * s.unsqueeze(-2)) @ vh) ** 2 * _t(w, AD)).sum()
    grads = loss.backward()
    ((((ut[..., :3] * st.unsqueeze(-2)) @ vht) ** 2) * torch.tensor(w)).sum().backward()
    assert xt.grad is not None
    _close(x.grad(grads), xt.grad)


@pytest.mark.parametrize("driver", ["gels", "gelsy", "gelsd", "gelss"])
def test_lstsq_drivers_return_what_torch_returns(driver: str) -> None:
    a, b = RNG.standard_normal((2, 6, 3)), RNG.standard_normal((2, 6, 2))
    got = bp.linalg.lstsq(_t(a), _t(b), driver=driver)
    want = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), driver=driver)
    _close(got.solution, want.solution)
    for field in ("residuals", "rank", "singular_values"):
        ours, theirs = getattr(got, field), getattr(want, field)
        assert ours.shape == tuple(theirs.shape), field
        np.testing.assert_allclose(ours.to_numpy(), theirs.numpy(), rtol=1e-10, atol=1e-10)


def test_rank_deficient_pinv_and_rank_match_torch() -> None:
    left, right = RNG.standard_normal((2, 5, 2)), RNG.standard_normal((2, 2, 4))
    a = left @ right
    assert bp.linalg.matrix_rank(_t(a)).tolist() == [2, 2]
    _close(bp.linalg.pinv(_t(a)), torch.linalg.pinv(torch.tensor(a)), 1e-9)
    assert bp.linalg.matrix_rank(_t(a), hermitian=False, atol=1e9).tolist() == [0, 0]


@pytest.mark.parametrize("name", ["inv", "det", "cholesky", "eigvalsh", "svdvals", "pinv"])
def test_float32_gradients_match_torch(name: str) -> None:
    a = RNG.uniform(-1.0, 1.0, (2, 4, 4)).astype(np.float32)
    a = a @ a.transpose(0, 2, 1) + 4 * np.eye(4, dtype=np.float32)
    w = RNG.standard_normal((2, 4, 4) if name in ("inv", "cholesky", "pinv") else
                            (2, 4) if name in ("eigvalsh", "svdvals") else (2,))
    w = w.astype(np.float32)
    x = _t(a, AD).require_grad()
    grads = (getattr(bp.linalg, name)(x) * _t(w, AD)).sum().backward()
    xt = torch.tensor(a, requires_grad=True)
    (getattr(torch.linalg, name)(xt) * torch.tensor(w)).sum().backward()
    assert xt.grad is not None
    np.testing.assert_allclose(x.grad(grads).to_numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-4)


def test_errors_name_the_op_and_the_problem() -> None:
    with pytest.raises(UnsupportedDTypeError, match=r"linalg\.inv"):
        bp.linalg.inv(bp.Tensor.from_data(np.eye(2, dtype=np.int64), backend=CpuBackend))
    with pytest.raises(ShapeError, match=r"linalg\.det: expected square"):
        bp.linalg.det(_t(np.ones((2, 3))))
    with pytest.raises(InvalidArgumentError, match="mode"):
        bp.linalg.qr(_t(np.eye(2)), mode="full")
    with pytest.raises(ShapeError, match="same number of dims"):
        bp.linalg.cross(_t(np.ones(3)), _t(np.ones((2, 3))))
    with pytest.raises(InvalidArgumentError, match="driver"):
        bp.linalg.lstsq(_t(np.eye(2)), _t(np.eye(2)), driver="gesv")
    x = _t(RNG.standard_normal((4, 2)), AD).require_grad()
    with pytest.raises(AutodiffError, match="mode='complete'"):
        bp.linalg.qr(x, mode="complete").Q.sum().backward()


def test_tensor_cross_takes_the_first_dim_of_size_3_as_torch() -> None:
    a, b = RNG.standard_normal((3, 4, 3)), RNG.standard_normal((3, 1, 3))
    want = torch.tensor(a).cross(torch.tensor(b))  # dim 0: torch's first dim of size 3
    np.testing.assert_allclose(_t(a).cross(_t(b)).to_numpy(), want.numpy(), rtol=1e-12)
    np.testing.assert_allclose(bp.linalg.cross(_t(a), _t(b)).to_numpy(),
                               torch.linalg.cross(torch.tensor(a), torch.tensor(b)).numpy(),
                               rtol=1e-12)
    with pytest.raises(ShapeError, match=r"linalg\.cross: dim 1 must have size 3, got shapes "
                                         r"\(3, 4, 3\) and \(3, 1, 3\)"):
        _t(a).cross(_t(b), dim=1)


def test_matrix_power_and_norm_dispatch() -> None:
    a = RNG.standard_normal((2, 3, 3)) + 3 * np.eye(3)
    at = torch.tensor(a)
    for n in (-3, -1, 0, 1, 2, 5):
        _close(bp.linalg.matrix_power(_t(a), n), torch.linalg.matrix_power(at, n), 1e-9)
    v = RNG.standard_normal(5)
    for ord_ in (None, 1, 2, 0, np.inf, -np.inf, 0.5):
        _close(bp.linalg.norm(_t(v), ord_), torch.linalg.norm(torch.tensor(v), ord_))
    m = RNG.standard_normal((3, 4))
    for ord_m in ("fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf):
        _close(bp.linalg.norm(_t(m), ord_m), torch.linalg.norm(torch.tensor(m), ord_m))
    _close(bp.linalg.norm(_t(a), dim=(0, 2), keepdim=True),
           torch.linalg.norm(at, dim=(0, 2), keepdim=True))
