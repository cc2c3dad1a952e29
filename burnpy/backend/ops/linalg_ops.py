"""Matrix decomposition kernels of the Backend protocol: the few ops ``burnpy.linalg`` cannot
compose from others (inverse, solve, log-determinant, Cholesky, QR, symmetric eigensystem, SVD).

They are kernels, not differentiable ops: ``burnpy.linalg`` calls them on the innermost backend
from ``Function``s whose backward and jvp are written with Tensor ops (so every decorator
differentiates them, to any order). Every op is provided as a **host round trip**:
``float_into_data`` -> NumPy's LAPACK -> ``float_from_data``, so any backend (WebGPU included)
runs them; array backends override them with their own ``xp.linalg`` (NumPy, CuPy) in place.
All take ``[..., m, n]`` float32/float64 primitives, batched over the leading dims.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from burnpy.backend.data import TensorData
from burnpy.backend.ops._marker import provided
from burnpy.backend.primitives import FloatPrimitive

if TYPE_CHECKING:
    from burnpy.backend.base import Backend


# ---- the kernels over an array module ``xp`` (NumPy here, CuPy through the array backends) ----
def xp_inv(xp: Any, a: Any) -> Any:
    """The inverses of ``a [..., n, n]``."""
    return xp.linalg.inv(a)


def xp_solve(xp: Any, a: Any, b: Any) -> Any:
    """``x`` with ``a @ x = b`` for ``a [..., n, n]`` and ``b [..., n, k]`` (same batch)."""
    return xp.linalg.solve(a, b)


def xp_slogdet(xp: Any, a: Any) -> tuple[Any, Any]:
    """The sign and the log of the absolute determinant of ``a [..., n, n]``, each ``[...]``."""
    sign, logabsdet = xp.linalg.slogdet(a)
    return xp.asarray(sign, dtype=a.dtype), xp.asarray(logabsdet, dtype=a.dtype)


def xp_cholesky(xp: Any, a: Any) -> Any:
    """The lower Cholesky factor of ``a [..., n, n]`` (its lower triangle is read)."""
    return xp.linalg.cholesky(a)


def xp_qr(xp: Any, a: Any, complete: bool) -> tuple[Any, Any]:
    """``(Q, R)`` of ``a [..., m, n]``: reduced (``[..., m, k]``, ``[..., k, n]``) or complete."""
    q, r = xp.linalg.qr(a, mode="complete" if complete else "reduced")
    return q, r


def xp_eigh(xp: Any, a: Any, upper: bool) -> tuple[Any, Any]:
    """Ascending eigenvalues ``[..., n]`` and eigenvectors ``[..., n, n]`` of the symmetric
    matrix stored in ``a``'s lower (or ``upper``) triangle."""
    w, v = xp.linalg.eigh(a, UPLO="U" if upper else "L")
    return w, v


def xp_svd(xp: Any, a: Any, full_matrices: bool) -> tuple[Any, Any, Any]:
    """``(U, S, Vh)`` of ``a [..., m, n]``, singular values descending."""
    u, s, vh = xp.linalg.svd(a, full_matrices=full_matrices)
    return u, s, vh


def _on_host(cls: type[Backend], kernel: Callable[..., Any], tensors: tuple[FloatPrimitive, ...],
             *params: Any) -> tuple[FloatPrimitive, ...]:
    """``kernel(np, *arrays, *params)`` on the host copies of ``tensors``, its outputs sent back
    to the first tensor's device: the host round trip every backend may fall back on."""
    device = cls.float_device(tensors[0])
    arrays = [np.ascontiguousarray(cls.float_into_data(t).array) for t in tensors]
    result = kernel(np, *arrays, *params)
    outputs = result if isinstance(result, tuple) else (result,)
    # ascontiguousarray makes a 0-d result 1-d: keep each result's own shape
    return tuple(cls.float_from_data(TensorData(np.ascontiguousarray(o).reshape(np.shape(o))),
                                     device) for o in outputs)


class LinalgOps:
    """Decomposition kernels as provided host round trips (``cls`` is the concrete backend)."""

    @provided
    def float_inv(cls: type[Backend], tensor: FloatPrimitive) -> FloatPrimitive:
        """The inverse of each ``[n, n]`` matrix of ``tensor [..., n, n]``."""
        return _on_host(cls, xp_inv, (tensor,))[0]

    @provided
    def float_solve(cls: type[Backend], lhs: FloatPrimitive,
                    rhs: FloatPrimitive) -> FloatPrimitive:
        """``x`` with ``lhs @ x = rhs``: ``lhs [..., n, n]``, ``rhs [..., n, k]``, same batch."""
        return _on_host(cls, xp_solve, (lhs, rhs))[0]

    @provided
    def float_slogdet(cls: type[Backend],
                      tensor: FloatPrimitive) -> tuple[FloatPrimitive, FloatPrimitive]:
        """``(sign, log|det|)`` of each matrix of ``tensor [..., n, n]``, both ``[...]``."""
        sign, logabsdet = _on_host(cls, xp_slogdet, (tensor,))
        return sign, logabsdet

    @provided
    def float_cholesky(cls: type[Backend], tensor: FloatPrimitive) -> FloatPrimitive:
        """The lower Cholesky factor of each positive-definite matrix of ``tensor``."""
        return _on_host(cls, xp_cholesky, (tensor,))[0]

    @provided
    def float_qr(cls: type[Backend], tensor: FloatPrimitive,
                 complete: bool) -> tuple[FloatPrimitive, FloatPrimitive]:
        """``(Q, R)`` of ``tensor [..., m, n]``, reduced or ``complete``."""
        q, r = _on_host(cls, xp_qr, (tensor,), complete)
        return q, r

    @provided
    def float_eigh(cls: type[Backend], tensor: FloatPrimitive,
                   upper: bool) -> tuple[FloatPrimitive, FloatPrimitive]:
        """Ascending eigenvalues and eigenvectors of the symmetric matrices stored in the
        lower (or ``upper``) triangle of ``tensor [..., n, n]``."""
        w, v = _on_host(cls, xp_eigh, (tensor,), upper)
        return w, v

    @provided
    def float_svd(cls: type[Backend], tensor: FloatPrimitive, full_matrices: bool
                  ) -> tuple[FloatPrimitive, FloatPrimitive, FloatPrimitive]:
        """``(U, S, Vh)`` of ``tensor [..., m, n]``, singular values descending."""
        u, s, vh = _on_host(cls, xp_svd, (tensor,), full_matrices)
        return u, s, vh
