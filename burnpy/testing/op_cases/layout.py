"""Cases of Tensor's layout ops (``burnpy/tensor/layout.py``): reshapes, permutes, expands,
repeats, flips, slices, splits, unfold, cat and stack, triangles, rolls and diagonals."""

from __future__ import annotations

from typing import TYPE_CHECKING

import burnpy as bp
from burnpy.testing.cases import B, F, I, case
from burnpy.testing.lazy import LazyModule
from burnpy.testing.op_cases._common import (
    _IA,
    BOOL,
    F64_32,
    FD,
    INT,
    _method,
)

if TYPE_CHECKING:
    import torch
else:  # imported when a case runs: registering the cases does not need torch
    torch = LazyModule("torch")


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

case("int_cat_stack", lambda a, b: (bp.cat([a, b], 1), bp.stack([a, b])), I(3, 4, **_IA),
     I(3, 4, **_IA), torch_fn=lambda a, b: (torch.cat([a, b], 1), torch.stack([a, b])),
     dtypes=INT, grad=False)
case("int_layout", lambda a: a.permute(1, 0).reshape(2, 6).flip(0)[:, 1::2].unsqueeze(0),
     I(3, 4, **_IA), dtypes=INT, grad=False)
case("int_expand_repeat", lambda a: (a.expand(2, 3, 4), a.repeat(1, 2)), I(3, 4, **_IA),
     dtypes=INT, grad=False)

case("int_unfold_split", lambda a: (a.unfold(1, 2, 1), *a.split(2, 1)), I(3, 4, **_IA),
     dtypes=INT, grad=False)

case("bool_layout", lambda a: (a.T.reshape(2, 6), a.flip(1), a.unsqueeze(1).expand(3, 2, 4)),
     B(3, 4), dtypes=BOOL, grad=False)
case("bool_cat_stack", lambda a, b: (bp.cat([a, b]), bp.stack([a, b], -1)), B(3, 4), B(3, 4),
     torch_fn=lambda a, b: (torch.cat([a, b]), torch.stack([a, b], -1)), dtypes=BOOL,
     grad=False)

case("bool_unfold", lambda a: a.unfold(1, 2, 2), B(3, 4), dtypes=BOOL, grad=False)

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
