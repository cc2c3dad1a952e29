"""Cases of Tensor's statistics (``burnpy/tensor/statistics.py``): order statistics, NaN-ignoring
reductions, integration, norms and distances, unique values, bucketing and histograms."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import burnpy as bp
from burnpy.testing.cases import F, I, case
from burnpy.testing.lazy import LazyModule
from burnpy.testing.op_cases._common import (
    F64_32,
    FD,
    INF,
    INT,
    NAN,
    _method,
)

if TYPE_CHECKING:
    import torch
else:  # imported when a case runs: registering the cases does not need torch
    torch = LazyModule("torch")


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
