"""Normalizations with torch's signatures: batch, layer and RMS norm are one backend op each;
group, instance and local response norm and ``normalize`` are compositions of Tensor ops."""

from __future__ import annotations

import math
from collections.abc import Sequence

import ml_dtypes

from burnpy.backend.errors import DTypeError, InvalidArgumentError, KindError, ShapeError, describe
from burnpy.nn.functional._common import _float, _same
from burnpy.nn.functional.padding import pad
from burnpy.tensor import Tensor
from burnpy.tensor._core import FLOAT, check_same_backend, new
from burnpy.tensor.autocast_hook import autocast_op


def batch_norm(x: Tensor, running_mean: Tensor | None = None,
               running_var: Tensor | None = None, weight: Tensor | None = None,
               bias: Tensor | None = None, training: bool = False, momentum: float = 0.1,
               eps: float = 1e-5) -> Tensor:
    """Normalize each channel (dim 1) of ``x [n, c, *]`` (torch's ``batch_norm``). In
    training the batch's mean and biased variance are used and, when given, ``running_mean``
    and ``running_var`` are updated in place (the variance unbiased, weighted by
    ``momentum``); otherwise the running statistics are used."""
    op = "batch_norm"
    if x.shape == (0,):
        return x * 1.0  # torch's legacy empty tensor: nothing to normalize
    if not training:
        if running_mean is None or running_var is None:
            raise InvalidArgumentError(f"{op}: running_mean and running_var are required "
                                       f"when training=False")
        _check_batch_norm(op, x, running_mean, running_var, weight, bias)
        c = x.shape[1]
        shape = (1, c) + (1,) * (x.ndim - 2)
        scale = (running_var + eps).rsqrt()
        if weight is not None:
            scale = scale * weight
        shift = -running_mean * scale
        if bias is not None:
            shift = shift + bias
        return x * scale.reshape(shape) + shift.reshape(shape)
    if running_mean is not None and running_var is not None and not 0.0 <= momentum <= 1.0:
        raise InvalidArgumentError(f"{op}: momentum must be in [0, 1], got {momentum}")
    if x.numel() == 0 and x.ndim >= 2:
        # torch's empty batch: an empty output, running statistics left as they are, and
        # zero gradients for weight and bias (their affine map over no elements)
        _check_batch_norm(op, x, running_mean, running_var, weight, bias)
        shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
        y = x * 1.0
        if weight is not None:
            y = y * weight.reshape(shape)
        return y if bias is None else y + bias.reshape(shape)
    y, mean, var = batch_norm_train(x, weight, bias, eps, running_mean, running_var)
    if running_mean is not None and running_var is not None:
        new_mean, new_var = running_averages(running_mean, running_var, mean, var,
                                             x.numel() // x.shape[1], momentum)
        running_mean.primitive, running_var.primitive = new_mean.primitive, new_var.primitive
    return y


def running_averages(running_mean: Tensor, running_var: Tensor, mean: Tensor, var: Tensor,
                     count: int, factor: float) -> tuple[Tensor, Tensor]:
    """Batch norm's running statistics after a batch (torch's update): averages weighted by
    ``factor`` of the batch's mean and of its variance made unbiased over the ``count``
    values each channel had."""
    # the count first: a float times a symbolic dim reads its plain value (burnpy.ir.symbolic)
    return (running_mean * (1.0 - factor) + mean * factor,
            running_var * (1.0 - factor) + var * (count * factor / (count - 1)))


def batch_norm_train(x: Tensor, weight: Tensor | None, bias: Tensor | None, eps: float,
                     *stats: Tensor | None) -> tuple[Tensor, Tensor, Tensor]:
    """Training-mode batch normalization, one fused backend op: ``(y, mean [c], var [c])``
    with the batch's mean and biased variance (untracked: they feed running averages).
    ``stats`` are running statistics, only validated here."""
    op = "batch_norm"
    _check_batch_norm(op, x, *stats, weight, bias)
    if x.numel() // x.shape[1] <= 1:
        raise ShapeError(f"{op}: need more than 1 value per channel in training, got input "
                         f"{describe(x.shape)}")
    b = x.backend
    y, mean, var = b.batch_norm(x.primitive, None if weight is None else weight.primitive,
                                None if bias is None else bias.primitive, eps)
    return new(b, y, FLOAT), new(b, mean, FLOAT), new(b, var, FLOAT)


@autocast_op("layer_norm")
def layer_norm(x: Tensor, normalized_shape: int | Sequence[int], weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalize over the trailing ``normalized_shape`` dims (torch's ``layer_norm``), then
    scale by ``weight`` and shift by ``bias`` (each of that shape): one backend op."""
    op = "layer_norm"
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if x.kind is not FLOAT:
        raise KindError(f"{op}: input must be a float tensor, got {x.kind} ({x.dtype!r})")
    x_shape = x.shape
    if not shape or len(x_shape) < len(shape) or x_shape[len(x_shape) - len(shape):] != shape:
        raise ShapeError(f"{op}: normalized_shape {describe(shape)} does not match the "
                         f"input's trailing dims (input {describe(x_shape)})")
    _same(op, x, weight, bias)
    if weight is not None and weight.shape != shape:
        raise ShapeError(f"{op}: weight must have shape {describe(shape)}, got "
                         f"{describe(weight.shape)}")
    if bias is not None and bias.shape != shape:
        raise ShapeError(f"{op}: bias must have shape {describe(shape)}, got "
                         f"{describe(bias.shape)}")
    b = x.backend
    return new(b, b.layer_norm(x.primitive, len(shape),
                               None if weight is None else weight.primitive,
                               None if bias is None else bias.primitive, eps), FLOAT)


def _check_batch_norm(op: str, x: Tensor, *per_channel: Tensor | None) -> None:
    """``x`` is a float ``[n, c, *]`` tensor and every per-channel tensor given is ``[c]``."""
    if x.kind is not FLOAT:
        raise KindError(f"{op}: input must be a float tensor, got {x.kind} ({x.dtype!r})")
    if x.ndim < 2:
        raise ShapeError(f"{op}: input must be [batch, channels, *], got shape "
                         f"{describe(x.shape)}")
    _same(op, x, *per_channel)
    for t in per_channel:
        if t is not None and t.shape != (x.shape[1],):
            raise ShapeError(f"{op}: per-channel tensors must have shape ({x.shape[1]},) for "
                             f"input {describe(x.shape)}, got {describe(t.shape)}")


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


@autocast_op("group_norm")
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


@autocast_op("local_response_norm")
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


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor:
    """``x / max(||x||_p, eps)`` along ``dim``."""
    _float("normalize", input)
    return input / input.norm(p, dim, True).clamp(min=eps)
