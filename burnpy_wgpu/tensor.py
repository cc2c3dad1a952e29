"""``WgpuTensor``: the WebGPU primitive, a strided view of a GPU buffer.

Shape, strides and offset are in elements; strides may be 0 (a broadcast dim) or negative (a
flipped dim). Layout ops (reshape of contiguous data, permute, swap_dims, expand, slices with
steps, flip, unfold) only make new views; kernels read any view, and a contiguous copy is made
only where an op needs one (a reshape of a non-contiguous view, a readback).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from burnpy.backend.device import Device

if TYPE_CHECKING:
    from burnpy_wgpu.memory import BufferHandle
    from burnpy_wgpu.runtime import WgpuRuntime

Shape = tuple[int, ...]


def contiguous_strides(shape: Shape) -> Shape:
    """Row-major strides (in elements) of ``shape``."""
    strides = []
    acc = 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= s
    return tuple(reversed(strides))


def numel(shape: Shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


class WgpuTensor:
    """A view ``(handle, shape, strides, offset)`` of a buffer on ``runtime``'s device, of
    NumPy ``dtype`` (float32, float16, int32, uint32 or bool; bools are stored as u32)."""

    __slots__ = ("dtype", "handle", "offset", "runtime", "shape", "strides")

    def __init__(self, runtime: WgpuRuntime, handle: BufferHandle, shape: Shape, strides: Shape,
                 offset: int, dtype: np.dtype[Any]) -> None:
        self.runtime = runtime
        self.handle = handle
        self.shape = shape
        self.strides = strides
        self.offset = offset
        self.dtype = dtype

    @property
    def device(self) -> Device:
        return self.runtime.device_id

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def numel(self) -> int:
        return numel(self.shape)

    def is_contiguous(self) -> bool:
        """Whether the view is the row-major layout of its shape (size-1 dims ignored)."""
        acc = 1
        for size, stride in zip(reversed(self.shape), reversed(self.strides), strict=True):
            if size != 1 and stride != acc:
                return False
            acc *= size
        return True

    def view(self, shape: Shape, strides: Shape, offset: int) -> WgpuTensor:
        """Another view of the same buffer."""
        return WgpuTensor(self.runtime, self.handle, shape, strides, offset, self.dtype)

    def __repr__(self) -> str:
        return (f"WgpuTensor(shape={self.shape}, strides={self.strides}, offset={self.offset}, "
                f"dtype={self.dtype}, device={self.device})")


# ---- view arithmetic ---------------------------------------------------------------------------
def reshape_strides(shape: Shape, strides: Shape, new_shape: Shape) -> Shape | None:
    """Strides viewing a tensor as ``new_shape`` without copying, or None when impossible:
    each run of old dims merged or split into new dims must be contiguous within itself."""
    if numel(shape) == 0:
        return contiguous_strides(new_shape)
    old = [(s, st) for s, st in zip(shape, strides, strict=True) if s != 1]
    new = [s for s in new_shape if s != 1]
    out: list[int] = []
    oi = ni = 0
    while oi < len(old) and ni < len(new):
        old_size, new_size = old[oi][0], new[ni]
        oj, nj = oi + 1, ni + 1
        while old_size != new_size:
            if new_size < old_size:
                new_size *= new[nj]
                nj += 1
            else:
                old_size *= old[oj][0]
                oj += 1
        for k in range(oi, oj - 1):
            if old[k][1] != old[k + 1][0] * old[k + 1][1]:
                return None
        stride = old[oj - 1][1]
        run = []
        for k in range(nj - 1, ni - 1, -1):
            run.append(stride)
            stride *= new[k]
        out.extend(reversed(run))
        oi, ni = oj, nj
    it = iter(out)
    return tuple(0 if s == 1 else next(it) for s in new_shape)


def broadcast_view(shape: Shape, strides: Shape, target: Shape) -> Shape:
    """Strides of a view broadcast to ``target`` (NumPy rules; size-1 dims get stride 0)."""
    lead = len(target) - len(shape)
    out = [0] * lead
    for size, stride, want in zip(shape, strides, target[lead:], strict=True):
        out.append(stride if size == want else 0)
    return tuple(out)
