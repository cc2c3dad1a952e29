"""Quantized ops on WebGPU: quantize/dequantize and data transfer on packed u32 words, layout
ops by unpacking, moving values and scales together, and repacking. Selection ops and
``q_matmul`` stay the protocol's (dequantize, float op, quantize)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from burnpy.backend.data import QuantParams, TensorData
from burnpy.backend.device import Device
from burnpy.backend.dtype import DType
from burnpy.backend.errors import InvalidArgumentError
from burnpy.backend.ops._marker import backend_classmethod
from burnpy.backend.ops.q_ops import requantize
from burnpy.quantization.scheme import QuantScheme
from burnpy_wgpu.kernels import quant
from burnpy_wgpu.kernels.elementwise import launch_map
from burnpy_wgpu.ops import _shared
from burnpy_wgpu.qtensor import WgpuQTensor
from burnpy_wgpu.tensor import WgpuTensor, contiguous_strides

if TYPE_CHECKING:
    from burnpy.backend.base import Backend

Q = WgpuQTensor
F32 = np.dtype(np.float32)


def _effective_scales(q: Q) -> WgpuTensor:
    """Scales times the two-level tensor scale, float32."""
    if q.tensor_scale is None:
        return q.scales
    return launch_map(q.scales.runtime, "a * b", [q.scales, q.tensor_scale], F32)


def _split(shape: tuple[int, ...], axis: int | None, blocks: int) -> tuple[tuple[int, ...],
                                                                           tuple[int, ...]]:
    """The value shape with the block axis split in (blocks, size), and the matching
    broadcast shape of the scales."""
    if axis is None:
        return shape, ()
    split = shape[:axis] + (blocks, shape[axis] // blocks) + shape[axis + 1:]
    return split, split[:axis + 1] + (1,) + split[axis + 2:]


def _as_view(t: WgpuTensor, shape: tuple[int, ...]) -> WgpuTensor:
    return _shared.reshape(t, shape)


def _with_values(q: Q, values: WgpuTensor, scales: WgpuTensor | None = None,
                 block_axis: int | None = -1) -> Q:
    """``q``'s scheme over new int32 ``values`` (packed here)."""
    return WgpuQTensor(quant.pack(values, q.scheme.value.bits), values.shape, q.scheme,
                       q.scales if scales is None else scales, q.tensor_scale,
                       q.block_axis if block_axis == -1 else block_axis, q.float_dtype)


def _values(q: Q) -> WgpuTensor:
    return quant.unpack(q.words, q.shape, q.scheme.value.bits)


class WgpuQOps:
    """The quantized op family of WgpuBackend."""

    @staticmethod
    def quantize(tensor: WgpuTensor, scheme: QuantScheme, scales: WgpuTensor,
                 tensor_scale: WgpuTensor | None) -> Q:
        scales = _shared.cast(scales, F32)
        ts = None if tensor_scale is None else _shared.cast(tensor_scale, F32)
        eff = scales if ts is None else launch_map(scales.runtime, "a * b", [scales, ts], F32)
        bs = scheme.level.block_size
        axis = None if bs is None else len(tensor.shape) - 1
        blocks = 1 if bs is None else tensor.shape[-1] // bs
        split, scale_shape = _split(tensor.shape, axis, blocks)
        q = quant.round_clip(_as_view(tensor, split), _as_view(eff, scale_shape),
                             scheme.value.qmin, scheme.value.qmax)
        values = q.view(tensor.shape, contiguous_strides(tensor.shape), 0)
        return WgpuQTensor(quant.pack(values, scheme.value.bits), tensor.shape, scheme, scales,
                           ts, axis, DType.of(tensor.dtype))

    @staticmethod
    def dequantize(tensor: Q) -> WgpuTensor:
        blocks = 1 if tensor.block_axis is None else tensor.scales.shape[tensor.block_axis]
        split, scale_shape = _split(tensor.shape, tensor.block_axis, blocks)
        values = _as_view(_values(tensor), split)
        out = launch_map(values.runtime, "f32(a) * b",
                         [values, _as_view(_effective_scales(tensor), scale_shape)],
                         tensor.float_dtype.numpy)
        return out.view(tensor.shape, contiguous_strides(tensor.shape), 0)

    @staticmethod
    def q_from_data(data: TensorData, device: Device) -> Q:
        quant_params = data.quant
        if quant_params is None:
            raise InvalidArgumentError("q_from_data: the TensorData carries no quantization "
                                       "parameters")
        values = _shared.from_data(TensorData(data.array.astype(np.int32)), device)
        scales = _shared.from_data(TensorData(np.asarray(quant_params.scales, dtype=F32)), device)
        ts = None
        if quant_params.tensor_scale is not None:
            ts = _shared.from_data(TensorData(np.asarray(quant_params.tensor_scale, dtype=F32)),
                                   device)
        scheme = quant_params.scheme
        return WgpuQTensor(quant.pack(values, scheme.value.bits), values.shape, scheme, scales,
                           ts, quant_params.block_axis, quant_params.float_dtype)

    @staticmethod
    def q_into_data(tensor: Q) -> TensorData:
        values = _shared.into_data(_values(tensor)).array.astype(np.int8)
        scales = _shared.into_data(tensor.scales).array.astype(tensor.scheme.param.dtype.numpy)
        ts = None
        if tensor.tensor_scale is not None:
            ts = _shared.into_data(tensor.tensor_scale).array.copy()
        params = QuantParams(scales, ts, tensor.block_axis, tensor.scheme, tensor.float_dtype)
        return TensorData(values, tensor.scheme.dtype, params)

    @staticmethod
    def q_device(tensor: Q) -> Device:
        return tensor.device

    @classmethod
    def q_to_device(cls, tensor: Q, device: Device) -> Q:
        if device == tensor.device:
            return tensor
        return cls.q_from_data(cls.q_into_data(tensor), device)

    @backend_classmethod
    def q_reshape(cls: type[Backend], tensor: Q, shape: tuple[int, ...]) -> Q:
        ax = tensor.block_axis
        if ax is None:
            return WgpuQTensor(tensor.words, shape, tensor.scheme, tensor.scales,
                               tensor.tensor_scale, None, tensor.float_dtype)
        if ax == len(tensor.shape) - 1 and shape and shape[-1] == tensor.shape[-1]:
            scales = _as_view(tensor.scales, shape[:-1] + tensor.scales.shape[-1:])
            return WgpuQTensor(tensor.words, shape, tensor.scheme, scales, tensor.tensor_scale,
                               len(shape) - 1, tensor.float_dtype)
        return requantize(cls, _shared.reshape(cls.dequantize(tensor), shape), tensor)

    @staticmethod
    def q_permute(tensor: Q, axes: tuple[int, ...]) -> Q:
        values = _shared.permute(_values(tensor), axes)
        if tensor.block_axis is None:
            return _with_values(tensor, values)
        return _with_values(tensor, values, _shared.permute(tensor.scales, axes),
                            axes.index(tensor.block_axis))

    @classmethod
    def q_swap_dims(cls, tensor: Q, dim1: int, dim2: int) -> Q:
        axes = list(range(len(tensor.shape)))
        axes[dim1], axes[dim2] = axes[dim2], axes[dim1]
        return cls.q_permute(tensor, tuple(axes))

    @staticmethod
    def q_flip(tensor: Q, axes: tuple[int, ...]) -> Q:
        values = _shared.flip(_values(tensor), axes)
        if tensor.block_axis is None:
            return _with_values(tensor, values)
        return _with_values(tensor, values, _shared.flip(tensor.scales, axes))
