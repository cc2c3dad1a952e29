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


#: The float freedoms of the kernels here that reduce (batch norm, Winograd, the int8 dots):
#: reordering sums (what vectorizes a reduction) and fusing multiply-adds, but no assumption
#: that values are finite or non-NaN (numba's ``fastmath=True`` adds those: LLVM may then fold
#: away a NaN's or an infinity's effect), and NumPy's division semantics (x / 0 is inf or NaN,
#: where numba's default error model raised ZeroDivisionError from batch norm over a channel
#: holding a NaN). The scatters (col2im, plane scatter-add) and relu's backward keep IEEE
#: order: reordered, col2im's sums drifted 2.5e-5 from torch's on a near-cancelling value.
KERNEL_OPTIONS: dict[str, Any] = {"fastmath": {"contract", "reassoc"}, "error_model": "numpy",
                                  "nogil": True}

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
    @njit_cached(**KERNEL_OPTIONS, inline="always")
    def dot(a: Any, b: Any) -> Any:
        acc = np.float32(0.0)
        for t in range(a.shape[0]):
            acc += a[t] * np.float32(b[t])
        return acc

    @njit_cached(**KERNEL_OPTIONS, boundscheck=False)
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


@functools.cache
def int4_linear_kernel() -> Int8Linear:
    """``int4_linear(x, w, scales, bias, out)``: ``int8_linear`` for int4 weights, read packed.

    ``w [n, k / 2]`` uint8 holds two two's-complement 4-bit values a byte, element ``2t`` of a
    row in the low nibble and ``2t + 1`` in the high one (``pack_bytes``' layout, which is the
    CPU's packed uint32 words read bytewise); ``k`` and the block are even. Each input row is
    split once into its even and odd elements, so the dots read both operands contiguously
    (what lets LLVM vectorize them) and each weight byte is sign-extended in registers: a
    decoding step reads half a byte a weight.
    """

    # The nibbles are sign-extended in int8 arithmetic (the byte shifted up, then shifted
    # down arithmetically): with int32 or numba's default int64 steps, LLVM widens every lane
    # and the kernel ran 3x slower.
    @njit_cached(**KERNEL_OPTIONS, inline="always")
    def dot(even: Any, odd: Any, b: Any) -> Any:
        acc = np.float32(0.0)
        four = np.int8(4)
        for t in range(b.shape[0]):
            v = np.int8(b[t])
            lo = np.int8(v << four) >> four
            acc += even[t] * np.float32(lo) + odd[t] * np.float32(v >> four)
        return acc

    @njit_cached(**KERNEL_OPTIONS, boundscheck=False)
    def kernel(x: Any, w: Any, scales: Any, bias: Any, out: Any) -> None:
        n, half = w.shape
        k = 2 * half
        x, out = x.reshape((-1, k)), out.reshape((-1, n))
        blocks = scales.shape[1]
        step = half // blocks
        has_bias = bias.shape[0] != 0
        even = np.empty(half, dtype=np.float32)
        odd = np.empty(half, dtype=np.float32)
        for i in range(x.shape[0]):
            x_row = x[i]
            for t in range(half):
                even[t] = x_row[2 * t]
                odd[t] = x_row[2 * t + 1]
            o_row = out[i]
            for j in range(n):
                w_row = w[j]
                s_row = scales[j]
                if blocks == 1:
                    acc = dot(even, odd, w_row) * s_row[0]
                else:
                    acc = np.float32(0.0)
                    for b in range(blocks):
                        lo = b * step
                        acc += dot(even[lo:lo + step], odd[lo:lo + step],
                                   w_row[lo:lo + step]) * s_row[b]
                o_row[j] = acc + bias[j] if has_bias else acc

    return kernel  # numba's dispatcher, untyped: callable as the Python function


#: ``batch_norm_backward(x, grad, mean, invstd, scale, dx, sums)``: see ``batch_norm_backward``.
BatchNormBackward = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                              np.ndarray, np.ndarray], None]


@functools.cache
def _batch_norm_backward_kernel() -> BatchNormBackward:

    @njit_cached(**KERNEL_OPTIONS, boundscheck=False)
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

    @njit_cached(**KERNEL_OPTIONS, boundscheck=False)
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


#: Channels the Winograd transforms handle at once: a tile's arithmetic runs on this many
#: channels side by side (16-wide vector code), so they are innermost in the scratch planes.
WINOGRAD_BLOCK = 16
#: Widest zero-padded plane (columns) the Winograd transforms' scratch rows hold.
WINOGRAD_MAX_WIDTH = 66
#: Elements between the 16 transformed slabs of a Winograd buffer (``winograd_input``'s
#: ``v``): a constant, so the 16 stores of a tile are one access group that LLVM vectorizes
#: (with runtime strides it needs too many overlap checks and stays scalar); 16 past a power
#: of two, so the slabs do not share L1 cache sets.
WINOGRAD_SLAB = 32784

#: ``winograd_input(x, ph, pw, th, tw, cpad, v)``: see ``winograd_input``.
WinogradInput = Callable[[np.ndarray, int, int, int, int, int, np.ndarray], None]
#: ``winograd_output(m, kpad, th, tw, out)``: see ``winograd_output``.
WinogradOutput = Callable[[np.ndarray, int, int, int, np.ndarray], None]
#: ``winograd_weight(weight, slab, u)``: see ``winograd_weight``.
WinogradWeight = Callable[[np.ndarray, int, np.ndarray], None]

_CB = WINOGRAD_BLOCK
_ROW = WINOGRAD_MAX_WIDTH * WINOGRAD_BLOCK
_SLAB = WINOGRAD_SLAB


@functools.cache
def _channel_gather() -> Callable[..., None]:
    """``gather(flat, start, plane, w, lanes, rows, cols, ph, pw, pad)``, inlined into the
    transforms: ``lanes`` channel planes (``plane`` apart, from ``flat[start:]``, rows ``w``
    wide) into ``pad`` as ``[row, column, channel]``, rows ``range(*rows)`` and columns
    ``range(*cols)`` of ``pad`` reading the plane ``ph`` rows and ``pw`` columns earlier:
    channels innermost, so each tile's 16 lanes are contiguous for the transforms."""

    @njit_cached(**KERNEL_OPTIONS, inline="always")
    def gather(flat: Any, start: int, plane: int, w: int, lanes: int, rows: Any, cols: Any,
               ph: int, pw: int, pad: Any) -> None:
        for yy in range(rows[0], rows[1]):
            row = flat[start + (yy - ph) * w:]
            for xx in range(cols[0], cols[1]):
                dst = pad[yy * _ROW + xx * _CB:]
                src = row[xx - pw:]
                for ch in range(lanes):
                    dst[ch] = src[ch * plane]

    return gather


# The kernels index through slices that start at a tile (``d = pad[start:]``) so every index
# inside the channel loop is a constant plus the loop variable: LLVM then sees one access
# group per array and no negative-index wraparound, and vectorizes the loop.
@functools.cache
def _winograd_input_kernel() -> WinogradInput:

    gather = _channel_gather()

    @njit_cached(**KERNEL_OPTIONS, boundscheck=False)
    def kernel(x: Any, ph: int, pw: int, th: int, tw: int, cpad: int, v: Any) -> None:
        b, c, h, w = x.shape
        hp, per = 2 * th + 2, th * tw
        pad = np.zeros(hp * _ROW, dtype=x.dtype)  # [row, column, channel]; the border stays 0
        rows = (max(0, ph), min(hp, h + ph))
        cols = (max(0, pw), min(2 * tw + 2, w + pw))
        flat, plane = x.reshape(x.size), h * w
        for n in range(b):
            for cb in range(0, c, _CB):
                gather(flat, (n * c + cb) * plane, plane, w, min(_CB, c - cb), rows, cols,
                       ph, pw, pad)
                for ty in range(th):
                    for tx in range(tw):
                        d = pad[(2 * ty * WINOGRAD_MAX_WIDTH + 2 * tx) * _CB:]
                        o = v[(n * per + ty * tw + tx) * cpad + cb:]
                        for ch in range(_CB):
                            d00 = d[ch]
                            d01 = d[_CB + ch]
                            d02 = d[2 * _CB + ch]
                            d03 = d[3 * _CB + ch]
                            d10 = d[_ROW + ch]
                            d11 = d[_ROW + _CB + ch]
                            d12 = d[_ROW + 2 * _CB + ch]
                            d13 = d[_ROW + 3 * _CB + ch]
                            d20 = d[2 * _ROW + ch]
                            d21 = d[2 * _ROW + _CB + ch]
                            d22 = d[2 * _ROW + 2 * _CB + ch]
                            d23 = d[2 * _ROW + 3 * _CB + ch]
                            d30 = d[3 * _ROW + ch]
                            d31 = d[3 * _ROW + _CB + ch]
                            d32 = d[3 * _ROW + 2 * _CB + ch]
                            d33 = d[3 * _ROW + 3 * _CB + ch]
                            t00, t01, t02, t03 = d00 - d20, d01 - d21, d02 - d22, d03 - d23
                            t10, t11, t12, t13 = d10 + d20, d11 + d21, d12 + d22, d13 + d23
                            t20, t21, t22, t23 = d20 - d10, d21 - d11, d22 - d12, d23 - d13
                            t30, t31, t32, t33 = d10 - d30, d11 - d31, d12 - d32, d13 - d33
                            o[ch] = t00 - t02
                            o[_SLAB + ch] = t01 + t02
                            o[2 * _SLAB + ch] = t02 - t01
                            o[3 * _SLAB + ch] = t01 - t03
                            o[4 * _SLAB + ch] = t10 - t12
                            o[5 * _SLAB + ch] = t11 + t12
                            o[6 * _SLAB + ch] = t12 - t11
                            o[7 * _SLAB + ch] = t11 - t13
                            o[8 * _SLAB + ch] = t20 - t22
                            o[9 * _SLAB + ch] = t21 + t22
                            o[10 * _SLAB + ch] = t22 - t21
                            o[11 * _SLAB + ch] = t21 - t23
                            o[12 * _SLAB + ch] = t30 - t32
                            o[13 * _SLAB + ch] = t31 + t32
                            o[14 * _SLAB + ch] = t32 - t31
                            o[15 * _SLAB + ch] = t31 - t33

    return kernel


def winograd_input(x: np.ndarray, padding: tuple[int, ...], tiles: tuple[int, int], cpad: int,
                   v: np.ndarray) -> None:
    """Winograd F(2x2, 3x3) input transform ``B^T d B`` of every 4x4 tile ``d`` of the
    2-d ``x [b, c, h, w]`` zero-padded by ``padding`` before it (and as far as the tiles
    reach after it): tile ``(ty, tx)`` starts at padded ``(2 ty, 2 tx)``. Its 16 values for
    channel ``ch`` go to the 1-d ``v`` (same dtype) at ``j * WINOGRAD_SLAB + p * cpad + ch``
    with ``p = (n * th + ty) * tw + tx``: slab ``j`` is the GEMM operand ``[tiles, c]`` with
    row stride ``cpad`` (``c`` rounded up to ``WINOGRAD_BLOCK``; the columns past ``c`` get
    values the GEMM never reads). ``x`` is C-contiguous, ``2 * tw + 2 <=
    WINOGRAD_MAX_WIDTH`` and ``b * th * tw * cpad <= WINOGRAD_SLAB``."""
    _winograd_input_kernel()(x, padding[0], padding[1], tiles[0], tiles[1], cpad, v)


@functools.cache
def _winograd_output_kernel() -> WinogradOutput:

    @njit_cached(**KERNEL_OPTIONS, boundscheck=False)
    def kernel(m: Any, kpad: int, th: int, tw: int, out: Any) -> None:
        b, k, h, w = out.shape
        per = th * tw
        r = np.empty(2 * th * _ROW, dtype=out.dtype)  # [row, column, channel] of one plane
        for n in range(b):
            for kb in range(0, k, _CB):
                for ty in range(th):
                    for tx in range(tw):
                        f = m[(n * per + ty * tw + tx) * kpad + kb:]
                        e = r[(2 * ty * WINOGRAD_MAX_WIDTH + 2 * tx) * _CB:]
                        for ch in range(_CB):
                            m4, m5, m6, m7 = (f[4 * _SLAB + ch], f[5 * _SLAB + ch],
                                              f[6 * _SLAB + ch], f[7 * _SLAB + ch])
                            m8, m9, m10, m11 = (f[8 * _SLAB + ch], f[9 * _SLAB + ch],
                                                f[10 * _SLAB + ch], f[11 * _SLAB + ch])
                            s00 = f[ch] + m4 + m8
                            s01 = f[_SLAB + ch] + m5 + m9
                            s02 = f[2 * _SLAB + ch] + m6 + m10
                            s03 = f[3 * _SLAB + ch] + m7 + m11
                            s10 = m4 - m8 - f[12 * _SLAB + ch]
                            s11 = m5 - m9 - f[13 * _SLAB + ch]
                            s12 = m6 - m10 - f[14 * _SLAB + ch]
                            s13 = m7 - m11 - f[15 * _SLAB + ch]
                            e[ch] = s00 + s01 + s02
                            e[_CB + ch] = s01 - s02 - s03
                            e[_ROW + ch] = s10 + s11 + s12
                            e[_ROW + _CB + ch] = s11 - s12 - s13
                for ch in range(min(_CB, k - kb)):
                    for y in range(h):
                        dst = out[n, kb + ch, y]
                        src = r[y * _ROW + ch:]
                        for q in range(w):
                            dst[q] = src[q * _CB]

    return kernel


def winograd_output(m: np.ndarray, kpad: int, tiles: tuple[int, int], out: np.ndarray) -> None:
    """Winograd F(2x2, 3x3) output transform ``A^T m A``: the transformed products in the
    1-d ``m``, laid out as ``winograd_input``'s ``v`` with row stride ``kpad`` (``k`` rounded
    up to ``WINOGRAD_BLOCK``; the columns past ``k`` are read but unused), become 2x2 output
    blocks of the 2-d ``out [b, k, h, w]`` (same dtype), block ``(ty, tx)`` at ``(2 ty, 2
    tx)``; the row and column past odd ``h`` or ``w`` are dropped."""
    _winograd_output_kernel()(m, kpad, tiles[0], tiles[1], out)


#: ``winograd_grad_output(grad, th, tw, kpad, m)``: see ``winograd_grad_output``.
WinogradGradOutput = Callable[[np.ndarray, int, int, int, np.ndarray], None]


@functools.cache
def _winograd_grad_output_kernel() -> WinogradGradOutput:

    gather = _channel_gather()

    @njit_cached(**KERNEL_OPTIONS, boundscheck=False)
    def kernel(grad: Any, th: int, tw: int, kpad: int, m: Any) -> None:
        b, k, h, w = grad.shape
        per = th * tw
        pad = np.zeros(2 * th * _ROW, dtype=grad.dtype)  # past odd h or w it stays 0
        flat, plane = grad.reshape(grad.size), h * w
        for n in range(b):
            for kb in range(0, k, _CB):
                gather(flat, (n * k + kb) * plane, plane, w, min(_CB, k - kb), (0, h), (0, w),
                       0, 0, pad)
                for ty in range(th):
                    for tx in range(tw):
                        d = pad[(2 * ty * WINOGRAD_MAX_WIDTH + 2 * tx) * _CB:]
                        o = m[(n * per + ty * tw + tx) * kpad + kb:]
                        for ch in range(_CB):
                            y00, y01 = d[ch], d[_CB + ch]
                            y10, y11 = d[_ROW + ch], d[_ROW + _CB + ch]
                            a0, a1, a2, a3 = y00, y00 + y10, y00 - y10, -y10
                            b0, b1, b2, b3 = y01, y01 + y11, y01 - y11, -y11
                            o[ch] = a0
                            o[_SLAB + ch] = a0 + b0
                            o[2 * _SLAB + ch] = a0 - b0
                            o[3 * _SLAB + ch] = -b0
                            o[4 * _SLAB + ch] = a1
                            o[5 * _SLAB + ch] = a1 + b1
                            o[6 * _SLAB + ch] = a1 - b1
                            o[7 * _SLAB + ch] = -b1
                            o[8 * _SLAB + ch] = a2
                            o[9 * _SLAB + ch] = a2 + b2
                            o[10 * _SLAB + ch] = a2 - b2
                            o[11 * _SLAB + ch] = -b2
                            o[12 * _SLAB + ch] = a3
                            o[13 * _SLAB + ch] = a3 + b3
                            o[14 * _SLAB + ch] = a3 - b3
                            o[15 * _SLAB + ch] = -b3

    return kernel


def winograd_grad_output(grad: np.ndarray, tiles: tuple[int, int], kpad: int,
                         m: np.ndarray) -> None:
    """Adjoint of ``winograd_output``: each 2x2 block of the 2-d C-contiguous ``grad [b, k,
    h, w]`` (zero past odd ``h`` or ``w``), block ``(ty, tx)`` at ``(2 ty, 2 tx)``, becomes
    the 4x4 ``A dy A^T`` in the 1-d ``m``, laid out as ``winograd_input``'s ``v`` with row
    stride ``kpad``: the output-side operand of a Winograd weight gradient."""
    _winograd_grad_output_kernel()(grad, tiles[0], tiles[1], kpad, m)


@functools.cache
def _winograd_weight_kernel() -> WinogradWeight:

    @njit_cached(**KERNEL_OPTIONS, boundscheck=False)
    def kernel(weight: Any, slab: int, u: Any) -> None:
        k, c = weight.shape[:2]
        half = u.dtype.type(0.5)
        for ci in range(c):
            for co in range(k):
                wk = weight[co, ci]
                at = ci * k + co
                for i in range(4):  # row i of G g, then its four entries times G^T
                    if i == 0:
                        a, b_, c_ = wk[0, 0], wk[0, 1], wk[0, 2]
                    elif i == 3:
                        a, b_, c_ = wk[2, 0], wk[2, 1], wk[2, 2]
                    else:
                        sign = half if i == 1 else -half
                        a = (wk[0, 0] + wk[2, 0]) * half + sign * wk[1, 0]
                        b_ = (wk[0, 1] + wk[2, 1]) * half + sign * wk[1, 1]
                        c_ = (wk[0, 2] + wk[2, 2]) * half + sign * wk[1, 2]
                    row = 4 * i * slab + at
                    u[row] = a
                    u[row + slab] = (a + b_ + c_) * half
                    u[row + 2 * slab] = (a - b_ + c_) * half
                    u[row + 3 * slab] = c_

    return kernel


def winograd_weight(weight: np.ndarray) -> np.ndarray:
    """Winograd F(2x2, 3x3) weight transform of ``weight [k, c, 3, 3]`` (float32 or
    float64, any strides): ``u [16, c, k]`` with ``u[4 a + b, ci, co] = (G g G^T)[a, b]`` for
    ``g = weight[co, ci]``, the right-hand GEMM operand of each of the 16 slabs. The slabs lie
    ``c * k + 16`` elements apart (a view of a flat buffer), so the 16 stores of one kernel
    do not share an L1 cache set when ``c * k`` is a multiple of 1024 (3.5x slower at 64x64)."""
    k, c = weight.shape[:2]
    slab = c * k + 16
    flat = np.empty(16 * slab, dtype=weight.dtype)
    _winograd_weight_kernel()(weight, slab, flat)
    it = flat.itemsize
    return np.ndarray((16, c, k), flat.dtype, flat, 0, (slab * it, k * it, it))
