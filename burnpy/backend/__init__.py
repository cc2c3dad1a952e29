"""The Backend protocol and the backend-neutral values: DType, Device, TensorData, errors."""

from burnpy.backend.base import Backend, IncompleteBackendError
from burnpy.backend.data import TensorData
from burnpy.backend.device import Device
from burnpy.backend.distribution import Distribution
from burnpy.backend.dtype import DType
from burnpy.backend.errors import (
    AutodiffError,
    BackendMismatchError,
    BurnpyError,
    DeviceMismatchError,
    DivisionByZeroError,
    DTypeError,
    IndexOutOfBoundsError,
    InvalidArgumentError,
    KindError,
    RecordError,
    ShapeError,
    UnsupportedDTypeError,
)
from burnpy.backend.ops.module_ops import ConvOptions, ConvTransposeOptions

__all__ = [
    "AutodiffError", "Backend", "BackendMismatchError", "BurnpyError", "ConvOptions",
    "ConvTransposeOptions", "DType", "DTypeError", "Device", "DeviceMismatchError",
    "DivisionByZeroError", "Distribution", "IncompleteBackendError", "IndexOutOfBoundsError",
    "InvalidArgumentError", "KindError", "RecordError", "ShapeError", "TensorData",
    "UnsupportedDTypeError",
]
