"""Functional neural-network ops with PyTorch's signatures, validated once, then one backend op.

Activations ``[batch, channels, *spatial]``; conv weights ``[out, in / groups, *kernel]``;
transposed-conv weights ``[in, out / groups, *kernel]``; linear weights ``[out, in]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from burnpy.autodiff.function import Function, FunctionCtx
from burnpy.autodiff.modes import no_grad
from burnpy.backend.dtype import DTypeLike
from burnpy.backend.errors import (
    DTypeError,
    InvalidArgumentError,
    KindError,
    ShapeError,
    describe,
)
from burnpy.backend.ops.activation_ops import GeluApproximate
from burnpy.backend.ops.module_ops import (
    ConvOptions,
    ConvTransposeOptions,
    InterpolateMode,
    conv_output_size,
    conv_transpose_output_size,
    pool_output_size,
)

# Re-exported so ``F.cross_entropy``, ``F.dropout``... sit beside the other functional ops.
from burnpy.nn._resize import resize_axis
from burnpy.nn.dropout import dropout as dropout
from burnpy.nn.losses import binary_cross_entropy_with_logits as binary_cross_entropy_with_logits
from burnpy.nn.losses import cross_entropy as cross_entropy
from burnpy.nn.losses import huber_loss as huber_loss
from burnpy.nn.losses import l1_loss as l1_loss
from burnpy.nn.losses import mse_loss as mse_loss
from burnpy.nn.losses import nll_loss as nll_loss
from burnpy.tensor import Tensor
from burnpy.tensor._core import BOOL, FLOAT, INT, QUANTIZED, check_same_backend, new
from burnpy.tensor.checks import broadcast_shapes

IntOrTuple = int | Sequence[int]

__all__ = [
    "IntOrTuple", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "attention", "avg_pool1d",
    "avg_pool2d", "batch_norm", "batch_norm_train", "binary_cross_entropy_with_logits", "conv1d",
    "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "cross_entropy", "dropout", "embedding", "gelu", "hardsigmoid", "huber_loss", "interpolate",
    "l1_loss", "layer_norm", "leaky_relu", "linear", "log_sigmoid", "log_softmax", "logsigmoid",
    "max_pool1d", "max_pool2d", "mse_loss", "nll_loss", "relu", "scaled_dot_product_attention",
    "sigmoid", "silu", "softmax", "softplus", "tanh",
]


def _tuple(op: str, name: str, value: IntOrTuple, n: int, minimum: int) -> tuple[int, ...]:
    out = (value,) * n if isinstance(value, int) else tuple(value)
    if len(out) == 1:
        out = out * n  # a 1-tuple stands for every spatial dim, as in torch
    if len(out) != n or any(not isinstance(v, int) for v in out):
        raise InvalidArgumentError(f"{op}: {name} must be an int or {n} ints, got {value!r}")
    if any(v < minimum for v in out):
        raise InvalidArgumentError(f"{op}: {name} must be >= {minimum}, got {value!r}")
    return out


def _unbatched(x: Tensor, n: int) -> bool:
    """Whether ``x`` is an unbatched ``[c, *spatial]`` input of an ``n``-d op, which torch
    takes as a batch of one."""
    return x.ndim == n + 1


def _same_padding(op: str, x: Tensor, weight: Tensor, stride: IntOrTuple, dilation: IntOrTuple,
                  padding: str) -> tuple[Tensor, tuple[int, ...]]:
    """``x`` and the symmetric padding for conv's ``padding="valid"|"same"``. "same" pads
    ``dilation * (kernel - 1)`` in all, the odd one on the right (as torch), stride 1 only."""
    n = weight.ndim - 2
    if padding == "valid":
        return x, (0,) * n
    if padding != "same":
        raise InvalidArgumentError(f"{op}: padding must be ints, 'valid' or 'same', got "
                                   f"{padding!r}")
    if any(s != 1 for s in _tuple(op, "stride", stride, n, 1)):
        raise InvalidArgumentError(f"{op}: padding='same' needs stride 1, got {stride!r}")
    dil = _tuple(op, "dilation", dilation, n, 1)
    totals = [d * (k - 1) for d, k in zip(dil, weight.shape[2:], strict=True)]
    for i, t in enumerate(totals):
        if t % 2:
            shape = x.shape[:2 + i] + (1,) + x.shape[3 + i:]
            zeros = Tensor.zeros(shape, backend=x.backend, device=x.device, dtype=x.dtype)
            x = Tensor.cat([x, zeros], 2 + i)
    return x, tuple(t // 2 for t in totals)


def _float_input(op: str, x: Tensor, n: int, name: str = "input") -> None:
    if x.kind is not FLOAT:
        raise KindError(f"{op}: {name} must be a float tensor, got {x.kind} ({x.dtype!r})")
    if x.ndim != n + 2:
        raise ShapeError(f"{op}: {name} must be [batch, channels, {n} spatial dim(s)] "
                         f"({n + 2}-d), got shape {describe(x.shape)}")


def _same(op: str, x: Tensor, *others: Tensor | None) -> None:
    """Every given parameter is a float tensor of ``x``'s backend, device and dtype."""
    backend, dtype = x.backend, x.dtype
    for o in others:
        if o is not None:
            if o.backend is not backend or backend.multi_device:
                check_same_backend(op, x, o)
            if o.kind is not FLOAT:
                raise KindError(f"{op}: parameters must be float tensors, got {o.kind}")
            if o.dtype is not dtype:
                raise DTypeError(f"{op}: input is {dtype!r} but a parameter is {o.dtype!r}")


def _float_weight(weight: Tensor) -> Tensor:
    """Quantized weights (``Module.quantize_weights``) enter float-only kernels dequantized."""
    return weight.dequantize() if weight.kind is QUANTIZED else weight


def _conv(op: str, n: int, x: Tensor, weight: Tensor, bias: Tensor | None, stride: IntOrTuple,
          padding: IntOrTuple | str, dilation: IntOrTuple, groups: int) -> Tensor:
    if _unbatched(x, n):
        return _conv(op, n, x.unsqueeze(0), weight, bias, stride, padding, dilation,
                     groups).squeeze(0)
    weight = _float_weight(weight)
    if isinstance(padding, str):
        x, padding = _same_padding(op, x, weight, stride, dilation, padding)
    _float_input(op, x, n)
    _same(op, x, weight, bias)
    st = _tuple(op, "stride", stride, n, 1)
    pad = _tuple(op, "padding", padding, n, 0)
    dil = _tuple(op, "dilation", dilation, n, 1)
    if groups < 1:
        raise InvalidArgumentError(f"{op}: groups must be >= 1, got {groups}")
    if weight.ndim != n + 2:
        raise ShapeError(f"{op}: weight must be [out, in/groups, {n} kernel dim(s)], got "
                         f"{describe(weight.shape)}")
    c_in, c_out = x.shape[1], weight.shape[0]
    if c_in % groups or c_out % groups:
        raise ShapeError(f"{op}: channels in={c_in} and out={c_out} must be divisible by "
                         f"groups={groups}")
    if weight.shape[1] * groups != c_in:
        raise ShapeError(f"{op}: input has {c_in} channels but weight {describe(weight.shape)} "
                         f"expects {weight.shape[1] * groups} (groups={groups})")
    if bias is not None and bias.shape != (c_out,):
        raise ShapeError(f"{op}: bias must have shape ({c_out},), got {describe(bias.shape)}")
    for size, k, s, p, d in zip(x.shape[2:], weight.shape[2:], st, pad, dil, strict=True):
        if conv_output_size(size, k, s, p, d) < 1:
            raise ShapeError(f"{op}: kernel {describe(weight.shape[2:])} (dilation {dil}) is "
                             f"larger than the padded input {describe(x.shape[2:])} "
                             f"(padding {pad})")
    b = x.backend
    out = b.conv(x.primitive, weight.primitive, None if bias is None else bias.primitive,
                 ConvOptions(st, pad, dil, groups))
    return new(b, out, FLOAT)


def conv1d(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride: IntOrTuple = 1,
           padding: IntOrTuple | str = 0, dilation: IntOrTuple = 1, groups: int = 1) -> Tensor:
    """1-d convolution of ``[n, c_in, l]`` (or unbatched ``[c_in, l]``) by
    ``[c_out, c_in/groups, k]``; ``padding`` may be ints, "valid" or "same"."""
    return _conv("conv1d", 1, x, weight, bias, stride, padding, dilation, groups)


def conv2d(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride: IntOrTuple = 1,
           padding: IntOrTuple | str = 0, dilation: IntOrTuple = 1, groups: int = 1) -> Tensor:
    """2-d convolution of ``[n, c_in, h, w]`` (or unbatched ``[c_in, h, w]``) by
    ``[c_out, c_in/groups, kh, kw]``; ``padding`` may be ints, "valid" or "same"."""
    return _conv("conv2d", 2, x, weight, bias, stride, padding, dilation, groups)


def conv3d(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride: IntOrTuple = 1,
           padding: IntOrTuple | str = 0, dilation: IntOrTuple = 1, groups: int = 1) -> Tensor:
    """3-d convolution of ``[n, c_in, d, h, w]`` (or unbatched ``[c_in, d, h, w]``);
    ``padding`` may be ints, "valid" or "same"."""
    return _conv("conv3d", 3, x, weight, bias, stride, padding, dilation, groups)


def _conv_transpose(op: str, n: int, x: Tensor, weight: Tensor, bias: Tensor | None,
                    stride: IntOrTuple, padding: IntOrTuple, output_padding: IntOrTuple,
                    groups: int, dilation: IntOrTuple) -> Tensor:
    if _unbatched(x, n):
        return _conv_transpose(op, n, x.unsqueeze(0), weight, bias, stride, padding,
                               output_padding, groups, dilation).squeeze(0)
    weight = _float_weight(weight)
    _float_input(op, x, n)
    _same(op, x, weight, bias)
    st = _tuple(op, "stride", stride, n, 1)
    pad = _tuple(op, "padding", padding, n, 0)
    out_pad = _tuple(op, "output_padding", output_padding, n, 0)
    dil = _tuple(op, "dilation", dilation, n, 1)
    if groups < 1:
        raise InvalidArgumentError(f"{op}: groups must be >= 1, got {groups}")
    for o, s, d in zip(out_pad, st, dil, strict=True):
        if o >= s and o >= d:
            raise InvalidArgumentError(f"{op}: output_padding {out_pad} must be smaller than "
                                       f"stride {st} or dilation {dil}")
    if weight.ndim != n + 2 or weight.shape[0] != x.shape[1] or x.shape[1] % groups:
        raise ShapeError(f"{op}: weight must be [in={x.shape[1]}, out/groups, kernel...] with "
                         f"in divisible by groups={groups}, got {describe(weight.shape)}")
    c_out = weight.shape[1] * groups
    if bias is not None and bias.shape != (c_out,):
        raise ShapeError(f"{op}: bias must have shape ({c_out},), got {describe(bias.shape)}")
    for size, k, s, p, o, d in zip(x.shape[2:], weight.shape[2:], st, pad, out_pad, dil,
                                   strict=True):
        if conv_transpose_output_size(size, k, s, p, o, d) < 1:
            raise ShapeError(f"{op}: padding {pad} leaves no output for input "
                             f"{describe(x.shape)} and kernel {describe(weight.shape[2:])}")
    b = x.backend
    out = b.conv_transpose(x.primitive, weight.primitive,
                           None if bias is None else bias.primitive,
                           ConvTransposeOptions(st, pad, out_pad, dil, groups))
    return new(b, out, FLOAT)


def conv_transpose1d(x: Tensor, weight: Tensor, bias: Tensor | None = None,
                     stride: IntOrTuple = 1, padding: IntOrTuple = 0,
                     output_padding: IntOrTuple = 0, groups: int = 1,
                     dilation: IntOrTuple = 1) -> Tensor:
    """1-d transposed convolution (torch's argument order)."""
    return _conv_transpose("conv_transpose1d", 1, x, weight, bias, stride, padding,
                           output_padding, groups, dilation)


def conv_transpose2d(x: Tensor, weight: Tensor, bias: Tensor | None = None,
                     stride: IntOrTuple = 1, padding: IntOrTuple = 0,
                     output_padding: IntOrTuple = 0, groups: int = 1,
                     dilation: IntOrTuple = 1) -> Tensor:
    """2-d transposed convolution (torch's argument order)."""
    return _conv_transpose("conv_transpose2d", 2, x, weight, bias, stride, padding,
                           output_padding, groups, dilation)


def conv_transpose3d(x: Tensor, weight: Tensor, bias: Tensor | None = None,
                     stride: IntOrTuple = 1, padding: IntOrTuple = 0,
                     output_padding: IntOrTuple = 0, groups: int = 1,
                     dilation: IntOrTuple = 1) -> Tensor:
    """3-d transposed convolution (torch's argument order)."""
    return _conv_transpose("conv_transpose3d", 3, x, weight, bias, stride, padding,
                           output_padding, groups, dilation)


def _pool_args(op: str, n: int, x: Tensor, kernel_size: IntOrTuple, stride: IntOrTuple | None,
               padding: IntOrTuple, dilation: IntOrTuple,
               ceil_mode: bool) -> tuple[tuple[int, ...], ...]:
    _float_input(op, x, n)
    k = _tuple(op, "kernel_size", kernel_size, n, 1)
    st = k if stride is None or stride == () else _tuple(op, "stride", stride, n, 1)
    pad = _tuple(op, "padding", padding, n, 0)
    dil = _tuple(op, "dilation", dilation, n, 1)
    for kk, p in zip(k, pad, strict=True):
        if p * 2 > kk:
            raise InvalidArgumentError(f"{op}: padding {pad} must be at most half the kernel "
                                       f"{k}")
    for size, kk, s, p, d in zip(x.shape[2:], k, st, pad, dil, strict=True):
        if pool_output_size(size, kk, s, p, d, ceil_mode) < 1:
            raise ShapeError(f"{op}: kernel {k} does not fit the input {describe(x.shape)} "
                             f"with padding {pad}")
    return k, st, pad, dil


def avg_pool1d(x: Tensor, kernel_size: IntOrTuple, stride: IntOrTuple | None = None,
               padding: IntOrTuple = 0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """1-d average pool (torch's defaults: stride = kernel, padding counted); unbatched input
    taken as a batch of one, ``divisor_override`` divides each window's sum instead of its
    size."""
    return _avg_pool("avg_pool1d", 1, x, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


def avg_pool2d(x: Tensor, kernel_size: IntOrTuple, stride: IntOrTuple | None = None,
               padding: IntOrTuple = 0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """2-d average pool; unbatched input taken as a batch of one, ``divisor_override`` divides
    each window's sum instead of its size."""
    return _avg_pool("avg_pool2d", 2, x, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


def _avg_pool(op: str, n: int, x: Tensor, kernel_size: IntOrTuple, stride: IntOrTuple | None,
              padding: IntOrTuple, ceil_mode: bool, count_include_pad: bool,
              divisor_override: int | None) -> Tensor:
    if _unbatched(x, n):
        return _avg_pool(op, n, x.unsqueeze(0), kernel_size, stride, padding, ceil_mode,
                         count_include_pad, divisor_override).squeeze(0)
    k, st, pad, _ = _pool_args(op, n, x, kernel_size, stride, padding, 1, ceil_mode)
    if divisor_override is None:
        return new(x.backend, x.backend.avg_pool(x.primitive, k, st, pad, count_include_pad,
                                                 ceil_mode), FLOAT)
    if divisor_override == 0:
        raise InvalidArgumentError(f"{op}: divisor_override must not be 0")
    mean = new(x.backend, x.backend.avg_pool(x.primitive, k, st, pad, True, ceil_mode), FLOAT)
    # The window sizes the padded mean divided by (windows past the padding are clipped).
    sizes: Tensor | None = None
    for i, (size, kk, s, p) in enumerate(zip(x.shape[2:], k, st, pad, strict=True)):
        out = pool_output_size(size, kk, s, p, 1, ceil_mode)
        counts = [min(o * s - p + kk, size + p) - (o * s - p) for o in range(out)]
        shape = [1] * x.ndim
        shape[2 + i] = out
        axis = Tensor.from_data(counts, backend=x.backend, device=x.device,
                                dtype=x.dtype).reshape(shape)
        sizes = axis if sizes is None else sizes * axis
    assert sizes is not None
    return mean * (sizes / float(divisor_override))


def _max_pool(op: str, n: int, x: Tensor, kernel_size: IntOrTuple, stride: IntOrTuple | None,
              padding: IntOrTuple, dilation: IntOrTuple, ceil_mode: bool,
              return_indices: bool) -> Tensor | tuple[Tensor, Tensor]:
    if _unbatched(x, n):
        out = _max_pool(op, n, x.unsqueeze(0), kernel_size, stride, padding, dilation,
                        ceil_mode, return_indices)
        if isinstance(out, tuple):
            return out[0].squeeze(0), out[1].squeeze(0)
        return out.squeeze(0)
    k, st, pad, dil = _pool_args(op, n, x, kernel_size, stride, padding, dilation, ceil_mode)
    b = x.backend
    if return_indices:
        values, indices = b.max_pool_with_indices(x.primitive, k, st, pad, dil, ceil_mode)
        return new(b, values, FLOAT), new(b, indices, INT)
    return new(b, b.max_pool(x.primitive, k, st, pad, dil, ceil_mode), FLOAT)


def max_pool1d(x: Tensor, kernel_size: IntOrTuple, stride: IntOrTuple | None = None,
               padding: IntOrTuple = 0, dilation: IntOrTuple = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> Any:
    """1-d max pool; with ``return_indices`` also the flat input index of each max."""
    return _max_pool("max_pool1d", 1, x, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


def max_pool2d(x: Tensor, kernel_size: IntOrTuple, stride: IntOrTuple | None = None,
               padding: IntOrTuple = 0, dilation: IntOrTuple = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> Any:
    """2-d max pool; with ``return_indices`` also the flat index within each input plane."""
    return _max_pool("max_pool2d", 2, x, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


def _adaptive(op: str, n: int, x: Tensor, output_size: int | Sequence[int | None]) -> Tensor:
    if _unbatched(x, n):
        return _adaptive(op, n, x.unsqueeze(0), output_size).squeeze(0)
    _float_input(op, x, n)
    # None keeps that dim's input size (torch's rule).
    spec: IntOrTuple = output_size if isinstance(output_size, int) else tuple(
        x.shape[2 + i] if o is None else o
        for i, o in enumerate(output_size) if o is not None or 2 + i < x.ndim)
    size = _tuple(op, "output_size", spec, n, 1)
    return new(x.backend, x.backend.adaptive_avg_pool(x.primitive, size), FLOAT)


def adaptive_avg_pool1d(x: Tensor, output_size: int | Sequence[int | None]) -> Tensor:
    """Average pool to a fixed output length (None keeps the input's)."""
    return _adaptive("adaptive_avg_pool1d", 1, x, output_size)


def adaptive_avg_pool2d(x: Tensor, output_size: int | Sequence[int | None]) -> Tensor:
    """Average pool to a fixed output height and width (None keeps the input's)."""
    return _adaptive("adaptive_avg_pool2d", 2, x, output_size)


_INTERPOLATE_DIMS = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}


def interpolate(x: Tensor, size: IntOrTuple | None = None,
                scale_factor: float | Sequence[float] | None = None, mode: str = "nearest",
                align_corners: bool | None = None,
                recompute_scale_factor: bool | None = None) -> Tensor:
    """Resize ``[n, c, *spatial]`` by ``size`` or ``scale_factor``: "nearest" (1 to 3 spatial
    dims), "linear" (1), "bilinear" or "bicubic" (2, cubic convolution with torch's A=-0.75
    and clamped border taps), "trilinear" (3). As torch's, a given ``scale_factor`` maps output
    coordinates through that factor unless ``recompute_scale_factor=True``, which uses the
    output size."""
    op = "interpolate"
    if mode != "nearest" and mode not in _INTERPOLATE_DIMS:
        raise InvalidArgumentError(f"{op}: mode must be 'nearest', 'linear', 'bilinear', "
                                   f"'bicubic' or 'trilinear', got {mode!r}")
    n = _INTERPOLATE_DIMS.get(mode, min(max(x.ndim - 2, 1), 3))
    _float_input(op, x, n)
    if mode == "nearest" and align_corners:
        raise InvalidArgumentError(f"{op}: align_corners only applies to the linear and cubic "
                                   f"modes")
    if (size is None) == (scale_factor is None):
        raise InvalidArgumentError(f"{op}: give exactly one of size and scale_factor")
    factors: tuple[float, ...] | None = None
    if size is not None:
        out = _tuple(op, "size", size, n, 1)
    else:
        given = (scale_factor,) * n if isinstance(scale_factor, int | float) else tuple(
            scale_factor)  # type: ignore[arg-type]
        if len(given) != n or any(f <= 0 for f in given):
            raise InvalidArgumentError(f"{op}: scale_factor must be {n} positive number(s), "
                                       f"got {scale_factor!r}")
        out = tuple(int(s * f) for s, f in zip(x.shape[2:], given, strict=True))
        if any(o < 1 for o in out):
            raise ShapeError(f"{op}: scale_factor {scale_factor} gives an empty output")
        if not recompute_scale_factor and any(
                s / o != 1 / f for s, o, f in zip(x.shape[2:], out, given, strict=True)):
            factors = tuple(float(f) for f in given)
    if n == 2 and mode in ("nearest", "bilinear") and (factors is None or (
            mode == "bilinear" and align_corners)):
        checked: InterpolateMode = "nearest" if mode == "nearest" else "bilinear"
        return new(x.backend, x.backend.interpolate(x.primitive, out, checked,
                                                    bool(align_corners)), FLOAT)
    axis_mode = "nearest" if mode == "nearest" else "cubic" if mode == "bicubic" else "linear"
    for d, o in enumerate(out):
        x = resize_axis(x, 2 + d, o, None if factors is None else factors[d], axis_mode,
                        bool(align_corners))
    return x


#: Index tensors up to this many elements are bounds-checked on the host after one copy
#: (a decoding step's single token, a training batch): cheaper than two reductions and two
#: scalar reads, and one device synchronization instead of two.
_HOST_BOUNDS_CHECK = 4096


class _RowGradScale(Function):
    """Identity forward; each picked row's gradient times its factor (``embedding``'s
    ``padding_idx`` and ``scale_grad_by_freq``, as torch's backward applies them)."""

    @staticmethod
    def forward(ctx: FunctionCtx, x: Tensor, *, factor: Tensor) -> Tensor:
        """``x`` itself; ``factor`` is kept for the backward."""
        ctx.save_for_backward(factor)
        return x

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor]:
        """The gradient times the factor."""
        (factor,) = ctx.saved_tensors
        assert factor is not None
        return (grad * factor,)

    @staticmethod
    def jvp(ctx: FunctionCtx, tangent: Tensor) -> Tensor:
        """The tangent as it is (the forward is the identity)."""
        return tangent


def embedding(indices: Tensor, weight: Tensor, padding_idx: int | None = None,
              max_norm: float | None = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of ``weight [vocab, dim]`` picked by int ``indices`` of any shape, with torch's
    options: the ``padding_idx`` row gets no gradient; ``max_norm`` first rescales, in place
    and untracked, each referenced row whose ``norm_type``-norm exceeds it; with
    ``scale_grad_by_freq`` each row's gradient is divided by its count in ``indices``.
    A quantized weight (``Module.quantize_weights``) has the picked rows selected while still
    quantized and only those dequantized, not the whole table."""
    op = "embedding"
    check_same_backend(op, weight, indices)
    if sparse:
        raise InvalidArgumentError(f"{op}: sparse=True asks for a sparse gradient, and "
                                   "burnpy's gradients are dense")
    if weight.kind is QUANTIZED and weight.ndim == 2 and indices.kind is INT:
        if padding_idx is not None or max_norm is not None or scale_grad_by_freq:
            raise InvalidArgumentError(f"{op}: padding_idx, max_norm and scale_grad_by_freq "
                                       "need a float weight, not a quantized one")
        _check_vocabulary(op, indices, weight.shape[0])
        b = weight.backend
        picked = b.q_select(weight.primitive, 0,
                            b.int_reshape(indices.primitive, (indices.numel(),)))
        return new(b, b.float_reshape(b.dequantize(picked), (*indices.shape, weight.shape[1])),
                   FLOAT)
    weight = _float_weight(weight)
    if indices.kind is not INT:
        raise KindError(f"{op}: indices must be an int tensor, got {indices.kind}")
    if weight.kind is not FLOAT or weight.ndim != 2:
        raise ShapeError(f"{op}: weight must be a 2-d float tensor, got {weight.kind} "
                         f"{describe(weight.shape)}")
    _check_vocabulary(op, indices, weight.shape[0])
    if padding_idx is not None:
        vocab = weight.shape[0]
        if not -vocab <= padding_idx < vocab:
            raise InvalidArgumentError(f"{op}: padding_idx {padding_idx} is outside the "
                                       f"{vocab} rows of the weight")
        padding_idx %= vocab
    if max_norm is not None:
        _renormalize_rows(weight, indices, max_norm, norm_type)
    rows = new(weight.backend, weight.backend.embedding(weight.primitive, indices.primitive),
               FLOAT)
    if padding_idx is None and not scale_grad_by_freq:
        return rows
    factor = Tensor.ones(indices.shape, backend=weight.backend, device=weight.device,
                         dtype=weight.dtype)
    if scale_grad_by_freq:
        counts = indices.flatten().bincount(minlength=weight.shape[0])
        factor = factor / counts.gather(0, indices.flatten()).reshape(indices.shape).cast(
            weight.dtype)
    if padding_idx is not None:
        factor = factor.mask_fill(indices == padding_idx, 0.0)
    result: Tensor = _RowGradScale.apply(rows, factor=factor.unsqueeze(-1).detach())
    return result


def _renormalize_rows(weight: Tensor, indices: Tensor, max_norm: float,
                      norm_type: float) -> None:
    """torch's ``embedding_renorm_``: each row of ``weight`` that ``indices`` references and
    whose norm exceeds ``max_norm`` is scaled to ``max_norm`` (over ``norm + 1e-7``), in
    place and untracked."""
    with no_grad():
        referenced = indices.flatten().unique()
        assert isinstance(referenced, Tensor)  # no inverse or counts asked for
        rows = weight.detach().index_select(0, referenced)
        norms = rows.norm(norm_type, 1, keepdim=True)
        scale = (max_norm / (norms + 1e-7)).mask_fill(norms <= max_norm, 1.0)
        weight[referenced] = rows * scale


def _check_vocabulary(op: str, indices: Tensor, vocab: int) -> None:
    """Raises unless every index lies in ``[0, vocab)``."""
    count = indices.numel()
    if count:
        b, p = indices.backend, indices.primitive
        if count <= _HOST_BOUNDS_CHECK:  # one small copy to the host, its bounds read there
            host = b.int_into_data(p).array
            if count <= 16:  # a decoding step's few ids: Python's min/max beat two reductions
                values = host.reshape(-1).tolist()
                lo, hi = min(values), max(values)
            else:
                lo, hi = int(host.min()), int(host.max())
        else:  # the bounds reduced on the device, two scalars to the host
            lo = int(b.int_into_data(b.int_min(p)).array.reshape(()))
            hi = int(b.int_into_data(b.int_max(p)).array.reshape(()))
        if lo < 0 or hi >= vocab:
            from burnpy.backend.errors import IndexOutOfBoundsError

            raise IndexOutOfBoundsError(f"{op}: index {lo if lo < 0 else hi} is out of range "
                                        f"for a vocabulary of {vocab}")


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``x @ weight.T + bias`` with ``weight [out, in]``."""
    op = "linear"
    if x.kind is not FLOAT:
        raise KindError(f"{op}: input must be a float tensor, got {x.kind}")
    if weight.kind is QUANTIZED:
        return _quantized_linear(x, weight, bias)
    _same(op, x, weight, bias)
    x_shape, w_shape = x.shape, weight.shape
    if len(w_shape) != 2 or not x_shape or x_shape[-1] != w_shape[1]:
        raise ShapeError(f"{op}: input {describe(x_shape)} does not fit weight "
                         f"{describe(w_shape)} ([out, in] with in = input's last dim)")
    if bias is not None and bias.shape != (w_shape[0],):
        raise ShapeError(f"{op}: bias must have shape ({w_shape[0]},), got "
                         f"{describe(bias.shape)}")
    b = x.backend
    return new(b, b.linear(x.primitive, weight.primitive,
                           None if bias is None else bias.primitive), FLOAT)


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
    y, mean, var = batch_norm_train(x, weight, bias, eps, running_mean, running_var)
    if running_mean is not None and running_var is not None:
        count = x.numel() // x.shape[1]
        running_mean.primitive = (running_mean * (1.0 - momentum)
                                  + mean * momentum).primitive
        running_var.primitive = (running_var * (1.0 - momentum)
                                 + var * (momentum * count / (count - 1))).primitive
    return y


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


def _quantized_linear(x: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    """``linear`` with a quantized ``[out, in]`` weight, weight-only: the activations stay
    float and the backend multiplies them with the quantized weight (``q_linear``). A
    decoding step runs this per layer per token, so the checks read the primitives' shapes
    once and check the bias only when there is one."""
    b = x.backend
    x_shape, w_shape = x.primitive.shape, weight.primitive.shape
    if len(w_shape) != 2 or not x_shape or x_shape[-1] != w_shape[1]:
        raise ShapeError(f"linear: input {describe(x_shape)} does not fit quantized weight "
                         f"{describe(w_shape)}")
    if bias is None:
        return new(b, b.q_linear(x.primitive, weight.primitive, None), FLOAT)
    if (bias.backend is not b or b.multi_device or bias.kind is not FLOAT
            or bias.primitive.dtype != x.primitive.dtype):
        _same("linear", x, bias)  # the full check, naming what differs
    if bias.primitive.shape != (w_shape[0],):
        raise ShapeError(f"linear: bias must have shape ({w_shape[0]},), got "
                         f"{describe(bias.shape)}")
    return new(b, b.q_linear(x.primitive, weight.primitive, bias.primitive), FLOAT)


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor,
                                 attn_mask: Tensor | None = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, *, scale: float | None = None,
                                 enable_gqa: bool = False) -> Tensor:
    """softmax(q k^T * scale + mask) v over ``[..., seq, dim]`` (torch's signature): a bool
    ``attn_mask`` is True where attention is allowed, a float one is added to the scores (and
    receives a gradient); both broadcast to ``[..., L, S]``. ``is_causal`` masks keys after
    each query (top-left aligned); ``enable_gqa`` repeats key/value heads (dim -3) to the
    query's. A row with every key masked gets zero weights, as torch's. ``dropout_p > 0``
    drops weights with the backend's seeded generator (as ``dropout``)."""
    op = "scaled_dot_product_attention"
    if query.kind is not FLOAT:
        raise KindError(f"{op}: query must be a float tensor, got {query.kind} "
                        f"({query.dtype!r})")
    _same(op, query, key, value)
    q_shape, k_shape, v_shape = query.shape, key.shape, value.shape
    if len(q_shape) < 2 or len(k_shape) < 2 or len(v_shape) < 2:
        raise ShapeError(f"{op}: query, key and value must be [..., seq, dim], got "
                         f"{describe(q_shape)}, {describe(k_shape)}, {describe(v_shape)}")
    if k_shape[-1] != q_shape[-1] or k_shape[-2] != v_shape[-2]:
        raise ShapeError(f"{op}: shapes q {describe(q_shape)}, k {describe(k_shape)}, "
                         f"v {describe(v_shape)} do not fit")
    if not 0.0 <= dropout_p <= 1.0:
        raise InvalidArgumentError(f"{op}: dropout_p must be in [0, 1], got {dropout_p}")
    if enable_gqa:
        key, value = _repeat_kv_heads(op, query, key), _repeat_kv_heads(op, query, value)
    batch = broadcast_shapes(op, broadcast_shapes(op, q_shape[:-2], key.shape[:-2]),
                             value.shape[:-2])
    if attn_mask is not None:
        _check_attention_mask(op, query, attn_mask, batch + (q_shape[-2], k_shape[-2]))
    if q_shape[:-2] != batch or key.shape[:-2] != batch or value.shape[:-2] != batch:
        query = query.expand(batch + query.shape[-2:])
        key = key.expand(batch + key.shape[-2:])
        value = value.expand(batch + value.shape[-2:])
    if dropout_p > 0.0 or (attn_mask is not None and attn_mask.kind is FLOAT):
        return _composed_attention(query, key, value, attn_mask, dropout_p, is_causal, scale)
    b = query.backend
    mask = None if attn_mask is None else attn_mask.primitive
    return new(b, b.attention(query.primitive, key.primitive, value.primitive, mask, scale,
                              is_causal), FLOAT)


attention = scaled_dot_product_attention


def _repeat_kv_heads(op: str, query: Tensor, kv: Tensor) -> Tensor:
    """``kv [..., Hkv, S, d]`` with each head repeated ``Hq / Hkv`` times along dim -3
    (torch's ``enable_gqa``)."""
    if query.ndim < 3 or kv.ndim < 3:
        raise ShapeError(f"{op}: enable_gqa needs [..., heads, seq, dim] tensors, got query "
                         f"{describe(query.shape)}, key/value {describe(kv.shape)}")
    heads, kv_heads = query.shape[-3], kv.shape[-3]
    if kv_heads == 0 or heads % kv_heads:
        raise ShapeError(f"{op}: enable_gqa needs the key/value heads ({kv_heads}) to divide "
                         f"the query heads ({heads})")
    return kv if heads == kv_heads else kv.repeat_interleave(heads // kv_heads, -3)


def _check_attention_mask(op: str, query: Tensor, mask: Tensor, scores: tuple[int, ...]) -> None:
    """A bool mask, or a float mask of the query's dtype, broadcastable to ``scores``."""
    check_same_backend(op, query, mask)
    if mask.kind is FLOAT:
        if mask.dtype is not query.dtype:
            raise DTypeError(f"{op}: a float attn_mask must have the query's dtype "
                             f"{query.dtype!r}, got {mask.dtype!r}")
    elif mask.kind is not BOOL:
        raise KindError(f"{op}: attn_mask must be bool (True = attend) or float (added), got "
                        f"{mask.kind} ({mask.dtype!r})")
    try:
        fits = broadcast_shapes(op, scores, mask.shape) == scores
    except ShapeError:
        fits = False
    if not fits:
        raise ShapeError(f"{op}: attn_mask {describe(mask.shape)} does not broadcast to the "
                         f"scores {describe(scores)}")


def _composed_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None,
                        dropout_p: float, is_causal: bool, scale: float | None) -> Tensor:
    """The attention composed of Tensor ops (a float mask then gets its gradient), dropping
    weights after the softmax (torch's); rows with every key at -inf get zero weights."""
    s = 1.0 / float(query.shape[-1]) ** 0.5 if scale is None else scale
    scores = query.matmul(key.swap_dims(-2, -1)) * s
    lq, lk = query.shape[-2], key.shape[-2]
    if is_causal:
        rows = Tensor.arange(lq, backend=query.backend, device=query.device).reshape(lq, 1)
        cols = Tensor.arange(lk, backend=query.backend, device=query.device).reshape(1, lk)
        scores = scores.mask_fill(cols > rows, float("-inf"))
    if attn_mask is not None:
        scores = (scores + attn_mask if attn_mask.kind is FLOAT
                  else scores.mask_fill(~attn_mask, float("-inf")))
    dead = scores.amax(-1, keepdim=True) == float("-inf")
    weights = scores.mask_fill(dead, 0.0).softmax(-1).mask_fill(dead, 0.0)
    return dropout(weights, dropout_p).matmul(value)


def relu(x: Tensor) -> Tensor:
    """max(x, 0) elementwise, any shape."""
    return x.relu()


def gelu(x: Tensor, approximate: GeluApproximate = "none") -> Tensor:
    """x * Phi(x) elementwise (``approximate="tanh"``: the tanh approximation), any shape."""
    return x.gelu(approximate)


def sigmoid(x: Tensor) -> Tensor:
    """1 / (1 + exp(-x)) elementwise, any shape."""
    return x.sigmoid()


def log_sigmoid(x: Tensor) -> Tensor:
    """log(sigmoid(x)) elementwise, computed without overflow for large |x|."""
    return x.log_sigmoid()


logsigmoid = log_sigmoid


def silu(x: Tensor) -> Tensor:
    """x * sigmoid(x) elementwise (swish), any shape."""
    return x.silu()


def tanh(x: Tensor) -> Tensor:
    """The hyperbolic tangent elementwise, any shape."""
    return x.tanh()


def softplus(x: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta * x)) / beta elementwise, any shape; ``x`` itself where
    ``beta * x > threshold`` (torch's linear region)."""
    out = x.softplus(beta)
    return out.mask_where((x * beta) > threshold, x)


def leaky_relu(x: Tensor, negative_slope: float = 0.01) -> Tensor:
    """x where x >= 0, else ``negative_slope * x``; any shape."""
    return x.leaky_relu(negative_slope)


def hardsigmoid(x: Tensor) -> Tensor:
    """clamp(x / 6 + 1/2, 0, 1) (torch's hardsigmoid)."""
    return x.hard_sigmoid(1 / 6, 0.5)


def softmax(x: Tensor, dim: int, *, dtype: DTypeLike | None = None) -> Tensor:
    """exp(x) normalized to sum 1 along ``dim`` (max-subtracted for stability; in ``dtype``
    when given: the input is cast first)."""
    return x.softmax(dim, dtype)


def log_softmax(x: Tensor, dim: int, *, dtype: DTypeLike | None = None) -> Tensor:
    """log(softmax(x, dim)), computed stably along ``dim`` (in ``dtype`` when given: the
    input is cast first)."""
    return x.log_softmax(dim, dtype)


# The rest of torch.nn.functional's surface (issue 16), composed from Tensor ops.
from burnpy.nn import functional_extra as _extra  # noqa: E402
from burnpy.nn.functional_extra import *  # noqa: E402, F403

__all__ += _extra.__all__
