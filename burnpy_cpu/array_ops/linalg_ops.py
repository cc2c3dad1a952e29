"""The decomposition kernels on ``xp.linalg`` in place (NumPy on the CPU, CuPy on CUDA): the
protocol's kernels applied to the backend's own arrays, without the host round trip."""

from __future__ import annotations

from typing import Any, ClassVar

from burnpy.backend.ops.linalg_ops import (
    LinalgOps,
    xp_cholesky,
    xp_eigh,
    xp_inv,
    xp_qr,
    xp_slogdet,
    xp_solve,
    xp_svd,
)
from burnpy_cpu.array_ops._shared import A


class ArrayLinalgOps(LinalgOps):
    """The decomposition kernels on ``xp`` arrays."""

    xp: ClassVar[Any]

    @classmethod
    def float_inv(cls, tensor: A) -> A:
        """The inverses, by ``xp.linalg.inv``."""
        return xp_inv(cls.xp, tensor)

    @classmethod
    def float_solve(cls, lhs: A, rhs: A) -> A:
        """The solutions, by ``xp.linalg.solve``."""
        return xp_solve(cls.xp, lhs, rhs)

    @classmethod
    def float_slogdet(cls, tensor: A) -> tuple[A, A]:
        """Sign and log-determinant, by ``xp.linalg.slogdet``."""
        return xp_slogdet(cls.xp, tensor)

    @classmethod
    def float_cholesky(cls, tensor: A) -> A:
        """The lower factors, by ``xp.linalg.cholesky``."""
        return xp_cholesky(cls.xp, tensor)

    @classmethod
    def float_qr(cls, tensor: A, complete: bool) -> tuple[A, A]:
        """``(Q, R)``, by ``xp.linalg.qr``."""
        return xp_qr(cls.xp, tensor, complete)

    @classmethod
    def float_eigh(cls, tensor: A, upper: bool) -> tuple[A, A]:
        """Eigenvalues and eigenvectors, by ``xp.linalg.eigh``."""
        return xp_eigh(cls.xp, tensor, upper)

    @classmethod
    def float_svd(cls, tensor: A, full_matrices: bool) -> tuple[A, A, A]:
        """``(U, S, Vh)``, by ``xp.linalg.svd``."""
        return xp_svd(cls.xp, tensor, full_matrices)
