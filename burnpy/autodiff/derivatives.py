# ruff: noqa: N803, E731 - rules name the inner backend type ``B``; the table is lambdas
"""The local partial derivatives of every elementwise op: the one place each is written.

An entry gives, for each float input of the op, a *partial*
``partial(B, s, y, *inputs, *params) -> s * d y / d input``: the seed ``s`` scaled by the
derivative of the output ``y`` with respect to that input, written with the inner backend
``B``'s ops. An elementwise Jacobian is diagonal, so the same map serves both modes:

- Autodiff's reverse rule applies each partial to the incoming gradient (the graph then
  un-broadcasts it to the input's shape, centrally);
- ForwardAD's tangent rule applies each partial to that input's tangent and sums the terms.

Both rules, and the ops' recording, are generated from this table
(``burnpy/autodiff/rules/elementwise.py``); adding an elementwise op adds
one entry here and nothing in either decorator. ``uses_inputs`` / ``uses_output`` say what the
partials read, which is what Autodiff saves (or recomputes) for backward. A partial that does
not read an argument is passed None for it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from burnpy.autodiff.rule_helpers import TWO_OVER_SQRT_PI, one_minus_square, zeros

#: ``partial(B, s, y, *inputs, *params) -> s * dy/dinput`` (see the module docstring).
Partial = Callable[..., Any]
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Elementwise:
    """One elementwise op's local partials.

    ``name`` is the protocol op; ``arity`` its number of float inputs (they come first in its
    signature, the params after them); ``partials`` has one entry per float input, or none for
    a piecewise-constant op (zero derivative wherever it has one).
    """

    name: str
    arity: int
    partials: tuple[Partial, ...]
    uses_inputs: bool = False
    uses_output: bool = False


def unary(name: str, partial: Partial, *, uses_inputs: bool = False,
          uses_output: bool = False) -> Elementwise:
    """An op of one float input (and maybe params after it)."""
    return Elementwise(name, 1, (partial,), uses_inputs, uses_output)


def binary(name: str, lhs: Partial, rhs: Partial, *, uses_inputs: bool = False,
           uses_output: bool = False) -> Elementwise:
    """An op of two broadcasting float inputs."""
    return Elementwise(name, 2, (lhs, rhs), uses_inputs, uses_output)


def piecewise_constant(name: str) -> Elementwise:
    """A one-input op whose derivative is zero wherever it exists (sign, round, floor...)."""
    return Elementwise(name, 1, ())


# ---- partials that need more than one line ------------------------------------------------------
def _powf_base(B: Any, s: Any, y: Any, base: Any, exponent: Any) -> Any:
    """exponent * base ** (exponent - 1), zero where the exponent is 0 (torch's rule)."""
    slope = B.float_mul(exponent, B.float_powf(base, B.float_sub_scalar(exponent, 1.0)))
    return B.float_mul(s, B.float_mask_fill(slope, B.float_equal_elem(exponent, 0.0), 0.0))


def _powf_exponent(B: Any, s: Any, y: Any, base: Any, exponent: Any) -> Any:
    """base ** exponent * log(base), zero where base == 0 and exponent >= 0 (torch's rule)."""
    slope = B.float_mul(y, B.float_log(base))
    flat = B.bool_and(B.float_equal_elem(base, 0.0), B.float_greater_equal_elem(exponent, 0.0))
    return B.float_mul(s, B.float_mask_fill(slope, flat, 0.0))


def _powf_scalar(B: Any, s: Any, y: Any, x: Any, exponent: float) -> Any:
    """exponent * x ** (exponent - 1); exactly zero for exponent 0."""
    if exponent == 0:
        return zeros(B, s.shape, s)
    return B.float_mul(s, B.float_mul_scalar(B.float_powf_scalar(x, exponent - 1.0), exponent))


def _atan2_y(B: Any, s: Any, out: Any, y: Any, x: Any) -> Any:
    """x / (x^2 + y^2)."""
    return B.float_mul(B.float_div(s, B.float_add(B.float_mul(x, x), B.float_mul(y, y))), x)


def _atan2_x(B: Any, s: Any, out: Any, y: Any, x: Any) -> Any:
    """-y / (x^2 + y^2)."""
    scaled = B.float_div(s, B.float_add(B.float_mul(x, x), B.float_mul(y, y)))
    return B.float_neg(B.float_mul(scaled, y))


def _erf(B: Any, s: Any, y: Any, x: Any) -> Any:
    """2 / sqrt(pi) * exp(-x^2)."""
    density = B.float_mul_scalar(B.float_exp(B.float_neg(B.float_mul(x, x))), TWO_OVER_SQRT_PI)
    return B.float_mul(s, density)


def _erfinv(B: Any, s: Any, y: Any, x: Any) -> Any:
    """sqrt(pi) / 2 * exp(y^2), y = erfinv(x)."""
    return B.float_mul(s, B.float_mul_scalar(B.float_exp(B.float_mul(y, y)),
                                              1.0 / TWO_OVER_SQRT_PI))


def _i1(B: Any, s: Any, y: Any, x: Any) -> Any:
    """i0(x) - i1(x) / x, and 1/2 at x = 0 (torch's rule)."""
    at_zero = B.float_equal_elem(x, 0.0)
    ratio = B.float_div(y, B.float_mask_fill(x, at_zero, 1.0))
    slope = B.float_mask_fill(B.float_sub(B.float_i0(x), ratio), at_zero, 0.5)
    return B.float_mul(s, slope)


def _clamp(B: Any, s: Any, y: Any, x: Any, low: float | None, high: float | None) -> Any:
    """torch's boundary rule: the derivative is 1 where low <= x <= high, else 0."""
    inside = None
    if low is not None:
        inside = B.float_greater_equal_elem(x, low)
    if high is not None:
        below = B.float_lower_equal_elem(x, high)
        inside = below if inside is None else B.bool_and(inside, below)
    return s if inside is None else B.float_mask_fill(s, B.bool_not(inside), 0.0)


def _silu(B: Any, s: Any, y: Any, x: Any) -> Any:
    """silu'(x) = sig (1 + x (1 - sig)) with sig = sigmoid(x)."""
    sig = B.sigmoid(x)
    one_minus = B.float_add_scalar(B.float_neg(sig), 1.0)
    return B.float_mul(s, B.float_mul(sig, B.float_add_scalar(B.float_mul(x, one_minus), 1.0)))


def _leaky_relu(B: Any, s: Any, y: Any, x: Any, negative_slope: float) -> Any:
    """1 where x > 0, else negative_slope (torch's rule at 0)."""
    return B.float_mask_where(B.float_mul_scalar(s, negative_slope),
                              B.float_greater_elem(x, 0.0), s)


def _hard_sigmoid(B: Any, s: Any, y: Any, x: Any, alpha: float, beta: float) -> Any:
    """alpha strictly inside the linear part, 0 on the flat parts (as torch)."""
    z = B.float_add_scalar(B.float_mul_scalar(x, alpha), beta)
    inside = B.bool_and(B.float_greater_elem(z, 0.0), B.float_lower_elem(z, 1.0))
    return B.float_mask_fill(B.float_mul_scalar(s, alpha), B.bool_not(inside), 0.0)


_same = lambda B, s, y, *args: s
_negated = lambda B, s, y, *args: B.float_neg(s)

#: Every elementwise op with a derivative rule, float arithmetic and activations alike.
ELEMENTWISE: tuple[Elementwise, ...] = (
    # ---- arithmetic
    binary("float_add", _same, _same),
    binary("float_sub", _same, _negated),
    binary("float_mul", lambda B, s, y, a, b: B.float_mul(s, b),
           lambda B, s, y, a, b: B.float_mul(s, a), uses_inputs=True),
    binary("float_div", lambda B, s, y, a, b: B.float_div(s, b),
           lambda B, s, y, a, b: B.float_neg(B.float_div(B.float_mul(s, a), B.float_mul(b, b))),
           uses_inputs=True),
    binary("float_remainder", _same,  # a - floor(a / b) * b
           lambda B, s, y, a, b: B.float_neg(B.float_mul(s, B.float_floor(B.float_div(a, b)))),
           uses_inputs=True),
    unary("float_add_scalar", _same),
    unary("float_sub_scalar", _same),
    unary("float_remainder_scalar", _same),
    unary("float_mul_scalar", lambda B, s, y, x, c: B.float_mul_scalar(s, c)),
    unary("float_div_scalar", lambda B, s, y, x, c: B.float_div_scalar(s, c)),
    unary("float_neg", _negated),
    unary("float_recip", lambda B, s, y, x: B.float_neg(B.float_mul(s, B.float_mul(y, y))),
          uses_output=True),
    unary("float_abs", lambda B, s, y, x: B.float_mul(s, B.float_sign(x)), uses_inputs=True),
    piecewise_constant("float_sign"),
    piecewise_constant("float_round"),
    piecewise_constant("float_floor"),
    piecewise_constant("float_ceil"),
    piecewise_constant("float_trunc"),
    unary("float_mask_fill", lambda B, s, y, x, mask, value: B.float_mask_fill(s, mask, 0.0)),
    unary("float_clamp", _clamp, uses_inputs=True),
    unary("float_clamp_min", lambda B, s, y, x, low: _clamp(B, s, y, x, low, None),
          uses_inputs=True),
    unary("float_clamp_max", lambda B, s, y, x, high: _clamp(B, s, y, x, None, high),
          uses_inputs=True),
    # ---- powers, exponentials, logarithms
    unary("float_exp", lambda B, s, y, x: B.float_mul(s, y), uses_output=True),
    unary("float_expm1", lambda B, s, y, x: B.float_mul(s, B.float_add_scalar(y, 1.0)),
          uses_output=True),
    unary("float_log", lambda B, s, y, x: B.float_div(s, x), uses_inputs=True),
    unary("float_log1p", lambda B, s, y, x: B.float_div(s, B.float_add_scalar(x, 1.0)),
          uses_inputs=True),
    unary("float_sqrt", lambda B, s, y, x: B.float_div(s, B.float_mul_scalar(y, 2.0)),
          uses_output=True),
    unary("float_square", lambda B, s, y, x: B.float_mul(s, B.float_mul_scalar(x, 2.0)),
          uses_inputs=True),
    binary("float_powf", _powf_base, _powf_exponent, uses_inputs=True, uses_output=True),
    unary("float_powf_scalar", _powf_scalar, uses_inputs=True),
    unary("float_erf", _erf, uses_inputs=True),
    unary("float_erfc", lambda B, s, y, x: B.float_neg(_erf(B, s, y, x)), uses_inputs=True),
    unary("float_erfinv", _erfinv, uses_output=True),
    unary("float_lgamma", lambda B, s, y, x: B.float_mul(s, B.float_digamma(x)),
          uses_inputs=True),
    unary("float_digamma", lambda B, s, y, x: B.float_mul(s, B.float_polygamma(x, 1)),
          uses_inputs=True),
    unary("float_polygamma", lambda B, s, y, x, n: B.float_mul(s, B.float_polygamma(x, n + 1)),
          uses_inputs=True),
    unary("float_i0", lambda B, s, y, x: B.float_mul(s, B.float_i1(x)), uses_inputs=True),
    unary("float_i1", _i1, uses_inputs=True, uses_output=True),
    # ---- trigonometric and hyperbolic
    unary("float_sin", lambda B, s, y, x: B.float_mul(s, B.float_cos(x)), uses_inputs=True),
    unary("float_cos", lambda B, s, y, x: B.float_neg(B.float_mul(s, B.float_sin(x))),
          uses_inputs=True),
    unary("float_tan", lambda B, s, y, x: B.float_mul(s, B.float_add_scalar(B.float_mul(y, y),
                                                                            1.0)),
          uses_output=True),
    unary("float_asin", lambda B, s, y, x: B.float_div(s, B.float_sqrt(one_minus_square(B, x))),
          uses_inputs=True),
    unary("float_acos",
          lambda B, s, y, x: B.float_neg(B.float_div(s, B.float_sqrt(one_minus_square(B, x)))),
          uses_inputs=True),
    unary("float_atan", lambda B, s, y, x: B.float_div(s, B.float_add_scalar(B.float_mul(x, x),
                                                                            1.0)),
          uses_inputs=True),
    binary("float_atan2", _atan2_y, _atan2_x, uses_inputs=True),
    binary("float_hypot", lambda B, s, y, a, b: B.float_mul(s, B.float_div(a, y)),
           lambda B, s, y, a, b: B.float_mul(s, B.float_div(b, y)),
           uses_inputs=True, uses_output=True),
    binary("float_logaddexp", lambda B, s, y, a, b: B.float_mul(s, B.float_exp(B.float_sub(a, y))),
           lambda B, s, y, a, b: B.float_mul(s, B.float_exp(B.float_sub(b, y))),
           uses_inputs=True, uses_output=True),
    unary("float_sinh", lambda B, s, y, x: B.float_mul(s, B.float_cosh(x)), uses_inputs=True),
    unary("float_cosh", lambda B, s, y, x: B.float_mul(s, B.float_sinh(x)), uses_inputs=True),
    unary("float_tanh", lambda B, s, y, x: B.float_mul(s, one_minus_square(B, y)),
          uses_output=True),
    unary("float_asinh",
          lambda B, s, y, x: B.float_div(s, B.float_sqrt(B.float_add_scalar(B.float_mul(x, x),
                                                                            1.0))),
          uses_inputs=True),
    unary("float_acosh",
          lambda B, s, y, x: B.float_div(s, B.float_sqrt(B.float_sub_scalar(B.float_mul(x, x),
                                                                            1.0))),
          uses_inputs=True),
    unary("float_atanh", lambda B, s, y, x: B.float_div(s, one_minus_square(B, x)),
          uses_inputs=True),
    # ---- activations (the backend's fused backward helpers where it has them)
    unary("relu", lambda B, s, y, x: B.relu_backward(y, s), uses_output=True),
    unary("gelu", lambda B, s, y, x, approximate: B.gelu_backward(x, s, approximate),
          uses_inputs=True),
    unary("sigmoid", lambda B, s, y, x: B.sigmoid_backward(y, s), uses_output=True),
    unary("log_sigmoid", lambda B, s, y, x: B.log_sigmoid_backward(x, s), uses_inputs=True),
    unary("silu", _silu, uses_inputs=True),
    unary("leaky_relu", _leaky_relu, uses_inputs=True),
    unary("hard_sigmoid", _hard_sigmoid, uses_inputs=True),
    unary("softplus",  # sigmoid(beta x)
          lambda B, s, y, x, beta: B.float_mul(s, B.sigmoid(B.float_mul_scalar(x, beta))),
          uses_inputs=True),
)


#: Creation ops: a float result that depends on no float input, so it carries no derivative.
#: ``(name, doc)``; ``float_from_data`` is not here since Autodiff counts its host transfers.
CONSTANT_RESULTS: tuple[tuple[str, str], ...] = (
    ("float_empty", "Uninitialized constant storage."),
    ("float_full", "A constant filled tensor."),
    ("float_zeros", "A constant of zeros."),
    ("float_ones", "A constant of ones."),
    ("float_random", "Constant random samples."),
)

#: Float ops whose result is not a float tensor (bools, indices): they have no derivative, and
#: each decorator runs them on the inner values as they are. ``(name, float inputs, doc)``.
NON_FLOAT_RESULTS: tuple[tuple[str, int, str], ...] = (
    ("float_device", 1, "The device of the inner value."),
    ("float_into_int", 1, "Truncation into an int tensor (no gradient)."),
    ("float_equal", 2, "lhs == rhs."),
    ("float_not_equal", 2, "lhs != rhs."),
    ("float_greater", 2, "lhs > rhs."),
    ("float_greater_equal", 2, "lhs >= rhs."),
    ("float_lower", 2, "lhs < rhs."),
    ("float_lower_equal", 2, "lhs <= rhs."),
    ("float_equal_elem", 1, "lhs == number."),
    ("float_not_equal_elem", 1, "lhs != number."),
    ("float_greater_elem", 1, "lhs > number."),
    ("float_greater_equal_elem", 1, "lhs >= number."),
    ("float_lower_elem", 1, "lhs < number."),
    ("float_lower_equal_elem", 1, "lhs <= number."),
    ("float_is_nan", 1, "True where NaN."),
    ("float_is_inf", 1, "True where +-inf."),
    ("float_any", 1, "Whether any element is non-zero."),
    ("float_any_dim", 1, "Whether any element along dim is non-zero."),
    ("float_all", 1, "Whether every element is non-zero."),
    ("float_all_dim", 1, "Whether every element along dim is non-zero."),
    ("float_argmax", 1, "Index of the max along dim (no gradient)."),
    ("float_argmin", 1, "Index of the min along dim (no gradient)."),
    ("float_argsort", 1, "Sorting indices along dim (no gradient)."),
)


# ---- what the decorators generate from the tables -----------------------------------------------
class ParamBinder:
    """Completes an op call's params from the protocol's signature: defaults left out and
    params passed by keyword (the generated ops' fast path takes positional params only)."""

    __slots__ = ("_signature", "arity", "count")

    def __init__(self, entry: Elementwise) -> None:
        # Imported here: the protocol is needed only when the decorators are built.
        from burnpy.backend.base import Backend

        self._signature = inspect.signature(getattr(Backend, entry.name))
        self.arity = entry.arity
        self.count = len(self._signature.parameters) - entry.arity

    def __call__(self, params: tuple[Any, ...], keywords: dict[str, Any]) -> tuple[Any, ...]:
        bound = self._signature.bind(*(None,) * self.arity, *params, **keywords)
        bound.apply_defaults()
        return tuple(bound.args[self.arity:])


def generated_from_table(make: Callable[[Elementwise], Any]) -> Callable[[type[T]], type[T]]:
    """A class decorator adding ``make(entry)`` as the method ``entry.name`` for every entry
    of ``ELEMENTWISE`` (each decorator's elementwise op family)."""

    def fill(cls: type[T]) -> type[T]:
        for entry in ELEMENTWISE:
            setattr(cls, entry.name, make(entry))
        return cls

    return fill


def without_derivative(constant: Callable[[str, str], Any], unary: Callable[[str, str], Any],
                       binary: Callable[[str, str], Any]) -> Callable[[type[T]], type[T]]:
    """A class decorator adding every op of ``CONSTANT_RESULTS`` and ``NON_FLOAT_RESULTS``,
    built by the decorator's ``constant(name, doc)`` and ``unary(name, doc)`` /
    ``binary(name, doc)`` factories of inner-value calls."""

    def fill(cls: type[T]) -> type[T]:
        for name, doc in CONSTANT_RESULTS:
            setattr(cls, name, constant(name, doc))
        for name, inputs, doc in NON_FLOAT_RESULTS:
            setattr(cls, name, (binary if inputs == 2 else unary)(name, doc))
        return cls

    return fill
