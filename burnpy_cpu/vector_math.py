"""float32 transcendental functions that LLVM vectorizes inside numba loops, for the CPU
fuser's float32 groups.

numba without Intel's SVML calls libm once per element for ``np.exp``, ``np.tanh``..., which
blocks vectorization and made a fused float32 group 5 to 40 times slower than NumPy's SIMD
loops. Each function here is straight-line arithmetic on one float32 value: a range
reduction, a polynomial fitted here (Lawson-weighted least squares against mpmath, relative
error 4e-9 or less on the reduced range), the exponent set by integer bit operations (LLVM
intrinsics: numba's own integer steps widen to int64) and the special values by selects; no
call and no branch the vectorizer cannot turn into a select. exp, tanh, sinh and cosh compute
in float32 (16 lanes of AVX-512), arranged so that no rounding costs more than half an ulp
where it matters; the others in float64, which keeps every rounding far below a float32
ulp. Every result is within 1 ulp of the correctly rounded float32 (measured over every
97th float32; ``tests/fusion/test_vector_math.py`` checks 2 ulp). sin, cos and tan reduce
exactly for every float32 (up to 3.4e38) with a table of 2/pi's bits per float32 exponent,
read by a gather (``_quadrant``); their ``BOUNDED`` forms, which the fuser's first pass
uses, reduce by Cody and Waite's three steps below 2^20 only, and ``wide`` flags the rest.

Each function (``FLOAT32``, by vocabulary op) is a numba function compiled once (cached on
disk, ``burnpy_cpu.numba_kernels.njit_cached``), which LLVM inlines into the fuser's generated
loops and into ``elementwise``'s array loops; it takes one float32 (or any float, rounded to
float32 first) and returns a float32. Imported on first use: numba takes 0.2 s to import.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, cast

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from burnpy_cpu.numba_kernels import njit_cached

_D = np.float64
_F = np.float32

#: The helpers, inlined by numba into the functions; NumPy's error model, so that a division
#: is a plain instruction (no ZeroDivisionError branch, which blocks vectorization).
_inline = numba.njit(inline="always", error_model="numpy")
#: The functions: compiled once (and kept on disk) and inlined by LLVM into the loops calling
#: them. Inlined by numba instead (``inline="always"``), each fused group typed and lowered
#: every body again: a 50-op chain with 20 of them took 16 s to compile, not 4 (2 with the
#: functions on disk), for the same machine code.
_function = njit_cached(error_model="numpy")


def _bits_typing(typingctx: Any, x: Any) -> tuple[Any, Callable[..., Any]]:
    """The float64's bits as an int64 (a bitcast, which vectorizes)."""
    sig = types.int64(types.float64)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.bitcast(args[0], ir.IntType(64))

    return sig, codegen


def _from_bits_typing(typingctx: Any, b: Any) -> tuple[Any, Callable[..., Any]]:
    """The float64 of these int64 bits."""
    sig = types.float64(types.int64)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.bitcast(args[0], ir.DoubleType())

    return sig, codegen


def _fma_typing(typingctx: Any, a: Any, b: Any, c: Any) -> tuple[Any, Callable[..., Any]]:
    """a * b + c rounded once (``llvm.fma.f64``): the polynomials' steps in one instruction,
    where the fuser's loop allows no contraction of its own arithmetic."""
    sig = types.float64(types.float64, types.float64, types.float64)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.fma(*args)

    return sig, codegen


def _fma32_typing(typingctx: Any, a: Any, b: Any, c: Any) -> tuple[Any, Callable[..., Any]]:
    """``_fma`` in float32 (``llvm.fma.f32``)."""
    sig = types.float32(types.float32, types.float32, types.float32)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.fma(*args)

    return sig, codegen


def _copysign32_typing(typingctx: Any, m: Any, x: Any) -> tuple[Any, Callable[..., Any]]:
    """float32 ``m`` with the sign of ``x`` (``llvm.copysign.f32``)."""
    sig = types.float32(types.float32, types.float32)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        f32 = ir.FloatType()
        function = builder.module.declare_intrinsic(
            "llvm.copysign", [f32], ir.FunctionType(f32, [f32, f32]))
        return builder.call(function, args)

    return sig, codegen


def _pow2_typing(upper: bool) -> Callable[..., tuple[Any, Callable[..., Any]]]:
    """For a float32 k holding an integer of [-252, 252]: 2^(k >> 1) (``upper`` False) or
    2^(k - (k >> 1)) as float32, from the exponent bits in int32 (what vectorizes: numba's
    own integer steps would widen every lane to int64). Their product is 2^k, each factor a
    normal number, so that scaling by one and then the other rounds a subnormal result once."""

    def typing(typingctx: Any, k: Any) -> tuple[Any, Callable[..., Any]]:
        sig = types.float32(types.float32)

        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            i32 = ir.IntType(32)
            n = builder.fptosi(args[0], i32)
            half = builder.ashr(n, ir.Constant(i32, 1))
            power = builder.sub(n, half) if upper else half
            bits = builder.shl(builder.add(power, ir.Constant(i32, 127)), ir.Constant(i32, 23))
            return builder.bitcast(bits, ir.FloatType())

        return sig, codegen

    return typing


# Typed as called from compiled code (numba supplies the typing context itself).
_fma32 = cast(Callable[[Any, Any, Any], Any], intrinsic(_fma32_typing))
_copysign32 = cast(Callable[[Any, Any], Any], intrinsic(_copysign32_typing))
_pow2_lower = cast(Callable[[Any], Any], intrinsic(_pow2_typing(False)))
_pow2_upper = cast(Callable[[Any], Any], intrinsic(_pow2_typing(True)))
_bits = cast(Callable[[float], int], intrinsic(_bits_typing))
_from_bits = cast(Callable[[int], float], intrinsic(_from_bits_typing))
_fma = cast(Callable[[float, float, float], float], intrinsic(_fma_typing))

_SIGN = -(1 << 63)  # the float64 sign bit, as an int64
_INF = math.inf
_NAN = math.nan
# round(y) as (y + _MAGIC) - _MAGIC for |y| < 2^51; the sum's low bits are round(y) itself
_MAGIC = 1.5 * 2.0**52
_MAGIC_BITS = int(np.float64(_MAGIC).view(np.int64))
_LN2 = 0.6931471805599453
_SQRT_HALF_BITS = int(np.float64(math.sqrt(0.5)).view(np.int64))
_PI = 3.141592653589793
_PI_2 = 1.5707963267948966
_PI_3 = 1.0471975511965979
_PI_6 = 0.5235987755982989
_SQRT3 = 1.7320508075688772
_TAN_PI_12 = 0.2679491924311227
_TAN_5PI_12 = 3.732050807568877

# The float32 functions' constants (float32, so that their arithmetic stays in float32).
# exp: n = round(x / ln2) by adding 1.5 * 2^23, r = x - n ln2 in two parts (n _LN2_HI exact).
_MAGIC32 = _F(1.5 * 2.0**23)
_LOG2E32 = _F(1.4426950408889634)
_LN2_HI32 = _F(0.693145751953125)
_LN2_LO32 = _F(0.6931471805599453 - 0.693145751953125)
_ONE, _TWO, _QUARTER = _F(1), _F(2), _F(0.25)
# expm1(r) = r + r^2 P(r) on |r| <= ln(2) / 2: relative error 2.4e-10.
_EXPM1 = tuple(_F(c) for c in (0.5000000044183952, 0.16666666371362185, 0.04166636087092955,
                               0.008333389150001837, 0.0013940629153844242,
                               0.00019845999721057137))
# tanh(x) = x + x^3 P(x^2) on |x| <= 0.625: 4.4e-9.
_TANH_SMALL = _F(0.625)
_TANH = tuple(_F(c) for c in (-0.333332818896505, 0.13331440734622335, -0.05373958882537504,
                              0.02063866169698867, -0.005704496618456236))
# sinh(x) = x + x^3 P(x^2) on |x| <= 1.5: 9.8e-12.
_SINH_SMALL = _F(1.5)
_SINH = tuple(_F(c) for c in (0.16666666687619178, 0.008333331964236555,
                              0.00019841557374562603, 2.753116831285533e-06,
                              2.6123416295489474e-08))
# log1p(f) = 2 atanh(s) = 2 s + s^3 P(s^2), s = f / (2 + f), |f| <= sqrt(2) - 1: 5.0e-12.
_LOG = (0.6666666560652235, 0.40000344900418483, 0.28536641916646893, 0.23595649328405555)
# sin(r) = r + r^3 P(r^2) and cos(r) = 1 + r^2 Q(r^2) on |r| <= pi / 4 + 0.002: 5.3e-12, 6.5e-11.
_SIN = (-0.16666666640260136, 0.008333329242492511, -0.00019839292176695306,
        2.717929734491136e-06)
_COS = (-0.4999999968800535, 0.0416666196281562, -0.001388665866412873, 2.4381408326593118e-05)
# asin(w) = w + w^3 P(w^2) on |w| <= 1/2: 1.6e-11.
_ASIN = (0.16666667181930264, 0.07499948753346049, 0.044660013322675024, 0.030111989527232846,
         0.024608214741684228, 0.007498278812501142, 0.03466024322232791)
# atan(w) = w + w^3 P(w^2) on |w| <= tan(pi / 12): 4.7e-12.
_ATAN = (-0.33333333031418705, 0.19999940018287368, -0.14281830072015667, 0.1100049893546279,
         -0.07633335181374955)


def _pi(bits: int) -> int:
    """floor(pi * 2^bits) (to within one unit), from Machin's formula pi = 16 atan(1/5) -
    4 atan(1/239) in integers with 64 guard bits."""
    scale = 1 << (bits + 64)

    def atan_inverse(n: int) -> int:
        total, term, k, sign = 0, scale // n, 1, 1
        while term:
            total += sign * (term // k)
            term //= n * n
            k += 2
            sign = -sign
        return total

    return (16 * atan_inverse(5) - 4 * atan_inverse(239)) >> 64


def _cody_waite() -> tuple[float, float, float]:
    """pi/2 as C1 + C2 + C3: C1 and C2 of 33 bits (k C1 and k C2 exact for k < 2^20), C3 the
    next 53."""
    half_pi = _pi(200) >> 1
    chunk = [half_pi >> (200 - 32), (half_pi >> (200 - 65)) & ((1 << 33) - 1),
             (half_pi >> (200 - 118)) & ((1 << 53) - 1)]
    return math.ldexp(chunk[0], -32), math.ldexp(chunk[1], -65), math.ldexp(chunk[2], -118)


#: |x| below which ``sin_bounded``, ``cos_bounded`` and ``tan_bounded`` reduce exactly.
BOUNDED_LIMIT = 2.0**20
_C1, _C2, _C3 = _cody_waite()
_TWO_OVER_PI = 0.6366197723675814


def _reduction_table() -> np.ndarray:
    """For each float32 exponent E of the last mantissa bit (x = m 2^E with m an integer
    below 2^24; row E + 149, E from -149 to 104): T = 2^E 2/pi mod 4 as three float64 chunks
    of 29 bits (the first from T's leading bit, or its 2^1 bit), so that m times a chunk is
    exact: x 2/pi mod 4 = m T mod 4 to 2^-62 absolute (the float32 closest to a multiple of
    pi/2, 16367173 * 2^72, is 2^-29.2 from it: 32 bits are left)."""
    fraction = 500  # 2/pi's bits below its point
    base = (1 << (2 * fraction + 1)) // _pi(fraction)
    rows = []
    for e in range(-149, 105):
        shift = fraction - e  # T = value / 2^shift
        value = base % (4 << shift)
        lead = min(1, value.bit_length() - 1 - shift)
        chunks = []
        for j in range(3):
            low = lead - 28 - 29 * j  # the chunk's lowest bit's position
            chunk = (value >> (shift + low)) & ((1 << 29) - 1)
            chunks.append(math.ldexp(chunk, low))
        rows.append(chunks)
    return np.array(rows, dtype=np.float64)


_TABLE = _reduction_table()
_T0 = np.ascontiguousarray(_TABLE[:, 0])
_T1 = np.ascontiguousarray(_TABLE[:, 1])
_T2 = np.ascontiguousarray(_TABLE[:, 2])


@_inline
def _copysign(magnitude: float, x: float) -> float:
    """``magnitude`` (>= 0, or NaN) with the sign of ``x``."""
    return _from_bits(_bits(magnitude) | (_bits(x) & _SIGN))


@_inline
def _exp_reduced(c: Any) -> tuple[Any, Any]:
    """(expm1(r), k) with e^c = (1 + expm1(r)) 2^k, for a float32 c in [-104, 89], in float32:
    k = round(c / ln2), r = c - k ln2 (|r| <= ln(2) / 2; k _LN2_HI32 is exact)."""
    shifted = _fma32(c, _LOG2E32, _MAGIC32)
    k = shifted - _MAGIC32
    r = _fma32(-k, _LN2_LO32, _fma32(-k, _LN2_HI32, c))
    p = _EXPM1[5]
    p = _fma32(p, r, _EXPM1[4])
    p = _fma32(p, r, _EXPM1[3])
    p = _fma32(p, r, _EXPM1[2])
    p = _fma32(p, r, _EXPM1[1])
    p = _fma32(p, r, _EXPM1[0])
    return _fma32(r * r, p, r), k


@_inline
def _log_reduced(f: float) -> float:
    """log1p(f) for |f| <= sqrt(2) - 1 (sign of zero kept)."""
    s = f / (2.0 + f)
    z = s * s
    p = _LOG[3]
    p = _fma(p, z, _LOG[2])
    p = _fma(p, z, _LOG[1])
    p = _fma(p, z, _LOG[0])
    return _fma(s * z, p, s + s)


@_inline
def _log1p(x: float) -> float:
    """log1p of a float64: u = 1 + x = 2^e m with m in [sqrt(1/2), sqrt(2)); log1p(x) =
    e ln2 + log1p(m - 1), and log1p(x) itself from x where e = 0 (u rounded would lose x's
    low bits). -1 gives -inf, inf inf, below -1 and NaN NaN."""
    u = 1.0 + x
    b = _bits(u)
    e = (b - _SQRT_HALF_BITS) >> 52
    m = _from_bits(b - (e << 52))
    near = e == 0
    small = _log_reduced(x if near else m - 1.0)
    y = small if near else _fma(_D(e), _LN2, small)
    y = y if x < _INF else x
    return y if x > -1.0 else (-_INF if x == -1.0 else _NAN)


@_inline
def _atan(a: float) -> float:
    """atan(a) for a >= 0 (or NaN): a reduced to |w| <= tan(pi/12) by atan(a) = k pi/6 +
    atan(w), one division for the four ranges, then the polynomial."""
    in_b = a > _TAN_PI_12
    in_c = a > 1.0
    in_d = a > _TAN_5PI_12
    num = -1.0 if in_d else (a - _SQRT3 if in_c else (_fma(a, _SQRT3, -1.0) if in_b else a))
    den = a if in_d else (_fma(a, _SQRT3, 1.0) if in_c else (a + _SQRT3 if in_b else 1.0))
    offset = _PI_2 if in_d else (_PI_3 if in_c else (_PI_6 if in_b else 0.0))
    w = num / den
    z = w * w
    p = _ATAN[4]
    p = _fma(p, z, _ATAN[3])
    p = _fma(p, z, _ATAN[2])
    p = _fma(p, z, _ATAN[1])
    p = _fma(p, z, _ATAN[0])
    return offset + _fma(w * z, p, w)


@_inline
def _quadrant(ax: float) -> tuple[float, int]:
    """(r, q) with ax = (4 j + q) pi/2 + r, |r| <= pi/4 (a hair more), for a finite float32
    ax >= 0: ax = m 2^E exactly, and m times ``_TABLE``'s chunks of 2^E 2/pi mod 4 gives
    ax 2/pi mod 4 to 2^-62 (Payne and Hanek's reduction, one row per float32 exponent)."""
    e = (_bits(ax) >> 52) - 1023
    low = (e if e > -126 else -126) - 23  # the exponent of ax's last mantissa bit
    m = ax * _from_bits((1023 - low) << 52)
    row = low + 149
    p0 = m * _T0[row]
    p1 = m * _T1[row]
    shifted = (p0 + p1) + _MAGIC
    k = shifted - _MAGIC
    f = _fma(m, _T2[row], (p0 - k) + p1)
    return f * _PI_2, _bits(shifted) & 3


@_inline
def _sin_cos(r: float) -> tuple[float, float]:
    """(sin(r), cos(r)) for |r| <= pi/4."""
    z = r * r
    s = _SIN[3]
    s = _fma(s, z, _SIN[2])
    s = _fma(s, z, _SIN[1])
    s = _fma(s, z, _SIN[0])
    c = _COS[3]
    c = _fma(c, z, _COS[2])
    c = _fma(c, z, _COS[1])
    c = _fma(c, z, _COS[0])
    return _fma(r * z, s, r), _fma(z, c, 1.0)


@_function
def exp(a: Any) -> Any:
    """e^a in float32 (``_exp_reduced``): (1 + expm1(r)) 2^k, scaled in two normal factors so
    that a subnormal result rounds once; 0 below -104, inf above 88.73."""
    x = _F(a)
    c = x if x > _F(-104.0) else _F(-104.0)
    c = c if c < _F(89.0) else _F(89.0)
    m, k = _exp_reduced(c)
    y = ((_ONE + m) * _pow2_lower(k)) * _pow2_upper(k)
    return y if x == x else x


@_function
def log(a: Any) -> Any:
    """The natural log: a = 2^e m, m in [sqrt(1/2), sqrt(2)); e ln2 + log1p(m - 1)."""
    x = _D(_F(a))
    b = _bits(x)
    e = (b - _SQRT_HALF_BITS) >> 52
    m = _from_bits(b - (e << 52))
    y = _fma(_D(e), _LN2, _log_reduced(m - 1.0))
    y = y if x < _INF else x
    return _F(y if x > 0.0 else (-_INF if x == 0.0 else _NAN))


@_function
def log1p(a: Any) -> Any:
    """log(1 + a), accurate near 0 (``_log1p``)."""
    return _F(_log1p(_D(_F(a))))


@_function
def tanh(a: Any) -> Any:
    """tanh in float32: x + x^3 P(x^2) up to |a| = 0.625, 1 - 2 / (e^(2 |a|) + 1) above
    (|a| clamped to 9.5, where tanh rounds to 1), signed."""
    x = _F(a)
    ax = abs(x)
    z = x * x
    p = _TANH[4]
    p = _fma32(p, z, _TANH[3])
    p = _fma32(p, z, _TANH[2])
    p = _fma32(p, z, _TANH[1])
    p = _fma32(p, z, _TANH[0])
    small = _fma32(x * z, p, x)
    c = ax if ax < _F(9.5) else _F(9.5)
    m, k = _exp_reduced(c + c)
    e = ((_ONE + m) * _pow2_lower(k)) * _pow2_upper(k)
    y = _copysign32(small if ax < _TANH_SMALL else _ONE - _TWO / (e + _ONE), x)  # -0 too
    return y if x == x else x


@_inline
def _sinh_small(x: Any) -> Any:
    """sinh(x) = x + x^3 P(x^2) for |x| <= 1.5, in float32."""
    z = x * x
    p = _SINH[4]
    p = _fma32(p, z, _SINH[3])
    p = _fma32(p, z, _SINH[2])
    p = _fma32(p, z, _SINH[1])
    p = _fma32(p, z, _SINH[0])
    return _fma32(x * z, p, x)


@_inline
def _half_exp(ax: Any) -> tuple[Any, Any, Any]:
    """(e^|a| / 2, expm1(r), k) with e^|a| / 2 = (1 + expm1(r)) 2^(k - 1), in float32 (|a|
    clamped to 90: inf; the halving in the scale, so that it is finite up to sinh's and
    cosh's overflow at 89.42)."""
    c = ax if ax < _F(90.0) else _F(90.0)
    m, k = _exp_reduced(c)
    k = k - _ONE
    return ((_ONE + m) * _pow2_lower(k)) * _pow2_upper(k), m, k


@_function
def sinh(a: Any) -> Any:
    """sinh in float32: x + x^3 P(x^2) up to |a| = 1.5, h - 1 / (4 h) above with h = e^|a| / 2
    = (1 + m) 2^j, as (2^j - 1 / (4 h)) + m 2^j up to |a| = 20 (h rounded would lose half an
    ulp where the result falls a binade below h), signed."""
    x = _F(a)
    ax = abs(x)
    h, m, k = _half_exp(ax)
    q = _QUARTER / h
    scale = _pow2_lower(k + k)  # 2^(k - 1), normal for |a| <= 20
    large = _fma32(m, scale, scale - q) if ax < _F(20.0) else h - q
    y = _sinh_small(x) if ax < _SINH_SMALL else _copysign32(large, x)
    return y if x == x else x


@_function
def cosh(a: Any) -> Any:
    """cosh in float32: h + 1 / (4 h) with h = e^|a| / 2."""
    x = _F(a)
    h, _, _ = _half_exp(abs(x))
    y = h + _QUARTER / h
    return y if x == x else x


@_inline
def _quadrant_bounded(ax: float) -> tuple[float, int]:
    """``_quadrant`` for ax < ``BOUNDED_LIMIT``, by Cody and Waite's reduction in three steps
    (no table read: a gather costs more than the rest of sin)."""
    shifted = _fma(ax, _TWO_OVER_PI, _MAGIC)
    k = shifted - _MAGIC
    return _fma(-k, _C3, _fma(-k, _C2, _fma(-k, _C1, ax))), _bits(shifted) & 3


@_inline
def _sin(x: float, r: float, q: int) -> Any:
    """sin(x) from |x|'s reduction (r, q)."""
    s, c = _sin_cos(r)
    v = s if (q & 1) == 0 else c
    return _F(_from_bits(_bits(v) ^ (((q & 2) << 62) ^ (_bits(x) & _SIGN))))


@_inline
def _cos(r: float, q: int) -> Any:
    """cos(x) from |x|'s reduction (r, q)."""
    s, c = _sin_cos(r)
    v = c if (q & 1) == 0 else s
    return _F(_from_bits(_bits(v) ^ (((q + 1) & 2) << 62)))


@_inline
def _tan(x: float, r: float, q: int) -> Any:
    """tan(x) from |x|'s reduction (r, q): sin / cos, or -cos / sin in odd quadrants."""
    s, c = _sin_cos(r)
    odd = (q & 1) != 0
    v = (-c if odd else s) / (s if odd else c)
    return _F(_from_bits(_bits(v) ^ (_bits(x) & _SIGN)))


@_function
def sin(a: Any) -> Any:
    """sin(a) for every float32 (``_quadrant``); NaN for inf and NaN."""
    x = _D(_F(a))
    ax = abs(x)
    r, q = _quadrant(ax if ax < _INF else 0.0)
    return _sin(x, r, q) if ax < _INF else _F(x - x)


@_function
def cos(a: Any) -> Any:
    """cos(a) for every float32 (``_quadrant``); NaN for inf and NaN."""
    x = _D(_F(a))
    ax = abs(x)
    r, q = _quadrant(ax if ax < _INF else 0.0)
    return _cos(r, q) if ax < _INF else _F(x - x)


@_function
def tan(a: Any) -> Any:
    """tan(a) for every float32 (``_quadrant``); NaN for inf and NaN."""
    x = _D(_F(a))
    ax = abs(x)
    r, q = _quadrant(ax if ax < _INF else 0.0)
    return _tan(x, r, q) if ax < _INF else _F(x - x)


@_function
def sin_bounded(a: Any) -> Any:
    """sin(a) where |a| < ``BOUNDED_LIMIT`` (and NaN for inf and NaN); ``wide(a)`` says where
    it is not."""
    x = _D(_F(a))
    ax = abs(x)
    r, q = _quadrant_bounded(ax if ax < BOUNDED_LIMIT else 0.0)
    return _sin(x, r, q) if ax < _INF else _F(x - x)


@_function
def cos_bounded(a: Any) -> Any:
    """cos(a) where |a| < ``BOUNDED_LIMIT`` (and NaN for inf and NaN)."""
    x = _D(_F(a))
    ax = abs(x)
    r, q = _quadrant_bounded(ax if ax < BOUNDED_LIMIT else 0.0)
    return _cos(r, q) if ax < _INF else _F(x - x)


@_function
def tan_bounded(a: Any) -> Any:
    """tan(a) where |a| < ``BOUNDED_LIMIT`` (and NaN for inf and NaN)."""
    x = _D(_F(a))
    ax = abs(x)
    r, q = _quadrant_bounded(ax if ax < BOUNDED_LIMIT else 0.0)
    return _tan(x, r, q) if ax < _INF else _F(x - x)


@_function
def wide(a: Any) -> int:
    """1 where a ``*_bounded`` function is wrong for ``a`` (finite, |a| >= ``BOUNDED_LIMIT``),
    else 0: summed over a loop, whether to run it again with the exact functions."""
    ax = abs(_D(_F(a)))
    return 1 if (ax >= BOUNDED_LIMIT) & (ax < _INF) else 0


@_function
def atan(a: Any) -> Any:
    """atan(|a|) (``_atan``), signed."""
    x = _D(_F(a))
    return _F(_copysign(_atan(abs(x)), x))


@_inline
def _asin_parts(ax: float) -> tuple[float, bool]:
    """(asin(w), |a| <= 1/2) with w = |a| there, else w = sqrt((1 - |a|) / 2) (asin(|a|) =
    pi/2 - 2 asin(w)): one square root, no division. NaN beyond 1."""
    small = ax <= 0.5
    z = ax * ax if small else 0.5 * (1.0 - ax)
    w = ax if small else math.sqrt(z)
    p = _ASIN[6]
    p = _fma(p, z, _ASIN[5])
    p = _fma(p, z, _ASIN[4])
    p = _fma(p, z, _ASIN[3])
    p = _fma(p, z, _ASIN[2])
    p = _fma(p, z, _ASIN[1])
    p = _fma(p, z, _ASIN[0])
    return _fma(w * z, p, w), small


@_function
def asin(a: Any) -> Any:
    """asin(|a|) (``_asin_parts``), signed; NaN beyond 1."""
    x = _D(_F(a))
    r, small = _asin_parts(abs(x))
    return _F(_copysign(r if small else _fma(-2.0, r, _PI_2), x))


@_function
def acos(a: Any) -> Any:
    """pi/2 - asin(a) up to |a| = 1/2, 2 asin(w) above, pi - 2 asin(w) below
    (``_asin_parts``); NaN beyond 1."""
    x = _D(_F(a))
    r, small = _asin_parts(abs(x))
    twice = r + r
    return _F(_PI_2 - _copysign(r, x) if small else (twice if x > 0.0 else _PI - twice))


@_function
def asinh(a: Any) -> Any:
    """log1p(|a| + a^2 / (1 + sqrt(1 + a^2))), signed."""
    x = _D(_F(a))
    ax = abs(x)
    square = ax * ax
    y = _copysign(_log1p(ax + square / (1.0 + math.sqrt(1.0 + square))), x)
    return _F(y if ax < _INF else x)


@_function
def acosh(a: Any) -> Any:
    """log1p((a - 1) + sqrt((a - 1)(a + 1))); NaN below 1."""
    x = _D(_F(a))
    below = x - 1.0
    y = _log1p(below + math.sqrt(below * (x + 1.0)))
    return _F(y if x >= 1.0 else _NAN)


@_function
def atanh(a: Any) -> Any:
    """log1p(2 a / (1 - a)) / 2; +-inf at +-1, NaN beyond."""
    x = _D(_F(a))
    return _F(0.5 * _log1p((x + x) / (1.0 - x)))


#: The functions by vocabulary op (``burnpy.ir.elementwise``), for the CPU fuser's float32
#: groups.
FLOAT32: dict[str, Any] = {
    "exp": exp, "log": log, "log1p": log1p, "tanh": tanh, "sinh": sinh,
    "cosh": cosh, "sin": sin, "cos": cos, "tan": tan, "atan": atan, "asin": asin,
    "acos": acos, "asinh": asinh, "acosh": acosh, "atanh": atanh}
#: The fast forms of the functions of ``FLOAT32`` that reduce by a table: exact below
#: ``BOUNDED_LIMIT`` only, ``wide`` flagging where they are not.
BOUNDED: dict[str, Any] = {"sin": sin_bounded, "cos": cos_bounded, "tan": tan_bounded}


@functools.cache
def elementwise(name: str, bounded: bool = False) -> Callable[[np.ndarray, np.ndarray], None]:
    """``run(x, out)``: ``FLOAT32[name]`` (``BOUNDED[name]`` if ``bounded``) over a 1-D float32
    ``x`` into ``out`` (same size), one vectorized loop, compiled on first use per process (for
    tests and benchmarks)."""
    function = BOUNDED[name] if bounded else FLOAT32[name]

    @numba.njit(error_model="numpy", nogil=True)
    def run(x: np.ndarray, out: np.ndarray) -> None:
        for i in range(x.size):
            out[i] = function(x[i])

    return cast(Callable[[np.ndarray, np.ndarray], None], run)
