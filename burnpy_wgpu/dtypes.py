"""Element types on WebGPU: which NumPy dtypes a buffer can hold and their WGSL spellings.

WGSL has ``f32``, ``f16`` (with the ``shader-f16`` feature), ``i32`` and ``u32``; it has no
64-bit types and cannot store ``bool`` in a buffer, so bools are stored as ``u32`` 0/1.
Half-precision values are computed in ``f32`` and rounded when stored.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from burnpy.backend.dtype import DType
from burnpy_wgpu.errors import WgpuDTypeError

F32 = np.dtype(np.float32)
F16 = np.dtype(np.float16)
I32 = np.dtype(np.int32)
U32 = np.dtype(np.uint32)
BOOL = np.dtype(np.bool_)

_STORAGE: dict[np.dtype[Any], str] = {F32: "f32", F16: "f16", I32: "i32", U32: "u32", BOOL: "u32"}
_COMPUTE: dict[np.dtype[Any], str] = {F32: "f32", F16: "f32", I32: "i32", U32: "u32", BOOL: "u32"}
_HOST: dict[np.dtype[Any], np.dtype[Any]] = {F32: F32, F16: F16, I32: I32, U32: U32, BOOL: U32}
_WHY = {
    DType.float64: "WGSL has no f64",
    DType.int64: "WGSL has no i64",
    DType.bfloat16: "WGSL has no bf16",
    DType.uint64: "WGSL has no u64",
    DType.int16: "WGSL has no 16-bit integers",
    DType.uint16: "WGSL has no 16-bit integers",
    DType.int8: "WGSL has no 8-bit integers",
    DType.uint8: "WGSL has no 8-bit integers",
}


def storage_type(dtype: np.dtype[Any]) -> str:
    """The WGSL element type of a buffer holding ``dtype``."""
    return _STORAGE[dtype]


def compute_type(dtype: np.dtype[Any]) -> str:
    """The WGSL type values of ``dtype`` are computed in (f16 widens to f32, bool is u32)."""
    return _COMPUTE[dtype]


def host_dtype(dtype: np.dtype[Any]) -> np.dtype[Any]:
    """The NumPy dtype of the buffer's bytes (bool is stored as uint32)."""
    return _HOST[dtype]


def check_dtype(dtype: DType, has_f16: bool) -> np.dtype[Any]:
    """The NumPy dtype for ``dtype``, or a WgpuDTypeError saying why WebGPU cannot hold it."""
    if dtype is DType.float16 and not has_f16:
        raise WgpuDTypeError("WebGPU: float16 needs the adapter feature 'shader-f16', which "
                             "this adapter lacks", dtype)
    if dtype.is_quantized or dtype in _WHY:
        why = _WHY.get(dtype, "quantized tensors have no WebGPU storage")
        raise WgpuDTypeError(f"WebGPU cannot hold {dtype!r} tensors ({why}); use float32, "
                             "float16, int32, uint32 or bool", dtype)
    return dtype.numpy


def supported(dtype: DType, has_f16: bool) -> bool:
    """Whether WebGPU can store and compute ``dtype`` (f16 only with ``shader-f16``;
    quantized values are packed into u32 words)."""
    if dtype is DType.float16:
        return has_f16
    return dtype.is_quantized or dtype in (DType.float32, DType.int32, DType.uint32,
                                           DType.bool_)
