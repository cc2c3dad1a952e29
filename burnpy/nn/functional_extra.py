"""More of ``torch.nn.functional`` (issue 16): activations, padding, normalizations, im2col,
3-d and adaptive pools, distances, losses, CTC and grid sampling.

Each op is a composition of Tensor ops, so it differentiates in reverse and forward mode on
every backend; index maps that depend only on shapes are computed on the host. All are
re-exported by ``burnpy.nn.functional``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import ml_dtypes
import numpy as np

from burnpy.backend.distribution import Distribution
from burnpy.backend.errors import (
    DTypeError,
    InvalidArgumentError,
    KindError,
    ShapeError,
    describe,
)
from burnpy.nn.losses import _check, _check_same_shape, _reduce
from burnpy.tensor import Tensor
from burnpy.tensor._core import FLOAT, INT, check_same_backend, new
from burnpy.tensor.checks import broadcast_shapes

IntOrTuple = int | Sequence[int]

__all__ = [
    "adaptive_avg_pool3d", "adaptive_max_pool1d", "adaptive_max_pool2d", "affine_grid",
    "avg_pool3d", "binary_cross_entropy", "celu", "cosine_embedding_loss", "cosine_similarity",
    "ctc_loss", "elu", "fold", "gaussian_nll_loss", "glu", "grid_sample", "group_norm",
    "hardshrink", "hardswish", "hardtanh", "instance_norm", "kl_div", "local_response_norm",
    "lp_pool1d", "lp_pool2d", "margin_ranking_loss", "max_pool3d", "mish", "normalize",
    "one_hot", "pad", "pairwise_distance", "pixel_shuffle", "pixel_unshuffle",
    "poisson_nll_loss", "prelu", "relu6", "rms_norm", "rrelu", "selu", "smooth_l1_loss",
    "softmin", "softshrink", "softsign", "tanhshrink", "threshold", "triplet_margin_loss",
    "unfold",
]


def _ints(op: str, name: str, value: IntOrTuple, n: int, minimum: int) -> tuple[int, ...]:
    out = (value,) * n if isinstance(value, int) else tuple(value)
    if len(out) != n or any(not isinstance(v, int) for v in out):
        raise InvalidArgumentError(f"{op}: {name} must be an int or {n} ints, got {value!r}")
    if any(v < minimum for v in out):
        raise InvalidArgumentError(f"{op}: {name} must be >= {minimum}, got {value!r}")
    return out


def _float(op: str, x: Tensor, name: str = "input") -> None:
    if x.kind is not FLOAT:
        raise KindError(f"{op}: {name} must be a float tensor, got {x.kind} ({x.dtype!r})")


def _spatial(op: str, x: Tensor, n: int) -> None:
    """``x`` is a float ``[batch, channels, *n spatial]`` tensor."""
    _float(op, x)
    if x.ndim != n + 2:
        raise ShapeError(f"{op}: input must be [batch, channels, {n} spatial dim(s)] "
                         f"({n + 2}-d), got shape {describe(x.shape)}")


def _host(x: Tensor, values: np.ndarray) -> Tensor:
    """A host array (an index map, a mask) as a tensor on ``x``'s backend and device: floats in
    ``x``'s dtype, ints in the backend's int dtype (int32 on WebGPU, which has no int64)."""
    if values.dtype.kind == "f":
        return Tensor.from_data(values, backend=x.backend, device=x.device, dtype=x.dtype)
    if values.dtype.kind in "iu":
        return Tensor.from_data(values, backend=x.backend, device=x.device,
                                dtype=x.backend.int_dtype)
    return Tensor.from_data(values, backend=x.backend, device=x.device)


def _inplace(x: Tensor, y: Tensor, inplace: bool) -> Tensor:
    """torch's ``inplace=True``: the result written into ``x`` (which is returned)."""
    return x.copy_(y) if inplace else y


# ---- activations ----------------------------------------------------------------------------
def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """min(max(x, 0), 6) elementwise."""
    return _inplace(input, input.clamp(0.0, 6.0), inplace)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x for x > 0, ``alpha * (exp(x) - 1)`` below (no overflow: exp sees only x <= 0)."""
    return _inplace(input, input.clamp(min=0.0) + input.clamp(max=0.0).expm1() * alpha,
                    inplace)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """``scale * elu(x, alpha)`` with the self-normalizing constants of Klambauer et al."""
    return _inplace(input, elu(input, _SELU_ALPHA) * _SELU_SCALE, inplace)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    if alpha == 0:
        raise InvalidArgumentError("celu: alpha must not be 0")
    return _inplace(input, input.clamp(min=0.0)
                    + (input.clamp(max=0.0) * (1.0 / alpha)).expm1() * alpha, inplace)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * tanh(softplus(x))."""
    return _inplace(input, input * input.softplus().tanh(), inplace)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * clamp(x / 6 + 1/2, 0, 1) (MobileNetV3's hard swish)."""
    return _inplace(input, input * input.hard_sigmoid(1 / 6, 0.5), inplace)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0,
             inplace: bool = False) -> Tensor:
    """clamp(x, min_val, max_val)."""
    if min_val > max_val:
        raise InvalidArgumentError(f"hardtanh: min_val {min_val} exceeds max_val {max_val}")
    return _inplace(input, input.clamp(min_val, max_val), inplace)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x where |x| > lambd, else 0."""
    return input.mask_fill(input.abs() <= lambd, 0.0)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x - lambd above lambd, x + lambd below -lambd, 0 between."""
    if lambd < 0:
        raise InvalidArgumentError(f"softshrink: lambd must be >= 0, got {lambd}")
    return input - input.clamp(-lambd, lambd)


def tanhshrink(input: Tensor) -> Tensor:
    """x - tanh(x)."""
    return input - input.tanh()


def softsign(input: Tensor) -> Tensor:
    """x / (1 + |x|)."""
    return input / (input.abs() + 1.0)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """x where x > threshold, else ``value``."""
    return _inplace(input, input.mask_fill(input <= threshold, value), inplace)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """Gated linear unit: the first half of ``dim`` times the sigmoid of the second half."""
    if input.ndim == 0 or input.shape[dim] % 2:
        raise ShapeError(f"glu: dim {dim} of input {describe(input.shape)} must have an even "
                         f"size")
    a, b = input.chunk(2, dim)
    return a * b.sigmoid()


def _implicit_dim(ndim: int) -> int:
    """torch's legacy softmax dim when none is given."""
    return 0 if ndim in (0, 1, 3) else 1


def softmin(input: Tensor, dim: int | None = None) -> Tensor:
    """softmax(-x) along ``dim``."""
    return (-input).softmax(_implicit_dim(input.ndim) if dim is None else dim)


def _channel_param(op: str, input: Tensor, weight: Tensor) -> Tensor:
    """A per-channel ``[C]`` (or shared ``[1]`` or 0-d) parameter shaped to broadcast along
    dim 1."""
    channels = input.shape[1] if input.ndim >= 2 else 1
    if weight.ndim > 1 or weight.numel() not in (1, channels):
        raise ShapeError(f"{op}: weight must be 0-d or 1-d with 1 or {channels} elements for "
                         f"input {describe(input.shape)}, got {describe(weight.shape)}")
    if weight.numel() == 1:
        return weight.reshape(())
    return weight.reshape((1, weight.shape[0]) + (1,) * (input.ndim - 2))


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """x for x >= 0, ``weight * x`` below, with a learned slope per channel (dim 1)."""
    slope = _channel_param("prelu", input, weight)
    return input.clamp(min=0.0) + input.clamp(max=0.0) * slope


def rrelu(input: Tensor, lower: float = 1.0 / 8.0, upper: float = 1.0 / 3.0,
          training: bool = False, inplace: bool = False) -> Tensor:
    """Randomized leaky ReLU: in training each negative element gets a slope drawn uniformly
    from [lower, upper) (the backend's seeded generator); in eval the slope (lower+upper)/2."""
    if not 0 <= lower <= upper:
        raise InvalidArgumentError(f"rrelu: need 0 <= lower <= upper, got {lower}, {upper}")
    if not training or lower == upper:
        out = input.leaky_relu((lower + upper) / 2)
    else:
        slope = Tensor.random(input.shape, Distribution.uniform(lower, upper),
                              backend=input.backend, device=input.device, dtype=input.dtype)
        out = input.clamp(min=0.0) + input.clamp(max=0.0) * slope
    return _inplace(input, out, inplace)


# ---- padding --------------------------------------------------------------------------------
def _pad_index(mode: str, size: int, before: int, after: int) -> list[int]:
    """Source positions of a reflect / replicate / circular padded dim of ``size``."""
    positions = np.arange(-before, size + after)
    if mode == "replicate":
        positions = positions.clip(0, size - 1)
    elif mode == "circular":
        positions = positions % size
    else:
        period = 2 * (size - 1)
        positions = np.abs(positions) % period if period else positions * 0
        positions = np.where(positions >= size, period - positions, positions)
    return [int(p) for p in positions]


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant",
        value: float | None = None) -> Tensor:
    """Pad the trailing dims by ``(last_before, last_after, prev_before, ...)``: with
    ``value``, or by reflection, replication or wrapping (negative widths crop, except in
    the wrapping mode, as torch's)."""
    op = "pad"
    widths = tuple(pad)
    if len(widths) % 2 or len(widths) // 2 > input.ndim:
        raise InvalidArgumentError(f"{op}: pad must have an even length of at most "
                                   f"2 * {input.ndim}, got {widths!r}")
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise InvalidArgumentError(f"{op}: mode must be 'constant', 'reflect', 'replicate' "
                                   f"or 'circular', got {mode!r}")
    if mode != "constant" and value:
        raise InvalidArgumentError(f"{op}: value applies only to mode 'constant'")
    out = input
    for i in range(len(widths) // 2):
        dim = input.ndim - 1 - i
        before, after = widths[2 * i], widths[2 * i + 1]
        size = out.shape[dim]
        if mode == "constant":
            if before < 0 or after < 0:
                start, stop = max(-before, 0), size - max(-after, 0)
                if stop < start:
                    raise ShapeError(f"{op}: cropping {widths!r} empties dim {dim} of "
                                     f"{describe(input.shape)}")
                out = out.narrow(dim, start, stop - start)
            parts = []
            for width in (before, after):
                shape = list(out.shape)
                shape[dim] = max(width, 0)
                parts.append(Tensor.full(shape, 0 if value is None else value,
                                         backend=out.backend, device=out.device,
                                         dtype=out.dtype))
            if before > 0 or after > 0:
                out = Tensor.cat([parts[0], out, parts[1]], dim)
            continue
        if mode == "circular" and (before < 0 or after < 0):
            raise InvalidArgumentError(f"{op}: mode 'circular' needs non-negative widths, got "
                                       f"{widths!r}")
        if size + before + after < 1:  # a negative width crops, as torch's
            raise ShapeError(f"{op}: {mode} widths {widths!r} leave dim {dim} of "
                             f"{describe(input.shape)} empty")
        if mode == "reflect" and (before >= size or after >= size):
            raise ShapeError(f"{op}: reflect widths {widths!r} must be smaller than the "
                             f"padded dims of {describe(input.shape)}")
        if mode == "circular" and (before > size or after > size):
            raise ShapeError(f"{op}: circular widths {widths!r} must be at most the padded "
                             f"dims of {describe(input.shape)}")
        if size == 0:
            raise ShapeError(f"{op}: cannot {mode}-pad an empty dim of "
                             f"{describe(input.shape)}")
        if before or after:
            out = out.index_select(dim, _pad_index(mode, size, before, after))
    return out


# ---- normalization --------------------------------------------------------------------------
def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor:
    """``x / max(||x||_p, eps)`` along ``dim``."""
    _float("normalize", input)
    return input / input.norm(p, dim, True).clamp(min=eps)


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """``[*, num_classes]`` ints (the backend's int dtype: int64 as torch's on CPU, int32 on
    WebGPU) with a 1 at each index of the int ``tensor`` (``-1``: one more than the largest)."""
    op = "one_hot"
    if tensor.kind is not INT:
        raise KindError(f"{op}: expects an int tensor of class indices, got {tensor.kind}")
    if tensor.numel():
        lo, hi = int(tensor.min().item()), int(tensor.max().item())
    else:
        lo = hi = 0
    if num_classes == -1:
        if not tensor.numel():
            raise InvalidArgumentError(f"{op}: cannot infer num_classes of an empty tensor")
        num_classes = hi + 1
    if lo < 0 or hi >= num_classes:
        raise InvalidArgumentError(f"{op}: class values must be in [0, {num_classes}), got "
                                   f"[{lo}, {hi}]")
    classes = Tensor.arange(num_classes, backend=tensor.backend, device=tensor.device)
    return (tensor.unsqueeze(-1) == classes).int()


def _affine(op: str, y: Tensor, weight: Tensor | None, bias: Tensor | None) -> Tensor:
    """``y [n, c, *]`` scaled by ``weight [c]`` and shifted by ``bias [c]`` when given."""
    c = y.shape[1]
    shape = (1, c) + (1,) * (y.ndim - 2)
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and t.shape != (c,):
            raise ShapeError(f"{op}: {name} must have shape ({c},), got {describe(t.shape)}")
    if weight is not None:
        y = y * weight.reshape(shape)
    if bias is not None:
        y = y + bias.reshape(shape)
    return y


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalize each group of channels of ``[n, c, *]`` per sample (biased variance), then
    apply the per-channel affine."""
    op = "group_norm"
    _float(op, input)
    if input.ndim < 2 or num_groups < 1 or input.shape[1] % num_groups:
        raise ShapeError(f"{op}: input [n, c, *] {describe(input.shape)} needs c divisible "
                         f"by num_groups={num_groups}")
    n = input.shape[0]
    grouped = input.reshape(n, num_groups, math.prod(input.shape[1:]) // num_groups)
    centered = grouped - grouped.mean(2, keepdim=True)
    y = centered * (centered.square().mean(2, keepdim=True) + eps).rsqrt()
    return _affine(op, y.reshape(input.shape), weight, bias)


def instance_norm(input: Tensor, running_mean: Tensor | None = None,
                  running_var: Tensor | None = None, weight: Tensor | None = None,
                  bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalize each channel of each sample of ``[n, c, *spatial]`` over its spatial dims.

    With ``use_input_stats`` the running statistics, when given, are updated in place with the
    batch average of the per-instance mean and unbiased variance; without, they normalize."""
    op = "instance_norm"
    _float(op, input)
    if input.ndim < 3:
        raise ShapeError(f"{op}: input must be [n, c, *spatial], got {describe(input.shape)}")
    c = input.shape[1]
    stat_shape = (1, c) + (1,) * (input.ndim - 2)
    if not use_input_stats:
        if running_mean is None or running_var is None:
            raise InvalidArgumentError(f"{op}: running_mean and running_var are required "
                                       f"when use_input_stats=False")
        y = ((input - running_mean.reshape(stat_shape))
             * (running_var.reshape(stat_shape) + eps).rsqrt())
        return _affine(op, y, weight, bias)
    dims = tuple(range(2, input.ndim))
    mean = input.mean(dims, keepdim=True)
    centered = input - mean
    var = centered.square().mean(dims, keepdim=True)
    y = centered * (var + eps).rsqrt()
    if running_mean is not None and running_var is not None:
        count = math.prod(input.shape[2:])
        batch_mean = mean.detach().reshape(input.shape[0], c).mean(0)
        batch_var = var.detach().reshape(input.shape[0], c).mean(0) * (count / max(count - 1,
                                                                                   1))
        running_mean.primitive = (running_mean * (1.0 - momentum)
                                  + batch_mean * momentum).primitive
        running_var.primitive = (running_var * (1.0 - momentum)
                                 + batch_var * momentum).primitive
    return _affine(op, y, weight, bias)


def rms_norm(input: Tensor, normalized_shape: int | Sequence[int],
             weight: Tensor | None = None, eps: float | None = None) -> Tensor:
    """``x / sqrt(mean(x^2) + eps) * weight`` over the trailing ``normalized_shape`` dims
    (``eps=None``: the machine epsilon of the input's dtype, as torch): one backend op."""
    op = "rms_norm"
    _float(op, input)
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(
        normalized_shape)
    if not shape or input.ndim < len(shape) or input.shape[input.ndim - len(shape):] != shape:
        raise ShapeError(f"{op}: normalized_shape {describe(shape)} does not match the "
                         f"input's trailing dims (input {describe(input.shape)})")
    if weight is not None and weight.shape != shape:
        raise ShapeError(f"{op}: weight must have shape {describe(shape)}, got "
                         f"{describe(weight.shape)}")
    if weight is not None:
        check_same_backend(op, input, weight)
        if weight.kind is not FLOAT or weight.dtype is not input.dtype:
            raise DTypeError(f"{op}: input is {input.dtype!r} but the weight is "
                             f"{weight.dtype!r}")
    e = float(ml_dtypes.finfo(input.dtype.numpy).eps) if eps is None else eps
    b = input.backend
    return new(b, b.rms_norm(input.primitive, len(shape),
                             None if weight is None else weight.primitive, e), FLOAT)


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75,
                        k: float = 1.0) -> Tensor:
    """``x / (k + alpha * mean of x^2 over size neighbouring channels) ** beta``."""
    op = "local_response_norm"
    _float(op, input)
    if input.ndim < 3 or size < 1:
        raise ShapeError(f"{op}: input must be [n, c, *] (3-d or more) and size >= 1, got "
                         f"{describe(input.shape)}, size={size}")
    widths = [0, 0] * (input.ndim - 2) + [size // 2, (size - 1) // 2]
    squares = pad(input.square(), widths)
    div = squares.unfold(1, size, 1).mean(-1)
    return input / (div * alpha + k).pow(beta)


# ---- layout: pixel shuffle, im2col ----------------------------------------------------------
def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """``[*, c * r^2, h, w]`` to ``[*, c, h * r, w * r]``."""
    r = upscale_factor
    if input.ndim < 3 or r < 1 or input.shape[-3] % (r * r):
        raise ShapeError(f"pixel_shuffle: input [*, c * {r}^2, h, w] expected, got "
                         f"{describe(input.shape)}")
    *lead, c, h, w = input.shape
    k = len(lead)
    x = input.reshape(*lead, c // (r * r), r, r, h, w)
    x = x.permute(*range(k), k, k + 3, k + 1, k + 4, k + 2)
    return x.reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """``[*, c, h * r, w * r]`` to ``[*, c * r^2, h, w]`` (the inverse of pixel_shuffle)."""
    r = downscale_factor
    if input.ndim < 3 or r < 1 or input.shape[-1] % r or input.shape[-2] % r:
        raise ShapeError(f"pixel_unshuffle: input [*, c, h * {r}, w * {r}] expected, got "
                         f"{describe(input.shape)}")
    *lead, c, h, w = input.shape
    k = len(lead)
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    x = x.permute(*range(k), k, k + 2, k + 4, k + 1, k + 3)
    return x.reshape(*lead, c * r * r, h // r, w // r)


def _im2col_args(op: str, kernel_size: IntOrTuple, dilation: IntOrTuple, padding: IntOrTuple,
                 stride: IntOrTuple) -> tuple[tuple[int, ...], ...]:
    return (_ints(op, "kernel_size", kernel_size, 2, 1), _ints(op, "dilation", dilation, 2, 1),
            _ints(op, "padding", padding, 2, 0), _ints(op, "stride", stride, 2, 1))


def unfold(input: Tensor, kernel_size: IntOrTuple, dilation: IntOrTuple = 1,
           padding: IntOrTuple = 0, stride: IntOrTuple = 1) -> Tensor:
    """im2col: the sliding ``kernel_size`` blocks of ``[n, c, h, w]`` as columns of
    ``[n, c * kh * kw, blocks]`` (an unbatched ``[c, h, w]`` gives ``[c * kh * kw, blocks]``)."""
    op = "unfold"
    _float(op, input)
    if input.ndim == 3:
        return unfold(input.unsqueeze(0), kernel_size, dilation, padding, stride).squeeze(0)
    if input.ndim != 4:
        raise ShapeError(f"{op}: input must be [n, c, h, w] or [c, h, w], got "
                         f"{describe(input.shape)}")
    k, d, p, s = _im2col_args(op, kernel_size, dilation, padding, stride)
    x = pad(input, (p[1], p[1], p[0], p[0])) if any(p) else input
    spans = [dd * (kk - 1) + 1 for kk, dd in zip(k, d, strict=True)]
    if spans[0] > x.shape[2] or spans[1] > x.shape[3]:
        raise ShapeError(f"{op}: kernel {k} (dilation {d}) does not fit the padded input "
                         f"{describe(x.shape)}")
    blocks = x.unfold(2, spans[0], s[0]).unfold(3, spans[1], s[1])
    blocks = blocks[..., ::d[0], ::d[1]]  # [n, c, oh, ow, kh, kw]
    n, c, oh, ow = blocks.shape[:4]
    return blocks.permute(0, 1, 4, 5, 2, 3).reshape(n, c * k[0] * k[1], oh * ow)


def fold(input: Tensor, output_size: IntOrTuple, kernel_size: IntOrTuple,
         dilation: IntOrTuple = 1, padding: IntOrTuple = 0, stride: IntOrTuple = 1) -> Tensor:
    """col2im: sums the columns of ``[n, c * kh * kw, blocks]`` back into ``[n, c, *output]``
    (overlaps add up); the adjoint of ``unfold``."""
    op = "fold"
    _float(op, input)
    if input.ndim == 2:
        return fold(input.unsqueeze(0), output_size, kernel_size, dilation, padding,
                    stride).squeeze(0)
    size = _ints(op, "output_size", output_size, 2, 1)
    k, d, p, s = _im2col_args(op, kernel_size, dilation, padding, stride)
    hp, wp = size[0] + 2 * p[0], size[1] + 2 * p[1]
    oh, ow = ((hp - d[0] * (k[0] - 1) - 1) // s[0] + 1, (wp - d[1] * (k[1] - 1) - 1) // s[1] + 1)
    kk = k[0] * k[1]
    if input.ndim != 3 or input.shape[1] % kk or input.shape[2] != oh * ow or oh < 1 or ow < 1:
        raise ShapeError(f"{op}: input [n, c * {kk}, {max(oh, 0) * max(ow, 0)}] expected for "
                         f"output {size}, kernel {k}, got {describe(input.shape)}")
    n, c = input.shape[0], input.shape[1] // kk
    ki, kj, bi, bj = np.meshgrid(np.arange(k[0]), np.arange(k[1]), np.arange(oh),
                                 np.arange(ow), indexing="ij")
    flat = ((bi * s[0] + ki * d[0]) * wp + bj * s[1] + kj * d[1]).reshape(-1)
    index = _host(input, flat.astype(np.int64)).reshape(1, 1, -1).expand(n, c, flat.size)
    zeros = Tensor.zeros((n, c, hp * wp), backend=input.backend, device=input.device,
                         dtype=input.dtype)
    out = zeros.scatter_add(2, index, input.reshape(n, c, kk * oh * ow))
    out = out.reshape(n, c, hp, wp)
    return out[:, :, p[0]:p[0] + size[0], p[1]:p[1] + size[1]]


# ---- pools ----------------------------------------------------------------------------------
def _windows(op: str, x: Tensor, n: int, kernel_size: IntOrTuple, stride: IntOrTuple | None,
             padding: IntOrTuple, dilation: IntOrTuple, ceil_mode: bool,
             fill: float) -> tuple[Tensor, list[int], tuple[tuple[int, ...], ...]]:
    """The pooling windows of ``[b, c, *n]`` as ``[b, c, *out, *kernel]`` (padded with
    ``fill``), the trailing ceil-mode extension of each dim, and (kernel, stride, padding,
    dilation)."""
    _spatial(op, x, n)
    k = _ints(op, "kernel_size", kernel_size, n, 1)
    s = k if stride is None or stride == () else _ints(op, "stride", stride, n, 1)
    p = _ints(op, "padding", padding, n, 0)
    d = _ints(op, "dilation", dilation, n, 1)
    if any(pp * 2 > kk for pp, kk in zip(p, k, strict=True)):
        raise InvalidArgumentError(f"{op}: padding {p} must be at most half the kernel {k}")
    widths: list[int] = []
    extras: list[int] = []
    for i in range(n):
        size, span = x.shape[2 + i], d[i] * (k[i] - 1) + 1
        top = size + 2 * p[i] - span
        count = (-(-top // s[i]) if ceil_mode else top // s[i]) + 1
        if ceil_mode and (count - 1) * s[i] >= size + p[i]:
            count -= 1
        if top < 0 or count < 1:
            raise ShapeError(f"{op}: kernel {k} does not fit the input {describe(x.shape)} "
                             f"with padding {p}")
        extra = max((count - 1) * s[i] + span - (size + 2 * p[i]), 0)
        extras.append(extra)
        widths = [p[i], p[i] + extra, *widths]
    padded = pad(x, widths, value=fill) if any(widths) else x
    for i in range(n):
        span = d[i] * (k[i] - 1) + 1
        padded = padded.unfold(2 + i, span, s[i])
    if any(dd > 1 for dd in d):
        padded = padded[(Ellipsis, *(slice(None, None, dd) for dd in d))]
    return padded, extras, (k, s, p, d)


def avg_pool3d(input: Tensor, kernel_size: IntOrTuple, stride: IntOrTuple | None = None,
               padding: IntOrTuple = 0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """3-d average pool of ``[n, c, d, h, w]`` or unbatched ``[c, d, h, w]`` (torch's
    defaults: stride = kernel)."""
    op = "avg_pool3d"
    if input.ndim == 4:  # unbatched [c, d, h, w], as torch: a batch of one
        return avg_pool3d(input.unsqueeze(0), kernel_size, stride, padding, ceil_mode,
                          count_include_pad, divisor_override).squeeze(0)
    win, extras, (k, s, p, _) = _windows(op, input, 3, kernel_size, stride, padding, 1,
                                         ceil_mode, 0.0)
    total = win.sum((-3, -2, -1))
    if divisor_override is not None:
        if divisor_override == 0:  # torch takes any other int, a negative one too
            raise InvalidArgumentError(f"{op}: divisor_override must not be 0")
        return total / float(divisor_override)
    return total / _divisor(input, k, s, p, extras, count_include_pad)


def _divisor(x: Tensor, k: tuple[int, ...], s: tuple[int, ...], p: tuple[int, ...],
             extras: list[int], count_include_pad: bool) -> Tensor:
    """The cell count of each pooling window: its cells inside the padded (or, without
    ``count_include_pad``, the original) input; ceil mode's extension never counts."""
    inner = [pp if count_include_pad else 0 for pp in p]
    counts = np.pad(np.ones(x.shape[2:]), [(ii, ii) for ii in inner], constant_values=1.0)
    counts = np.pad(counts, [(pp - ii, pp - ii + e) for pp, ii, e in zip(p, inner, extras,
                                                                         strict=True)])
    for i in range(len(k)):
        counts = np.lib.stride_tricks.sliding_window_view(counts, k[i], axis=i)[
            (slice(None),) * i + (slice(None, None, s[i]),)]
    return _host(x, counts.sum(axis=tuple(range(-len(k), 0))))


def max_pool3d(input: Tensor, kernel_size: IntOrTuple, stride: IntOrTuple | None = None,
               padding: IntOrTuple = 0, dilation: IntOrTuple = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> Any:
    """3-d max pool of ``[n, c, d, h, w]`` or unbatched ``[c, d, h, w]``; with
    ``return_indices`` also the flat index of each max within the input's ``d * h * w`` volume
    (in the backend's int dtype, as ``max_pool2d``'s)."""
    op = "max_pool3d"
    if input.ndim == 4:  # unbatched [c, d, h, w], as torch: a batch of one
        out = max_pool3d(input.unsqueeze(0), kernel_size, stride, padding, dilation, ceil_mode,
                         return_indices)
        return (out[0].squeeze(0), out[1].squeeze(0)) if return_indices else out.squeeze(0)
    win, _, (k, s, p, d) = _windows(op, input, 3, kernel_size, stride, padding, dilation,
                                    ceil_mode, -math.inf)
    n, c, od, oh, ow = win.shape[:5]
    values, local = win.reshape(n, c, od, oh, ow, -1).max(-1)
    if not return_indices:
        return values
    sizes = input.shape[2:]
    kz, rest = local // (k[1] * k[2]), local % (k[1] * k[2])
    ky, kx = rest // k[2], rest % k[2]
    grids = np.meshgrid(np.arange(od), np.arange(oh), np.arange(ow), indexing="ij")
    starts = [_host(input, (g * s[i] - p[i]).astype(np.int64)) for i, g in enumerate(grids)]
    z, y, x = (starts[0] + kz * d[0], starts[1] + ky * d[1], starts[2] + kx * d[2])
    return values, (z * sizes[1] + y) * sizes[2] + x


def _adaptive_bounds(size: int, out: int) -> list[tuple[int, int]]:
    """torch's adaptive windows: [floor(i * size / out), ceil((i + 1) * size / out))."""
    return [(i * size // out, -(-(i + 1) * size // out)) for i in range(out)]


def _adaptive(op: str, x: Tensor, n: int, output_size: int | Sequence[int | None] | None,
              reduce: str) -> Tensor:
    """An adaptive pool separable by dims: each dim pooled in turn (mean or max). An
    unbatched ``[c, *spatial]`` input is taken as a batch of one (as torch)."""
    if x.ndim == n + 1:
        return _adaptive(op, x.unsqueeze(0), n, output_size, reduce).squeeze(0)
    _spatial(op, x, n)
    sizes = (output_size,) * n if output_size is None or isinstance(output_size, int) else (
        tuple(output_size))
    if len(sizes) != n:
        raise InvalidArgumentError(f"{op}: output_size must be an int or {n} ints, got "
                                   f"{output_size!r}")
    out = x
    for i, want in enumerate(sizes):
        dim, size = 2 + i, x.shape[2 + i]
        target = size if want is None else want
        if target < 1:
            raise InvalidArgumentError(f"{op}: output_size must be >= 1, got {output_size!r}")
        if target == size:
            continue
        parts = [out.narrow(dim, lo, hi - lo) for lo, hi in _adaptive_bounds(size, target)]
        out = Tensor.cat([pt.mean(dim, keepdim=True) if reduce == "mean"
                          else pt.amax(dim, keepdim=True) for pt in parts], dim)
    return out


def adaptive_avg_pool3d(input: Tensor, output_size: int | Sequence[int | None] | None
                        ) -> Tensor:
    """Average pool ``[n, c, d, h, w]`` to a fixed ``output_size`` (None keeps a dim)."""
    return _adaptive("adaptive_avg_pool3d", input, 3, output_size, "mean")


def _adaptive_max(op: str, x: Tensor, n: int, output_size: int | Sequence[int | None],
                  return_indices: bool) -> Any:
    if not return_indices:
        return _adaptive(op, x, n, output_size, "max")
    if x.ndim == n + 1:
        values, indices = _adaptive_max(op, x.unsqueeze(0), n, output_size, True)
        return values.squeeze(0), indices.squeeze(0)
    _spatial(op, x, n)
    given = (output_size,) * n if isinstance(output_size, int) else tuple(output_size)
    if len(given) != n:
        raise InvalidArgumentError(f"{op}: output_size must be an int or {n} ints, got "
                                   f"{output_size!r}")
    sizes = _ints(op, "output_size", tuple(  # None keeps that dim's input size
        x.shape[2 + i] if o is None else o for i, o in enumerate(given)), n, 1)
    b, c = x.shape[:2]
    values, indices = [], []
    width = x.shape[-1]
    rows = _adaptive_bounds(x.shape[2], sizes[0]) if n == 2 else [(0, 1)]
    for r0, r1 in rows:
        for c0, c1 in _adaptive_bounds(width, sizes[-1]):
            window = x[..., r0:r1, c0:c1] if n == 2 else x[..., c0:c1]
            best, local = window.reshape(b, c, -1).max(-1)
            values.append(best)
            wide = c1 - c0
            indices.append((local // wide + r0) * width + local % wide + c0 if n == 2
                           else local + c0)
    shape = (b, c, *sizes)
    return (Tensor.stack(values, -1).reshape(shape), Tensor.stack(indices, -1).reshape(shape))


def adaptive_max_pool1d(input: Tensor, output_size: int | Sequence[int | None],
                        return_indices: bool = False) -> Any:
    """Max pool ``[n, c, l]`` to a fixed length; with ``return_indices`` also each max's
    input position."""
    return _adaptive_max("adaptive_max_pool1d", input, 1, output_size, return_indices)


def adaptive_max_pool2d(input: Tensor, output_size: int | Sequence[int | None],
                        return_indices: bool = False) -> Any:
    """Max pool ``[n, c, h, w]`` to a fixed size; with ``return_indices`` also each max's
    flat index within the input plane."""
    return _adaptive_max("adaptive_max_pool2d", input, 2, output_size, return_indices)


def _lp_pool(op: str, n: int, input: Tensor, norm_type: float, kernel_size: IntOrTuple,
             stride: IntOrTuple | None, ceil_mode: bool) -> Tensor:
    win, extras, (k, s, p, _) = _windows(op, input, n, kernel_size, stride, 0, 1, ceil_mode,
                                         0.0)
    total = win.pow(float(norm_type)).sum(tuple(range(-n, 0)))
    if any(extras):  # torch's form: a clipped ceil-mode window's mean times the kernel size
        total = total * (math.prod(k) / _divisor(input, k, s, p, extras, True))
    return total.pow(1.0 / norm_type)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size: int, stride: int | None = None,
              ceil_mode: bool = False) -> Tensor:
    """Power-average pool: ``(sum of x^p over each window) ^ (1/p)`` of ``[n, c, l]``."""
    return _lp_pool("lp_pool1d", 1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input: Tensor, norm_type: float, kernel_size: IntOrTuple,
              stride: IntOrTuple | None = None, ceil_mode: bool = False) -> Tensor:
    """Power-average pool: ``(sum of x^p over each window) ^ (1/p)`` of ``[n, c, h, w]``."""
    return _lp_pool("lp_pool2d", 2, input, norm_type, kernel_size, stride, ceil_mode)


# ---- distances ------------------------------------------------------------------------------
def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """``x1 . x2 / (max(||x1||, eps) * max(||x2||, eps))`` along ``dim``, as torch: ``x1`` and
    ``x2`` are broadcast to one shape first, so the norms are over the broadcast ``dim``; the
    clamp at ``eps`` changes the value but not the gradient (torch clamps without grad)."""
    op = "cosine_similarity"
    _float(op, x1, "x1")
    _float(op, x2, "x2")
    shape = broadcast_shapes(op, x1.shape, x2.shape)
    a, b = x1.expand(shape), x2.expand(shape)

    def clamped_norm(x: Tensor) -> Tensor:
        norm = x.square().sum(dim, keepdim=True).sqrt()
        return norm + (norm.clamp(min=eps) - norm).detach()

    return ((a / clamped_norm(a)) * (b / clamped_norm(b))).sum(dim)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    """``||x1 - x2 + eps||_p`` along the last dim."""
    _float("pairwise_distance", x1, "x1")
    diff = x1 - x2 + eps
    return diff.norm(p, -1, keepdim)


# ---- losses ---------------------------------------------------------------------------------
def kl_div(input: Tensor, target: Tensor, *, reduction: str = "mean",
           log_target: bool = False) -> Tensor:
    """KL divergence ``target * (log target - input)`` of log-probabilities ``input``
    (``reduction="batchmean"``: the sum divided by the batch size; 0 where target is 0)."""
    op = "kl_div"
    _check(op, "mean" if reduction == "batchmean" else reduction, input)
    if log_target:
        loss = target.exp() * (target - input)
    else:
        safe = target.mask_fill(target == 0, 1.0)
        loss = target * (safe.log() - input)
    if reduction == "batchmean":
        return loss.sum() / (input.shape[0] if input.ndim else 1)
    return _reduce(loss, reduction)


def smooth_l1_loss(input: Tensor, target: Tensor, *, reduction: str = "mean",
                   beta: float = 1.0) -> Tensor:
    """``0.5 d^2 / beta`` for ``|d| < beta``, ``|d| - beta / 2`` beyond (beta = 0: L1)."""
    op = "smooth_l1_loss"
    _check(op, reduction, input)
    _check_same_shape(op, input, target)
    if beta < 0:
        raise InvalidArgumentError(f"{op}: beta must be >= 0, got {beta}")
    abs_diff = (input - target).abs()
    if beta == 0:
        return _reduce(abs_diff, reduction)
    quadratic = abs_diff.clamp(max=beta)
    return _reduce(quadratic.square() * (0.5 / beta) + (abs_diff - quadratic), reduction)


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                         *, reduction: str = "mean") -> Tensor:
    """``-[y log x + (1 - y) log(1 - x)]`` of probabilities ``x``, each log clamped at -100
    (torch's)."""
    op = "binary_cross_entropy"
    _check(op, reduction, input)
    _check_same_shape(op, input, target)
    loss = -(target * input.log().clamp(min=-100.0)
             + (1.0 - target) * (1.0 - input).log().clamp(min=-100.0))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True,
                     full: bool = False, *, eps: float = 1e-8,
                     reduction: str = "mean") -> Tensor:
    """Poisson negative log likelihood: ``exp(x) - y x`` for a log rate (``log_input``),
    ``x - y log(x + eps)`` for a rate; ``full`` adds Stirling's ``log(y!)`` term for y > 1."""
    op = "poisson_nll_loss"
    _check(op, reduction, input)
    loss = input.exp() - target * input if log_input else input - target * (input + eps).log()
    if full:
        safe = target.mask_fill(target <= 1, 1.0)
        stirling = safe * safe.log() - safe + (safe * (2 * math.pi)).log() * 0.5
        loss = loss + stirling.mask_fill(target <= 1, 0.0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(input: Tensor, target: Tensor, var: Tensor, full: bool = False,
                      eps: float = 1e-6, reduction: str = "mean") -> Tensor:
    """``0.5 (log var + (x - y)^2 / var)`` (+ ``0.5 log 2 pi`` when ``full``), ``var``
    clamped below at ``eps`` for the value only (the gradient passes as torch's)."""
    op = "gaussian_nll_loss"
    _check(op, reduction, input)
    if var.shape != input.shape:
        if input.shape[:-1] == var.shape:
            var = var.unsqueeze(-1)
        elif not (input.shape[:-1] == var.shape[:-1] and var.shape[-1:] == (1,)):
            raise ShapeError(f"{op}: var {describe(var.shape)} does not fit input "
                             f"{describe(input.shape)}")
    if bool((var < 0).any()):
        raise InvalidArgumentError(f"{op}: var has negative entries")
    var = var + (var.clamp(min=eps) - var).detach()
    loss = (var.log() + (input - target).square() / var) * 0.5
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        *, reduction: str = "mean") -> Tensor:
    """``max(0, -y (x1 - x2) + margin)`` for labels ``y`` in {1, -1}."""
    _check("margin_ranking_loss", reduction, input1)
    return _reduce((-target * (input1 - input2) + margin).clamp(min=0.0), reduction)


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor,
                        margin: float = 1.0, p: float = 2.0, eps: float = 1e-6,
                        swap: bool = False, *, reduction: str = "mean") -> Tensor:
    """``max(d(a, p) - d(a, n) + margin, 0)`` with the ``p``-norm pairwise distance
    (``swap``: d(a, n) replaced by d(p, n) where smaller)."""
    _check("triplet_margin_loss", reduction, anchor)
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = d_neg.minimum(pairwise_distance(positive, negative, p, eps))
    return _reduce((d_pos - d_neg + margin).clamp(min=0.0), reduction)


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                          *, reduction: str = "mean") -> Tensor:
    """``1 - cos(x1, x2)`` where ``y = 1``, ``max(0, cos(x1, x2) - margin)`` where
    ``y = -1`` (cosine along the last dim, torch's 1e-12 guard)."""
    _check("cosine_embedding_loss", reduction, input1)
    dim = input1.ndim - 1
    dot = (input1 * input2).sum(dim)
    cos = dot / ((input1.square().sum(dim) + 1e-12) * (input2.square().sum(dim) + 1e-12)).sqrt()
    positive = (1.0 - cos).mask_fill(target != 1, 0.0)
    negative = (cos - margin).clamp(min=0.0).mask_fill(target != -1, 0.0)
    return _reduce(positive + negative, reduction)


_NEG = -1e30  # log(0) in the CTC recursion: finite, so the gradient of logsumexp stays finite


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths: Tensor | Sequence[int],
             target_lengths: Tensor | Sequence[int], blank: int = 0, reduction: str = "mean",
             zero_infinity: bool = False) -> Tensor:
    """Connectionist temporal classification loss of ``log_probs [T, N, C]`` (or ``[T, C]``)
    against ``targets [N, S]`` (or concatenated, 1-d), by the log-space forward recursion.

    ``"mean"`` divides each sample's loss by its target length, then averages; an impossible
    alignment costs inf (0 with ``zero_infinity``)."""
    op = "ctc_loss"
    _check(op, reduction, log_probs)
    if log_probs.ndim == 2:
        out = ctc_loss(log_probs.unsqueeze(1), targets.reshape(1, -1) if targets.ndim == 1
                       else targets, input_lengths, target_lengths, blank, reduction,
                       zero_infinity)
        return out.squeeze(0) if reduction == "none" else out
    if log_probs.ndim != 3:
        raise ShapeError(f"{op}: log_probs must be [T, N, C], got {describe(log_probs.shape)}")
    t_max, n, c = log_probs.shape
    lengths_in = [int(v) for v in (input_lengths.tolist() if isinstance(input_lengths, Tensor)
                                   else input_lengths)]
    lengths_tg = [int(v) for v in (target_lengths.tolist() if isinstance(target_lengths, Tensor)
                                   else target_lengths)]
    labels = np.asarray(targets.to_numpy()).astype(np.int64)
    if len(lengths_in) != n or len(lengths_tg) != n:
        raise ShapeError(f"{op}: input_lengths and target_lengths need {n} entries")
    if not 0 <= blank < c:
        raise InvalidArgumentError(f"{op}: blank {blank} is not a class of {c}")
    offsets = np.concatenate([[0], np.cumsum(lengths_tg)])
    losses = []
    for b in range(n):
        steps, length = lengths_in[b], lengths_tg[b]
        if not 0 < steps <= t_max:
            raise ShapeError(f"{op}: input length {steps} is not in [1, {t_max}]")
        row = labels[b, :length] if labels.ndim == 2 else labels[offsets[b]:offsets[b + 1]]
        if len(row) != length or ((row < 0) | (row >= c) | (row == blank)).any():
            raise InvalidArgumentError(f"{op}: targets of sample {b} must be {length} "
                                       f"non-blank classes in [0, {c})")
        ext = np.full(2 * length + 1, blank, dtype=np.int64)
        ext[1::2] = row
        skip = np.zeros(len(ext), dtype=bool)
        skip[3::2] = row[1:] != row[:-1]  # a label may follow the previous one past a blank
        emissions = log_probs[:steps, b, :].index_select(1, [int(v) for v in ext])
        start = np.full(len(ext), _NEG)
        start[:2] = 0.0
        alpha = emissions[0] + _host(log_probs, start)
        pad1 = Tensor.full((1,), _NEG, backend=log_probs.backend, device=log_probs.device,
                           dtype=log_probs.dtype)
        pad2 = Tensor.full((2,), _NEG, backend=log_probs.backend, device=log_probs.device,
                           dtype=log_probs.dtype)
        skip_mask = _host(log_probs, ~skip)
        for t in range(1, steps):
            one = Tensor.cat([pad1, alpha[:-1]])
            two = Tensor.cat([pad2, alpha[:-2]]).mask_fill(skip_mask, _NEG)
            alpha = Tensor.stack([alpha, one, two]).logsumexp(0) + emissions[t]
        tail = alpha[-2:] if length else alpha[-1:]
        losses.append(-tail.logsumexp(0))
    loss = Tensor.stack(losses)
    impossible = loss > -_NEG / 2
    loss = loss.mask_fill(impossible, 0.0 if zero_infinity else math.inf)
    if reduction == "mean":
        divisor = _host(log_probs, np.maximum(np.asarray(lengths_tg, dtype=np.float64), 1.0))
        return (loss / divisor).mean()
    return _reduce(loss, reduction)


# ---- grid sampling --------------------------------------------------------------------------
def affine_grid(theta: Tensor, size: Sequence[int], align_corners: bool | None = None
                ) -> Tensor:
    """The sampling grid ``[n, h, w, 2]`` (or ``[n, d, h, w, 3]``) of the affine maps
    ``theta [n, 2, 3]`` (``[n, 3, 4]``) over normalized output coordinates in [-1, 1]."""
    op = "affine_grid"
    _float(op, theta, "theta")
    dims = tuple(size)[2:]
    if len(dims) not in (2, 3) or theta.shape != (size[0], len(dims), len(dims) + 1):
        raise ShapeError(f"{op}: theta [n, {len(dims)}, {len(dims) + 1}] expected for size "
                         f"{tuple(size)}, got {describe(theta.shape)}")

    def axis(steps: int) -> np.ndarray:
        if steps == 1:
            return np.zeros(1)
        if align_corners:
            return np.linspace(-1.0, 1.0, steps)
        return (np.arange(steps) * 2 + 1) / steps - 1

    # Coordinates in (x, y[, z]) order: the last spatial dim varies along x.
    mesh = np.meshgrid(*[axis(s) for s in dims], indexing="ij")[::-1]
    base = np.stack([*mesh, np.ones(dims)], axis=-1).reshape(1, -1, len(dims) + 1)
    grid = _host(theta, base) @ theta.mT
    return grid.reshape(size[0], *dims, len(dims))


def _source_coordinate(coord: Tensor, size: int, padding_mode: str,
                       align_corners: bool) -> Tensor:
    """Normalized grid coordinates to input pixel coordinates, folded by ``padding_mode``."""
    pos = (coord + 1.0) * ((size - 1) / 2) if align_corners else ((coord + 1.0) * size - 1.0) / 2
    if padding_mode == "reflection":
        low, span = (0.0, float(size - 1)) if align_corners else (-0.5, float(size))
        if span <= 0:
            return pos * 0.0
        dist = (pos - low).abs()
        flips = (dist / span).floor().detach()
        extra = dist - flips * span
        even = (flips.remainder(2.0) == 0)
        pos = (low + span - extra).mask_where(even, extra + low)
    if padding_mode in ("border", "reflection"):
        pos = pos.clamp(0.0, float(size - 1))
    return pos


def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear",
                padding_mode: str = "zeros", align_corners: bool | None = None) -> Tensor:
    """Sample ``input [n, c, h, w]`` at the normalized (x, y) points of ``grid
    [n, oh, ow, 2]``: "bilinear" or "nearest", outside points read as zeros, the border
    or the reflection."""
    op = "grid_sample"
    _spatial(op, input, 2)
    _float(op, grid, "grid")
    n, c, h, w = input.shape
    if grid.ndim != 4 or grid.shape[0] != n or grid.shape[3] != 2:
        raise ShapeError(f"{op}: grid must be [{n}, oh, ow, 2] for input "
                         f"{describe(input.shape)}, got {describe(grid.shape)}")
    if mode not in ("bilinear", "nearest"):
        raise InvalidArgumentError(f"{op}: mode must be 'bilinear' or 'nearest', got {mode!r}")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise InvalidArgumentError(f"{op}: padding_mode must be 'zeros', 'border' or "
                                   f"'reflection', got {padding_mode!r}")
    oh, ow = grid.shape[1], grid.shape[2]
    ix = _source_coordinate(grid[..., 0], w, padding_mode, bool(align_corners))
    iy = _source_coordinate(grid[..., 1], h, padding_mode, bool(align_corners))
    flat = input.reshape(n, c, h * w)

    def read(xi: Tensor, yi: Tensor) -> Tensor:
        """``input`` at integer float coordinates, zero outside: ``[n, c, oh, ow]``."""
        inside = (xi >= 0) & (xi <= w - 1) & (yi >= 0) & (yi <= h - 1)
        index = (yi.clamp(0, h - 1) * w + xi.clamp(0, w - 1)).cast("int64")
        index = index.reshape(n, 1, oh * ow).expand(n, c, oh * ow)
        values = flat.gather(2, index).reshape(n, c, oh, ow)
        return values.mask_fill(~inside.unsqueeze(1), 0.0)

    if mode == "nearest":
        return read(ix.detach().round(), iy.detach().round())
    x0, y0 = ix.detach().floor(), iy.detach().floor()
    wx1, wy1 = (ix - x0).unsqueeze(1), (iy - y0).unsqueeze(1)
    wx0, wy0 = 1.0 - wx1, 1.0 - wy1
    return (read(x0, y0) * wx0 * wy0 + read(x0 + 1, y0) * wx1 * wy0
            + read(x0, y0 + 1) * wx0 * wy1 + read(x0 + 1, y0 + 1) * wx1 * wy1)
