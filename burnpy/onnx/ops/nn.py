"""ONNX neural-network operators: MatMul, Gemm, Conv, ConvTranspose, pools, normalizations,
Softmax and its relatives, Dropout (inference), Einsum.

Convolutions and pools call ``burnpy.nn.functional``; ONNX's asymmetric and ``auto_pad``
paddings become an explicit pad first, so every padding ONNX allows runs.
"""

from __future__ import annotations

import math

import numpy as np

import burnpy
import burnpy.nn.functional as F
from burnpy import linalg
from burnpy.onnx.attributes import Attributes
from burnpy.onnx.ops.shape import _pad_tensor
from burnpy.onnx.registry import OpContext, Outputs, onnx_op
from burnpy.tensor import Tensor

Inputs = list[Tensor | None]

_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
_CONV_T = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}
_MAX_POOL = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}
_AVG_POOL = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}


@onnx_op("MatMul", 1)
def _matmul(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX MatMul (NumPy's matmul: batched, broadcast, 1-d operands promoted)."""
    a, b = ctx.arg(inputs, 0), ctx.arg(inputs, 1)
    if a.kind != "float":
        ctx.unsupported(f"integer MatMul ({a.dtype!r})")
    return _product(a, b)


def _product(a: Tensor, b: Tensor) -> Tensor:
    """``a @ b``; a stack ``a`` times a matrix ``b`` as one matrix product over the stack's
    rows (one BLAS call where a broadcast batch makes one per matrix)."""
    if b.ndim == 2 and a.ndim > 2 and a.shape[-1] == b.shape[0]:
        return (a.reshape(-1, a.shape[-1]) @ b).reshape(*a.shape[:-1], b.shape[1])
    return a @ b


def matmul_add(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """``MatMul(a, b)`` followed by ``Add`` of ``c`` (either operand order), the interpreter's
    fusion of the pair when the Add alone reads the product: one linear op (the product over
    the rows, the bias added into it in place) where ``b`` is a matrix and ``c`` a bias along
    its columns, else the two ops."""
    a, b, c = (ctx.arg(inputs, i) for i in range(3))
    if a.kind != "float":
        ctx.unsupported(f"integer MatMul ({a.dtype!r})")
    if (b.ndim == 2 and a.ndim >= 2 and c.shape == (b.shape[1],) and a.shape[-1] == b.shape[0]
            and a.dtype == b.dtype == c.dtype):
        return F.linear(a, b.swap_dims(0, 1), c)
    return _product(a, b) + c


def gelu(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """The erf GELU ``x * (erf(x / sqrt(2)) + 1) * 0.5`` an exporter writes as five nodes, the
    interpreter's fusion of them: one GELU op."""
    x = ctx.arg(inputs, 0)
    if x.kind != "float":
        ctx.error(f"GELU of a {x.dtype!r} tensor")
    return F.gelu(x)


@onnx_op("Gemm", 7, attrs=("alpha", "beta", "transA", "transB"))
def _gemm(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX Gemm: alpha * A' @ B' + beta * C, with A', B' optionally transposed."""
    a, b, c = ctx.arg(inputs, 0), ctx.arg(inputs, 1), ctx.optional(inputs, 2)
    if attrs.int("transA", 0):
        a = a.permute(1, 0)
    if attrs.int("transB", 0):
        b = b.permute(1, 0)
    out = a @ b
    alpha, beta = attrs.float("alpha", 1.0), attrs.float("beta", 1.0)
    if alpha != 1.0:
        out = out * alpha
    if c is not None:
        out = out + (c * beta if beta != 1.0 else c)
    return out


def _spatial_pads(ctx: OpContext, attrs: Attributes, spatial: tuple[int, ...],
                  kernel: list[int], strides: list[int],
                  dilations: list[int]) -> list[tuple[int, int]]:
    """(begin, end) padding per spatial dim from ``pads`` or ``auto_pad``."""
    n = len(spatial)
    auto_pad = attrs.string("auto_pad", "NOTSET")
    if auto_pad in ("NOTSET", ""):
        pads = attrs.ints("pads") or [0] * (2 * n)
        return [(pads[i], pads[i + n]) for i in range(n)]
    if auto_pad == "VALID":
        return [(0, 0)] * n
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        ctx.unsupported(f"auto_pad={auto_pad!r}", "auto_pad")
    out = []
    for size, k, s, d in zip(spatial, kernel, strides, dilations, strict=True):
        total = max((-(-size // s) - 1) * s + (k - 1) * d + 1 - size, 0)
        small = total // 2
        out.append((small, total - small) if auto_pad == "SAME_UPPER" else (total - small, small))
    return out


def _window_args(ctx: OpContext, x: Tensor, attrs: Attributes, kernel: list[int] | None
                 ) -> tuple[int, list[int], list[int], list[int], list[tuple[int, int]]]:
    n = x.ndim - 2
    if n not in (1, 2, 3):
        ctx.unsupported(f"{n}-d spatial input of shape {x.shape}")
    k = kernel if kernel is not None else attrs.ints("kernel_shape")
    if k is None:
        ctx.error("kernel_shape is required")
    strides = attrs.ints("strides") or [1] * n
    dilations = attrs.ints("dilations") or [1] * n
    pads = _spatial_pads(ctx, attrs, x.shape[2:], k, strides, dilations)
    return n, k, strides, dilations, pads


def _crop_ceil_windows(y: Tensor, spatial: tuple[int, ...], k: list[int], strides: list[int],
                       dilations: list[int], pads: list[tuple[int, int]]) -> Tensor:
    """Drop the last window of a ceil-mode pool where it starts in the end padding (ONNX's
    rule, which pooling an explicitly padded input cannot see)."""
    key: list[slice] = [slice(None), slice(None)]
    for size, kk, s, d, (b, e) in zip(spatial, k, strides, dilations, pads, strict=True):
        out = -(-(size + b + e - (kk - 1) * d - 1) // s) + 1
        if (out - 1) * s >= size + b:
            out -= 1
        key.append(slice(0, out))
    return y[tuple(key)]


def _window_sum(ctx: OpContext, x: Tensor, k: list[int], strides: list[int],
                dilations: list[int], pads: list[tuple[int, int]], ceil_mode: bool) -> Tensor:
    """The sum over each (dilated) pooling window of ``x``, zero padded, with ONNX's output
    size: one strided slice per kernel offset, added up. Serves the dilated pools that
    ``burnpy.nn.functional``'s pools do not take."""
    spatial = x.shape[2:]
    outs = []
    for size, kk, s, d, (b, e) in zip(spatial, k, strides, dilations, pads, strict=True):
        span = size + b + e - (kk - 1) * d - 1
        out = (-(-span // s) if ceil_mode else span // s) + 1
        if ceil_mode and (out - 1) * s >= size + b:
            out -= 1
        outs.append(out)
    # Extra zeros at the end for ceil-mode windows running past the padded input.
    widths = [(b, max(e, (o - 1) * s + (kk - 1) * d + 1 - size - b))
              for size, kk, s, d, (b, e), o in zip(spatial, k, strides, dilations, pads, outs,
                                                   strict=True)]
    padded = _pad_tensor(ctx, x, [(0, 0), (0, 0), *widths], "constant", 0.0)
    parts = []
    for offset in np.ndindex(*k):
        key = [slice(None), slice(None)]
        for o, kk_off, s, d in zip(outs, offset, strides, dilations, strict=True):
            key.append(slice(kk_off * d, kk_off * d + (o - 1) * s + 1, s))
        parts.append(padded[tuple(key)])
    total = parts[0]
    for part in parts[1:]:
        total = total + part
    return total


def _symmetric(pads: list[tuple[int, int]]) -> bool:
    return all(a == b for a, b in pads)


@onnx_op("Conv", 1, attrs=("auto_pad", "dilations", "group", "kernel_shape", "pads",
                           "strides"))
def _conv(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX Conv over 1 to 3 spatial dims."""
    x, w, bias = ctx.arg(inputs, 0), ctx.arg(inputs, 1), ctx.optional(inputs, 2)
    if x.kind != "float":
        ctx.unsupported(f"integer Conv ({x.dtype!r})")
    n, _, strides, dilations, pads = _window_args(ctx, x, attrs, list(w.shape[2:]))
    padding: list[int] = [p[0] for p in pads]
    if not _symmetric(pads):
        x = _pad_tensor(ctx, x, [(0, 0), (0, 0), *pads], "constant", 0.0)
        padding = [0] * n
    return _CONV[n](x, w, bias, strides, padding, dilations, attrs.int("group", 1))


@onnx_op("ConvTranspose", 1, attrs=("auto_pad", "dilations", "group", "kernel_shape",
                                    "output_padding", "output_shape", "pads", "strides"))
def _conv_transpose(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX ConvTranspose with explicit pads or output_shape (padding derived from it)."""
    x, w, bias = ctx.arg(inputs, 0), ctx.arg(inputs, 1), ctx.optional(inputs, 2)
    n = x.ndim - 2
    if n not in (1, 2, 3):
        ctx.unsupported(f"{n}-d spatial input of shape {x.shape}")
    kernel = list(w.shape[2:])
    strides = attrs.ints("strides") or [1] * n
    dilations = attrs.ints("dilations") or [1] * n
    out_pad = attrs.ints("output_padding") or [0] * n
    output_shape = attrs.ints("output_shape")
    auto_pad = attrs.string("auto_pad", "NOTSET")
    if output_shape is not None or auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        wanted = (output_shape[-n:] if output_shape is not None
                  else [s * st for s, st in zip(x.shape[2:], strides, strict=True)])
        pads = []
        for i in range(n):
            full = (strides[i] * (x.shape[2 + i] - 1) + out_pad[i]
                    + (kernel[i] - 1) * dilations[i] + 1)
            total = full - wanted[i]  # negative: an output larger than the full one
            small = total // 2
            upper = auto_pad == "SAME_UPPER"  # the spec gives NOTSET the lower split
            pads.append((small, total - small) if upper else (total - small, small))
    elif auto_pad in ("NOTSET", "", "VALID"):
        flat = attrs.ints("pads") or [0] * (2 * n)
        pads = [(flat[i], flat[i + n]) if auto_pad != "VALID" else (0, 0) for i in range(n)]
    else:
        ctx.unsupported(f"auto_pad={auto_pad!r}", "auto_pad")
    y = _CONV_T[n](x, w, None, strides, 0, out_pad, attrs.int("group", 1), dilations)
    # Pads crop the full output; negative ones extend it with zeros (then the bias).
    y = _pad_tensor(ctx, y, [(0, 0), (0, 0)] + [(-b, -e) for b, e in pads], "constant", 0.0)
    return y if bias is None else y + _channel(bias, y.ndim)


@onnx_op("MaxPool", 1, attrs=("auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads",
                              "storage_order", "strides"))
def _max_pool(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX MaxPool; the optional Indices output (flat int64 positions in the input, row
    major) where the padding is symmetric."""
    x = ctx.arg(inputs, 0)
    dtype = x.dtype
    if x.kind != "float":
        if x.dtype not in (burnpy.uint8, burnpy.int8, burnpy.int16):
            ctx.unsupported(f"integer MaxPool ({x.dtype!r})")
        x = x.cast(burnpy.float32)  # exact for these types; the max is one of the values
    n, k, strides, dilations, pads = _window_args(ctx, x, attrs, None)
    padding = [p[0] for p in pads]
    ceil_mode = bool(attrs.int("ceil_mode", 0))
    symmetric = _symmetric(pads) and all(2 * p <= kk for p, kk in zip(padding, k, strict=True))
    if ctx.num_outputs > 1:
        if not symmetric:
            ctx.unsupported("the Indices output with asymmetric pads")
        y, index = _MAX_POOL[n](x, k, strides, padding, dilations, ceil_mode, True)
        plane = math.prod(x.shape[2:])
        if attrs.int("storage_order", 0):  # column major: the first spatial dim varies fastest
            if n != 2:
                ctx.unsupported(f"storage_order=1 over {n} spatial dims", "storage_order")
            h, w = x.shape[2:]
            index = index.floor_div(w) + index.remainder(w) * h
        base = ctx.constant((np.arange(x.shape[0] * x.shape[1]) * plane).astype(np.int64))
        index = index.cast(ctx.backend.int_dtype) + base.reshape([x.shape[0], x.shape[1]] + [1] * n)
        return [y.cast(dtype), index]
    if symmetric:
        return _MAX_POOL[n](x, k, strides, padding, dilations, ceil_mode).cast(dtype)
    padded = _pad_tensor(ctx, x, [(0, 0), (0, 0), *pads], "constant", -math.inf)
    y = _MAX_POOL[n](padded, k, strides, 0, dilations, ceil_mode)
    y = _crop_ceil_windows(y, x.shape[2:], k, strides, dilations, pads) if ceil_mode else y
    return y.cast(dtype)


@onnx_op("MaxUnpool", 9, attrs=("kernel_shape", "pads", "strides"))
def _max_unpool(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX MaxUnpool: the values written at MaxPool's flat indices into zeros of the shape
    the pool inverts, zero-padded at the end to ``output_shape`` when given."""
    x, index = ctx.arg(inputs, 0), ctx.arg(inputs, 1)
    shape_input = ctx.optional(inputs, 2)
    n = x.ndim - 2
    k = attrs.ints("kernel_shape") or []
    strides = attrs.ints("strides") or [1] * n
    pads = attrs.ints("pads") or [0] * (2 * n)
    inferred = list(x.shape[:2]) + [(size - 1) * s + kk - pads[i] - pads[i + n]
                                    for i, (size, s, kk) in enumerate(
                                        zip(x.shape[2:], strides, k, strict=True))]
    zeros = Tensor.zeros(math.prod(inferred), backend=x.backend, device=x.device,
                         dtype=x.dtype)
    out = zeros.scatter(0, index.reshape(-1).cast(ctx.backend.int_dtype), x.reshape(-1)).reshape(
        inferred)
    if shape_input is None:
        return out
    # A larger output_shape keeps the inferred block at the start, zeros after it.
    shape = ctx.ints(shape_input)
    return _pad_tensor(ctx, out, [(0, want - have) for have, want in zip(inferred, shape,
                                                                         strict=True)],
                       "constant", 0.0)


@onnx_op("AveragePool", 1, attrs=("auto_pad", "ceil_mode", "count_include_pad",
                                  "dilations", "kernel_shape", "pads", "strides"))
def _avg_pool(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX AveragePool: padded zeros counted in the divisor only with count_include_pad."""
    x = ctx.arg(inputs, 0)
    n, k, strides, dilations, pads = _window_args(ctx, x, attrs, None)
    ceil_mode = bool(attrs.int("ceil_mode", 0))
    if any(d != 1 for d in dilations):
        total = _window_sum(ctx, x, k, strides, dilations, pads, ceil_mode)
        inside = x.ones_like()[:1, :1]
        if attrs.int("count_include_pad", 0):
            inside = _pad_tensor(ctx, inside, [(0, 0), (0, 0), *pads], "constant", 1.0)
            pads = [(0, 0)] * n
        count = _window_sum(ctx, inside, k, strides, dilations, pads, ceil_mode)
        return total / count
    if not any(b or e for b, e in pads):
        return _AVG_POOL[n](x, k, strides, 0, ceil_mode, True)
    widths = [(0, 0), (0, 0), *pads]
    padded = _pad_tensor(ctx, x, widths, "constant", 0.0)
    y = _AVG_POOL[n](padded, k, strides, 0, ceil_mode, True)
    if not attrs.int("count_include_pad", 0):
        ones = _pad_tensor(ctx, x.ones_like()[:1, :1], widths, "constant", 0.0)
        y = y / _AVG_POOL[n](ones, k, strides, 0, ceil_mode, True)
    return _crop_ceil_windows(y, x.shape[2:], k, strides, dilations, pads) if ceil_mode else y


@onnx_op("GlobalAveragePool", 1)
def _global_avg_pool(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX GlobalAveragePool: the mean over every spatial dim, kept as size 1."""
    x = ctx.arg(inputs, 0)
    return x.mean(list(range(2, x.ndim)), keepdim=True)


@onnx_op("GlobalMaxPool", 1)
def _global_max_pool(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX GlobalMaxPool: the max over every spatial dim, kept as size 1."""
    x = ctx.arg(inputs, 0)
    return x.amax(list(range(2, x.ndim)), keepdim=True)


def _channel(t: Tensor, ndim: int) -> Tensor:
    """A per-channel vector shaped to broadcast over dim 1 of a rank-``ndim`` tensor."""
    return t.reshape([-1] + [1] * (ndim - 2))


@onnx_op("BatchNormalization", 7, attrs=("epsilon", "momentum", "spatial"))
@onnx_op("BatchNormalization", 9, attrs=("epsilon", "momentum"))
@onnx_op("BatchNormalization", 14, attrs=("epsilon", "momentum", "training_mode"))
def _batch_norm(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX BatchNormalization: the running statistics normalize, or with training_mode the
    batch's (biased variance), returning the running statistics updated by ``momentum``."""
    x, scale, bias, mean, var = (ctx.arg(inputs, i) for i in range(5))
    if not attrs.int("spatial", 1):
        ctx.unsupported("spatial=0", "spatial")
    eps = attrs.float("epsilon", 1e-5)
    if attrs.int("training_mode", 0):
        # The batch's statistics normalize; the running ones come back updated.
        dims = [d for d in range(x.ndim) if d != 1]
        batch_mean = x.mean(dims)
        batch_var = ((x - _channel(batch_mean, x.ndim)) ** 2).mean(dims)
        momentum = attrs.float("momentum", 0.9)
        inv = (_channel(batch_var, x.ndim) + eps).rsqrt() * _channel(scale, x.ndim)
        y = (x - _channel(batch_mean, x.ndim)) * inv + _channel(bias, x.ndim)
        return [y, mean * momentum + batch_mean * (1 - momentum),
                var * momentum + batch_var * (1 - momentum)]
    inv = (_channel(var, x.ndim) + eps).rsqrt() * _channel(scale, x.ndim)
    return (x - _channel(mean, x.ndim)) * inv + _channel(bias, x.ndim)


@onnx_op("InstanceNormalization", 6, attrs=("epsilon",))
def _instance_norm(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX InstanceNormalization: each (sample, channel) over its spatial dims."""
    x, scale, bias = (ctx.arg(inputs, i) for i in range(3))
    dims = list(range(2, x.ndim))
    mean = x.mean(dims, keepdim=True)
    var = ((x - mean) ** 2).mean(dims, keepdim=True)
    y = (x - mean) * (var + attrs.float("epsilon", 1e-5)).rsqrt()
    return y * _channel(scale, x.ndim) + _channel(bias, x.ndim)


def _stash(ctx: OpContext, x: Tensor, attrs: Attributes) -> Tensor:
    """``x`` in the dtype the statistics are computed in (stash_type 1: float32 at least)."""
    stash = attrs.int("stash_type", 1)
    if stash != 1:
        ctx.unsupported(f"stash_type={stash}", "stash_type")
    return x if x.dtype in (burnpy.float32, burnpy.float64) else x.cast(burnpy.float32)


@onnx_op("LayerNormalization", 17, attrs=("axis", "epsilon", "stash_type"))
def _layer_norm(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX LayerNormalization over the dims from ``axis``; also Mean and InvStdDev."""
    x, scale, bias = ctx.arg(inputs, 0), ctx.arg(inputs, 1), ctx.optional(inputs, 2)
    axis = attrs.int("axis", -1) % x.ndim
    dims = list(range(axis, x.ndim))
    xs = _stash(ctx, x, attrs)
    normalized = x.shape[axis:]
    if (ctx.num_outputs == 1 and xs is x and scale.shape == normalized
            and scale.dtype == x.dtype
            and (bias is None or (bias.shape == normalized and bias.dtype == x.dtype))):
        # Only y wanted, and the affine parameters are whole: one backend op (5x faster).
        return F.layer_norm(x, normalized, scale, bias, attrs.float("epsilon", 1e-5))
    mean = xs.mean(dims, keepdim=True)
    centered = xs - mean
    inv = ((centered * centered).mean(dims, keepdim=True) + attrs.float("epsilon", 1e-5)).rsqrt()
    y = (centered * inv).cast(x.dtype) * scale
    if bias is not None:
        y = y + bias
    return [y, mean, inv]


@onnx_op("GroupNormalization", 18, attrs=("epsilon", "num_groups"))
@onnx_op("GroupNormalization", 21, attrs=("epsilon", "num_groups", "stash_type"))
def _group_norm(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX GroupNormalization: scale and bias per group (opset 18) or per channel (21)."""
    x, scale, bias = (ctx.arg(inputs, i) for i in range(3))
    groups = attrs.int("num_groups", 0)
    n = x.shape[0]
    xs = _stash(ctx, x, attrs).reshape(n, groups, -1)
    mean = xs.mean(2, keepdim=True)
    centered = xs - mean
    var = (centered * centered).mean(2, keepdim=True)
    y = (centered * (var + attrs.float("epsilon", 1e-5)).rsqrt()).cast(x.dtype)
    if ctx.opset < 21:
        y = y * scale.reshape(1, groups, 1) + bias.reshape(1, groups, 1)
        return y.reshape(x.shape)
    y = y.reshape(x.shape)
    return y * _channel(scale, x.ndim) + _channel(bias, x.ndim)


def _softmax_family(op_type: str, fn_name: str) -> None:
    def coerced(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
        x = ctx.arg(inputs, 0)
        axis = attrs.int("axis", 1) % max(x.ndim, 1)
        flat = x.reshape(math.prod(x.shape[:axis]), -1)
        return _apply(fn_name, flat, 1).reshape(x.shape)

    def along(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
        x = ctx.arg(inputs, 0)
        return _apply(fn_name, x, attrs.int("axis", -1) % max(x.ndim, 1))

    coerced.__doc__ = f"ONNX {op_type} before opset 13: over the dims from ``axis`` as one."
    along.__doc__ = f"ONNX {op_type} from opset 13: along ``axis``."
    onnx_op(op_type, 1, attrs=("axis",))(coerced)
    onnx_op(op_type, 13, attrs=("axis",))(along)


def _apply(fn_name: str, x: Tensor, dim: int) -> Tensor:
    if fn_name == "softmax":
        if x.dtype in (burnpy.float16, burnpy.bfloat16):
            # Each step rounded to half precision, as ONNX's reference (the suite's oracle).
            e = (x - x.amax(dim, keepdim=True)).exp()
            return e / e.sum(dim, keepdim=True)
        return x.softmax(dim)
    if fn_name == "log_softmax":
        return x.log_softmax(dim)
    first = x.argmax(dim, keepdim=True)
    positions = Tensor.arange(0, x.shape[dim], backend=x.backend, device=x.device)
    shape = [1] * x.ndim
    shape[dim] = x.shape[dim]
    return (positions.reshape(shape) == first).cast(x.dtype)


_softmax_family("Softmax", "softmax")
_softmax_family("LogSoftmax", "log_softmax")
_softmax_family("Hardmax", "hardmax")


@onnx_op("Dropout", 7, attrs=("ratio",))
@onnx_op("Dropout", 12, attrs=("seed",))
def _dropout(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX Dropout in inference mode, or in training mode with ratio 0 (nothing dropped):
    the input, and an all-true mask."""
    x = ctx.arg(inputs, 0)
    training = ctx.optional(inputs, 2)
    if training is not None and bool(ctx.host(training).reshape(-1)[0]):
        ratio = ctx.optional(inputs, 1)
        if ratio is None or ctx.scalar(ratio) != 0.0:  # ratio's default is 0.5
            ctx.unsupported("training_mode=True with a ratio above 0 (random)")
    return [x, x.ones_like(dtype=burnpy.bool_)]


@onnx_op("Einsum", 12, attrs=("equation",))
def _einsum(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX Einsum (torch.einsum's notation)."""
    operands = [ctx.arg(inputs, i) for i in range(len(inputs))]
    return burnpy.einsum(attrs.string("equation", "").replace(" ", ""), *operands)


@onnx_op("LRN", 1, attrs=("alpha", "beta", "bias", "size"))
def _lrn(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX LRN: x / (bias + alpha / size * sum of squares over nearby channels) ** beta."""
    x = ctx.arg(inputs, 0)
    size = attrs.int("size", 0)
    before, after = (size - 1) // 2, size - 1 - (size - 1) // 2
    squares = _pad_tensor(ctx, x * x, [(0, 0), (before, after)] + [(0, 0)] * (x.ndim - 2),
                          "constant", 0.0)
    total = squares[:, :x.shape[1]]
    for i in range(1, size):
        total = total + squares[:, i:i + x.shape[1]]
    scale = total * (attrs.float("alpha", 1e-4) / size) + attrs.float("bias", 1.0)
    return x / scale ** attrs.float("beta", 0.75)


@onnx_op("RMSNormalization", 23, attrs=("axis", "epsilon", "stash_type"))
def _rms_norm(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX RMSNormalization: x / sqrt(mean(x^2) + epsilon) * scale over the dims from axis."""
    x, scale = ctx.arg(inputs, 0), ctx.arg(inputs, 1)
    dims = list(range(attrs.int("axis", -1) % x.ndim, x.ndim))
    xs = _stash(ctx, x, attrs)
    inv = ((xs * xs).mean(dims, keepdim=True) + attrs.float("epsilon", 1e-5)).rsqrt()
    return (xs * inv).cast(x.dtype) * scale


@onnx_op("LpNormalization", 1, attrs=("axis", "p"))
def _lp_normalization(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX LpNormalization: x divided by its L1 or L2 norm along ``axis`` (0 where it is 0)."""
    x = ctx.arg(inputs, 0)
    axis = attrs.int("axis", -1) % x.ndim
    p = attrs.int("p", 2)
    if p == 1:
        norm = x.abs().sum(axis, keepdim=True)
    elif p == 2:
        norm = (x * x).sum(axis, keepdim=True).sqrt()
    else:
        ctx.unsupported(f"p={p}", "p")
    zero = norm == 0
    return (x / norm.mask_fill(zero, 1)).mask_fill(zero.expand(x.shape), 0)


@onnx_op("MeanVarianceNormalization", 9, attrs=("axes",))
def _mean_variance_normalization(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX MeanVarianceNormalization: (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9)."""
    x = ctx.arg(inputs, 0)
    axes = [a % x.ndim for a in (attrs.ints("axes") or [0, 2, 3])]
    mean = x.mean(axes, keepdim=True)
    std = ((x * x).mean(axes, keepdim=True) - mean * mean).sqrt()
    return (x - mean) / (std + 1e-9)


@onnx_op("LpPool", 2, attrs=("auto_pad", "ceil_mode", "dilations", "kernel_shape", "p",
                             "pads", "strides"))
def _lp_pool(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX LpPool: (sum of |x|^p over each window)^(1/p), zero padding."""
    x = ctx.arg(inputs, 0)
    n, k, strides, dilations, pads = _window_args(ctx, x, attrs, None)
    p = float(attrs.int("p", 2))
    ceil_mode = bool(attrs.int("ceil_mode", 0))
    if any(d != 1 for d in dilations):
        return _window_sum(ctx, x.abs() ** p, k, strides, dilations, pads, ceil_mode) ** (1 / p)
    powered = _pad_tensor(ctx, x.abs() ** p, [(0, 0), (0, 0), *pads], "constant", 0.0)
    y = _AVG_POOL[n](powered, k, strides, 0, ceil_mode, True) * float(math.prod(k))
    if ceil_mode:
        y = _crop_ceil_windows(y, x.shape[2:], k, strides, dilations, pads)
    return y ** (1.0 / p)


@onnx_op("Det", 11)
def _det(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX Det: the determinant of each square matrix in the last two dims."""
    return linalg.det(ctx.arg(inputs, 0))
