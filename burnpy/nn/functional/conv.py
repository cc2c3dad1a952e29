"""Convolutions and transposed convolutions, validated once, then one backend op.

Inputs ``[batch, channels, *spatial]`` (or unbatched ``[channels, *spatial]``); conv weights
``[out, in / groups, *kernel]``; transposed-conv weights ``[in, out / groups, *kernel]``."""

from __future__ import annotations

from burnpy.backend.errors import InvalidArgumentError, ShapeError, describe
from burnpy.backend.ops.module_ops import (
    ConvOptions,
    ConvTransposeOptions,
    conv_output_size,
    conv_transpose_output_size,
)
from burnpy.nn.functional._common import (
    IntOrTuple,
    _float_input,
    _float_weight,
    _same,
    _tuple,
    _unbatched,
)
from burnpy.tensor import Tensor
from burnpy.tensor._core import FLOAT, new
from burnpy.tensor.autocast_hook import autocast_op


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


@autocast_op("conv1d")
def conv1d(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride: IntOrTuple = 1,
           padding: IntOrTuple | str = 0, dilation: IntOrTuple = 1, groups: int = 1) -> Tensor:
    """1-d convolution of ``[n, c_in, l]`` (or unbatched ``[c_in, l]``) by
    ``[c_out, c_in/groups, k]``; ``padding`` may be ints, "valid" or "same"."""
    return _conv("conv1d", 1, x, weight, bias, stride, padding, dilation, groups)


@autocast_op("conv2d")
def conv2d(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride: IntOrTuple = 1,
           padding: IntOrTuple | str = 0, dilation: IntOrTuple = 1, groups: int = 1) -> Tensor:
    """2-d convolution of ``[n, c_in, h, w]`` (or unbatched ``[c_in, h, w]``) by
    ``[c_out, c_in/groups, kh, kw]``; ``padding`` may be ints, "valid" or "same"."""
    return _conv("conv2d", 2, x, weight, bias, stride, padding, dilation, groups)


@autocast_op("conv3d")
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


@autocast_op("conv_transpose1d")
def conv_transpose1d(x: Tensor, weight: Tensor, bias: Tensor | None = None,
                     stride: IntOrTuple = 1, padding: IntOrTuple = 0,
                     output_padding: IntOrTuple = 0, groups: int = 1,
                     dilation: IntOrTuple = 1) -> Tensor:
    """1-d transposed convolution (torch's argument order)."""
    return _conv_transpose("conv_transpose1d", 1, x, weight, bias, stride, padding,
                           output_padding, groups, dilation)


@autocast_op("conv_transpose2d")
def conv_transpose2d(x: Tensor, weight: Tensor, bias: Tensor | None = None,
                     stride: IntOrTuple = 1, padding: IntOrTuple = 0,
                     output_padding: IntOrTuple = 0, groups: int = 1,
                     dilation: IntOrTuple = 1) -> Tensor:
    """2-d transposed convolution (torch's argument order)."""
    return _conv_transpose("conv_transpose2d", 2, x, weight, bias, stride, padding,
                           output_padding, groups, dilation)


@autocast_op("conv_transpose3d")
def conv_transpose3d(x: Tensor, weight: Tensor, bias: Tensor | None = None,
                     stride: IntOrTuple = 1, padding: IntOrTuple = 0,
                     output_padding: IntOrTuple = 0, groups: int = 1,
                     dilation: IntOrTuple = 1) -> Tensor:
    """3-d transposed convolution (torch's argument order)."""
    return _conv_transpose("conv_transpose3d", 3, x, weight, bias, stride, padding,
                           output_padding, groups, dilation)
