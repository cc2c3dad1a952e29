"""Cases of Tensor indexing (``burnpy/tensor/indexing.py``): ``t[...]``, ``t[...] = v``, gather,
scatter, select, masks, take and their assign/add/reduce forms."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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
    Fn,
    _method,
)

if TYPE_CHECKING:
    import torch
else:  # imported when a case runs: registering the cases does not need torch
    torch = LazyModule("torch")


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

case("int_getitem", lambda a, i: a[i, 1:], I(3, 4, **_IA), I(2, high=3), dtypes=INT,
     grad=False)
case("int_setitem", lambda a: _setter(slice(1, 3))(a, 7), I(3, 4, **_IA), dtypes=INT,
     grad=False)

def _bool_setter(a: Any, row: Any) -> Any:
    """Assign a scalar and a row into a copy of a bool tensor (``a | False`` copies it)."""
    y = a | False
    y[0, 1:3] = True
    y[2] = row
    return y

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
