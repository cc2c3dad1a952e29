"""The Backend protocol, the backend-neutral values (DType, Device, TensorData, errors) and
the registry of concrete backends (``register_backend``, ``default_backend``)."""

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
from burnpy.backend.registry import (
    BackendNotFoundError,
    default_backend,
    register_backend,
    registered_backends,
)

__all__ = [
    "AutodiffError", "Backend", "BackendMismatchError", "BackendNotFoundError", "BurnpyError",
    "ConvOptions", "ConvTransposeOptions", "DType", "DTypeError", "Device", "DeviceMismatchError",
    "DivisionByZeroError", "Distribution", "IncompleteBackendError", "IndexOutOfBoundsError",
    "InvalidArgumentError", "KindError", "RecordError", "ShapeError", "TensorData",
    "UnsupportedDTypeError", "default_backend", "register_backend", "registered_backends",
]
