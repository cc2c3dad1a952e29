"""The map between ONNX element types (``TensorProto.DataType``) and burnpy dtypes.

burnpy has no complex, string, float8, float4 or 4/2-bit integer dtypes: a tensor of those
raises ``UnsupportedOnnxError`` naming the ONNX type (they fall in the node suite's excluded
categories).
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from burnpy.backend.dtype import DType
from burnpy.backend.errors import DTypeError
from burnpy.onnx.errors import UnsupportedOnnxError

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
