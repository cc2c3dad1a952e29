"""ONNX linear quantization: QuantizeLinear, DequantizeLinear (per tensor, per axis and
blocked), DynamicQuantizeLinear, and the integer kernels QLinearMatMul, QLinearConv,
MatMulInteger and ConvInteger.

Every op runs as burnpy tensor ops on the node's backend, so DequantizeLinear stays
differentiable in its scale. Integer products are exact: matmuls accumulate in int32 tensors,
and convolutions run in float64, exact for every int8/uint8 product sum below 2**53. Rounding
is half to even and results saturate to the output type, as ONNX defines. burnpy has no
float8 or 4-bit dtypes, so those quantized types raise ``UnsupportedOnnxError``.
"""

from __future__ import annotations

import numpy as np

from burnpy.backend.dtype import DType
from burnpy.onnx.attributes import Attributes
from burnpy.onnx.dtypes import TO_ONNX, burnpy_dtype, onnx_type_name
from burnpy.onnx.ops.nn import _CONV, _window_args
from burnpy.onnx.ops.shape import _pad_tensor
from burnpy.onnx.registry import OpContext, Outputs, onnx_op
from burnpy.tensor import Tensor

Inputs = list[Tensor | None]

#: The integer types a quantized value may have, with their saturation ranges.
_RANGES: dict[DType, tuple[int, int]] = {
    DType.uint8: (0, 255),
    DType.int8: (-128, 127),
    DType.int16: (-32768, 32767),
    DType.uint16: (0, 65535),
}


def _wide_float(ctx: OpContext) -> DType:
    """float64 where the backend has it (exact integer sums), else float32."""
    device = ctx.device if ctx.device is not None else ctx.backend.default_device()
    return DType.float64 if ctx.backend.supports_dtype(device, DType.float64) \
        else DType.float32


def _quantized_dtype(ctx: OpContext, dtype: DType, what: str) -> DType:
    """``dtype`` when it is one of the saturating integer types, else unsupported."""
    if dtype not in _RANGES:
        ctx.unsupported(f"{what} of type {dtype!r} (int8, uint8, int16 and uint16 are)")
    return dtype


def _axis(ctx: OpContext, axis: int, ndim: int) -> int:
    if not -ndim <= axis < max(ndim, 1):
        ctx.error(f"axis {axis} is out of range for rank {ndim}")
    return axis % max(ndim, 1)


def _broadcast_param(ctx: OpContext, param: Tensor, shape: tuple[int, ...], axis: int,
                     block_size: int) -> Tensor:
    """A scale or zero point shaped to broadcast against ``shape``: a scalar as is, a 1-d
    one along ``axis`` (per axis), a full-rank one repeated ``block_size`` times along
    ``axis`` (blocked). ``axis`` may be negative; it is checked only where it is used."""
    if param.numel() == 1:
        return param.reshape([1] * len(shape))
    axis = _axis(ctx, axis, len(shape))
    if not block_size:
        if param.ndim != 1 or param.shape[0] != shape[axis]:
            ctx.error(f"a per-axis scale or zero point must be 1-d of size {shape[axis]} "
                      f"(axis {axis} of {shape}), got shape {param.shape}")
        dims = [1] * len(shape)
        dims[axis] = shape[axis]
        return param.reshape(dims)
    if block_size < 0:
        ctx.error(f"block_size must be positive, got {block_size}")
    blocks = -(-shape[axis] // block_size)
    expected = tuple(blocks if d == axis else s for d, s in enumerate(shape))
    if param.shape != expected:
        ctx.error(f"a blocked scale or zero point must have shape {expected} for input "
                  f"{shape} with block_size {block_size} on axis {axis}, got {param.shape}")
    full = param.repeat_interleave(block_size, dim=axis)
    return full.narrow(axis, 0, shape[axis]) if full.shape[axis] != shape[axis] else full


@onnx_op("QuantizeLinear", 10, attrs=("axis", "block_size", "output_dtype", "precision",
                                      "saturate"))
def _quantize_linear(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX QuantizeLinear: saturate(round_half_even(x / scale) + zero_point), to the zero
    point's type (else ``output_dtype``, else uint8)."""
    x, scale, zero = ctx.arg(inputs, 0), ctx.arg(inputs, 1), ctx.optional(inputs, 2)
    if x.kind != "float" or scale.kind != "float":
        ctx.error(f"x and y_scale must be float, got {x.dtype!r} and {scale.dtype!r}")
    code = attrs.int("output_dtype", 0)
    if zero is not None:
        out = zero.dtype
        if code and TO_ONNX.get(out) != code:
            ctx.error(f"output_dtype {onnx_type_name(code)} differs from the zero point's "
                      f"type {out!r}")
    else:
        out = burnpy_dtype(code, ctx.label) if code else DType.uint8
    out = _quantized_dtype(ctx, out, "a quantized output")
    axis = attrs.int("axis", 1)
    block = attrs.int("block_size", 0)
    precision = attrs.int("precision", 0)
    compute = burnpy_dtype(precision, ctx.label) if precision else \
        x.dtype if x.dtype == scale.dtype else \
        DType.float64 if DType.float64 in (x.dtype, scale.dtype) else DType.float32
    ratio = x.cast(compute) / _broadcast_param(ctx, scale, x.shape, axis, block).cast(compute)
    # Integers below 2**24 are exact in float32: round, shift and saturate there.
    wide = DType.float64 if compute is DType.float64 else DType.float32
    q = ratio.round().cast(wide)
    if zero is not None:
        q = q + _broadcast_param(ctx, zero, x.shape, axis, block).cast(wide)
    low, high = _RANGES[out]
    return q.clamp(low, high).cast(out)


@onnx_op("DequantizeLinear", 10, attrs=("axis", "block_size", "output_dtype"))
def _dequantize_linear(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX DequantizeLinear: (x - zero_point) * scale in float32 (float64 for int32 x),
    returned in the scale's type (or ``output_dtype``)."""
    x, scale, zero = ctx.arg(inputs, 0), ctx.arg(inputs, 1), ctx.optional(inputs, 2)
    if x.kind != "int" or x.dtype not in (*_RANGES, DType.int32):
        ctx.unsupported(f"dequantizing {x.dtype!r}")
    if scale.kind != "float":
        ctx.error(f"x_scale must be float, got {scale.dtype!r}")
    if zero is not None and zero.dtype != x.dtype:
        ctx.error(f"x_zero_point's type {zero.dtype!r} differs from x's {x.dtype!r}")
    code = attrs.int("output_dtype", 0)
    out = burnpy_dtype(code, ctx.label) if code else scale.dtype
    axis = attrs.int("axis", 1)
    block = attrs.int("block_size", 0)
    compute = DType.float64 if x.dtype is DType.int32 else DType.float32
    shifted = x.cast(DType.float32).cast(compute)
    if zero is not None:
        shifted = shifted - _broadcast_param(ctx, zero, x.shape, axis, block).cast(compute)
    return (shifted * _broadcast_param(ctx, scale, x.shape, axis, block).cast(compute)
            ).cast(out)


@onnx_op("DynamicQuantizeLinear", 11)
def _dynamic_quantize_linear(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX DynamicQuantizeLinear: uint8 quantization with the scale and zero point that map
    [min(x, 0), max(x, 0)] onto [0, 255]; returns (y, y_scale, y_zero_point). The two
    scalars are computed on the host in float32, as ONNX specifies them."""
    x = ctx.arg(inputs, 0)
    if x.dtype is not DType.float32:
        ctx.unsupported(f"input of type {x.dtype!r} (ONNX defines float32)")
    high = np.float32(max(0.0, float(x.max().item()))) if x.numel() else np.float32(0)
    low = np.float32(min(0.0, float(x.min().item()))) if x.numel() else np.float32(0)
    scale = np.float32(1.0 if high == low else high - low) / np.float32(255)
    zero = np.rint(np.clip(np.float32(0) - low / scale, 0, 255))
    y = (x / ctx.constant(scale, np.float32)).round() + float(zero)
    return (y.clamp(0, 255).cast(DType.uint8), ctx.constant(scale, np.float32),
            ctx.constant(zero, np.uint8))


def _centered(ctx: OpContext, q: Tensor, zero: Tensor | None, dims: list[int],
              what: str) -> Tensor:
    """``q - zero`` in int32; a 1-d zero point of more than one element is reshaped to
    ``dims`` (per row or per column)."""
    if q.dtype not in (DType.int8, DType.uint8):
        ctx.unsupported(f"{what} of type {q.dtype!r}")
    out = q.cast(DType.int32)
    if zero is None:
        return out
    if zero.dtype != q.dtype:
        ctx.error(f"{what}'s zero point type {zero.dtype!r} differs from {q.dtype!r}")
    z = zero.cast(DType.int32)
    return out - (z.reshape(dims) if z.numel() > 1 else z.reshape([]))


@onnx_op("MatMulInteger", 10)
def _matmul_integer(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX MatMulInteger: (A - a_zero_point) @ (B - b_zero_point) accumulated in int32
    (a per-row zero point of A, a per-column one of B)."""
    a, b = ctx.arg(inputs, 0), ctx.arg(inputs, 1)
    a32 = _centered(ctx, a, ctx.optional(inputs, 2), [-1, 1], "A")
    b32 = _centered(ctx, b, ctx.optional(inputs, 3), [1, -1], "B")
    return a32 @ b32


def _scale_dims(ctx: OpContext, scale: Tensor, dims: list[int], dtype: DType) -> Tensor:
    """A scale as ``dtype``, a 1-d one of several elements reshaped to ``dims``."""
    if scale.kind != "float":
        ctx.error(f"scales must be float, got {scale.dtype!r}")
    return (scale.reshape(dims) if scale.numel() > 1 else scale.reshape([])).cast(dtype)


def _requantize(ctx: OpContext, acc: Tensor, multiplier: Tensor, zero: Tensor | None,
                out: DType) -> Tensor:
    """saturate(round_half_even(acc * multiplier + zero)) as ``out``, in float64."""
    wide = _wide_float(ctx)
    y = acc.cast(wide) * multiplier.cast(wide)
    if zero is not None:
        y = y + zero.cast(wide).reshape([])
    low, high = _RANGES[_quantized_dtype(ctx, out, "a quantized output")]
    return y.round().clamp(low, high).cast(out)


@onnx_op("QLinearMatMul", 10)
def _qlinear_matmul(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX QLinearMatMul: the int32 product of the centered operands, rescaled by
    a_scale * b_scale / y_scale (computed in the scales' type) and requantized."""
    a, b = ctx.arg(inputs, 0), ctx.arg(inputs, 3)
    a_scale, b_scale, y_scale = ctx.arg(inputs, 1), ctx.arg(inputs, 4), ctx.arg(inputs, 6)
    y_zero = ctx.optional(inputs, 7)
    acc = _centered(ctx, a, ctx.optional(inputs, 2), [-1, 1], "a") @ \
        _centered(ctx, b, ctx.optional(inputs, 5), [1, -1], "b")
    dtype = a_scale.dtype
    multiplier = (_scale_dims(ctx, a_scale, [-1, 1], dtype)
                  * _scale_dims(ctx, b_scale, [1, -1], dtype)
                  / _scale_dims(ctx, y_scale, [], dtype))
    return _requantize(ctx, acc, multiplier, y_zero, a.dtype if y_zero is None else y_zero.dtype)


def _integer_conv(ctx: OpContext, x: Tensor, w: Tensor, x_zero: Tensor | None,
                  w_zero: Tensor | None, attrs: Attributes) -> Tensor:
    """The convolution of the centered operands, exact in float64 (an int32-valued tensor
    of the wide float type); a 1-d weight zero point is per output channel."""
    if w.dtype not in (DType.int8, DType.uint8):
        ctx.unsupported(f"weights of type {w.dtype!r}")
    wide = _wide_float(ctx)
    xc = _centered(ctx, x, x_zero, [], "x").cast(wide)
    if w_zero is not None and w_zero.numel() > 1:
        w_zero = w_zero.reshape([-1] + [1] * (w.ndim - 1))
    wc = (w.cast(DType.int32) if w_zero is None
          else w.cast(DType.int32) - w_zero.cast(DType.int32)).cast(wide)
    n, _, strides, dilations, pads = _window_args(ctx, xc, attrs, list(w.shape[2:]))
    if any(b or e for b, e in pads):
        xc = _pad_tensor(ctx, xc, [(0, 0), (0, 0), *pads], "constant", 0.0)
    return _CONV[n](xc, wc, None, strides, 0, dilations, attrs.int("group", 1))


_CONV_ATTRS = ("auto_pad", "dilations", "group", "kernel_shape", "pads", "strides")


@onnx_op("ConvInteger", 10, attrs=_CONV_ATTRS)
def _conv_integer(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX ConvInteger: the int32 convolution of (x - x_zero_point) and
    (w - w_zero_point)."""
    x, w = ctx.arg(inputs, 0), ctx.arg(inputs, 1)
    y = _integer_conv(ctx, x, w, ctx.optional(inputs, 2), ctx.optional(inputs, 3), attrs)
    return y.round().cast(DType.int32)


@onnx_op("QLinearConv", 10, attrs=_CONV_ATTRS)
def _qlinear_conv(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX QLinearConv: the integer convolution plus the int32 bias, rescaled by
    x_scale * w_scale / y_scale (w_scale per output channel or per tensor) and
    requantized."""
    x, w, bias = ctx.arg(inputs, 0), ctx.arg(inputs, 3), ctx.optional(inputs, 8)
    x_scale, w_scale, y_scale = ctx.arg(inputs, 1), ctx.arg(inputs, 4), ctx.arg(inputs, 6)
    y_zero = ctx.optional(inputs, 7)
    acc = _integer_conv(ctx, x, w, ctx.optional(inputs, 2), ctx.optional(inputs, 5), attrs)
    if bias is not None:
        if bias.dtype is not DType.int32:
            ctx.error(f"the bias must be int32, got {bias.dtype!r}")
        acc = acc + bias.cast(acc.dtype).reshape([-1] + [1] * (acc.ndim - 2))
    dtype = x_scale.dtype
    per_channel = [-1] + [1] * (acc.ndim - 2)
    multiplier = (_scale_dims(ctx, x_scale, [], dtype)
                  * _scale_dims(ctx, w_scale, per_channel, dtype)
                  / _scale_dims(ctx, y_scale, [], dtype))
    return _requantize(ctx, acc, multiplier, y_zero, x.dtype if y_zero is None else y_zero.dtype)

