"""Layer norm and cross entropy as compiled numba row loops over C-contiguous float32 or
float64 ``[rows, width]`` NumPy arrays.

NumPy spends one pass over memory per elementwise op, and a layer norm backward takes about
ten of them; these loops read each row a few times while it sits in cache and write each
result once. Row statistics (means, variances, dot products) and the weight and bias
gradients' column sums accumulate in float64 whatever the input dtype, so float32 results
are at least as accurate as the NumPy path's. Only the reductions may be reassociated
(``reassoc``: what lets LLVM vectorize them); NaN and inf keep IEEE semantics. numba has no
vectorized exp here (no SVML), so cross entropy leaves the exponentials to NumPy: one kernel
shifts each row by its maximum, NumPy exponentiates in place, a second kernel sums.
Compiled on first use and cached on disk like ``_float32_kernels``; imported lazily
(``_shared.row_kernels``).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from burnpy_cpu.numba_kernels import njit_cached

#: Compiled with NumPy's error model, fused multiply-adds and reassociated reductions allowed.
_jit = njit_cached(error_model="numpy", fastmath={"contract", "reassoc"})


@numba.njit(inline="always")
def _column(t: int, width: int) -> int:
    """Target ``t`` as a column of a ``width``-wide row, negative ones counted from the end
    as NumPy indexes; IndexError out of range (numba does not check bounds)."""
    column = t + width if t < 0 else t
    if column < 0 or column >= width:
        raise IndexError("cross_entropy: a target is out of range for the classes")
    return column


@numba.njit(inline="always", error_model="numpy", fastmath={"contract", "reassoc"})
def _moments(row: np.ndarray, eps: float) -> tuple[float, float]:
    """A row's mean and ``1 / sqrt(var + eps)`` in float64, the biased variance summing
    squared deviations from the mean (a second pass: no cancellation)."""
    width = row.shape[0]
    total = 0.0
    for j in range(width):
        total += row[j]
    mean = total / width
    square = 0.0
    for j in range(width):
        d = row[j] - mean
        square += d * d
    return mean, 1.0 / math.sqrt(square / width + eps)


@_jit
def layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float,
               out: np.ndarray) -> None:
    """``out = (x - mean) / sqrt(var + eps) * weight + bias`` per row of ``x [rows, width]``
    (``weight`` and ``bias`` ``[width]``; ones and zeros stand for absent ones)."""
    rows, width = x.shape
    for r in range(rows):
        row = x[r]
        mean, rstd = _moments(row, eps)
        o = out[r]
        for j in range(width):
            o[j] = (row[j] - mean) * rstd * weight[j] + bias[j]


@_jit
def layer_norm_backward(x: np.ndarray, weight: np.ndarray, grad: np.ndarray, eps: float,
                        grad_x: np.ndarray, grad_weight: np.ndarray,
                        grad_bias: np.ndarray) -> None:
    """With ``xhat`` the normalized rows and ``gh = grad * weight``: ``grad_x = rstd * (gh -
    mean(gh) - xhat * mean(gh * xhat))`` per row, and the float64 column sums
    ``grad_weight += grad * xhat``, ``grad_bias += grad`` (zeroed by the caller)."""
    rows, width = x.shape
    for r in range(rows):
        row, g = x[r], grad[r]
        mean, rstd = _moments(row, eps)
        sum_gh = 0.0
        sum_gh_xhat = 0.0
        for j in range(width):
            xhat = (row[j] - mean) * rstd
            gj = 1.0 * g[j]
            gh = gj * weight[j]
            sum_gh += gh
            sum_gh_xhat += gh * xhat
            grad_weight[j] += gj * xhat
            grad_bias[j] += gj
        mean_gh = sum_gh / width
        mean_gh_xhat = sum_gh_xhat / width
        dx = grad_x[r]
        for j in range(width):
            xhat = (row[j] - mean) * rstd
            dx[j] = rstd * (1.0 * g[j] * weight[j] - mean_gh - xhat * mean_gh_xhat)


@_jit
def shift_rows(x: np.ndarray, out: np.ndarray, peaks: np.ndarray) -> None:
    """``out = x - peak`` per row, ``peaks`` the row maxima (``width`` >= 1)."""
    rows, width = x.shape
    for r in range(rows):
        row = x[r]
        peak = row[0]
        for j in range(1, width):
            peak = max(peak, row[j])
        peaks[r] = peak
        o = out[r]
        for j in range(width):
            o[j] = row[j] - peak


@_jit
def cross_entropy(x: np.ndarray, e: np.ndarray, peaks: np.ndarray, target: np.ndarray,
                  ignore_index: int, loss: np.ndarray) -> None:
    """``loss = log(sum(e)) + peak - x[target]`` per row (``e = exp(x - peak)``), exactly 0
    on rows whose target is ``ignore_index``."""
    rows, width = x.shape
    for r in range(rows):
        t = target[r]
        if t == ignore_index:
            loss[r] = 0.0
            continue
        total = 0.0
        row = e[r]
        for j in range(width):
            total += row[j]
        loss[r] = math.log(total) + peaks[r] - x[r, _column(t, width)]


@_jit
def cross_entropy_backward(e: np.ndarray, target: np.ndarray, ignore_index: int,
                           grad: np.ndarray) -> None:
    """In place over ``e = exp(x - peak)``: ``(e / sum(e) - one_hot(target)) * grad`` per
    row, 0 on rows whose target is ``ignore_index``."""
    rows, width = e.shape
    for r in range(rows):
        row = e[r]
        t = target[r]
        if t == ignore_index:
            for j in range(width):
                row[j] = 0.0
            continue
        total = 0.0
        for j in range(width):
            total += row[j]
        g = 1.0 * grad[r]
        scale = g / total
        for j in range(width):
            row[j] = row[j] * scale
        row[_column(t, width)] -= g
