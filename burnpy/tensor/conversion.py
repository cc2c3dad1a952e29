"""Reading values out (NumPy, lists, DLPack, Python numbers), moving between devices and
backends, and casts (``ConversionOps``, a mixin of ``Tensor``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from burnpy.backend.data import TensorData
from burnpy.backend.device import Device
from burnpy.backend.dtype import DType, DTypeLike
from burnpy.backend.errors import (
    DeviceMismatchError,
    DTypeError,
    KindError,
    ShapeError,
    describe,
)
from burnpy.tensor._core import BOOL, FLOAT, INT, QUANTIZED, TensorBase, new
from burnpy.tensor.creation import CreationOps, check_supported
from burnpy.tensor.dlpack import export_bfloat16

if TYPE_CHECKING:
    from burnpy.backend.base import Backend
    from burnpy.tensor.tensor import Tensor


def _names_a_dtype(name: str) -> bool:
    """Whether ``name`` is a dtype's name (``"float16"``) rather than a device's."""
    try:
        DType.of(name)
    except (DTypeError, KeyError, ValueError, TypeError):
        return False
    return True


class ConversionOps:
    """``Tensor``'s reads (NumPy, lists, numbers, DLPack), moves and casts."""

    __slots__ = ()

    def into_data(self: Tensor) -> TensorData:
        """The values on the host, with their dtype."""
        b, kind, p = self.backend, self.kind, self.primitive
        if kind is FLOAT:
            return b.float_into_data(p)
        if kind is INT:
            return b.int_into_data(p)
        if kind is BOOL:
            return b.bool_into_data(p)
        return b.q_into_data(p)

    def to_numpy(self: Tensor) -> np.ndarray:
        """The values as a NumPy array on the host."""
        return self.into_data().array

    numpy = to_numpy

    def tolist(self: Tensor) -> Any:
        """The values as nested Python lists (a 0-d tensor gives a number)."""
        return self.to_numpy().tolist()

    def item(self: Tensor) -> float | int | bool:
        """The single value of a one-element tensor as a Python number."""
        if self.numel() != 1:
            raise ShapeError(f"item: the tensor has {self.numel()} elements "
                             f"(shape {describe(self.shape)}), not 1")
        return self.to_numpy().reshape(()).item()

    def __float__(self: Tensor) -> float:
        """The value of a one-element tensor as a Python float."""
        return float(self.item())

    def __int__(self: Tensor) -> int:
        """The value of a one-element tensor as a Python int."""
        return int(self.item())

    def __index__(self: Tensor) -> int:
        """An int tensor's single value as a Python index (``range(t)``, ``lst[t]``)."""
        if self.kind is not INT:
            raise KindError("__index__: only int tensors can be used as Python indices")
        return int(self.item())

    def __bool__(self: Tensor) -> bool:
        """The truth value of a one-element tensor; more elements are ambiguous (a ShapeError)."""
        if self.numel() != 1:
            raise ShapeError(f"the truth value of a tensor with {self.numel()} elements is "
                             "ambiguous; use .any() or .all()")
        return bool(self.item())

    def __array__(self: Tensor, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        """The values as a NumPy array (``np.asarray(t)``), optionally cast or copied."""
        arr = self.to_numpy()
        if dtype is not None:
            arr = arr.astype(dtype, copy=False)
        return arr.copy() if copy else arr

    def __dlpack__(self: Tensor, *, stream: Any = None, max_version: tuple[int, int] | None = None,
                   dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
        """Zero-copy export when the primitive speaks DLPack (NumPy, CuPy), else a host copy.

        bfloat16 is exported with DLPack's bfloat16 type, which torch imports (NumPy's
        ``from_dlpack`` cannot: use ``to_numpy()``, an ml_dtypes array). The keywords are the
        DLPack protocol's; only those given are passed on, so exporters of older protocol
        versions keep working.
        """
        given = {"stream": stream, "max_version": max_version, "dl_device": dl_device,
                 "copy": copy}
        kwargs = {k: v for k, v in given.items() if v is not None}
        source = self._dlpack_source()
        if self.kind is FLOAT and self.dtype is DType.bfloat16:
            return export_bfloat16(source, kwargs)
        return source.__dlpack__(**kwargs)

    def __dlpack_device__(self: Tensor) -> tuple[int, int]:
        """The DLPack ``(device type, device id)`` of ``__dlpack__``'s export."""
        return self._dlpack_source().__dlpack_device__()

    def _dlpack_source(self: Tensor) -> Any:
        prim = self.primitive
        if self.kind is not QUANTIZED and hasattr(prim, "__dlpack__"):
            return prim
        return self.to_numpy()

    def to(self: Tensor, *args: Device | DTypeLike | Tensor, dtype: DTypeLike | None = None,
           device: Device | str | None = None, non_blocking: bool = False,
           copy: bool = False) -> Tensor:
        """Move to a device and/or cast to a dtype, with torch's forms: ``to(dtype)``,
        ``to(device)``, ``to(device, dtype)``, ``to(other)`` (its device and dtype), and the
        keywords ``dtype=``, ``device=`` and ``copy=`` (a new tensor even when nothing
        changes). ``non_blocking`` is accepted for torch's sake (transfers already queue)."""
        for arg in args:
            if isinstance(arg, TensorBase):
                device, dtype = arg.device, arg.dtype
            elif isinstance(arg, Device | str) and not (isinstance(arg, str) and
                                                        _names_a_dtype(arg)):
                device = arg
            else:
                dtype = arg
        out = self if device is None else self._to_device(self._device_named(device))
        if dtype is not None:
            out = out.cast(dtype)
        return out.clone() if copy and out is self else out

    def _device_named(self: Tensor, device: Device | str) -> Device:
        """``device``, or the backend's device whose name (``str(device)``) it is."""
        if isinstance(device, Device):
            return device
        for candidate in self.backend.devices():
            if str(candidate) == device:
                return candidate
        raise DeviceMismatchError(f"to: no device named {device!r} on backend "
                                  f"{self.backend.name()} (devices: "
                                  f"{[str(d) for d in self.backend.devices()]})")

    def _to_device(self: Tensor, target: Device) -> Tensor:
        """This tensor on ``target``, one of its backend's devices."""
        if target == self.device:
            return self
        if target not in self.backend.devices():
            raise DeviceMismatchError(f"to: device {target} is not available on backend "
                                      f"{self.backend.name()} (devices: "
                                      f"{[str(d) for d in self.backend.devices()]})")
        b, kind, p = self.backend, self.kind, self.primitive
        if kind is FLOAT:
            moved = b.float_to_device(p, target)
        elif kind is INT:
            moved = b.int_to_device(p, target)
        elif kind is BOOL:
            moved = b.bool_to_device(p, target)
        else:
            moved = b.q_to_device(p, target)
        return new(b, moved, kind)

    def to_backend(self: Tensor, backend: type[Backend], device: Device | None = None) -> Tensor:
        """The same values on another backend type (through the host)."""
        if backend is self.backend and device is None:
            return self
        return CreationOps.from_data(self.into_data(), backend=backend, device=device)

    def cast(self: Tensor, dtype: DTypeLike) -> Tensor:
        """The same values in ``dtype``, changing kind when needed (float -> int truncates)."""
        dt = DType.of(dtype)
        b = self.backend
        check_supported(b, self.device, dt, "cast")
        p, kind = self.primitive, self.kind
        if kind is QUANTIZED:
            raise KindError("cast: dequantize() a quantized tensor first")
        if dt is self.dtype:
            return self
        if kind is FLOAT:
            if dt.is_float:
                return new(b, b.float_cast(p, dt), FLOAT)
            if dt.is_int:
                return new(b, b.float_into_int(p, dt), INT)
            return new(b, b.float_not_equal_elem(p, 0.0), BOOL)
        if kind is INT:
            if dt.is_float:
                return new(b, b.int_into_float(p, dt), FLOAT)
            if dt.is_int:
                return new(b, b.int_cast(p, dt), INT)
            return new(b, b.int_not_equal_elem(p, 0), BOOL)
        if dt.is_float:
            return new(b, b.bool_into_float(p, dt), FLOAT)
        if dt.is_int:
            return new(b, b.bool_into_int(p, dt), INT)
        raise DTypeError(f"cast: cannot cast {self.dtype!r} to {dt!r}")

    def double(self: Tensor) -> Tensor:
        """As float64."""
        return self.cast(DType.float64)

    def half(self: Tensor) -> Tensor:
        """As float16."""
        return self.cast(DType.float16)

    def long(self: Tensor) -> Tensor:
        """As int64."""
        return self.cast(DType.int64)

    # Last in the class body: from here on these names would shadow the builtin types in
    # annotations.

    def float(self: Tensor) -> Tensor:
        """As the backend's default float dtype (float32 on CPU, as torch's ``.float()``)."""
        return self.cast(self.backend.float_dtype)

    def int(self: Tensor) -> Tensor:
        """As the backend's default int dtype (int64 on CPU)."""
        return self.cast(self.backend.int_dtype)

    def bool(self: Tensor) -> Tensor:
        """As bools: non-zero is True."""
        return self.cast(DType.bool_)
