"""Cases of the module ops (conv, transposed conv, pools, embedding, interpolation, linear,
batch, layer and RMS normalization, cross entropy, attention), called through
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
from burnpy.nn.rnn import lstm_recurrence
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

# ---- RMS normalization ---------------------------------------------------------------------------
_case("rms_norm", lambda x, w: F.rms_norm(x, (5,), w, 1e-5), Flt(3, 4, 5), Flt(5),
      torch_fn=lambda x, w: TF.rms_norm(x, (5,), w, 1e-5))
_case("rms_norm_two_dims_no_weight", lambda x: F.rms_norm(x, (3, 4)), Flt(2, 3, 4),
      torch_fn=lambda x: TF.rms_norm(x, (3, 4)))

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
_both("attention_heads_causal", "scaled_dot_product_attention", Flt(2, 2, 6, 4),
      Flt(2, 2, 6, 4), Flt(2, 2, 6, 3), is_causal=True)
_both("attention_causal_fewer_queries", "scaled_dot_product_attention", Flt(2, 3, 4),
      Flt(2, 5, 4), Flt(2, 5, 2), is_causal=True)
_both("attention_cached_step", "scaled_dot_product_attention", Flt(2, 3, 1, 4),
      Flt(2, 3, 6, 4), Flt(2, 3, 6, 5))

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

# ---- recurrent ----------------------------------------------------------------------------------
def _torch_lstm(gates_x: Any, weight_hh: Any, h0: Any, c0: Any) -> Any:
    """torch's LSTM equations step by step over precomputed input gates: ``[T + 1, N, H]``."""
    h, c, hs = h0, c0, []
    for t in range(gates_x.shape[0]):
        i, f, g, o = (gates_x[t] + h @ weight_hh.T).chunk(4, 1)
        c = f.sigmoid() * c + i.sigmoid() * g.tanh()
        h = o.sigmoid() * c.tanh()
        hs.append(h)
    return torch.stack([*hs, c])


_case("lstm_recurrence", lstm_recurrence, Flt(3, 2, 8), Flt(8, 2, low=-1.0, high=1.0),
      Flt(2, 2, low=-1.0, high=1.0), Flt(2, 2), torch_fn=_torch_lstm)
_case("lstm_recurrence_one_step", lstm_recurrence, Flt(1, 3, 12), Flt(12, 3), Flt(3, 3),
      Flt(3, 3), torch_fn=_torch_lstm)

# ---- nn.functional's compositions -------------------------------------------------------------
# Ops composed of Tensor ops (activations, pads, norms, pools, losses... of burnpy.nn.functional):
# the cases pin torch's semantics, and the gradient and tangent suites run through the composed
# graphs.
for _fn, _kw in [("relu6", {}), ("elu", {}), ("elu", {"alpha": 0.7}), ("selu", {}),
                 ("celu", {"alpha": 1.5}), ("mish", {}), ("hardswish", {}),
                 ("hardtanh", {"min_val": -0.5, "max_val": 1.5}), ("hardshrink", {}),
                 ("softshrink", {"lambd": 0.3}), ("tanhshrink", {}), ("softsign", {}),
                 ("threshold", {"threshold": 0.2, "value": -3.0})]:
    _both(f"{_fn}_" + "_".join(f"{k}{v}" for k, v in _kw.items()), _fn,
          Flt(3, 4, low=-8.0, high=8.0), **_kw)
_both("glu", "glu", Flt(2, 6, 3), dim=1)
_both("glu_last", "glu", Flt(3, 4))
_both("softmin", "softmin", Flt(2, 3, 4), dim=1)
_both("prelu_channels", "prelu", Flt(2, 3, 4), Flt(3))
_both("prelu_shared", "prelu", Flt(2, 3, 4, 2), Flt(1))
_both("rrelu_eval", "rrelu", Flt(3, 4), lower=0.1, upper=0.3)
_both("normalize", "normalize", Flt(3, 4))
_both("normalize_p1_dim0", "normalize", Flt(3, 4), p=1.0, dim=0)
_both("normalize_p3", "normalize", Flt(2, 5), p=3.0, dim=-1)
_case("one_hot", lambda t: F.one_hot(t, 5), I(2, 3, high=5),
      torch_fn=lambda t: TF.one_hot(t, 5))
_case("one_hot_inferred", lambda t: F.one_hot(t), I(4, high=4, distinct=True),
      torch_fn=lambda t: TF.one_hot(t))

# ---- padding ----------------------------------------------------------------------------------
for _mode in ("constant", "reflect", "replicate", "circular"):
    _both(f"pad_{_mode}_1d", "pad", Flt(2, 3, 5), pad=(2, 1), mode=_mode)
    _both(f"pad_{_mode}_2d", "pad", Flt(1, 2, 4, 5), pad=(1, 3, 2, 0), mode=_mode)
    _both(f"pad_{_mode}_3d", "pad", Flt(1, 1, 3, 3, 4), pad=(1, 1, 0, 2, 2, 1), mode=_mode)
_both("pad_constant_value_crop", "pad", Flt(2, 3, 5), pad=(-1, 2, 1, -1), value=0.5)

# ---- normalization ----------------------------------------------------------------------------
_case("group_norm", lambda x, w, b: F.group_norm(x, 3, w, b), Flt(2, 6, 3, 2), Flt(6), Flt(6),
      torch_fn=lambda x, w, b: TF.group_norm(x, 3, w, b))
_both("group_norm_plain", "group_norm", Flt(3, 4, 5), num_groups=2)
_both("instance_norm", "instance_norm", Flt(2, 3, 5))
_case("instance_norm_affine",
      lambda x, w, b: F.instance_norm(x, weight=w, bias=b, eps=1e-3),
      Flt(2, 3, 4, 3), Flt(3), Flt(3),
      torch_fn=lambda x, w, b: TF.instance_norm(x, weight=w, bias=b, eps=1e-3))
_both("rms_norm", "rms_norm", Flt(2, 3, 4), weight=None,
      normalized_shape=(3, 4))
_both("rms_norm_eps", "rms_norm", Flt(3, 5), normalized_shape=(5,), eps=1e-3)
_both("local_response_norm", "local_response_norm", Flt(2, 5, 3, 2), size=3, alpha=0.1)
_both("local_response_norm_even", "local_response_norm", Flt(2, 4, 6), size=2, alpha=0.5,
      beta=0.6, k=2.0)

# ---- pixel shuffle, unfold, fold --------------------------------------------------------------
_both("pixel_shuffle", "pixel_shuffle", Flt(2, 8, 3, 2), upscale_factor=2)
_both("pixel_unshuffle", "pixel_unshuffle", Flt(1, 2, 6, 4), downscale_factor=2)
_both("channel_shuffle", "channel_shuffle", Flt(2, 6, 3, 2), groups=3)
_both("unfold_im2col", "unfold", Flt(2, 3, 5, 6), kernel_size=(2, 3))
_both("unfold_im2col_all", "unfold", Flt(1, 2, 7, 6), kernel_size=(3, 2), dilation=(1, 2),
      padding=1, stride=(2, 1))
_both("fold_col2im", "fold", Flt(2, 3 * 6, 9), output_size=(4, 5),
      kernel_size=(2, 3))
_both("fold_col2im_all", "fold", Flt(1, 2 * 6, 15), output_size=(6, 5),
      kernel_size=(3, 2), dilation=(1, 2),
      padding=1, stride=(2, 1))

# ---- 3-d, adaptive and power pools ------------------------------------------------------------
_both("avg_pool3d", "avg_pool3d", Flt(1, 2, 4, 5, 4), kernel_size=2)
_both("avg_pool3d_pad", "avg_pool3d", Flt(1, 2, 5, 4, 5), kernel_size=(3, 2, 3),
      stride=(2, 1, 2),
      padding=1)
_both("avg_pool3d_pad_exclude_ceil", "avg_pool3d", Flt(1, 1, 5, 4, 6), kernel_size=3,
      stride=2,
      padding=1, count_include_pad=False, ceil_mode=True)
_both("avg_pool3d_ceil", "avg_pool3d", Flt(1, 1, 5, 5, 4), kernel_size=2, ceil_mode=True)
_both("avg_pool3d_divisor", "avg_pool3d", Flt(1, 2, 4, 4, 4), kernel_size=2,
      divisor_override=3)
_both("max_pool3d", "max_pool3d", Flt(1, 2, 4, 5, 4, distinct=True),
      kernel_size=2)
_both("max_pool3d_all", "max_pool3d", Flt(1, 2, 6, 5, 6, distinct=True),
      kernel_size=(3, 2, 2), stride=(1, 2, 2), padding=1, dilation=(1, 1, 2), ceil_mode=True,
      return_indices=True)
_both("adaptive_avg_pool3d", "adaptive_avg_pool3d", Flt(1, 2, 5, 4, 7),
      output_size=(2, 3, 3))
_both("adaptive_avg_pool3d_none", "adaptive_avg_pool3d", Flt(1, 2, 3, 4, 5),
      output_size=(None, 2, 3))
_both("adaptive_max_pool1d", "adaptive_max_pool1d", Flt(2, 3, 7, distinct=True),
      output_size=3)
_both("adaptive_max_pool1d_indices", "adaptive_max_pool1d", Flt(2, 3, 8, distinct=True),
      output_size=3, return_indices=True)
_both("adaptive_max_pool2d", "adaptive_max_pool2d", Flt(2, 2, 5, 7, distinct=True),
      output_size=(3, 4))
_both("adaptive_max_pool2d_indices", "adaptive_max_pool2d", Flt(1, 2, 7, 5, distinct=True),
      output_size=(3, 2), return_indices=True)
_both("lp_pool1d", "lp_pool1d", Flt(2, 3, 7), norm_type=2.0, kernel_size=3, stride=2)
_both("lp_pool2d", "lp_pool2d", Flt(1, 2, 5, 6, low=0.5, high=2.0), norm_type=3.0,
      kernel_size=(2, 3), ceil_mode=True)
_both("lp_pool3d", "lp_pool3d", Flt(1, 2, 4, 5, 3, low=0.5, high=2.0), norm_type=2.0,
      kernel_size=(2, 3, 2), stride=1)
_both("adaptive_max_pool3d_indices", "adaptive_max_pool3d", Flt(1, 2, 5, 4, 6, distinct=True),
      output_size=(2, 3, 4), return_indices=True)
_FRACTIONAL_SAMPLES = np.array([[[0.3, 0.8], [0.05, 0.6]]])


def _samples(x: Any) -> Any:
    return _FRACTIONAL_SAMPLES if x.ndim == 4 else np.concatenate(
        [_FRACTIONAL_SAMPLES, [[[0.5], [0.9]]]], axis=2)


for _n in (2, 3):
    _case(f"fractional_max_pool{_n}d", lambda x: getattr(F, f"fractional_max_pool{x.ndim - 2}d")(
              x, 2, output_size=3, return_indices=True, _random_samples=Tensor.from_data(
                  _samples(x), backend=x.backend, device=x.device, dtype=x.dtype)),
          Flt(1, 2, *(6, 5, 7)[:_n], distinct=True),
          torch_fn=lambda x: getattr(TF, f"fractional_max_pool{x.ndim - 2}d")(
              x, 2, output_size=3, return_indices=True,
              _random_samples=torch.from_numpy(_samples(x)).to(x.dtype)))
    _case(f"max_unpool{_n}d", lambda x: getattr(F, f"max_unpool{x.ndim - 2}d")(
              *getattr(F, f"max_pool{x.ndim - 2}d")(x, 2, return_indices=True), 2),
          Flt(2, 3, *(6, 4, 4)[:_n], distinct=True),
          torch_fn=lambda x: getattr(TF, f"max_unpool{x.ndim - 2}d")(
              *getattr(TF, f"max_pool{x.ndim - 2}d")(x, 2, return_indices=True), 2))

# ---- distances --------------------------------------------------------------------------------
_both("cosine_similarity", "cosine_similarity", Flt(3, 4), Flt(3, 4))
_both("cosine_similarity_bcast", "cosine_similarity", Flt(2, 1, 5), Flt(3, 5), dim=-1)
_both("pairwise_distance", "pairwise_distance", Flt(3, 4), Flt(3, 4))
_both("pairwise_distance_p1_keepdim", "pairwise_distance", Flt(3, 4), Flt(3, 4), p=1.0,
      keepdim=True)

# ---- losses -----------------------------------------------------------------------------------
for _reduction in ("mean", "sum", "none"):
    _r = {"reduction": _reduction}
    _both(f"kl_div_{_reduction}", "kl_div", Flt(3, 4), Flt(3, 4, low=0.1, high=2.0), **_r)
    _both(f"smooth_l1_loss_{_reduction}", "smooth_l1_loss", Flt(3, 4), Flt(3, 4), beta=0.8,
          **_r)
    _both(f"bce_{_reduction}", "binary_cross_entropy", Flt(3, 4, low=0.05, high=0.95),
          Flt(3, 4, low=0.0, high=1.0, requires_grad=False), **_r)
    _both(f"poisson_nll_loss_{_reduction}", "poisson_nll_loss", Flt(3, 4),
          Flt(3, 4, low=0.0, high=4.0), **_r)
    _both(f"gaussian_nll_loss_{_reduction}", "gaussian_nll_loss", Flt(3, 4), Flt(3, 4),
          Flt(3, 4, low=0.1, high=2.0), **_r)
    _both(f"triplet_margin_loss_{_reduction}", "triplet_margin_loss", Flt(3, 4), Flt(3, 4),
          Flt(3, 4), **_r)
    _both(f"huber_loss_{_reduction}", "huber_loss", Flt(3, 4), Flt(3, 4), delta=0.7, **_r)
    _both(f"l1_loss_{_reduction}", "l1_loss", Flt(3, 4), Flt(3, 4), **_r)
    _both(f"mse_loss_{_reduction}", "mse_loss", Flt(3, 4), Flt(3, 4), **_r)
_both("kl_div_batchmean_log_target", "kl_div", Flt(3, 4), Flt(3, 4), reduction="batchmean",
      log_target=True)
_both("smooth_l1_loss_beta0", "smooth_l1_loss", Flt(3, 4), Flt(3, 4), beta=0.0)
_both("bce_weight", "binary_cross_entropy", Flt(3, 4, low=0.05, high=0.95),
      Flt(3, 4, low=0.0, high=1.0, requires_grad=False), Flt(3, 4, requires_grad=False))
_both("bce_with_logits_weights", "binary_cross_entropy_with_logits", Flt(3, 4, low=-30.0,
      high=30.0), Flt(3, 4, low=0.0, high=1.0), Flt(3, 4, requires_grad=False))
_case("bce_with_logits_pos_weight",
      lambda x, t, p: F.binary_cross_entropy_with_logits(x, t, pos_weight=p),
      Flt(3, 4, low=-6.0, high=6.0), Flt(3, 4, low=0.0, high=1.0),
      Flt(4, low=0.1, high=2.0, requires_grad=False),
      torch_fn=lambda x, t, p: TF.binary_cross_entropy_with_logits(x, t, pos_weight=p))
_both("poisson_nll_loss_rate_full", "poisson_nll_loss", Flt(3, 4, low=0.1, high=2.0),
      Flt(3, 4, low=0.0, high=4.0), log_input=False, full=True)
_both("gaussian_nll_loss_full_var_per_row", "gaussian_nll_loss", Flt(3, 4), Flt(3, 4),
      Flt(3, 1, low=0.1, high=2.0), full=True)
_both("triplet_margin_loss_p1_swap", "triplet_margin_loss", Flt(3, 4), Flt(3, 4), Flt(3, 4),
      margin=0.5, p=1.0, swap=True)
_case("margin_ranking_loss",
      lambda a, b, y: F.margin_ranking_loss(a, b, y.sign(), margin=0.2),
      Flt(5), Flt(5), Flt(5, requires_grad=False),
      torch_fn=lambda a, b, y: TF.margin_ranking_loss(a, b, y.sign(), margin=0.2))
_case("cosine_embedding_loss",
      lambda a, b, y: F.cosine_embedding_loss(a, b, y.sign(), margin=0.1, reduction="sum"),
      Flt(5, 3), Flt(5, 3), Flt(5, requires_grad=False),
      torch_fn=lambda a, b, y: TF.cosine_embedding_loss(a, b, y.sign(), margin=0.1,
                                                        reduction="sum"))

#: CTC targets: two padded label rows (a repeat in the first), their lengths and the inputs'.
_CTC_TARGETS = np.array([[1, 2, 2], [3, 1, 0]])
_CTC_INPUT_LENGTHS, _CTC_TARGET_LENGTHS = [5, 4], [3, 2]
for _reduction in ("mean", "sum", "none"):
    _case(f"ctc_loss_{_reduction}",
          lambda x, r=_reduction: F.ctc_loss(
              x.log_softmax(2), Tensor.from_data(_CTC_TARGETS, backend=x.backend,
                                                 dtype=x.backend.int_dtype),
              _CTC_INPUT_LENGTHS, _CTC_TARGET_LENGTHS, reduction=r),
          Flt(5, 2, 4),
          torch_fn=lambda x, r=_reduction: TF.ctc_loss(
              x.log_softmax(2), torch.from_numpy(_CTC_TARGETS),
              torch.tensor(_CTC_INPUT_LENGTHS), torch.tensor(_CTC_TARGET_LENGTHS), reduction=r))

# ---- grid sampling ----------------------------------------------------------------------------
_both("affine_grid", "affine_grid", Flt(2, 2, 3), size=(2, 3, 4, 5), align_corners=False)
_both("affine_grid_corners", "affine_grid", Flt(2, 2, 3), size=(2, 1, 3, 2),
      align_corners=True)
_both("affine_grid_3d", "affine_grid", Flt(1, 3, 4), size=(1, 1, 2, 3, 4),
      align_corners=False)
for _mode in ("bilinear", "nearest"):
    for _padding in ("zeros", "border", "reflection"):
        for _corners in (False, True):
            _both(f"grid_sample_{_mode}_{_padding}_{'corners' if _corners else 'centers'}",
                  "grid_sample", Flt(2, 3, 4, 5), Flt(2, 3, 2, 2, low=-1.6, high=1.6),
                  mode=_mode, padding_mode=_padding, align_corners=_corners)
