"""Elementwise ONNX operators: arithmetic, comparisons, logic, math functions, activations,
casts. Binary ops broadcast multidirectionally (NumPy's rule), which burnpy's ops follow."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from burnpy.backend.dtype import DType
from burnpy.onnx.attributes import Attributes
from burnpy.onnx.dtypes import burnpy_dtype, index_dtype
from burnpy.onnx.registry import OpContext, Outputs, onnx_op
from burnpy.tensor import Tensor

Inputs = list[Tensor | None]


def _unary(op_type: str, since: int, fn: Callable[[Tensor], Tensor],
           float_only: bool = True) -> None:
    """Register ``op_type(x) = fn(x)``."""

    def run(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
        x = ctx.arg(inputs, 0)
        if float_only and x.kind != "float":
            ctx.unsupported(f"input dtype {x.dtype!r}")
        return fn(x)

    run.__doc__ = f"ONNX {op_type}."
    onnx_op(op_type, since)(run)


for _name, _fn in {
    "Sqrt": Tensor.sqrt, "Exp": Tensor.exp, "Log": Tensor.log, "Reciprocal": Tensor.recip,
    "Floor": Tensor.floor, "Ceil": Tensor.ceil, "Round": Tensor.round, "Sin": Tensor.sin,
    "Cos": Tensor.cos, "Tan": Tensor.tan, "Asin": Tensor.asin, "Acos": Tensor.acos,
    "Atan": Tensor.atan, "Sinh": Tensor.sinh, "Cosh": Tensor.cosh, "Asinh": Tensor.asinh,
    "Acosh": Tensor.acosh, "Atanh": Tensor.atanh, "Erf": Tensor.erf, "Relu": Tensor.relu,
    "Sigmoid": Tensor.sigmoid, "Tanh": Tensor.tanh, "Softplus": Tensor.softplus,
    "Softsign": lambda x: x / (x.abs() + 1.0),
    "HardSwish": lambda x: x * (x * (1 / 6) + 0.5).clamp(0.0, 1.0),
    "Mish": lambda x: x * x.softplus().tanh(),
}.items():
    _unary(_name, 6, _fn)
for _name, _fn in {"Abs": Tensor.abs, "Neg": Tensor.neg, "Sign": Tensor.sign}.items():
    _unary(_name, 6, _fn, float_only=False)


@onnx_op("Erf", 13)
def _erf_int(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX Erf from opset 13, which also takes integers (the result rounds to their type)."""
    x = ctx.arg(inputs, 0)
    return x.erf() if x.kind == "float" else x.float().erf().round().cast(x.dtype)


@onnx_op("Relu", 14)
def _relu_int(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX Relu from opset 14, which also takes signed integers."""
    x = ctx.arg(inputs, 0)
    return x.relu() if x.kind == "float" else x.clamp(min=0)


@onnx_op("Identity", 1)
def _identity(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX Identity."""
    return ctx.arg(inputs, 0)


@onnx_op("IsNaN", 9)
def _isnan(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX IsNaN."""
    return ctx.arg(inputs, 0).isnan()


@onnx_op("IsInf", 10, attrs=("detect_negative", "detect_positive"))
def _isinf(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX IsInf: infinities of the signs the attributes ask for."""
    x = ctx.arg(inputs, 0)
    inf = x.isinf()
    if not attrs.int("detect_positive", 1):
        inf = inf.logical_and(x < 0)
    if not attrs.int("detect_negative", 1):
        inf = inf.logical_and(x > 0)
    return inf


# ---- activations with attributes ----------------------------------------------------------
@onnx_op("LeakyRelu", 6, attrs=("alpha",))
def _leaky_relu(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX LeakyRelu."""
    return ctx.arg(inputs, 0).leaky_relu(attrs.float("alpha", 0.01))


@onnx_op("Elu", 6, attrs=("alpha",))
def _elu(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX Elu: x above 0, alpha * (exp(x) - 1) below."""
    x = ctx.arg(inputs, 0)
    alpha = attrs.float("alpha", 1.0)
    return x.mask_where(x <= 0, (x.clamp(max=0.0).exp() - 1.0) * alpha)


@onnx_op("Celu", 12, attrs=("alpha",))
def _celu(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX Celu: max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    x = ctx.arg(inputs, 0)
    alpha = attrs.float("alpha", 1.0)
    return x.clamp(min=0.0) + ((x / alpha).exp() - 1.0).clamp(max=0.0) * alpha


@onnx_op("Selu", 6, attrs=("alpha", "gamma"))
def _selu(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX Selu."""
    x = ctx.arg(inputs, 0)
    alpha = attrs.float("alpha", 1.67326319217681884765625)
    gamma = attrs.float("gamma", 1.05070102214813232421875)
    return x.mask_where(x <= 0, (x.clamp(max=0.0).exp() - 1.0) * alpha) * gamma


@onnx_op("ThresholdedRelu", 10, attrs=("alpha",))
def _thresholded_relu(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX ThresholdedRelu: x above alpha, else 0."""
    x = ctx.arg(inputs, 0)
    return x.mask_fill(x <= attrs.float("alpha", 1.0), 0.0)


@onnx_op("HardSigmoid", 6, attrs=("alpha", "beta"))
def _hard_sigmoid(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX HardSigmoid: clip(alpha * x + beta, 0, 1)."""
    x = ctx.arg(inputs, 0)
    return (x * attrs.float("alpha", 0.2) + attrs.float("beta", 0.5)).clamp(0.0, 1.0)


@onnx_op("Gelu", 20, attrs=("approximate",))
def _gelu(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX Gelu (exact, or the tanh approximation)."""
    approximate = attrs.string("approximate", "none")
    if approximate not in ("none", "tanh"):
        ctx.unsupported(f"approximate={approximate!r}", "approximate")
    return ctx.arg(inputs, 0).gelu(approximate)  # type: ignore[arg-type]


@onnx_op("PRelu", 7)
def _prelu(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX PRelu: x above 0, slope * x below (slope broadcast to x)."""
    x, slope = ctx.arg(inputs, 0), ctx.arg(inputs, 1)
    return x.mask_where(x < 0, x * slope)


@onnx_op("Clip", 6, attrs=("min", "max"))
def _clip_attrs(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX Clip before opset 11: the bounds are attributes."""
    return ctx.arg(inputs, 0).clamp(attrs.float("min", -math.inf), attrs.float("max", math.inf))


@onnx_op("Clip", 11)
def _clip(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX Clip from opset 11: the bounds are optional scalar inputs."""
    x = ctx.arg(inputs, 0)
    lo, hi = ctx.optional(inputs, 1), ctx.optional(inputs, 2)
    if lo is not None:
        x = x.maximum(lo.cast(x.dtype).expand_as(x))
    if hi is not None:
        x = x.minimum(hi.cast(x.dtype).expand_as(x))
    return x


# ---- binary arithmetic --------------------------------------------------------------------
def _same_dtype(ctx: OpContext, a: Tensor, b: Tensor) -> None:
    if a.dtype is not b.dtype:
        ctx.error(f"inputs of different dtypes {a.dtype!r} and {b.dtype!r}")


def _int_div(a: Tensor, b: Tensor) -> Tensor:
    """Integer division truncating toward zero (C's rule, which ONNX's Div follows)."""
    q = a.floor_div(b)
    if a.dtype in (DType.uint8, DType.uint32):
        return q
    adjust = (a.remainder(b) != 0).logical_and((a < 0).logical_xor(b < 0))
    return q + adjust.cast(q.dtype)


def _binary(op_type: str, since: int, fn: Callable[[Tensor, Tensor], Tensor]) -> None:
    def run(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
        a, b = ctx.arg(inputs, 0), ctx.arg(inputs, 1)
        _same_dtype(ctx, a, b)
        return fn(a, b)

    run.__doc__ = f"ONNX {op_type} (broadcasting)."
    onnx_op(op_type, since)(run)


_binary("Add", 7, lambda a, b: a + b)
_binary("Sub", 7, lambda a, b: a - b)
_binary("Mul", 7, lambda a, b: a * b)
_binary("Div", 7, lambda a, b: a / b if a.kind == "float" else _int_div(a, b))
_binary("Equal", 7, lambda a, b: a.equal(b))
_binary("Less", 7, lambda a, b: a < b)
_binary("Greater", 7, lambda a, b: a > b)
_binary("LessOrEqual", 12, lambda a, b: a <= b)
_binary("GreaterOrEqual", 12, lambda a, b: a >= b)
_binary("And", 7, lambda a, b: a.logical_and(b))
_binary("Or", 7, lambda a, b: a.logical_or(b))
_binary("Xor", 7, lambda a, b: a.logical_xor(b))
_binary("BitwiseAnd", 18, lambda a, b: a.bitwise_and(b))
_binary("BitwiseOr", 18, lambda a, b: a.bitwise_or(b))
_binary("BitwiseXor", 18, lambda a, b: a.bitwise_xor(b))
_unary("Not", 1, lambda x: x.logical_not(), float_only=False)
_unary("BitwiseNot", 18, lambda x: x.bitwise_not(), float_only=False)


@onnx_op("Pow", 7)
def _pow(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX Pow: the result has the base's dtype (the exponent may be of another type)."""
    base, exponent = ctx.arg(inputs, 0), ctx.arg(inputs, 1)
    if base.kind == "float":
        return base.pow(exponent.cast(base.dtype))
    if exponent.kind == "float":
        return base.cast(exponent.dtype).pow(exponent).cast(base.dtype)
    return base.pow(exponent.cast(base.dtype))


@onnx_op("Mod", 10, attrs=("fmod",))
def _mod(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX Mod: the sign of the divisor (Python's %), or of the dividend with fmod=1."""
    a, b = ctx.arg(inputs, 0), ctx.arg(inputs, 1)
    _same_dtype(ctx, a, b)
    fmod = attrs.int("fmod", 0)
    return a.fmod(b) if fmod else a.remainder(b)


@onnx_op("BitShift", 11, attrs=("direction",))
def _bit_shift(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX BitShift of integers (on the host: integers carry no gradient). A shift outside
    [0, bits) gives 0 (the sign, -1 or 0, shifting a signed value right); a left shift of a
    signed value shifts its two's-complement bits."""
    x, y = ctx.arg(inputs, 0), ctx.arg(inputs, 1)
    _same_dtype(ctx, x, y)
    direction = attrs.string("direction", "")
    if direction not in ("LEFT", "RIGHT"):
        ctx.error(f"direction must be LEFT or RIGHT, got {direction!r}")
    a, b = np.broadcast_arrays(x.to_numpy(), y.to_numpy())
    bits = a.dtype.itemsize * 8
    valid = (b >= 0) & (b < bits)
    shift = np.where(valid, b, 0)
    if direction == "RIGHT":
        out = np.where(valid, np.right_shift(a, shift), np.where(a < 0, -1, 0).astype(a.dtype))
    else:
        unsigned = np.dtype(f"u{a.dtype.itemsize}")
        moved = np.left_shift(a.view(unsigned), shift.astype(unsigned)).view(a.dtype)
        out = np.where(valid, moved, 0).astype(a.dtype)
    return ctx.constant(out)


@onnx_op("BitCast", 26, attrs=("to",))
def _bit_cast(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX BitCast: the same bytes read as another type of the same width (on the host)."""
    x = ctx.arg(inputs, 0)
    to = burnpy_dtype(attrs.int("to", 0), ctx.label)
    if to.itemsize != x.dtype.itemsize:
        ctx.error(f"cannot reinterpret {x.dtype!r} as {to!r}: their widths differ")
    return ctx.constant(x.to_numpy().copy().view(to.numpy))


def _variadic(op_type: str, since: int, fn: Callable[[Tensor, Tensor], Tensor],
              mean: bool = False) -> None:
    def run(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
        tensors = [ctx.arg(inputs, i) for i in range(len(inputs))]
        if not tensors:
            ctx.error("at least one input is required")
        out = tensors[0]
        for t in tensors[1:]:
            _same_dtype(ctx, out, t)
            out = fn(out, t)
        if len(tensors) == 1:
            out = out + 0 if out.kind != "bool" else out
        return out / len(tensors) if mean else out

    run.__doc__ = f"ONNX {op_type} over any number of broadcast inputs."
    onnx_op(op_type, since)(run)


def _maximum(a: Tensor, b: Tensor) -> Tensor:
    shape = np.broadcast_shapes(a.shape, b.shape)
    return a.expand(shape).maximum(b.expand(shape))


def _minimum(a: Tensor, b: Tensor) -> Tensor:
    shape = np.broadcast_shapes(a.shape, b.shape)
    return a.expand(shape).minimum(b.expand(shape))


_variadic("Sum", 8, lambda a, b: a + b)
_variadic("Mean", 8, lambda a, b: a + b, mean=True)
_variadic("Max", 8, _maximum)
_variadic("Min", 8, _minimum)


@onnx_op("Where", 9)
def _where(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX Where: x where the condition holds, else y (all three broadcast)."""
    cond, x, y = ctx.arg(inputs, 0), ctx.arg(inputs, 1), ctx.arg(inputs, 2)
    _same_dtype(ctx, x, y)
    shape = np.broadcast_shapes(cond.shape, x.shape, y.shape)
    return y.expand(shape).mask_where(cond.expand(shape), x.expand(shape))


# ---- casts --------------------------------------------------------------------------------
def _cast(ctx: OpContext, x: Tensor, to: DType, attrs: Attributes) -> Tensor:
    if attrs.int("saturate", 1) != 1:
        ctx.unsupported("saturate=0 (a float8 option)", "saturate")
    return x.cast(to)


@onnx_op("Cast", 6, attrs=("to", "saturate", "round_mode"))
def _cast_op(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX Cast to the element type ``to``."""
    if attrs.string("round_mode", "up") != "up":
        ctx.unsupported("round_mode other than 'up' (a float8 option)", "round_mode")
    to = index_dtype(burnpy_dtype(attrs.int("to", 0), ctx.label), ctx.backend, ctx.device)
    return _cast(ctx, ctx.arg(inputs, 0), to, attrs)


@onnx_op("CastLike", 15, attrs=("saturate", "round_mode"))
def _cast_like(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX CastLike: cast to the second input's dtype."""
    if attrs.string("round_mode", "up") != "up":
        ctx.unsupported("round_mode other than 'up' (a float8 option)", "round_mode")
    return _cast(ctx, ctx.arg(inputs, 0), ctx.arg(inputs, 1).dtype, attrs)



@onnx_op("Swish", 24, attrs=("alpha",))
def _swish(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX Swish: x * sigmoid(alpha * x)."""
    x = ctx.arg(inputs, 0)
    return x * (x * attrs.float("alpha", 1.0)).sigmoid()


@onnx_op("Shrink", 9, attrs=("bias", "lambd"))
def _shrink(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX Shrink: x + bias below -lambd, x - bias above lambd, 0 between."""
    x = ctx.arg(inputs, 0)
    bias, lambd = attrs.float("bias", 0.0), attrs.float("lambd", 0.5)
    zero = x.zeros_like()
    out = zero.mask_where(x < -lambd, x + bias)
    return out.mask_where(x > lambd, x - bias)
