"""Array code shared by the float, int and bool op mixins (one implementation per op logic)."""

from __future__ import annotations

import contextlib
import functools
import importlib
from collections.abc import Sequence
from contextlib import AbstractContextManager
from types import ModuleType
from typing import Any, ClassVar

import numpy as np

from burnpy.backend.data import TensorData, contiguous
from burnpy.backend.device import Device
from burnpy.backend.dtype import DType
from burnpy_cpu import memory

A = Any  # an array of the backend's array module


def widened(xp: Any, a: A) -> A:
    """``a`` in a dtype to compute in: 16-bit floats are widened to float32 (as torch computes
    them on the CPU; on NumPy by the compiled casts of ``_half_kernels``); other arrays are
    returned as they are."""
    if a.dtype.itemsize >= 4:
        return a
    return half_kernels().to_float32(a) if xp is np else a.astype(xp.float32)


def narrowed(xp: Any, a: A, dtype: Any) -> A:
    """``a`` (computed in float32 or wider) in ``dtype``, rounded once: the cast back of a
    kernel that computed a 16-bit float result in float32 (compiled on NumPy)."""
    if a.dtype == dtype:
        return a
    if xp is np and np.dtype(dtype).itemsize == 2:
        return half_kernels().cast_array(a, np.dtype(dtype))
    return a.astype(dtype, copy=False)


@functools.cache
def half_kernels() -> ModuleType:
    """The compiled casts between float32 and the 16-bit floats (``_half_kernels``), imported
    on first use for the same reason as ``float32_kernels``."""
    return importlib.import_module("burnpy_cpu.array_ops._half_kernels")


@functools.lru_cache(maxsize=64)
def _host_ones(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    ones = np.ones(shape, dtype=dtype)
    ones.flags.writeable = False
    return ones


def ones(xp: Any, shape: tuple[int, ...], dtype: Any) -> A:
    """Ones to sum with a matrix product: read-only and cached on NumPy (``np.ones`` costs
    more than the small sums it serves), fresh on a device array module."""
    return _host_ones(shape, np.dtype(dtype)) if xp is np else xp.ones(shape, dtype=dtype)


@functools.cache
def float32_kernels() -> ModuleType:
    """The compiled float32 gelu/erf kernels (``_float32_kernels``), imported on first use:
    importing numba takes 0.2 s, which a program that never calls them should not pay."""
    return importlib.import_module("burnpy_cpu.array_ops._float32_kernels")


@functools.cache
def row_kernels() -> ModuleType:
    """The compiled layer norm and cross entropy row loops (``_row_kernels``), imported on
    first use for the same reason as ``float32_kernels``; cached (a per-step layer norm calls
    it, and ``import_module`` costs microseconds)."""
    return importlib.import_module("burnpy_cpu.array_ops._row_kernels")


@functools.cache
def optim_kernels() -> ModuleType:
    """The compiled Adam update (``_optim_kernels``), imported on first use for the same
    reason as ``float32_kernels``; cached (it is called every step)."""
    return importlib.import_module("burnpy_cpu.array_ops._optim_kernels")


_NO_CONTEXT = contextlib.nullcontext()


class ArrayLayoutOps:
    """Kind-independent array ops; each kind's mixin binds them under its own prefix."""

    #: The array module: NumPy, or CuPy for CudaBackend (both untyped to mypy).
    xp: ClassVar[Any] = np

    @classmethod
    def _generator(cls, device: Device) -> Any:
        """The seeded random generator of ``device`` (NumPy's or CuPy's), which each backend
        keeps."""
        raise TypeError(f"{cls.__name__} must provide _generator")

    @staticmethod
    def _on(device: Device) -> AbstractContextManager[Any]:
        """A context making ``device`` current while creating arrays (nothing to do on CPU;
        CUDA selects the GPU)."""
        return _NO_CONTEXT

    @classmethod
    def _from_data(cls, data: TensorData, device: Device) -> A:
        with cls._on(device):
            return cls.xp.asarray(data.array)

    @classmethod
    def array_from_dlpack(cls, obj: Any) -> A:
        """An array sharing ``obj``'s memory (DLPack), for ``Tensor.from_dlpack``."""
        return cls.xp.from_dlpack(obj)

    @classmethod
    def _into_data(cls, tensor: A) -> TensorData:
        return TensorData(contiguous(cls._to_host(tensor)))

    @staticmethod
    def _to_host(tensor: A) -> np.ndarray:
        return np.asarray(tensor)

    @classmethod
    def _empty(cls, shape: tuple[int, ...], device: Device, dtype: DType) -> A:
        with cls._on(device):
            return cls.xp.empty(shape, dtype=dtype.numpy)

    @classmethod
    def _full(cls, shape: tuple[int, ...], fill_value: Any, device: Device, dtype: DType) -> A:
        with cls._on(device):
            return cls.xp.full(shape, fill_value, dtype=dtype.numpy)

    @classmethod
    def _cast(cls, tensor: A, dtype: DType) -> A:
        return tensor.astype(dtype.numpy, copy=False)

    @staticmethod
    def _reshape(tensor: A, shape: tuple[int, ...]) -> A:
        return tensor.reshape(shape)

    @staticmethod
    def _swap_dims(tensor: A, dim1: int, dim2: int) -> A:
        return tensor.swapaxes(dim1, dim2)

    @staticmethod
    def _permute(tensor: A, axes: tuple[int, ...]) -> A:
        return tensor.transpose(axes)

    @classmethod
    def _flip(cls, tensor: A, axes: tuple[int, ...]) -> A:
        return cls.xp.flip(tensor, axes) if axes else tensor

    @classmethod
    def _expand(cls, tensor: A, shape: tuple[int, ...]) -> A:
        return cls.xp.broadcast_to(tensor, shape)

    @classmethod
    def _repeat_dim(cls, tensor: A, dim: int, times: int) -> A:
        reps = [1] * tensor.ndim
        reps[dim] = times
        return cls.xp.tile(tensor, reps)

    @classmethod
    def _cat(cls, tensors: Sequence[A], dim: int) -> A:
        """``tensors`` joined along ``dim``; NumPy arrays of one dtype by ``memory.concatenate``
        (an optimizer joins every parameter, gradient and state each step: pieces of last
        step's flat arrays are joined without a copy, the rest copied onto cached memory)."""
        first = tensors[0]
        if cls.xp is np and len(tensors) > 1 and all(
                type(t) is np.ndarray and t.dtype is first.dtype for t in tensors):
            return memory.concatenate(tensors, dim)
        return cls.xp.concatenate(tensors, axis=dim)

    @classmethod
    def _unfold(cls, tensor: A, dim: int, size: int, step: int) -> A:
        windows = cls.xp.lib.stride_tricks.sliding_window_view(tensor, size, axis=dim)
        index = [slice(None)] * windows.ndim
        index[dim] = slice(None, None, step)
        return windows[tuple(index)]

    @staticmethod
    def _slice(tensor: A, slices: tuple[slice, ...]) -> A:
        return tensor[slices]

    @staticmethod
    def _slice_assign(tensor: A, slices: tuple[slice, ...], value: A) -> A:
        out = tensor.copy()
        out[slices] = value
        return out

    @classmethod
    def _gather(cls, tensor: A, dim: int, indices: A) -> A:
        # torch allows indices shorter than the tensor in the other dims: crop to them.
        crop = tuple(slice(None) if d == dim else slice(0, n) for d, n in enumerate(indices.shape))
        return cls.xp.take_along_axis(tensor[crop], indices, axis=dim)

    @classmethod
    def _scatter_index(cls, indices: A, dim: int) -> tuple[A, ...]:
        """Full advanced index placing each element of ``indices`` at its target along ``dim``
        (open grids built with ``arange``, which NumPy and CuPy share)."""
        nd = indices.ndim
        grids = [cls.xp.arange(n).reshape((1,) * i + (n,) + (1,) * (nd - i - 1))
                 for i, n in enumerate(indices.shape)]
        grids[dim] = indices
        return tuple(grids)

    @classmethod
    def _scatter(cls, tensor: A, dim: int, indices: A, values: A) -> A:
        out = tensor.copy()
        out[cls._scatter_index(indices, dim)] = values[tuple(slice(0, n) for n in indices.shape)]
        return out

    @classmethod
    def _scatter_add(cls, tensor: A, dim: int, indices: A, values: A) -> A:
        vals = values[tuple(slice(0, n) for n in indices.shape)]
        linear = cls.xp.ravel_multi_index(cls._scatter_index(indices, dim), tensor.shape)
        return cls._add_at(tensor, linear, vals)

    @classmethod
    def _add_at(cls, tensor: A, linear: A, values: A) -> A:
        """A copy of ``tensor`` with ``values`` summed in at flat positions ``linear``.

        Floats go through ``bincount`` (3x faster than ``add.at`` with a multi-index, and
        summed in float64); ints keep ``add.at``, exact in their own dtype.
        """
        xp = cls.xp
        if tensor.dtype.kind != "f":
            out = tensor.copy()
            xp.add.at(out.reshape(-1), linear.reshape(-1), values.reshape(-1))
            return out
        summed = xp.bincount(linear.reshape(-1), weights=values.reshape(-1).astype(np.float64),
                             minlength=tensor.size)
        return (tensor + summed.reshape(tensor.shape)).astype(tensor.dtype, copy=False)

    @staticmethod
    def _select(tensor: A, dim: int, indices: A) -> A:
        return tensor.take(indices, axis=dim) if dim else tensor[indices]

    @staticmethod
    def _select_assign(tensor: A, dim: int, indices: A, values: A) -> A:
        out = tensor.copy()
        out[(slice(None),) * dim + (indices,)] = values
        return out

    @classmethod
    def _select_add(cls, tensor: A, dim: int, indices: A, values: A) -> A:
        xp = cls.xp
        shape = [1] * tensor.ndim
        shape[dim] = indices.shape[0]
        index = xp.broadcast_to(indices.reshape(shape), values.shape)
        linear = xp.ravel_multi_index(cls._scatter_index(index, dim), tensor.shape)
        return cls._add_at(tensor, linear, values)

    @classmethod
    def _mask_where(cls, tensor: A, mask: A, value: A) -> A:
        return cls.xp.where(mask, value, tensor)

    @classmethod
    def _mask_fill(cls, tensor: A, mask: A, value: Any) -> A:
        return cls.xp.where(mask, cls.xp.asarray(value, dtype=tensor.dtype), tensor)

    @classmethod
    def _max(cls, tensor: A) -> A:
        return cls.xp.asarray(tensor.max())

    @classmethod
    def _min(cls, tensor: A) -> A:
        return cls.xp.asarray(tensor.min())

    @classmethod
    def _max_dim_with_indices(cls, tensor: A, dim: int) -> tuple[A, A]:
        idx = cls.xp.expand_dims(tensor.argmax(axis=dim), dim)
        return cls.xp.take_along_axis(tensor, idx, axis=dim), idx.astype(np.int64, copy=False)

    @classmethod
    def _min_dim_with_indices(cls, tensor: A, dim: int) -> tuple[A, A]:
        idx = cls.xp.expand_dims(tensor.argmin(axis=dim), dim)
        return cls.xp.take_along_axis(tensor, idx, axis=dim), idx.astype(np.int64, copy=False)

    @classmethod
    def _cum_extreme_with_indices(cls, tensor: A, dim: int, accumulate: Any) -> tuple[A, A]:
        """Running max/min with the latest index reaching it (torch.cummax/cummin; NaN wins)."""
        values = accumulate(tensor, axis=dim)
        reached = cls.xp.equal(tensor, values)
        if tensor.dtype.kind == "f":
            reached |= cls.xp.isnan(tensor)
        shape = [1] * tensor.ndim
        shape[dim] = tensor.shape[dim]
        positions = cls.xp.arange(tensor.shape[dim], dtype=np.int64).reshape(shape)
        idx = cls.xp.maximum.accumulate(cls.xp.where(reached, positions, 0), axis=dim)
        return values, idx

    @classmethod
    def _cummax_with_indices(cls, tensor: A, dim: int) -> tuple[A, A]:
        return cls._cum_extreme_with_indices(tensor, dim, cls.xp.maximum.accumulate)

    @classmethod
    def _cummin_with_indices(cls, tensor: A, dim: int) -> tuple[A, A]:
        return cls._cum_extreme_with_indices(tensor, dim, cls.xp.minimum.accumulate)

    @classmethod
    def _sort_with_indices(cls, tensor: A, dim: int, descending: bool) -> tuple[A, A]:
        # bfloat16 (ml_dtypes) sorts NaN out of place; its float32 keys sort NaN last.
        keys = tensor.astype(np.float32) if tensor.dtype == DType.bfloat16.numpy else tensor
        if descending:
            # Reversing a stable ascending sort of the reversed input is a stable descending
            # sort of the input: equal keys keep their original order.
            order = cls.xp.argsort(cls.xp.flip(keys, dim), axis=dim, kind="stable")
            idx = (tensor.shape[dim] - 1) - cls.xp.flip(order, dim)
        else:
            idx = cls.xp.argsort(keys, axis=dim, kind="stable")
        idx = idx.astype(np.int64, copy=False)
        return cls.xp.take_along_axis(tensor, idx, axis=dim), idx

    @classmethod
    def _equal(cls, lhs: A, rhs: Any) -> A:
        return cls.xp.equal(lhs, rhs)

    @classmethod
    def _not_equal(cls, lhs: A, rhs: Any) -> A:
        return cls.xp.not_equal(lhs, rhs)

    @classmethod
    def _greater(cls, lhs: A, rhs: Any) -> A:
        return cls.xp.greater(lhs, rhs)

    @classmethod
    def _greater_equal(cls, lhs: A, rhs: Any) -> A:
        return cls.xp.greater_equal(lhs, rhs)

    @classmethod
    def _lower(cls, lhs: A, rhs: Any) -> A:
        return cls.xp.less(lhs, rhs)

    @classmethod
    def _lower_equal(cls, lhs: A, rhs: Any) -> A:
        return cls.xp.less_equal(lhs, rhs)

