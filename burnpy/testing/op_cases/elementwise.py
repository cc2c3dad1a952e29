"""Cases of Tensor's elementwise math (``burnpy/tensor/elementwise.py``): unary math, NaN and
infinities, clamps, special functions and torch's further elementwise ops, on floats and ints."""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING

import burnpy as bp
from burnpy.testing.cases import B, F, I, case
from burnpy.testing.lazy import LazyModule
from burnpy.testing.op_cases._common import (
    _IA,
    BOOL,
    F64_32,
    FD,
    INF,
    INT,
    NAN,
    NEG,
    POS,
    _binary,
    _ints,
    _method,
)

if TYPE_CHECKING:
    import torch
else:  # imported when a case runs: registering the cases does not need torch
    torch = LazyModule("torch")


_UNARY: dict[str, tuple[tuple[float, float], bool]] = {
    "neg": ((-2.0, 2.0), True),
    "abs": ((-2.0, 2.0), True),
    "sign": ((-2.0, 2.0), False),
    "exp": ((-3.0, 3.0), True),
    "expm1": ((-1.0, 1.0), True),
    "log": ((0.1, 3.0), True),
    "log1p": ((-0.5, 3.0), True),
    "sqrt": ((0.1, 3.0), True),
    "rsqrt": ((0.1, 3.0), True),
    "square": ((-2.0, 2.0), True),
    "reciprocal": (POS, True),
    "sin": ((-4.0, 4.0), True),
    "cos": ((-4.0, 4.0), True),
    "tan": ((-1.2, 1.2), True),
    "asin": ((-0.9, 0.9), True),
    "acos": ((-0.9, 0.9), True),
    "atan": ((-3.0, 3.0), True),
    "sinh": ((-2.0, 2.0), True),
    "cosh": ((-2.0, 2.0), True),
    "tanh": ((-3.0, 3.0), True),
    "asinh": ((-3.0, 3.0), True),
    "acosh": ((1.1, 3.0), True),
    "atanh": ((-0.9, 0.9), True),
    "erf": ((-2.5, 2.5), True),
    "round": ((-3.0, 3.0), False),
    "floor": ((-3.0, 3.0), False),
    "ceil": ((-3.0, 3.0), False),
    "trunc": ((-3.0, 3.0), False),
    "sigmoid": ((-4.0, 4.0), True),
    "relu": ((-2.0, 2.0), True),
}

for _name, ((_lo, _hi), _grad) in _UNARY.items():
    case(_name, _method(_name), F(3, 4, low=_lo, high=_hi), dtypes=FD, grad=_grad)
    case(_name + "_noncontig", _method(_name), F(3, 5, low=_lo, high=_hi, contiguous=False),
         dtypes=FD, grad=_grad)
for _name in ("exp", "log", "sqrt", "sin", "abs", "erf", "tanh", "floor"):
    (_lo, _hi), _grad = _UNARY[_name]
    case(_name + "_0d", _method(_name), F(low=_lo, high=_hi), dtypes=FD, grad=_grad)
    case(_name + "_empty", _method(_name), F(0, 3, low=_lo, high=_hi), dtypes=FD, grad=_grad)
    case(_name + "_3d", _method(_name), F(2, 3, 4, low=_lo, high=_hi), dtypes=FD, grad=_grad)
for _alias, _name in (("arcsin", "asin"), ("arccos", "acos"), ("arctan", "atan"),
                      ("arcsinh", "asinh"), ("arccosh", "acosh"), ("arctanh", "atanh")):
    (_lo, _hi), _grad = _UNARY[_name]
    case(_alias, _method(_alias), F(4, low=_lo, high=_hi), dtypes=F64_32, grad=_grad)
case("recip", lambda x: x.recip(), F(3, 4, low=0.5, high=2.0),
     torch_fn=lambda x: x.reciprocal(), dtypes=FD)
case("round_halves", lambda x: (x * 2).round() / 2 + 0.5, F(3, 4, low=-4.0, high=4.0),
     dtypes=FD, grad=False)
case("round_half_even", lambda x: (x.floor() + 0.5).round(), F(3, 4, low=-4.0, high=4.0),
     dtypes=FD, grad=False)

# Special values: NaN and infinities propagate and are detected as torch does.
_SPECIAL = (NAN, INF, -INF, 0.0)
case("isnan", lambda x: x.isnan(), F(3, 4, plant=_SPECIAL), dtypes=FD, grad=False)
case("isinf", lambda x: x.isinf(), F(3, 4, plant=_SPECIAL), dtypes=FD, grad=False)
case("isfinite", lambda x: x.isfinite(), F(3, 4, plant=_SPECIAL), dtypes=FD, grad=False)
case("is_nan_is_inf", lambda x: (x.is_nan(), x.is_inf()), F(3, 4, plant=_SPECIAL),
     torch_fn=lambda x: (x.isnan(), x.isinf()), dtypes=FD, grad=False)
case("isnan_int", lambda x: _ints(x).isnan(), F(3, 4), dtypes=("float32",), grad=False)
case("exp_special", lambda x: x.exp(), F(3, 4, plant=_SPECIAL), dtypes=FD, grad=False)
case("log_special", lambda x: x.log(), F(3, 4, low=0.1, high=3.0, plant=_SPECIAL), dtypes=FD,
     grad=False)
case("sqrt_special", lambda x: x.sqrt(), F(3, 4, low=0.1, high=3.0, plant=_SPECIAL),
     dtypes=FD, grad=False)
case("relu_special", lambda x: x.relu(), F(3, 4, plant=_SPECIAL), dtypes=FD, grad=False)
case("add_special", operator.add, F(3, 4, plant=_SPECIAL), F(3, 4, plant=(INF, -INF)),
     dtypes=FD, grad=False)
case("div_by_zero", operator.truediv, F(3, 4), F(3, 4, low=0.5, high=2.0,
                                                  plant=(0.0, 0.0, -0.0)), dtypes=FD, grad=False)
case("maximum_nan", lambda a, b: a.maximum(b), F(3, 4, plant=(NAN,)), F(3, 4, plant=(NAN,)),
     dtypes=FD, grad=False)
case("minimum_nan", lambda a, b: a.minimum(b), F(3, 4, plant=(NAN,)), F(3, 4, plant=(NAN,)),
     dtypes=FD, grad=False)
case("clamp_nan", lambda x: x.clamp(-0.5, 0.5), F(3, 4, plant=(NAN, INF)), dtypes=FD,
     grad=False)
case("sum_nan", lambda x: x.sum(1), F(3, 4, plant=(NAN,)), dtypes=FD, grad=False)
case("max_nan", lambda x: x.max(), F(3, 4, plant=(NAN,)), dtypes=FD, grad=False)
case("max_dim_nan", lambda x: x.max(1).values, F(3, 4, plant=(NAN,)), dtypes=FD, grad=False)
case("sort_nan", lambda x: x.sort(1).values, F(3, 4, plant=(NAN, INF)), dtypes=FD, grad=False)
case("sort_nan_descending", lambda x: x.sort(1, descending=True).values,
     F(3, 4, plant=(NAN, -INF)), dtypes=FD, grad=False)
case("sigmoid_special", lambda x: x.sigmoid(), F(3, 4, plant=(INF, -INF, NAN)), dtypes=FD,
     grad=False)

case("clamp", lambda x: x.clamp(-0.5, 0.8), F(3, 4), dtypes=FD)
case("clamp_min_kw", lambda x: x.clamp(min=-0.3), F(3, 4), dtypes=FD)
case("clamp_max_kw", lambda x: x.clamp(max=0.4), F(3, 4), dtypes=FD)
case("clamp_min", lambda x: x.clamp_min(0.25), F(3, 4), dtypes=FD)
case("clamp_max", lambda x: x.clamp_max(-0.25), F(3, 4), dtypes=FD)
case("clip", lambda x: x.clip(-1.0, 1.0), F(2, 3, 4, contiguous=False), dtypes=FD)
case("clamp_int_bounds", lambda x: x.clamp(-1, 1), F(3, 4), dtypes=FD)

case("int_clamp", _method("clamp", -2, 3), I(3, 4, **_IA), dtypes=INT, grad=False)
case("int_clamp_min", _method("clamp", min=0), I(3, 4, **_IA), dtypes=INT, grad=False)

case("int_maximum", lambda a, b: a.maximum(b), I(3, 4, **_IA), I(3, 4, **_IA), dtypes=INT,
     grad=False)

_SPECIAL_UNARY: dict[str, tuple[tuple[float, float], bool]] = {
    "erfc": ((-2.5, 2.5), True),
    "erfinv": ((-0.9, 0.9), True),
    "lgamma": ((2.5, 6.0), True),
    "digamma": ((0.2, 5.0), True),
    "i0": ((-4.0, 4.0), True),
    "exp2": ((-3.0, 3.0), True),
    "log2": ((0.1, 4.0), True),
    "log10": ((0.1, 4.0), True),
    "logit": ((0.05, 0.95), True),
    "sinc": ((-3.0, 3.0), True),
    "sgn": ((-2.0, 2.0), False),
    "frac": ((-3.0, 3.0), True),
    "deg2rad": ((-360.0, 360.0), True),
    "rad2deg": ((-4.0, 4.0), True),
    "positive": ((-2.0, 2.0), True),
}
for _name, ((_lo, _hi), _grad) in _SPECIAL_UNARY.items():
    case(_name, _method(_name), F(3, 4, low=_lo, high=_hi), dtypes=FD, grad=_grad)
    case(_name + "_noncontig", _method(_name), F(2, 3, 4, low=_lo, high=_hi, contiguous=False),
         dtypes=F64_32, grad=_grad)
for _name in ("erfc", "erfinv", "lgamma", "digamma", "i0", "exp2", "log2", "log10", "sinc",
              "deg2rad"):
    case(_name + "_int", lambda x, n=_name: getattr(_ints(x * 3), n)(),
         F(3, 4, low=0.4, high=0.9), dtypes=("float32",), grad=False)
case("lgamma_negative", _method("lgamma"), F(3, 4, low=-3.9, high=-0.1), dtypes=F64_32)
case("digamma_negative", _method("digamma"), F(3, 4, low=-3.9, high=-0.1), dtypes=F64_32,
     rtol=1e-9)
# Near its zeros (1 and 2) lgamma comes out of cancellation: float32 compositions (WebGPU's)
# keep ~2e-6 absolute there, so these run in float64 only.
case("lgamma_near_zeros", _method("lgamma"), F(3, 4, low=0.1, high=3.0), dtypes=("float64",))
case("lgamma_poles", _method("lgamma"), F(3, 4, low=2.5, high=4.0, plant=(0.0, -1.0, -2.0,
                                                                           INF, NAN)),
     dtypes=F64_32, grad=False)
case("digamma_poles", _method("digamma"), F(3, 4, low=0.5, high=3.0, plant=(0.0, -1.0, NAN)),
     dtypes=F64_32, grad=False)
case("lgamma_large", _method("lgamma"), F(3, 4, low=10.0, high=1e4), dtypes=F64_32)
case("erfc_positive", _method("erfc"), F(3, 4, low=1.0, high=2.5), dtypes=F64_32)
case("erfinv_edges", _method("erfinv"), F(3, 4, plant=(1.0, -1.0, 0.0, NAN)),
     torch_fn=lambda x: x.clamp(-1.5, 1.5).erfinv(), dtypes=F64_32, grad=False)
case("i0_large", _method("i0"), F(3, 4, low=-60.0, high=60.0), dtypes=F64_32)
for _n in (0, 1, 2, 3):
    case(f"polygamma_{_n}", lambda x, n=_n: x.polygamma(n), F(3, 4, low=0.3, high=5.0),
         torch_fn=lambda x, n=_n: torch.polygamma(n, x), dtypes=FD, rtol=1e-9)
case("logit_eps", _method("logit", 0.2), F(3, 4, low=0.02, high=0.98), dtypes=FD)
case("logit_outside", _method("logit"), F(3, 4, low=-0.5, high=1.5), dtypes=F64_32, grad=False)
# torch's double backward of sinc is NaN at 0; ours is the true value (-pi^2 / 3 times 0).
case("sinc_zero", _method("sinc"), F(3, 4, plant=(0.0,)), dtypes=FD, grad=False)
case("frac_special", _method("frac"), F(3, 4, plant=(INF, NAN, -0.0)), dtypes=F64_32, grad=False)
case("signbit", _method("signbit"), F(3, 4, plant=(0.0, -0.0, INF, -INF)), dtypes=FD,
     grad=False)
case("signbit_int", lambda x: _ints(x * 3).signbit(), F(3, 4), dtypes=("float32",),
     grad=False)
case("sgn_int", lambda x: _ints(x * 3).sgn(), F(3, 4), dtypes=("float32",), grad=False)
# Finite differences cannot step through the planted infinities: the gradient (1 where x is
# finite) is checked on finite inputs.
case("nan_to_num", _method("nan_to_num"), F(3, 4, plant=(NAN, INF, -INF)), dtypes=FD,
     grad=False)
case("nan_to_num_values", _method("nan_to_num", nan=1.5, posinf=9.0, neginf=-9.0),
     F(3, 4, plant=(NAN, INF, -INF)), dtypes=FD, grad=False)
case("nan_to_num_finite", _method("nan_to_num"), F(3, 4), dtypes=FD)
case("nan_to_num_int", lambda x: _ints(x * 3).nan_to_num(), F(3, 4), dtypes=("float32",),
     grad=False)
# No gradient check here: torch's second derivative of copysign
# is rounding noise (1e-16) where the true value, ours, is 0.
_binary("copysign", lambda a, b: a.copysign(b), grad=False)
case("copysign_zeros", lambda a, b: a.copysign(b), F(3, 4, plant=(0.0, -0.0)),
     F(3, 4, plant=(-0.0, 0.0, NAN)), dtypes=F64_32, grad=False)
case("copysign_scalar", lambda a: a.copysign(-1.0), F(3, 4), dtypes=FD, grad=False)
_binary("xlogy", lambda a, b: a.xlogy(b), rhs=(0.1, 3.0))
case("xlogy_zeros", lambda a, b: a.xlogy(b), F(3, 4, plant=(0.0, 0.0)),
     F(3, 4, low=0.1, high=3.0, plant=(NAN, 0.0)), dtypes=F64_32, grad=False)
case("xlogy_zero_x", lambda a, b: (a * 0).xlogy(b), F(3, 4), F(3, 4, low=0.1, high=3.0),
     dtypes=F64_32)
case("xlogy_scalar", lambda a: a.xlogy(2.5), F(3, 4), dtypes=FD)
_binary("fmod", lambda a, b: a.fmod(b), lhs=(-5.0, 5.0), rhs=POS)
_binary("fmod_neg_divisor", lambda a, b: a.fmod(b), lhs=(-5.0, 5.0), rhs=NEG, patterns=False)
case("fmod_scalar", lambda a: a.fmod(-1.5), F(3, 4, low=-5.0, high=5.0), dtypes=FD)
case("fmod_int", lambda a, b: _ints(a * 5).fmod(_ints(b * 3)), F(3, 4),
     F(3, 4, low=0.4, high=2.0), dtypes=("float32",), grad=False)
_binary("fmax", lambda a, b: a.fmax(b))
_binary("fmin", lambda a, b: a.fmin(b))
case("fmax_nan", lambda a, b: a.fmax(b), F(3, 4, plant=(NAN, NAN)), F(3, 4, plant=(NAN,)),
     dtypes=FD, grad=False)
case("fmin_nan", lambda a, b: a.fmin(b), F(3, 4, plant=(NAN, NAN)), F(3, 4, plant=(NAN,)),
     dtypes=FD, grad=False)
case("heaviside", lambda a, b: a.heaviside(b), F(3, 4, plant=(0.0, 0.0, -0.0)), F(1, 4),
     dtypes=FD, grad=False)
case("lerp_scalar", lambda a, b: a.lerp(b, 0.3), F(3, 4), F(3, 4), dtypes=FD)
case("lerp_scalar_high", lambda a, b: a.lerp(b, 0.8), F(3, 4), F(1, 4), dtypes=FD)
case("lerp_tensor", lambda a, b, w: a.lerp(b, w), F(3, 4), F(3, 4), F(3, 4, low=-0.5, high=1.5),
     dtypes=FD)
case("addcmul", lambda a, b, c: a.addcmul(b, c, value=0.5), F(3, 4), F(3, 1), F(4), dtypes=FD)
case("addcmul_default", lambda a, b, c: a.addcmul(b, c), F(3, 4), F(3, 4), F(3, 4), dtypes=FD)
case("addcdiv", lambda a, b, c: a.addcdiv(b, c, value=-2), F(3, 4), F(3, 4),
     F(3, 4, low=0.5, high=2.0), dtypes=FD)
case("isclose", lambda a, b: a.isclose(a + b * 1e-3, rtol=1e-3, atol=1e-4),
     F(3, 4, plant=(INF, NAN)), F(3, 4), dtypes=F64_32, grad=False)
case("isclose_equal_nan", lambda a, b: a.isclose(b, equal_nan=True), F(3, 4, plant=(NAN, INF)),
     F(3, 4, plant=(NAN, INF)), torch_fn=lambda a, b: a.isclose(b, equal_nan=True),
     dtypes=F64_32, grad=False)
case("isclose_int", lambda a, b: _ints(a * 2).isclose(_ints(b * 2)), F(3, 4), F(3, 4),
     dtypes=("float32",), grad=False)
case("allclose", lambda a: bp.Tensor.from_data([float(a.allclose(a + 1e-9)),
                                               float(a.allclose(a + 1e-2))]),
     F(3, 4), torch_fn=lambda a: torch.tensor([float(a.allclose(a + 1e-9)),
                                               float(a.allclose(a + 1e-2))]),
     dtypes=("float64",), grad=False)
for _name in ("logical_and", "logical_or", "logical_xor"):
    case(_name, lambda a, b, n=_name: getattr(a, n)(b), B(3, 4), B(3, 4), dtypes=BOOL,
         grad=False)
    case(f"{_name}_float_int", lambda a, n=_name: getattr(a.relu(), n)(_ints(a * 2)),
         F(3, 4), dtypes=("float32",), grad=False)
