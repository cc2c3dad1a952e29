"""bfloat16 across DLPack, both ways.

DLPack has a bfloat16 type code (``kDLBfloat``, 4) and torch speaks it, but NumPy cannot export
or import it (its bfloat16 comes from ml_dtypes). So a bfloat16 array crosses as its raw 16-bit
storage: exported as a ``uint16`` view whose capsule is retagged ``kDLBfloat``, imported through
a producer wrapper that retags the capsule ``uint16`` and is viewed as bfloat16 afterwards.
Zero copy both ways; the capsule's owner and deleter are untouched, only its dtype field.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from burnpy.backend.dtype import DType
from burnpy.backend.errors import DTypeError

_KDL_UINT = 1
_KDL_BFLOAT = 4
_KDL_CPU = 1


class _DLDataType(ctypes.Structure):
    _fields_ = (("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16))


class _DLDevice(ctypes.Structure):
    _fields_ = (("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32))


class _DLTensor(ctypes.Structure):
    _fields_ = (("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.c_void_p),
                ("strides", ctypes.c_void_p), ("byte_offset", ctypes.c_uint64))


class _DLManagedTensor(ctypes.Structure):
    """The capsule ``"dltensor"`` (DLPack before 1.0)."""

    _fields_ = (("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p))


class _DLManagedTensorVersioned(ctypes.Structure):
    """The capsule ``"dltensor_versioned"`` (DLPack 1.x)."""

    _fields_ = (("major", ctypes.c_uint32), ("minor", ctypes.c_uint32),
                ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p),
                ("flags", ctypes.c_uint64), ("dl_tensor", _DLTensor))


_capsule_name = ctypes.pythonapi.PyCapsule_GetName
_capsule_name.restype = ctypes.c_char_p
_capsule_name.argtypes = (ctypes.py_object,)
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = (ctypes.py_object, ctypes.c_char_p)


def _dtype_field(capsule: Any) -> _DLDataType:
    """The dtype field of an unconsumed DLPack capsule, writable in place."""
    name = _capsule_name(capsule)
    address = _capsule_pointer(capsule, name)
    if name == b"dltensor":
        return _DLManagedTensor.from_address(address).dl_tensor.dtype
    if name == b"dltensor_versioned":
        return _DLManagedTensorVersioned.from_address(address).dl_tensor.dtype
    raise DTypeError(f"DLPack: unexpected capsule {name!r}")


def export_bfloat16(array: Any, kwargs: dict[str, Any]) -> Any:
    """A DLPack capsule of a bfloat16 ``array`` (NumPy or CuPy), typed ``kDLBfloat``."""
    capsule = array.view(np.uint16).__dlpack__(**kwargs)
    field = _dtype_field(capsule)
    field.code = _KDL_BFLOAT
    return capsule


class BFloat16Producer:
    """Wraps a DLPack producer for an importer that lacks bfloat16: a ``kDLBfloat`` capsule is
    handed on as ``uint16`` and ``bfloat16`` records it, so the result is viewed back."""

    __slots__ = ("bfloat16", "producer")

    def __init__(self, producer: Any) -> None:
        """Wrap ``producer`` (anything with ``__dlpack__`` and ``__dlpack_device__``)."""
        self.producer = producer
        self.bfloat16 = False

    def __dlpack__(self, **kwargs: Any) -> Any:
        """The producer's capsule, retagged ``uint16`` when it holds bfloat16."""
        capsule = self.producer.__dlpack__(**kwargs)
        field = _dtype_field(capsule)
        if field.code == _KDL_BFLOAT and field.bits == 16:
            field.code = _KDL_UINT
            self.bfloat16 = True
        return capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        """The producer's device."""
        return self.producer.__dlpack_device__()

    def restore(self, array: Any) -> Any:
        """``array`` as imported, viewed as bfloat16 when the producer's data was."""
        return array.view(DType.bfloat16.numpy) if self.bfloat16 else array


def host_values(obj: Any) -> Any:
    """A NumPy view of a host DLPack producer's values (torch's bfloat16 included), which
    ``TensorData.from_any`` then copies; anything else (lists, NumPy arrays, CUDA tensors) is
    returned as it is."""
    if isinstance(obj, np.ndarray | np.generic) or not hasattr(obj, "__dlpack__"):
        return obj
    try:
        on_host = obj.__dlpack_device__()[0] == _KDL_CPU
    except (AttributeError, TypeError):
        return obj
    if not on_host:
        return obj
    producer = BFloat16Producer(obj)
    return producer.restore(np.from_dlpack(producer))
