"""Cases of the matrix products (``matmul``, ``mm``, ``einsum``...; ``burnpy/tensor/arithmetic.py``)
and of ``burnpy.linalg``."""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any

import burnpy as bp
from burnpy.testing.cases import F, I, case
from burnpy.testing.lazy import LazyModule
from burnpy.testing.op_cases._common import (
    _IA,
    F64_32,
    FD,
    INF,
    INT,
    NAN,
    Fn,
)

if TYPE_CHECKING:
    import torch
else:  # imported when a case runs: registering the cases does not need torch
    torch = LazyModule("torch")


_MATMUL = {
    "1d_1d": ((4,), (4,)),
    "1d_2d": ((3,), (3, 4)),
    "2d_1d": ((3, 4), (4,)),
    "2d_2d": ((3, 4), (4, 5)),
    "3d_3d": ((2, 3, 4), (2, 4, 5)),
    "bcast_batch": ((2, 1, 3, 4), (3, 4, 2)),
    "3d_2d": ((2, 3, 4), (4, 5)),
    "2d_3d": ((3, 4), (2, 4, 5)),
    "1d_3d": ((4,), (2, 4, 3)),
    "3d_1d": ((2, 3, 4), (4,)),
    "empty_inner": ((3, 0), (0, 4)),
    "empty_outer": ((0, 3), (3, 4)),
}
for _name, (_sa, _sb) in _MATMUL.items():
    case(f"matmul_{_name}", operator.matmul, F(*_sa), F(*_sb), dtypes=FD)
case("matmul_noncontig", operator.matmul, F(3, 4, contiguous=False),
     F(2, 4, 5, contiguous=False), dtypes=FD)
case("matmul_method", lambda a, b: a.matmul(b), F(3, 4), F(4, 2), dtypes=FD)
case("matmul_transposed", lambda a, b: a @ b.mT, F(2, 3, 4), F(2, 5, 4), dtypes=FD)

case("int_matmul", operator.matmul, I(2, 3, 4, **_IA), I(4, 2, **_IA), dtypes=INT, grad=False)

case("mm", lambda a, b: a.mm(b), F(3, 4), F(4, 2), dtypes=FD)
case("mm_empty", lambda a, b: a.mm(b), F(3, 0), F(0, 2), dtypes=F64_32)
case("bmm", lambda a, b: a.bmm(b), F(2, 3, 4), F(2, 4, 5, contiguous=False), dtypes=FD)
case("mv", lambda a, v: a.mv(v), F(3, 4), F(4), dtypes=FD)
case("dot", lambda a, b: a.dot(b), F(5), F(5), dtypes=FD)
case("inner_1d", lambda a, b: bp.inner(a, b), F(4), F(4),
     torch_fn=lambda a, b: torch.inner(a, b), dtypes=FD)
case("inner_nd", lambda a, b: bp.inner(a, b), F(2, 3, 4), F(5, 4),
     torch_fn=lambda a, b: torch.inner(a, b), dtypes=FD)
case("inner_1d_nd", lambda a, b: bp.inner(a, b), F(4), F(2, 4),
     torch_fn=lambda a, b: torch.inner(a, b), dtypes=F64_32)
case("inner_0d", lambda a, b: bp.inner(a, b), F(), F(2, 3),
     torch_fn=lambda a, b: torch.inner(a, b), dtypes=F64_32)
case("outer", lambda a, b: a.outer(b), F(3), F(4), dtypes=FD)
case("kron_2d", lambda a, b: a.kron(b), F(2, 3), F(3, 2), dtypes=FD)
case("kron_mixed_dims", lambda a, b: a.kron(b), F(3), F(2, 2, 2), dtypes=F64_32)
case("addmm", lambda x, a, b: x.addmm(a, b), F(3, 2), F(3, 4), F(4, 2), dtypes=FD)
case("addmm_scaled_bcast", lambda x, a, b: x.addmm(a, b, beta=0.5, alpha=-2.0), F(2),
     F(3, 4), F(4, 2), dtypes=FD)
case("addmm_beta0_nan", lambda x, a, b: x.addmm(a, b, beta=0), F(3, 2, plant=(NAN,)),
     F(3, 4), F(4, 2), dtypes=F64_32, grad=False)
case("baddbmm", lambda x, a, b: x.baddbmm(a, b, beta=2.0, alpha=0.5), F(2, 3, 2),
     F(2, 3, 4), F(2, 4, 2), dtypes=FD)
case("addbmm", lambda x, a, b: x.addbmm(a, b, alpha=1.5), F(3, 2), F(4, 3, 5), F(4, 5, 2),
     dtypes=FD)
case("addmv", lambda x, a, v: x.addmv(a, v, beta=-1.0), F(3), F(3, 4), F(4), dtypes=FD)
case("addr", lambda x, a, b: x.addr(a, b, alpha=2.0), F(3, 4), F(3), F(4), dtypes=FD)

_EINSUM: dict[str, tuple[str, tuple[tuple[int, ...], ...]]] = {
    "matmul": ("ij,jk->ik", ((3, 4), (4, 5))),
    "implicit": ("ij,jk", ((3, 4), (4, 5))),
    "implicit_order": ("ba,ab", ((3, 4), (4, 3))),
    "bmm": ("bij,bjk->bik", ((2, 3, 4), (2, 4, 5))),
    "outer": ("i,j->ij", ((3,), (4,))),
    "dot": ("i,i->", ((4,), (4,))),
    "trace": ("ii", ((4, 4),)),
    "diagonal": ("ii->i", ((3, 3),)),
    "batch_diag": ("...ii->...i", ((2, 3, 3),)),
    "transpose": ("ij->ji", ((3, 4),)),
    "sum_all": ("ijk->", ((2, 3, 4),)),
    "ellipsis": ("...ij,...jk->...ik", ((2, 3, 4), (4, 5))),
    "ellipsis_bcast": ("...ij,...jk", ((2, 1, 3, 4), (3, 4, 2))),
    "three": ("ij,jk,kl->il", ((2, 3), (3, 4), (4, 2))),
    "bilinear": ("bn,anm,bm->ba", ((2, 3), (4, 3, 5), (2, 5))),
    "sum_alone": ("ij,kj->k", ((3, 4), (2, 4))),
    "repeat_across": ("iij,j->ij", ((3, 3, 4), (4,))),
    "spaces": ("i j , j -> i", ((3, 4), (4,))),
    "empty": ("ij,jk->ik", ((0, 4), (4, 5))),
}
for _name, (_eq, _shapes) in _EINSUM.items():
    case(f"einsum_{_name}", lambda *xs, e=_eq: bp.einsum(e, *xs), *(F(*s) for s in _shapes),
         torch_fn=lambda *xs, e=_eq: torch.einsum(e, *xs), dtypes=FD, accumulates=True)
case("einsum_list", lambda a, b: bp.einsum("ij,j->i", [a, b]), F(3, 4), F(4),
     torch_fn=lambda a, b: torch.einsum("ij,j->i", [a, b]), dtypes=F64_32)

def _lin(a: Any) -> Any:
    """``burnpy.linalg`` for a burnpy tensor, ``torch.linalg`` for a torch one: one lambda
    serves both sides."""
    return bp.linalg if isinstance(a, bp.Tensor) else torch.linalg


def _eye_of(a: Any, n: int) -> Any:
    if isinstance(a, bp.Tensor):
        return bp.Tensor.eye(n, backend=a.backend, device=a.device, dtype=a.dtype)
    return torch.eye(n, dtype=a.dtype)


def _dominant(a: Any) -> Any:
    """``a`` (entries in [-1, 1)) plus ``(n + 1) I``: diagonally dominant, well conditioned."""
    return a + _eye_of(a, a.shape[-1]) * float(a.shape[-1] + 1)


def _spd(a: Any) -> Any:
    """``a a^T + n I``: symmetric positive definite, well conditioned."""
    return a @ a.mT + _eye_of(a, a.shape[-1]) * float(a.shape[-1])


def _la(name: str, fn: Fn, *args: Any, **kwargs: Any) -> None:
    """A linalg case in float64 and float32, inputs in [-1, 1)."""
    case("linalg_" + name, fn, *(F(*a, low=-1.0, high=1.0) for a in args), dtypes=F64_32,
         **kwargs)


_la("inv", lambda a: _lin(a).inv(_dominant(a)), (2, 3, 3))
_la("det", lambda a: _lin(a).det(_dominant(a)), (2, 3, 3))
_la("det_negative", lambda a: _lin(a).det(-_dominant(a)), (3, 3))
_la("slogdet", lambda a: _lin(a).slogdet(-_dominant(a)).logabsdet, (2, 4, 4))
_la("slogdet_sign", lambda a: _lin(a).slogdet(_dominant(a) - 0.5 * a.shape[-1]).sign,
    (2, 4, 4), grad=False)
_la("solve", lambda a, b: _lin(a).solve(_dominant(a), b), (2, 3, 3), (2, 3, 2))
_la("solve_vector", lambda a, b: _lin(a).solve(_dominant(a), b), (2, 3, 3), (2, 3))
_la("solve_broadcast", lambda a, b: _lin(a).solve(_dominant(a), b), (3, 3), (2, 3, 4))
_la("solve_right", lambda a, b: _lin(a).solve(_dominant(a), b, left=False), (2, 3, 3), (2, 4, 3))
_la("cholesky", lambda a: _lin(a).cholesky(_spd(a)), (2, 4, 4))
_la("cholesky_upper", lambda a: _lin(a).cholesky(_spd(a), upper=True), (3, 3))
_la("qr_tall", lambda a: tuple(_lin(a).qr(a)), (2, 5, 3))
_la("qr_square_complete", lambda a: tuple(_lin(a).qr(a, mode="complete")), (2, 3, 3))
_la("qr_wide", lambda a: tuple(_lin(a).qr(a)), (2, 3, 5))
_la("qr_r", lambda a: _lin(a).qr(a, mode="r")[1], (4, 3), grad=False)
# Eigenvectors and singular vectors are defined up to sign: compare sign-free functions.
_la("eigh", lambda a: (_lin(a).eigh(_spd(a)).eigenvalues, _lin(a).eigh(_spd(a))[1] ** 2),
    (2, 4, 4))
_la("eigh_upper", lambda a: _lin(a).eigh(_spd(a), UPLO="U")[1] ** 2, (3, 3))
_la("eigvalsh", lambda a: _lin(a).eigvalsh(a + a.mT), (2, 4, 4))
_la("svd_tall", lambda a: tuple(t ** 2 if i != 1 else t for i, t in
                               enumerate(_lin(a).svd(a, full_matrices=False))), (2, 5, 3))
_la("svd_wide", lambda a: tuple(t ** 2 if i != 1 else t for i, t in
                               enumerate(_lin(a).svd(a, full_matrices=False))), (2, 3, 4))
_la("svd_reconstruct", lambda a: (lambda u, s, vh: ((u * s.unsqueeze(-2)) @ vh) ** 2)(
    *_lin(a).svd(a, full_matrices=False)), (2, 4, 3))
_la("svdvals", lambda a: _lin(a).svdvals(a), (2, 3, 5))
_la("pinv", lambda a: _lin(a).pinv(a), (2, 5, 3))
_la("pinv_hermitian", lambda a: _lin(a).pinv(_spd(a), hermitian=True), (3, 3))
_la("matrix_rank", lambda a: _lin(a).matrix_rank(a), (2, 4, 3), grad=False)
_la("lstsq", lambda a, b: _lin(a).lstsq(a, b).solution, (2, 5, 3), (2, 5, 2))
_la("matrix_power", lambda a: _lin(a).matrix_power(a, 3), (2, 3, 3))
_la("matrix_power_negative", lambda a: _lin(a).matrix_power(_dominant(a), -2), (2, 3, 3))
_la("matrix_power_zero", lambda a: _lin(a).matrix_power(a, 0), (2, 3, 3), grad=False)
_la("cross", lambda a, b: _lin(a).cross(a, b), (1, 4, 3), (2, 4, 3))
_la("cross_dim", lambda a, b: _lin(a).cross(a, b, dim=0), (3, 4), (3, 4))
_la("vector_norm", lambda a: _lin(a).vector_norm(a), (3, 4))
_la("vector_norm_dim", lambda a: _lin(a).vector_norm(a, 2, dim=-1, keepdim=True), (2, 3, 4))
_la("vector_norm_ord1", lambda a: _lin(a).vector_norm(a, 1, dim=(0, 2)), (2, 3, 4))
_la("vector_norm_ord3", lambda a: _lin(a).vector_norm(a, 3, dim=1), (3, 4))
_la("vector_norm_inf", lambda a: _lin(a).vector_norm(a, INF, dim=1), (3, 4))
_la("vector_norm_neg_inf", lambda a: _lin(a).vector_norm(a, -INF, dim=1), (3, 4))
_la("matrix_norm_fro", lambda a: _lin(a).matrix_norm(a), (2, 3, 4))
_la("matrix_norm_nuc", lambda a: _lin(a).matrix_norm(a, "nuc"), (2, 3, 4))
_la("matrix_norm_2", lambda a: _lin(a).matrix_norm(a, 2), (2, 3, 4))
_la("matrix_norm_neg2", lambda a: _lin(a).matrix_norm(a, -2), (2, 4, 3))
_la("matrix_norm_1", lambda a: _lin(a).matrix_norm(a, 1, keepdim=True), (2, 3, 4))
_la("matrix_norm_inf_dims", lambda a: _lin(a).matrix_norm(a, -INF, dim=(0, 2)), (3, 2, 4))
_la("norm", lambda a: _lin(a).norm(a), (2, 3, 4))
_la("norm_dim", lambda a: _lin(a).norm(a, 3, dim=1), (2, 3, 4))
_la("norm_matrix_ord", lambda a: _lin(a).norm(a, "nuc"), (3, 4))
