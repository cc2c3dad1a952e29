"""Module ops on WebGPU: convolutions through im2col and the tiled matmul, max pools with a
direct kernel, and average/adaptive pools and interpolation (forward and backward) as
separable table-driven resampling along each spatial axis."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from burnpy.backend.ops._marker import backend_classmethod
from burnpy.backend.ops.module_ops import InterpolateMode, Ints, attention_softmax
from burnpy_wgpu.kernels import conv as convolution
from burnpy_wgpu.kernels import pool, resample
from burnpy_wgpu.kernels.elementwise import launch_map
from burnpy_wgpu.tensor import WgpuTensor

if TYPE_CHECKING:
    from burnpy.backend.base import Backend

T = WgpuTensor
BOOL = np.dtype(np.bool_)


def _avg_tables(x: T, kernel: Ints, stride: Ints, padding: Ints, count_include_pad: bool,
                ceil_mode: bool, backward: bool) -> list[tuple[int, resample.Table]]:
    rt = x.runtime
    out = []
    for i, (size, k, s, p) in enumerate(zip(x.shape[2:], kernel, stride, padding, strict=True)):
        spec = (size, k, s, p, ceil_mode, count_include_pad)
        if backward:
            out.append((2 + i, resample.table(rt, ("avg_pool_t", *spec), lambda spec=spec: (
                resample.transpose_rows(resample.pool_rows(*spec), spec[0])))))
        else:
            out.append((2 + i, resample.table(rt, ("avg_pool", *spec),
                                              lambda spec=spec: resample.pool_rows(*spec))))
    return out


def _adaptive_tables(x: T, output_size: Ints, backward: bool) -> list[tuple[int, Any]]:
    rt = x.runtime
    out = []
    for i, (size, o) in enumerate(zip(x.shape[2:], output_size, strict=True)):
        if backward:
            out.append((2 + i, resample.table(rt, ("adaptive_t", size, o), lambda s=size, o=o: (
                resample.transpose_rows(resample.adaptive_rows(s, o), s)))))
        else:
            out.append((2 + i, resample.table(rt, ("adaptive", size, o),
                                              lambda s=size, o=o: resample.adaptive_rows(s, o))))
    return out


def _interp_tables(x: T, output_size: Ints, mode: str, align_corners: bool,
                   backward: bool) -> list[tuple[int, Any]]:
    rt = x.runtime
    out = []
    for axis in (3, 2):
        size, o = x.shape[axis], output_size[axis - 2]
        spec = (size, o, mode, align_corners)
        if backward:
            out.append((axis, resample.table(rt, ("interp_t", *spec), lambda spec=spec: (
                resample.transpose_rows(resample.interpolate_rows(*spec), spec[0])))))
        else:
            out.append((axis, resample.table(rt, ("interp", *spec),
                                              lambda spec=spec: resample.interpolate_rows(*spec))))
    return out


class WgpuModuleOps:
    """Convolutions, pools, interpolation and attention."""

    conv = staticmethod(convolution.conv)
    conv_weight_backward = staticmethod(convolution.conv_weight_backward)
    conv_transpose = staticmethod(convolution.conv_transpose)
    conv_transpose_weight_backward = staticmethod(convolution.conv_transpose_weight_backward)

    @staticmethod
    def avg_pool(x: T, kernel: Ints, stride: Ints, padding: Ints, count_include_pad: bool,
                 ceil_mode: bool) -> T:
        return resample.separable(x, _avg_tables(x, kernel, stride, padding, count_include_pad,
                                                 ceil_mode, backward=False))

    @staticmethod
    def avg_pool_backward(x: T, grad: T, kernel: Ints, stride: Ints, padding: Ints,
                          count_include_pad: bool, ceil_mode: bool) -> T:
        return resample.separable(grad, _avg_tables(x, kernel, stride, padding,
                                                    count_include_pad, ceil_mode, backward=True))

    @staticmethod
    def max_pool_with_indices(x: T, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints,
                              ceil_mode: bool) -> tuple[T, T]:
        return pool.max_pool(x, kernel, stride, padding, dilation, ceil_mode)

    @staticmethod
    def adaptive_avg_pool(x: T, output_size: Ints) -> T:
        return resample.separable(x, _adaptive_tables(x, output_size, backward=False))

    @staticmethod
    def adaptive_avg_pool_backward(x: T, grad: T) -> T:
        return resample.separable(grad, _adaptive_tables(x, grad.shape[2:], backward=True))

    @staticmethod
    def interpolate(x: T, output_size: Ints, mode: InterpolateMode, align_corners: bool) -> T:
        return resample.separable(x, _interp_tables(x, output_size, mode, align_corners,
                                                    backward=False))

    @staticmethod
    def interpolate_backward(x: T, grad: T, output_size: Ints, mode: InterpolateMode,
                             align_corners: bool) -> T:
        return resample.separable(grad, _interp_tables(x, output_size, mode, align_corners,
                                                       backward=True))

    @backend_classmethod
    def attention_weights(cls: type[Backend], query: T, key: T, mask: T | None,
                          scale: float | None, is_causal: bool) -> T:
        """The softmax weights of attention (torch's semantics); the causal mask is built by
        one kernel instead of int64 aranges, which WebGPU lacks."""
        d = query.shape[-1]
        nd = len(key.shape)
        scores = cls.float_matmul(query, cls.float_swap_dims(key, nd - 2, nd - 1))
        scores = cls.float_mul_scalar(scores, scale if scale is not None else d ** -0.5)
        if is_causal:
            lq, lk = query.shape[-2], key.shape[-2]
            future = launch_map(query.runtime, "select(0u, 1u, gid % mu(1u) > gid / mu(1u))",
                                [], BOOL, [lk], shape=(lq, lk))
            scores = cls.float_mask_fill(scores, future, float("-inf"))
        if mask is not None:
            scores = cls.float_mask_fill(scores, cls.bool_not(mask), float("-inf"))
        return attention_softmax(cls, scores, mask is not None)
