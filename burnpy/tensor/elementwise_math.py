"""torch's elementwise math beyond Burn's core, composed from Tensor ops where it can be (so each
is differentiable in both modes on every backend) and written down once here; ``Tensor``'s
methods of the same names call these."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import ml_dtypes

from burnpy.backend.dtype import DType
from burnpy.backend.errors import InvalidArgumentError, KindError
from burnpy.tensor._core import BOOL, FLOAT, INT, new
from burnpy.tensor.arithmetic import scalar_like

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


def operand(t: Tensor, other: Tensor | float, op: str) -> Tensor:
    """``other`` as a tensor of ``t``'s backend (a Python number takes ``t``'s dtype)."""
    from burnpy.tensor.tensor import Tensor

    if isinstance(other, Tensor):
        return other
    if isinstance(other, bool | int | float):
        return scalar_like(t, other, op)
    raise InvalidArgumentError(f"{op}: expects a tensor or a number, got {type(other).__name__}")


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
    from burnpy.tensor.tensor import Tensor

    return Tensor.full((), value, backend=t.backend, device=t.device, dtype=t.dtype)


def xlogy(t: Tensor, other: Tensor | float) -> Tensor:
    """``t * log(other)``, 0 where ``t == 0`` unless ``other`` is NaN (torch's rule, gradients
    included: none flows through the zeroed elements)."""
    x = floating(t, "xlogy")
    y = operand(x, other, "xlogy")
    y = floating(y, "xlogy")
    zeroed = (x == 0) & ~y.isnan()
    return x * y.mask_fill(zeroed, 1.0).log()


def div_rounded(t: Tensor, other: Tensor | float, rounding_mode: str) -> Tensor:
    """torch's ``div`` with a ``rounding_mode``: "floor" is ``floor_div``; "trunc" rounds the
    true quotient toward zero, and between ints is C's integer division (an int result; an int
    division by zero is an error, as ``floor_div``'s)."""
    if rounding_mode not in ("trunc", "floor"):
        raise InvalidArgumentError(f"div: rounding_mode must be None, 'trunc' or 'floor', got "
                                   f"{rounding_mode!r}")
    kind = getattr(other, "kind", None)
    other_int = kind is not FLOAT if kind is not None else isinstance(other, int)
    if rounding_mode == "floor":
        # An int tensor by a Python float divides in the default float dtype, as torch's.
        return (t if other_int or kind is not None else t.float()).floor_div(other)
    if t.kind is FLOAT or not other_int:
        return (t / other).trunc()
    o = operand(t, other, "div")
    q = t.floor_div(o)
    # Floor went one below zero's side where the division is inexact and the signs differ.
    moved = (t.remainder(o) != 0) & ((t < 0) != (o < 0))
    return q.mask_where(moved, q + 1)


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
    from burnpy.tensor.tensor import Tensor

    span = end - t
    if not isinstance(weight, Tensor):
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
