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


def njit_cached(**options: Any) -> Callable[[Callable[..., Any]], Any]:
    """``numba.njit(cache=True, **options)``: machine code kept on disk (``NUMBA_CACHE_DIR``,
    else beside the source, else numba's user cache); where none is writable, numba refuses
    ``cache=True``, and the kernel is compiled in each process instead."""
    import numba  # imported on first use: it costs a few hundred milliseconds

    def decorate(fn: Callable[..., Any]) -> Any:
        try:
            return numba.njit(cache=True, **options)(fn)
        except RuntimeError:  # no writable cache location
            return numba.njit(**options)(fn)

    return decorate


#: The float dtypes the elementwise kernels here are used for.
COMPILED_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))

#: ``int8_linear(x, w, scales, bias, out)``: see ``int8_linear_kernel``.
Int8Linear = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray], None]


@functools.cache
def int8_linear_kernel() -> Int8Linear:
    """``int8_linear(x, w, scales, bias, out)``: ``out = x @ dequantized(w).T + bias`` from
    int8 values, without a float copy of the weight.

    ``x [..., k]`` float32 and ``w [n, k]`` int8, both C-contiguous; ``scales`` float32
    ``[n, k / block]``, one per row and block along ``k`` (a per-tensor scale repeated down
    the rows, ``[n, 1]``, is one block a row); ``bias`` float32 ``[n]`` or empty (none);
    ``out [..., n]`` float32, C-contiguous, with ``x``'s leading dims (the kernel flattens
    both: no reshapes in Python). Each output sums ``block``-long float32 dot products of
    ``x`` with the integers, each times its block's scale, plus the bias, in one pass: the
    weight is read once, a byte an element, which is what makes matrix-vector products
    (decoding) faster than float32 BLAS on a 4x larger weight. Nothing is checked or
    allocated, so a caller that checks once per weight pays a numba dispatch of five arrays
    (about a third of a microsecond) and the loops per product.
    """

    # The dots are a separate (inlined) function over whole slices, indexed from 0: written
    # as a loop over ``range(lo, hi)`` inside the row loop, LLVM cannot prove the indices
    # non-negative and leaves the reduction scalar, 20x slower.
    @njit_cached(fastmath=True, nogil=True, inline="always")
    def dot(a: Any, b: Any) -> Any:
        acc = np.float32(0.0)
        for t in range(a.shape[0]):
            acc += a[t] * np.float32(b[t])
        return acc

    @njit_cached(fastmath=True, nogil=True, boundscheck=False)
    def kernel(x: Any, w: Any, scales: Any, bias: Any, out: Any) -> None:
        n, k = w.shape
        x, out = x.reshape((-1, k)), out.reshape((-1, n))
        blocks = scales.shape[1]
        block = k // blocks
        has_bias = bias.shape[0] != 0
        for i in range(x.shape[0]):
            x_row = x[i]
            o_row = out[i]
            for j in range(n):
                w_row = w[j]
                s_row = scales[j]
                if blocks == 1:
                    acc = dot(x_row, w_row) * s_row[0]
                else:
                    acc = np.float32(0.0)
                    for b in range(blocks):
                        lo = b * block
                        acc += dot(x_row[lo:lo + block], w_row[lo:lo + block]) * s_row[b]
                o_row[j] = acc + bias[j] if has_bias else acc

    return kernel  # numba's dispatcher, untyped: callable as the Python function


#: ``batch_norm_backward(x, grad, mean, invstd, scale, dx, sums)``: see ``batch_norm_backward``.
BatchNormBackward = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                              np.ndarray, np.ndarray], None]


@functools.cache
def _batch_norm_backward_kernel() -> BatchNormBackward:

    @njit_cached(fastmath=True, nogil=True, boundscheck=False)
    def kernel(x: Any, g: Any, mean: Any, invstd: Any, scale: Any, dx: Any, sums: Any) -> None:
        n, c, p = x.shape
        for ch in range(c):
            sum_g = 0.0
            sum_gx = 0.0
            mu = mean[ch]
            for i in range(n):
                for j in range(p):
                    gv = np.float64(g[i, ch, j])
                    sum_g += gv
                    sum_gx += gv * (np.float64(x[i, ch, j]) - mu)
            sums[0, ch] = sum_g
            sums[1, ch] = sum_gx
            count = n * p
            a = scale[ch]
            k = a * invstd[ch] * invstd[ch] * sum_gx / count
            b = -a * sum_g / count
            a_, k_, b_ = dx.dtype.type(a), dx.dtype.type(k), dx.dtype.type(b)
            mu_ = dx.dtype.type(mu)
            for i in range(n):
                for j in range(p):
                    dx[i, ch, j] = a_ * g[i, ch, j] - k_ * (x[i, ch, j] - mu_) + b_

    return kernel


def batch_norm_backward(x: np.ndarray, grad: np.ndarray, mean: np.ndarray, invstd: np.ndarray,
                        scale: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Batch norm's input gradient with the per-channel sums it needs: ``(dx, sum(g), sum(g *
    (x - mean)))`` over ``x`` and ``grad [n, c, positions]`` (C-contiguous, float32 or
    float64), given float64 ``mean``, ``invstd`` and ``scale = weight * invstd`` per channel.
    Two passes a channel (the sums in float64, then ``dx = a * g - k * (x - mean) + b``), where the
    NumPy composition makes about seven over the whole batch."""
    dx = np.empty_like(x)
    sums = np.empty((2, x.shape[1]), dtype=np.float64)
    _batch_norm_backward_kernel()(x, grad, mean, invstd, scale, dx, sums)
    return dx, sums[0], sums[1]


#: ``relu_backward(output, grad, out)`` over 1-d arrays: see ``relu_backward``.
ReluBackward = Callable[[np.ndarray, np.ndarray, np.ndarray], None]


@functools.cache
def _relu_backward_kernel() -> ReluBackward:

    @njit_cached(nogil=True, boundscheck=False)
    def kernel(output: Any, grad: Any, out: Any) -> None:
        zero = out.dtype.type(0)
        for i in range(out.shape[0]):
            out[i] = zero if output[i] <= 0 else grad[i]

    return kernel


def relu_backward(output: np.ndarray, grad: np.ndarray) -> np.ndarray:
    """``grad`` where relu's ``output`` is positive or NaN, else 0, in one pass over two
    same-shaped C-contiguous arrays of one float dtype (NumPy needs a mask, a check that the
    gradient is finite and a multiply)."""
    out = np.empty_like(grad)
    _relu_backward_kernel()(output.reshape(-1), grad.reshape(-1), out.reshape(-1))
    return out


#: ``plane_scatter_add(indices, values, out)``: see ``plane_scatter_add``.
PlaneScatterAdd = Callable[[np.ndarray, np.ndarray, np.ndarray], None]


@functools.cache
def _plane_scatter_add_kernel() -> PlaneScatterAdd:

    @njit_cached(nogil=True, boundscheck=False)
    def kernel(indices: Any, values: Any, out: Any) -> None:
        for r in range(indices.shape[0]):
            plane = out[r]
            for j in range(indices.shape[1]):
                at = indices[r, j]
                if at < 0 or at >= plane.shape[0]:
                    raise IndexError("max-pool index outside its plane")
                plane[at] += values[r, j]

    return kernel


def plane_scatter_add(indices: np.ndarray, values: np.ndarray, planes: int,
                      plane: int) -> np.ndarray:
    """Zeroed ``[planes, plane]`` with every ``values[r, j]`` added at ``[r, indices[r, j]]``,
    in order (``indices`` int64 and ``values`` of one float dtype, both ``[planes, k]``
    and C-contiguous; an index outside ``[0, plane)`` raises IndexError): a max pool's
    gradient, where NumPy's ``add.at`` is an unbuffered scatter several times slower."""
    out = np.zeros((planes, plane), dtype=values.dtype)
    _plane_scatter_add_kernel()(indices, values, out)
    return out


#: ``batch_norm(x, weight, bias, eps, y, stats)``: see ``batch_norm``.
BatchNorm = Callable[[np.ndarray, np.ndarray, np.ndarray, float, np.ndarray, np.ndarray], None]


@functools.cache
def _batch_norm_kernel() -> BatchNorm:

    @njit_cached(fastmath=True, nogil=True, boundscheck=False)
    def kernel(x: Any, weight: Any, bias: Any, eps: float, y: Any, stats: Any) -> None:
        n, c, p = x.shape
        count = n * p
        for ch in range(c):
            total = 0.0
            for i in range(n):
                for j in range(p):
                    total += np.float64(x[i, ch, j])
            mean = total / count
            squares = 0.0
            for i in range(n):
                for j in range(p):
                    d = np.float64(x[i, ch, j]) - mean
                    squares += d * d
            var = squares / count
            stats[0, ch] = mean
            stats[1, ch] = var
            scale = 1.0 / np.sqrt(var + eps)
            if weight.shape[0]:
                scale *= weight[ch]
            shift = bias[ch] if bias.shape[0] else 0.0
            mu_, a_, b_ = y.dtype.type(mean), y.dtype.type(scale), y.dtype.type(shift)
            for i in range(n):
                for j in range(p):
                    y[i, ch, j] = (x[i, ch, j] - mu_) * a_ + b_

    return kernel


def batch_norm(x: np.ndarray, weight: np.ndarray | None, bias: np.ndarray | None,
               eps: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Training-mode batch norm of ``x [n, c, positions]`` (C-contiguous, float32 or float64):
    ``(y, mean, biased var)``, the statistics in float64. Three passes a channel (the mean,
    the centered sum of squares, then ``y``), where the NumPy composition allocates the
    centered batch and makes about five."""
    y = np.empty_like(x)
    stats = np.empty((2, x.shape[1]), dtype=np.float64)
    none = np.empty(0, dtype=x.dtype)
    _batch_norm_kernel()(x, none if weight is None else weight, none if bias is None else bias,
                         eps, y, stats)
    return y, stats[0], stats[1]


#: ``col2im(cols, kernel..., stride..., padding..., dilation..., out)``: see ``col2im``.
Col2Im = Callable[[np.ndarray, int, int, int, int, int, int, int, int, np.ndarray], None]


@functools.cache
def _col2im_kernel() -> Col2Im:

    @njit_cached(nogil=True, boundscheck=False)
    def kernel(cols: Any, kh: int, kw: int, sh: int, sw: int, ph: int, pw: int, dh: int,
               dw: int, out: Any) -> None:
        b, _, o, ih, iw = cols.shape
        h, w = out.shape[2], out.shape[3]
        for n in range(b):
            for ch in range(o):
                for i in range(kh):
                    for y in range(ih):
                        oy = y * sh + i * dh - ph
                        if oy < 0 or oy >= h:
                            continue
                        dst = out[n, ch, oy]
                        for j in range(kw):
                            src = cols[n, i * kw + j, ch, y]
                            off = j * dw - pw
                            for q in range(iw):
                                ox = q * sw + off
                                if 0 <= ox < w:
                                    dst[ox] += src[q]

    return kernel


def col2im(cols: np.ndarray, kernel: tuple[int, ...], stride: tuple[int, ...],
           padding: tuple[int, ...], dilation: tuple[int, ...], out: np.ndarray) -> None:
    """Adds each kernel tap's contribution ``cols [b, kh * kw, o, ih, iw]`` (C-contiguous)
    into the 2-d ``out [b, o, h, w]`` (zeroed by the caller, same dtype; the four tuples
    hold two ints each): value ``(y, q)`` of tap ``(i, j)`` lands on ``(y * sh + i * dh -
    ph, q * sw + j * dw - pw)``, dropped outside ``out``. A strided transposed conv's
    scatter in one pass instead of a NumPy add per tap over short strided rows."""
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = kernel, stride, padding, dilation
    _col2im_kernel()(cols, kh, kw, sh, sw, ph, pw, dh, dw, out)


#: ``winograd_input(x, ph, pw, th, tw, v)``: see ``winograd_input``.
WinogradInput = Callable[[np.ndarray, int, int, int, int, np.ndarray], None]
#: ``winograd_output(m, th, tw, out)``: see ``winograd_output``.
WinogradOutput = Callable[[np.ndarray, int, int, np.ndarray], None]


@functools.cache
def _winograd_input_kernel() -> WinogradInput:

    @njit_cached(nogil=True, boundscheck=False, fastmath=True)
    def kernel(x: Any, ph: int, pw: int, th: int, tw: int, v: Any) -> None:
        b, c, h, w = x.shape
        hp, wp = 2 * th + 2, 2 * tw + 2
        pad = np.zeros((hp, wp), dtype=x.dtype)  # one zero-padded plane; its border stays 0
        y_lo, y_hi = max(0, ph), min(hp, h + ph)
        x_lo, x_hi = max(0, pw), min(wp, w + pw)
        for n in range(b):
            for ch in range(c):
                for yy in range(y_lo, y_hi):
                    for xx in range(x_lo, x_hi):
                        pad[yy, xx] = x[n, ch, yy - ph, xx - pw]
                p = n * th * tw
                for ty in range(th):
                    y = 2 * ty
                    for tx in range(tw):
                        q = 2 * tx
                        d00 = pad[y + 0, q + 0]
                        d01 = pad[y + 0, q + 1]
                        d02 = pad[y + 0, q + 2]
                        d03 = pad[y + 0, q + 3]
                        d10 = pad[y + 1, q + 0]
                        d11 = pad[y + 1, q + 1]
                        d12 = pad[y + 1, q + 2]
                        d13 = pad[y + 1, q + 3]
                        d20 = pad[y + 2, q + 0]
                        d21 = pad[y + 2, q + 1]
                        d22 = pad[y + 2, q + 2]
                        d23 = pad[y + 2, q + 3]
                        d30 = pad[y + 3, q + 0]
                        d31 = pad[y + 3, q + 1]
                        d32 = pad[y + 3, q + 2]
                        d33 = pad[y + 3, q + 3]
                        t00 = d00 - d20
                        t10 = d10 + d20
                        t20 = d20 - d10
                        t30 = d10 - d30
                        t01 = d01 - d21
                        t11 = d11 + d21
                        t21 = d21 - d11
                        t31 = d11 - d31
                        t02 = d02 - d22
                        t12 = d12 + d22
                        t22 = d22 - d12
                        t32 = d12 - d32
                        t03 = d03 - d23
                        t13 = d13 + d23
                        t23 = d23 - d13
                        t33 = d13 - d33
                        v[0, ch, p] = t00 - t02
                        v[1, ch, p] = t01 + t02
                        v[2, ch, p] = t02 - t01
                        v[3, ch, p] = t01 - t03
                        v[4, ch, p] = t10 - t12
                        v[5, ch, p] = t11 + t12
                        v[6, ch, p] = t12 - t11
                        v[7, ch, p] = t11 - t13
                        v[8, ch, p] = t20 - t22
                        v[9, ch, p] = t21 + t22
                        v[10, ch, p] = t22 - t21
                        v[11, ch, p] = t21 - t23
                        v[12, ch, p] = t30 - t32
                        v[13, ch, p] = t31 + t32
                        v[14, ch, p] = t32 - t31
                        v[15, ch, p] = t31 - t33
                        p += 1

    return kernel


def winograd_input(x: np.ndarray, padding: tuple[int, ...], tiles: tuple[int, int],
                   v: np.ndarray) -> None:
    """Winograd F(2x2, 3x3) input transform ``B^T d B`` of every 4x4 tile ``d`` of the
    2-d ``x [b, c, h, w]`` zero-padded by ``padding`` before it (and as far as the tiles
    reach after it): tile ``(ty, tx)`` starts at padded ``(2 ty, 2 tx)``, and its 16
    transformed values go to ``v [16, c, b * th * tw]`` (same dtype, C-contiguous) at
    position ``(n * th + ty) * tw + tx``."""
    _winograd_input_kernel()(x, padding[0], padding[1], tiles[0], tiles[1], v)


@functools.cache
def _winograd_output_kernel() -> WinogradOutput:

    @njit_cached(nogil=True, boundscheck=False, fastmath=True)
    def kernel(m: Any, th: int, tw: int, out: Any) -> None:
        b, k, h, w = out.shape
        rows = np.empty((2, 2 * tw), dtype=out.dtype)
        for n in range(b):
            for ch in range(k):
                plane = out[n, ch]
                for ty in range(th):
                    p0 = (n * th + ty) * tw
                    for tx in range(tw):
                        p = p0 + tx
                        s00 = m[0, ch, p] + m[4, ch, p] + m[8, ch, p]
                        s01 = m[1, ch, p] + m[5, ch, p] + m[9, ch, p]
                        s02 = m[2, ch, p] + m[6, ch, p] + m[10, ch, p]
                        s03 = m[3, ch, p] + m[7, ch, p] + m[11, ch, p]
                        s10 = m[4, ch, p] - m[8, ch, p] - m[12, ch, p]
                        s11 = m[5, ch, p] - m[9, ch, p] - m[13, ch, p]
                        s12 = m[6, ch, p] - m[10, ch, p] - m[14, ch, p]
                        s13 = m[7, ch, p] - m[11, ch, p] - m[15, ch, p]
                        rows[0, 2 * tx] = s00 + s01 + s02
                        rows[0, 2 * tx + 1] = s01 - s02 - s03
                        rows[1, 2 * tx] = s10 + s11 + s12
                        rows[1, 2 * tx + 1] = s11 - s12 - s13
                    for i in range(min(2, h - 2 * ty)):
                        dst = plane[2 * ty + i]
                        for q in range(w):
                            dst[q] = rows[i, q]

    return kernel


def winograd_output(m: np.ndarray, tiles: tuple[int, int], out: np.ndarray) -> None:
    """Winograd F(2x2, 3x3) output transform ``A^T m A``: the transformed products ``m [16,
    k, b * th * tw]`` (laid out as ``winograd_input``'s ``v``) become 2x2 output blocks of
    the 2-d ``out [b, k, h, w]`` (same dtype), block ``(ty, tx)`` at ``(2 ty, 2 tx)``; the
    row and column past odd ``h`` or ``w`` are dropped."""
    _winograd_output_kernel()(m, tiles[0], tiles[1], out)
