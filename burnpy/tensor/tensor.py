"""``Tensor``: the user-facing tensor over any backend, of kind float, int, bool or quantized.

A Tensor is three slots: the backend class, the backend's primitive and the kind. Every op
validates its inputs here (shapes, dtypes, kinds, backends, devices), once, then calls one
backend op; backends never re-check.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from burnpy.backend.data import TensorData
from burnpy.backend.device import Device
from burnpy.backend.distribution import Distribution
from burnpy.backend.dtype import DType, DTypeLike, dtype_of_numpy
from burnpy.backend.errors import (
    AutodiffError,
    BackendMismatchError,
    BurnpyError,
    DeviceMismatchError,
    DTypeError,
    InvalidArgumentError,
    KindError,
    ShapeError,
    UnsupportedDTypeError,
    article,
    describe,
)
from burnpy.tensor import _core
from burnpy.tensor._core import BOOL, FLOAT, INT, QUANTIZED, new
from burnpy.tensor.arithmetic import ArithmeticOps
from burnpy.tensor.checks import normalize_dim, numel
from burnpy.tensor.indexing import IndexingOps
from burnpy.tensor.layout import LayoutOps
from burnpy.tensor.quantized import QuantizedOps
from burnpy.tensor.reduction import ReductionOps

if TYPE_CHECKING:
    from burnpy.backend.base import Backend

def _default_backend() -> type[Backend]:
    from burnpy_cpu import CpuBackend

    return CpuBackend


def _kind_of(dtype: DType) -> str:
    return dtype.kind


class Tensor(ArithmeticOps, LayoutOps, ReductionOps, IndexingOps, QuantizedOps):
    """A tensor of one backend type. Build with ``Tensor.from_data``, ``zeros``, ``random``...

    ``backend`` is the backend class (``CpuBackend``, ``Autodiff(CpuBackend)``...), ``primitive``
    its native value, ``kind`` one of ``"float"``, ``"int"``, ``"bool"``, ``"quantized"``.
    """

    __slots__ = ("__weakref__", "backend", "kind", "primitive")

    backend: type[Backend]
    primitive: Any
    kind: str

    def __init__(self, backend: type[Backend], primitive: Any, kind: str) -> None:
        if kind not in (FLOAT, INT, BOOL, QUANTIZED):
            raise KindError(f"Tensor: unknown kind {kind!r}")
        self.backend = backend
        self.primitive = primitive
        self.kind = kind

    # ---- creation ----------------------------------------------------------------------------
    @staticmethod
    def from_data(data: Any, *, backend: type[Backend] | None = None,
                  device: Device | None = None, dtype: DTypeLike | None = None) -> Tensor:
        """From nested lists, a scalar, a NumPy array (dtype kept) or ``TensorData``."""
        b = backend or _default_backend()
        if isinstance(data, Tensor):
            data = data.into_data()
        td = TensorData.from_any(data, dtype, default_float=b.float_dtype,
                                 default_int=b.int_dtype)
        return _from_tensor_data(b, td, device, "from_data")

    @staticmethod
    def empty(shape: Sequence[int] | int, *, backend: type[Backend] | None = None,
              device: Device | None = None, dtype: DTypeLike | None = None) -> Tensor:
        return _filled("empty", shape, None, backend, device, dtype)

    @staticmethod
    def zeros(shape: Sequence[int] | int, *, backend: type[Backend] | None = None,
              device: Device | None = None, dtype: DTypeLike | None = None) -> Tensor:
        return _filled("zeros", shape, 0, backend, device, dtype)

    @staticmethod
    def ones(shape: Sequence[int] | int, *, backend: type[Backend] | None = None,
             device: Device | None = None, dtype: DTypeLike | None = None) -> Tensor:
        return _filled("ones", shape, 1, backend, device, dtype)

    @staticmethod
    def full(shape: Sequence[int] | int, fill_value: float | bool, *,
             backend: type[Backend] | None = None, device: Device | None = None,
             dtype: DTypeLike | None = None) -> Tensor:
        """Filled with ``fill_value``; the dtype follows the value's type unless given."""
        if dtype is None and isinstance(fill_value, bool):
            dtype = DType.bool_
        elif dtype is None and isinstance(fill_value, int):
            dtype = (backend or _default_backend()).int_dtype
        return _filled("full", shape, fill_value, backend, device, dtype)

    def zeros_like(self) -> Tensor:
        return Tensor.zeros(self.shape, backend=self.backend, device=self.device, dtype=self.dtype)

    def ones_like(self) -> Tensor:
        return Tensor.ones(self.shape, backend=self.backend, device=self.device, dtype=self.dtype)

    def full_like(self, fill_value: float) -> Tensor:
        return Tensor.full(self.shape, fill_value, backend=self.backend, device=self.device,
                           dtype=self.dtype)

    @staticmethod
    def random(shape: Sequence[int] | int, distribution: Distribution | None = None, *,
               backend: type[Backend] | None = None, device: Device | None = None,
               dtype: DTypeLike | None = None) -> Tensor:
        """Samples of ``distribution`` (default uniform [0, 1)) from the device's generator."""
        b = backend or _default_backend()
        dev = _device_for(b, device)
        dt = DType.of(dtype) if dtype is not None else b.float_dtype
        if not dt.is_float:
            raise DTypeError(f"random: dtype must be a float dtype, got {dt!r} "
                             "(use Tensor.randint for integers)")
        _check_supported(b, dev, dt, "random")
        shp = _shape_arg("random", shape)
        return new(b, b.float_random(shp, distribution or Distribution.default(), dev, dt), FLOAT)

    @staticmethod
    def rand(*shape: int, backend: type[Backend] | None = None, device: Device | None = None,
             dtype: DTypeLike | None = None) -> Tensor:
        """Uniform on [0, 1) (torch.rand)."""
        return Tensor.random(_varargs_shape(shape), Distribution.default(), backend=backend,
                             device=device, dtype=dtype)

    @staticmethod
    def randn(*shape: int, backend: type[Backend] | None = None, device: Device | None = None,
              dtype: DTypeLike | None = None) -> Tensor:
        """Standard normal samples (torch.randn)."""
        return Tensor.random(_varargs_shape(shape), Distribution.normal(0.0, 1.0),
                             backend=backend, device=device, dtype=dtype)

    @staticmethod
    def randint(low: int, high: int, shape: Sequence[int] | int, *,
                backend: type[Backend] | None = None, device: Device | None = None,
                dtype: DTypeLike | None = None) -> Tensor:
        """Uniform integers in [low, high)."""
        if high <= low:
            raise InvalidArgumentError(f"randint: need low < high, got low={low}, high={high}")
        b = backend or _default_backend()
        dev = _device_for(b, device)
        dt = DType.of(dtype) if dtype is not None else b.int_dtype
        if not dt.is_int:
            raise DTypeError(f"randint: dtype must be an int dtype, got {dt!r}")
        _check_supported(b, dev, dt, "randint")
        return new(b, b.int_random(_shape_arg("randint", shape), low, high, dev, dt), INT)

    @staticmethod
    def arange(start: int, end: int | None = None, step: int = 1, *,
               backend: type[Backend] | None = None, device: Device | None = None,
               dtype: DTypeLike | None = None) -> Tensor:
        """Integers ``start, start+step, ...`` below ``end`` (int kind; ``arange(n)`` is 0..n-1)."""
        if end is None:
            start, end = 0, start
        if step == 0:
            raise InvalidArgumentError("arange: step must be non-zero")
        b = backend or _default_backend()
        dev = _device_for(b, device)
        dt = DType.of(dtype) if dtype is not None else b.int_dtype
        if dt.is_float:
            return Tensor.arange(start, end, step, backend=b, device=dev).cast(dt)
        if not dt.is_int:
            raise DTypeError(f"arange: dtype must be int or float, got {dt!r}")
        _check_supported(b, dev, dt, "arange")
        return new(b, b.int_arange(int(start), int(end), int(step), dev, dt), INT)

    @staticmethod
    def linspace(start: float, end: float, steps: int, *, backend: type[Backend] | None = None,
                 device: Device | None = None, dtype: DTypeLike | None = None) -> Tensor:
        """``steps`` evenly spaced floats from ``start`` to ``end`` inclusive."""
        if steps < 0:
            raise InvalidArgumentError(f"linspace: steps must be >= 0, got {steps}")
        b = backend or _default_backend()
        dt = DType.of(dtype) if dtype is not None else b.float_dtype
        idx = Tensor.arange(0, steps, backend=b, device=device).cast(dt)
        if steps == 1:
            return idx + start
        return idx * ((end - start) / (steps - 1)) + start

    @staticmethod
    def eye(n: int, m: int | None = None, *, backend: type[Backend] | None = None,
            device: Device | None = None, dtype: DTypeLike | None = None) -> Tensor:
        """An ``n x m`` identity matrix."""
        m = n if m is None else m
        b = backend or _default_backend()
        rows = Tensor.arange(0, n, backend=b, device=device).reshape(n, 1)
        cols = Tensor.arange(0, m, backend=b, device=device).reshape(1, m)
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
        (``array_from_dlpack``: NumPy on CPU, CuPy on CUDA), else through the host."""
        b = backend or _default_backend()
        importer = getattr(b, "array_from_dlpack", None)
        if importer is not None and device is None:
            arr = importer(obj)
            try:
                dt = dtype_of_numpy(arr.dtype)
            except KeyError:
                raise DTypeError(f"from_dlpack: dtype {arr.dtype} is not supported") from None
            return new(b, arr, _kind_of(dt))
        return Tensor.from_data(np.from_dlpack(obj), backend=b, device=device)

    # ---- attributes --------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self.primitive.shape

    @property
    def dtype(self) -> DType:
        if self.kind is QUANTIZED:
            return self.primitive.dtype
        return dtype_of_numpy(self.primitive.dtype)

    @property
    def device(self) -> Device:
        return getattr(self.backend, _DEVICE_OP[self.kind])(self.primitive)

    @property
    def ndim(self) -> int:
        return len(self.primitive.shape)

    def numel(self) -> int:
        return numel(self.primitive.shape)

    def size(self, dim: int | None = None) -> int | tuple[int, ...]:
        """The shape, or one dim's size (torch.Tensor.size)."""
        if dim is None:
            return self.shape
        return self.shape[normalize_dim("size", dim, self.ndim)]

    def __len__(self) -> int:
        if not self.shape:
            raise ShapeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        for i in range(len(self)):
            yield self[i]

    __hash__ = object.__hash__

    # ---- conversion --------------------------------------------------------------------------
    def into_data(self) -> TensorData:
        """The values on the host, with their dtype."""
        return getattr(self.backend, _INTO_DATA_OP[self.kind])(self.primitive)

    def to_numpy(self) -> np.ndarray:
        return self.into_data().array

    numpy = to_numpy

    def tolist(self) -> Any:
        return self.to_numpy().tolist()

    def item(self) -> float | int | bool:
        """The single value of a one-element tensor as a Python number."""
        if self.numel() != 1:
            raise ShapeError(f"item: the tensor has {self.numel()} elements "
                             f"(shape {describe(self.shape)}), not 1")
        return self.to_numpy().reshape(()).item()

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self.kind is not INT:
            raise KindError("__index__: only int tensors can be used as Python indices")
        return int(self.item())

    def __bool__(self) -> bool:
        if self.numel() != 1:
            raise ShapeError(f"the truth value of a tensor with {self.numel()} elements is "
                             "ambiguous; use .any() or .all()")
        return bool(self.item())

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        arr = self.to_numpy()
        if dtype is not None:
            arr = arr.astype(dtype, copy=False)
        return arr.copy() if copy else arr

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        """Zero-copy export when the primitive speaks DLPack (NumPy, CuPy), else a host copy."""
        return self._dlpack_source().__dlpack__(*args, **kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._dlpack_source().__dlpack_device__()

    def _dlpack_source(self) -> Any:
        prim = self.primitive
        if self.kind is not QUANTIZED and hasattr(prim, "__dlpack__"):
            return prim
        return self.to_numpy()

    def to(self, target: Device | DTypeLike) -> Tensor:
        """Move to a device, or cast to a dtype (torch's ``to``)."""
        if isinstance(target, Device):
            if target not in self.backend.devices():
                raise DeviceMismatchError(f"to: device {target} is not available on backend "
                                          f"{self.backend.name()} (devices: "
                                          f"{[str(d) for d in self.backend.devices()]})")
            return new(self.backend, getattr(self.backend, _TO_DEVICE_OP[self.kind])(
                self.primitive, target), self.kind)
        return self.cast(target)

    def to_backend(self, backend: type[Backend], device: Device | None = None) -> Tensor:
        """The same values on another backend type (through the host)."""
        if backend is self.backend and device is None:
            return self
        return Tensor.from_data(self.into_data(), backend=backend, device=device)

    def cast(self, dtype: DTypeLike) -> Tensor:
        """The same values in ``dtype``, changing kind when needed (float -> int truncates)."""
        dt = DType.of(dtype)
        b = self.backend
        _check_supported(b, self.device, dt, "cast")
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

    def float(self) -> Tensor:
        """As the backend's default float dtype (float32 on CPU, as torch's ``.float()``)."""
        return self.cast(self.backend.float_dtype)

    def int(self) -> Tensor:
        """As the backend's default int dtype (int64 on CPU)."""
        return self.cast(self.backend.int_dtype)

    def bool(self) -> Tensor:
        return self.cast(DType.bool_)

    def double(self) -> Tensor:
        return self.cast(DType.float64)

    def half(self) -> Tensor:
        return self.cast(DType.float16)

    def long(self) -> Tensor:
        return self.cast(DType.int64)

    def __repr__(self) -> str:
        try:
            arr = self.to_numpy()
            body = repr(arr.item()) if arr.ndim == 0 else np.array2string(
                arr, separator=", ", threshold=200, precision=4, prefix="Tensor(")
        except BurnpyError as exc:
            body = f"<unreadable: {exc}>"
        extra = ""
        if self.kind is FLOAT and self.backend.ad_enabled() and self.is_require_grad():
            extra = ", require_grad=True"
        if self.kind is QUANTIZED:
            extra = f", scheme={self.primitive.scheme}"
        return (f"Tensor({body}, shape={describe(self.shape)}, dtype={self.dtype!r}, "
                f"backend={self.backend.name()}, device={self.device}{extra})")

    # ---- autodiff ----------------------------------------------------------------------------
    def require_grad(self, flag: bool = True) -> Tensor:
        """Mark a leaf float tensor as tracked (``requires_grad_`` in torch); returns it."""
        b = self.backend
        if self.kind is not FLOAT:
            raise KindError(f"require_grad: only float tensors can track gradients, "
                            f"got {article(self.kind)} tensor of dtype {self.dtype!r}")
        if not b.ad_enabled():
            raise AutodiffError(f"require_grad: backend {b.name()} does not track gradients; "
                                f"build the tensor on Autodiff({b.__name__})")
        self.primitive = b.float_set_require_grad(self.primitive, flag)
        return self

    requires_grad_ = require_grad

    def is_require_grad(self) -> bool:
        return self.kind is FLOAT and self.backend.float_is_require_grad(self.primitive)

    @property
    def requires_grad(self) -> bool:
        return self.is_require_grad()

    def retain_grad(self) -> Tensor:
        """Keep this intermediate tensor's gradient in the ``Gradients`` of a backward pass."""
        self._autodiff_backend("retain_grad").retain_grad(self.primitive)
        return self

    def detach(self) -> Tensor:
        """The same values, cut from the gradient graph."""
        if self.kind is not FLOAT:
            return self
        return new(self.backend, self.backend.float_detach(self.primitive), FLOAT)

    def backward(self, grad_output: Tensor | None = None, retain_graph: bool = False) -> Any:
        """Gradients of this tensor (seeded with ones, or ``grad_output``) for tracked leaves."""
        b = self._autodiff_backend("backward")
        seed = None
        if grad_output is not None:
            if grad_output.shape != self.shape:
                raise ShapeError(f"backward: grad_output shape {describe(grad_output.shape)} "
                                 f"does not match the output shape {describe(self.shape)}")
            seed = _inner_float_primitive(b, grad_output, "backward")
        return b.backward(self.primitive, seed, retain_graph)

    def grad(self, grads: Any) -> Tensor | None:
        """This tensor's gradient in ``grads`` (a tensor of the inner backend), or None."""
        b = self._autodiff_backend("grad")
        g = b.grad(self.primitive, grads)
        return None if g is None else new(b.InnerBackend, g, FLOAT)

    def grad_remove(self, grads: Any) -> Tensor | None:
        """Pop this tensor's gradient from ``grads``."""
        b = self._autodiff_backend("grad_remove")
        g = b.grad_remove(self.primitive, grads)
        return None if g is None else new(b.InnerBackend, g, FLOAT)

    def grad_replace(self, grads: Any, grad: Tensor) -> None:
        """Set this tensor's gradient in ``grads`` to ``grad`` (a tensor of the inner backend)."""
        b = self._autodiff_backend("grad_replace")
        if grad.shape != self.shape:
            raise ShapeError(f"grad_replace: gradient shape {describe(grad.shape)} does not "
                             f"match the tensor shape {describe(self.shape)}")
        b.grad_replace(self.primitive, grads, _inner_float_primitive(b, grad, "grad_replace"))

    def inner(self) -> Tensor:
        """This tensor on the inner backend, untracked (Burn's ``inner``): for inference."""
        b = self.backend
        inner = getattr(b, "InnerBackend", None)
        if inner is None:
            raise BackendMismatchError(f"inner: {b.name()} is not a decorator backend "
                                       "(it has no inner backend)")
        fn = {FLOAT: "inner", INT: "int_inner", BOOL: "bool_inner", QUANTIZED: "q_inner"}[self.kind]
        return new(inner, getattr(b, fn)(self.primitive), self.kind)

    def _autodiff_backend(self, op: str) -> Any:
        if self.kind is not FLOAT:
            raise KindError(f"{op}: gradients exist only for float tensors, got {self.kind}")
        if not self.backend.ad_enabled():
            raise AutodiffError(f"{op}: backend {self.backend.name()} does not track "
                                f"gradients; use Autodiff({self.backend.__name__})")
        return self.backend


_DEVICE_OP = {FLOAT: "float_device", INT: "int_device", BOOL: "bool_device",
              QUANTIZED: "q_device"}
_INTO_DATA_OP = {FLOAT: "float_into_data", INT: "int_into_data", BOOL: "bool_into_data",
                 QUANTIZED: "q_into_data"}
_TO_DEVICE_OP = {FLOAT: "float_to_device", INT: "int_to_device", BOOL: "bool_to_device",
                 QUANTIZED: "q_to_device"}


def _inner_float_primitive(b: Any, t: Tensor, op: str) -> Any:
    """The primitive of ``t`` as a float tensor of ``b``'s inner backend (or ``b`` itself)."""
    if t.kind is not FLOAT:
        raise KindError(f"{op}: expected a float tensor, got {t.kind}")
    if t.backend is b.InnerBackend:
        return t.primitive
    if t.backend is b:
        return b.inner(t.primitive)
    raise BackendMismatchError(f"{op}: expected a tensor of {b.InnerBackend.name()}, got one "
                               f"of {t.backend.name()}")


def _device_for(b: type[Backend], device: Device | None) -> Device:
    if device is None:
        return b.default_device()
    if device not in b.devices():
        raise DeviceMismatchError(f"device {device} is not available on backend {b.name()}")
    return device


def _check_supported(b: type[Backend], device: Device, dt: DType, op: str) -> None:
    if not b.supports_dtype(device, dt):
        raise UnsupportedDTypeError(f"{op}: backend {b.name()} does not support dtype {dt!r} "
                                    f"on device {device}")


def _shape_arg(op: str, shape: Sequence[int] | int) -> tuple[int, ...]:
    shp = (shape,) if isinstance(shape, int) else tuple(shape)
    if any(not isinstance(s, int | np.integer) or s < 0 for s in shp):
        raise ShapeError(f"{op}: invalid shape {shp!r} (dims must be non-negative ints)")
    return tuple(int(s) for s in shp)


def _varargs_shape(shape: tuple[Any, ...]) -> tuple[int, ...]:
    if len(shape) == 1 and isinstance(shape[0], Sequence):
        return tuple(shape[0])
    return tuple(shape)


def _from_tensor_data(b: type[Backend], td: TensorData, device: Device | None, op: str) -> Tensor:
    dev = _device_for(b, device)
    _check_supported(b, dev, td.dtype, op)
    kind = _kind_of(td.dtype)
    fn = {FLOAT: b.float_from_data, INT: b.int_from_data, BOOL: b.bool_from_data,
          QUANTIZED: b.q_from_data}[kind]
    return new(b, fn(td, dev), kind)


def _filled(op: str, shape: Sequence[int] | int, value: Any, backend: type[Backend] | None,
            device: Device | None, dtype: DTypeLike | None) -> Tensor:
    b = backend or _default_backend()
    dev = _device_for(b, device)
    dt = DType.of(dtype) if dtype is not None else b.float_dtype
    _check_supported(b, dev, dt, op)
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


_core.TENSOR_CLASS = Tensor
