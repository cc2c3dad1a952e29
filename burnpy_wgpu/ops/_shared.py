"""Kind-independent op implementations; the float, int and bool mixins bind them by name.

Layout ops return views of the same buffer whenever the strides allow it; transfer ops convert
dtypes explicitly on the host (bools travel as u32 0/1).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from burnpy.backend.data import TensorData
from burnpy.backend.device import Device
from burnpy.backend.dtype import DType
from burnpy_wgpu.dtypes import check_dtype, compute_type, host_dtype
from burnpy_wgpu.kernels import indexing
from burnpy_wgpu.kernels.elementwise import alloc_tensor, launch_map
from burnpy_wgpu.runtime import f32_bits, runtime_for
from burnpy_wgpu.tensor import (
    Shape,
    WgpuTensor,
    broadcast_view,
    contiguous_strides,
    reshape_strides,
)

T = WgpuTensor


# ---- transfer ------------------------------------------------------------------------------------
def from_data(data: TensorData, device: Device) -> T:
    rt = runtime_for(device)
    dtype = check_dtype(data.dtype, rt.has_f16)
    host = np.ascontiguousarray(data.array, dtype=host_dtype(dtype))
    shape = tuple(data.array.shape)
    return WgpuTensor(rt, rt.upload(host), shape, contiguous_strides(shape), 0, dtype)


def into_data(tensor: T) -> TensorData:
    store = host_dtype(tensor.dtype)
    if tensor.numel() == 0:
        return TensorData(np.zeros(tensor.shape, dtype=tensor.dtype))
    host = tensor.handle.slab.host
    if host is not None:  # a small upload: the view of its bytes, without a readback
        itemsize = store.itemsize
        arr = np.array(np.ndarray(tensor.shape, store, host, tensor.offset * itemsize,
                                  [s * itemsize for s in tensor.strides]))
    else:
        if not tensor.is_contiguous() or (tensor.offset * store.itemsize) % 4:
            tensor = indexing.copy(tensor)
        raw = tensor.runtime.read(tensor.handle.slab, tensor.offset * store.itemsize,
                                  tensor.numel() * store.itemsize)
        arr = np.frombuffer(raw, dtype=store).reshape(tensor.shape)
    return TensorData(arr != 0 if tensor.dtype.kind == "b" else arr)


def device_of(tensor: T) -> Device:
    return tensor.runtime.device_id


def to_device(tensor: T, device: Device) -> T:
    if device == tensor.runtime.device_id:
        return tensor
    return from_data(into_data(tensor), device)


def empty(shape: Shape, device: Device, dtype: DType) -> T:
    rt = runtime_for(device)
    return alloc_tensor(rt, shape, check_dtype(dtype, rt.has_f16))


def full(shape: Shape, value: Any, device: Device, dtype: DType) -> T:
    rt = runtime_for(device)
    np_dtype = check_dtype(dtype, rt.has_f16)
    return fill(rt, shape, value, np_dtype)


def fill(rt: Any, shape: Shape, value: Any, dtype: np.dtype[Any]) -> T:
    """A new tensor of ``shape`` holding ``value`` everywhere."""
    ct = compute_type(dtype)
    if ct == "f32":
        return launch_map(rt, "mf(1u)", [], dtype, [f32_bits(float(value))], shape=shape)
    return launch_map(rt, f"{ct}(mi(1u))", [], dtype, [int(value)], shape=shape)


def cast(tensor: T, dtype: np.dtype[Any]) -> T:
    """The values converted to another dtype (float -> int truncates, int <-> uint wraps)."""
    if dtype == tensor.dtype:
        return tensor
    src, dst = compute_type(tensor.dtype), compute_type(dtype)
    if dtype.kind == "b":
        expr = f"select(1u, 0u, a == {src}(0))"
    else:
        expr = "a" if src == dst else f"{dst}(a)"
    return launch_map(tensor.runtime, expr, [tensor], dtype)


# ---- layout --------------------------------------------------------------------------------------
def reshape(tensor: T, shape: Shape) -> T:
    strides = reshape_strides(tensor.shape, tensor.strides, shape)
    if strides is None:
        tensor = indexing.copy(tensor)
        strides = contiguous_strides(shape)
    return tensor.view(shape, strides, tensor.offset)


def swap_dims(tensor: T, dim1: int, dim2: int) -> T:
    axes = list(range(len(tensor.shape)))
    axes[dim1], axes[dim2] = axes[dim2], axes[dim1]
    return permute(tensor, tuple(axes))


def permute(tensor: T, axes: Shape) -> T:
    return tensor.view(tuple(tensor.shape[a] for a in axes),
                       tuple(tensor.strides[a] for a in axes), tensor.offset)


def flip(tensor: T, axes: Shape) -> T:
    strides = list(tensor.strides)
    offset = tensor.offset
    for a in axes:
        if tensor.shape[a] > 1:
            offset += (tensor.shape[a] - 1) * strides[a]
            strides[a] = -strides[a]
    return tensor.view(tensor.shape, tuple(strides), offset)


def expand(tensor: T, shape: Shape) -> T:
    return tensor.view(shape, broadcast_view(tensor.shape, tensor.strides, shape), tensor.offset)


def repeat_dim(tensor: T, dim: int, times: int) -> T:
    shape, strides = tensor.shape, tensor.strides
    tiled = tensor.view(shape[:dim] + (times,) + shape[dim:],
                        strides[:dim] + (0,) + strides[dim:], tensor.offset)
    out = indexing.copy(tiled)
    new_shape = shape[:dim] + (times * shape[dim],) + shape[dim + 1:]
    return out.view(new_shape, contiguous_strides(new_shape), 0)


def cat(tensors: Sequence[T], dim: int) -> T:
    first = tensors[0]
    size = sum(t.shape[dim] for t in tensors)
    shape = first.shape[:dim] + (size,) + first.shape[dim + 1:]
    out = alloc_tensor(first.runtime, shape, first.dtype)
    start = 0
    for t in tensors:
        region = out.view(t.shape, out.strides, out.offset + start * out.strides[dim])
        launch_map(first.runtime, "a", [t], out.dtype, out=region)
        start += t.shape[dim]
    return out


def unfold(tensor: T, dim: int, size: int, step: int) -> T:
    shape, strides = tensor.shape, tensor.strides
    windows = (shape[dim] - size) // step + 1
    return tensor.view(shape[:dim] + (windows,) + shape[dim + 1:] + (size,),
                       strides[:dim] + (strides[dim] * step,) + strides[dim + 1:]
                       + (strides[dim],), tensor.offset)


# ---- indexing ------------------------------------------------------------------------------------
def slice_view(tensor: T, slices: tuple[slice, ...]) -> T:
    shape = list(tensor.shape)
    strides = list(tensor.strides)
    offset = tensor.offset
    for d, s in enumerate(slices):
        start, stop, step = s.start or 0, s.stop, s.step or 1
        count = len(range(start, stop, step))
        if count:
            offset += start * strides[d]
        shape[d] = count
        strides[d] *= step
    return tensor.view(tuple(shape), tuple(strides), offset)


def slice_assign(tensor: T, slices: tuple[slice, ...], value: T) -> T:
    out = indexing.copy(tensor)
    launch_map(tensor.runtime, "a", [value], out.dtype, out=slice_view(out, slices))
    return out


def gather(tensor: T, dim: int, indices: T) -> T:
    return indexing.gather(tensor, dim, indices)


def scatter(tensor: T, dim: int, indices: T, values: T) -> T:
    return indexing.scatter(tensor, dim, indices, values, accumulate=False)


def scatter_add(tensor: T, dim: int, indices: T, values: T) -> T:
    return indexing.scatter(tensor, dim, indices, values, accumulate=True)


def select(tensor: T, dim: int, indices: T) -> T:
    return indexing.select(tensor, dim, indices)


def select_assign(tensor: T, dim: int, indices: T, values: T) -> T:
    return indexing.select_scatter(tensor, dim, indices, values, accumulate=False)


def select_add(tensor: T, dim: int, indices: T, values: T) -> T:
    return indexing.select_scatter(tensor, dim, indices, values, accumulate=True)


def mask_where(tensor: T, mask: T, value: T) -> T:
    return launch_map(tensor.runtime, "select(a, b, c != 0u)", [tensor, value, mask],
                      tensor.dtype)


def mask_fill(tensor: T, mask: T, value: Any) -> T:
    ct = compute_type(tensor.dtype)
    if ct == "f32":
        word, fill_value = f32_bits(float(value)), "mf(1u)"
    else:
        word, fill_value = int(value), f"{ct}(mi(1u))"
    return launch_map(tensor.runtime, f"select(a, {fill_value}, b != 0u)", [tensor, mask],
                      tensor.dtype, [word])


def compare(lhs: T, rhs: T | None, op: str, scalar: Any = None, *,
            round_half: bool = False) -> T:
    """``lhs op rhs`` (or ``lhs op scalar``, the scalar first rounded to f16 if
    ``round_half``) as a bool tensor; NaN compares unequal to all."""
    ct = compute_type(lhs.dtype)
    if rhs is None:
        inputs, params = [lhs], [f32_bits(float(scalar)) if ct == "f32" else int(scalar)]
        other = "mf(1u)" if ct == "f32" else f"{ct}(mi(1u))"
        if round_half:
            other = f"f32(f16({other}))"
    else:
        inputs, params, other = [lhs, rhs], [], "b"
    cond = f"!(a == {other})" if op == "!=" else f"a {op} {other}"
    return launch_map(lhs.runtime, f"select(0u, 1u, ({cond}))", inputs, np.dtype(np.bool_),
                      params)
