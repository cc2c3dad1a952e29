"""float32 gelu (exact and tanh forms), its gradients, erf and erfc as compiled numba loops.

NumPy has no float32 erf (SciPy's widens to float64, 14x torch's time), so these loops compute
in float32 with an own exp and erfc that LLVM vectorizes, one pass over memory each.
Accuracy against float64 math on the same float32 inputs: exact gelu and its gradient within
7e-7 relative wherever the result is a normal number, erf and erfc within 6e-7; the tanh form
within 1e-6 x^2 (it rounds u = k (x + c x^3) to float32 first, as torch does). Each kernel
writes a caller-allocated float32 output (``out``, 1-D and C-contiguous like its inputs);
``run`` allocates it. Compiled on first use and cached on disk (beside this file, else in
numba's user cache directory; per process where neither is writable). Imported lazily
(``_shared.float32_kernels``): numba takes 0.2 s to import.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, cast

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from burnpy_cpu import memory
from burnpy_cpu.numba_kernels import njit_cached

_F = np.float32


#: Each kernel compiled with NumPy's error model (no ZeroDivisionError branch, which would
#: block vectorization) and fused multiply-adds allowed (``contract`` only: no reassociation,
#: and NaN and inf keep IEEE semantics), cached on disk where a cache directory is writable.
_jit = njit_cached(error_model="numpy", fastmath={"contract"})


_inline = numba.njit(inline="always", error_model="numpy", fastmath={"contract"})


def _fma_typing(typingctx: Any, a: Any, b: Any, c: Any) -> tuple[Any, Callable[..., Any]]:
    """a * b + c rounded once (``llvm.fma.f32``): makes x^2 exact as hi + lo."""
    sig = types.float32(types.float32, types.float32, types.float32)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.fma(*args)

    return sig, codegen


# Typed as called from compiled code (numba supplies the typing context itself).
_fma = cast(Callable[[_F, _F, _F], _F], intrinsic(_fma_typing))


# exp(y) = 2^n exp(r): n = round(y / ln 2) by adding 1.5 * 2^23 (the sum's low mantissa bits
# are then n), r = y - n ln 2 in two parts (Cody-Waite; n * _LN2_HI is exact for |n| < 512).
_MAGIC = _F(1.5 * 2**23)
_LN2_HI = _F(0.693145751953125)
_LN2_LO = _F(math.log(2) - 0.693145751953125)
# The result is scaled by 2^64 so that 2^n stays a normal number down to exp(-128); callers
# multiply by _UNSCALE last, so that a subnormal result is rounded once. Past exp(-132.5),
# where 2^(n + 64) would leave the normal range, the exponent bits saturate to 0: the result
# is exactly 0, so that clamping a kernel's argument there flushes its tail for free.
_SCALE_LOG2 = 64
_SCALE = _F(2.0**_SCALE_LOG2)
_UNSCALE = _F(2.0**-_SCALE_LOG2)
_POW2_BIAS = 127 + _SCALE_LOG2 - int(_MAGIC.view(np.int32))


def _scaled_pow2_typing(typingctx: Any, shifted: Any) -> tuple[Any, Callable[..., Any]]:
    """2^(n + 64) as float32 from ``shifted`` = n + 1.5 * 2^23 (float32), by placing n + 64 +
    127 in the exponent bits (0 below 2^-127): integer ops that vectorize, unlike ldexp."""
    sig = types.float32(types.float32)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        i32 = ir.IntType(32)
        zero = ir.Constant(i32, 0)
        bits = builder.add(builder.bitcast(args[0], i32), ir.Constant(i32, _POW2_BIAS))
        bits = builder.select(builder.icmp_signed(">", bits, zero), bits, zero)
        return builder.bitcast(builder.shl(bits, ir.Constant(i32, 23)), ir.FloatType())

    return sig, codegen


_scaled_pow2 = cast(Callable[[_F], _F], intrinsic(_scaled_pow2_typing))


# exp(r) on |r| <= ln(2) / 2: degree 5, fitted here (Lawson-weighted least squares) to relative
# error 9.4e-8 with float32 coefficients.
_EXP = tuple(_F(c) for c in (1.0, 0.9999997019767761, 0.4999914765357971, 0.1666763722896576,
                             0.04189801216125488, 0.008290299214422703))

# Phi(-a) = exp(-a^2 / 2) t P(t) with t = 1 / (1 + 0.3 a): a degree-7 polynomial fitted here by
# Lawson-weighted least squares to relative error over a in [0, 14] (max 1.5e-7 in exact
# arithmetic; float32 gelu and erfc underflow before the range ends). Stored halved, so the
# product is the normal tail probability directly.
_TAIL_T_SCALE = _F(0.3)
_TAIL = tuple(_F(0.5 * c) for c in (
    0.23925856, 0.24150848, 0.19982353, 0.25713432,
    -0.10738751, 0.41272813, -0.31441788, 0.07135222))

# erf(x) / x as a polynomial in x^2 on |x| < 0.75, where 1 - erfc(|x|) would cancel: degree 5,
# fitted here to relative error 7e-8 with float32 coefficients.
_ERF_SMALL = _F(0.75)
_ERF = tuple(_F(c) for c in (1.1283791065216064, -0.3761261999607086, 0.11283376812934875,
                             -0.026834623888134956, 0.00511434581130743, -0.0006749513559043407))

# |x| is clamped to 16.5 in the exact form: exp(-16.5^2 / 2) is exactly 0 (saturated), and
# gelu and its gradient underflow float32 from |x| = 14.5 on anyway.
_TAIL_CLAMP = _F(16.5)
_EXP_CLAMP = _F(140.0)  # the largest argument of _scaled_exp_neg (exactly 0 there)
_ERF_CLAMP = _F(11.3)  # x^2 <= 140 for the exp: erfc(11.3) underflows float32 by far
_INV_SQRT_2PI = _F(1.0 / math.sqrt(2.0 * math.pi))
# The tanh form: u = k (x + c x^3); 2 |u| is clamped to 140, where exp(-2 |u|) is exactly 0
# (and gelu(-inf) is inf * 0 = NaN, as in float64).
_TANH_K = math.sqrt(2.0 / math.pi)
_TANH_C = 0.044715
_TANH_2K = _F(2.0 * _TANH_K)
_TANH_2KC = _F(2.0 * _TANH_K * _TANH_C)
_TANH_6KC = _F(6.0 * _TANH_K * _TANH_C)
_SQRT_2 = _F(math.sqrt(2.0))


@_inline
def _scaled_exp_neg(hi: _F, lo: _F) -> _F:
    """exp(-(hi + lo)) * 2^64 for 0 <= hi <= 140 and |lo| <= ulp(hi) (exactly 0 from 132.5
    on): the exact square's low part ``lo`` enters the reduced argument, so a large argument
    costs no accuracy."""
    y = -hi
    shifted = y * _F(1.4426950408889634) + _MAGIC
    n = shifted - _MAGIC
    r = ((y - n * _LN2_HI) - n * _LN2_LO) - lo
    p = _EXP[5]
    p = p * r + _EXP[4]
    p = p * r + _EXP[3]
    p = p * r + _EXP[2]
    p = p * r + _EXP[1]
    p = p * r + _EXP[0]
    return p * _scaled_pow2(shifted)


@_inline
def _scaled_gauss(a: _F) -> _F:
    """exp(-a^2 / 2) * 2^64 for 0 <= a <= 16.5, with a^2 exact (hi + lo)."""
    hi = a * a
    return _scaled_exp_neg(hi * _F(0.5), _fma(a, a, -hi) * _F(0.5))


@_inline
def _tail_ratio(a: _F) -> _F:
    """Phi(-a) / exp(-a^2 / 2) = t P(t), smooth and well conditioned in a."""
    t = _F(1) / (_F(1) + _TAIL_T_SCALE * a)
    w = _TAIL[7]
    w = w * t + _TAIL[6]
    w = w * t + _TAIL[5]
    w = w * t + _TAIL[4]
    w = w * t + _TAIL[3]
    w = w * t + _TAIL[2]
    w = w * t + _TAIL[1]
    w = w * t + _TAIL[0]
    return w * t


@_inline
def _erfc_abs(ax: _F) -> _F:
    """erfc(|x|) for 0 <= |x| <= 11.3: 2 Phi(-sqrt(2) |x|), with exp(-x^2) from the exact x^2
    (the rounding of sqrt(2) |x| only reaches the well-conditioned ratio)."""
    hi = ax * ax
    e = _scaled_exp_neg(hi, _fma(ax, ax, -hi))
    return (_tail_ratio(ax * _SQRT_2) * e) * _F(2.0 * 2.0**-_SCALE_LOG2)


@_jit
def gelu(x: np.ndarray, out: np.ndarray) -> None:
    """x Phi(x): x - |x| q for x > 0 and x q below, q = Phi(-|x|), exact in both tails (q
    stays scaled by 2^64 until the product with x, so that only the result may underflow; q is
    0 at the clamp, so x q cannot overflow). |x| q uses the clamped |x|, so gelu(inf) is inf;
    gelu(-inf) is inf * 0 = NaN, as x * Phi(x) in float64."""
    for i in range(x.size):
        v = x[i]
        a = abs(v)
        ac = a if a < _TAIL_CLAMP else _TAIL_CLAMP
        q = _tail_ratio(ac) * _scaled_gauss(ac)
        neg = v <= 0  # <=: gelu(-0.0) is -0.0
        xq = ((v if neg else ac) * q) * _UNSCALE
        out[i] = xq if neg else v - xq


@_jit
def gelu_backward(x: np.ndarray, grad: np.ndarray, out: np.ndarray) -> None:
    """grad (Phi(x) + x phi(x)): D = q - |x| phi(x) for x < 0 and 1 - D above, sharing q's
    exp. The unclamped |x| times the exp (0 at the clamp) gives NaN at inf and NaN, as the
    float64 formula does (inf * 0). D is unscaled before the product with grad, which a large
    gradient times the scaled D could overflow."""
    for i in range(x.size):
        v = x[i]
        a = abs(v)
        ac = a if a < _TAIL_CLAMP else _TAIL_CLAMP
        d = ((_tail_ratio(ac) - a * _INV_SQRT_2PI) * _scaled_gauss(ac)) * _UNSCALE
        out[i] = grad[i] * (d if v < 0 else _F(1) - d)


@_inline
def _scaled_exp_neg_any(y: _F) -> _F:
    """exp(-y) * 2^64 for y >= 0 (0 from y = 132.5 on, and for NaN)."""
    return _scaled_exp_neg(y if y < _EXP_CLAMP else _EXP_CLAMP, _F(0))


@_jit
def gelu_tanh(x: np.ndarray, out: np.ndarray) -> None:
    """x sigmoid(2u), u = k (x + c x^3) (torch's tanh form, as 1 + tanh(u) = 2 sigmoid(2u)):
    with s = exp(-2 |u|), x / (1 + s) for u >= 0 and x s / (1 + s) below, s kept scaled by 2^64
    in the latter (x s cannot overflow: s is 0 unless |x| < 12)."""
    for i in range(x.size):
        v = x[i]
        w = v * (_TANH_2K + _TANH_2KC * (v * v))
        s = _scaled_exp_neg_any(abs(w))
        neg = w < 0
        out[i] = (v * s if neg else v) / (_SCALE + s if neg else _F(1) + s * _UNSCALE)


@_jit
def gelu_tanh_backward(x: np.ndarray, grad: np.ndarray, out: np.ndarray) -> None:
    """grad (S + S (1 - S) 2 x du), S = sigmoid(2u), du = k (1 + 3 c x^2). With s = exp(-2 |u|)
    and r = 1 / (1 + s): S = r, 1 - S = s r for u >= 0, and the two swapped below, so the
    derivative is S (1 + 2 x du (1 - S)) with nothing cancelling; s stays scaled by 2^64
    until that derivative is formed, which alone may round to a subnormal."""
    for i in range(x.size):
        v = x[i]
        v2 = v * v
        w = v * (_TANH_2K + _TANH_2KC * v2)
        s = _scaled_exp_neg_any(abs(w))
        r = _SCALE / (_SCALE + s)
        neg = w < 0
        big_s = s * r if neg else r
        one_minus_s = r if neg else (s * _UNSCALE) * r
        deriv = big_s * (_F(1) + (v * (_TANH_2K + _TANH_6KC * v2)) * one_minus_s)
        out[i] = grad[i] * (deriv * (_UNSCALE if neg else _F(1)))


@_inline
def erf_value(v: _F) -> _F:
    """erf of one float32: x R(x^2) below |x| = 0.75 (and for NaN), else +-(1 - erfc(|x|)).
    Inlined into ``erf`` and into the CPU fuser's compiled groups (one float32 erf)."""
    ax = abs(v)
    z = v * v
    r = _ERF[5]
    r = r * z + _ERF[4]
    r = r * z + _ERF[3]
    r = r * z + _ERF[2]
    r = r * z + _ERF[1]
    r = r * z + _ERF[0]
    big = _F(1) - _erfc_abs(ax if ax < _ERF_CLAMP else _ERF_CLAMP)
    return (big if v > 0 else -big) if ax >= _ERF_SMALL else v * r


@_jit
def erf(x: np.ndarray, out: np.ndarray) -> None:
    """erf(x) elementwise (``erf_value``)."""
    for i in range(x.size):
        out[i] = erf_value(x[i])


@_jit
def erfc(x: np.ndarray, out: np.ndarray) -> None:
    """erfc(x): erfc(|x|) for x >= 0 (relative accuracy in the right tail), 2 - erfc(|x|)
    below; NaN stays NaN."""
    for i in range(x.size):
        v = x[i]
        ax = abs(v)
        c = _erfc_abs(ax if ax < _ERF_CLAMP else _ERF_CLAMP)
        out[i] = v if v != v else (_F(2) - c if v < 0 else c)


def run(kernel: Any, *arrays: np.ndarray) -> np.ndarray:
    """``kernel`` over same-shape float32 ``arrays`` (any strides: copied to C order only when
    not already), into a new float32 array of their shape (on CpuBackend's cached memory)."""
    out = memory.empty(arrays[0].shape, np.float32)
    kernel(*[np.ascontiguousarray(a).ravel() for a in arrays], out.ravel())
    return out
