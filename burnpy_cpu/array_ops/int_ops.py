"""Int ops over an array module. Sums and products accumulate in int64, as torch does."""

from __future__ import annotations

import operator

import numpy as np

from burnpy.backend.device import Device
from burnpy.backend.dtype import DType
from burnpy_cpu.array_ops._shared import A, ArrayLayoutOps

_raw = ArrayLayoutOps.__dict__.__getitem__
_I64 = np.dtype(np.int64)


class ArrayIntOps(ArrayLayoutOps):
    """The int op family."""

    int_from_data = _raw("_from_data")
    int_into_data = _raw("_into_data")
    int_empty = _raw("_empty")
    int_full = _raw("_full")
    int_cast = _raw("_cast")
    int_reshape = _raw("_reshape")
    int_swap_dims = _raw("_swap_dims")
    int_permute = _raw("_permute")
    int_flip = _raw("_flip")
    int_expand = _raw("_expand")
    int_repeat_dim = _raw("_repeat_dim")
    int_cat = _raw("_cat")
    int_unfold = _raw("_unfold")
    int_slice = _raw("_slice")
    int_slice_assign = _raw("_slice_assign")
    int_gather = _raw("_gather")
    int_scatter = _raw("_scatter")
    int_scatter_add = _raw("_scatter_add")
    int_select = _raw("_select")
    int_select_assign = _raw("_select_assign")
    int_select_add = _raw("_select_add")
    int_mask_where = _raw("_mask_where")
    int_mask_fill = _raw("_mask_fill")
    int_max = _raw("_max")
    int_min = _raw("_min")
    int_max_dim_with_indices = _raw("_max_dim_with_indices")
    int_min_dim_with_indices = _raw("_min_dim_with_indices")
    int_cummax_with_indices = _raw("_cummax_with_indices")
    int_cummin_with_indices = _raw("_cummin_with_indices")
    int_sort_with_indices = _raw("_sort_with_indices")
    int_equal = int_equal_elem = _raw("_equal")
    int_not_equal = int_not_equal_elem = _raw("_not_equal")
    int_greater = int_greater_elem = _raw("_greater")
    int_greater_equal = int_greater_equal_elem = _raw("_greater_equal")
    int_lower = int_lower_elem = _raw("_lower")
    int_lower_equal = int_lower_equal_elem = _raw("_lower_equal")

    int_add = int_add_scalar = staticmethod(operator.add)
    int_sub = int_sub_scalar = staticmethod(operator.sub)
    int_mul = int_mul_scalar = staticmethod(operator.mul)
    int_div = int_div_scalar = staticmethod(operator.floordiv)
    int_remainder = int_remainder_scalar = staticmethod(operator.mod)
    int_matmul = staticmethod(operator.matmul)
    int_neg = staticmethod(operator.neg)
    int_abs = staticmethod(operator.abs)
    int_powi_scalar = staticmethod(operator.pow)
    int_bitwise_and = staticmethod(operator.and_)
    int_bitwise_or = staticmethod(operator.or_)
    int_bitwise_xor = staticmethod(operator.xor)
    int_bitwise_not = staticmethod(operator.invert)
    int_bitwise_left_shift = staticmethod(operator.lshift)
    int_bitwise_right_shift = staticmethod(operator.rshift)

    @classmethod
    def int_random(cls, shape: tuple[int, ...], low: int, high: int, device: Device,
                   dtype: DType) -> A:
        with cls._on(device):
            sample = cls._generator(device).integers(low, high, size=shape, dtype=np.int64)
            return cls.xp.asarray(sample).astype(dtype.numpy, copy=False)

    @classmethod
    def int_arange(cls, start: int, end: int, step: int, device: Device, dtype: DType) -> A:
        with cls._on(device):
            return cls.xp.arange(start, end, step, dtype=dtype.numpy)

    @staticmethod
    def int_into_float(tensor: A, dtype: DType) -> A:
        return tensor.astype(dtype.numpy)

    @classmethod
    def int_sign(cls, tensor: A) -> A:
        return cls.xp.sign(tensor)

    @classmethod
    def int_clamp(cls, tensor: A, min: int | None, max: int | None) -> A:
        return cls.xp.clip(tensor, min, max)

    @classmethod
    def int_sum(cls, tensor: A) -> A:
        return cls.xp.asarray(tensor.sum(dtype=_I64))

    @staticmethod
    def int_sum_dim(tensor: A, dim: int) -> A:
        return tensor.sum(axis=dim, keepdims=True, dtype=_I64)

    @classmethod
    def int_prod(cls, tensor: A) -> A:
        return cls.xp.asarray(tensor.prod(dtype=_I64))

    @staticmethod
    def int_prod_dim(tensor: A, dim: int) -> A:
        return tensor.prod(axis=dim, keepdims=True, dtype=_I64)

    @staticmethod
    def int_cumsum(tensor: A, dim: int) -> A:
        return tensor.cumsum(axis=dim, dtype=_I64)

    @staticmethod
    def int_cumprod(tensor: A, dim: int) -> A:
        return tensor.cumprod(axis=dim, dtype=_I64)
