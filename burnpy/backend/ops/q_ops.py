# A @required op is a declaration: its body is its docstring, implemented by each backend.
# mypy: disable-error-code="empty-body"
"""Quantized tensor ops of the Backend protocol (Burn's ``QTensorOps``).

A quantized primitive exposes ``.shape``, ``.dtype`` (a quantized ``DType``), ``.scheme``
(its ``QuantScheme``) and ``.float_dtype`` (the float dtype it dequantizes to). Per-block
scales run along the primitive's ``block_axis`` (the last dim when quantized; layout ops
may move it).

The required core is small: data transfer, quantize with given scales, dequantize, and the
four layout ops that never need to requantize. Everything else is provided: calibration
(``q_compute_params``) with float ops, selection ops by dequantize -> float op -> quantize
with the same scheme, ``q_matmul`` and the weight-only ``q_linear`` by dequantizing; backends
override for speed and exactness (CpuBackend does them on the integer data).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from burnpy.backend.data import TensorData
from burnpy.backend.device import Device
from burnpy.backend.dtype import DType
from burnpy.backend.ops._marker import provided, required
from burnpy.backend.primitives import FloatPrimitive, IntPrimitive, QuantizedPrimitive, Shape

if TYPE_CHECKING:  # the protocol takes schemes as values; quantization sits above backend
    from burnpy.backend.base import Backend
    from burnpy.quantization.scheme import QuantScheme


#: Relative nudge that keeps a scale rounded to f16/bf16 >= the exact one, so rounding never
#: pushes a value past the integer range (the round-trip error stays within scale / 2).
_SCALE_NUDGE = {DType.float32: 0.0, DType.float16: 2.0**-10, DType.bfloat16: 2.0**-7}


def requantize(backend: type[Backend], tensor: FloatPrimitive,
               like: QuantizedPrimitive) -> QuantizedPrimitive:
    """Quantize a float result with the scheme of ``like`` (the selection-op fallback, also
    used by backends' own layout ops); blocks shrink to a divisor of the new last dim when the
    old size no longer fits."""
    scheme = like.scheme
    bs = scheme.level.block_size
    if bs is not None and tensor.shape[-1] % bs:
        level = replace(scheme.level, block_size=math.gcd(bs, tensor.shape[-1]) or 1)
        scheme = replace(scheme, level=level)
    return backend.quantize_dynamic(backend.float_cast(tensor, like.float_dtype), scheme)


class QOps:
    """Ops on quantized primitives."""

    @required
    def q_from_data(data: TensorData, device: Device) -> QuantizedPrimitive:
        """A quantized primitive from host data (``data.quant`` holds scales and scheme)."""

    @required
    def q_into_data(tensor: QuantizedPrimitive) -> TensorData:
        """Host data: int8 values of the logical shape, with ``quant`` parameters."""

    @required
    def q_device(tensor: QuantizedPrimitive) -> Device:
        """The device the primitive lives on."""

    @required
    def q_to_device(tensor: QuantizedPrimitive, device: Device) -> QuantizedPrimitive:
        """A copy on ``device``."""

    @required
    def quantize(tensor: FloatPrimitive, scheme: QuantScheme, scales: FloatPrimitive,
                 tensor_scale: FloatPrimitive | None) -> QuantizedPrimitive:
        """``round(x / scale)`` clipped to the scheme's range, with the given scales: shape
        ``()`` per tensor, or the tensor's shape with the last dim divided by the block size
        per block; ``tensor_scale`` (shape ``()``) multiplies block scales in two-level
        schemes."""

    @required
    def dequantize(tensor: QuantizedPrimitive) -> FloatPrimitive:
        """``q * scale`` in the primitive's ``float_dtype``."""

    @required
    def q_reshape(tensor: QuantizedPrimitive, shape: Shape) -> QuantizedPrimitive:
        """See float_reshape (a per-block tensor keeps its block axis and its size)."""

    @required
    def q_swap_dims(tensor: QuantizedPrimitive, dim1: int, dim2: int) -> QuantizedPrimitive:
        """See float_swap_dims; scales move with their values."""

    @required
    def q_permute(tensor: QuantizedPrimitive, axes: Shape) -> QuantizedPrimitive:
        """See float_permute; scales move with their values."""

    @required
    def q_flip(tensor: QuantizedPrimitive, axes: Shape) -> QuantizedPrimitive:
        """See float_flip; scales move with their values."""

    @provided
    def q_compute_params(cls: type[Backend], tensor: FloatPrimitive,
                         scheme: QuantScheme) -> tuple[FloatPrimitive, FloatPrimitive | None]:
        """Scales (and a two-level tensor scale) calibrated on ``tensor`` for ``scheme``."""
        shape = tensor.shape
        x = cls.float_abs(tensor)
        bs = scheme.level.block_size
        if bs is not None:
            nb = shape[-1] // bs
            x = cls.float_reshape(x, (*shape[:-1], nb, bs))
            last = len(shape)
            reduce = cls.float_max_dim if scheme.calibration.from_max \
                else cls.float_mean_dim
            stat = cls.float_reshape(reduce(x, last), (*shape[:-1], nb))
        else:
            reduce_all = cls.float_max if scheme.calibration.from_max \
                else cls.float_mean
            stat = reduce_all(x)
        if scheme.calibration.from_max:
            stat = cls.float_div_scalar(stat, scheme.value.half_range)
        scale = cls.float_mask_fill(stat, cls.float_equal_elem(stat, 0.0), 1.0)
        scale = cls.float_cast(scale, DType.float32)
        tensor_scale = None
        if scheme.level.two_level:
            tensor_scale = cls.float_max(scale)
            scale = cls.float_div(scale, tensor_scale)
        param = scheme.param.dtype
        nudge = _SCALE_NUDGE[param]
        if nudge:
            scale = cls.float_mul_scalar(scale, 1.0 + nudge)
        return cls.float_cast(scale, param), tensor_scale

    @provided
    def quantize_dynamic(cls: type[Backend], tensor: FloatPrimitive,
                         scheme: QuantScheme) -> QuantizedPrimitive:
        """Quantize with scales calibrated on the tensor itself."""
        scales, tensor_scale = cls.q_compute_params(tensor, scheme)
        return cls.quantize(tensor, scheme, scales, tensor_scale)

    @provided
    def q_expand(cls: type[Backend], tensor: QuantizedPrimitive,
                 shape: Shape) -> QuantizedPrimitive:
        return requantize(cls, cls.float_expand(cls.dequantize(tensor), shape), tensor)

    @provided
    def q_repeat_dim(cls: type[Backend], tensor: QuantizedPrimitive, dim: int,
                     times: int) -> QuantizedPrimitive:
        return requantize(cls, cls.float_repeat_dim(cls.dequantize(tensor), dim, times), tensor)

    @provided
    def q_slice(cls: type[Backend], tensor: QuantizedPrimitive,
                slices: tuple[slice, ...]) -> QuantizedPrimitive:
        return requantize(cls, cls.float_slice(cls.dequantize(tensor), slices), tensor)

    @provided
    def q_select(cls: type[Backend], tensor: QuantizedPrimitive, dim: int,
                 indices: IntPrimitive) -> QuantizedPrimitive:
        return requantize(cls, cls.float_select(cls.dequantize(tensor), dim, indices), tensor)

    @provided
    def q_gather(cls: type[Backend], tensor: QuantizedPrimitive, dim: int,
                 indices: IntPrimitive) -> QuantizedPrimitive:
        return requantize(cls, cls.float_gather(cls.dequantize(tensor), dim, indices), tensor)

    @provided
    def q_cat(cls: type[Backend], tensors: Sequence[QuantizedPrimitive],
              dim: int) -> QuantizedPrimitive:
        floats = [cls.dequantize(t) for t in tensors]
        return requantize(cls, cls.float_cat(floats, dim), tensors[0])

    @provided
    def q_matmul(cls: type[Backend], lhs: QuantizedPrimitive,
                 rhs: QuantizedPrimitive) -> FloatPrimitive:
        """``lhs @ rhs`` of two quantized tensors, as float (see float_matmul)."""
        return cls.float_matmul(cls.dequantize(lhs), cls.dequantize(rhs))

    @provided
    def q_linear(cls: type[Backend], x: FloatPrimitive, weight: QuantizedPrimitive,
                 bias: FloatPrimitive | None) -> FloatPrimitive:
        """Weight-only quantized ``x @ weight.T + bias``: float ``x [..., in]``, quantized
        ``weight [out, in]``, float result; the activations are never quantized. By default
        the weight is dequantized for the call (no float copy is kept)."""
        return cls.linear(x, cls.dequantize(weight), bias)
