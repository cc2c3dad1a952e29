"""The map between ONNX element types (``TensorProto.DataType``) and burnpy dtypes.

burnpy has no complex, string, float8, float4 or 4/2-bit integer dtypes: a tensor of those
raises ``UnsupportedOnnxError`` naming the ONNX type (they fall in the node suite's excluded
categories). ``index_dtype`` and ``for_backend`` run ONNX's int64 (its type of shapes and
indices) as the backend's int dtype where the backend has no int64 (WebGPU: int32).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from onnx import TensorProto

from burnpy.backend.dtype import DType
from burnpy.backend.errors import DTypeError
from burnpy.onnx.errors import UnsupportedOnnxError

if TYPE_CHECKING:
    from burnpy.backend import Backend
    from burnpy.backend.device import Device

#: ONNX element type -> burnpy dtype, for every ONNX type burnpy stores.
TO_BURNPY: dict[int, DType] = {
    TensorProto.FLOAT: DType.float32,
    TensorProto.DOUBLE: DType.float64,
    TensorProto.FLOAT16: DType.float16,
    TensorProto.BFLOAT16: DType.bfloat16,
    TensorProto.INT64: DType.int64,
    TensorProto.INT32: DType.int32,
    TensorProto.INT16: DType.int16,
    TensorProto.INT8: DType.int8,
    TensorProto.UINT8: DType.uint8,
    TensorProto.UINT16: DType.uint16,
    TensorProto.UINT32: DType.uint32,
    TensorProto.UINT64: DType.uint64,
    TensorProto.BOOL: DType.bool_,
}

#: burnpy dtype -> ONNX element type (the inverse of ``TO_BURNPY``).
TO_ONNX: dict[DType, int] = {dt: code for code, dt in TO_BURNPY.items()}


def onnx_type_name(code: int) -> str:
    """``FLOAT16`` for 10: the name ONNX gives an element type code."""
    try:
        return TensorProto.DataType.Name(code)
    except ValueError:
        return f"type code {code}"


def burnpy_dtype(code: int, where: str) -> DType:
    """The burnpy dtype of ONNX element type ``code``; ``where`` names the node or value."""
    try:
        return TO_BURNPY[code]
    except KeyError:
        raise UnsupportedOnnxError(f"{where}: ONNX element type {onnx_type_name(code)} has "
                                   "no burnpy dtype") from None


def check_array_dtype(array: np.ndarray, where: str) -> None:
    """Raise ``UnsupportedOnnxError`` when ``array``'s NumPy dtype has no burnpy dtype."""
    try:
        dt = DType.of(array.dtype)
    except DTypeError:
        raise UnsupportedOnnxError(f"{where}: NumPy dtype {array.dtype} has no burnpy "
                                   "dtype") from None
    if dt not in TO_ONNX:
        raise UnsupportedOnnxError(f"{where}: dtype {dt!r} is not an ONNX tensor type")


def index_dtype(dtype: DType, backend: type[Backend], device: Device | None) -> DType:
    """The dtype ``backend`` runs ONNX's ``dtype`` in: ``dtype`` itself, except int64 on a
    backend without it, which becomes the backend's int dtype (WebGPU: int32)."""
    if dtype is DType.int64 and not backend.supports_dtype(
            device or backend.default_device(), dtype):
        return backend.int_dtype
    return dtype


_INT64_ENDS = (np.iinfo(np.int64).min, np.iinfo(np.int64).max)


def for_backend(array: np.ndarray, backend: type[Backend], device: Device | None, where: str,
                *, host_floats: bool = False) -> np.ndarray:
    """``array`` in a dtype ``backend`` holds: int64 narrowed as ``index_dtype`` says, and
    with ``host_floats`` (a constant an op made on the host, float64 by NumPy's default, not
    by the model) float64 as the backend's float dtype where it has no float64. A narrowed
    int64 value out of range raises ``UnsupportedOnnxError``, except INT64_MIN and INT64_MAX
    (Slice's "to the end"), which become the narrower type's bounds."""
    target = array.dtype
    if target == np.int64:
        target = index_dtype(DType.int64, backend, device).numpy
    elif target == np.float64 and host_floats and not backend.supports_dtype(
            device or backend.default_device(), DType.float64):
        target = backend.float_dtype.numpy
    if target == array.dtype:
        return array
    if target.kind in "iu":
        info = np.iinfo(target)
        ends = np.isin(array, _INT64_ENDS)
        if np.any(((array < info.min) | (array > info.max)) & ~ends):
            raise UnsupportedOnnxError(f"{where}: int64 values beyond {target} (the int dtype "
                                       f"of backend {backend.name()}) are not supported")
        return np.clip(array, info.min, info.max).astype(target)
    return array.astype(target)
