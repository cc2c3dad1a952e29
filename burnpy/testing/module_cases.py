"""Cases of the module ops (conv, transposed conv, pools, embedding, interpolation, linear,
batch and layer normalization, cross entropy, attention), called through
``burnpy.nn.functional`` with torch's signatures.

They are ``OpCase`` values like the shared table's, kept in their own list (``MODULE_CASES``):
the forward suite checks their values in float64 and float32, and the gradient and tangent
suites (which draw float64) exercise the module ops' backward kernels under every stride,
padding, dilation and group setting.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

import burnpy.nn.functional as F
from burnpy.tensor import Tensor
from burnpy.testing.cases import Arg, I, OpCase
from burnpy.testing.cases import F as Flt
from burnpy.testing.lazy import LazyModule

if TYPE_CHECKING:
    import torch
    import torch.nn.functional as TF
else:  # imported when a case runs: registering the cases does not need torch
    torch, TF = LazyModule("torch"), LazyModule("torch.nn.functional")

MODULE_CASES: list[OpCase] = []


def _case(name: str, fn: Callable[..., Any], *args: Arg,
          torch_fn: Callable[..., Any] | None = None) -> None:
    MODULE_CASES.append(OpCase(name, fn, args, torch_fn=torch_fn,
                               dtypes=("float64", "float32"), accumulates=True))


def _both(name: str, functional: str, *args: Arg, **kwargs: Any) -> None:
    """A case calling ``functional`` by the same name and arguments in burnpy and torch."""
    ours = getattr(F, functional)
    _case(name, lambda *a: ours(*a, **kwargs), *args,
          torch_fn=lambda *a: getattr(TF, functional)(*a, **kwargs))


# ---- convolution --------------------------------------------------------------------------------
_both("conv1d_stride_pad_dilation_groups", "conv1d", Flt(2, 4, 9), Flt(6, 2, 3), Flt(6),
      stride=2, padding=1, dilation=2, groups=2)
_both("conv1d_tiny", "conv1d", Flt(1, 1, 5), Flt(2, 1, 2), Flt(2))
_both("conv2d", "conv2d", Flt(2, 3, 6, 5), Flt(4, 3, 3, 3), padding=1)
_both("conv2d_stride_pad_dilation_groups", "conv2d", Flt(2, 4, 7, 6), Flt(6, 2, 3, 2), Flt(6),
      stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=2)
_both("conv2d_depthwise", "conv2d", Flt(1, 3, 5, 5), Flt(3, 1, 3, 3), Flt(3), stride=2,
      padding=1, groups=3)
_both("conv3d", "conv3d", Flt(1, 2, 5, 4, 4), Flt(3, 2, 2, 3, 2), Flt(3), stride=(1, 2, 1),
      padding=1)
_both("conv3d_groups_dilation", "conv3d", Flt(1, 4, 5, 5, 4), Flt(2, 2, 2, 2, 2), groups=2,
      dilation=(2, 1, 1))

# ---- transposed convolution -------------------------------------------------------------------
_both("conv_transpose1d", "conv_transpose1d", Flt(2, 4, 5), Flt(4, 3, 3), Flt(3), stride=2,
      padding=1, output_padding=1)
_both("conv_transpose1d_tiny", "conv_transpose1d", Flt(1, 1, 3), Flt(1, 2, 2), Flt(2))
_both("conv_transpose2d", "conv_transpose2d", Flt(2, 3, 4, 3), Flt(3, 2, 3, 3), padding=1)
_both("conv_transpose2d_stride_groups_dilation", "conv_transpose2d", Flt(2, 4, 4, 3),
      Flt(4, 2, 3, 2), Flt(4), stride=(2, 1), padding=(1, 0), output_padding=(1, 0), groups=2,
      dilation=(1, 2))
_both("conv_transpose3d", "conv_transpose3d", Flt(1, 2, 3, 3, 2), Flt(2, 2, 2, 2, 2), Flt(2),
      stride=2)

# ---- pooling ----------------------------------------------------------------------------------
_both("avg_pool1d", "avg_pool1d", Flt(2, 3, 9), kernel_size=3, stride=2, padding=1,
      ceil_mode=True, count_include_pad=False)
_both("avg_pool1d_tiny", "avg_pool1d", Flt(1, 2, 7), kernel_size=2)
_both("avg_pool2d", "avg_pool2d", Flt(2, 3, 7, 6), kernel_size=(3, 2), stride=2, padding=1)
_both("avg_pool2d_ceil_no_pad_count", "avg_pool2d", Flt(2, 2, 7, 6), kernel_size=3, stride=2,
      padding=1, ceil_mode=True, count_include_pad=False)
_both("max_pool1d", "max_pool1d", Flt(2, 3, 9, distinct=True), kernel_size=3, stride=2,
      padding=1, dilation=2)
_both("max_pool2d", "max_pool2d", Flt(2, 3, 7, 6, distinct=True), kernel_size=3, stride=2,
      padding=1)
_both("max_pool2d_ceil_dilation", "max_pool2d", Flt(1, 2, 8, 7, distinct=True), kernel_size=2,
      stride=2, dilation=2, ceil_mode=True)
_both("max_pool2d_with_indices", "max_pool2d", Flt(2, 2, 6, 6, distinct=True), kernel_size=2,
      return_indices=True)
_both("max_pool1d_tiny", "max_pool1d", Flt(1, 2, 8, distinct=True), kernel_size=2)
_both("adaptive_avg_pool1d", "adaptive_avg_pool1d", Flt(2, 3, 10), output_size=4)
_both("adaptive_avg_pool2d", "adaptive_avg_pool2d", Flt(2, 3, 7, 9), output_size=(3, 4))
_both("adaptive_avg_pool2d_upsample", "adaptive_avg_pool2d", Flt(1, 2, 3, 2),
      output_size=(5, 4))

# ---- embedding, interpolation, linear -----------------------------------------------------------
_both("embedding", "embedding", I(3, 4, high=7), Flt(7, 5))
_both("embedding_repeats", "embedding", I(12, high=3), Flt(3, 4))
_both("interpolate_nearest", "interpolate", Flt(2, 3, 5, 4), size=(7, 9), mode="nearest")
_both("interpolate_nearest_scale", "interpolate", Flt(1, 2, 3, 4), scale_factor=2,
      mode="nearest")
_both("interpolate_nearest_down", "interpolate", Flt(1, 2, 7, 6), size=(3, 4), mode="nearest")
_both("interpolate_bilinear", "interpolate", Flt(2, 3, 5, 4), size=(7, 3), mode="bilinear",
      align_corners=False)
_both("interpolate_bilinear_align_corners", "interpolate", Flt(2, 3, 5, 4), size=(8, 6),
      mode="bilinear", align_corners=True)
_both("interpolate_bilinear_tiny", "interpolate", Flt(1, 1, 3, 2), size=(4, 5),
      mode="bilinear", align_corners=False)
_both("linear", "linear", Flt(3, 4, 5), Flt(6, 5), Flt(6))
_both("linear_no_bias", "linear", Flt(7, 5), Flt(3, 5))
_both("linear_tiny", "linear", Flt(2, 3), Flt(2, 3), Flt(2))

# ---- batch normalization ------------------------------------------------------------------------
_RUNNING_MEAN = np.array([0.3, -1.2, 0.5])
_RUNNING_VAR = np.array([0.7, 1.9, 0.2])


def _bn_train(x: Tensor, weight: Tensor | None = None, bias: Tensor | None = None) -> Tensor:
    return F.batch_norm(x, None, None, weight, bias, training=True, eps=1e-3)


def _torch_bn_train(x: Any, weight: Any = None, bias: Any = None) -> Any:
    return TF.batch_norm(x, None, None, weight, bias, training=True, eps=1e-3)


def _bn_eval(x: Tensor, w: Tensor, b: Tensor) -> Tensor:
    mean, var = (Tensor.from_data(a, backend=x.backend, dtype=x.dtype)
                 for a in (_RUNNING_MEAN, _RUNNING_VAR))
    return F.batch_norm(x, mean, var, w, b)


def _torch_bn_eval(x: Any, w: Any, b: Any) -> Any:
    mean, var = (torch.from_numpy(a).to(x.dtype) for a in (_RUNNING_MEAN, _RUNNING_VAR))
    return TF.batch_norm(x, mean, var, w, b)


_case("batch_norm_train", _bn_train, Flt(4, 3, 5, 2), Flt(3), Flt(3), torch_fn=_torch_bn_train)
_case("batch_norm_train_no_affine_1d", _bn_train, Flt(6, 4), torch_fn=_torch_bn_train)
_case("batch_norm_train_3d", _bn_train, Flt(2, 3, 4), Flt(3), Flt(3), torch_fn=_torch_bn_train)
_case("batch_norm_eval", _bn_eval, Flt(4, 3, 5), Flt(3), Flt(3), torch_fn=_torch_bn_eval)

# ---- layer normalization -------------------------------------------------------------------------
def _layer_norm_case(name: str, shape: tuple[int, ...], *args: Arg, **kwargs: Any) -> None:
    """A layer norm over the trailing ``shape`` dims of ``args[0]``; the other args give the
    weight (and bias)."""
    _case(name, lambda x, *a: F.layer_norm(x, shape, *a, **kwargs), *args,
          torch_fn=lambda x, *a: TF.layer_norm(x, shape, *a, **kwargs))


_layer_norm_case("layer_norm", (5,), Flt(3, 4, 5), Flt(5), Flt(5))
_layer_norm_case("layer_norm_two_dims_weight_only", (3, 4), Flt(2, 3, 4), Flt(3, 4), eps=1e-3)
_layer_norm_case("layer_norm_no_affine", (6,), Flt(4, 6))

# ---- cross entropy (the fused path: [n, c] logits, class indices) --------------------------------
_both("cross_entropy", "cross_entropy", Flt(8, 5), I(8, high=5))
_both("cross_entropy_ignore_none", "cross_entropy", Flt(9, 4), I(9, high=4), ignore_index=2,
      reduction="none")
_both("cross_entropy_sum", "cross_entropy", Flt(3, 6), I(3, high=6), reduction="sum")

# ---- attention ----------------------------------------------------------------------------------
_both("attention", "scaled_dot_product_attention", Flt(2, 3, 4, 8), Flt(2, 3, 5, 8),
      Flt(2, 3, 5, 6))
_both("attention_causal_scale", "scaled_dot_product_attention", Flt(2, 5, 4), Flt(2, 5, 4),
      Flt(2, 5, 3), is_causal=True, scale=0.3)
_both("attention_tiny", "scaled_dot_product_attention", Flt(1, 2, 2), Flt(1, 3, 2),
      Flt(1, 3, 2))

#: Every query row may attend to at least one key (a fully masked row has no softmax).
_MASK = np.array([[True, False, True, True, False],
                  [False, False, False, False, True],
                  [True, True, True, True, True],
                  [False, True, False, True, False]])
_case("attention_mask",
      lambda q, k, v: F.scaled_dot_product_attention(
          q, k, v, attn_mask=Tensor.from_data(_MASK, backend=q.backend)),
      Flt(2, 4, 8), Flt(2, 5, 8), Flt(2, 5, 6),
      torch_fn=lambda q, k, v: TF.scaled_dot_product_attention(
          q, k, v, attn_mask=torch.from_numpy(_MASK)))
