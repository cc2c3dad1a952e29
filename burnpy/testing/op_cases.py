"""The conformance cases of every float, int and bool Tensor op (module ops have their own).

Each section registers cases with ``case``; the spelling is shared with torch wherever burnpy
follows it, and ``torch_fn`` gives torch's spelling where burnpy keeps Burn's (``mask_where``,
``select_assign``, ``repeat_dim``, the ``*_with_indices`` names...). ``max(dim)``, ``sort``,
``topk``... return torch's ``(values, indices)`` named tuple: both fields are compared.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypedDict

import burnpy as bp
from burnpy.testing.cases import FLOAT_DTYPES, B, F, I, case
from burnpy.testing.lazy import LazyModule

if TYPE_CHECKING:
    import torch
    import torch.nn.functional as TF
else:  # imported when a case runs: registering the cases does not need torch
    torch, TF = LazyModule("torch"), LazyModule("torch.nn.functional")

FD = FLOAT_DTYPES
F64_32 = ("float64", "float32")
INT = ("int64",)
BOOL = ("bool",)
NAN, INF = float("nan"), float("inf")
Fn = Callable[..., Any]


# ---- elementwise binary ops ------------------------------------------------------------------
_BINARY_PATTERNS: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {
    "": ((3, 4), (3, 4)),
    "_bcast_col_row": ((3, 1), (1, 4)),
    "_bcast_vec": ((2, 3, 4), (4,)),
    "_bcast_lead": ((4,), (2, 3, 4)),
    "_0d_nd": ((), (2, 3)),
    "_nd_0d": ((2, 3), ()),
    "_0d_0d": ((), ()),
    "_empty": ((0, 3), (0, 3)),
    "_empty_bcast": ((0, 3), (1, 3)),
}


def _binary(name: str, fn: Fn, lhs: tuple[float, float] = (-2.0, 2.0),
            rhs: tuple[float, float] = (-2.0, 2.0), *, torch_fn: Fn | None = None,
            grad: bool = True, dtypes: tuple[str, ...] = FD, patterns: bool = True) -> None:
    """Register ``name`` on the shape patterns, with operand domains ``lhs`` and ``rhs``."""
    kw: dict[str, Any] = {"torch_fn": torch_fn, "grad": grad, "dtypes": dtypes}
    chosen = _BINARY_PATTERNS if patterns else {"": _BINARY_PATTERNS[""]}
    for suffix, (sa, sb) in chosen.items():
        case(name + suffix, fn, F(*sa, low=lhs[0], high=lhs[1]),
             F(*sb, low=rhs[0], high=rhs[1]), **kw)
    case(name + "_noncontig", fn, F(3, 4, low=lhs[0], high=lhs[1], contiguous=False),
         F(3, 4, low=rhs[0], high=rhs[1]), **kw)
    case(name + "_noncontig_3d", fn, F(2, 3, 4, low=lhs[0], high=lhs[1]),
         F(2, 3, 4, low=rhs[0], high=rhs[1], contiguous=False), **kw)


POS = (0.5, 2.0)
NEG = (-2.0, -0.5)

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

# ---- elementwise unary math ------------------------------------------------------------------
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


def _method(name: str, *args: Any, **kwargs: Any) -> Fn:
    """``lambda x: x.name(*args, **kwargs)``, shared by burnpy and torch."""
    return lambda x: getattr(x, name)(*args, **kwargs)


def _ints(x: Any) -> Any:
    """``x`` as ints: the backend's int dtype for a burnpy tensor (int32 on WebGPU), torch's
    long for a torch one, so one lambda builds a case's int input on every backend."""
    return x.int() if isinstance(x, bp.Tensor) else x.long()


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

# ---- clamp -----------------------------------------------------------------------------------
case("clamp", lambda x: x.clamp(-0.5, 0.8), F(3, 4), dtypes=FD)
case("clamp_min_kw", lambda x: x.clamp(min=-0.3), F(3, 4), dtypes=FD)
case("clamp_max_kw", lambda x: x.clamp(max=0.4), F(3, 4), dtypes=FD)
case("clamp_min", lambda x: x.clamp_min(0.25), F(3, 4), dtypes=FD)
case("clamp_max", lambda x: x.clamp_max(-0.25), F(3, 4), dtypes=FD)
case("clip", lambda x: x.clip(-1.0, 1.0), F(2, 3, 4, contiguous=False), dtypes=FD)
case("clamp_int_bounds", lambda x: x.clamp(-1, 1), F(3, 4), dtypes=FD)

# ---- comparisons -----------------------------------------------------------------------------
_CMP = {"eq": operator.eq, "ne": operator.ne, "gt": operator.gt, "ge": operator.ge,
        "lt": operator.lt, "le": operator.le}
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

# ---- reductions ------------------------------------------------------------------------------
for _name in ("sum", "mean"):
    case(f"{_name}_all", _method(_name), F(2, 3, 4), dtypes=FD)
    case(f"{_name}_dim0", _method(_name, 0), F(2, 3, 4), dtypes=FD)
    case(f"{_name}_dim_neg", _method(_name, -1), F(2, 3, 4), dtypes=FD)
    case(f"{_name}_keepdim", _method(_name, 1, keepdim=True), F(2, 3, 4), dtypes=FD)
    case(f"{_name}_dims", _method(_name, (0, 2)), F(2, 3, 4), dtypes=FD)
    case(f"{_name}_dims_keepdim", _method(_name, (0, -1), keepdim=True), F(2, 3, 4), dtypes=FD)
    case(f"{_name}_noncontig", _method(_name, 1), F(3, 4, 5, contiguous=False), dtypes=FD)
    case(f"{_name}_0d", _method(_name), F(), dtypes=FD)
    case(f"{_name}_empty_dim", _method(_name, 0), F(0, 3), dtypes=FD, grad=_name == "sum")
    case(f"{_name}_all_keepdim", _method(_name, keepdim=True), F(3, 4), dtypes=FD,
         torch_fn=_method(_name, (0, 1), keepdim=True))
case("sum_empty_all", _method("sum"), F(0, 3), dtypes=FD)
case("mean_empty_all", _method("mean"), F(0, 3), dtypes=FD, grad=False)
case("sum_large", _method("sum", 0), F(6, 7, low=-100.0, high=100.0), dtypes=FD)

_PROD = (0.5, 1.5)
case("prod_all", _method("prod"), F(2, 3, 4, low=_PROD[0], high=_PROD[1]), dtypes=FD)
case("prod_dim", _method("prod", 1), F(2, 3, 4), dtypes=FD)
case("prod_dim_neg_keepdim", _method("prod", -1, keepdim=True), F(2, 3, 4), dtypes=FD)
case("prod_zero", _method("prod", 1), F(3, 4, plant=(0.0,)), dtypes=FD)
case("prod_two_zeros", _method("prod", 0), F(2, 2, plant=(0.0, 0.0)), dtypes=FD)
case("prod_all_zero", _method("prod"), F(3, 4, plant=(0.0,)), dtypes=FD)
case("prod_noncontig", _method("prod", 0), F(3, 4, contiguous=False), dtypes=FD)
case("prod_dims", lambda x: x.prod((0, 2)), F(2, 3, 2),
     torch_fn=lambda x: x.prod(2).prod(0), dtypes=F64_32)
case("prod_empty_dim", _method("prod", 0), F(0, 3), dtypes=FD, grad=False)

for _name in ("max", "min"):
    case(f"{_name}_all", _method(_name), F(2, 3, 4, distinct=True), dtypes=FD)
    case(f"{_name}_dim", _method(_name, 1), F(2, 3, 4, distinct=True), dtypes=FD)
    case(f"{_name}_dim_keepdim", _method(_name, -1, keepdim=True), F(3, 4, distinct=True),
         dtypes=FD)
    case(f"{_name}_dim_noncontig", _method(_name, 0), F(3, 4, distinct=True, contiguous=False),
         dtypes=FD)
    case(f"{_name}_dim_values", lambda x, n=_name: getattr(x, n)(dim=1).values,
         F(2, 3, 4, distinct=True), dtypes=FD)
    case(f"a{_name}_dim", _method(f"a{_name}", 1), F(2, 3, 4, distinct=True), dtypes=FD)
    case(f"a{_name}_dims_keepdim", _method(f"a{_name}", (0, 2), keepdim=True),
         F(2, 3, 4, distinct=True), dtypes=FD)
    case(f"a{_name}_all", _method(f"a{_name}"), F(3, 4, distinct=True), dtypes=FD)
    case(f"{_name}_with_indices", _method(f"{_name}_with_indices", 1),
         F(2, 3, 4, distinct=True), torch_fn=_method(_name, 1), dtypes=FD, grad=False)
    case(f"{_name}_with_indices_keepdim", _method(f"{_name}_with_indices", 0, keepdim=True),
         F(3, 4, distinct=True, contiguous=False), torch_fn=_method(_name, 0, keepdim=True),
         dtypes=FD, grad=False)
    case(f"arg{_name}_dim", _method(f"arg{_name}", 1), F(2, 3, 4, distinct=True), dtypes=FD,
         grad=False)
    case(f"arg{_name}_all", _method(f"arg{_name}"), F(3, 4, distinct=True), dtypes=FD,
         grad=False)
    case(f"arg{_name}_keepdim", _method(f"arg{_name}", 0, keepdim=True),
         F(3, 4, distinct=True), dtypes=FD, grad=False)
    case(f"{_name}_0d_dim", _method(_name, 0), F(), dtypes=FD)

for _name in ("any", "all"):
    case(f"{_name}_float", _method(_name), F(3, 4, low=-2.0, high=0.5), dtypes=FD, grad=False,
         torch_fn=_method(_name))
    case(f"{_name}_float_relu_dim", lambda x, n=_name: getattr(x.relu(), n)(1),
         F(4, 3, low=-2.0, high=0.3), dtypes=FD, grad=False)
case("count_nonzero", lambda x: x.relu().count_nonzero(1), F(4, 3, low=-2.0, high=0.5),
     dtypes=FD, grad=False)
case("count_nonzero_all", lambda x: x.relu().count_nonzero(), F(4, 3, low=-2.0, high=0.5),
     dtypes=FD, grad=False)

for _name in ("var", "std"):
    case(f"{_name}_all", _method(_name), F(3, 4), dtypes=FD)
    case(f"{_name}_dim", _method(_name, 1), F(3, 4, 5), dtypes=FD)
    case(f"{_name}_keepdim", _method(_name, dim=0, keepdim=True), F(3, 4), dtypes=FD)
    case(f"{_name}_correction0", _method(_name, dim=-1, correction=0), F(3, 4), dtypes=FD)
    case(f"{_name}_dims", _method(_name, dim=(0, 2)), F(2, 3, 4, contiguous=False), dtypes=FD)
case("logsumexp", _method("logsumexp", 1), F(3, 4), dtypes=FD)
case("logsumexp_keepdim", _method("logsumexp", 0, keepdim=True), F(3, 4), dtypes=FD)
case("logsumexp_large", _method("logsumexp", -1), F(2, 3, 4, low=-60.0, high=60.0), dtypes=FD)
case("logsumexp_noncontig", _method("logsumexp", 1), F(3, 4, contiguous=False), dtypes=FD)

# ---- scans and sorting -----------------------------------------------------------------------
for _dim in (0, 1, -1):
    _suffix = "neg" if _dim < 0 else str(_dim)
    case(f"cumsum_dim{_suffix}", _method("cumsum", _dim), F(2, 3, 4), dtypes=FD)
    case(f"cumprod_dim{_suffix}", _method("cumprod", _dim), F(2, 3, 4, low=0.5, high=1.5),
         dtypes=FD)
    for _name in ("cummax", "cummin"):
        case(f"{_name}_dim{_suffix}", _method(_name, _dim), F(2, 3, 4, distinct=True),
             dtypes=FD)
        case(f"{_name}_with_indices_dim{_suffix}", _method(f"{_name}_with_indices", _dim),
             F(2, 3, 4, distinct=True), torch_fn=_method(_name, _dim), dtypes=FD, grad=False)
case("cumsum_noncontig", _method("cumsum", 0), F(3, 4, contiguous=False), dtypes=FD)
case("cumprod_zero", _method("cumprod", 1), F(3, 4, plant=(0.0,)), dtypes=FD)
case("cumsum_empty", _method("cumsum", 0), F(0, 3), dtypes=FD)

case("sort", _method("sort", 1), F(3, 4, distinct=True), dtypes=FD)
case("sort_default_dim", _method("sort"), F(2, 3, 4, distinct=True), dtypes=FD)
case("sort_descending", _method("sort", 0, descending=True), F(3, 4, distinct=True), dtypes=FD)
case("sort_noncontig", _method("sort", -1), F(3, 4, distinct=True, contiguous=False),
     dtypes=FD)
case("sort_with_indices", _method("sort_with_indices", 1), F(2, 5, 3, distinct=True),
     torch_fn=_method("sort", 1), dtypes=FD, grad=False)
case("sort_with_indices_descending", _method("sort_with_indices", -1, descending=True),
     F(3, 5, distinct=True), torch_fn=_method("sort", -1, descending=True), dtypes=FD,
     grad=False)
case("argsort", _method("argsort", 1), F(3, 5, distinct=True), dtypes=FD, grad=False)
case("argsort_descending", _method("argsort", 0, descending=True),
     F(5, 3, distinct=True, contiguous=False), dtypes=FD, grad=False)
case("topk", _method("topk", 2), F(3, 5, distinct=True), dtypes=FD)
case("topk_smallest_dim0", _method("topk", 3, dim=0, largest=False), F(5, 3, distinct=True),
     dtypes=FD)
case("topk_sorted_kw", _method("topk", 2, dim=-1, largest=True, sorted=True),
     F(3, 5, distinct=True), dtypes=FD)
case("topk_with_indices", _method("topk_with_indices", 2, dim=1), F(3, 5, 2, distinct=True),
     torch_fn=_method("topk", 2, dim=1), dtypes=FD, grad=False)
case("topk_with_indices_smallest", _method("topk_with_indices", 3, largest=False),
     F(2, 6, distinct=True), torch_fn=_method("topk", 3, largest=False), dtypes=FD,
     grad=False)
case("topk_full", _method("topk", 4), F(2, 4, distinct=True), dtypes=FD)

# ---- layout ----------------------------------------------------------------------------------
case("reshape", _method("reshape", 2, 6), F(3, 4), dtypes=FD)
case("reshape_tuple_infer", _method("reshape", (4, -1)), F(2, 3, 4), dtypes=FD)
case("reshape_noncontig", _method("reshape", -1), F(3, 4, contiguous=False), dtypes=FD)
case("reshape_0d", _method("reshape", 1, 1), F(), dtypes=FD)
case("reshape_to_0d", _method("reshape", ()), F(1), dtypes=FD)
case("reshape_empty", _method("reshape", 3, 0), F(0, 3), dtypes=FD)
case("view", _method("view", 6, 2), F(3, 4), dtypes=FD)
case("flatten", _method("flatten"), F(2, 3, 4), dtypes=FD)
case("flatten_start", _method("flatten", 1), F(2, 3, 4, contiguous=False), dtypes=FD)
case("flatten_range", _method("flatten", 0, 1), F(2, 3, 4), dtypes=FD)
case("flatten_0d", _method("flatten"), F(), dtypes=FD)
case("squeeze_all", _method("squeeze"), F(1, 3, 1, 4), dtypes=FD)
case("squeeze_dim", _method("squeeze", 2), F(1, 3, 1, 4), dtypes=FD)
case("squeeze_dims", _method("squeeze", (0, -2)), F(1, 3, 1, 4), dtypes=FD)
case("squeeze_non_one", _method("squeeze", 1), F(1, 3, 1, 4), dtypes=FD)
case("unsqueeze_front", _method("unsqueeze", 0), F(3, 4), dtypes=FD)
case("unsqueeze_back", _method("unsqueeze", -1), F(3, 4), dtypes=FD)
case("unsqueeze_mid", _method("unsqueeze", 1), F(3, 4, contiguous=False), dtypes=FD)
case("unsqueeze_0d", _method("unsqueeze", 0), F(), dtypes=FD)
case("permute", _method("permute", 2, 0, 1), F(2, 3, 4), dtypes=FD)
case("permute_tuple_noncontig", _method("permute", (1, 0, 2)), F(2, 3, 4, contiguous=False),
     dtypes=FD)
case("transpose", _method("transpose", 0, 2), F(2, 3, 4), dtypes=FD)
case("swap_dims", _method("swap_dims", -1, -2), F(2, 3, 4),
     torch_fn=_method("transpose", -1, -2), dtypes=FD)
case("T_2d", lambda x: x.T, F(3, 4), dtypes=FD)
case("mT_3d", lambda x: x.mT, F(2, 3, 4), dtypes=FD)
case("expand", _method("expand", 3, 4), F(3, 1), dtypes=FD)
case("expand_new_dims", _method("expand", 2, -1, 4), F(3, 1), dtypes=FD)
case("expand_0d", _method("expand", (2, 3)), F(), dtypes=FD)
case("expand_noncontig", _method("expand", 2, 4, 3), F(1, 4, 1, contiguous=False), dtypes=FD)
case("broadcast_to", _method("broadcast_to", (2, 3, 4)), F(3, 1), dtypes=FD)
case("expand_as", lambda a, b: a.expand_as(b), F(1, 4), F(3, 4, requires_grad=False),
     dtypes=FD)
case("repeat", _method("repeat", 2, 3), F(2, 3), dtypes=FD)
case("repeat_new_dims", _method("repeat", 2, 1, 2), F(3, 2), dtypes=FD)
case("repeat_noncontig", _method("repeat", 1, 2), F(3, 4, contiguous=False), dtypes=FD)
case("repeat_zero", _method("repeat", 0, 2), F(2, 3), dtypes=FD)
case("repeat_dim", _method("repeat_dim", 1, 3), F(2, 3),
     torch_fn=_method("repeat", 1, 3), dtypes=FD)
case("flip", _method("flip", 0), F(3, 4), dtypes=FD)
case("flip_dims", _method("flip", (0, 2)), F(2, 3, 4), dtypes=FD)
case("flip_noncontig", _method("flip", -1), F(3, 4, contiguous=False), dtypes=FD)
case("slice_dim", _method("slice_dim", 1, 1, 5, 2), F(3, 6),
     torch_fn=lambda x: x[:, 1:5:2], dtypes=FD)
case("zeros_ones_full_like", lambda x: (x.zeros_like(), x.ones_like(), x.full_like(2.5)),
     F(2, 3), torch_fn=lambda x: (torch.zeros_like(x), torch.ones_like(x),
                                  torch.full_like(x, 2.5)), dtypes=FD, grad=False)
case("narrow", _method("narrow", 1, 1, 2), F(3, 4), dtypes=FD)
case("narrow_neg_start", _method("narrow", 0, -2, 2), F(3, 4), dtypes=FD)
case("narrow_empty", _method("narrow", 1, 2, 0), F(3, 4), dtypes=FD)
case("split_size", _method("split", 2), F(5, 3), dtypes=FD)
case("split_sections", _method("split", [1, 3], 1), F(2, 4), dtypes=FD)
case("split_dim_neg", _method("split", 3, -1), F(2, 3, 7, contiguous=False), dtypes=FD)
case("chunk", _method("chunk", 3, 1), F(2, 4), dtypes=FD)
case("chunk_more_than_size", _method("chunk", 5), F(3, 2), dtypes=FD)
case("chunk_even", _method("chunk", 2, -1), F(2, 3, 6), dtypes=FD)
case("unfold", _method("unfold", 1, 2, 1), F(3, 5), dtypes=FD)
case("unfold_step", _method("unfold", 0, 2, 2), F(5, 3), dtypes=FD)
case("unfold_step_gt_size", _method("unfold", -1, 2, 3), F(2, 3, 7, contiguous=False),
     dtypes=FD)
case("unfold_full", _method("unfold", 1, 4, 1), F(2, 4), dtypes=FD)

case("cat_dim0", lambda a, b: bp.cat([a, b]), F(2, 3), F(4, 3),
     torch_fn=lambda a, b: torch.cat([a, b]), dtypes=FD)
case("cat_dim1_three", lambda a, b, c: bp.cat([a, b, c], dim=1), F(2, 3), F(2, 1), F(2, 2),
     torch_fn=lambda a, b, c: torch.cat([a, b, c], dim=1), dtypes=FD)
case("cat_dim_neg_noncontig", lambda a, b: bp.cat((a, b), -1), F(2, 3, 4, contiguous=False),
     F(2, 3, 2), torch_fn=lambda a, b: torch.cat((a, b), -1), dtypes=FD)
case("cat_with_empty", lambda a, b: bp.cat([a, b]), F(0, 3), F(2, 3),
     torch_fn=lambda a, b: torch.cat([a, b]), dtypes=FD)
case("cat_single", lambda a: bp.cat([a], dim=1), F(2, 3),
     torch_fn=lambda a: torch.cat([a], dim=1), dtypes=FD)
case("cat_tensor_static", lambda a, b: bp.Tensor.cat([a, b], 1), F(2, 3), F(2, 3),
     torch_fn=lambda a, b: torch.cat([a, b], 1), dtypes=F64_32)
case("stack_dim0", lambda a, b: bp.stack([a, b]), F(2, 3), F(2, 3),
     torch_fn=lambda a, b: torch.stack([a, b]), dtypes=FD)
case("stack_dim_neg", lambda a, b, c: bp.stack([a, b, c], dim=-1), F(2, 3),
     F(2, 3, contiguous=False), F(2, 3),
     torch_fn=lambda a, b, c: torch.stack([a, b, c], dim=-1), dtypes=FD)
case("stack_dim1", lambda a, b: bp.stack([a, b], 1), F(4), F(4),
     torch_fn=lambda a, b: torch.stack([a, b], 1), dtypes=FD)
case("stack_0d", lambda a, b: bp.stack([a, b]), F(), F(),
     torch_fn=lambda a, b: torch.stack([a, b]), dtypes=FD)
case("permute_reshape_chain", lambda x: x.permute(2, 0, 1).reshape(4, 6).T[1:],
     F(2, 3, 4), dtypes=FD)

# ---- indexing: [...] -------------------------------------------------------------------------


def _index_case(name: str, key: Any, *args: Any, torch_fn: Fn | None = None) -> None:
    """A case reading ``x[key]`` (``torch_fn`` where torch cannot spell the key)."""
    case(name, lambda x: x[key], *args, torch_fn=torch_fn, dtypes=FD)


def _torch_steps(*slices: slice | None) -> Fn:
    """torch's spelling of slices with negative steps (torch refuses them): index lists."""

    def fn(x: torch.Tensor) -> torch.Tensor:
        for dim, sl in enumerate(slices):
            if sl is not None:
                idx = torch.tensor(list(range(*sl.indices(x.shape[dim]))), dtype=torch.long)
                x = x.index_select(dim, idx)
        return x

    return fn


_index_case("getitem_int", 1, F(4, 5))
_index_case("getitem_neg_int", -1, F(4, 5))
_index_case("getitem_two_ints", (1, -2), F(4, 5))
_index_case("getitem_slice", slice(1, 3), F(4, 5))
_index_case("getitem_slice_step", (slice(None), slice(1, 5, 2)), F(4, 5))
_index_case("getitem_slice_steps_2d", (slice(None, None, 2), slice(None, None, 3)), F(4, 5))
_index_case("getitem_slice_neg_bounds", slice(-3, -1), F(4, 5))
_index_case("getitem_slice_out_of_range", slice(2, 10), F(4, 5))
_index_case("getitem_slice_empty", slice(3, 1), F(4, 5))
_index_case("getitem_none", None, F(4, 5))
_index_case("getitem_none_int", (slice(None), None, 1), F(4, 5))
_index_case("getitem_ellipsis", Ellipsis, F(2, 3, 4))
_index_case("getitem_ellipsis_int", (Ellipsis, 1), F(2, 3, 4))
_index_case("getitem_int_ellipsis_int", (1, Ellipsis, 2), F(2, 3, 4))
_index_case("getitem_noncontig", (slice(1, None), 0), F(2, 3, 4, contiguous=False))
_index_case("getitem_reverse", slice(None, None, -1), F(4, 5),
            torch_fn=_torch_steps(slice(None, None, -1)))
_index_case("getitem_neg_step", slice(3, 0, -2), F(4, 5),
            torch_fn=_torch_steps(slice(3, 0, -2)))
_index_case("getitem_neg_step_dim1", (slice(None), slice(None, None, -2)), F(4, 5),
            torch_fn=_torch_steps(None, slice(None, None, -2)))
_index_case("getitem_neg_step_both", (slice(-1, None, -3), slice(4, 1, -1)), F(4, 5),
            torch_fn=_torch_steps(slice(-1, None, -3), slice(4, 1, -1)))
_index_case("getitem_list", [0, 2, -1], F(4, 5))
_index_case("getitem_list_dim1", (slice(None), [1, 3, 3]), F(4, 5))
_index_case("getitem_lists_pairwise", ([0, 1, 3], [2, 4, 0]), F(4, 5))
_index_case("getitem_slice_list", (slice(1, None), [0, 2]), F(4, 5))
_index_case("getitem_lists_separated", ([0, 1], slice(None), [1, 2]), F(2, 3, 4))
_index_case("getitem_int_list_adjacent", (slice(None), 1, [0, 3]), F(2, 3, 4))
_index_case("getitem_ellipsis_list", (Ellipsis, [0, 2]), F(2, 3, 4, contiguous=False))
case("getitem_int_tensor", lambda x, i: x[i], F(4, 5), I(3, high=4), dtypes=FD)
case("getitem_int_tensor_neg", lambda x, i: x[i], F(4, 5), I(6, low=-4, high=4), dtypes=FD)
case("getitem_int_tensor_2d", lambda x, i: x[i], F(4, 5), I(2, 3, high=4), dtypes=FD)
case("getitem_int_tensor_dim1", lambda x, i: x[:, i], F(4, 5), I(2, 2, high=5), dtypes=FD)
case("getitem_int_tensor_slice", lambda x, i: x[i, 1:3], F(4, 5), I(3, high=4), dtypes=FD)
case("getitem_two_int_tensors", lambda x, i, j: x[i, j], F(4, 5), I(3, high=4), I(3, high=5),
     dtypes=FD)
case("getitem_int_tensors_bcast", lambda x, i, j: x[i, j], F(4, 5), I(3, 1, high=4),
     I(1, 2, high=5), dtypes=FD)
case("getitem_mask", lambda x, m: x[m], F(4, 5), B(4, 5), dtypes=FD)
case("getitem_mask_leading", lambda x, m: x[m], F(4, 5), B(4), dtypes=FD)
case("getitem_mask_3d_leading", lambda x, m: x[m], F(3, 4, 2), B(3, 4), dtypes=FD)
case("getitem_mask_dim1", lambda x, m: x[:, m], F(3, 4), B(4), dtypes=FD)
case("getitem_mask_noncontig", lambda x, m: x[m], F(4, 5, contiguous=False), B(4, 5),
     dtypes=FD)
case("getitem_mask_from_cmp", lambda x: x[x > 0.5], F(4, 5), dtypes=FD)
case("slice_burn", lambda x: x.slice([(0, 2), None, (1, 3)]), F(3, 4, 5),
     torch_fn=lambda x: x[0:2, :, 1:3], dtypes=F64_32)


# ---- indexing: x[...] = v (on a copy) --------------------------------------------------------
def _setter(key: Any) -> Fn:
    """Copy ``x`` (``x + 0`` in both frameworks), assign ``y[key] = v``, return the copy."""

    def fn(x: Any, v: Any = 0.5) -> Any:
        y = x + 0
        y[key] = v
        return y

    return fn


def _torch_setter_steps(sl: slice) -> Fn:
    """torch's spelling of assigning through a dim-0 slice with a negative step."""

    def fn(x: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        y = x + 0
        y[list(range(*sl.indices(x.shape[0])))] = v
        return y

    return fn


case("setitem_int_scalar", _setter(1), F(4, 5), dtypes=FD)
case("setitem_int_tensor_row", _setter(1), F(4, 5), F(5), dtypes=FD)
case("setitem_slice_bcast", _setter((slice(None), slice(1, 3))), F(4, 5), F(2), dtypes=FD)
case("setitem_slice_step", _setter(slice(None, None, 2)), F(4, 5), F(2, 5), dtypes=FD)
case("setitem_two_ints_0d", _setter((1, 2)), F(4, 5), F(), dtypes=FD)
case("setitem_ellipsis", _setter((Ellipsis, 0)), F(2, 3, 4), F(3), dtypes=FD)
case("setitem_none", _setter((None, 1)), F(4, 5), F(1, 5), dtypes=FD)
case("setitem_noncontig", _setter((slice(1, 3), slice(None, None, 2))),
     F(4, 5, contiguous=False), F(2, 3), dtypes=FD)
case("setitem_neg_step", _setter(slice(None, None, -2)), F(4, 5), F(2, 5),
     torch_fn=_torch_setter_steps(slice(None, None, -2)), dtypes=FD)
case("setitem_mask_scalar", lambda x, m: _setter(m)(x, -1.0), F(4, 5), B(4, 5), dtypes=FD)
case("setitem_mask_leading_row", lambda x, m, v: _setter(m)(x, v), F(4, 5), B(4), F(5),
     dtypes=FD)
case("setitem_list", _setter([0, 2]), F(4, 5), F(2, 5), dtypes=FD)
case("setitem_int_tensor", lambda x, i, v: _setter(i)(x, v), F(4, 5),
     I(2, high=4, unique_dim=0), F(2, 5), dtypes=FD)
case("setitem_index_put", lambda x, v: x.index_put((slice(None), 1), v), F(3, 4), F(3),
     torch_fn=_setter((slice(None), 1)), dtypes=F64_32)
case("slice_assign_burn", lambda x, v: x.slice_assign([(1, 3), (0, 2)], v), F(3, 4), F(2, 2),
     torch_fn=_setter((slice(1, 3), slice(0, 2))), dtypes=F64_32)

# ---- gather / scatter / select / masks -------------------------------------------------------
case("gather_dim1", lambda x, i: x.gather(1, i), F(3, 4), I(3, 5, high=4), dtypes=FD)
case("gather_dim0", lambda x, i: x.gather(0, i), F(3, 4), I(2, 4, high=3), dtypes=FD)
case("gather_smaller_index", lambda x, i: x.gather(1, i), F(3, 4), I(2, 2, high=4), dtypes=FD)
case("gather_3d_dim_neg", lambda x, i: x.gather(-1, i), F(2, 3, 4), I(2, 3, 2, high=4),
     dtypes=FD)
case("gather_noncontig", lambda x, i: x.gather(0, i), F(4, 3, contiguous=False),
     I(5, 3, high=4), dtypes=FD)
case("scatter_dim0", lambda x, i, v: x.scatter(0, i, v), F(3, 4),
     I(2, 4, high=3, unique_dim=0), F(2, 4), dtypes=FD)
case("scatter_dim1_bigger_src", lambda x, i, v: x.scatter(1, i, v), F(3, 4),
     I(3, 2, high=4, unique_dim=1), F(3, 3), dtypes=FD)
case("scatter_3d", lambda x, i, v: x.scatter(1, i, v), F(2, 4, 3),
     I(2, 3, 3, high=4, unique_dim=1), F(2, 3, 3), dtypes=FD)
case("scatter_noncontig", lambda x, i, v: x.scatter(-1, i, v), F(3, 4, contiguous=False),
     I(3, 4, high=4, unique_dim=1), F(3, 4, contiguous=False), dtypes=FD)
case("scatter_add_dim0", lambda x, i, v: x.scatter_add(0, i, v), F(3, 4), I(5, 4, high=3),
     F(5, 4), dtypes=FD)
case("scatter_add_dim1", lambda x, i, v: x.scatter_add(1, i, v), F(3, 4), I(3, 6, high=4),
     F(3, 6), dtypes=FD)
case("scatter_add_smaller_index", lambda x, i, v: x.scatter_add(1, i, v), F(3, 4),
     I(2, 3, high=4), F(3, 5), dtypes=FD)
case("index_select_dim0", lambda x, i: x.index_select(0, i), F(3, 4), I(5, high=3),
     dtypes=FD)
case("index_select_dim1", lambda x, i: x.index_select(1, i), F(3, 4, contiguous=False),
     I(3, high=4), dtypes=FD)
case("index_select_3d", lambda x, i: x.index_select(-1, i), F(2, 3, 4), I(6, high=4),
     dtypes=FD)
case("select", _method("select", 1, 2), F(3, 4), dtypes=FD)
case("select_neg", _method("select", -1, -3), F(2, 3, 4), dtypes=FD)
case("select_list", lambda x: x.index_select(0, [2, 0, 2]), F(3, 4),
     torch_fn=lambda x: x.index_select(0, torch.tensor([2, 0, 2])), dtypes=F64_32)
case("select_assign_dim0", lambda x, i, v: x.select_assign(0, i, v), F(4, 3),
     I(2, high=4, unique_dim=0), F(2, 3), torch_fn=lambda x, i, v: x.index_copy(0, i, v),
     dtypes=FD)
case("select_assign_dim1", lambda x, i, v: x.select_assign(1, i, v), F(3, 4),
     I(3, high=4, unique_dim=0), F(3, 3), torch_fn=lambda x, i, v: x.index_copy(1, i, v),
     dtypes=FD)
case("index_add_dim0", lambda x, i, v: x.index_add(0, i, v), F(3, 4), I(5, high=3), F(5, 4),
     dtypes=FD)
case("index_add_dim1", lambda x, i, v: x.index_add(1, i, v), F(2, 4, 3), I(4, high=4),
     F(2, 4, 3), dtypes=FD)
case("select_add_burn", lambda x, i, v: x.select_add(-1, i, v), F(3, 4, contiguous=False),
     I(6, high=4), F(3, 6), torch_fn=lambda x, i, v: x.index_add(-1, i, v), dtypes=FD)
case("mask_where", lambda x, m, v: x.mask_where(m, v), F(3, 4), B(3, 4), F(3, 4),
     torch_fn=lambda x, m, v: torch.where(m, v, x), dtypes=FD)
case("mask_where_bcast_mask", lambda x, m, v: x.mask_where(m, v), F(3, 4), B(3, 1), F(3, 4),
     torch_fn=lambda x, m, v: torch.where(m, v, x), dtypes=FD)
case("mask_where_bcast_value", lambda x, m, v: x.mask_where(m, v), F(3, 4), B(3, 4), F(4),
     torch_fn=lambda x, m, v: torch.where(m, v, x), dtypes=FD)
case("mask_where_bcast_self", lambda x, m, v: x.mask_where(m, v), F(1, 4), B(3, 4), F(3, 4),
     torch_fn=lambda x, m, v: torch.where(m, v, x), dtypes=FD)
case("where", lambda m, a, b: bp.where(m, a, b), B(2, 3, 4), F(2, 3, 4), F(3, 4),
     torch_fn=lambda m, a, b: torch.where(m, a, b), dtypes=FD)
case("where_noncontig", lambda m, a, b: bp.where(m, a, b), B(3, 4, contiguous=False),
     F(3, 4, contiguous=False), F(3, 4), torch_fn=lambda m, a, b: torch.where(m, a, b), dtypes=FD)
case("masked_fill", lambda x, m: x.masked_fill(m, 0.5), F(3, 4), B(3, 4), dtypes=FD)
case("masked_fill_bcast", lambda x, m: x.masked_fill(m, -2.0), F(2, 3, 4), B(3, 1),
     dtypes=FD)
case("mask_fill_burn", lambda x, m: x.mask_fill(m, 3.0), F(3, 4, contiguous=False), B(3, 4),
     torch_fn=lambda x, m: x.masked_fill(m, 3.0), dtypes=FD)
case("masked_fill_inf", lambda x, m: x.masked_fill(m, -INF).softmax(-1), F(3, 4),
     B(3, 4), dtypes=FD, grad=False)

# ---- matmul ----------------------------------------------------------------------------------
_MATMUL = {
    "1d_1d": ((4,), (4,)),
    "1d_2d": ((3,), (3, 4)),
    "2d_1d": ((3, 4), (4,)),
    "2d_2d": ((3, 4), (4, 5)),
    "3d_3d": ((2, 3, 4), (2, 4, 5)),
    "bcast_batch": ((2, 1, 3, 4), (3, 4, 2)),
    "3d_2d": ((2, 3, 4), (4, 5)),
    "2d_3d": ((3, 4), (2, 4, 5)),
    "1d_3d": ((4,), (2, 4, 3)),
    "3d_1d": ((2, 3, 4), (4,)),
    "empty_inner": ((3, 0), (0, 4)),
    "empty_outer": ((0, 3), (3, 4)),
}
for _name, (_sa, _sb) in _MATMUL.items():
    case(f"matmul_{_name}", operator.matmul, F(*_sa), F(*_sb), dtypes=FD)
case("matmul_noncontig", operator.matmul, F(3, 4, contiguous=False),
     F(2, 4, 5, contiguous=False), dtypes=FD)
case("matmul_method", lambda a, b: a.matmul(b), F(3, 4), F(4, 2), dtypes=FD)
case("matmul_transposed", lambda a, b: a @ b.mT, F(2, 3, 4), F(2, 5, 4), dtypes=FD)

# ---- activations -----------------------------------------------------------------------------
case("relu_act", lambda x: x.relu(), F(2, 3, 4), dtypes=FD)
case("leaky_relu", lambda x: x.leaky_relu(), F(3, 4),
     torch_fn=lambda x: TF.leaky_relu(x), dtypes=FD)
case("leaky_relu_slope", lambda x: x.leaky_relu(0.2), F(3, 4, contiguous=False),
     torch_fn=lambda x: TF.leaky_relu(x, 0.2), dtypes=FD)
case("gelu", lambda x: x.gelu(), F(3, 4, low=-4.0, high=4.0),
     torch_fn=lambda x: TF.gelu(x), dtypes=FD)
case("gelu_tanh", lambda x: x.gelu(approximate="tanh"), F(3, 4, low=-4.0, high=4.0),
     torch_fn=lambda x: TF.gelu(x, approximate="tanh"), dtypes=FD)
case("gelu_tails", lambda x: x.gelu(), F(3, 4, low=-12.0, high=12.0), torch_fn=lambda x: TF.gelu(x),
     dtypes=FD)
case("gelu_noncontig", lambda x: x.gelu(), F(2, 3, 4, contiguous=False),
     torch_fn=lambda x: TF.gelu(x), dtypes=FD)
case("sigmoid_large", lambda x: x.sigmoid(), F(3, 4, low=-40.0, high=40.0), dtypes=FD)
case("log_sigmoid", lambda x: x.log_sigmoid(), F(3, 4, low=-4.0, high=4.0),
     torch_fn=lambda x: TF.logsigmoid(x), dtypes=FD)
case("log_sigmoid_large", lambda x: x.log_sigmoid(), F(3, 4, low=-40.0, high=40.0),
     torch_fn=lambda x: TF.logsigmoid(x), dtypes=FD)
case("silu", lambda x: x.silu(), F(3, 4, low=-4.0, high=4.0),
     torch_fn=lambda x: TF.silu(x), dtypes=FD)
case("silu_large", lambda x: x.silu(), F(3, 4, low=-30.0, high=30.0), torch_fn=lambda x: TF.silu(x),
     dtypes=FD)
case("softplus", lambda x: x.softplus(), F(3, 4, low=-4.0, high=4.0),
     torch_fn=lambda x: TF.softplus(x), dtypes=FD)
case("softplus_beta", lambda x: x.softplus(2.0), F(3, 4, low=-4.0, high=4.0),
     torch_fn=lambda x: TF.softplus(x, beta=2.0), dtypes=FD)
case("softplus_large", lambda x: x.softplus(), F(3, 4, low=-10.0, high=10.0),
     torch_fn=lambda x: TF.softplus(x, threshold=1000.0), dtypes=FD)
case("hard_sigmoid", lambda x: x.hard_sigmoid(), F(3, 4, low=-5.0, high=5.0),
     torch_fn=lambda x: TF.hardsigmoid(x), dtypes=FD)
case("hard_sigmoid_params", lambda x: x.hard_sigmoid(0.2, 0.5), F(3, 4, low=-4.0, high=4.0),
     torch_fn=lambda x: (x * 0.2 + 0.5).clamp(0.0, 1.0), dtypes=FD)
for _dim in (0, 1, -1):
    _suffix = "neg" if _dim < 0 else str(_dim)
    case(f"softmax_dim{_suffix}", _method("softmax", _dim), F(2, 3, 4), dtypes=FD)
    case(f"log_softmax_dim{_suffix}", _method("log_softmax", _dim), F(2, 3, 4), dtypes=FD)
case("softmax_large", _method("softmax", -1), F(3, 4, low=-50.0, high=50.0), dtypes=FD)
case("log_softmax_large", _method("log_softmax", -1), F(3, 4, low=-50.0, high=50.0),
     dtypes=FD)
case("softmax_noncontig", _method("softmax", 0), F(3, 4, contiguous=False), dtypes=FD)

# ---- conversions -----------------------------------------------------------------------------
case("float_to_long", lambda x: x.long(), F(3, 4, low=-3.0, high=3.0), dtypes=FD,
     grad=False, asks_dtypes=("int64",))
case("float_to_bool", lambda x: x.bool(), F(3, 4, plant=(0.0, -0.0)), dtypes=FD, grad=False)
case("float_to_double", lambda x: x.double(), F(3, 4), dtypes=FD, asks_dtypes=("float64",))
case("float_to_half", lambda x: x.half(), F(3, 4), dtypes=F64_32, asks_dtypes=("float16",))
case("cast_bf16", lambda x: x.cast("bfloat16"), F(3, 4),
     torch_fn=lambda x: x.to(torch.bfloat16), dtypes=F64_32, asks_dtypes=("bfloat16",))
case("to_dtype", lambda x: x.to(bp.float64), F(3, 4), torch_fn=lambda x: x.to(torch.float64),
     dtypes=FD, asks_dtypes=("float64",))
case("detach", lambda x: x.detach() * 2, F(3, 4), dtypes=FD, grad=False)

# ---- int ops ---------------------------------------------------------------------------------
class _IntRange(TypedDict):
    """The ``low``/``high`` keywords of an int argument, spread into ``I``."""

    low: int
    high: int


_IA: _IntRange = {"low": -9, "high": 10}
_DIVISOR: _IntRange = {"low": 1, "high": 5}
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
case("int_sum", _method("sum"), I(2, 3, 4, **_IA), dtypes=INT, grad=False)
case("int_sum_dim", _method("sum", 1), I(2, 3, 4, **_IA), dtypes=INT, grad=False)
case("int_sum_dims_keepdim", _method("sum", (0, 2), keepdim=True), I(2, 3, 4, **_IA),
     dtypes=INT, grad=False)
case("int_prod", _method("prod"), I(3, 4, low=-3, high=4), dtypes=INT, grad=False)
case("int_prod_dim", _method("prod", 0), I(3, 4, low=-3, high=4), dtypes=INT, grad=False)
case("int_max", _method("max"), I(3, 4, **_IA), dtypes=INT, grad=False)
case("int_min_dim", lambda x: x.min(1).values, I(3, 4, **_IA), dtypes=INT, grad=False)
case("int_min_dim_indices", _method("min", 1), I(3, 4, distinct=True), dtypes=INT, grad=False)
case("int_amax_dims", _method("amax", (0, 1)), I(2, 3, 4, **_IA), dtypes=INT, grad=False)
case("int_max_with_indices", _method("max_with_indices", 0), I(3, 4, distinct=True),
     torch_fn=_method("max", 0), dtypes=INT, grad=False)
case("int_argmax", _method("argmax", 1), I(3, 4, distinct=True), dtypes=INT, grad=False)
case("int_argmin_all", _method("argmin"), I(3, 4, distinct=True), dtypes=INT, grad=False)
case("int_cumsum", _method("cumsum", 1), I(3, 4, **_IA), dtypes=INT, grad=False)
case("int_cumprod", _method("cumprod", 0), I(3, 4, low=-3, high=4), dtypes=INT, grad=False)
case("int_cummax", _method("cummax_with_indices", 1), I(3, 5, distinct=True),
     torch_fn=_method("cummax", 1), dtypes=INT, grad=False)
case("int_cummin", _method("cummin", 0), I(4, 3, distinct=True), dtypes=INT, grad=False)
case("int_sort", lambda x: x.sort(1).values, I(3, 5, **_IA), dtypes=INT, grad=False)
case("int_sort_with_indices", _method("sort_with_indices", 0, descending=True),
     I(5, 3, distinct=True), torch_fn=_method("sort", 0, descending=True), dtypes=INT,
     grad=False)
case("int_argsort", _method("argsort", -1), I(3, 5, distinct=True), dtypes=INT, grad=False)
case("int_topk", _method("topk_with_indices", 2), I(3, 5, distinct=True),
     torch_fn=_method("topk", 2), dtypes=INT, grad=False)
case("int_clamp", _method("clamp", -2, 3), I(3, 4, **_IA), dtypes=INT, grad=False)
case("int_clamp_min", _method("clamp", min=0), I(3, 4, **_IA), dtypes=INT, grad=False)
case("int_any_all", lambda a: (a.any(1), a.all(0)), I(3, 4, low=0, high=2), dtypes=INT,
     grad=False)
case("int_to_float", lambda a: a.float(), I(3, 4, **_IA), dtypes=INT, grad=False)
case("int_to_double", lambda a: a.double(), I(3, 4, **_IA), dtypes=INT, grad=False,
     asks_dtypes=("float64",))
case("int_to_bool", lambda a: a.bool(), I(3, 4, low=-1, high=2), dtypes=INT, grad=False)
case("int_matmul", operator.matmul, I(2, 3, 4, **_IA), I(4, 2, **_IA), dtypes=INT, grad=False)
case("int_gather", lambda a, i: a.gather(1, i), I(3, 4, **_IA), I(3, 2, high=4), dtypes=INT,
     grad=False)
case("int_scatter_add", lambda a, i, v: a.scatter_add(0, i, v), I(3, 4, **_IA),
     I(4, 4, high=3), I(4, 4, **_IA), dtypes=INT, grad=False)
case("int_index_select", lambda a, i: a.index_select(0, i), I(3, 4, **_IA), I(4, high=3),
     dtypes=INT, grad=False)
case("int_index_add", lambda a, i, v: a.index_add(1, i, v), I(3, 4, **_IA), I(5, high=4),
     I(3, 5, **_IA), dtypes=INT, grad=False)
case("int_masked_fill", lambda a, m: a.masked_fill(m, -1), I(3, 4, **_IA), B(3, 4),
     dtypes=INT, grad=False)
case("int_mask_where", lambda a, m, b: a.mask_where(m, b), I(3, 4, **_IA), B(3, 1),
     I(3, 4, **_IA), torch_fn=lambda a, m, b: torch.where(m, b, a), dtypes=INT, grad=False)
case("int_cat_stack", lambda a, b: (bp.cat([a, b], 1), bp.stack([a, b])), I(3, 4, **_IA),
     I(3, 4, **_IA), torch_fn=lambda a, b: (torch.cat([a, b], 1), torch.stack([a, b])),
     dtypes=INT, grad=False)
case("int_layout", lambda a: a.permute(1, 0).reshape(2, 6).flip(0)[:, 1::2].unsqueeze(0),
     I(3, 4, **_IA), dtypes=INT, grad=False)
case("int_expand_repeat", lambda a: (a.expand(2, 3, 4), a.repeat(1, 2)), I(3, 4, **_IA),
     dtypes=INT, grad=False)
case("int_getitem", lambda a, i: a[i, 1:], I(3, 4, **_IA), I(2, high=3), dtypes=INT,
     grad=False)
case("int_setitem", lambda a: _setter(slice(1, 3))(a, 7), I(3, 4, **_IA), dtypes=INT,
     grad=False)
case("int_unfold_split", lambda a: (a.unfold(1, 2, 1), *a.split(2, 1)), I(3, 4, **_IA),
     dtypes=INT, grad=False)
case("int_maximum", lambda a, b: a.maximum(b), I(3, 4, **_IA), I(3, 4, **_IA), dtypes=INT,
     grad=False)

def _bool_setter(a: Any, row: Any) -> Any:
    """Assign a scalar and a row into a copy of a bool tensor (``a | False`` copies it)."""
    y = a | False
    y[0, 1:3] = True
    y[2] = row
    return y


# ---- bool ops --------------------------------------------------------------------------------
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
for _name in ("any", "all"):
    case(f"bool_{_name}", _method(_name), B(3, 4), dtypes=BOOL, grad=False)
    case(f"bool_{_name}_dim", _method(_name, 1), B(4, 2), dtypes=BOOL, grad=False)
    case(f"bool_{_name}_keepdim", _method(_name, 0, keepdim=True), B(2, 3), dtypes=BOOL,
         grad=False)
    case(f"bool_{_name}_empty", _method(_name), B(0, 3), dtypes=BOOL, grad=False)
case("bool_sum", _method("sum"), B(3, 4), dtypes=BOOL, grad=False)
case("bool_sum_dim", _method("sum", 0), B(3, 4), dtypes=BOOL, grad=False)
case("bool_count_nonzero", _method("count_nonzero", 1), B(3, 4), dtypes=BOOL, grad=False)
case("bool_to_float", lambda a: a.float(), B(3, 4), dtypes=BOOL, grad=False)
case("bool_to_long", lambda a: a.long(), B(3, 4), dtypes=BOOL, grad=False,
     asks_dtypes=("int64",))
case("bool_to_double", lambda a: a.double(), B(3, 4), dtypes=BOOL, grad=False,
     asks_dtypes=("float64",))
case("bool_layout", lambda a: (a.T.reshape(2, 6), a.flip(1), a.unsqueeze(1).expand(3, 2, 4)),
     B(3, 4), dtypes=BOOL, grad=False)
case("bool_cat_stack", lambda a, b: (bp.cat([a, b]), bp.stack([a, b], -1)), B(3, 4), B(3, 4),
     torch_fn=lambda a, b: (torch.cat([a, b]), torch.stack([a, b], -1)), dtypes=BOOL,
     grad=False)
case("bool_getitem", lambda a, m: (a[1:, ::2], a[m], a[[0, 2]]), B(3, 4), B(3, 4),
     dtypes=BOOL, grad=False)
case("bool_setitem", _bool_setter, B(3, 4), B(4), dtypes=BOOL, grad=False)
case("bool_mask_where", lambda a, m, b: a.mask_where(m, b), B(3, 4), B(3, 4), B(4),
     torch_fn=lambda a, m, b: torch.where(m, b, a), dtypes=BOOL, grad=False)
case("bool_where", lambda m, a, b: bp.where(m, a, b), B(3, 4), B(3, 4), B(3, 4),
     torch_fn=lambda m, a, b: torch.where(m, a, b), dtypes=BOOL, grad=False)
case("bool_index_select", lambda a, i: a.index_select(1, i), B(3, 4), I(5, high=4),
     dtypes=BOOL, grad=False)
case("bool_gather", lambda a, i: a.gather(0, i), B(3, 4), I(2, 4, high=3), dtypes=BOOL,
     grad=False)
case("argwhere", lambda a: a.argwhere(), B(3, 4), torch_fn=lambda x: torch.argwhere(x), dtypes=BOOL,
     grad=False)
case("nonzero", lambda a: a.nonzero(), B(2, 3, 4), dtypes=BOOL, grad=False)
case("nonzero_tuple", lambda a: a.nonzero(as_tuple=True), B(2, 3, 4), dtypes=BOOL, grad=False)
case("argwhere_float", lambda x: x.relu().argwhere(), F(3, 4), dtypes=FD, grad=False)
case("bool_unfold", lambda a: a.unfold(1, 2, 2), B(3, 4), dtypes=BOOL, grad=False)


# ---- special functions and elementwise math -----------------------------------------------------
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
case("conversions", lambda a: (a.double(), a.half(), (a * 3).long()), F(3, 4),
     dtypes=("float32",), grad=False, asks_dtypes=("float64", "float16", "int64"))


# ---- shape, indexing and matrix products --------------------------------------------------------
for _d in (0, 1, -1, 3, -3):
    case(f"tril_diag{_d}", _method("tril", _d), F(3, 5), dtypes=FD)
    case(f"triu_diag{_d}", _method("triu", _d), F(2, 5, 3), dtypes=FD)
case("tril_empty", _method("tril"), F(0, 3), dtypes=F64_32)
case("triu_noncontig", _method("triu", 1), F(4, 4, contiguous=False), dtypes=F64_32)
case("roll_flat", _method("roll", 2), F(3, 4), dtypes=FD)
case("roll_dim", _method("roll", -1, 1), F(3, 4), dtypes=FD)
case("roll_dims", _method("roll", (1, 5), (0, -1)), F(2, 3, 4), dtypes=FD)
case("roll_0d", _method("roll", 1), F(), dtypes=F64_32)
case("roll_empty", _method("roll", 1, 0), F(0, 3), dtypes=F64_32)
for _k in (0, 1, 2, 3, -1, 5):
    case(f"rot90_k{_k}".replace("-", "neg"), _method("rot90", _k), F(2, 3), dtypes=FD)
case("rot90_dims", _method("rot90", 1, (2, 0)), F(2, 3, 4), dtypes=F64_32)
case("fliplr", _method("fliplr"), F(2, 3, 4), dtypes=FD)
case("flipud", _method("flipud"), F(3), dtypes=FD)

case("mm", lambda a, b: a.mm(b), F(3, 4), F(4, 2), dtypes=FD)
case("mm_empty", lambda a, b: a.mm(b), F(3, 0), F(0, 2), dtypes=F64_32)
case("bmm", lambda a, b: a.bmm(b), F(2, 3, 4), F(2, 4, 5, contiguous=False), dtypes=FD)
case("mv", lambda a, v: a.mv(v), F(3, 4), F(4), dtypes=FD)
case("dot", lambda a, b: a.dot(b), F(5), F(5), dtypes=FD)
case("inner_1d", lambda a, b: bp.inner(a, b), F(4), F(4),
     torch_fn=lambda a, b: torch.inner(a, b), dtypes=FD)
case("inner_nd", lambda a, b: bp.inner(a, b), F(2, 3, 4), F(5, 4),
     torch_fn=lambda a, b: torch.inner(a, b), dtypes=FD)
case("inner_1d_nd", lambda a, b: bp.inner(a, b), F(4), F(2, 4),
     torch_fn=lambda a, b: torch.inner(a, b), dtypes=F64_32)
case("inner_0d", lambda a, b: bp.inner(a, b), F(), F(2, 3),
     torch_fn=lambda a, b: torch.inner(a, b), dtypes=F64_32)
case("outer", lambda a, b: a.outer(b), F(3), F(4), dtypes=FD)
case("kron_2d", lambda a, b: a.kron(b), F(2, 3), F(3, 2), dtypes=FD)
case("kron_mixed_dims", lambda a, b: a.kron(b), F(3), F(2, 2, 2), dtypes=F64_32)
case("addmm", lambda x, a, b: x.addmm(a, b), F(3, 2), F(3, 4), F(4, 2), dtypes=FD)
case("addmm_scaled_bcast", lambda x, a, b: x.addmm(a, b, beta=0.5, alpha=-2.0), F(2),
     F(3, 4), F(4, 2), dtypes=FD)
case("addmm_beta0_nan", lambda x, a, b: x.addmm(a, b, beta=0), F(3, 2, plant=(NAN,)),
     F(3, 4), F(4, 2), dtypes=F64_32, grad=False)
case("baddbmm", lambda x, a, b: x.baddbmm(a, b, beta=2.0, alpha=0.5), F(2, 3, 2),
     F(2, 3, 4), F(2, 4, 2), dtypes=FD)
case("addbmm", lambda x, a, b: x.addbmm(a, b, alpha=1.5), F(3, 2), F(4, 3, 5), F(4, 5, 2),
     dtypes=FD)
case("addmv", lambda x, a, v: x.addmv(a, v, beta=-1.0), F(3), F(3, 4), F(4), dtypes=FD)
case("addr", lambda x, a, b: x.addr(a, b, alpha=2.0), F(3, 4), F(3), F(4), dtypes=FD)

_EINSUM: dict[str, tuple[str, tuple[tuple[int, ...], ...]]] = {
    "matmul": ("ij,jk->ik", ((3, 4), (4, 5))),
    "implicit": ("ij,jk", ((3, 4), (4, 5))),
    "implicit_order": ("ba,ab", ((3, 4), (4, 3))),
    "bmm": ("bij,bjk->bik", ((2, 3, 4), (2, 4, 5))),
    "outer": ("i,j->ij", ((3,), (4,))),
    "dot": ("i,i->", ((4,), (4,))),
    "trace": ("ii", ((4, 4),)),
    "diagonal": ("ii->i", ((3, 3),)),
    "batch_diag": ("...ii->...i", ((2, 3, 3),)),
    "transpose": ("ij->ji", ((3, 4),)),
    "sum_all": ("ijk->", ((2, 3, 4),)),
    "ellipsis": ("...ij,...jk->...ik", ((2, 3, 4), (4, 5))),
    "ellipsis_bcast": ("...ij,...jk", ((2, 1, 3, 4), (3, 4, 2))),
    "three": ("ij,jk,kl->il", ((2, 3), (3, 4), (4, 2))),
    "bilinear": ("bn,anm,bm->ba", ((2, 3), (4, 3, 5), (2, 5))),
    "sum_alone": ("ij,kj->k", ((3, 4), (2, 4))),
    "repeat_across": ("iij,j->ij", ((3, 3, 4), (4,))),
    "spaces": ("i j , j -> i", ((3, 4), (4,))),
    "empty": ("ij,jk->ik", ((0, 4), (4, 5))),
}
for _name, (_eq, _shapes) in _EINSUM.items():
    case(f"einsum_{_name}", lambda *xs, e=_eq: bp.einsum(e, *xs), *(F(*s) for s in _shapes),
         torch_fn=lambda *xs, e=_eq: torch.einsum(e, *xs), dtypes=FD, accumulates=True)
case("einsum_list", lambda a, b: bp.einsum("ij,j->i", [a, b]), F(3, 4), F(4),
     torch_fn=lambda a, b: torch.einsum("ij,j->i", [a, b]), dtypes=F64_32)

for _o in (0, 1, -2, 5):
    case(f"diag_1d_{_o}".replace("-", "neg"), _method("diag", _o), F(3), dtypes=FD)
    case(f"diag_2d_{_o}".replace("-", "neg"), _method("diag", _o), F(3, 4), dtypes=FD)
    case(f"diagonal_{_o}".replace("-", "neg"), _method("diagonal", _o, 2, 0), F(3, 2, 4),
         dtypes=FD)
    case(f"diag_embed_{_o}".replace("-", "neg"), _method("diag_embed", _o), F(2, 3), dtypes=FD)
case("diagonal_noncontig", _method("diagonal", 0, -1, -2), F(3, 4, contiguous=False),
     dtypes=F64_32)
case("diag_embed_dims", _method("diag_embed", 1, 0, 2), F(2, 3), dtypes=F64_32)
case("diag_embed_3d_dims", _method("diag_embed", -1, -1, 1), F(2, 3, 4), dtypes=F64_32)
case("trace", _method("trace"), F(3, 4), dtypes=FD)

case("tile", _method("tile", 2), F(2, 3), dtypes=FD)
case("tile_more_dims", _method("tile", (2, 1, 3)), F(2, 3), dtypes=FD)
case("repeat_interleave_int", _method("repeat_interleave", 2), F(2, 3), dtypes=FD)
case("repeat_interleave_dim", _method("repeat_interleave", 3, -1), F(2, 3), dtypes=FD)
case("repeat_interleave_tensor", lambda x, r: x.repeat_interleave(r, 0), F(3, 2),
     I(3, low=0, high=3), dtypes=FD)
case("repeat_interleave_0d", _method("repeat_interleave", 2), F(), dtypes=F64_32)
case("movedim", _method("movedim", 0, -1), F(2, 3, 4), dtypes=FD)
case("movedim_seq", _method("movedim", (0, 1), (2, 0)), F(2, 3, 4), dtypes=FD)
case("moveaxis", _method("moveaxis", -1, 1), F(2, 3, 4), dtypes=F64_32)
case("unbind", _method("unbind", 1), F(2, 3, 4), dtypes=FD)
case("unbind_neg", _method("unbind"), F(3, 2, contiguous=False), dtypes=F64_32)
_STACKS = ("hstack", "vstack", "dstack", "column_stack")
for _name in _STACKS:
    for _suffix, _shapes in (("1d", ((3,), (3,))), ("2d", ((2, 3), (2, 3))),
                             ("0d", ((), ()))):
        if _name == "vstack" and _suffix == "0d":
            continue
        case(f"{_name}_{_suffix}", lambda *xs, n=_name: getattr(bp, n)(list(xs)),
             *(F(*s) for s in _shapes),
             torch_fn=lambda *xs, n=_name: getattr(torch, n)(list(xs)), dtypes=FD)
case("hstack_3d", lambda a, b: bp.hstack([a, b]), F(2, 3, 4), F(2, 1, 4),
     torch_fn=lambda a, b: torch.hstack([a, b]), dtypes=F64_32)
case("column_stack_mixed", lambda a, b: bp.column_stack((a, b)), F(3), F(3, 2),
     torch_fn=lambda a, b: torch.column_stack((a, b)), dtypes=F64_32)
case("tensor_split_sections", _method("tensor_split", 3), F(7, 2), dtypes=FD)
case("tensor_split_more_sections", _method("tensor_split", 4, 1), F(2, 3), dtypes=FD)
case("tensor_split_indices", _method("tensor_split", [1, 4], -1), F(2, 6), dtypes=FD)
case("tensor_split_indices_wild", _method("tensor_split", [3, 1, 9, -1]), F(5, 2),
     dtypes=F64_32)
case("split_with_sizes", _method("split_with_sizes", [2, 0, 3], 1), F(2, 5), dtypes=FD)
case("split_int_uneven", _method("split", 2, -1), F(3, 5), dtypes=F64_32)
case("chunk_uneven", _method("chunk", 4), F(6, 2), dtypes=F64_32)
case("unflatten", _method("unflatten", 1, (2, -1)), F(3, 6), dtypes=FD)
case("unflatten_neg_dim", _method("unflatten", -1, (2, 1, 2)), F(3, 4), dtypes=F64_32)
case("ravel", _method("ravel"), F(2, 3, 4, contiguous=False), dtypes=FD)
case("narrow_copy", _method("narrow_copy", 1, 1, 2), F(3, 4), dtypes=FD)
case("reshape_as", lambda a, b: a.reshape_as(b), F(3, 4), F(2, 6, requires_grad=False),
     dtypes=FD)
case("view_as", lambda a, b: a.view_as(b), F(3, 4), F(6, 2, requires_grad=False), dtypes=FD)
case("t_2d", _method("t"), F(3, 4), dtypes=FD)
case("t_1d", _method("t"), F(3), dtypes=F64_32)
case("T_3d", lambda x: x.T, F(2, 3, 4), torch_fn=lambda x: x.permute(2, 1, 0), dtypes=F64_32)
case("mT_2d", lambda x: x.mT, F(3, 4), dtypes=F64_32)

# Repeated indices: forward picks them all, gradients sum over the repeats.
case("take", lambda x, i: x.take(i), F(3, 4), I(2, 5, low=-12, high=12), dtypes=FD)
case("take_repeats", lambda x, i: x.take(i), F(2, 2), I(9, low=0, high=2), dtypes=FD)
case("take_along_dim", lambda x, i: x.take_along_dim(i, 1), F(3, 4), I(3, 6, high=4),
     dtypes=FD)
case("take_along_dim_bcast", lambda x, i: x.take_along_dim(i, -1), F(2, 1, 4),
     I(1, 3, 5, low=-4, high=4), dtypes=FD)
case("take_along_dim_flat", lambda x, i: x.take_along_dim(i), F(3, 4), I(7, high=12),
     dtypes=FD)
case("masked_select", lambda x, m: x.masked_select(m), F(3, 4), B(3, 4), dtypes=FD)
case("masked_select_bcast", lambda x, m: x.masked_select(m), F(3, 1), B(2, 3, 4), dtypes=FD)
case("index_fill", lambda x, i: x.index_fill(1, i, -1.5), F(3, 4), I(3, high=4), dtypes=FD)
case("index_fill_tensor_value", lambda x, i, v: x.index_fill(0, i, v), F(3, 4),
     I(2, high=3), F(), dtypes=FD)
case("index_copy", lambda x, i, s: x.index_copy(1, i, s), F(3, 5), I(3, high=5, distinct=True),
     F(3, 3), dtypes=FD)
# All source slices equal: the copy is deterministic. torch gives every repeat the gradient
# of its slot, which finite differences refute: tests/tensor/test_shape_ops.py checks it.
case("index_copy_repeats", lambda x, i, s: x.index_copy(0, i, s.expand(4, 3)), F(3, 3),
     I(4, high=2), F(1, 3), dtypes=FD, grad=False)
case("index_add_repeats", lambda x, i, s: x.index_add(0, i, s), F(3, 2), I(5, high=2),
     F(5, 2), dtypes=FD)
case("slice_scatter", lambda x, s: x.slice_scatter(s, 1, 1, 5, 2), F(3, 6), F(3, 2),
     dtypes=FD)
case("slice_scatter_default", lambda x, s: x.slice_scatter(s), F(2, 3), F(2, 3), dtypes=FD)
case("slice_scatter_neg", lambda x, s: x.slice_scatter(s, -1, -3), F(2, 4), F(2, 3),
     dtypes=F64_32)
case("select_scatter", lambda x, s: x.select_scatter(s, 1, -1), F(3, 4, 2), F(3, 2),
     dtypes=FD)
case("select_scatter_0d", lambda x, s: x.select_scatter(s, 0, 2), F(4), F(), dtypes=F64_32)
def _scatter_prod_oracle(x: torch.Tensor, i: torch.Tensor, s: torch.Tensor,
                         include_self: bool) -> torch.Tensor:
    """torch's scatter_reduce "prod" along dim 0, with the derivatives of a dense product:
    torch's own forward-mode rule for it disagrees with finite differences."""
    onehot = i.unsqueeze(-1) == torch.arange(x.shape[0])
    dense = torch.where(onehot, s[:i.shape[0], :i.shape[1]].unsqueeze(-1), 1.0).prod(0).T
    hit = onehot.any(0).T
    ref = torch.where(hit, dense * x if include_self else dense, x)
    return ref + (x.scatter_reduce(0, i, s, "prod", include_self=include_self) - ref).detach()


for _red in ("sum", "prod", "mean", "amax", "amin"):
    for _incl in (True, False):
        _sfx = "" if _incl else "_exclude_self"
        case(f"scatter_reduce_{_red}{_sfx}",
             lambda x, i, s, r=_red, inc=_incl: x.scatter_reduce(0, i, s, r, include_self=inc),
             F(4, 3, low=0.5, high=1.5), I(5, 3, high=3), F(5, 3, low=0.5, high=1.5),
             torch_fn=(lambda x, i, s, inc=_incl: _scatter_prod_oracle(x, i, s, inc))
             if _red == "prod" else None, dtypes=FD)
    if _red != "prod":
        case(f"scatter_reduce_{_red}_small_index",
             lambda x, i, s, r=_red: x.scatter_reduce(-1, i, s, r, include_self=False),
             F(3, 4, low=0.5, high=1.5), I(2, 3, low=-4, high=4), F(3, 5, low=0.5, high=1.5),
             torch_fn=lambda x, i, s, r=_red: x.scatter_reduce(-1, i % 4, s, r,
                                                              include_self=False),
             dtypes=F64_32, grad=False)
# Ties: rounded values make equal maxima; the gradient splits among them, as torch's does.
for _red in ("amax", "amin"):
    case(f"scatter_reduce_{_red}_ties",
         lambda x, i, s, r=_red: x.scatter_reduce(1, i, (s * 2).round(), r),
         F(3, 2, low=-1.0, high=1.0), I(3, 6, high=2), F(3, 6, low=-1.0, high=1.0),
         torch_fn=lambda x, i, s, r=_red: x.scatter_reduce(1, i, (s * 2).round(), r),
         dtypes=F64_32)
case("scatter_reduce_prod_zero", lambda x, i, s: x.scatter_reduce(0, i, s, "prod"),
     F(3, 2), I(4, 2, high=3), F(4, 2, plant=(0.0,)),
     torch_fn=lambda x, i, s: _scatter_prod_oracle(x, i, s, True), dtypes=F64_32)


# ---- statistics, sorting and sampling -----------------------------------------------------------
def _tied(x: Any) -> Any:
    """``x`` rounded (many ties) whose gradient is still the identity, in both libraries.

    Finite differences cannot see through ``detach``: cases using it have more than
    ``FD_MAX_ELEMENTS`` inputs, so their gradients are checked against torch's alone.
    """
    return x.round() + (x - x.detach())


_ODD, _EVEN = F(3, 5, distinct=True), F(4, 6, distinct=True)
case("median_all", _method("median"), _ODD, dtypes=FD)
case("median_all_even", _method("median"), _EVEN, dtypes=FD)
case("median_dim", _method("median", 1), _ODD, dtypes=FD)
case("median_dim_even_keepdim", _method("median", 0, keepdim=True), _EVEN, dtypes=FD)
case("median_noncontig", _method("median", -1), F(3, 4, distinct=True, contiguous=False),
     dtypes=FD)
case("median_0d", _method("median", 0), F(), dtypes=FD)
case("median_ties", lambda x: _tied(x).median(1), F(4, 13, low=-3.0, high=3.0), dtypes=FD)
case("median_ties_all", lambda x: _tied(x).median(), F(5, 11, low=-3.0, high=3.0), dtypes=FD)
case("median_nan", lambda x: x.median(1), F(4, 5, plant=(NAN, NAN)), dtypes=FD, grad=False)
case("median_nan_all", _method("median"), F(3, 4, plant=(NAN,)), dtypes=FD, grad=False)
case("median_int", _method("median", 1), I(3, 5, high=4), dtypes=INT, grad=False)
case("nanmedian_all", _method("nanmedian"), F(3, 5, distinct=True, plant=(NAN, NAN)),
     dtypes=FD)
case("nanmedian_dim", _method("nanmedian", 1), F(4, 5, distinct=True, plant=(NAN, NAN, NAN)),
     dtypes=FD)
case("nanmedian_no_nan", _method("nanmedian", 0, keepdim=True), _EVEN, dtypes=FD)
case("nanmedian_all_nan_row", lambda x, y: bp.cat([x.sqrt(), y]).nanmedian(1).values,
     F(2, 3, low=-3.0, high=-1.0), F(2, 3, distinct=True),
     torch_fn=lambda x, y: torch.cat([x.sqrt(), y]).nanmedian(1).values, dtypes=FD, grad=False)
case("kthvalue", _method("kthvalue", 2, 1), _ODD, dtypes=FD)
case("kthvalue_default_dim_keepdim", _method("kthvalue", 4, keepdim=True), _EVEN, dtypes=FD)
case("kthvalue_last", _method("kthvalue", 3, 0), F(3, 4, distinct=True, contiguous=False),
     dtypes=FD)
case("mode", lambda x: _tied(x).mode(1), F(4, 13, low=-2.0, high=2.0), dtypes=FD)
case("mode_default_keepdim", lambda x: _tied(x).mode(keepdim=True), F(2, 3, 9), dtypes=FD)
case("mode_distinct", _method("mode", 0), F(5, 3, distinct=True), dtypes=FD)
case("mode_int", _method("mode", 1), I(4, 10, high=4), dtypes=INT, grad=False)
case("aminmax", _method("aminmax"), F(3, 4, distinct=True), dtypes=FD)
case("aminmax_dim", _method("aminmax", dim=1), F(2, 3, 4, distinct=True), dtypes=FD)
case("aminmax_dim_keepdim", _method("aminmax", dim=0, keepdim=True), F(3, 4, distinct=True),
     dtypes=FD)
case("argsort_stable_ties", lambda x: x.round().argsort(dim=1, stable=True), F(3, 9), dtypes=FD,
     grad=False)
case("sort_stable_descending_ties", lambda x: x.round().sort(dim=0, descending=True, stable=True),
     F(7, 3), dtypes=FD, grad=False)
case("msort", _method("msort"), F(4, 3, distinct=True), dtypes=FD)
case("msort_int", _method("msort"), I(5, 2, high=9), dtypes=INT, grad=False)

case("nansum", _method("nansum"), F(3, 4, plant=(NAN, NAN)), dtypes=FD)
case("nansum_dim_keepdim", _method("nansum", 1, keepdim=True), F(3, 4, plant=(NAN,)), dtypes=FD)
case("nansum_dims", _method("nansum", (0, 2)), F(2, 3, 4, plant=(NAN, NAN)), dtypes=FD)
case("nansum_int", _method("nansum", 0), I(3, 4, high=9), dtypes=INT, grad=False)
case("nanmean", _method("nanmean"), F(3, 4, plant=(NAN, NAN)), dtypes=FD)
case("nanmean_dim", _method("nanmean", -1), F(3, 4, plant=(NAN, NAN, NAN)), dtypes=FD)
case("nanmean_keepdim", _method("nanmean", 0, keepdim=True), F(3, 4), dtypes=FD)
case("logcumsumexp", _method("logcumsumexp", 1), F(3, 5), dtypes=FD)
case("logcumsumexp_dim0", _method("logcumsumexp", 0), F(7, 3, contiguous=False), dtypes=FD)
case("logcumsumexp_large", _method("logcumsumexp", -1), F(2, 9, low=-10.0, high=10.0),
     dtypes=F64_32)
# Beyond exp's float64 range the forward stays exact; torch's own tangent formula loses digits
# with the range (1e-8 relative at +-25: one shared shift), so its oracle stops at +-10.
case("logcumsumexp_huge", _method("logcumsumexp", -1), F(2, 9, low=-800.0, high=800.0),
     dtypes=F64_32, grad=False)
case("logcumsumexp_0d", _method("logcumsumexp", 0), F(), dtypes=FD)

case("trapezoid", lambda y: bp.trapezoid(y), F(3, 5),
     torch_fn=lambda y: torch.trapezoid(y), dtypes=FD)
case("trapezoid_dx_dim0", lambda y: bp.trapezoid(y, dx=0.5, dim=0), F(4, 3),
     torch_fn=lambda y: torch.trapezoid(y, dx=0.5, dim=0), dtypes=FD)
case("trapezoid_x", lambda y, x: bp.trapezoid(y, x), F(3, 5), F(5),
     torch_fn=lambda y, x: torch.trapezoid(y, x), dtypes=FD)
case("trapezoid_x_nd", lambda y, x: bp.trapezoid(y, x, dim=0), F(4, 3), F(4, 3),
     torch_fn=lambda y, x: torch.trapezoid(y, x, dim=0), dtypes=F64_32)
case("cumulative_trapezoid", lambda y: bp.cumulative_trapezoid(y), F(3, 5),
     torch_fn=lambda y: torch.cumulative_trapezoid(y), dtypes=FD)
case("cumulative_trapezoid_x", lambda y, x: bp.cumulative_trapezoid(y, x, dim=0), F(5, 2), F(5),
     torch_fn=lambda y, x: torch.cumulative_trapezoid(y, x, dim=0), dtypes=FD)
case("cumulative_trapezoid_dx", lambda y: bp.cumulative_trapezoid(y, dx=2.0), F(2, 3, 4),
     torch_fn=lambda y: torch.cumulative_trapezoid(y, dx=2.0), dtypes=FD)

case("var_mean", lambda x: bp.var_mean(x), F(3, 4), torch_fn=lambda x: torch.var_mean(x),
     dtypes=FD)
case("var_mean_dim_correction", lambda x: bp.var_mean(x, 1, correction=0, keepdim=True),
     F(3, 4), torch_fn=lambda x: torch.var_mean(x, 1, correction=0, keepdim=True), dtypes=FD)
case("var_mean_unbiased", lambda x: bp.var_mean(x, (0, 2), unbiased=False), F(2, 3, 4),
     torch_fn=lambda x: torch.var_mean(x, (0, 2), unbiased=False), dtypes=F64_32)
case("std_mean", lambda x: bp.std_mean(x, -1), F(3, 4), torch_fn=lambda x: torch.std_mean(x, -1),
     dtypes=FD)
case("std_mean_correction", lambda x: bp.std_mean(x, correction=2), F(3, 4),
     torch_fn=lambda x: torch.std_mean(x, correction=2), dtypes=FD)

#: Distinct magnitudes too (a symmetric grid has near-ties of |x| that finite differences see).
_NO_ABS_TIES = F(3, 4, low=-1.1, high=2.9, distinct=True)
case("norm", _method("norm"), F(3, 4), dtypes=FD)
for _p, _tag in ((2, "2"), (1, "1"), (3, "3"), (1.5, "1_5"), (0.5, "half"), (INF, "inf"),
                 (-INF, "neginf")):
    case(f"norm_p{_tag}_dim", _method("norm", _p, 1), _NO_ABS_TIES, dtypes=FD)
case("norm_fro_dims_keepdim", _method("norm", "fro", (0, 1), keepdim=True), F(2, 3, 4), dtypes=FD)
case("norm_p3_all", _method("norm", 3), F(3, 4), dtypes=FD)
case("norm_inf_all", _method("norm", INF), _NO_ABS_TIES, dtypes=FD)
case("norm_p0", _method("norm", 0, 1), F(3, 4, plant=(0.0, 0.0)), dtypes=FD, grad=False)
case("norm_zero_rows", lambda x: x.relu().norm(dim=1), F(3, 4, low=-2.0, high=-0.5), dtypes=FD)
case("norm_zero_rows_p3", lambda x: x.relu().norm(3, 1), F(3, 4, low=-2.0, high=-0.5),
     dtypes=FD)
case("dist", lambda a, b: a.dist(b), F(3, 4), F(4), dtypes=FD)
case("dist_p1", lambda a, b: a.dist(b, 1), F(3, 4), F(3, 4), dtypes=FD)
case("dist_inf", lambda a, b: a.dist(b, INF), F(3, 4), F(3, 4), dtypes=F64_32)
case("cdist", lambda a, b: bp.cdist(a, b), F(4, 3), F(5, 3),
     torch_fn=lambda a, b: torch.cdist(a, b), dtypes=F64_32)
case("cdist_batched_p1", lambda a, b: bp.cdist(a, b, 1.0), F(2, 4, 3), F(2, 5, 3),
     torch_fn=lambda a, b: torch.cdist(a, b, 1.0), dtypes=F64_32)
case("cdist_p3", lambda a, b: bp.cdist(a, b, 3.0), F(3, 2), F(4, 2),
     torch_fn=lambda a, b: torch.cdist(a, b, 3.0), dtypes=F64_32)
case("cdist_inf", lambda a, b: bp.cdist(a, b, INF), F(3, 2), F(4, 2),
     torch_fn=lambda a, b: torch.cdist(a, b, INF), dtypes=F64_32)
case("count_nonzero_dims", lambda x: x.relu().count_nonzero((0, 2)), F(2, 3, 4),
     dtypes=F64_32, grad=False)

_UNIQUE_FLAGS = {"return_inverse": True, "return_counts": True}
case("unique", _method("unique"), I(12, high=5), dtypes=INT, grad=False)
case("unique_inverse_counts", _method("unique", **_UNIQUE_FLAGS), I(3, 5, high=4), dtypes=INT,
     grad=False)
case("unique_float", lambda x: x.round().unique(return_counts=True), F(4, 5), dtypes=FD,
     grad=False)
case("unique_dim", _method("unique", dim=0, **_UNIQUE_FLAGS), I(7, 2, high=2), dtypes=INT,
     grad=False)
case("unique_dim1", _method("unique", dim=1, return_inverse=True), I(2, 8, high=2), dtypes=INT,
     grad=False)
case("unique_consecutive", _method("unique_consecutive", **_UNIQUE_FLAGS), I(15, high=2),
     dtypes=INT, grad=False)
case("unique_consecutive_2d", _method("unique_consecutive", return_inverse=True),
     I(3, 5, high=2), dtypes=INT, grad=False)
case("unique_consecutive_dim", _method("unique_consecutive", dim=0, **_UNIQUE_FLAGS),
     I(8, 2, high=2), dtypes=INT, grad=False)

case("searchsorted", lambda s, v: bp.searchsorted(s.sort().values, v), F(7), F(3, 4),
     torch_fn=lambda s, v: torch.searchsorted(s.sort().values, v), dtypes=FD, grad=False)
case("searchsorted_right_ties", lambda s, v: bp.searchsorted(s.round().sort().values,
                                                             v.round(), right=True),
     F(9), F(6), torch_fn=lambda s, v: torch.searchsorted(s.round().sort().values, v.round(),
                                                         right=True), dtypes=FD, grad=False)
case("searchsorted_side_batched", lambda s, v: bp.searchsorted(s.sort().values, v, side="right"),
     F(3, 6), F(3, 4), torch_fn=lambda s, v: torch.searchsorted(s.sort().values, v,
                                                               side="right"),
     dtypes=F64_32, grad=False)
case("searchsorted_int32", lambda s, v: bp.searchsorted(s.sort().values, v, out_int32=True),
     I(6, high=9), I(4, high=10), torch_fn=lambda s, v: torch.searchsorted(
         s.sort().values, v, out_int32=True), dtypes=INT, grad=False)
case("bucketize", lambda x, b: bp.bucketize(x, b.sort().values), F(3, 4), F(5),
     torch_fn=lambda x, b: torch.bucketize(x, b.sort().values), dtypes=FD, grad=False)
case("bucketize_right_ties", lambda x, b: bp.bucketize(x.round(), b.round().sort().values,
                                                       right=True), F(3, 4), F(5),
     torch_fn=lambda x, b: torch.bucketize(x.round(), b.round().sort().values, right=True),
     dtypes=F64_32, grad=False)
case("histc", _method("histc", 5, -1.0, 1.0), F(30), dtypes=F64_32, grad=False)
case("histc_data_range", _method("histc", 7), F(4, 6), dtypes=F64_32, grad=False)
case("histc_edges", lambda x: x.round().histc(4, -2.0, 2.0), F(20), dtypes=F64_32, grad=False)
case("bincount", _method("bincount"), I(10, high=6), dtypes=INT, grad=False)
case("bincount_minlength", _method("bincount", minlength=9), I(6, high=4), dtypes=INT,
     grad=False)
case("bincount_weights", lambda i, w: i.bincount(w), I(8, high=5), F(8), dtypes=FD, grad=False)

case("linspace", lambda x: bp.linspace(-1.0, 2.0, 7, backend=x.backend, dtype=x.dtype), F(1),
     torch_fn=lambda x: torch.linspace(-1.0, 2.0, 7, dtype=x.dtype), dtypes=F64_32, grad=False)
case("linspace_one", lambda x: bp.linspace(3.0, 5.0, 1, backend=x.backend, dtype=x.dtype), F(1),
     torch_fn=lambda x: torch.linspace(3.0, 5.0, 1, dtype=x.dtype), dtypes=F64_32, grad=False)
case("logspace", lambda x: bp.logspace(-1.0, 2.0, 5, backend=x.backend, dtype=x.dtype), F(1),
     torch_fn=lambda x: torch.logspace(-1.0, 2.0, 5, dtype=x.dtype), dtypes=F64_32, grad=False)
case("logspace_base2", lambda x: bp.logspace(0.0, 4.0, 5, 2.0, backend=x.backend, dtype=x.dtype),
     F(1), torch_fn=lambda x: torch.logspace(0.0, 4.0, 5, 2.0, dtype=x.dtype), dtypes=F64_32,
     grad=False)


# ---- nn.functional ------------------------------------------------------------------------------


# ---- burnpy.linalg ------------------------------------------------------------------------------
def _lin(a: Any) -> Any:
    """``burnpy.linalg`` for a burnpy tensor, ``torch.linalg`` for a torch one: one lambda
    serves both sides."""
    return bp.linalg if isinstance(a, bp.Tensor) else torch.linalg


def _eye_of(a: Any, n: int) -> Any:
    if isinstance(a, bp.Tensor):
        return bp.Tensor.eye(n, backend=a.backend, device=a.device, dtype=a.dtype)
    return torch.eye(n, dtype=a.dtype)


def _dominant(a: Any) -> Any:
    """``a`` (entries in [-1, 1)) plus ``(n + 1) I``: diagonally dominant, well conditioned."""
    return a + _eye_of(a, a.shape[-1]) * float(a.shape[-1] + 1)


def _spd(a: Any) -> Any:
    """``a a^T + n I``: symmetric positive definite, well conditioned."""
    return a @ a.mT + _eye_of(a, a.shape[-1]) * float(a.shape[-1])


def _la(name: str, fn: Fn, *args: Any, **kwargs: Any) -> None:
    """A linalg case in float64 and float32, inputs in [-1, 1)."""
    case("linalg_" + name, fn, *(F(*a, low=-1.0, high=1.0) for a in args), dtypes=F64_32,
         **kwargs)


_la("inv", lambda a: _lin(a).inv(_dominant(a)), (2, 3, 3))
_la("det", lambda a: _lin(a).det(_dominant(a)), (2, 3, 3))
_la("det_negative", lambda a: _lin(a).det(-_dominant(a)), (3, 3))
_la("slogdet", lambda a: _lin(a).slogdet(-_dominant(a)).logabsdet, (2, 4, 4))
_la("slogdet_sign", lambda a: _lin(a).slogdet(_dominant(a) - 0.5 * a.shape[-1]).sign,
    (2, 4, 4), grad=False)
_la("solve", lambda a, b: _lin(a).solve(_dominant(a), b), (2, 3, 3), (2, 3, 2))
_la("solve_vector", lambda a, b: _lin(a).solve(_dominant(a), b), (2, 3, 3), (2, 3))
_la("solve_broadcast", lambda a, b: _lin(a).solve(_dominant(a), b), (3, 3), (2, 3, 4))
_la("solve_right", lambda a, b: _lin(a).solve(_dominant(a), b, left=False), (2, 3, 3), (2, 4, 3))
_la("cholesky", lambda a: _lin(a).cholesky(_spd(a)), (2, 4, 4))
_la("cholesky_upper", lambda a: _lin(a).cholesky(_spd(a), upper=True), (3, 3))
_la("qr_tall", lambda a: tuple(_lin(a).qr(a)), (2, 5, 3))
_la("qr_square_complete", lambda a: tuple(_lin(a).qr(a, mode="complete")), (2, 3, 3))
_la("qr_wide", lambda a: tuple(_lin(a).qr(a)), (2, 3, 5))
_la("qr_r", lambda a: _lin(a).qr(a, mode="r")[1], (4, 3), grad=False)
# Eigenvectors and singular vectors are defined up to sign: compare sign-free functions.
_la("eigh", lambda a: (_lin(a).eigh(_spd(a)).eigenvalues, _lin(a).eigh(_spd(a))[1] ** 2),
    (2, 4, 4))
_la("eigh_upper", lambda a: _lin(a).eigh(_spd(a), UPLO="U")[1] ** 2, (3, 3))
_la("eigvalsh", lambda a: _lin(a).eigvalsh(a + a.mT), (2, 4, 4))
_la("svd_tall", lambda a: tuple(t ** 2 if i != 1 else t for i, t in
                               enumerate(_lin(a).svd(a, full_matrices=False))), (2, 5, 3))
_la("svd_wide", lambda a: tuple(t ** 2 if i != 1 else t for i, t in
                               enumerate(_lin(a).svd(a, full_matrices=False))), (2, 3, 4))
_la("svd_reconstruct", lambda a: (lambda u, s, vh: ((u * s.unsqueeze(-2)) @ vh) ** 2)(
    *_lin(a).svd(a, full_matrices=False)), (2, 4, 3))
_la("svdvals", lambda a: _lin(a).svdvals(a), (2, 3, 5))
_la("pinv", lambda a: _lin(a).pinv(a), (2, 5, 3))
_la("pinv_hermitian", lambda a: _lin(a).pinv(_spd(a), hermitian=True), (3, 3))
_la("matrix_rank", lambda a: _lin(a).matrix_rank(a), (2, 4, 3), grad=False)
_la("lstsq", lambda a, b: _lin(a).lstsq(a, b).solution, (2, 5, 3), (2, 5, 2))
_la("matrix_power", lambda a: _lin(a).matrix_power(a, 3), (2, 3, 3))
_la("matrix_power_negative", lambda a: _lin(a).matrix_power(_dominant(a), -2), (2, 3, 3))
_la("matrix_power_zero", lambda a: _lin(a).matrix_power(a, 0), (2, 3, 3), grad=False)
_la("cross", lambda a, b: _lin(a).cross(a, b), (1, 4, 3), (2, 4, 3))
_la("cross_dim", lambda a, b: _lin(a).cross(a, b, dim=0), (3, 4), (3, 4))
_la("vector_norm", lambda a: _lin(a).vector_norm(a), (3, 4))
_la("vector_norm_dim", lambda a: _lin(a).vector_norm(a, 2, dim=-1, keepdim=True), (2, 3, 4))
_la("vector_norm_ord1", lambda a: _lin(a).vector_norm(a, 1, dim=(0, 2)), (2, 3, 4))
_la("vector_norm_ord3", lambda a: _lin(a).vector_norm(a, 3, dim=1), (3, 4))
_la("vector_norm_inf", lambda a: _lin(a).vector_norm(a, INF, dim=1), (3, 4))
_la("vector_norm_neg_inf", lambda a: _lin(a).vector_norm(a, -INF, dim=1), (3, 4))
_la("matrix_norm_fro", lambda a: _lin(a).matrix_norm(a), (2, 3, 4))
_la("matrix_norm_nuc", lambda a: _lin(a).matrix_norm(a, "nuc"), (2, 3, 4))
_la("matrix_norm_2", lambda a: _lin(a).matrix_norm(a, 2), (2, 3, 4))
_la("matrix_norm_neg2", lambda a: _lin(a).matrix_norm(a, -2), (2, 4, 3))
_la("matrix_norm_1", lambda a: _lin(a).matrix_norm(a, 1, keepdim=True), (2, 3, 4))
_la("matrix_norm_inf_dims", lambda a: _lin(a).matrix_norm(a, -INF, dim=(0, 2)), (3, 2, 4))
_la("norm", lambda a: _lin(a).norm(a), (2, 3, 4))
_la("norm_dim", lambda a: _lin(a).norm(a, 3, dim=1), (2, 3, 4))
_la("norm_matrix_ord", lambda a: _lin(a).norm(a, "nuc"), (3, 4))
