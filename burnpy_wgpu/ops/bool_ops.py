"""Bool ops on WebGPU: bools are stored as u32 0/1, so logic ops are integer bit ops."""

from __future__ import annotations

import numpy as np

from burnpy.backend.device import Device
from burnpy.backend.dtype import DType
from burnpy_wgpu.dtypes import check_dtype
from burnpy_wgpu.kernels import reduce, scan
from burnpy_wgpu.kernels.elementwise import launch_map
from burnpy_wgpu.ops import _shared
from burnpy_wgpu.runtime import runtime_for
from burnpy_wgpu.tensor import WgpuTensor

T = WgpuTensor
Shape = tuple[int, ...]
BOOL = np.dtype(np.bool_)


def _logic(expr: str) -> staticmethod:
    def op(lhs: T, rhs: T) -> T:
        return launch_map(lhs.runtime, expr, [lhs, rhs], BOOL)
    return staticmethod(op)


class WgpuBoolOps:
    """The bool op family of WgpuBackend."""

    bool_from_data = staticmethod(_shared.from_data)
    bool_into_data = staticmethod(_shared.into_data)
    bool_device = staticmethod(_shared.device_of)
    bool_to_device = staticmethod(_shared.to_device)

    @staticmethod
    def bool_empty(shape: Shape, device: Device) -> T:
        return _shared.empty(shape, device, DType.bool_)

    @staticmethod
    def bool_full(shape: Shape, fill_value: bool, device: Device) -> T:
        return _shared.fill(runtime_for(device), shape, int(bool(fill_value)), BOOL)

    @staticmethod
    def bool_into_int(tensor: T, dtype: DType) -> T:
        return _shared.cast(tensor, check_dtype(dtype, tensor.runtime.has_f16))

    @staticmethod
    def bool_into_float(tensor: T, dtype: DType) -> T:
        return _shared.cast(tensor, check_dtype(dtype, tensor.runtime.has_f16))

    bool_reshape = staticmethod(_shared.reshape)
    bool_swap_dims = staticmethod(_shared.swap_dims)
    bool_permute = staticmethod(_shared.permute)
    bool_flip = staticmethod(_shared.flip)
    bool_expand = staticmethod(_shared.expand)
    bool_repeat_dim = staticmethod(_shared.repeat_dim)
    bool_cat = staticmethod(_shared.cat)
    bool_unfold = staticmethod(_shared.unfold)
    bool_slice = staticmethod(_shared.slice_view)
    bool_slice_assign = staticmethod(_shared.slice_assign)
    bool_gather = staticmethod(_shared.gather)
    bool_select = staticmethod(_shared.select)
    bool_mask_where = staticmethod(_shared.mask_where)

    @staticmethod
    def bool_not(tensor: T) -> T:
        return launch_map(tensor.runtime, "1u - a", [tensor], BOOL)

    bool_and = _logic("a & b")
    bool_or = _logic("a | b")
    bool_xor = _logic("a ^ b")
    bool_equal = _logic("select(0u, 1u, a == b)")
    bool_not_equal = _logic("a ^ b")

    @staticmethod
    def bool_any(tensor: T) -> T:
        return reduce.reduce_all(tensor, "any")

    @staticmethod
    def bool_any_dim(tensor: T, dim: int) -> T:
        return reduce.reduce_dim(tensor, dim, "any")

    @staticmethod
    def bool_all(tensor: T) -> T:
        return reduce.reduce_all(tensor, "all")

    @staticmethod
    def bool_all_dim(tensor: T, dim: int) -> T:
        return reduce.reduce_dim(tensor, dim, "all")

    @staticmethod
    def bool_argwhere(tensor: T) -> T:
        """Coordinates of the true elements, ``[n, ndim]`` int32 (WebGPU's index dtype)."""
        return scan.argwhere(tensor)
