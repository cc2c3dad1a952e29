"""Quantized tensor ops of the Backend protocol (Burn's ``QTensorOps``).

A quantized primitive exposes ``.shape``, ``.dtype`` (a quantized ``DType``), ``.scheme``
(its ``QuantScheme``) and ``.float_dtype`` (the float dtype it dequantizes to). Per-block
scales run along the primitive's ``block_axis`` (the last dim when quantized; layout ops
may move it).

The required core is small: data transfer, quantize with given scales, dequantize, and the
four layout ops that never need to requantize. Everything else is provided: calibration
(``q_compute_params``) with float ops, selection ops by dequantize -> float op -> quantize
with the same scheme, and ``q_matmul`` by dequantizing; backends override for speed and
exactness (CpuBackend does them on the integer data).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from burnpy.backend.data import TensorData
from burnpy.backend.device import Device
from burnpy.backend.dtype import DType
from burnpy.backend.ops._marker import required
from burnpy.quantization.scheme import Calibration, QuantLevel

if TYPE_CHECKING:
    from burnpy.quantization.scheme import QuantScheme

F = Any
I = Any
Q = Any  # the backend's QuantizedTensorPrimitive
Shape = tuple[int, ...]

#: Relative nudge that keeps a scale rounded to f16/bf16 >= the exact one, so rounding never
#: pushes a value past the integer range (the round-trip error stays within scale / 2).
_SCALE_NUDGE = {DType.float32: 0.0, DType.float16: 2.0**-10, DType.bfloat16: 2.0**-7}


class QOps:
    """Ops on quantized primitives."""

    @required
    def q_from_data(data: TensorData, device: Device) -> Q:
        """A quantized primitive from host data (``data.quant`` holds scales and scheme)."""

    @required
    def q_into_data(tensor: Q) -> TensorData:
        """Host data: int8 values of the logical shape, with ``quant`` parameters."""

    @required
    def q_device(tensor: Q) -> Device:
        """The device the primitive lives on."""

    @required
    def q_to_device(tensor: Q, device: Device) -> Q:
        """A copy on ``device``."""

    @required
    def quantize(tensor: F, scheme: QuantScheme, scales: F, tensor_scale: F | None) -> Q:
        """``round(x / scale)`` clipped to the scheme's range, with the given scales: shape
        ``()`` per tensor, or the tensor's shape with the last dim divided by the block size
        per block; ``tensor_scale`` (shape ``()``) multiplies block scales in two-level
        schemes."""

    @required
    def dequantize(tensor: Q) -> F:
        """``q * scale`` in the primitive's ``float_dtype``."""

    @required
    def q_reshape(tensor: Q, shape: Shape) -> Q:
        """See float_reshape (a per-block tensor keeps its block axis and its size)."""

    @required
    def q_swap_dims(tensor: Q, dim1: int, dim2: int) -> Q:
        """See float_swap_dims; scales move with their values."""

    @required
    def q_permute(tensor: Q, axes: Shape) -> Q:
        """See float_permute; scales move with their values."""

    @required
    def q_flip(tensor: Q, axes: Shape) -> Q:
        """See float_flip; scales move with their values."""

    @classmethod
    def q_compute_params(cls, tensor: F, scheme: QuantScheme) -> tuple[F, F | None]:
        """Scales (and a two-level tensor scale) calibrated on ``tensor`` for ``scheme``."""
        shape = tensor.shape
        x = cls.float_abs(tensor)
        bs = scheme.level.block_size
        if bs is not None:
            nb = shape[-1] // bs
            x = cls.float_reshape(x, (*shape[:-1], nb, bs))
            last = len(shape)
            reduce = cls.float_max_dim if scheme.calibration is Calibration.MIN_MAX \
                else cls.float_mean_dim
            stat = cls.float_reshape(reduce(x, last), (*shape[:-1], nb))
        else:
            reduce_all = cls.float_max if scheme.calibration is Calibration.MIN_MAX \
                else cls.float_mean
            stat = reduce_all(x)
        if scheme.calibration is Calibration.MIN_MAX:
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

    @classmethod
    def quantize_dynamic(cls, tensor: F, scheme: QuantScheme) -> Q:
        """Quantize with scales calibrated on the tensor itself."""
        scales, tensor_scale = cls.q_compute_params(tensor, scheme)
        return cls.quantize(tensor, scheme, scales, tensor_scale)

    @classmethod
    def _requantize(cls, tensor: F, like: Q) -> Q:
        """Quantize a float result with the scheme of ``like`` (the selection-op fallback);
        blocks shrink to a divisor of the new last dim when the old size no longer fits."""
        scheme = like.scheme
        bs = scheme.level.block_size
        if bs is not None and tensor.shape[-1] % bs:
            level = QuantLevel(math.gcd(bs, tensor.shape[-1]) or 1, scheme.level.two_level)
            scheme = replace(scheme, level=level)
        return cls.quantize_dynamic(cls.float_cast(tensor, like.float_dtype), scheme)

    @classmethod
    def q_expand(cls, tensor: Q, shape: Shape) -> Q:
        return cls._requantize(cls.float_expand(cls.dequantize(tensor), shape), tensor)

    @classmethod
    def q_repeat_dim(cls, tensor: Q, dim: int, times: int) -> Q:
        return cls._requantize(cls.float_repeat_dim(cls.dequantize(tensor), dim, times), tensor)

    @classmethod
    def q_slice(cls, tensor: Q, slices: tuple[slice, ...]) -> Q:
        return cls._requantize(cls.float_slice(cls.dequantize(tensor), slices), tensor)

    @classmethod
    def q_select(cls, tensor: Q, dim: int, indices: I) -> Q:
        return cls._requantize(cls.float_select(cls.dequantize(tensor), dim, indices), tensor)

    @classmethod
    def q_gather(cls, tensor: Q, dim: int, indices: I) -> Q:
        return cls._requantize(cls.float_gather(cls.dequantize(tensor), dim, indices), tensor)

    @classmethod
    def q_cat(cls, tensors: Sequence[Q], dim: int) -> Q:
        floats = [cls.dequantize(t) for t in tensors]
        return cls._requantize(cls.float_cat(floats, dim), tensors[0])

    @classmethod
    def q_matmul(cls, lhs: Q, rhs: Q) -> F:
        """``lhs @ rhs`` of two quantized tensors, as float (see float_matmul)."""
        return cls.float_matmul(cls.dequantize(lhs), cls.dequantize(rhs))
