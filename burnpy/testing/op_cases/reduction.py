"""Cases of Tensor's reductions, scans and sorting (``burnpy/tensor/reduction.py``), on floats,
ints and bools."""

from __future__ import annotations

from burnpy.testing.cases import B, F, I, case
from burnpy.testing.op_cases._common import (
    _IA,
    BOOL,
    F64_32,
    FD,
    INT,
    _method,
)

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

case("int_any_all", lambda a: (a.any(1), a.all(0)), I(3, 4, low=0, high=2), dtypes=INT,
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
