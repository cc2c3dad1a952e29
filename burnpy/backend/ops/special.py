"""The protocol's default special functions (``lgamma``, ``digamma``, ``polygamma``, ``erfinv``,
``i0``, ``i1``), composed from a backend's elementwise ops.

Each is written to float64 accuracy (1e-15 relative away from zeros of the function), so the
same composition serves every backend and dtype; narrower inputs are computed in float64 where
the device has it (float32 otherwise) and rounded once, as the native kernels do. Backends
with a native library (SciPy, CuPy) override them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from burnpy.backend.dtype import DType, dtype_of_numpy
from burnpy.backend.primitives import FloatPrimitive

if TYPE_CHECKING:
    from burnpy.backend.base import Backend

#: Shift of the recurrences: the asymptotic series run at ``x >= _SHIFT``.
_SHIFT = 10
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
#: Bernoulli numbers B2, B4, ..., B16.
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510)

Unary = Callable[[type["Backend"], FloatPrimitive], FloatPrimitive]


def widened(cls: type[Backend], x: FloatPrimitive, fn: Unary) -> FloatPrimitive:
    """``fn(x)`` computed in float64 where the device has it (else float32) and rounded back
    once: the series lose a few digits to cancellation near the zeros of the functions."""
    dtype = dtype_of_numpy(x.dtype)
    wide = DType.float64 if cls.supports_dtype(cls.float_device(x), DType.float64) \
        else DType.float32
    if dtype in (DType.float64, wide):
        return fn(cls, x)
    return cls.float_cast(fn(cls, cls.float_cast(x, wide)), dtype)


def _poles(cls: type[Backend], x: FloatPrimitive) -> FloatPrimitive:
    """True at the non-positive integers, where the gamma function has its poles."""
    return cls.bool_and(cls.float_lower_equal_elem(x, 0.0),
                        cls.float_equal(x, cls.float_floor(x)))


def _sin_pi(cls: type[Backend], x: FloatPrimitive) -> FloatPrimitive:
    """sin(pi * x) up to its sign, reduced by the nearest integer first so that it stays
    accurate near the integers (where it vanishes)."""
    return cls.float_sin(cls.float_mul_scalar(cls.float_sub(x, cls.float_round(x)), math.pi))


def _shifted(cls: type[Backend], x: FloatPrimitive) -> tuple[FloatPrimitive, FloatPrimitive]:
    """``(z, small)``: ``z = x + _SHIFT`` where ``x < _SHIFT`` (``small``), else ``x``."""
    small = cls.float_lower_elem(x, float(_SHIFT))
    return cls.float_mask_where(x, small, cls.float_add_scalar(x, float(_SHIFT))), small


def lgamma_positive(cls: type[Backend], x: FloatPrimitive) -> FloatPrimitive:
    """log Gamma(x) for x >= 0.5: Stirling's series at ``x + 10`` and the recurrence
    ``lgamma(x) = lgamma(x + 10) - log(x (x + 1) ... (x + 9))``."""
    z, small = _shifted(cls, x)
    inv = cls.float_recip(z)
    inv2 = cls.float_mul(inv, inv)
    series = cls.float_full((), 0.0, cls.float_device(x), dtype_of_numpy(x.dtype))
    for k in range(len(_BERNOULLI), 0, -1):  # sum B2k / (2k (2k - 1) z^(2k - 1))
        coef = _BERNOULLI[k - 1] / (2 * k * (2 * k - 1))
        series = cls.float_add_scalar(cls.float_mul(series, inv2), coef)
    series = cls.float_mul(series, inv)
    out = cls.float_add(cls.float_sub(cls.float_mul(cls.float_sub_scalar(z, 0.5), cls.float_log(z)),
                                      z), cls.float_add_scalar(series, _HALF_LOG_2PI))
    product = x
    for k in range(1, _SHIFT):
        product = cls.float_mul(product, cls.float_add_scalar(x, float(k)))
    corrected = cls.float_sub(out, cls.float_log(cls.float_abs(product)))
    return cls.float_mask_where(out, small, corrected)


def lgamma(cls: type[Backend], x: FloatPrimitive) -> FloatPrimitive:
    """log |Gamma(x)|, with the reflection ``log(pi / |sin(pi x)|) - lgamma(1 - x)`` below 0.5;
    +inf at the poles and at +-inf, NaN for NaN (torch's values)."""
    reflect = cls.float_lower_elem(x, 0.5)
    direct = cls.float_mask_fill(x, reflect, 1.0)
    mirrored = cls.float_mask_fill(cls.float_add_scalar(cls.float_neg(x), 1.0),
                                   cls.bool_not(reflect), 1.0)
    log_sin = cls.float_log(cls.float_abs(_sin_pi(cls, mirrored)))
    reflected = cls.float_sub(cls.float_neg(cls.float_add_scalar(log_sin, -math.log(math.pi))),
                              lgamma_positive(cls, mirrored))
    out = cls.float_mask_where(lgamma_positive(cls, direct), reflect, reflected)
    return cls.float_mask_fill(out, cls.bool_or(_poles(cls, x), cls.float_is_inf(x)), math.inf)


def digamma_positive(cls: type[Backend], x: FloatPrimitive) -> FloatPrimitive:
    """psi(x) for x >= 0.5: the asymptotic series at ``x + 10`` and the recurrence
    ``psi(x) = psi(x + 10) - sum 1 / (x + k)``."""
    z, small = _shifted(cls, x)
    inv = cls.float_recip(z)
    inv2 = cls.float_mul(inv, inv)
    series = cls.float_full((), 0.0, cls.float_device(x), dtype_of_numpy(x.dtype))
    for k in range(len(_BERNOULLI), 0, -1):  # sum B2k / (2k z^2k)
        series = cls.float_add_scalar(cls.float_mul(series, inv2), _BERNOULLI[k - 1] / (2 * k))
    series = cls.float_mul(series, inv2)
    out = cls.float_sub(cls.float_log(z), cls.float_add(cls.float_mul_scalar(inv, 0.5), series))
    total = cls.float_recip(x)
    for k in range(1, _SHIFT):
        total = cls.float_add(total, cls.float_recip(cls.float_add_scalar(x, float(k))))
    return cls.float_mask_where(out, small, cls.float_sub(out, total))


def digamma(cls: type[Backend], x: FloatPrimitive) -> FloatPrimitive:
    """psi(x), with the reflection ``psi(1 - x) - pi / tan(pi x)`` below 0.5; at 0 it is
    -inf (+inf at -0), NaN at the negative integers and -inf, +inf at +inf (torch's values)."""
    reflect = cls.float_lower_elem(x, 0.5)
    direct = cls.float_mask_fill(x, reflect, 1.0)
    mirrored = cls.float_mask_fill(cls.float_add_scalar(cls.float_neg(x), 1.0),
                                   cls.bool_not(reflect), 1.0)
    turn = cls.float_mul_scalar(cls.float_sub(x, cls.float_round(x)), math.pi)
    cot = cls.float_div(cls.float_mul_scalar(cls.float_cos(turn), math.pi), cls.float_sin(turn))
    reflected = cls.float_sub(digamma_positive(cls, mirrored), cot)
    out = cls.float_mask_where(digamma_positive(cls, direct), reflect, reflected)
    out = cls.float_mask_fill(out, _poles(cls, x), math.nan)
    zero = cls.float_equal_elem(x, 0.0)  # -inf at +0, +inf at -0: -1 / x
    out = cls.float_mask_where(out, zero, cls.float_mul_scalar(cls.float_recip(x), -1.0))
    return cls.float_mask_fill(out, cls.float_equal_elem(x, math.inf), math.inf)


def polygamma(cls: type[Backend], x: FloatPrimitive, n: int) -> FloatPrimitive:
    """psi^(n)(x) = (-1)^(n + 1) n! zeta(n + 1, x) for n >= 1, with Hurwitz's zeta summed to
    ``x + 10`` and finished by the Euler-Maclaurin formula (full accuracy for x > 0; a few
    digits fewer below, where ``x + 10`` is small)."""
    s = n + 1
    z = cls.float_add_scalar(x, float(_SHIFT))
    total = cls.float_powf_scalar(x, float(-s))
    for k in range(1, _SHIFT):
        total = cls.float_add(total, cls.float_powf_scalar(cls.float_add_scalar(x, float(k)),
                                                           float(-s)))
    inv = cls.float_recip(z)
    inv2 = cls.float_mul(inv, inv)
    tail_scale = cls.float_powf_scalar(z, float(-s))  # z^-s
    tail = cls.float_add_scalar(cls.float_mul_scalar(z, 1.0 / (s - 1)), 0.5)
    # sum_j B2j / (2j)! * s (s + 1) ... (s + 2j - 2) * z^(1 - 2j)
    correction = cls.float_full((), 0.0, cls.float_device(x), dtype_of_numpy(x.dtype))
    coefficients = []
    rising, factorial = 1.0, 1.0
    for j in range(1, len(_BERNOULLI) + 1):
        rising *= (s + 2 * j - 2) * (s + 2 * j - 3) if j > 1 else s
        factorial *= (2 * j) * (2 * j - 1)
        coefficients.append(_BERNOULLI[j - 1] / factorial * rising)
    for coef in reversed(coefficients):
        correction = cls.float_add_scalar(cls.float_mul(correction, inv2), coef)
    correction = cls.float_mul(correction, inv)
    zeta = cls.float_add(total, cls.float_mul(tail_scale, cls.float_add(tail, correction)))
    sign = 1.0 if n % 2 == 1 else -1.0
    return cls.float_mul_scalar(zeta, sign * math.factorial(n))


def erfinv(cls: type[Backend], x: FloatPrimitive) -> FloatPrimitive:
    """The inverse of erf on [-1, 1] (+-inf at +-1, NaN outside): Giles' single-precision
    approximation refined by two Newton steps on erf."""
    w = cls.float_neg(cls.float_log(cls.float_mul(cls.float_add_scalar(cls.float_neg(x), 1.0),
                                                  cls.float_add_scalar(x, 1.0))))
    central = cls.float_sub_scalar(w, 2.5)
    tail = cls.float_sub_scalar(cls.float_sqrt(w), 3.0)
    p_central = _horner(cls, central, (2.81022636e-08, 3.43273939e-07, -3.5233877e-06,
                                       -4.39150654e-06, 0.00021858087, -0.00125372503,
                                       -0.00417768164, 0.246640727, 1.50140941))
    p_tail = _horner(cls, tail, (-0.000200214257, 0.000100950558, 0.00134934322,
                                 -0.00367342844, 0.00573950773, -0.0076224613, 0.00943887047,
                                 1.00167406, 2.83297682))
    y = cls.float_mul(cls.float_mask_where(p_central, cls.float_greater_equal_elem(w, 5.0),
                                           p_tail), x)
    for _ in range(2):
        slope = cls.float_mul_scalar(cls.float_exp(cls.float_neg(cls.float_mul(y, y))),
                                     2.0 / math.sqrt(math.pi))
        y = cls.float_sub(y, cls.float_div(cls.float_sub(cls.float_erf(y), x), slope))
    edge = cls.float_equal_elem(cls.float_abs(x), 1.0)
    return cls.float_mask_where(y, edge, cls.float_mul_scalar(x, math.inf))


def _horner(cls: type[Backend], t: FloatPrimitive, coefs: tuple[float, ...]) -> FloatPrimitive:
    """The polynomial with ``coefs`` (highest degree first) at ``t``."""
    out = cls.float_add_scalar(cls.float_mul_scalar(t, coefs[0]), coefs[1])
    for c in coefs[2:]:
        out = cls.float_add_scalar(cls.float_mul(out, t), c)
    return out


#: The power series of I0 and I1 run below this |x|; the asymptotic series above it.
_BESSEL_SERIES_LIMIT = 30.0
_BESSEL_SERIES_TERMS = 64
_BESSEL_ASYMPTOTIC_TERMS = 24


def bessel_i(cls: type[Backend], x: FloatPrimitive, order: int) -> FloatPrimitive:
    """The modified Bessel function I0 or I1 (``order``): its power series
    ``sum (x/2)^(2k + order) / (k! (k + order)!)`` for |x| <= 30, the asymptotic series
    ``e^|x| / sqrt(2 pi |x|) * sum`` above (I1 is odd)."""
    a = cls.float_abs(x)
    small = cls.float_lower_equal_elem(a, _BESSEL_SERIES_LIMIT)
    s = cls.float_mask_fill(a, cls.bool_not(small), 1.0)
    q = cls.float_mul_scalar(cls.float_mul(s, s), 0.25)
    term = cls.float_ones(x.shape, cls.float_device(x), dtype_of_numpy(x.dtype))
    series = term
    for k in range(1, _BESSEL_SERIES_TERMS):
        term = cls.float_div_scalar(cls.float_mul(term, q), float(k * (k + order)))
        series = cls.float_add(series, term)
    if order == 1:
        series = cls.float_mul(series, cls.float_mul_scalar(s, 0.5))
    big = cls.float_mask_fill(a, small, _BESSEL_SERIES_LIMIT)
    mu = 4.0 * order * order
    inv8 = cls.float_recip(cls.float_mul_scalar(big, 8.0))
    term = cls.float_ones(x.shape, cls.float_device(x), dtype_of_numpy(x.dtype))
    asymptotic = term
    for k in range(1, _BESSEL_ASYMPTOTIC_TERMS):
        term = cls.float_mul(term, cls.float_mul_scalar(inv8, -(mu - (2 * k - 1) ** 2) / k))
        asymptotic = cls.float_add(asymptotic, term)
    scale = cls.float_div(cls.float_exp(big),
                          cls.float_sqrt(cls.float_mul_scalar(big, 2.0 * math.pi)))
    out = cls.float_mask_where(cls.float_mul(asymptotic, scale), small, series)
    out = cls.float_mask_where(out, cls.float_is_nan(x), x)
    if order == 1:
        out = cls.float_mask_where(out, cls.float_lower_elem(x, 0.0), cls.float_neg(out))
    return out
