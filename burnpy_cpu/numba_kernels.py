"""Compiled (numba) CPU kernels for the few ops NumPy cannot express without extra passes.

Each kernel is compiled on first use (``functools.cache`` around the ``numba.njit``), so
importing the backend stays cheap; ``cache=True`` keeps the machine code between processes.
Callers check shapes, dtypes and contiguity first: a kernel trusts its arguments.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

#: ``int8_linear(x, w, scales, block, out)``: see ``int8_linear``.
Int8Linear = Callable[[np.ndarray, np.ndarray, np.ndarray, int, np.ndarray], None]


@functools.cache
def _int8_linear_kernel() -> Int8Linear:
    import numba  # imported on first use: it costs a few hundred milliseconds

    @numba.njit(fastmath=True, cache=True, nogil=True, inline="always")
    def dot(a: Any, b: Any) -> Any:
        acc = np.float32(0.0)
        for t in range(a.shape[0]):
            acc += a[t] * np.float32(b[t])
        return acc

    # The block's dot is a separate (inlined) function: written as a nested loop over the
    # blocks, LLVM leaves the reduction scalar, 20x slower.
    @numba.njit(fastmath=True, cache=True, nogil=True, boundscheck=False)
    def kernel(x: Any, w: Any, scales: Any, block: int, out: Any) -> None:
        per_block = scales.shape[0] > 1 or scales.shape[1] > 1
        for j in range(w.shape[0]):
            w_row = w[j]
            s_row = scales[j if per_block else 0]
            for i in range(x.shape[0]):
                x_row = x[i]
                acc = np.float32(0.0)
                for b in range(x.shape[1] // block):
                    lo = b * block
                    acc += dot(x_row[lo:lo + block], w_row[lo:lo + block]) * s_row[
                        b if per_block else 0]
                out[i, j] = acc

    return kernel  # numba's dispatcher, untyped: callable as the Python function


def int8_linear(x: np.ndarray, w: np.ndarray, scales: np.ndarray, block: int) -> np.ndarray:
    """``x @ dequantized(w).T`` from int8 values, without a float copy of the weight.

    ``x [m, k]`` float32 and ``w [n, k]`` int8, both C-contiguous; ``scales`` float32
    ``[n, k / block]`` (per-block along ``k``) or ``[1, 1]`` (per tensor, ``block == k``).
    Each output sums ``block``-long float32 dot products of ``x`` with the integers, each
    times its block's scale: the weight is read once, a byte an element, which is what makes
    matrix-vector products (decoding) faster than float32 BLAS on a 4x larger weight.
    """
    out = np.empty((x.shape[0], w.shape[0]), dtype=np.float32)
    _int8_linear_kernel()(x, w, scales, block, out)
    return out
