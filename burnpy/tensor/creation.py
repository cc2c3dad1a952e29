"""Creating tensors: from data (copied, or shared with NumPy and DLPack producers), filled,
random and ranges (``CreationOps``, a mixin of ``Tensor``), on ``default_backend()`` unless a
backend is given."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from burnpy.backend.data import TensorData
from burnpy.backend.device import Device
from burnpy.backend.distribution import Distribution
from burnpy.backend.dtype import DType, DTypeLike, dtype_of_numpy
from burnpy.backend.errors import (
    BackendMismatchError,
    DeviceMismatchError,
    DTypeError,
    InvalidArgumentError,
    ShapeError,
    UnsupportedDTypeError,
    describe,
)
from burnpy.backend.registry import default_backend
from burnpy.tensor._core import BOOL, FLOAT, INT, QUANTIZED, is_tensor, new
from burnpy.tensor.checks import as_int
from burnpy.tensor.dlpack import BFloat16Producer, host_values

if TYPE_CHECKING:
    from burnpy.backend.base import Backend
    from burnpy.tensor.tensor import Tensor


def _kind_of(dtype: DType) -> str:
    return dtype.kind


def _device_for(b: type[Backend], device: Device | None) -> Device:
    if device is None:
        return b.default_device()
    if device not in b.devices():
        raise DeviceMismatchError(f"device {device} is not available on backend {b.name()}")
    return device


def check_supported(b: type[Backend], device: Device, dt: DType, op: str) -> None:
    if not b.supports_dtype(device, dt):
        raise UnsupportedDTypeError(f"{op}: backend {b.name()} does not support dtype {dt!r} "
                                    f"on device {device}", dt)


def _shape_arg(op: str, shape: Sequence[int] | int) -> tuple[int, ...]:
    shp = (shape,) if isinstance(shape, int) else tuple(shape)
    if any(not isinstance(s, int | np.integer) or s < 0 for s in shp):
        raise ShapeError(f"{op}: invalid shape {shp!r} (dims must be non-negative ints)")
    return tuple(map(as_int, shp))


def _varargs_shape(shape: tuple[Any, ...]) -> tuple[int, ...]:
    if len(shape) == 1 and isinstance(shape[0], Sequence):
        return tuple(shape[0])
    return tuple(shape)


def from_owned_data(data: np.ndarray | TensorData, *, backend: type[Backend],
                    device: Device | None = None, dtype: DTypeLike | None = None) -> Tensor:
    """``Tensor.from_data`` without its copy, for burnpy's own code only: ``data`` is an array
    burnpy made that nothing else holds or writes (a batch a ``DataLoader`` gathered)."""
    return _from_values(data, backend, device, dtype, copy=False)


def _from_values(data: Any, backend: type[Backend] | None, device: Device | None,
                 dtype: DTypeLike | None, copy: bool) -> Tensor:
    b = backend or default_backend()
    data = data.into_data() if is_tensor(data) else host_values(data)
    td = TensorData.from_any(data, dtype, default_float=b.float_dtype, default_int=b.int_dtype,
                             copy=copy)
    return _from_tensor_data(b, td, device, "from_data")


def _from_tensor_data(b: type[Backend], td: TensorData, device: Device | None, op: str) -> Tensor:
    dev = _device_for(b, device)
    check_supported(b, dev, td.dtype, op)
    kind = _kind_of(td.dtype)
    fn = {FLOAT: b.float_from_data, INT: b.int_from_data, BOOL: b.bool_from_data,
          QUANTIZED: b.q_from_data}[kind]
    return new(b, fn(td, dev), kind)


def _filled(op: str, shape: Sequence[int] | int, value: Any, backend: type[Backend] | None,
            device: Device | None, dtype: DTypeLike | None) -> Tensor:
    b = backend or default_backend()
    dev = _device_for(b, device)
    dt = DType.of(dtype) if dtype is not None else b.float_dtype
    check_supported(b, dev, dt, op)
    shp = _shape_arg(op, shape)
    if dt.is_float:
        prim = b.float_empty(shp, dev, dt) if value is None else b.float_full(shp, float(value),
                                                                               dev, dt)
        return new(b, prim, FLOAT)
    if dt.is_int:
        prim = b.int_empty(shp, dev, dt) if value is None else b.int_full(shp, int(value), dev, dt)
        return new(b, prim, INT)
    if dt.is_bool:
        prim = b.bool_empty(shp, dev) if value is None else b.bool_full(shp, bool(value), dev)
        return new(b, prim, BOOL)
    raise DTypeError(f"{op}: cannot create a tensor of dtype {dt!r}")


class CreationOps:
    """``Tensor``'s constructors (static) and ``*_like`` methods."""

    __slots__ = ()

    @staticmethod
    def from_data(data: Any, *, backend: type[Backend] | None = None,
                  device: Device | None = None, dtype: DTypeLike | None = None) -> Tensor:
        """From nested lists, a scalar, a NumPy array (dtype kept), ``TensorData``, a tensor or a
        host DLPack producer such as a torch CPU tensor (its dtype kept, bfloat16 too).

        Always a copy, as ``torch.tensor``: later writes to the source never reach the tensor
        (``bp.from_numpy`` and ``Tensor.from_dlpack`` share the source's memory instead).
        """
        return _from_values(data, backend, device, dtype, copy=True)

    @staticmethod
    def empty(shape: Sequence[int] | int, *, backend: type[Backend] | None = None,
              device: Device | None = None, dtype: DTypeLike | None = None) -> Tensor:
        """Uninitialized values of ``shape`` (float by default)."""
        return _filled("empty", shape, None, backend, device, dtype)

    @staticmethod
    def zeros(shape: Sequence[int] | int, *, backend: type[Backend] | None = None,
              device: Device | None = None, dtype: DTypeLike | None = None) -> Tensor:
        """Zeros of ``shape`` (float by default)."""
        return _filled("zeros", shape, 0, backend, device, dtype)

    @staticmethod
    def ones(shape: Sequence[int] | int, *, backend: type[Backend] | None = None,
             device: Device | None = None, dtype: DTypeLike | None = None) -> Tensor:
        """Ones of ``shape`` (float by default)."""
        return _filled("ones", shape, 1, backend, device, dtype)

    @staticmethod
    def full(shape: Sequence[int] | int, fill_value: float | bool, *,
             backend: type[Backend] | None = None, device: Device | None = None,
             dtype: DTypeLike | None = None) -> Tensor:
        """Filled with ``fill_value``; the dtype follows the value's type unless given."""
        if dtype is None and isinstance(fill_value, bool):
            dtype = DType.bool_
        elif dtype is None and isinstance(fill_value, int):
            dtype = (backend or default_backend()).int_dtype
        return _filled("full", shape, fill_value, backend, device, dtype)

    def zeros_like(self: Tensor, *, dtype: DTypeLike | None = None) -> Tensor:
        """Zeros of this shape, backend and device, in this dtype or ``dtype``."""
        return CreationOps.zeros(self.shape, backend=self.backend, device=self.device,
                                 dtype=self.dtype if dtype is None else dtype)

    def ones_like(self: Tensor, *, dtype: DTypeLike | None = None) -> Tensor:
        """Ones of this shape, backend and device, in this dtype or ``dtype``."""
        return CreationOps.ones(self.shape, backend=self.backend, device=self.device,
                                dtype=self.dtype if dtype is None else dtype)

    def full_like(self: Tensor, fill_value: float, *, dtype: DTypeLike | None = None) -> Tensor:
        """A tensor of this shape, backend and device filled with ``fill_value``, in this
        dtype or ``dtype``."""
        return CreationOps.full(self.shape, fill_value, backend=self.backend, device=self.device,
                                dtype=self.dtype if dtype is None else dtype)

    @staticmethod
    def random(shape: Sequence[int] | int, distribution: Distribution | None = None, *,
               backend: type[Backend] | None = None, device: Device | None = None,
               dtype: DTypeLike | None = None) -> Tensor:
        """Samples of ``distribution`` (default uniform [0, 1)) from the device's generator."""
        b = backend or default_backend()
        dev = _device_for(b, device)
        dt = DType.of(dtype) if dtype is not None else b.float_dtype
        if not dt.is_float:
            raise DTypeError(f"random: dtype must be a float dtype, got {dt!r} "
                             "(use Tensor.randint for integers)")
        check_supported(b, dev, dt, "random")
        shp = _shape_arg("random", shape)
        return new(b, b.float_random(shp, distribution or Distribution.default(), dev, dt), FLOAT)

    @staticmethod
    def rand(*shape: int, backend: type[Backend] | None = None, device: Device | None = None,
             dtype: DTypeLike | None = None) -> Tensor:
        """Uniform on [0, 1) (torch.rand)."""
        return CreationOps.random(_varargs_shape(shape), Distribution.default(), backend=backend,
                                  device=device, dtype=dtype)

    @staticmethod
    def randn(*shape: int, backend: type[Backend] | None = None, device: Device | None = None,
              dtype: DTypeLike | None = None) -> Tensor:
        """Standard normal samples (torch.randn)."""
        return CreationOps.random(_varargs_shape(shape), Distribution.normal(0.0, 1.0),
                                  backend=backend, device=device, dtype=dtype)

    @staticmethod
    def randint(low: int, high: int, shape: Sequence[int] | int, *,
                backend: type[Backend] | None = None, device: Device | None = None,
                dtype: DTypeLike | None = None) -> Tensor:
        """Uniform integers in [low, high)."""
        if high <= low:
            raise InvalidArgumentError(f"randint: need low < high, got low={low}, high={high}")
        b = backend or default_backend()
        dev = _device_for(b, device)
        dt = DType.of(dtype) if dtype is not None else b.int_dtype
        if not dt.is_int:
            raise DTypeError(f"randint: dtype must be an int dtype, got {dt!r}")
        check_supported(b, dev, dt, "randint")
        return new(b, b.int_random(_shape_arg("randint", shape), low, high, dev, dt), INT)

    @staticmethod
    def arange(start: float, end: float | None = None, step: float = 1, *,
               backend: type[Backend] | None = None, device: Device | None = None,
               dtype: DTypeLike | None = None) -> Tensor:
        """``start, start+step, ...`` below ``end`` (``arange(n)`` is 0..n-1): ints when all
        three are ints, else floats (the backend's float dtype), ``ceil((end - start) / step)``
        of them, each ``start + i * step`` computed in float64 as torch does."""
        if end is None:
            start, end = 0, start
        if step == 0:
            raise InvalidArgumentError("arange: step must be non-zero")
        b = backend or default_backend()
        dev = _device_for(b, device)
        integral = all(isinstance(v, int) for v in (start, end, step))
        dt = DType.of(dtype) if dtype is not None else (b.int_dtype if integral
                                                        else b.float_dtype)
        if not integral:
            n = max(0, math.ceil((end - start) / step))
            values = np.arange(n, dtype=np.float64) * float(step) + float(start)
            return CreationOps.from_data(values, backend=b, device=dev, dtype=dt)
        if dt.is_float:
            return CreationOps.arange(start, end, step, backend=b, device=dev).cast(dt)
        if not dt.is_int:
            raise DTypeError(f"arange: dtype must be int or float, got {dt!r}")
        check_supported(b, dev, dt, "arange")
        return new(b, b.int_arange(as_int(start), as_int(end), as_int(step), dev, dt), INT)

    @staticmethod
    def linspace(start: float, end: float, steps: int, *, backend: type[Backend] | None = None,
                 device: Device | None = None, dtype: DTypeLike | None = None) -> Tensor:
        """``steps`` evenly spaced floats from ``start`` to ``end`` inclusive."""
        if steps < 0:
            raise InvalidArgumentError(f"linspace: steps must be >= 0, got {steps}")
        b = backend or default_backend()
        dt = DType.of(dtype) if dtype is not None else b.float_dtype
        idx = CreationOps.arange(0, steps, backend=b, device=device).cast(dt)
        if steps == 1:
            return idx + start
        return idx * ((end - start) / (steps - 1)) + start

    @staticmethod
    def eye(n: int, m: int | None = None, *, backend: type[Backend] | None = None,
            device: Device | None = None, dtype: DTypeLike | None = None) -> Tensor:
        """An ``n x m`` identity matrix."""
        m = n if m is None else m
        b = backend or default_backend()
        rows = CreationOps.arange(0, n, backend=b, device=device).reshape(n, 1)
        cols = CreationOps.arange(0, m, backend=b, device=device).reshape(1, m)
        return (rows == cols).cast(dtype if dtype is not None else b.float_dtype)

    @staticmethod
    def from_inner(tensor: Tensor, *, backend: type[Backend]) -> Tensor:
        """Lift a tensor of ``backend``'s inner backend into ``backend`` (Burn's ``from_inner``)."""
        inner = getattr(backend, "InnerBackend", None)
        if inner is None:
            raise BackendMismatchError(f"from_inner: {backend.name()} is not a decorator backend")
        if tensor.backend is not inner:
            raise BackendMismatchError(
                f"from_inner: expected a tensor of {inner.name()}, got one of "
                f"{tensor.backend.name()}")
        fn = {FLOAT: "from_inner", INT: "int_from_inner", BOOL: "bool_from_inner",
              QUANTIZED: "q_from_inner"}[tensor.kind]
        return new(backend, getattr(backend, fn)(tensor.primitive), tensor.kind)

    @staticmethod
    def from_dlpack(obj: Any, *, backend: type[Backend] | None = None,
                    device: Device | None = None) -> Tensor:
        """From any object with ``__dlpack__``: zero-copy when the backend can import it
        (``array_from_dlpack``: NumPy on CPU, CuPy on CUDA), else through the host. bfloat16
        (torch's) crosses as its 16-bit storage, on backends that support bfloat16."""
        b = backend or default_backend()
        producer = BFloat16Producer(obj)
        importer = getattr(b, "array_from_dlpack", None)
        if importer is None or device is not None:
            host = producer.restore(np.from_dlpack(producer))
            return CreationOps.from_data(host, backend=b, device=device)
        arr = importer(producer)
        if producer.bfloat16 and not b.supports_dtype(b.float_device(arr), DType.bfloat16):
            raise UnsupportedDTypeError(
                f"from_dlpack: backend {b.name()} does not support bfloat16 (shape "
                f"{describe(tuple(arr.shape))}); cast to float32 before the export "
                "(torch: t.float()), or import on CpuBackend", DType.bfloat16)
        arr = producer.restore(arr)
        try:
            dt = dtype_of_numpy(arr.dtype)
        except KeyError:
            raise DTypeError(f"from_dlpack: dtype {arr.dtype} is not supported") from None
        t = new(b, arr, _kind_of(dt))
        t._shares = arr
        return t

    @staticmethod
    def from_numpy(array: np.ndarray, *, backend: type[Backend] | None = None) -> Tensor:
        """``torch.from_numpy``: a tensor sharing ``array``'s memory (any strides, dtype kept).

        Writes into the array show in the tensor (in views of it and in values saved for
        backward too, as torch's do; ``clone()`` copies), and its in-place ops (``t[i] = v``,
        ``add_``) write into the array. Only host backends can share: ``CpuBackend`` and
        ``Autodiff(CpuBackend)`` (which refuses in-place writes to such a tensor); others, and
        lazy ``Fusion``, raise: ``Tensor.from_data`` copies, as ``from_numpy(a).to(device)``.
        """
        from burnpy.fusion.backend import FusionBackend

        b = backend or default_backend()
        if not isinstance(array, np.ndarray):
            raise InvalidArgumentError(
                f"from_numpy: expected a NumPy array, got {type(array).__name__}")
        try:
            dt = dtype_of_numpy(array.dtype)
        except KeyError:
            raise DTypeError(
                f"from_numpy: NumPy dtype {array.dtype} (shape {describe(array.shape)}) cannot "
                "be shared (a supported dtype in native byte order can); copy it with "
                "Tensor.from_data") from None
        inner = getattr(b, "InnerBackend", None)
        if inner is not None and not issubclass(b, FusionBackend):
            t = CreationOps.from_inner(CreationOps.from_numpy(array, backend=inner), backend=b)
        else:
            t = _from_tensor_data(b, TensorData(array, dt), None, "from_numpy")
            p = t.primitive
            if inner is not None or not (isinstance(p, np.ndarray) and (
                    p is array or np.may_share_memory(p, array) or not array.size)):
                raise InvalidArgumentError(
                    f"from_numpy: backend {b.name()} cannot share a NumPy array's memory (only "
                    "CpuBackend and Autodiff(CpuBackend) can; Fusion would read it lazily); "
                    "copy it with CreationOps.from_data(array, backend=...), as torch's "
                    "from_numpy(a).to(device) does")
        t._shares = array
        return t

    @staticmethod
    def logspace(start: float, end: float, steps: int, base: float = 10.0, *,
                 backend: type[Backend] | None = None, device: Device | None = None,
                 dtype: DTypeLike | None = None) -> Tensor:
        """torch.logspace: ``base ** linspace(start, end, steps)``."""
        exps = CreationOps.linspace(start, end, steps, backend=backend, device=device,
                                    dtype=dtype)
        return base ** exps

    @staticmethod
    def randperm(n: int, *, backend: type[Backend] | None = None, device: Device | None = None,
                 dtype: DTypeLike | None = None) -> Tensor:
        """torch.randperm: a random permutation of ``0..n-1`` from the seeded generator (the
        order of uniform keys)."""
        if n < 0:
            raise InvalidArgumentError(f"randperm: n must be >= 0, got {n}")
        probe = CreationOps.zeros((), backend=backend, device=device)
        b, dev = probe.backend, probe.device
        wide = DType.float64 if b.supports_dtype(dev, DType.float64) else DType.float32
        perm = CreationOps.random((n,), Distribution.default(), backend=b, device=dev,
                                  dtype=wide).argsort()
        return perm if dtype is None else perm.cast(dtype)
