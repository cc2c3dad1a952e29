"""Cases of Tensor's operators and binary math (``burnpy/tensor/arithmetic.py``): the float
binary ops on every broadcast pattern, their method forms, dtype promotion, scalars,
comparisons, and the int and bool operators."""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING

import burnpy as bp
from burnpy.testing.cases import B, F, I, case
from burnpy.testing.lazy import LazyModule
from burnpy.testing.op_cases._common import (
    _CMP,
    _DIVISOR,
    _IA,
    BOOL,
    F64_32,
    FD,
    INT,
    NEG,
    POS,
    Fn,
    _binary,
    _method,
)

if TYPE_CHECKING:
    import torch
else:  # imported when a case runs: registering the cases does not need torch
    torch = LazyModule("torch")


_binary("add", operator.add)
_binary("sub", operator.sub)
_binary("mul", operator.mul)
_binary("div", operator.truediv, rhs=POS)
_binary("div_neg_divisor", operator.truediv, rhs=NEG, patterns=False)
_binary("pow", operator.pow, lhs=(0.2, 2.0))
_binary("atan2", lambda a, b: a.atan2(b))
_binary("hypot", lambda a, b: a.hypot(b))
_binary("logaddexp", lambda a, b: a.logaddexp(b))
_binary("logaddexp2", lambda a, b: a.logaddexp2(b))
# Values whose exponentials or squares overflow float32: the compositions must not.
_binary("logaddexp_large", lambda a, b: a.logaddexp(b), lhs=(-120.0, 120.0),
        rhs=(-120.0, 120.0), grad=False, dtypes=F64_32, patterns=False)
_binary("logaddexp2_large", lambda a, b: a.logaddexp2(b), lhs=(-120.0, 120.0),
        rhs=(-120.0, 120.0), grad=False, dtypes=F64_32, patterns=False)
_binary("hypot_large", lambda a, b: a.hypot(b), lhs=(1e20, 1e25), rhs=(-1e25, -1e20),
        grad=False, dtypes=F64_32, patterns=False)
_binary("remainder", operator.mod, rhs=POS)
_binary("remainder_neg_divisor", operator.mod, rhs=NEG, patterns=False)
_binary("floor_div", operator.floordiv, rhs=POS, grad=False)
_binary("floor_div_neg_divisor", operator.floordiv, rhs=NEG, grad=False, patterns=False)
_binary("maximum", lambda a, b: a.maximum(b))
_binary("minimum", lambda a, b: a.minimum(b))

case("add_method", lambda a, b: a.add(b), F(3, 4), F(3, 4), dtypes=FD)
case("sub_method", lambda a, b: a.sub(b), F(3, 4), F(1, 4), dtypes=FD)
case("mul_method", lambda a, b: a.mul(b), F(3, 4), F(3, 1), dtypes=FD)
case("div_method", lambda a, b: a.div(b), F(3, 4), F(4, low=0.5, high=2.0), dtypes=FD)
case("pow_method", lambda a, b: a.pow(b), F(3, 4, low=0.2, high=2.0), F(3, 4), dtypes=FD)
case("remainder_method", lambda a, b: a.remainder(b), F(3, 4), F(3, 4, low=0.5, high=2.0),
     dtypes=FD)
case("add_f32_f64_promote", lambda a, b: a + b.double(), F(3, 4), F(3, 4), dtypes=("float32",),
     asks_dtypes=("float64",))
case("add_f16_bf16_promote", lambda a, b: a.half() + b.to(bp.bfloat16), F(3, 4), F(3, 4),
     torch_fn=lambda a, b: a.half() + b.to(torch.bfloat16), dtypes=("float32",),
     asks_dtypes=("float16", "bfloat16"))
case("mul_f64_f16_promote", lambda a, b: a * b.half(), F(3, 4), F(3, 4), dtypes=("float64",),
     asks_dtypes=("float16",))

_SCALARS: dict[str, tuple[Fn, tuple[float, float], bool]] = {
    "add_scalar": (lambda x: x + 1.5, (-2.0, 2.0), True),
    "radd_scalar": (lambda x: 1.5 + x, (-2.0, 2.0), True),
    "add_int_scalar": (lambda x: x + 2, (-2.0, 2.0), True),
    "sub_scalar": (lambda x: x - 0.75, (-2.0, 2.0), True),
    "rsub_scalar": (lambda x: 0.75 - x, (-2.0, 2.0), True),
    "mul_scalar": (lambda x: x * -2.5, (-2.0, 2.0), True),
    "rmul_scalar": (lambda x: 3 * x, (-2.0, 2.0), True),
    "div_scalar": (lambda x: x / 3.0, (-2.0, 2.0), True),
    "rdiv_scalar": (lambda x: 3.0 / x, POS, True),
    "rdiv_scalar_neg": (lambda x: -2 / x, NEG, True),
    "remainder_scalar": (lambda x: x % 0.75, (-2.0, 2.0), True),
    "remainder_neg_scalar": (lambda x: x % -0.75, (-2.0, 2.0), True),
    "rremainder_scalar": (lambda x: 1.5 % x, POS, True),
    "floor_div_scalar": (lambda x: x // 0.75, (-2.0, 2.0), False),
    "floor_div_neg_scalar": (lambda x: x // -0.75, (-2.0, 2.0), False),
    "rfloor_div_scalar": (lambda x: 1.5 // x, POS, False),
    "pow_scalar_2": (lambda x: x ** 2, (-2.0, 2.0), True),
    "pow_scalar_3f": (lambda x: x ** 3.0, (-2.0, 2.0), True),
    "pow_scalar_neg_int": (lambda x: x ** -1, POS, True),
    "pow_scalar_half": (lambda x: x ** 0.5, (0.1, 3.0), True),
    "pow_scalar_neg_frac": (lambda x: x ** -1.5, (0.2, 3.0), True),
    "pow_scalar_zero": (lambda x: x ** 0, (-2.0, 2.0), False),
    "rpow_scalar": (lambda x: 2.0 ** x, (-2.0, 2.0), True),
    "rpow_scalar_frac": (lambda x: 0.5 ** x, (-2.0, 2.0), True),
    "neg_op": (lambda x: -x, (-2.0, 2.0), True),
    "pos_op": (lambda x: +x, (-2.0, 2.0), True),
}
for _name, (_fn, (_lo, _hi), _grad) in _SCALARS.items():
    case(_name, _fn, F(3, 4, low=_lo, high=_hi), dtypes=FD, grad=_grad)
    case(_name + "_noncontig", _fn, F(2, 3, 4, low=_lo, high=_hi, contiguous=False), dtypes=FD,
         grad=_grad)

for _name, _op in _CMP.items():
    # floor() makes ties, so the equal cases of ge/le/eq/ne matter.
    case(f"{_name}_ties", lambda a, b, op=_op: op(a.floor(), b.floor()),
         F(3, 4, low=-3.0, high=3.0), F(3, 4, low=-3.0, high=3.0), dtypes=FD, grad=False)
    case(f"{_name}_bcast", _op, F(3, 1), F(1, 4), dtypes=FD, grad=False)
    case(f"{_name}_scalar", lambda a, op=_op: op(a, 0.5), F(3, 4), dtypes=FD, grad=False)
    case(f"{_name}_scalar_tie", lambda a, op=_op: op(a.floor(), 1), F(3, 4, low=-3.0, high=3.0),
         dtypes=FD, grad=False)
    case(f"{_name}_rscalar", lambda a, op=_op: op(0.25, a), F(2, 3, contiguous=False),
         dtypes=FD, grad=False)
    case(f"{_name}_method", _method(_name, 0.0), F(2, 3), dtypes=F64_32, grad=False)
case("cmp_empty", operator.lt, F(0, 3), F(3), dtypes=F64_32, grad=False)
for _burn, _torch in (("equal", "eq"), ("not_equal", "ne"), ("greater", "gt"),
                      ("greater_equal", "ge"), ("lower", "lt"), ("lower_equal", "le")):
    case(f"{_burn}_burn_name", lambda a, b, n=_burn: getattr(a.floor(), n)(b.floor()),
         F(3, 4, low=-3.0, high=3.0), F(4, low=-3.0, high=3.0),
         torch_fn=lambda a, b, n=_torch: getattr(a.floor(), n)(b.floor()), dtypes=F64_32,
         grad=False)

for _name, _op in (("add", operator.add), ("sub", operator.sub), ("mul", operator.mul)):
    case(f"int_{_name}", _op, I(3, 4, **_IA), I(3, 4, **_IA), dtypes=INT, grad=False)
    case(f"int_{_name}_bcast", _op, I(3, 1, **_IA), I(4, **_IA), dtypes=INT, grad=False)
    case(f"int_{_name}_scalar", lambda a, op=_op: op(a, 3), I(3, 4, **_IA), dtypes=INT,
         grad=False)
    case(f"int_r{_name}_scalar", lambda a, op=_op: op(-4, a), I(3, 4, **_IA), dtypes=INT,
         grad=False)
_floor = lambda a, b: torch.div(a, b, rounding_mode="floor")  # noqa: E731
case("int_floor_div", operator.floordiv, I(3, 4, **_IA), I(3, 4, **_DIVISOR), torch_fn=_floor,
     dtypes=INT, grad=False)
case("int_floor_div_neg_divisor", lambda a, b: a // -b, I(3, 4, **_IA), I(3, 4, **_DIVISOR),
     torch_fn=lambda a, b: _floor(a, -b), dtypes=INT, grad=False)
case("int_floor_div_bcast", operator.floordiv, I(2, 3, 4, **_IA), I(4, **_DIVISOR),
     torch_fn=_floor, dtypes=INT, grad=False)
case("int_floor_div_scalar", lambda a: a // 3, I(3, 4, **_IA),
     torch_fn=lambda a: _floor(a, 3), dtypes=INT, grad=False)
case("int_floor_div_neg_scalar", lambda a: a // -3, I(3, 4, **_IA),
     torch_fn=lambda a: _floor(a, -3), dtypes=INT, grad=False)
case("int_rfloor_div_scalar", lambda b: -7 // b, I(3, 4, **_DIVISOR),
     torch_fn=lambda b: _floor(torch.full_like(b, -7), b), dtypes=INT, grad=False)
case("int_remainder", operator.mod, I(3, 4, **_IA), I(3, 4, **_DIVISOR),
     torch_fn=lambda a, b: torch.remainder(a, b), dtypes=INT, grad=False)
case("int_remainder_neg_divisor", lambda a, b: a % -b, I(3, 4, **_IA), I(3, 4, **_DIVISOR),
     torch_fn=lambda a, b: torch.remainder(a, -b), dtypes=INT, grad=False)
case("int_remainder_scalar", lambda a: a % 4, I(3, 4, **_IA),
     torch_fn=lambda a: torch.remainder(a, 4), dtypes=INT, grad=False)
case("int_remainder_neg_scalar", lambda a: a % -4, I(3, 4, **_IA),
     torch_fn=lambda a: torch.remainder(a, -4), dtypes=INT, grad=False)
case("int_rremainder_scalar", lambda b: 7 % b, I(3, 4, **_DIVISOR),
     torch_fn=lambda b: torch.remainder(torch.full_like(b, 7), b), dtypes=INT, grad=False)
case("int_true_div", operator.truediv, I(3, 4, **_IA), I(3, 4, **_DIVISOR), dtypes=INT,
     grad=False)
case("int_true_div_scalar", lambda a: a / 4, I(3, 4, **_IA), dtypes=INT, grad=False)
case("int_pow_scalar", lambda a: a ** 3, I(3, 4, **_IA), dtypes=INT, grad=False)
case("int_pow_zero", lambda a: a ** 0, I(3, 4, **_IA), dtypes=INT, grad=False)
for _name in ("neg", "abs", "sign"):
    case(f"int_{_name}", _method(_name), I(3, 4, **_IA), dtypes=INT, grad=False)
for _name, _op in (("and", operator.and_), ("or", operator.or_), ("xor", operator.xor)):
    case(f"int_bitwise_{_name}", _op, I(3, 4, low=-20, high=20), I(3, 4, low=0, high=40),
         dtypes=INT, grad=False)
    case(f"int_bitwise_{_name}_scalar", lambda a, op=_op: op(a, 6), I(3, 4, low=-20, high=20),
         dtypes=INT, grad=False)
    case(f"int_bitwise_{_name}_bcast", _op, I(3, 1, low=0, high=16), I(4, low=-8, high=8),
         dtypes=INT, grad=False)
case("int_bitwise_not", operator.invert, I(3, 4, low=-20, high=20), dtypes=INT, grad=False)
case("int_bitwise_burn_names", lambda a, b: a.bitwise_and(b).bitwise_or(b).bitwise_xor(a),
     I(3, 4, low=0, high=30), I(3, 4, low=0, high=30), dtypes=INT, grad=False)
for _name, _op in _CMP.items():
    case(f"int_{_name}", _op, I(3, 4, low=0, high=3), I(3, 4, low=0, high=3), dtypes=INT,
         grad=False)
    case(f"int_{_name}_scalar", lambda a, op=_op: op(a, 1), I(3, 4, low=0, high=3),
         dtypes=INT, grad=False)
case("int_cmp_float_scalar", lambda a: a > 1.5, I(3, 4, low=0, high=4), dtypes=INT,
     grad=False)

for _name, _op in (("and", operator.and_), ("or", operator.or_), ("xor", operator.xor),
                   ("eq", operator.eq), ("ne", operator.ne)):
    case(f"bool_{_name}", _op, B(3, 4), B(3, 4), dtypes=BOOL, grad=False)
    case(f"bool_{_name}_bcast", _op, B(3, 1), B(4), dtypes=BOOL, grad=False)
case("bool_and_scalar", lambda a: a & True, B(3, 4), dtypes=BOOL, grad=False)
case("bool_or_scalar", lambda a: a | False, B(3, 4), dtypes=BOOL, grad=False)
case("bool_not", operator.invert, B(3, 4), dtypes=BOOL, grad=False)
case("bool_logical_not", lambda a: a.logical_not(), B(3, 4, contiguous=False), dtypes=BOOL,
     grad=False)
case("bool_noncontig_and", operator.and_, B(3, 4, contiguous=False), B(3, 4), dtypes=BOOL,
     grad=False)

case("true_divide", lambda a, b: a.true_divide(b), F(3, 4), F(3, 4, low=0.5, high=2.0),
     dtypes=FD)
case("float_power", lambda a, b: a.float_power(b), F(3, 4, low=0.2, high=2.0), F(3, 4),
     dtypes=("float64", "float32"), asks_dtypes=("float64",))
case("float_power_scalar", lambda a: a.float_power(2.5), F(3, 4, low=0.2, high=2.0),
     dtypes=F64_32, asks_dtypes=("float64",))
case("rsub", lambda a, b: a.rsub(b), F(3, 4), F(3, 4), torch_fn=lambda a, b: torch.rsub(a, b),
     dtypes=FD)
case("rsub_alpha", lambda a, b: a.rsub(b, alpha=2), F(3, 4), F(1, 4),
     torch_fn=lambda a, b: torch.rsub(a, b, alpha=2), dtypes=FD)
case("rsub_method_scalar", lambda a: a.rsub(1.5), F(3, 4), torch_fn=lambda a: torch.rsub(a, 1.5),
     dtypes=FD)
case("max_binary", lambda a, b: a.max(b), F(3, 4), F(3, 4), dtypes=FD)
