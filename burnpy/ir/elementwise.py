# ruff: noqa: N803, E731 - partials name the inner backend type ``B``; the short ones are lambdas
"""Every elementwise op, declared once: the registry the derivative table, the IR's fusable
table and every fuser's expression table are derived from.

An ``ElementwiseOp`` gives:

- ``name``, ``arity`` and ``meaning``: the op as the fused IR knows it (``burnpy.ir.fused``);
- ``records``: the protocol ops ``Fusion`` records as this op (``FUSABLE``), with which of
  their arguments are its operands and how their result's dtype comes out;
- ``derivatives``: the local partials of the float protocol ops computing it
  (``LocalPartials``), from which ``Autodiff``'s reverse rules and ``ForwardAD``'s tangent
  rules are generated (``burnpy.autodiff.derivatives``);
- its expression for each fuser, over the operands ``a``, ``b``, ``c`` (``Forms``: one per kind
  of result, None where that fuser does not compute it): ``numba`` (Python for the CPU
  fuser's numba loops, ``np`` and ``math`` in scope), ``cuda`` (CUDA C; ``W(x)`` converts to
  the computing type), ``wgsl`` (WGSL, with ``burnpy_wgpu.kernels.wgsl_math``'s functions).
  WebGPU's own unfused op of a registry op is built from the same WGSL expression.

Ops without an expression (``erfinv``, the activations...) are not fused; ``Fusion`` runs them
on the inner backend. ``kind`` says how the fusers type an op: ``arithmetic`` computes in the
result's dtype from operands converted to it; ``compare`` and ``test`` give bools (comparing
in the operands' wider type); ``logic`` works on bools; ``where``, ``copy`` and ``cast`` are
structural, written by each fuser itself.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from burnpy.backend.dtype import dtype_of_numpy

#: ``partial(B, s, y, *inputs, *params) -> s * dy/dinput`` (see ``LocalPartials``).
Partial = Callable[..., Any]

#: How the fusers type an op (see the module docstring).
Kind = Literal["arithmetic", "compare", "test", "logic", "where", "copy", "cast"]

#: How a recorded op's result dtype and shape follow from its operands.
Result = Literal["same", "promote", "bool", "dtype_arg", "expand", "reduce"]

#: 2 / sqrt(pi), the scale of erf's derivative.
TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


@dataclass(frozen=True, slots=True)
class LocalPartials:
    """The local partial derivatives of one float protocol op, ``name``.

    ``arity`` is its number of float inputs (they come first in its signature, the params
    after them); ``partials`` has one ``partial(B, s, y, *inputs, *params) -> s * dy/dinput``
    per float input (the seed ``s`` scaled by the derivative of the output ``y``, written with
    the inner backend ``B``'s ops), or none for a piecewise-constant op (zero derivative
    wherever it has one). ``uses_inputs`` / ``uses_output`` say what the partials read (what
    Autodiff saves); a partial is passed None for what it does not read.
    """

    name: str
    arity: int
    partials: tuple[Partial, ...]
    uses_inputs: bool = False
    uses_output: bool = False


def unary(name: str, partial: Partial, *, uses_inputs: bool = False,
          uses_output: bool = False) -> LocalPartials:
    """An op of one float input (and maybe params after it)."""
    return LocalPartials(name, 1, (partial,), uses_inputs, uses_output)


def binary(name: str, lhs: Partial, rhs: Partial, *, uses_inputs: bool = False,
           uses_output: bool = False) -> LocalPartials:
    """An op of two broadcasting float inputs."""
    return LocalPartials(name, 2, (lhs, rhs), uses_inputs, uses_output)


def piecewise_constant(name: str) -> LocalPartials:
    """A one-input op whose derivative is zero wherever it exists (sign, round, floor...)."""
    return LocalPartials(name, 1, ())


class Forms(NamedTuple):
    """An op's expression in one fuser's language, per kind of result: float, signed int,
    unsigned int (None where the fuser does not compute the op for that kind). The numba and
    CUDA fusers read ``int`` for every int type; WGSL's ``i32`` and ``u32`` differ."""

    float: str | None
    int: str | None = None
    uint: str | None = None

    @property
    def single(self) -> str:
        """The one expression of an op computed alike for every kind (``every``): the
        comparisons, tests and logic ops, whose operand and result types are the fuser's."""
        assert self.float is not None and self.float == self.int == self.uint, self
        return self.float


def every(expression: str) -> Forms:
    """The same expression for every kind of result."""
    return Forms(expression, expression, expression)


class Record(NamedTuple):
    """A protocol op ``Fusion`` records as a registry op: which of its arguments are the op's
    operands (positions, in the op's order; each a tensor or a number), how its result's
    dtype and shape come out, and the position of its dtype/shape argument (``extra``)."""

    protocol: str
    operands: tuple[int, ...]
    result: Result
    extra: int | None = None


@dataclass(frozen=True, slots=True)
class ElementwiseOp:
    """One elementwise op (see the module docstring): its IR name, arity and meaning, the
    protocol ops recorded as it, the local partials of the float ones, its fuser
    expressions, and whether the CPU fuser leaves it to NumPy on floats (``numpy_faster``:
    NumPy's SIMD loop beats numba's per-element libm call by more than fusing saves)."""

    name: str
    arity: int
    meaning: str
    kind: Kind = "arithmetic"
    records: tuple[Record, ...] = ()
    derivatives: tuple[LocalPartials, ...] = ()
    numba: Forms | None = None
    cuda: Forms | None = None
    wgsl: Forms | None = None
    numpy_faster: bool = False

    @property
    def fusable(self) -> bool:
        """Whether the op is in the fused IR: ``Fusion`` records it or a fuser computes it."""
        return bool(self.records) or any(f is not None for f in (self.numba, self.cuda,
                                                                  self.wgsl))


def float_op(name: str, arity: int, result: Result | None = None) -> Record:
    """``float_{name}`` on its first ``arity`` arguments, binary ones promoting."""
    return Record(f"float_{name}", tuple(range(arity)),
                  result or ("promote" if arity == 2 else "same"))


def numeric(name: str, arity: int, *, scalar: bool = False, result: Result | None = None,
            prefixes: tuple[str, ...] = ("float", "int")) -> tuple[Record, ...]:
    """``{float,int}_{name}`` (and ``_{name}_scalar``, the number second, typed as the
    tensor) on their first ``arity`` arguments."""
    positions = tuple(range(arity))
    out: list[Record] = []
    for p in prefixes:
        out.append(Record(f"{p}_{name}", positions,
                          result or ("promote" if arity == 2 else "same")))
        if scalar:
            out.append(Record(f"{p}_{name}_scalar", positions, "same"))
    return tuple(out)


def comparison(name: str, *, bools: bool = False) -> tuple[Record, ...]:
    """``{float,int}_{name}`` and ``_{name}_elem`` (and ``bool_{name}``): bool results."""
    out = [Record(f"{p}_{name}{s}", (0, 1), "bool") for p in ("float", "int")
           for s in ("", "_elem")]
    if bools:
        out.append(Record(f"bool_{name}", (0, 1), "bool"))
    return tuple(out)


def cast_from(*names: str) -> tuple[Record, ...]:
    """Conversions ``name(tensor, dtype)``."""
    return tuple(Record(n, (0,), "dtype_arg", 1) for n in names)


# ---- partials that need more than one line ------------------------------------------------------
def _one_minus_square(B: Any, x: Any) -> Any:
    """1 - x * x (as -(x * x) + 1, which rounds identically)."""
    return B.float_add_scalar(B.float_neg(B.float_mul(x, x)), 1.0)


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
        return B.float_zeros(s.shape, B.float_device(s), dtype_of_numpy(s.dtype))
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


def _logaddexp2_side(B: Any, s: Any, y: Any, side: Any) -> Any:
    """2 ** (side - y): the weight of one side in log2(2**a + 2**b) = y."""
    return B.float_mul(s, B.float_exp(B.float_mul_scalar(B.float_sub(side, y), math.log(2.0))))


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


def _math(name: str, meaning: str, partial: LocalPartials, numba: str, cuda: str, wgsl: str,
          *, numpy_faster: bool = False) -> ElementwiseOp:
    """A unary float function ``float_{name}``, fused on floats only."""
    return ElementwiseOp(name, 1, meaning, records=(float_op(name, 1),),
                         derivatives=(partial,), numba=Forms(numba), cuda=Forms(cuda),
                         wgsl=Forms(wgsl), numpy_faster=numpy_faster)


def _rounding(name: str, meaning: str, numba: str, cuda: str, wgsl: str) -> ElementwiseOp:
    """A float rounding ``float_{name}``: zero derivative, fused on floats only."""
    return _math(name, meaning, piecewise_constant(f"float_{name}"), numba, cuda, wgsl)


def _unfused(name: str, arity: int, meaning: str, *derivatives: LocalPartials) -> ElementwiseOp:
    """An op no fuser computes (``Fusion`` runs it, or its composition, on the inner backend):
    only its local partials."""
    return ElementwiseOp(name, arity, meaning, derivatives=derivatives)


#: Every elementwise op (see the module docstring); add one here and the tables follow.
OPS: tuple[ElementwiseOp, ...] = (
    # ---- arithmetic, result of the (promoted) operand dtype
    ElementwiseOp(
        "add", 2, "a + b", records=numeric("add", 2, scalar=True),
        derivatives=(binary("float_add", _same, _same), unary("float_add_scalar", _same)),
        numba=every("a + b"), cuda=every("a + b"), wgsl=every("a + b")),
    ElementwiseOp(
        "sub", 2, "a - b", records=numeric("sub", 2, scalar=True),
        derivatives=(binary("float_sub", _same, _negated), unary("float_sub_scalar", _same)),
        numba=every("a - b"), cuda=every("a - b"), wgsl=every("a - b")),
    ElementwiseOp(
        "mul", 2, "a * b", records=numeric("mul", 2, scalar=True),
        derivatives=(
            binary("float_mul", lambda B, s, y, a, b: B.float_mul(s, b),
                   lambda B, s, y, a, b: B.float_mul(s, a), uses_inputs=True),
            unary("float_mul_scalar", lambda B, s, y, x, c: B.float_mul_scalar(s, c))),
        numba=every("a * b"), cuda=every("a * b"), wgsl=every("a * b")),
    ElementwiseOp(
        "div", 2, "floats: a / b (IEEE); ints: floor(a / b), Python's //",
        records=numeric("div", 2, scalar=True),
        derivatives=(
            binary("float_div", lambda B, s, y, a, b: B.float_div(s, b),
                   lambda B, s, y, a, b: B.float_neg(B.float_div(B.float_mul(s, a),
                                                                 B.float_mul(b, b))),
                   uses_inputs=True),
            unary("float_div_scalar", lambda B, s, y, x, c: B.float_div_scalar(s, c))),
        # NumPy's int division by zero is kept on NumPy
        numba=Forms("a / b"), cuda=Forms("a / b", "bp_floordiv(a, b)"),
        wgsl=Forms("a / b", "floordiv_i32(a, b)", "a / b")),
    ElementwiseOp(
        "remainder", 2, "a - b * floor(a / b): the sign of b, Python's %",
        records=numeric("remainder", 2, scalar=True),
        derivatives=(
            binary("float_remainder", _same,  # a - floor(a / b) * b
                   lambda B, s, y, a, b: B.float_neg(B.float_mul(s, B.float_floor(
                       B.float_div(a, b)))),
                   uses_inputs=True),
            unary("float_remainder_scalar", _same)),
        numba=Forms("a % b"), cuda=Forms("bp_fmod_py(a, b)", "bp_mod(a, b)"),
        wgsl=Forms("fmod_py(a, b)", "mod_i32(a, b)", "a % b")),
    ElementwiseOp(
        "pow", 2, "a ** b (ints: b >= 0)",
        records=(float_op("powf", 2), Record("float_powf_scalar", (0, 1), "same"),
                 Record("int_powi_scalar", (0, 1), "same")),
        derivatives=(binary("float_powf", _powf_base, _powf_exponent, uses_inputs=True,
                            uses_output=True),
                     unary("float_powf_scalar", _powf_scalar, uses_inputs=True)),
        numba=every("a ** b"), cuda=Forms("pow(a, b)", "bp_powi(a, b)"),
        wgsl=Forms("pow_acc(a, b)", "powi_i32(a, u32(b))", "powi_u32(a, b)"), numpy_faster=True),
    ElementwiseOp(
        "atan2", 2, "atan2(a, b), the angle of the point (b, a)", records=(float_op("atan2", 2),),
        derivatives=(binary("float_atan2", _atan2_y, _atan2_x, uses_inputs=True),),
        numba=Forms("np.arctan2(a, b)"), cuda=Forms("atan2(a, b)"),
        wgsl=Forms("atan2_acc(a, b)"), numpy_faster=True),
    ElementwiseOp(
        "logaddexp2", 2, "log2(2 ** a + 2 ** b) without overflow; equal sides give a + 1",
        records=(float_op("logaddexp2", 2),),
        derivatives=(binary("float_logaddexp2",
                            lambda B, s, y, a, b: _logaddexp2_side(B, s, y, a),
                            lambda B, s, y, a, b: _logaddexp2_side(B, s, y, b),
                            uses_inputs=True, uses_output=True),),
        numba=Forms("(a + 1.0 if a == b else max(a, b) + np.log1p(np.exp2(-abs(a - b)))"
                    " * 1.4426950408889634)"),
        cuda=Forms("(a == b ? a + W(1) : fmax(a, b) + log1p(exp2(-fabs(a - b)))"
                   " * W(1.4426950408889634))"),
        wgsl=Forms("select(select(max(a, b) + log1p_acc(exp2(-abs(a - b))) * 1.442695041,"
                   " a + 1.0, a == b), a + b, is_nan(a) || is_nan(b))")),
    ElementwiseOp(
        "neg", 1, "-a", records=numeric("neg", 1), derivatives=(unary("float_neg", _negated),),
        numba=every("-a"), cuda=every("-a"), wgsl=Forms("-a", "-a", "0u - a")),
    ElementwiseOp(
        "abs", 1, "|a|", records=numeric("abs", 1),
        derivatives=(unary("float_abs", lambda B, s, y, x: B.float_mul(s, B.float_sign(x)),
                           uses_inputs=True),),
        numba=every("abs(a)"), cuda=Forms("fabs(a)", "(a < W(0) ? -a : a)"),
        wgsl=Forms("abs(a)", "abs(a)", "a")),
    ElementwiseOp(
        "sign", 1, "-1, 0 or 1; NaN gives 0", records=numeric("sign", 1),
        derivatives=(piecewise_constant("float_sign"),),
        numba=every("(1 if a > 0 else (-1 if a < 0 else 0))"),
        cuda=every("W((a > W(0)) - (a < W(0)))"),
        wgsl=Forms("select(sign(a), a, is_nan(a))", "sign(a)", "select(0u, 1u, a != 0u)")),
    ElementwiseOp(
        "clamp", 3, "min(max(a, lo), hi); NaN stays NaN", records=numeric("clamp", 3),
        derivatives=(unary("float_clamp", _clamp, uses_inputs=True),),
        numba=every("(b if a < b else (c if a > c else a))"),
        cuda=Forms("(a != a ? a : (a < b ? b : (a > c ? c : a)))",
                   "(a < b ? b : (a > c ? c : a))"),
        wgsl=Forms("select(min(max(a, b), c), a, is_nan(a))", "min(max(a, b), c)",
                   "min(max(a, b), c)")),
    # a clamp with one bound (Fusion records float_clamp(x, lo, None) as clamp_min)
    ElementwiseOp(
        "clamp_min", 2, "max(a, lo); NaN stays NaN",
        derivatives=(unary("float_clamp_min",
                           lambda B, s, y, x, low: _clamp(B, s, y, x, low, None),
                           uses_inputs=True),),
        numba=every("(b if a < b else a)"),
        cuda=Forms("(a != a ? a : (a < b ? b : a))", "(a < b ? b : a)"),
        wgsl=Forms("select(max(a, b), a, is_nan(a))", "max(a, b)", "max(a, b)")),
    ElementwiseOp(
        "clamp_max", 2, "min(a, hi); NaN stays NaN",
        derivatives=(unary("float_clamp_max",
                           lambda B, s, y, x, high: _clamp(B, s, y, x, None, high),
                           uses_inputs=True),),
        numba=every("(b if a > b else a)"),
        cuda=Forms("(a != a ? a : (a > b ? b : a))", "(a > b ? b : a)"),
        wgsl=Forms("select(min(a, b), a, is_nan(a))", "min(a, b)", "min(a, b)")),
    _unfused("recip", 1, "1 / a",
             unary("float_recip", lambda B, s, y, x: B.float_neg(B.float_mul(s, B.float_mul(y, y))),
                   uses_output=True)),
    _unfused("square", 1, "a * a",
             unary("float_square", lambda B, s, y, x: B.float_mul(s, B.float_mul_scalar(x, 2.0)),
                   uses_inputs=True)),
    # ---- roundings
    _rounding("round", "nearest integer, halves to even", "np.rint(a)", "rint(a)", "round(a)"),
    _rounding("floor", "round down", "np.floor(a)", "floor(a)", "floor(a)"),
    _rounding("ceil", "round up", "np.ceil(a)", "ceil(a)", "ceil(a)"),
    _rounding("trunc", "round toward 0", "np.trunc(a)", "trunc(a)", "trunc(a)"),
    # ---- powers, exponentials, logarithms
    _math("exp", "e ** a", unary("float_exp", lambda B, s, y, x: B.float_mul(s, y),
                                 uses_output=True),
          "np.exp(a)", "exp(a)", "exp(a)", numpy_faster=True),
    _math("log", "natural log",
          unary("float_log", lambda B, s, y, x: B.float_div(s, x), uses_inputs=True),
          "np.log(a)", "log(a)", "log_acc(a)", numpy_faster=True),
    _math("log1p", "log(1 + a), accurate near 0",
          unary("float_log1p", lambda B, s, y, x: B.float_div(s, B.float_add_scalar(x, 1.0)),
                uses_inputs=True),
          "np.log1p(a)", "log1p(a)", "log1p_acc(a)", numpy_faster=True),
    _math("sqrt", "square root (NaN below 0)",
          unary("float_sqrt", lambda B, s, y, x: B.float_div(s, B.float_mul_scalar(y, 2.0)),
                uses_output=True),
          "np.sqrt(a)", "sqrt(a)", "sqrt(a)"),
    _math("erf", "the error function", unary("float_erf", _erf, uses_inputs=True),
          "math.erf(a)", "erf(a)", "erf_acc(a)"),
    _unfused("expm1", 1, "e ** a - 1, accurate near 0",
             unary("float_expm1", lambda B, s, y, x: B.float_mul(s, B.float_add_scalar(y, 1.0)),
                   uses_output=True)),
    _unfused("erfc", 1, "1 - erf(a)",
             unary("float_erfc", lambda B, s, y, x: B.float_neg(_erf(B, s, y, x)),
                   uses_inputs=True)),
    _unfused("erfinv", 1, "the inverse error function",
             unary("float_erfinv", _erfinv, uses_output=True)),
    _unfused("lgamma", 1, "log |gamma(a)|",
             unary("float_lgamma", lambda B, s, y, x: B.float_mul(s, B.float_digamma(x)),
                   uses_inputs=True)),
    _unfused("digamma", 1, "the derivative of lgamma",
             unary("float_digamma", lambda B, s, y, x: B.float_mul(s, B.float_polygamma(x, 1)),
                   uses_inputs=True)),
    _unfused("polygamma", 1, "the n-th derivative of digamma",
             unary("float_polygamma",
                   lambda B, s, y, x, n: B.float_mul(s, B.float_polygamma(x, n + 1)),
                   uses_inputs=True)),
    _unfused("i0", 1, "the modified Bessel function of order 0",
             unary("float_i0", lambda B, s, y, x: B.float_mul(s, B.float_i1(x)),
                   uses_inputs=True)),
    _unfused("i1", 1, "the modified Bessel function of order 1",
             unary("float_i1", _i1, uses_inputs=True, uses_output=True)),
    _unfused("hypot", 2, "sqrt(a ** 2 + b ** 2) without overflow",
             binary("float_hypot", lambda B, s, y, a, b: B.float_mul(s, B.float_div(a, y)),
                    lambda B, s, y, a, b: B.float_mul(s, B.float_div(b, y)),
                    uses_inputs=True, uses_output=True)),
    _unfused("logaddexp", 2, "log(e ** a + e ** b) without overflow",
             binary("float_logaddexp",
                    lambda B, s, y, a, b: B.float_mul(s, B.float_exp(B.float_sub(a, y))),
                    lambda B, s, y, a, b: B.float_mul(s, B.float_exp(B.float_sub(b, y))),
                    uses_inputs=True, uses_output=True)),
    # ---- trigonometric and hyperbolic
    _math("sin", "sine",
          unary("float_sin", lambda B, s, y, x: B.float_mul(s, B.float_cos(x)), uses_inputs=True),
          "np.sin(a)", "sin(a)", "sin(a)", numpy_faster=True),
    _math("cos", "cosine",
          unary("float_cos", lambda B, s, y, x: B.float_neg(B.float_mul(s, B.float_sin(x))),
                uses_inputs=True),
          "np.cos(a)", "cos(a)", "cos(a)", numpy_faster=True),
    _math("tan", "tangent",
          unary("float_tan",
                lambda B, s, y, x: B.float_mul(s, B.float_add_scalar(B.float_mul(y, y), 1.0)),
                uses_output=True),
          "np.tan(a)", "tan(a)", "tan(a)", numpy_faster=True),
    _math("asin", "arcsine",
          unary("float_asin",
                lambda B, s, y, x: B.float_div(s, B.float_sqrt(_one_minus_square(B, x))),
                uses_inputs=True),
          "np.arcsin(a)", "asin(a)", "asin_acc(a)", numpy_faster=True),
    _math("acos", "arccosine",
          unary("float_acos",
                lambda B, s, y, x: B.float_neg(B.float_div(s, B.float_sqrt(
                    _one_minus_square(B, x)))),
                uses_inputs=True),
          "np.arccos(a)", "acos(a)", "acos_acc(a)", numpy_faster=True),
    _math("atan", "arctangent",
          unary("float_atan",
                lambda B, s, y, x: B.float_div(s, B.float_add_scalar(B.float_mul(x, x), 1.0)),
                uses_inputs=True),
          "np.arctan(a)", "atan(a)", "atan_acc(a)", numpy_faster=True),
    _math("sinh", "hyperbolic sine",
          unary("float_sinh", lambda B, s, y, x: B.float_mul(s, B.float_cosh(x)),
                uses_inputs=True),
          "np.sinh(a)", "sinh(a)", "sinh_acc(a)", numpy_faster=True),
    _math("cosh", "hyperbolic cosine",
          unary("float_cosh", lambda B, s, y, x: B.float_mul(s, B.float_sinh(x)),
                uses_inputs=True),
          "np.cosh(a)", "cosh(a)", "cosh_acc(a)", numpy_faster=True),
    _math("tanh", "hyperbolic tangent",
          unary("float_tanh", lambda B, s, y, x: B.float_mul(s, _one_minus_square(B, y)),
                uses_output=True),
          "np.tanh(a)", "tanh(a)", "tanh_acc(a)", numpy_faster=True),
    _math("asinh", "inverse hyperbolic sine",
          unary("float_asinh",
                lambda B, s, y, x: B.float_div(s, B.float_sqrt(B.float_add_scalar(
                    B.float_mul(x, x), 1.0))),
                uses_inputs=True),
          "np.arcsinh(a)", "asinh(a)", "asinh_acc(a)", numpy_faster=True),
    _math("acosh", "inverse hyperbolic cosine",
          unary("float_acosh",
                lambda B, s, y, x: B.float_div(s, B.float_sqrt(B.float_sub_scalar(
                    B.float_mul(x, x), 1.0))),
                uses_inputs=True),
          "np.arccosh(a)", "acosh(a)", "acosh_acc(a)", numpy_faster=True),
    _math("atanh", "inverse hyperbolic tangent",
          unary("float_atanh", lambda B, s, y, x: B.float_div(s, _one_minus_square(B, x)),
                uses_inputs=True),
          "np.arctanh(a)", "atanh(a)", "atanh_acc(a)", numpy_faster=True),
    # ---- selection and copies
    ElementwiseOp(
        "where", 3, "b if the bool c is true else a, for where(c, b, a)", kind="where",
        records=(*[Record(f"{p}_mask_where", (1, 2, 0), "promote") for p in ("float", "int")],
                 *[Record(f"{p}_mask_fill", (1, 2, 0), "same") for p in ("float", "int")],
                 Record("bool_mask_where", (1, 2, 0), "same")),
        derivatives=(unary("float_mask_fill",
                           lambda B, s, y, x, mask, value: B.float_mask_fill(s, mask, 0.0)),),
        numba=every("(b if a else c)")),
    ElementwiseOp(
        "copy", 1, "a itself: broadcasting an input to the group's shape (expand)", kind="copy",
        records=tuple(Record(f"{p}_expand", (0,), "expand", 1) for p in ("float", "int", "bool")),
        numba=every("a")),
    ElementwiseOp(
        "cast", 1, "a converted to the op's dtype: float to int truncates toward 0, bool gives "
        "0 or 1", kind="cast",
        records=cast_from("float_cast", "float_into_int", "int_cast", "int_into_float",
                          "bool_into_float", "bool_into_int")),
    # ---- comparisons and tests, result bool
    ElementwiseOp("equal", 2, "a == b", kind="compare", records=comparison("equal", bools=True),
                  numba=every("a == b"), cuda=every("a == b"), wgsl=every("a == b")),
    ElementwiseOp("not_equal", 2, "a != b", kind="compare",
                  records=comparison("not_equal", bools=True),
                  numba=every("a != b"), cuda=every("a != b"), wgsl=every("!(a == b)")),
    ElementwiseOp("greater", 2, "a > b", kind="compare", records=comparison("greater"),
                  numba=every("a > b"), cuda=every("a > b"), wgsl=every("a > b")),
    ElementwiseOp("greater_equal", 2, "a >= b", kind="compare",
                  records=comparison("greater_equal"),
                  numba=every("a >= b"), cuda=every("a >= b"), wgsl=every("a >= b")),
    ElementwiseOp("lower", 2, "a < b", kind="compare", records=comparison("lower"),
                  numba=every("a < b"), cuda=every("a < b"), wgsl=every("a < b")),
    ElementwiseOp("lower_equal", 2, "a <= b", kind="compare", records=comparison("lower_equal"),
                  numba=every("a <= b"), cuda=every("a <= b"), wgsl=every("a <= b")),
    ElementwiseOp("is_nan", 1, "a is NaN", kind="test",
                  records=(float_op("is_nan", 1, "bool"),),
                  numba=every("np.isnan(a)"), cuda=every("isnan(a)"), wgsl=every("is_nan(a)")),
    ElementwiseOp("is_inf", 1, "a is +inf or -inf", kind="test",
                  records=(float_op("is_inf", 1, "bool"),),
                  numba=every("np.isinf(a)"), cuda=every("isinf(a)"), wgsl=every("is_inf(a)")),
    # ---- logic on bools
    ElementwiseOp("not", 1, "logical not", kind="logic",
                  records=(Record("bool_not", (0,), "same"),),
                  numba=every("not a"), cuda=every("!a"), wgsl=every("1u - a")),
    ElementwiseOp("and", 2, "logical and", kind="logic",
                  records=(Record("bool_and", (0, 1), "same"),),
                  numba=every("a and b"), cuda=every("a && b"), wgsl=every("a & b")),
    ElementwiseOp("or", 2, "logical or", kind="logic", records=(Record("bool_or", (0, 1), "same"),),
                  numba=every("a or b"), cuda=every("a || b"), wgsl=every("a | b")),
    ElementwiseOp("xor", 2, "logical exclusive or", kind="logic",
                  records=(Record("bool_xor", (0, 1), "same"),),
                  numba=every("a != b"), cuda=every("a != b"), wgsl=every("a ^ b")),
    # ---- activations (the backend's fused backward helpers where it has them)
    _unfused("relu", 1, "max(a, 0)",
             unary("relu", lambda B, s, y, x: B.relu_backward(y, s), uses_output=True)),
    _unfused("gelu", 1, "a * Phi(a)",
             unary("gelu", lambda B, s, y, x, approximate: B.gelu_backward(x, s, approximate),
                   uses_inputs=True)),
    _unfused("sigmoid", 1, "1 / (1 + e ** -a)",
             unary("sigmoid", lambda B, s, y, x: B.sigmoid_backward(y, s), uses_output=True)),
    _unfused("log_sigmoid", 1, "log(sigmoid(a))",
             unary("log_sigmoid", lambda B, s, y, x: B.log_sigmoid_backward(x, s),
                   uses_inputs=True)),
    _unfused("silu", 1, "a * sigmoid(a)", unary("silu", _silu, uses_inputs=True)),
    _unfused("leaky_relu", 1, "a where a > 0, else slope * a",
             unary("leaky_relu", _leaky_relu, uses_inputs=True)),
    _unfused("hard_sigmoid", 1, "clamp(alpha * a + beta, 0, 1)",
             unary("hard_sigmoid", _hard_sigmoid, uses_inputs=True)),
    _unfused("softplus", 1, "log(1 + e ** (beta a)) / beta",
             unary("softplus",  # sigmoid(beta x)
                   lambda B, s, y, x, beta: B.float_mul(s, B.sigmoid(B.float_mul_scalar(x, beta))),
                   uses_inputs=True)),
)

#: The registry by name.
BY_NAME: dict[str, ElementwiseOp] = {op.name: op for op in OPS}

#: Every float protocol op's local partials, from the registry.
LOCAL_PARTIALS: tuple[LocalPartials, ...] = tuple(d for op in OPS for d in op.derivatives)

#: The ops that round a Python scalar operand of a float16 or bfloat16 tensor to the tensor's
#: dtype (through float32) before computing in float32 and rounding once, as torch 2.13's
#: CPU kernels do; every other op (mul, div) keeps the scalar in float32. The NumPy path and
#: the fusers all read this one rule.
HALF_SCALAR_ROUNDED: frozenset[str] = frozenset({
    "add", "sub", "remainder", "pow",
    "equal", "not_equal", "greater", "greater_equal", "lower", "lower_equal",
})
