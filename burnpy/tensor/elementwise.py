"""Elementwise math and activations of Tensor (``ElementwiseOps``, a mixin of ``Tensor``):
Burn's core ops call one backend op each; torch's further math is composed from Tensor ops
where it can be (so each is differentiable in both modes on every backend)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

import ml_dtypes

from burnpy.backend.dtype import DType, DTypeLike
from burnpy.backend.errors import (
    DTypeError,
    InvalidArgumentError,
    KindError,
    ShapeError,
    describe,
)
from burnpy.tensor._core import (
    BOOL,
    FLOAT,
    INT,
    TensorBase,
    check_same_backend,
    common_dtype,
    new,
)
from burnpy.tensor.arithmetic import (
    all_false,
    float_unary,
    operand,
    require_float,
    rounding,
    scalar_like,
    signed_unary,
)
from burnpy.tensor.autocast_hook import autocast_op
from burnpy.tensor.checks import broadcast_shapes, normalize_dim
from burnpy.tensor.clamp_bounds import clamp_tensor_bounds
from burnpy.tensor.creation import CreationOps
from burnpy.tensor.scalar_dims import as_vector

if TYPE_CHECKING:
    from burnpy.tensor.tensor import Tensor

def floating(t: Tensor, op: str) -> Tensor:
    """``t`` as a float tensor: int and bool tensors take the backend's default float dtype,
    as torch promotes them for its float-valued math."""
    if t.kind is FLOAT:
        return t
    if t.kind in (INT, BOOL):
        return t.cast(t.backend.float_dtype)
    raise KindError(f"{op}: expects a float, int or bool tensor, got a {t.kind} tensor")


def special_unary(t: Tensor, op: str, fn: Callable[[Any], Any]) -> Tensor:
    """``fn`` (a backend op) on ``t``, ints and bools promoted to float first."""
    x = floating(t, op)
    return new(x.backend, fn(x.primitive), FLOAT)


def signbit(t: Tensor) -> Tensor:
    """True where the sign bit is set: negatives and -0.0 (read through ``1 / x``)."""
    if t.kind is not FLOAT:
        return t < 0 if t.kind is INT else t & False
    negative_zero = (t == 0) & (t.recip() < 0)
    return (t < 0) | negative_zero


def copysign(t: Tensor, other: Tensor | float) -> Tensor:
    """``|t|`` with ``other``'s sign bit; the gradient reaches ``t`` only (0 where t == 0)."""
    x = floating(t, "copysign")
    o = operand(x, other, "copysign")
    return x.abs() * _full(x, 1.0).mask_where(signbit(o), _full(x, -1.0))


def _full(t: Tensor, value: float) -> Tensor:
    return CreationOps.full((), value, backend=t.backend, device=t.device, dtype=t.dtype)


def xlogy(t: Tensor, other: Tensor | float) -> Tensor:
    """``t * log(other)``, 0 where ``t == 0`` unless ``other`` is NaN (torch's rule, gradients
    included: none flows through the zeroed elements)."""
    x = floating(t, "xlogy")
    y = operand(x, other, "xlogy")
    y = floating(y, "xlogy")
    zeroed = (x == 0) & ~y.isnan()
    return x * y.mask_fill(zeroed, 1.0).log()


def fmod(t: Tensor, other: Tensor | float) -> Tensor:
    """C's ``fmod``: the remainder with the dividend's sign, from Python's remainder (whose
    sign is the divisor's) moved by one divisor where the signs differ."""
    o = operand(t, other, "fmod")
    r = t.remainder(o)
    moved = (r != 0) & ((r < 0) != (t < 0))
    return r.mask_where(moved, r - o)


def fmax(t: Tensor, other: Tensor) -> Tensor:
    """Elementwise max ignoring NaN (NaN only where both are); ties go to ``t``."""
    take_other = (other > t) | t.isnan() if t.kind is FLOAT else other > t
    return t.mask_where(take_other, other)


def fmin(t: Tensor, other: Tensor) -> Tensor:
    """Elementwise min ignoring NaN (NaN only where both are); ties go to ``t``."""
    take_other = (other < t) | t.isnan() if t.kind is FLOAT else other < t
    return t.mask_where(take_other, other)


def heaviside(t: Tensor, values: Tensor) -> Tensor:
    """0 where ``t < 0``, 1 where ``t > 0``, ``values`` where ``t == 0``."""
    step = (t > 0).cast(t.dtype)
    return step.mask_where(t == 0, values)


def nan_to_num(t: Tensor, nan: float = 0.0, posinf: float | None = None,
               neginf: float | None = None) -> Tensor:
    """NaN, +inf and -inf replaced (infinities by the dtype's largest finite values by
    default); int and bool tensors come back as they are."""
    if t.kind is not FLOAT:
        return t
    finfo = ml_dtypes.finfo(t.dtype.numpy)
    high = float(finfo.max) if posinf is None else posinf
    low = float(finfo.min) if neginf is None else neginf
    out = t.mask_fill(t.isnan(), nan)
    out = out.mask_fill(t == math.inf, high)
    return out.mask_fill(t == -math.inf, low)


def lerp(t: Tensor, end: Tensor, weight: Tensor | float) -> Tensor:
    """``t + weight * (end - t)``, as ``end - (end - t) * (1 - weight)`` where weight >= 0.5
    (torch's two forms: exact at both ends)."""
    span = end - t
    if not isinstance(weight, TensorBase):
        w = float(weight)
        return t + span * w if abs(w) < 0.5 else end - span * (1.0 - w)
    low = t + span * weight
    high = end - span * (1.0 - weight)
    return low.mask_where(weight.abs() >= 0.5, high)


def isclose(t: Tensor, other: Tensor, rtol: float, atol: float, equal_nan: bool) -> Tensor:
    """``|t - other| <= atol + rtol * |other|`` (equal infinities included), as torch."""
    close = t == other
    if t.kind is FLOAT or other.kind is FLOAT:
        a, b = floating(t, "isclose"), floating(other, "isclose")
        if equal_nan:
            close = close | (a.isnan() & b.isnan())
        error = (a - b).abs()
        close = close | (error.isfinite() & (error <= (b * rtol).abs() + atol))
        return close
    error = (t - other).abs().cast(DType.float64 if t.backend.supports_dtype(
        t.device, DType.float64) else DType.float32)
    bound = other.cast(error.dtype).abs() * rtol + atol
    return close | (error <= bound)


def truthy(t: Tensor) -> Tensor:
    """``t != 0`` as a bool tensor (a bool tensor is itself)."""
    return t if t.kind is BOOL else t != 0


class ElementwiseOps:
    """``Tensor``'s elementwise math and activations, clamps, NaN tests and masks."""

    __slots__ = ()

    # Elementwise math: float tensors only unless said otherwise.
    def neg(self: Tensor) -> Tensor:
        """``-x`` (float or int)."""
        return signed_unary(self, "neg", self.backend.float_neg, self.backend.int_neg)

    __neg__ = neg

    def abs(self: Tensor) -> Tensor:
        """``|x|`` (float or int)."""
        return signed_unary(self, "abs", self.backend.float_abs, self.backend.int_abs)

    __abs__ = abs

    def sign(self: Tensor) -> Tensor:
        """-1, 0 or 1 by the sign of x (float or int)."""
        return signed_unary(self, "sign", self.backend.float_sign, self.backend.int_sign)

    def exp(self: Tensor) -> Tensor:
        """``e ** x``."""
        return float_unary(self, "exp", self.backend.float_exp)

    def expm1(self: Tensor) -> Tensor:
        """``e ** x - 1``, accurate near 0."""
        return float_unary(self, "expm1", self.backend.float_expm1)

    def log(self: Tensor) -> Tensor:
        """Natural logarithm."""
        return float_unary(self, "log", self.backend.float_log)

    def log1p(self: Tensor) -> Tensor:
        """``log(1 + x)``, accurate near 0."""
        return float_unary(self, "log1p", self.backend.float_log1p)

    def sqrt(self: Tensor) -> Tensor:
        """Square root."""
        return float_unary(self, "sqrt", self.backend.float_sqrt)

    def square(self: Tensor) -> Tensor:
        """``x * x`` (int tensors stay int, as torch's)."""
        if self.kind is INT:
            return self * self
        return float_unary(self, "square", self.backend.float_square)

    def recip(self: Tensor) -> Tensor:
        """``1 / x``."""
        return float_unary(self, "recip", self.backend.float_recip)

    reciprocal = recip

    def sin(self: Tensor) -> Tensor:
        """Sine (radians)."""
        return float_unary(self, "sin", self.backend.float_sin)

    def cos(self: Tensor) -> Tensor:
        """Cosine (radians)."""
        return float_unary(self, "cos", self.backend.float_cos)

    def tan(self: Tensor) -> Tensor:
        """Tangent (radians)."""
        return float_unary(self, "tan", self.backend.float_tan)

    def asin(self: Tensor) -> Tensor:
        """Inverse sine, in [-pi/2, pi/2]."""
        return float_unary(self, "asin", self.backend.float_asin)

    arcsin = asin

    def acos(self: Tensor) -> Tensor:
        """Inverse cosine, in [0, pi]."""
        return float_unary(self, "acos", self.backend.float_acos)

    arccos = acos

    def atan(self: Tensor) -> Tensor:
        """Inverse tangent, in (-pi/2, pi/2)."""
        return float_unary(self, "atan", self.backend.float_atan)

    arctan = atan

    def sinh(self: Tensor) -> Tensor:
        """Hyperbolic sine."""
        return float_unary(self, "sinh", self.backend.float_sinh)

    def cosh(self: Tensor) -> Tensor:
        """Hyperbolic cosine."""
        return float_unary(self, "cosh", self.backend.float_cosh)

    def tanh(self: Tensor) -> Tensor:
        """Hyperbolic tangent."""
        return float_unary(self, "tanh", self.backend.float_tanh)

    def asinh(self: Tensor) -> Tensor:
        """Inverse hyperbolic sine."""
        return float_unary(self, "asinh", self.backend.float_asinh)

    arcsinh = asinh

    def acosh(self: Tensor) -> Tensor:
        """Inverse hyperbolic cosine (x >= 1)."""
        return float_unary(self, "acosh", self.backend.float_acosh)

    arccosh = acosh

    def atanh(self: Tensor) -> Tensor:
        """Inverse hyperbolic tangent (|x| < 1)."""
        return float_unary(self, "atanh", self.backend.float_atanh)

    arctanh = atanh

    def erf(self: Tensor) -> Tensor:
        """The Gauss error function."""
        return float_unary(self, "erf", self.backend.float_erf)

    def round(self: Tensor, decimals: int = 0) -> Tensor:
        """Round half to even (an int tensor is returned as is); to ``decimals`` places as
        torch: ``round(x * 10**decimals) / 10**decimals``."""
        if decimals != 0 and self.kind is FLOAT:
            scale = 10.0 ** decimals
            return (self * scale).round() / scale
        return rounding(self, "round", self.backend.float_round)

    def floor(self: Tensor) -> Tensor:
        """The largest integer <= x (an int tensor is returned as is)."""
        return rounding(self, "floor", self.backend.float_floor)

    def ceil(self: Tensor) -> Tensor:
        """The smallest integer >= x (an int tensor is returned as is)."""
        return rounding(self, "ceil", self.backend.float_ceil)

    def trunc(self: Tensor) -> Tensor:
        """x rounded toward zero (an int tensor is returned as is)."""
        return rounding(self, "trunc", self.backend.float_trunc)

    def relu(self: Tensor) -> Tensor:
        """``max(x, 0)``."""
        return float_unary(self, "relu", self.backend.relu)

    def sigmoid(self: Tensor) -> Tensor:
        """``1 / (1 + exp(-x))``, stable for large ``|x|``."""
        return float_unary(self, "sigmoid", self.backend.sigmoid)

    def log_sigmoid(self: Tensor) -> Tensor:
        """``log(sigmoid(x))``, stable."""
        return float_unary(self, "log_sigmoid", self.backend.log_sigmoid)

    def silu(self: Tensor) -> Tensor:
        """``x * sigmoid(x)``."""
        return float_unary(self, "silu", self.backend.silu)

    def __invert__(self: Tensor) -> Tensor:
        """``~x``: logical not of a bool tensor, bitwise not of an int tensor."""
        b = self.backend
        if self.kind is BOOL:
            return new(b, b.bool_not(self.primitive), BOOL)
        if self.kind is INT:
            return new(b, b.int_bitwise_not(self.primitive), INT)
        raise KindError(f"~: expects a bool or int tensor, got {self.kind} ({self.dtype!r})")

    def bitwise_not(self: Tensor) -> Tensor:
        """torch.bitwise_not: ``~x`` (logical not of a bool tensor, bitwise not of an int one)."""
        return ~self

    def logical_not(self: Tensor) -> Tensor:
        """A bool tensor, true where ``self`` is zero / false (torch.logical_not, for any kind)."""
        if self.kind is BOOL:
            return ~self
        if self.kind not in (FLOAT, INT):
            raise KindError(f"logical_not: expects a float, int or bool tensor, got {self.kind}")
        return self == 0

    def __pos__(self: Tensor) -> Tensor:
        """``+x``: the tensor itself."""
        return self

    def rsqrt(self: Tensor) -> Tensor:
        """1 / sqrt(x)."""
        return self.sqrt().recip()

    def gelu(self: Tensor, approximate: Literal["none", "tanh"] = "none") -> Tensor:
        """x * Phi(x); ``approximate="tanh"`` for the tanh form."""
        require_float(self, "gelu")
        if approximate not in ("none", "tanh"):
            raise InvalidArgumentError(
                f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
        return new(self.backend, self.backend.gelu(self.primitive, approximate), FLOAT)

    def leaky_relu(self: Tensor, negative_slope: float = 0.01) -> Tensor:
        """``x`` where positive, else ``negative_slope * x``."""
        require_float(self, "leaky_relu")
        return new(self.backend, self.backend.leaky_relu(self.primitive, float(negative_slope)),
                   FLOAT)

    def hard_sigmoid(self: Tensor, alpha: float = 1 / 6, beta: float = 0.5) -> Tensor:
        """``clamp(alpha * x + beta, 0, 1)``: a piecewise-linear sigmoid."""
        require_float(self, "hard_sigmoid")
        return new(self.backend, self.backend.hard_sigmoid(self.primitive, alpha, beta), FLOAT)

    def softplus(self: Tensor, beta: float = 1.0) -> Tensor:
        """``log(1 + exp(beta * x)) / beta``, stable for large values."""
        require_float(self, "softplus")
        return new(self.backend, self.backend.softplus(self.primitive, float(beta)), FLOAT)

    @autocast_op("softmax")
    def softmax(self: Tensor, dim: int, dtype: DTypeLike | None = None) -> Tensor:
        """exp(x) normalized along ``dim`` (computed in ``dtype`` when given: the input is
        cast first, as torch's)."""
        if dtype is not None:
            return self.cast(dtype).softmax(dim)
        require_float(self, "softmax")
        if self.ndim == 0:
            return as_vector(self, "softmax", dim, lambda v: v.softmax(0))
        d = normalize_dim("softmax", dim, self.ndim)
        return new(self.backend, self.backend.softmax(self.primitive, d), FLOAT)

    @autocast_op("log_softmax")
    def log_softmax(self: Tensor, dim: int, dtype: DTypeLike | None = None) -> Tensor:
        """x - logsumexp(x) along ``dim`` (computed in ``dtype`` when given: the input is
        cast first, as torch's)."""
        if dtype is not None:
            return self.cast(dtype).log_softmax(dim)
        require_float(self, "log_softmax")
        if self.ndim == 0:
            return as_vector(self, "log_softmax", dim, lambda v: v.log_softmax(0))
        d = normalize_dim("log_softmax", dim, self.ndim)
        return new(self.backend, self.backend.log_softmax(self.primitive, d), FLOAT)

    def clamp(self: Tensor, min: Tensor | float | None = None,
              max: Tensor | float | None = None) -> Tensor:
        """Limit values to [min, max]; either bound may be omitted. A tensor bound broadcasts
        and gets its share of the gradient (torch's rule, see ``clamp_bounds``)."""
        if min is None and max is None:
            raise InvalidArgumentError("clamp: give at least one of min and max")
        if isinstance(min, TensorBase) or isinstance(max, TensorBase):
            if self.kind is BOOL:
                raise KindError("clamp: expects a float or int tensor, got bool")
            return clamp_tensor_bounds(self, min, max)
        b = self.backend
        if self.kind is FLOAT:
            lo = None if min is None else float(min)
            hi = None if max is None else float(max)
            if lo is not None and hi is None:
                return new(b, b.float_clamp_min(self.primitive, lo), FLOAT)
            if hi is not None and lo is None:
                return new(b, b.float_clamp_max(self.primitive, hi), FLOAT)
            return new(b, b.float_clamp(self.primitive, lo, hi), FLOAT)
        if self.kind is INT:
            if isinstance(min, float) or isinstance(max, float):
                raise DTypeError("clamp: float bounds for an int tensor; use .float() first")
            return new(b, b.int_clamp(self.primitive, min, max), INT)
        raise KindError(f"clamp: expects a float or int tensor, got {self.kind}")

    clip = clamp

    def clamp_min(self: Tensor, min: Tensor | float) -> Tensor:
        """Limit values to at least ``min`` (a number or a broadcasting tensor)."""
        return self.clamp(min=min)

    def clamp_max(self: Tensor, max: Tensor | float) -> Tensor:
        """Limit values to at most ``max`` (a number or a broadcasting tensor)."""
        return self.clamp(max=max)

    def maximum(self: Tensor, other: Tensor) -> Tensor:
        """Elementwise max of two tensors (NaN propagates, as torch.maximum)."""
        take_other = (other > self) | other.isnan() if self.kind is FLOAT else other > self
        return self.mask_where(take_other, other)

    def minimum(self: Tensor, other: Tensor) -> Tensor:
        """Elementwise min of two tensors (NaN propagates, as torch.minimum)."""
        take_other = (other < self) | other.isnan() if self.kind is FLOAT else other < self
        return self.mask_where(take_other, other)

    def isnan(self: Tensor) -> Tensor:
        """Where values are NaN, as a bool tensor (all False for int and bool tensors)."""
        if self.kind is not FLOAT:
            return all_false(self)
        return new(self.backend, self.backend.float_is_nan(self.primitive), BOOL)

    is_nan = isnan

    def isinf(self: Tensor) -> Tensor:
        """Where values are +-inf, as a bool tensor (all False for int and bool tensors)."""
        if self.kind is not FLOAT:
            return all_false(self)
        return new(self.backend, self.backend.float_is_inf(self.primitive), BOOL)

    is_inf = isinf

    def isfinite(self: Tensor) -> Tensor:
        """Where values are neither NaN nor infinite, as a bool tensor."""
        return ~(self.isnan() | self.isinf())

    def mask_where(self: Tensor, mask: Tensor, value: Tensor) -> Tensor:
        """``value`` where ``mask`` is true, else ``self`` (Burn's ``mask_where``; broadcasts)."""
        op = "mask_where"
        if mask.kind is not BOOL:
            raise KindError(f"{op}: the mask must be a bool tensor, got {mask.kind}")
        check_same_backend(op, self, mask)
        check_same_backend(op, self, value)
        if value.kind is not self.kind:
            raise DTypeError(f"{op}: value is {value.kind} ({value.dtype!r}) but the tensor is "
                             f"{self.kind} ({self.dtype!r})")
        shape = broadcast_shapes(op, broadcast_shapes(op, self.shape, mask.shape), value.shape)
        b = self.backend
        t, v = self, value
        if t.kind is not BOOL:
            dtype = common_dtype(op, t, v)
            t, v = t.cast(dtype), v.cast(dtype)
        if t.shape != shape:
            t = t.expand(shape)
        fn = {FLOAT: b.float_mask_where, INT: b.int_mask_where, BOOL: b.bool_mask_where}[t.kind]
        return new(b, fn(t.primitive, mask.primitive, v.primitive), t.kind)

    def mask_fill(self: Tensor, mask: Tensor, value: float | Tensor) -> Tensor:
        """``value`` (a number or a 0-d tensor, which the gradient reaches) where ``mask`` is
        true, else ``self`` (torch's ``masked_fill``)."""
        op = "mask_fill"
        if mask.kind is not BOOL:
            raise KindError(f"{op}: the mask must be a bool tensor, got {mask.kind}")
        check_same_backend(op, self, mask)
        shape = broadcast_shapes(op, self.shape, mask.shape)
        t = self if self.shape == shape else self.expand(shape)
        if isinstance(value, TensorBase):
            if value.ndim != 0:
                raise ShapeError(f"{op}: a tensor value must be 0-d, got "
                                 f"{describe(value.shape)}")
            if value.kind is not FLOAT or t.kind is not FLOAT:
                return t.mask_fill(mask, value.item())
            return t.mask_where(mask, value.cast(t.dtype).expand(shape))
        b = self.backend
        if t.kind is FLOAT:
            return new(b, b.float_mask_fill(t.primitive, mask.primitive, float(value)), FLOAT)
        if t.kind is INT:
            if isinstance(value, float):
                raise DTypeError(f"{op}: float value {value!r} for an int tensor")
            return new(b, b.int_mask_fill(t.primitive, mask.primitive, int(value)), INT)
        return t.mask_where(mask, scalar_like(t, bool(value), op).expand(shape))

    masked_fill = mask_fill

    # Float-valued math takes int and bool tensors too, promoted to the default float (torch).
    def erfc(self: Tensor) -> Tensor:
        """``1 - erf(x)``, accurate where erf is close to 1."""
        return special_unary(self, "erfc", self.backend.float_erfc)

    def erfinv(self: Tensor) -> Tensor:
        """The inverse of erf: +-inf at +-1, NaN outside [-1, 1]."""
        return special_unary(self, "erfinv", self.backend.float_erfinv)

    def lgamma(self: Tensor) -> Tensor:
        """``log |Gamma(x)|`` (+inf at 0, -1, -2...)."""
        return special_unary(self, "lgamma", self.backend.float_lgamma)

    def digamma(self: Tensor) -> Tensor:
        """``psi(x)``, the derivative of lgamma."""
        return special_unary(self, "digamma", self.backend.float_digamma)

    def polygamma(self: Tensor, n: int) -> Tensor:
        """The ``n``-th derivative of digamma (torch's ``x.polygamma(n)``; n = 0 is digamma)."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise InvalidArgumentError(f"polygamma: n must be a non-negative int, got {n!r}")
        x = floating(self, "polygamma")
        return new(x.backend, x.backend.float_polygamma(x.primitive, n), FLOAT)

    def i0(self: Tensor) -> Tensor:
        """The modified Bessel function of the first kind, order 0."""
        return special_unary(self, "i0", self.backend.float_i0)

    def exp2(self: Tensor) -> Tensor:
        """``2 ** x``."""
        return 2.0 ** floating(self, "exp2")

    def log2(self: Tensor) -> Tensor:
        """Base-2 logarithm."""
        return floating(self, "log2").log() * (1.0 / math.log(2.0))

    def log10(self: Tensor) -> Tensor:
        """Base-10 logarithm."""
        return floating(self, "log10").log() * (1.0 / math.log(10.0))

    def logit(self: Tensor, eps: float | None = None) -> Tensor:
        """``log(x / (1 - x))``, with x first clamped to [eps, 1 - eps] when eps is given."""
        x = floating(self, "logit")
        if eps is not None:
            x = x.clamp(eps, 1.0 - eps)
        return (x / (1.0 - x)).log()

    def sinc(self: Tensor) -> Tensor:
        """``sin(pi x) / (pi x)``, 1 at 0 (with a zero gradient there)."""
        x = floating(self, "sinc")
        zero = x == 0
        scaled = x.mask_fill(zero, 1.0) * math.pi
        return (scaled.sin() / scaled).mask_fill(zero, 1.0)

    def sgn(self: Tensor) -> Tensor:
        """The sign (torch's ``sgn``; the same as ``sign`` for real tensors)."""
        return self.sign()

    def signbit(self: Tensor) -> Tensor:
        """Where the sign bit is set (negatives and -0.0), as a bool tensor."""
        return signbit(self)

    def frac(self: Tensor) -> Tensor:
        """``x - trunc(x)``: the fractional part, with x's sign."""
        require_float(self, "frac")
        return self - self.trunc()

    def copysign(self: Tensor, other: Tensor | float) -> Tensor:
        """``|x|`` with the sign of ``other`` (float result)."""
        return copysign(self, other)

    def xlogy(self: Tensor, other: Tensor | float) -> Tensor:
        """``x * log(other)``, 0 where x is 0 (unless other is NaN)."""
        return xlogy(self, other)

    def fmod(self: Tensor, other: Tensor | float) -> Tensor:
        """The remainder of truncating division: C's fmod, the sign of ``self``."""
        return fmod(self, other)

    def fmax(self: Tensor, other: Tensor) -> Tensor:
        """Elementwise max where NaN loses to a number (torch.fmax)."""
        return fmax(self, other)

    def fmin(self: Tensor, other: Tensor) -> Tensor:
        """Elementwise min where NaN loses to a number (torch.fmin)."""
        return fmin(self, other)

    def heaviside(self: Tensor, values: Tensor) -> Tensor:
        """The step function: 0 below 0, 1 above, ``values`` at 0."""
        return heaviside(self, values)

    def deg2rad(self: Tensor) -> Tensor:
        """Degrees to radians."""
        return floating(self, "deg2rad") * (math.pi / 180.0)

    def rad2deg(self: Tensor) -> Tensor:
        """Radians to degrees."""
        return floating(self, "rad2deg") * (180.0 / math.pi)

    def nan_to_num(self: Tensor, nan: float = 0.0, posinf: float | None = None,
                   neginf: float | None = None) -> Tensor:
        """NaN, +inf, -inf replaced by ``nan``, ``posinf``, ``neginf`` (the dtype's extremes
        by default); gradients pass only where x is finite."""
        return nan_to_num(self, nan, posinf, neginf)

    def lerp(self: Tensor, end: Tensor, weight: Tensor | float) -> Tensor:
        """``self + weight * (end - self)``."""
        return lerp(self, end, weight)

    def addcmul(self: Tensor, tensor1: Tensor, tensor2: Tensor, value: float = 1) -> Tensor:
        """``self + value * tensor1 * tensor2``."""
        return self + tensor1 * tensor2 * value

    def addcdiv(self: Tensor, tensor1: Tensor, tensor2: Tensor, value: float = 1) -> Tensor:
        """``self + value * tensor1 / tensor2``."""
        return self + tensor1 / tensor2 * value

    def isclose(self: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
                equal_nan: bool = False) -> Tensor:
        """Where ``|self - other| <= atol + rtol * |other|``, as a bool tensor."""
        return isclose(self, other, rtol, atol, equal_nan)

    def allclose(self: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
                 equal_nan: bool = False) -> bool:
        """Whether ``isclose`` holds everywhere (a Python bool, as torch's)."""
        return bool(self.isclose(other, rtol, atol, equal_nan).all().item())

    def logical_and(self: Tensor, other: Tensor) -> Tensor:
        """Elementwise ``self and other`` of any kinds (non-zero is true), as bools."""
        return truthy(self) & truthy(other)

    def logical_or(self: Tensor, other: Tensor) -> Tensor:
        """Elementwise ``self or other`` of any kinds (non-zero is true), as bools."""
        return truthy(self) | truthy(other)

    def logical_xor(self: Tensor, other: Tensor) -> Tensor:
        """Elementwise exclusive or of any kinds (non-zero is true), as bools."""
        return truthy(self) ^ truthy(other)

    def positive(self: Tensor) -> Tensor:
        """The tensor itself (``+x``); bool tensors are refused, as torch does."""
        if self.kind is BOOL:
            raise KindError("positive: not defined for bool tensors")
        return self
