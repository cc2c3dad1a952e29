"""Bool ops over an array module."""

from __future__ import annotations

import operator

import numpy as np

from burnpy.backend.device import Device
from burnpy.backend.dtype import DType
from burnpy_cpu.array_ops._shared import A, ArrayLayoutOps

_raw = ArrayLayoutOps.__dict__.__getitem__


class ArrayBoolOps(ArrayLayoutOps):
    """The bool op family."""

    bool_from_data = _raw("_from_data")
    bool_into_data = _raw("_into_data")
    bool_reshape = _raw("_reshape")
    bool_swap_dims = _raw("_swap_dims")
    bool_permute = _raw("_permute")
    bool_flip = _raw("_flip")
    bool_expand = _raw("_expand")
    bool_repeat_dim = _raw("_repeat_dim")
    bool_cat = _raw("_cat")
    bool_unfold = _raw("_unfold")
    bool_slice = _raw("_slice")
    bool_slice_assign = _raw("_slice_assign")
    bool_gather = _raw("_gather")
    bool_select = _raw("_select")
    bool_mask_where = _raw("_mask_where")
    bool_equal = _raw("_equal")
    bool_not_equal = _raw("_not_equal")

    bool_not = staticmethod(operator.invert)
    bool_and = staticmethod(operator.and_)
    bool_or = staticmethod(operator.or_)
    bool_xor = staticmethod(operator.xor)

    @classmethod
    def bool_empty(cls, shape: tuple[int, ...], device: Device) -> A:
        with cls._on(device):
            return cls.xp.empty(shape, dtype=np.bool_)

    @classmethod
    def bool_full(cls, shape: tuple[int, ...], fill_value: bool, device: Device) -> A:
        with cls._on(device):
            return cls.xp.full(shape, bool(fill_value), dtype=np.bool_)

    @staticmethod
    def bool_into_int(tensor: A, dtype: DType) -> A:
        return tensor.astype(dtype.numpy)

    @staticmethod
    def bool_into_float(tensor: A, dtype: DType) -> A:
        return tensor.astype(dtype.numpy)

    @classmethod
    def bool_any(cls, tensor: A) -> A:
        return cls.xp.asarray(tensor.any())

    @staticmethod
    def bool_any_dim(tensor: A, dim: int) -> A:
        return tensor.any(axis=dim, keepdims=True)

    @classmethod
    def bool_all(cls, tensor: A) -> A:
        return cls.xp.asarray(tensor.all())

    @staticmethod
    def bool_all_dim(tensor: A, dim: int) -> A:
        return tensor.all(axis=dim, keepdims=True)

    @classmethod
    def bool_argwhere(cls, tensor: A) -> A:
        return cls.xp.argwhere(tensor).astype(np.int64, copy=False)

    @classmethod
    def bool_nonzero(cls, tensor: A) -> list[A]:
        return [i.astype(np.int64, copy=False) for i in cls.xp.nonzero(tensor)]
