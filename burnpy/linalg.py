"""``burnpy.linalg``: torch.linalg's names and semantics, batched over leading dims, for
float32 and float64 tensors on every backend.

The decompositions (inverse, solve, log-determinant, Cholesky, QR, symmetric eigensystem, SVD)
run a backend kernel (``burnpy/backend/ops/linalg_ops.py``: NumPy or CuPy in place, a host
round trip through NumPy elsewhere, WebGPU included) inside a ``Function`` whose backward and
jvp are torch's formulas written with Tensor ops, so they are differentiable again (second
order, HVPs) on every decorator stack. Everything else (norms, det, pinv, lstsq, matrix_power,
cross...) is composed from those and from Tensor ops.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

from burnpy.backend.dtype import DType
from burnpy.backend.errors import (
    AutodiffError,
    InvalidArgumentError,
    ShapeError,
    UnsupportedDTypeError,
    describe,
)
from burnpy.custom_ops.function import Function, FunctionCtx
from burnpy.tensor import arithmetic
from burnpy.tensor._core import FLOAT, new
from burnpy.tensor.autocast_hook import autocast_op
from burnpy.tensor.tensor import Tensor

_FLOATS = (DType.float32, DType.float64)


class SlogdetResult(NamedTuple):
    """``(sign, logabsdet)`` of ``slogdet``, as torch's named tuple."""

    sign: Tensor
    logabsdet: Tensor


class QRResult(NamedTuple):
    """``(Q, R)`` of ``qr``."""

    Q: Tensor
    R: Tensor


class EighResult(NamedTuple):
    """``(eigenvalues, eigenvectors)`` of ``eigh``."""

    eigenvalues: Tensor
    eigenvectors: Tensor


class SVDResult(NamedTuple):
    """``(U, S, Vh)`` of ``svd``."""

    U: Tensor
    S: Tensor
    Vh: Tensor


class LstsqResult(NamedTuple):
    """``(solution, residuals, rank, singular_values)`` of ``lstsq``; the last three are
    empty where the driver does not compute them, as in torch."""

    solution: Tensor
    residuals: Tensor
    rank: Tensor
    singular_values: Tensor


# ---- checks and small differentiable helpers ---------------------------------------------------
def _checked(op: str, a: Tensor, *, square: bool = False, min_ndim: int = 2) -> None:
    """Refuse non-float dtypes, too few dims, and (``square``) non-square matrices."""
    if not isinstance(a, Tensor) or a.kind is not FLOAT or a.dtype not in _FLOATS:
        what = a.dtype if isinstance(a, Tensor) else type(a).__name__
        raise UnsupportedDTypeError(f"linalg.{op}: expected a float32 or float64 tensor, got "
                                    f"{what!r}")
    if a.ndim < min_ndim:
        raise ShapeError(f"linalg.{op}: expected at least {min_ndim} dims, got shape "
                         f"{describe(a.shape)}")
    if square and a.shape[-1] != a.shape[-2]:
        raise ShapeError(f"linalg.{op}: expected square matrices [..., n, n], got shape "
                         f"{describe(a.shape)}")


def _eye(like: Tensor, n: int, m: int | None = None) -> Tensor:
    """An ``n x m`` identity in ``like``'s backend, device and dtype."""
    return Tensor.eye(n, m, backend=like.backend, device=like.device, dtype=like.dtype)


def _band(like: Tensor, k: int, lower: bool) -> Tensor:
    """The 0/1 mask of the lower (``col - row <= k``) or upper (``col - row >= k``) band."""
    rows, cols = like.shape[-2], like.shape[-1]
    r = Tensor.arange(0, rows, backend=like.backend, device=like.device).reshape(rows, 1)
    c = Tensor.arange(0, cols, backend=like.backend, device=like.device).reshape(1, cols)
    offset = c - r
    return (offset <= k if lower else offset >= k).cast(like.dtype)


def _tril(x: Tensor, k: int = 0) -> Tensor:
    return x * _band(x, k, lower=True)


def _triu(x: Tensor, k: int = 0) -> Tensor:
    return x * _band(x, k, lower=False)


def _diagonal(x: Tensor) -> Tensor:
    """The main diagonal of each matrix of ``x [..., n, n]``: ``[..., n]``."""
    return (x * _eye(x, x.shape[-2], x.shape[-1])).sum(-1)


def _diag_embed(v: Tensor) -> Tensor:
    """``[..., n]`` -> diagonal matrices ``[..., n, n]``."""
    return v.unsqueeze(-1) * _eye(v, v.shape[-1])


def _prim(x: Tensor) -> Any:
    return x.primitive


def _wrap(like: Tensor, primitive: Any) -> Tensor:
    return new(like.backend, primitive, FLOAT)


def _broadcast_batch(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    """``a [..., n, n]`` and ``b [..., n, k]`` expanded to one batch shape."""
    batch = _broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return (a.expand(*batch, *a.shape[-2:]) if a.shape[:-2] != batch else a,
            b.expand(*batch, *b.shape[-2:]) if b.shape[:-2] != batch else b)


def _broadcast_shapes(x: Sequence[int], y: Sequence[int]) -> tuple[int, ...]:
    n = max(len(x), len(y))
    xs, ys = (1,) * (n - len(x)) + tuple(x), (1,) * (n - len(y)) + tuple(y)
    out = []
    for p, q in zip(xs, ys, strict=True):
        if p != q and p != 1 and q != 1:
            raise ShapeError(f"linalg: batch shapes {describe(tuple(x))} and "
                             f"{describe(tuple(y))} do not broadcast")
        out.append(q if p == 1 else p)
    return tuple(out)


# ---- the kernels as Functions: torch's derivative formulas, written with Tensor ops ---------
class _Inv(Function):
    """``A^-1``: gradient ``-A^-T G A^-T``, tangent ``-A^-1 dA A^-1``."""

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor) -> Tensor:
        y = _wrap(a, a.backend.float_inv(_prim(a)))
        ctx.save_for_backward(y)
        ctx.save_for_forward(y)
        return y

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> Tensor:
        (y,) = ctx.saved_tensors
        assert y is not None
        return -(y.mT @ grad @ y.mT)

    @staticmethod
    def jvp(ctx: FunctionCtx, da: Tensor) -> Tensor:
        (y,) = ctx.saved_tensors
        assert y is not None
        return -(y @ da @ y)


class _Solve(Function):
    """``X = A^-1 B`` (``B [..., n, k]``, same batch): ``gB = A^-T G``, ``gA = -gB X^T``;
    tangent ``A^-1 (dB - dA X)``."""

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor, b: Tensor) -> Tensor:
        x = _wrap(a, a.backend.float_solve(_prim(a), _prim(b)))
        ctx.save_for_backward(a, x)
        ctx.save_for_forward(a, x)
        return x

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor | None, Tensor]:
        a, x = ctx.saved_tensors
        assert a is not None and x is not None
        grad_b = _solve(a.mT, grad)
        return (-(grad_b @ x.mT) if ctx.needs_input_grad[0] else None), grad_b

    @staticmethod
    def jvp(ctx: FunctionCtx, da: Tensor, db: Tensor) -> Tensor:
        a, x = ctx.saved_tensors
        assert a is not None and x is not None
        return _solve(a, db - da @ x)


def _solve(a: Tensor, b: Tensor) -> Tensor:
    result: Tensor = _Solve.apply(a, b)
    return result


def _inv(a: Tensor) -> Tensor:
    result: Tensor = _Inv.apply(a)
    return result


class _Slogdet(Function):
    """``(sign, log|det A|)``: gradient ``g A^-T``, tangent ``tr(A^-1 dA)``; sign is
    piecewise constant."""

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor) -> tuple[Tensor, Tensor]:
        sign, logabsdet = a.backend.float_slogdet(_prim(a))
        outputs = _wrap(a, sign), _wrap(a, logabsdet)
        ctx.mark_non_differentiable(outputs[0])
        ctx.save_for_backward(a)
        ctx.save_for_forward(a)
        return outputs

    @staticmethod
    def backward(ctx: FunctionCtx, grad_sign: Tensor, grad: Tensor) -> Tensor:
        (a,) = ctx.saved_tensors
        assert a is not None
        return grad.unsqueeze(-1).unsqueeze(-1) * _inv(a).mT

    @staticmethod
    def jvp(ctx: FunctionCtx, da: Tensor) -> tuple[None, Tensor]:
        (a,) = ctx.saved_tensors
        assert a is not None
        return None, (_inv(a).mT * da).sum((-2, -1))


class _Cholesky(Function):
    """The lower factor ``L``: torch's gradient ``L^-T Φ(L^T gL) L^-1`` and tangent
    ``L Φ(L^-1 dA L^-T)`` (Φ: lower triangle, diagonal halved)."""

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor) -> Tensor:
        low = _wrap(a, a.backend.float_cholesky(_prim(a)))
        ctx.save_for_backward(low)
        ctx.save_for_forward(low)
        return low

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> Tensor:
        (low,) = ctx.saved_tensors
        assert low is not None
        g = _tril(low.mT @ grad)
        g = 0.5 * (g + _tril(g, -1).mT)
        g = _solve(low.mT, g)
        return _solve(low.mT, g.mT).mT

    @staticmethod
    def jvp(ctx: FunctionCtx, da: Tensor) -> Tensor:
        (low,) = ctx.saved_tensors
        assert low is not None
        low_inv = _inv(low)
        phi = low_inv @ da @ low_inv.mT
        phi = _tril(phi) - 0.5 * _diag_embed(_diagonal(phi))
        return low @ phi


def _qr_tall_backward(q: Tensor, r: Tensor, grad_q: Tensor, grad_r: Tensor) -> Tensor:
    """torch's QR gradient for ``m >= n`` (reduced): ``(gQ + Q copyltu(M)) R^-T`` with
    ``M = triu(gR R^T - Q^T gQ)`` made symmetric, diagonal kept."""
    m = _triu(grad_r @ r.mT - q.mT @ grad_q)
    m = m + m.mT - _diag_embed(_diagonal(m))
    g = q @ m + grad_q
    return _solve(r, g.mT).mT


def _qr_tall_jvp(q: Tensor, r: Tensor, da: Tensor) -> tuple[Tensor, Tensor]:
    """``(dQ, dR)`` for ``m >= n``: with ``B = Q^T dA R^-1`` and Ω its skew part from the
    strictly lower triangle, ``dR = (B - Ω) R`` and ``dQ = dA R^-1 - Q (B - Ω)``."""
    da_rinv = _solve(r.mT, da.mT).mT
    b = q.mT @ da_rinv
    lower = _tril(b, -1)
    upper_part = b - (lower - lower.mT)
    return da_rinv - q @ upper_part, upper_part @ r


class _QR(Function):
    """``(Q, R)``, reduced or complete; differentiable where torch's is: ``m >= n`` reduced,
    square complete, and ``m < n`` (through the leading square block)."""

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor, complete: bool) -> tuple[Tensor, Tensor]:
        q, r = a.backend.float_qr(_prim(a), complete)
        outputs = _wrap(a, q), _wrap(a, r)
        ctx.save_for_backward(*outputs)
        ctx.save_for_forward(a, *outputs)
        return outputs

    @staticmethod
    def _differentiable(q: Tensor, r: Tensor) -> None:
        """Refuse mode='complete' with m > n (Q wider than R), where torch does too."""
        m, n = q.shape[-2], r.shape[-1]
        if q.shape[-1] > r.shape[-1]:
            raise AutodiffError("linalg.qr: not differentiable with mode='complete' and more "
                                f"rows than columns (got {m} x {n}), as in torch; use "
                                "mode='reduced'")

    @staticmethod
    def backward(ctx: FunctionCtx, grad_q: Tensor, grad_r: Tensor) -> tuple[Tensor, None]:
        q, r = ctx.saved_tensors
        assert q is not None and r is not None
        _QR._differentiable(q, r)
        m, n = q.shape[-2], r.shape[-1]
        if m >= n:
            return _qr_tall_backward(q, r, grad_q, grad_r), None
        # A = [X | Y] with X = Q U square and Y = Q V: Y's gradient is Q gV, and V = Q^T Y
        # adds Y gV^T to Q's.
        u, grad_u = r.narrow(-1, 0, m), grad_r.narrow(-1, 0, m)
        y_grad_v = r.narrow(-1, m, n - m), grad_r.narrow(-1, m, n - m)
        y = q @ y_grad_v[0]
        grad_x = _qr_tall_backward(q, u, grad_q + y @ y_grad_v[1].mT, grad_u)
        return Tensor.cat([grad_x, q @ y_grad_v[1]], -1), None

    @staticmethod
    def jvp(ctx: FunctionCtx, da: Tensor, _: None) -> tuple[Tensor, Tensor]:
        a, q, r = ctx.saved_tensors
        assert a is not None and q is not None and r is not None
        _QR._differentiable(q, r)
        m, n = q.shape[-2], r.shape[-1]
        if m >= n:
            return _qr_tall_jvp(q, r, da)
        dq, du = _qr_tall_jvp(q, r.narrow(-1, 0, m), da.narrow(-1, 0, m))
        dv = dq.mT @ a.narrow(-1, m, n - m) + q.mT @ da.narrow(-1, m, n - m)
        return dq, Tensor.cat([du, dv], -1)


def _gap_matrix(values: Tensor) -> Tensor:
    """``E[i, j] = values[j] - values[i]`` off the diagonal, 1 on it (a safe divisor)."""
    gaps = values.unsqueeze(-2) - values.unsqueeze(-1)
    return gaps + _eye(values, values.shape[-1])


def _off_diagonal(x: Tensor) -> Tensor:
    return x * (1.0 - _eye(x, x.shape[-1]))


class _Eigh(Function):
    """``(λ, V)`` of a symmetric matrix: gradient ``V (skew(V^T gV) / E + diag(gλ)) V^T``
    with ``E[i, j] = λj - λi``; tangent ``dλ = diag(V^T dA V)``, ``dV = V ((V^T dA V) / E)``
    off the diagonal."""

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor, upper: bool) -> tuple[Tensor, Tensor]:
        w, v = a.backend.float_eigh(_prim(a), upper)
        outputs = _wrap(a, w), _wrap(a, v)
        ctx.save_for_backward(*outputs)
        ctx.save_for_forward(*outputs)
        return outputs

    @staticmethod
    def backward(ctx: FunctionCtx, grad_w: Tensor, grad_v: Tensor) -> tuple[Tensor, None]:
        w, v = ctx.saved_tensors
        assert w is not None and v is not None
        vt_gv = v.mT @ grad_v
        inner = 0.5 * (vt_gv - vt_gv.mT) / _gap_matrix(w) + _diag_embed(grad_w)
        return v @ inner @ v.mT, None

    @staticmethod
    def jvp(ctx: FunctionCtx, da: Tensor, _: None) -> tuple[Tensor, Tensor]:
        w, v = ctx.saved_tensors
        assert w is not None and v is not None
        rotated = v.mT @ da @ v
        return _diagonal(rotated), v @ _off_diagonal(rotated / _gap_matrix(w))


class _SVD(Function):
    """``(U, S, Vh)``: torch's gradient (the leading ``k = min(m, n)`` singular vectors; only
    gauge-invariant functions of U and Vh have a defined gradient) and its tangent."""

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor, full_matrices: bool
                ) -> tuple[Tensor, Tensor, Tensor]:
        u, s, vh = a.backend.float_svd(_prim(a), full_matrices)
        outputs = _wrap(a, u), _wrap(a, s), _wrap(a, vh)
        ctx.save_for_backward(*outputs)
        ctx.save_for_forward(*outputs)
        return outputs

    @staticmethod
    def _thin(u: Tensor, s: Tensor, vh: Tensor) -> tuple[Tensor, Tensor]:
        k = s.shape[-1]
        return u.narrow(-1, 0, k), vh.narrow(-2, 0, k).mT

    @staticmethod
    def backward(ctx: FunctionCtx, grad_u: Tensor, grad_s: Tensor, grad_vh: Tensor
                 ) -> tuple[Tensor, None]:
        u_full, s, vh_full = ctx.saved_tensors
        assert u_full is not None and s is not None and vh_full is not None
        u, v = _SVD._thin(u_full, s, vh_full)
        k = s.shape[-1]
        m, n = u.shape[-2], v.shape[-2]
        grad_u, grad_v = grad_u.narrow(-1, 0, k), grad_vh.narrow(-2, 0, k).mT
        ut_gu, vt_gv = u.mT @ grad_u, v.mT @ grad_v
        ut_gu, vt_gv = ut_gu - ut_gu.mT, vt_gv - vt_gv.mT
        inner = ((ut_gu * s.unsqueeze(-2) + s.unsqueeze(-1) * vt_gv) / _gap_matrix(s * s)
                 + _diag_embed(grad_s))
        grad = u @ inner @ v.mT
        if m > k:
            gu_sinv = grad_u / s.unsqueeze(-2)
            grad = grad + (gu_sinv - u @ (u.mT @ gu_sinv)) @ v.mT
        if n > k:
            gv_sinv = grad_v / s.unsqueeze(-2)
            grad = grad + u @ (gv_sinv - v @ (v.mT @ gv_sinv)).mT
        return grad, None

    @staticmethod
    def jvp(ctx: FunctionCtx, da: Tensor, _: None) -> tuple[Tensor, Tensor, Tensor]:
        u, s, vh = ctx.saved_tensors
        assert u is not None and s is not None and vh is not None
        m, n = u.shape[-2], vh.shape[-1]
        if u.shape[-1] != s.shape[-1] or vh.shape[-2] != s.shape[-1]:
            raise AutodiffError("linalg.svd: the tangent of U or Vh is not defined with "
                                f"full_matrices=True on {m} x {n} matrices (as in torch); "
                                "use full_matrices=False")
        v = vh.mT
        dp = u.mT @ da @ v
        f = _off_diagonal(1.0 / _gap_matrix(s * s))
        s_row, s_col = s.unsqueeze(-2), s.unsqueeze(-1)
        du = u @ (f * (dp * s_row + s_col * dp.mT))
        dv = v @ (f * (s_col * dp + dp.mT * s_row))
        if m > n:
            da_v = da @ v / s_row
            du = du + da_v - u @ (u.mT @ da_v)
        if n > m:
            dat_u = da.mT @ u / s_row
            dv = dv + dat_u - v @ (v.mT @ dat_u)
        return du, _diagonal(dp), dv.mT


# ---- the public functions -------------------------------------------------------------------
@autocast_op("linalg.inv")
def inv(A: Tensor) -> Tensor:  # noqa: N803 - torch's argument names
    """The inverse of each square matrix of ``A [..., n, n]``."""
    _checked("inv", A, square=True)
    return _inv(A)


@autocast_op("linalg.solve")
def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:  # noqa: N803
    """``X`` with ``A X = B`` (``X A = B`` when not ``left``); ``B`` is ``[..., n, k]`` or a
    batch of vectors ``[..., n]`` (torch's rule), batch dims broadcasting."""
    _checked("solve", A, square=True)
    _checked("solve", B, min_ndim=1)
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and B.shape == A.shape[:-1])
    rhs = B.unsqueeze(-1) if vector else B
    if not left:
        if vector:
            raise ShapeError("linalg.solve: left=False needs B as matrices [..., k, n], got "
                             f"shape {describe(B.shape)}")
        return solve(A.mT, B.mT).mT
    if rhs.shape[-2] != A.shape[-1]:
        raise ShapeError(f"linalg.solve: A {describe(A.shape)} and B {describe(B.shape)} do "
                         "not match: B needs A's row count in its (last but one) dim")
    a, b = _broadcast_batch(A, rhs)
    x = _solve(a, b)
    return x.squeeze(-1) if vector else x


def slogdet(A: Tensor) -> SlogdetResult:  # noqa: N803
    """``(sign, logabsdet)`` of each square matrix: ``det = sign * exp(logabsdet)``."""
    _checked("slogdet", A, square=True)
    sign, logabsdet = _Slogdet.apply(A)
    return SlogdetResult(sign, logabsdet)


def det(A: Tensor) -> Tensor:  # noqa: N803
    """The determinant of each square matrix (gradient ``det * A^-T``)."""
    _checked("det", A, square=True)
    sign, logabsdet = slogdet(A)
    return sign * logabsdet.exp()


@autocast_op("linalg.cholesky")
def cholesky(A: Tensor, *, upper: bool = False) -> Tensor:  # noqa: N803
    """The Cholesky factor of each symmetric positive-definite matrix: lower ``L`` with
    ``A = L L^T``, or ``upper`` ``U = L^T``."""
    _checked("cholesky", A, square=True)
    low: Tensor = _Cholesky.apply(A)
    return low.mT if upper else low


@autocast_op("linalg.qr")
def qr(A: Tensor, mode: str = "reduced") -> QRResult:  # noqa: N803
    """``(Q, R)`` with ``A = Q R``: ``mode`` 'reduced' (``Q [..., m, k]``), 'complete'
    (``Q [..., m, m]``) or 'r' (Q empty, as in torch)."""
    _checked("qr", A)
    if mode not in ("reduced", "complete", "r"):
        raise InvalidArgumentError(f"linalg.qr: mode must be 'reduced', 'complete' or 'r', got "
                                   f"{mode!r}")
    q, r = _QR.apply(A, mode == "complete")
    if mode == "r":
        q = Tensor.zeros((0,), backend=A.backend, device=A.device, dtype=A.dtype)
    return QRResult(q, r)


@autocast_op("linalg.eigh")
def eigh(A: Tensor, UPLO: str = "L") -> EighResult:  # noqa: N803
    """Ascending eigenvalues and orthonormal eigenvectors of symmetric matrices, read from the
    lower (``UPLO='L'``) or upper triangle."""
    _checked("eigh", A, square=True)
    if UPLO not in ("L", "U"):
        raise InvalidArgumentError(f"linalg.eigh: UPLO must be 'L' or 'U', got {UPLO!r}")
    w, v = _Eigh.apply(A, UPLO == "U")
    return EighResult(w, v)


@autocast_op("linalg.eigvalsh")
def eigvalsh(A: Tensor, UPLO: str = "L") -> Tensor:  # noqa: N803
    """The ascending eigenvalues of symmetric matrices (``eigh``'s first output)."""
    return eigh(A, UPLO).eigenvalues


@autocast_op("linalg.svd")
def svd(A: Tensor, full_matrices: bool = True) -> SVDResult:  # noqa: N803
    """``(U, S, Vh)`` with ``A = U diag(S) Vh``, singular values descending."""
    _checked("svd", A)
    u, s, vh = _SVD.apply(A, full_matrices)
    return SVDResult(u, s, vh)


@autocast_op("linalg.svdvals")
def svdvals(A: Tensor) -> Tensor:  # noqa: N803
    """The singular values, descending (gradient ``U diag(g) Vh``)."""
    _checked("svdvals", A)
    return svd(A, full_matrices=False).S


def vector_norm(x: Tensor, ord: float = 2, dim: int | Sequence[int] | None = None,
                keepdim: bool = False) -> Tensor:
    """The ``ord``-norm of ``x`` over ``dim`` (all dims when None): ``sum(|x|^ord)^(1/ord)``,
    max/min of ``|x|`` for ``±inf``, the count of non-zeros for 0 (``Tensor.norm``'s, with
    torch's gradients at zeros)."""
    _checked("vector_norm", x, min_ndim=0)
    return x.norm(float(ord), dim, keepdim)


def _to_last_two(a: Tensor, dim: tuple[int, int]) -> tuple[Tensor, tuple[int, int]]:
    """``a`` with its two ``dim`` moved last (in that order), and the dims normalized."""
    first, second = (d % a.ndim for d in dim)
    if first == second:
        raise InvalidArgumentError(f"linalg.matrix_norm: dims must differ, got {dim}")
    rest = [d for d in range(a.ndim) if d not in (first, second)]
    return a.permute((*rest, first, second)), (first, second)


def _restore(value: Tensor, dims: tuple[int, int], keepdim: bool) -> Tensor:
    if keepdim:
        for d in sorted(dims):
            value = value.unsqueeze(d)
    return value


def matrix_norm(A: Tensor, ord: float | str = "fro",  # noqa: N803
                dim: tuple[int, int] = (-2, -1), keepdim: bool = False) -> Tensor:
    """The matrix norm over the two ``dim``: 'fro', 'nuc' (sum of singular values), ``±2``
    (largest/smallest singular value), ``±1`` (max/min column abs sum), ``±inf`` (row)."""
    _checked("matrix_norm", A)
    a, dims = _to_last_two(A, dim)
    if ord == "fro":
        value = vector_norm(a, 2, (-2, -1))
    elif ord == "nuc":
        value = svdvals(a).sum(-1)
    elif ord in (2, -2):
        s = svdvals(a)
        value = _largest(s) if ord == 2 else s.amin(-1)
    elif ord in (1, -1, math.inf, -math.inf):
        sums = a.abs().sum(-2 if ord in (1, -1) else -1)
        value = _largest(sums) if ord in (1, math.inf) else sums.amin(-1)
    else:
        raise InvalidArgumentError(f"linalg.matrix_norm: ord must be 'fro', 'nuc', 1, -1, 2, "
                                   f"-2, inf or -inf, got {ord!r}")
    return _restore(value, dims, keepdim)


def _largest(values: Tensor) -> Tensor:
    """The largest of the non-negative ``values`` along the last dim; 0 over an empty one,
    as torch's matrix norms answer an empty matrix."""
    return values.amax(-1) if values.shape[-1] else values.sum(-1)


def norm(A: Tensor, ord: float | str | None = None,  # noqa: N803
         dim: int | tuple[int, int] | None = None, keepdim: bool = False) -> Tensor:
    """torch.linalg.norm: a vector norm for an int ``dim`` (or everything flattened when
    ``ord`` and ``dim`` are None), a matrix norm for a pair of dims, a string ``ord`` or a
    2-D input with ``ord`` given."""
    _checked("norm", A, min_ndim=0)
    if isinstance(dim, int):
        return vector_norm(A, 2 if ord is None else float(ord), dim, keepdim)
    if dim is None and ord is None:
        return vector_norm(A, 2, None, keepdim)
    if dim is None:
        if A.ndim == 1 and not isinstance(ord, str):
            return vector_norm(A, 2 if ord is None else ord, None, keepdim)
        if A.ndim != 2:
            raise ShapeError(f"linalg.norm: with ord={ord!r} and no dim, A must be 1-D or 2-D, "
                             f"got shape {describe(A.shape)}")
        dim = (-2, -1)
    return matrix_norm(A, "fro" if ord is None else ord, dim, keepdim)


def _tolerance(s: Tensor, shape: tuple[int, ...], atol: float | None,
               rtol: float | None) -> Tensor:
    """torch's cutoff ``max(atol, rtol * largest singular value)`` per matrix, ``[..., 1]``
    (rtol defaults to ``eps * max(m, n)`` when neither is given)."""
    if rtol is None:
        rtol = (0.0 if atol is not None and atol > 0
                else float(_eps(s.dtype)) * max(shape[-2], shape[-1]))
    cutoff = s.detach().amax(-1, keepdim=True) * rtol
    return cutoff.clamp_min(0.0 if atol is None else atol)


def _eps(dtype: DType) -> float:
    return 2.220446049250313e-16 if dtype == DType.float64 else 1.1920928955078125e-07


def pinv(A: Tensor, *, atol: float | None = None, rtol: float | None = None,  # noqa: N803
         hermitian: bool = False) -> Tensor:
    """The Moore-Penrose pseudo-inverse: singular values below torch's cutoff are dropped;
    ``hermitian`` uses ``eigh`` on symmetric input."""
    _checked("pinv", A)
    if hermitian:
        w, v = eigh(A)
        keep = (w.detach().abs() > _tolerance(w.abs(), A.shape, atol, rtol)).cast(A.dtype)
        inverse = keep / (w + (1.0 - keep))
        return (v * inverse.unsqueeze(-2)) @ v.mT
    u, s, vh = svd(A, full_matrices=False)
    keep = (s.detach() > _tolerance(s, A.shape, atol, rtol)).cast(A.dtype)
    inverse = keep / (s + (1.0 - keep))
    return (vh.mT * inverse.unsqueeze(-2)) @ u.mT


def matrix_rank(A: Tensor, *, atol: float | None = None,  # noqa: N803
                rtol: float | None = None, hermitian: bool = False) -> Tensor:
    """The number of singular values (|eigenvalues| when ``hermitian``) above torch's
    cutoff, per matrix, in the backend's int dtype (torch's int64 on CPU, int32 on WebGPU)."""
    _checked("matrix_rank", A)
    s = eigvalsh(A).abs() if hermitian else svdvals(A)
    s = s.detach()
    return (s > _tolerance(s, A.shape, atol, rtol)).cast(A.backend.int_dtype).sum(-1)


@autocast_op("linalg.lstsq")
def lstsq(A: Tensor, B: Tensor, rcond: float | None = None, *,  # noqa: N803
          driver: str | None = None) -> LstsqResult:
    """The least-squares solution of ``A X = B`` (the minimum-norm one where ``A`` is wide),
    as torch on the CPU: 'gelsy' (default) also gives the rank, 'gelsd' and 'gelss' the rank
    and the singular values; all but 'gelsy' give the residuals for tall full-rank ``A``."""
    _checked("lstsq", A)
    _checked("lstsq", B, min_ndim=1)
    driver = driver or "gelsy"
    if driver not in ("gels", "gelsy", "gelsd", "gelss"):
        raise InvalidArgumentError(f"linalg.lstsq: driver must be 'gels', 'gelsy', 'gelsd' or "
                                   f"'gelss', got {driver!r}")
    vector = B.ndim == A.ndim - 1
    rhs = B.unsqueeze(-1) if vector else B
    if rhs.shape[-2] != A.shape[-2]:
        raise ShapeError(f"linalg.lstsq: A {describe(A.shape)} and B {describe(B.shape)} "
                         "need the same number of rows")
    m, n = A.shape[-2], A.shape[-1]
    tol = None if rcond is None else rcond
    solution = pinv(A, rtol=tol) @ rhs
    empty = Tensor.zeros((0,), backend=A.backend, device=A.device, dtype=A.dtype)
    rank = (Tensor.zeros((0,), backend=A.backend, device=A.device, dtype=A.backend.int_dtype)
            if driver == "gels" else matrix_rank(A, rtol=tol))
    values, residuals = empty, empty
    if driver in ("gelsd", "gelss"):
        values = svdvals(A)
    full_rank = driver == "gels" or bool((rank == n).all().item())
    if driver != "gelsy" and m > n and full_rank:
        residuals = ((A @ solution - rhs) ** 2.0).sum(-2)
    if vector:
        solution = solution.squeeze(-1)
        residuals = residuals.squeeze(-1) if residuals.ndim > 1 else residuals
    return LstsqResult(solution, residuals, rank, values)


def matrix_power(A: Tensor, n: int) -> Tensor:  # noqa: N803
    """``A`` multiplied by itself ``n`` times (the identity for 0, powers of ``inv(A)`` for
    negative ``n``), by repeated squaring."""
    _checked("matrix_power", A, square=True)
    if n == 0:
        return _eye(A, A.shape[-1]).expand(*A.shape)
    base = inv(A) if n < 0 else A
    k = abs(n)
    result: Tensor | None = None
    while True:
        if k & 1:
            result = base if result is None else result @ base
        k >>= 1
        if not k:
            break
        base = base @ base
    assert result is not None
    return result


def cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:
    """The cross product of 3-vectors along ``dim`` (other dims broadcasting)."""
    return arithmetic.cross("linalg.cross", input, other, dim)


__all__ = ["EighResult", "LstsqResult", "QRResult", "SVDResult", "SlogdetResult", "cholesky",
           "cross", "det", "eigh", "eigvalsh", "inv", "lstsq", "matrix_norm", "matrix_power",
           "matrix_rank", "norm", "pinv", "qr", "slogdet", "solve", "svd", "svdvals",
           "vector_norm"]
