"""``Tensor``: the user-facing tensor over any backend, of kind float, int, bool or quantized.

A Tensor is three slots: the backend class, the backend's primitive and the kind. Every op
validates its inputs here (shapes, dtypes, kinds, backends, devices), once, then calls one
backend op; backends never re-check.

Every public method is written in the class body below, so help(), pdoc and an IDE show its
signature and docstring; the longer general paths live in the sibling modules (``arithmetic``,
``layout``, ``reduction``, ``indexing``, ``quantized``) as functions of a Tensor.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeGuard, overload

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
    IndexOutOfBoundsError,
    InvalidArgumentError,
    KindError,
    ShapeError,
    UnsupportedDTypeError,
    article,
    describe,
)
from burnpy.tensor import _core, elementwise_math, shape_ops, statistics
from burnpy.tensor._core import BOOL, FLOAT, INT, QUANTIZED, check_same_backend, common_dtype, new
from burnpy.tensor.arithmetic import (
    ADD,
    ATAN2,
    BITWISE_AND,
    BITWISE_OR,
    BITWISE_XOR,
    DIV,
    EQUAL,
    FLOOR_DIV,
    GREATER,
    GREATER_EQUAL,
    HYPOT,
    LOGADDEXP,
    LOGADDEXP2,
    LOWER,
    LOWER_EQUAL,
    MUL,
    NOT_EQUAL,
    POW,
    REMAINDER,
    SUB,
    BinarySpec,
    all_false,
    as_number,
    binary_scalar,
    binary_tensors,
    float_unary,
    quantized_matmul,
    reflected,
    require_float,
    rounding,
    scalar_like,
    signed_unary,
)
from burnpy.tensor.checks import (
    broadcast_shapes,
    infer_shape,
    normalize_dim,
    normalize_dims,
    numel,
    python_int,
)
from burnpy.tensor.clamp_bounds import clamp_tensor_bounds
from burnpy.tensor.dlpack import BFloat16Producer, export_bfloat16, host_values
from burnpy.tensor.grad_method import GradMethod
from burnpy.tensor.indexing import (
    apply_basic,
    as_index_tensor,
    checked_indices,
    expand_ellipsis,
    gather_args,
    getitem_advanced,
    is_basic,
    resolve_basic,
    scatter_into,
    scatter_multiply,
    select_args,
    select_write,
)
from burnpy.tensor.inplace import accumulated, write_in_place
from burnpy.tensor.layout import cat, dims_arg, kind_op, stack
from burnpy.tensor.quantized import check_quantizable
from burnpy.tensor.reduction import (
    Dims,
    ValuesIndices,
    as_bool,
    check_nonempty,
    drop_dims,
    extreme_values,
    extreme_with_indices,
    numeric,
    reduce,
    scan_with_indices,
    zero_index,
)
from burnpy.tensor.scalar_dims import as_vector, check_scalar_dims, pair_as_vector
from burnpy.tensor.statistics import MinMax

if TYPE_CHECKING:
    from burnpy.autodiff.backend import AutodiffBackend
    from burnpy.autodiff.gradients import Gradients
    from burnpy.backend.base import Backend
    from burnpy.quantization.scheme import QuantScheme


def _default_backend() -> type[Backend]:
    from burnpy_cpu import CpuBackend

    return CpuBackend


def _names_a_dtype(name: str) -> bool:
    """Whether ``name`` is a dtype's name (``"float16"``) rather than a device's."""
    try:
        DType.of(name)
    except (DTypeError, KeyError, ValueError, TypeError):
        return False
    return True


def _kind_of(dtype: DType) -> str:
    return dtype.kind


class Tensor:
    """A tensor of one backend type. Build with ``Tensor.from_data``, ``zeros``, ``random``...

    ``backend`` is the backend class (``CpuBackend``, ``Autodiff(CpuBackend)``...), ``primitive``
    its native value, ``kind`` one of ``"float"``, ``"int"``, ``"bool"``, ``"quantized"``.
    """

    #: ``_view_of`` is set only on results of basic indexing: ``(base, key, base's primitive
    #: when read)``, so an in-place write to the result also writes into the base (torch's views).
    __slots__ = ("__weakref__", "_shares", "_view_of", "backend", "kind", "primitive")

    backend: type[Backend]
    primitive: Any
    kind: str
    _view_of: tuple[Tensor, tuple[Any, ...], Any]
    #: ``_shares`` is set only by ``from_numpy`` and ``from_dlpack``'s zero-copy import: the
    #: array whose memory the tensor shares, which its in-place writes also write into.
    _shares: Any

    def __init__(self, backend: type[Backend], primitive: Any, kind: str) -> None:
        """Wrap ``primitive`` of ``backend`` as a tensor of ``kind``; ops build tensors through
        the faster ``_core.new``, which skips this check.
        """
        if kind not in (FLOAT, INT, BOOL, QUANTIZED):
            raise KindError(f"Tensor: unknown kind {kind!r}")
        self.backend = backend
        self.primitive = primitive
        self.kind = kind

    # ---- creation ----------------------------------------------------------------------------
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
            dtype = (backend or _default_backend()).int_dtype
        return _filled("full", shape, fill_value, backend, device, dtype)

    def zeros_like(self, *, dtype: DTypeLike | None = None) -> Tensor:
        """Zeros of this shape, backend and device, in this dtype or ``dtype``."""
        return Tensor.zeros(self.shape, backend=self.backend, device=self.device,
                            dtype=self.dtype if dtype is None else dtype)

    def ones_like(self, *, dtype: DTypeLike | None = None) -> Tensor:
        """Ones of this shape, backend and device, in this dtype or ``dtype``."""
        return Tensor.ones(self.shape, backend=self.backend, device=self.device,
                           dtype=self.dtype if dtype is None else dtype)

    def full_like(self, fill_value: float, *, dtype: DTypeLike | None = None) -> Tensor:
        """A tensor of this shape, backend and device filled with ``fill_value``, in this
        dtype or ``dtype``."""
        return Tensor.full(self.shape, fill_value, backend=self.backend, device=self.device,
                           dtype=self.dtype if dtype is None else dtype)

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
        b = backend or _default_backend()
        dev = _device_for(b, device)
        integral = all(isinstance(v, int) for v in (start, end, step))
        dt = DType.of(dtype) if dtype is not None else (b.int_dtype if integral
                                                        else b.float_dtype)
        if not integral:
            n = max(0, math.ceil((end - start) / step))
            values = np.arange(n, dtype=np.float64) * float(step) + float(start)
            return Tensor.from_data(values, backend=b, device=dev, dtype=dt)
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
        (``array_from_dlpack``: NumPy on CPU, CuPy on CUDA), else through the host. bfloat16
        (torch's) crosses as its 16-bit storage, on backends that support bfloat16."""
        b = backend or _default_backend()
        producer = BFloat16Producer(obj)
        importer = getattr(b, "array_from_dlpack", None)
        if importer is None or device is not None:
            host = producer.restore(np.from_dlpack(producer))
            return Tensor.from_data(host, backend=b, device=device)
        arr = importer(producer)
        if producer.bfloat16 and not b.supports_dtype(b.float_device(arr), DType.bfloat16):
            raise UnsupportedDTypeError(
                f"from_dlpack: backend {b.name()} does not support bfloat16 (shape "
                f"{describe(tuple(arr.shape))}); cast to float32 before the export "
                "(torch: t.float()), or import on CpuBackend")
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

        b = backend or _default_backend()
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
            t = Tensor.from_inner(Tensor.from_numpy(array, backend=inner), backend=b)
        else:
            t = _from_tensor_data(b, TensorData(array, dt), None, "from_numpy")
            p = t.primitive
            if inner is not None or not (isinstance(p, np.ndarray) and (
                    p is array or np.may_share_memory(p, array) or not array.size)):
                raise InvalidArgumentError(
                    f"from_numpy: backend {b.name()} cannot share a NumPy array's memory (only "
                    "CpuBackend and Autodiff(CpuBackend) can; Fusion would read it lazily); "
                    "copy it with Tensor.from_data(array, backend=...), as torch's "
                    "from_numpy(a).to(device) does")
        t._shares = array
        return t

    # ---- attributes --------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        """The size of each dim."""
        return self.primitive.shape

    @property
    def dtype(self) -> DType:
        """The element type (``bp.float32``...); a quantized tensor reports its scheme's dtype."""
        if self.kind is QUANTIZED:
            return self.primitive.dtype
        return dtype_of_numpy(self.primitive.dtype)

    @property
    def device(self) -> Device:
        """The device the tensor lives on."""
        b, kind, p = self.backend, self.kind, self.primitive
        if kind is FLOAT:
            return b.float_device(p)
        if kind is INT:
            return b.int_device(p)
        if kind is BOOL:
            return b.bool_device(p)
        return b.q_device(p)

    @property
    def ndim(self) -> int:
        """The number of dims."""
        return len(self.primitive.shape)

    def dim(self) -> int:
        """The number of dimensions (torch's ``dim()``; ``ndim`` as a property)."""
        return self.ndim

    def numel(self) -> int:
        """The number of elements."""
        return numel(self.primitive.shape)

    def size(self, dim: int | None = None) -> int | tuple[int, ...]:
        """The shape, or one dim's size (torch.Tensor.size)."""
        if dim is None:
            return self.shape
        return self.shape[normalize_dim("size", dim, self.ndim)]

    def __len__(self) -> int:
        """The size of dim 0 (a 0-d tensor has no length)."""
        if not self.shape:
            raise ShapeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        """The sub-tensors along dim 0, in order."""
        for i in range(len(self)):
            yield self[i]

    __hash__ = object.__hash__

    # ---- conversion --------------------------------------------------------------------------
    def into_data(self) -> TensorData:
        """The values on the host, with their dtype."""
        b, kind, p = self.backend, self.kind, self.primitive
        if kind is FLOAT:
            return b.float_into_data(p)
        if kind is INT:
            return b.int_into_data(p)
        if kind is BOOL:
            return b.bool_into_data(p)
        return b.q_into_data(p)

    def to_numpy(self) -> np.ndarray:
        """The values as a NumPy array on the host."""
        return self.into_data().array

    numpy = to_numpy

    def tolist(self) -> Any:
        """The values as nested Python lists (a 0-d tensor gives a number)."""
        return self.to_numpy().tolist()

    def item(self) -> float | int | bool:
        """The single value of a one-element tensor as a Python number."""
        if self.numel() != 1:
            raise ShapeError(f"item: the tensor has {self.numel()} elements "
                             f"(shape {describe(self.shape)}), not 1")
        return self.to_numpy().reshape(()).item()

    def __float__(self) -> float:
        """The value of a one-element tensor as a Python float."""
        return float(self.item())

    def __int__(self) -> int:
        """The value of a one-element tensor as a Python int."""
        return int(self.item())

    def __index__(self) -> int:
        """An int tensor's single value as a Python index (``range(t)``, ``lst[t]``)."""
        if self.kind is not INT:
            raise KindError("__index__: only int tensors can be used as Python indices")
        return int(self.item())

    def __bool__(self) -> bool:
        """The truth value of a one-element tensor; more elements are ambiguous (a ShapeError)."""
        if self.numel() != 1:
            raise ShapeError(f"the truth value of a tensor with {self.numel()} elements is "
                             "ambiguous; use .any() or .all()")
        return bool(self.item())

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        """The values as a NumPy array (``np.asarray(t)``), optionally cast or copied."""
        arr = self.to_numpy()
        if dtype is not None:
            arr = arr.astype(dtype, copy=False)
        return arr.copy() if copy else arr

    def __dlpack__(self, *, stream: Any = None, max_version: tuple[int, int] | None = None,
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

    def __dlpack_device__(self) -> tuple[int, int]:
        """The DLPack ``(device type, device id)`` of ``__dlpack__``'s export."""
        return self._dlpack_source().__dlpack_device__()

    def _dlpack_source(self) -> Any:
        prim = self.primitive
        if self.kind is not QUANTIZED and hasattr(prim, "__dlpack__"):
            return prim
        return self.to_numpy()

    def to(self, *args: Device | DTypeLike | Tensor, dtype: DTypeLike | None = None,
           device: Device | str | None = None, non_blocking: bool = False,
           copy: bool = False) -> Tensor:
        """Move to a device and/or cast to a dtype, with torch's forms: ``to(dtype)``,
        ``to(device)``, ``to(device, dtype)``, ``to(other)`` (its device and dtype), and the
        keywords ``dtype=``, ``device=`` and ``copy=`` (a new tensor even when nothing
        changes). ``non_blocking`` is accepted for torch's sake (transfers already queue)."""
        for arg in args:
            if isinstance(arg, Tensor):
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

    def _device_named(self, device: Device | str) -> Device:
        """``device``, or the backend's device whose name (``str(device)``) it is."""
        if isinstance(device, Device):
            return device
        for candidate in self.backend.devices():
            if str(candidate) == device:
                return candidate
        raise DeviceMismatchError(f"to: no device named {device!r} on backend "
                                  f"{self.backend.name()} (devices: "
                                  f"{[str(d) for d in self.backend.devices()]})")

    def _to_device(self, target: Device) -> Tensor:
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

    def double(self) -> Tensor:
        """As float64."""
        return self.cast(DType.float64)

    def half(self) -> Tensor:
        """As float16."""
        return self.cast(DType.float16)

    def long(self) -> Tensor:
        """As int64."""
        return self.cast(DType.int64)

    def __repr__(self) -> str:
        """The values, shape, dtype, backend and device (and ``require_grad`` when tracked)."""
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
        if not _tracks_gradients(b):
            raise AutodiffError(f"require_grad: backend {b.name()} does not track gradients; "
                                f"build the tensor on Autodiff({b.__name__})")
        self.primitive = b.float_set_require_grad(self.primitive, flag)
        return self

    requires_grad_ = require_grad

    def is_require_grad(self) -> bool:
        """Whether this float tensor is tracked by autodiff (a leaf or a result)."""
        return self.kind is FLOAT and self.backend.float_is_require_grad(self.primitive)

    @property
    def requires_grad(self) -> bool:
        """torch's spelling of ``is_require_grad()``; ``t.requires_grad = False`` freezes a
        leaf as ``require_grad(False)`` does."""
        return self.is_require_grad()

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        self.require_grad(flag)

    def retain_grad(self) -> Tensor:
        """Keep this intermediate tensor's gradient in the ``Gradients`` of a backward pass."""
        self._autodiff_backend("retain_grad").retain_grad(self.primitive)
        return self

    def detach(self) -> Tensor:
        """The same values, cut from the gradient graph."""
        if self.kind is not FLOAT:
            return self
        return new(self.backend, self.backend.float_detach(self.primitive), FLOAT)

    def backward(self, grad_output: Tensor | None = None,
                 retain_graph: bool = False) -> Gradients:
        """Gradients of this tensor for every tracked leaf (and retained tensor) it depends on.

        Seeded with ones (Burn's rule: the gradient of ``self.sum()``) or with ``grad_output``,
        a float tensor of this shape. The graph is freed unless ``retain_graph``.
        """
        b = self._autodiff_backend("backward")
        seed = None
        if grad_output is not None:
            if grad_output.shape != self.shape:
                raise ShapeError(f"backward: grad_output shape {describe(grad_output.shape)} "
                                 f"does not match the output shape {describe(self.shape)}")
            seed = _inner_float_primitive(b, grad_output, "backward")
        return b.backward(self.primitive, seed, retain_graph)

    @GradMethod
    def grad(self, grads: Gradients) -> Tensor | None:
        """This tensor's gradient in ``grads`` (a tensor of the inner backend), or None.

        A method, as Burn's: ``w.grad.numpy()`` (torch's habit) raises ``GradAccessError``
        showing this call; ``w.grad is None`` cannot be caught and is always False.
        """
        b = self._autodiff_backend("grad")
        g = b.grad(self.primitive, grads)
        return None if g is None else new(b.InnerBackend, g, FLOAT)

    def grad_remove(self, grads: Gradients) -> Tensor | None:
        """Pop this tensor's gradient from ``grads``."""
        b = self._autodiff_backend("grad_remove")
        g = b.grad_remove(self.primitive, grads)
        return None if g is None else new(b.InnerBackend, g, FLOAT)

    def grad_replace(self, grads: Gradients, grad: Tensor) -> None:
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

    def _autodiff_backend(self, op: str) -> type[AutodiffBackend]:
        """This float tensor's backend, or the error saying why it has no gradients."""
        b = self.backend
        if self.kind is not FLOAT:
            raise KindError(f"{op}: gradients exist only for float tensors, got {self.kind}")
        if not _tracks_gradients(b):
            raise AutodiffError(f"{op}: backend {b.name()} does not track "
                                f"gradients; use Autodiff({b.__name__})")
        return b

    # ---- arithmetic ------------------------------------------------------------------------------
    # Operators broadcast NumPy-style and take a tensor or a Python number on either side. Same
    # kinds meet at the promoted dtype; an int tensor with a float tensor is a DTypeError.
    def add(self, other: Tensor | float, alpha: float = 1) -> Tensor:
        """Elementwise ``self + alpha * other`` (torch's ``alpha``, 1 by default)."""
        return _binary(self, other if alpha == 1 else other * alpha, ADD)

    __add__ = __radd__ = add

    def sub(self, other: Tensor | float, alpha: float = 1) -> Tensor:
        """Elementwise ``self - alpha * other`` (torch's ``alpha``, 1 by default)."""
        return _binary(self, other if alpha == 1 else other * alpha, SUB)

    __sub__ = sub

    def __rsub__(self, other: float) -> Tensor:
        """``other - self`` for a Python number ``other``."""
        return reflected(self, other, SUB)

    def mul(self, other: Tensor | float) -> Tensor:
        """Elementwise ``self * other``."""
        return _binary(self, other, MUL)

    __mul__ = __rmul__ = mul

    def div(self, other: Tensor | float, *,
            rounding_mode: Literal["trunc", "floor"] | None = None) -> Tensor:
        """Elementwise true division (int operands give a float result, as torch); with
        torch's ``rounding_mode`` the quotient rounded toward zero ("trunc") or down
        ("floor"), an int result between ints."""
        if rounding_mode is None:
            return _binary(self, other, DIV)
        return elementwise_math.div_rounded(self, other, rounding_mode)

    def __truediv__(self, other: Tensor | float) -> Tensor:
        """``self / other``: true division."""
        return _binary(self, other, DIV)

    def __rtruediv__(self, other: float) -> Tensor:
        """``other / self`` for a Python number ``other``."""
        return reflected(self, other, DIV)

    def floor_div(self, other: Tensor | float) -> Tensor:
        """Elementwise ``floor(self / other)``; an int division by zero is an error."""
        return _binary(self, other, FLOOR_DIV)

    __floordiv__ = floor_div

    def __rfloordiv__(self, other: float) -> Tensor:
        """``other // self`` for a Python number ``other``."""
        return reflected(self, other, FLOOR_DIV)

    def remainder(self, other: Tensor | float) -> Tensor:
        """Elementwise remainder with the sign of ``other`` (Python's ``%``)."""
        return _binary(self, other, REMAINDER)

    __mod__ = remainder

    def __rmod__(self, other: float) -> Tensor:
        """``other % self`` for a Python number ``other``."""
        return reflected(self, other, REMAINDER)

    def pow(self, other: Tensor | float) -> Tensor:
        """Elementwise ``self ** other``; an int tensor takes only non-negative int powers."""
        return _binary(self, other, POW)

    __pow__ = pow

    def __rpow__(self, other: float) -> Tensor:
        """``other ** self`` for a Python number ``other``."""
        return reflected(self, other, POW)

    # Comparisons return bool tensors, as in NumPy and torch: ``==`` and ``!=`` override
    # object's, whose result is a bool, hence the two narrow ignores.
    def equal(self, other: Tensor | float) -> Tensor:
        """Elementwise ``self == other`` as a bool tensor."""
        return _binary(self, other, EQUAL)

    eq = __eq__ = equal  # type: ignore[assignment]

    def not_equal(self, other: Tensor | float) -> Tensor:
        """Elementwise ``self != other`` as a bool tensor."""
        return _binary(self, other, NOT_EQUAL)

    ne = __ne__ = not_equal  # type: ignore[assignment]

    def greater(self, other: Tensor | float) -> Tensor:
        """Elementwise ``self > other`` as a bool tensor."""
        return _binary(self, other, GREATER)

    gt = __gt__ = greater

    def greater_equal(self, other: Tensor | float) -> Tensor:
        """Elementwise ``self >= other`` as a bool tensor."""
        return _binary(self, other, GREATER_EQUAL)

    ge = __ge__ = greater_equal

    def lower(self, other: Tensor | float) -> Tensor:
        """Elementwise ``self < other`` as a bool tensor (Burn's spelling of ``lt``)."""
        return _binary(self, other, LOWER)

    lt = __lt__ = lower

    def lower_equal(self, other: Tensor | float) -> Tensor:
        """Elementwise ``self <= other`` as a bool tensor."""
        return _binary(self, other, LOWER_EQUAL)

    le = __le__ = lower_equal

    def bitwise_and(self, other: Tensor | int) -> Tensor:
        """Elementwise ``&`` of int tensors, logical and of bool tensors."""
        return _binary(self, other, BITWISE_AND)

    __and__ = __rand__ = bitwise_and

    def bitwise_or(self, other: Tensor | int) -> Tensor:
        """Elementwise ``|`` of int tensors, logical or of bool tensors."""
        return _binary(self, other, BITWISE_OR)

    __or__ = __ror__ = bitwise_or

    def bitwise_xor(self, other: Tensor | int) -> Tensor:
        """Elementwise ``^`` of int tensors, logical xor of bool tensors."""
        return _binary(self, other, BITWISE_XOR)

    __xor__ = __rxor__ = bitwise_xor

    def atan2(self, other: Tensor) -> Tensor:
        """Elementwise angle of the point ``(other, self)`` in radians, in [-pi, pi]."""
        return _binary(self, other, ATAN2)

    def hypot(self, other: Tensor) -> Tensor:
        """Elementwise ``sqrt(self**2 + other**2)``, without overflow for large values."""
        return _binary(self, other, HYPOT)

    def logaddexp(self, other: Tensor) -> Tensor:
        """Elementwise ``log(exp(self) + exp(other))``, without overflow."""
        return _binary(self, other, LOGADDEXP)

    def logaddexp2(self, other: Tensor) -> Tensor:
        """Elementwise ``log2(2**self + 2**other)``, without overflow."""
        return _binary(self, other, LOGADDEXP2)

    # Elementwise math: float tensors only unless said otherwise.
    def neg(self) -> Tensor:
        """``-x`` (float or int)."""
        return signed_unary(self, "neg", self.backend.float_neg, self.backend.int_neg)

    __neg__ = neg

    def abs(self) -> Tensor:
        """``|x|`` (float or int)."""
        return signed_unary(self, "abs", self.backend.float_abs, self.backend.int_abs)

    __abs__ = abs

    def sign(self) -> Tensor:
        """-1, 0 or 1 by the sign of x (float or int)."""
        return signed_unary(self, "sign", self.backend.float_sign, self.backend.int_sign)

    def exp(self) -> Tensor:
        """``e ** x``."""
        return float_unary(self, "exp", self.backend.float_exp)

    def expm1(self) -> Tensor:
        """``e ** x - 1``, accurate near 0."""
        return float_unary(self, "expm1", self.backend.float_expm1)

    def log(self) -> Tensor:
        """Natural logarithm."""
        return float_unary(self, "log", self.backend.float_log)

    def log1p(self) -> Tensor:
        """``log(1 + x)``, accurate near 0."""
        return float_unary(self, "log1p", self.backend.float_log1p)

    def sqrt(self) -> Tensor:
        """Square root."""
        return float_unary(self, "sqrt", self.backend.float_sqrt)

    def square(self) -> Tensor:
        """``x * x`` (int tensors stay int, as torch's)."""
        if self.kind is INT:
            return self * self
        return float_unary(self, "square", self.backend.float_square)

    def recip(self) -> Tensor:
        """``1 / x``."""
        return float_unary(self, "recip", self.backend.float_recip)

    reciprocal = recip

    def sin(self) -> Tensor:
        """Sine (radians)."""
        return float_unary(self, "sin", self.backend.float_sin)

    def cos(self) -> Tensor:
        """Cosine (radians)."""
        return float_unary(self, "cos", self.backend.float_cos)

    def tan(self) -> Tensor:
        """Tangent (radians)."""
        return float_unary(self, "tan", self.backend.float_tan)

    def asin(self) -> Tensor:
        """Inverse sine, in [-pi/2, pi/2]."""
        return float_unary(self, "asin", self.backend.float_asin)

    arcsin = asin

    def acos(self) -> Tensor:
        """Inverse cosine, in [0, pi]."""
        return float_unary(self, "acos", self.backend.float_acos)

    arccos = acos

    def atan(self) -> Tensor:
        """Inverse tangent, in (-pi/2, pi/2)."""
        return float_unary(self, "atan", self.backend.float_atan)

    arctan = atan

    def sinh(self) -> Tensor:
        """Hyperbolic sine."""
        return float_unary(self, "sinh", self.backend.float_sinh)

    def cosh(self) -> Tensor:
        """Hyperbolic cosine."""
        return float_unary(self, "cosh", self.backend.float_cosh)

    def tanh(self) -> Tensor:
        """Hyperbolic tangent."""
        return float_unary(self, "tanh", self.backend.float_tanh)

    def asinh(self) -> Tensor:
        """Inverse hyperbolic sine."""
        return float_unary(self, "asinh", self.backend.float_asinh)

    arcsinh = asinh

    def acosh(self) -> Tensor:
        """Inverse hyperbolic cosine (x >= 1)."""
        return float_unary(self, "acosh", self.backend.float_acosh)

    arccosh = acosh

    def atanh(self) -> Tensor:
        """Inverse hyperbolic tangent (|x| < 1)."""
        return float_unary(self, "atanh", self.backend.float_atanh)

    arctanh = atanh

    def erf(self) -> Tensor:
        """The Gauss error function."""
        return float_unary(self, "erf", self.backend.float_erf)

    def round(self, decimals: int = 0) -> Tensor:
        """Round half to even (an int tensor is returned as is); to ``decimals`` places as
        torch: ``round(x * 10**decimals) / 10**decimals``."""
        if decimals != 0 and self.kind is FLOAT:
            scale = 10.0 ** decimals
            return (self * scale).round() / scale
        return rounding(self, "round", self.backend.float_round)

    def floor(self) -> Tensor:
        """The largest integer <= x (an int tensor is returned as is)."""
        return rounding(self, "floor", self.backend.float_floor)

    def ceil(self) -> Tensor:
        """The smallest integer >= x (an int tensor is returned as is)."""
        return rounding(self, "ceil", self.backend.float_ceil)

    def trunc(self) -> Tensor:
        """x rounded toward zero (an int tensor is returned as is)."""
        return rounding(self, "trunc", self.backend.float_trunc)

    def relu(self) -> Tensor:
        """``max(x, 0)``."""
        return float_unary(self, "relu", self.backend.relu)

    def sigmoid(self) -> Tensor:
        """``1 / (1 + exp(-x))``, stable for large ``|x|``."""
        return float_unary(self, "sigmoid", self.backend.sigmoid)

    def log_sigmoid(self) -> Tensor:
        """``log(sigmoid(x))``, stable."""
        return float_unary(self, "log_sigmoid", self.backend.log_sigmoid)

    def silu(self) -> Tensor:
        """``x * sigmoid(x)``."""
        return float_unary(self, "silu", self.backend.silu)

    def __invert__(self) -> Tensor:
        """``~x``: logical not of a bool tensor, bitwise not of an int tensor."""
        b = self.backend
        if self.kind is BOOL:
            return new(b, b.bool_not(self.primitive), BOOL)
        if self.kind is INT:
            return new(b, b.int_bitwise_not(self.primitive), INT)
        raise KindError(f"~: expects a bool or int tensor, got {self.kind} ({self.dtype!r})")

    def bitwise_not(self) -> Tensor:
        """torch.bitwise_not: ``~x`` (logical not of a bool tensor, bitwise not of an int one)."""
        return ~self

    def cross(self, other: Tensor, dim: int | None = None) -> Tensor:
        """torch.cross: the cross product of 3-vectors along ``dim``; without ``dim``, the first
        dim of size 3 (torch's rule). ``burnpy.linalg.cross`` defaults to the last dim."""
        from burnpy import linalg

        if dim is None:
            shape = broadcast_shapes("cross", self.shape, other.shape)
            dim = next((d for d, n in enumerate(shape) if n == 3), -1)
        return linalg.cross(self, other, dim=dim)

    def logical_not(self) -> Tensor:
        """A bool tensor, true where ``self`` is zero / false (torch.logical_not, for any kind)."""
        if self.kind is BOOL:
            return ~self
        if self.kind not in (FLOAT, INT):
            raise KindError(f"logical_not: expects a float, int or bool tensor, got {self.kind}")
        return self == 0

    def __pos__(self) -> Tensor:
        """``+x``: the tensor itself."""
        return self

    def rsqrt(self) -> Tensor:
        """1 / sqrt(x)."""
        return self.sqrt().recip()

    def gelu(self, approximate: Literal["none", "tanh"] = "none") -> Tensor:
        """x * Phi(x); ``approximate="tanh"`` for the tanh form."""
        require_float(self, "gelu")
        if approximate not in ("none", "tanh"):
            raise InvalidArgumentError(
                f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
        return new(self.backend, self.backend.gelu(self.primitive, approximate), FLOAT)

    def leaky_relu(self, negative_slope: float = 0.01) -> Tensor:
        """``x`` where positive, else ``negative_slope * x``."""
        require_float(self, "leaky_relu")
        return new(self.backend, self.backend.leaky_relu(self.primitive, float(negative_slope)),
                   FLOAT)

    def hard_sigmoid(self, alpha: float = 1 / 6, beta: float = 0.5) -> Tensor:
        """``clamp(alpha * x + beta, 0, 1)``: a piecewise-linear sigmoid."""
        require_float(self, "hard_sigmoid")
        return new(self.backend, self.backend.hard_sigmoid(self.primitive, alpha, beta), FLOAT)

    def softplus(self, beta: float = 1.0) -> Tensor:
        """``log(1 + exp(beta * x)) / beta``, stable for large values."""
        require_float(self, "softplus")
        return new(self.backend, self.backend.softplus(self.primitive, float(beta)), FLOAT)

    def softmax(self, dim: int, dtype: DTypeLike | None = None) -> Tensor:
        """exp(x) normalized along ``dim`` (computed in ``dtype`` when given: the input is
        cast first, as torch's)."""
        if dtype is not None:
            return self.cast(dtype).softmax(dim)
        require_float(self, "softmax")
        if self.ndim == 0:
            return as_vector(self, "softmax", dim, lambda v: v.softmax(0))
        d = normalize_dim("softmax", dim, self.ndim)
        return new(self.backend, self.backend.softmax(self.primitive, d), FLOAT)

    def log_softmax(self, dim: int, dtype: DTypeLike | None = None) -> Tensor:
        """x - logsumexp(x) along ``dim`` (computed in ``dtype`` when given: the input is
        cast first, as torch's)."""
        if dtype is not None:
            return self.cast(dtype).log_softmax(dim)
        require_float(self, "log_softmax")
        if self.ndim == 0:
            return as_vector(self, "log_softmax", dim, lambda v: v.log_softmax(0))
        d = normalize_dim("log_softmax", dim, self.ndim)
        return new(self.backend, self.backend.log_softmax(self.primitive, d), FLOAT)

    def clamp(self, min: Tensor | float | None = None,
              max: Tensor | float | None = None) -> Tensor:
        """Limit values to [min, max]; either bound may be omitted. A tensor bound broadcasts
        and gets its share of the gradient (torch's rule, see ``clamp_bounds``)."""
        if min is None and max is None:
            raise InvalidArgumentError("clamp: give at least one of min and max")
        if isinstance(min, Tensor) or isinstance(max, Tensor):
            if self.kind is BOOL:
                raise KindError("clamp: expects a float or int tensor, got bool")
            return clamp_tensor_bounds(self, min, max)
        b = self.backend
        if self.kind is FLOAT:
            lo = None if min is None else float(min)
            hi = None if max is None else float(max)
            if lo is not None and hi is None:
                return new(b, b.float_clamp_min(self.primitive, lo), FLOAT)
            if hi is not None and lo is None:
                return new(b, b.float_clamp_max(self.primitive, hi), FLOAT)
            return new(b, b.float_clamp(self.primitive, lo, hi), FLOAT)
        if self.kind is INT:
            if isinstance(min, float) or isinstance(max, float):
                raise DTypeError("clamp: float bounds for an int tensor; use .float() first")
            return new(b, b.int_clamp(self.primitive, min, max), INT)
        raise KindError(f"clamp: expects a float or int tensor, got {self.kind}")

    clip = clamp

    def clamp_min(self, min: Tensor | float) -> Tensor:
        """Limit values to at least ``min`` (a number or a broadcasting tensor)."""
        return self.clamp(min=min)

    def clamp_max(self, max: Tensor | float) -> Tensor:
        """Limit values to at most ``max`` (a number or a broadcasting tensor)."""
        return self.clamp(max=max)

    def maximum(self, other: Tensor) -> Tensor:
        """Elementwise max of two tensors (NaN propagates, as torch.maximum)."""
        take_other = (other > self) | other.isnan() if self.kind is FLOAT else other > self
        return self.mask_where(take_other, other)

    def minimum(self, other: Tensor) -> Tensor:
        """Elementwise min of two tensors (NaN propagates, as torch.minimum)."""
        take_other = (other < self) | other.isnan() if self.kind is FLOAT else other < self
        return self.mask_where(take_other, other)

    def isnan(self) -> Tensor:
        """Where values are NaN, as a bool tensor (all False for int and bool tensors)."""
        if self.kind is not FLOAT:
            return all_false(self)
        return new(self.backend, self.backend.float_is_nan(self.primitive), BOOL)

    is_nan = isnan

    def isinf(self) -> Tensor:
        """Where values are +-inf, as a bool tensor (all False for int and bool tensors)."""
        if self.kind is not FLOAT:
            return all_false(self)
        return new(self.backend, self.backend.float_is_inf(self.primitive), BOOL)

    is_inf = isinf

    def isfinite(self) -> Tensor:
        """Where values are neither NaN nor infinite, as a bool tensor."""
        return ~(self.isnan() | self.isinf())

    def mask_where(self, mask: Tensor, value: Tensor) -> Tensor:
        """``value`` where ``mask`` is true, else ``self`` (Burn's ``mask_where``; broadcasts)."""
        op = "mask_where"
        if mask.kind is not BOOL:
            raise KindError(f"{op}: the mask must be a bool tensor, got {mask.kind}")
        check_same_backend(op, self, mask)
        check_same_backend(op, self, value)
        if value.kind is not self.kind:
            raise DTypeError(f"{op}: value is {value.kind} ({value.dtype!r}) but the tensor is "
                             f"{self.kind} ({self.dtype!r})")
        shape = broadcast_shapes(op, broadcast_shapes(op, self.shape, mask.shape), value.shape)
        b = self.backend
        t, v = self, value
        if t.kind is not BOOL:
            dtype = common_dtype(op, t, v)
            t, v = t.cast(dtype), v.cast(dtype)
        if t.shape != shape:
            t = t.expand(shape)
        fn = {FLOAT: b.float_mask_where, INT: b.int_mask_where, BOOL: b.bool_mask_where}[t.kind]
        return new(b, fn(t.primitive, mask.primitive, v.primitive), t.kind)

    def mask_fill(self, mask: Tensor, value: float | Tensor) -> Tensor:
        """``value`` (a number or a 0-d tensor, which the gradient reaches) where ``mask`` is
        true, else ``self`` (torch's ``masked_fill``)."""
        op = "mask_fill"
        if mask.kind is not BOOL:
            raise KindError(f"{op}: the mask must be a bool tensor, got {mask.kind}")
        check_same_backend(op, self, mask)
        shape = broadcast_shapes(op, self.shape, mask.shape)
        t = self if self.shape == shape else self.expand(shape)
        if isinstance(value, Tensor):
            if value.ndim != 0:
                raise ShapeError(f"{op}: a tensor value must be 0-d, got "
                                 f"{describe(value.shape)}")
            if value.kind is not FLOAT or t.kind is not FLOAT:
                return t.mask_fill(mask, value.item())
            return t.mask_where(mask, value.cast(t.dtype).expand(shape))
        b = self.backend
        if t.kind is FLOAT:
            return new(b, b.float_mask_fill(t.primitive, mask.primitive, float(value)), FLOAT)
        if t.kind is INT:
            if isinstance(value, float):
                raise DTypeError(f"{op}: float value {value!r} for an int tensor")
            return new(b, b.int_mask_fill(t.primitive, mask.primitive, int(value)), INT)
        return t.mask_where(mask, scalar_like(t, bool(value), op).expand(shape))

    masked_fill = mask_fill

    def matmul(self, other: Tensor) -> Tensor:
        """Matrix product with torch's rules: 1-d operands, batched and broadcast batch dims."""
        op = "matmul"
        b = self.backend
        if (other.__class__ is self.__class__ and other.backend is b and self.kind is FLOAT
                and other.kind is FLOAT):
            p, q = self.primitive, other.primitive
            if b.trusted_binary_ops:
                # NumPy-style matmul raises ValueError on a shape mismatch: the general path
                # below then names the op and the shapes.
                if len(p.shape) == 2 and len(q.shape) == 2:
                    try:
                        return new(b, b.float_matmul(p, q), FLOAT)
                    except ValueError:
                        pass
            elif not b.multi_device:
                ps, qs = p.shape, q.shape
                if (len(ps) == 2 and len(qs) == 2 and ps[1] == qs[0]
                        and (p.dtype is q.dtype or p.dtype == q.dtype)):
                    return new(b, b.float_matmul(p, q), FLOAT)
        elif not isinstance(other, Tensor):
            return NotImplemented
        check_same_backend(op, self, other)
        a, c = self, other
        if QUANTIZED in (a.kind, c.kind):
            return quantized_matmul(a, c)
        if a.kind not in (FLOAT, INT) or c.kind is not a.kind:
            raise KindError(f"{op}: expects two float or two int tensors, got {a.kind} "
                            f"({a.dtype!r}) and {c.kind} ({c.dtype!r})")
        if a.ndim == 0 or c.ndim == 0:
            raise ShapeError(f"{op}: both operands need at least 1 dim, got shapes "
                             f"{describe(a.shape)} and {describe(c.shape)}")
        dtype = common_dtype(op, a, c)
        a, c = a.cast(dtype), c.cast(dtype)
        squeeze_a, squeeze_c = a.ndim == 1, c.ndim == 1
        if squeeze_a:
            a = a.reshape(1, a.shape[0])
        if squeeze_c:
            c = c.reshape(c.shape[0], 1)
        if a.shape[-1] != c.shape[-2]:
            raise ShapeError(f"{op}: inner dims differ: {describe(self.shape)} @ "
                             f"{describe(other.shape)} ({a.shape[-1]} vs {c.shape[-2]})")
        batch = broadcast_shapes(op, a.shape[:-2], c.shape[:-2])
        nd = len(batch) + 2
        if a.ndim != nd:
            a = a.reshape((1,) * (nd - a.ndim) + a.shape)
        if c.ndim != nd:
            c = c.reshape((1,) * (nd - c.ndim) + c.shape)
        fn = b.float_matmul if a.kind is FLOAT else b.int_matmul
        out = new(b, fn(a.primitive, c.primitive), a.kind)
        if squeeze_a and squeeze_c:
            return out.reshape(out.shape[:-2])
        if squeeze_a:
            return out.reshape(out.shape[:-2] + out.shape[-1:])
        if squeeze_c:
            return out.reshape(out.shape[:-1])
        return out

    __matmul__ = matmul

    def __rmatmul__(self, other: object) -> Tensor:
        """Only tensors multiply tensors: a NumPy array or list on the left is refused."""
        return NotImplemented

    # ---- layout ----------------------------------------------------------------------------------

    def reshape(self, *shape: int | Sequence[int]) -> Tensor:
        """Same elements in row-major order; one dim may be -1."""
        source = self.shape
        target = infer_shape("reshape", dims_arg(shape), numel(source), source)
        if target == source:
            return self
        return new(self.backend, kind_op(self, "reshape")(self.primitive, target), self.kind)

    view = reshape

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Tensor:
        """Merge dims ``start_dim..end_dim`` (inclusive) into one."""
        if self.ndim == 0:
            return self.reshape(1)
        s = normalize_dim("flatten", start_dim, self.ndim)
        e = normalize_dim("flatten", end_dim, self.ndim)
        if s > e:
            raise IndexOutOfBoundsError(f"flatten: start_dim {start_dim} comes after end_dim "
                                        f"{end_dim}")
        shape = self.shape
        return self.reshape(shape[:s] + (numel(shape[s:e + 1]),) + shape[e + 1:])

    def squeeze(self, dim: int | Sequence[int] | None = None) -> Tensor:
        """Drop size-1 dims (all, or the given ones; a given dim of another size stays)."""
        if dim is None:
            dims = tuple(i for i, s in enumerate(self.shape) if s == 1)
        elif self.ndim == 0:
            check_scalar_dims("squeeze", dim)
            return self
        else:
            dims = normalize_dims("squeeze", (dim,) if isinstance(dim, int) else dim, self.ndim)
        return self.reshape(tuple(s for i, s in enumerate(self.shape)
                                  if not (i in dims and s == 1)))

    def unsqueeze(self, dim: int) -> Tensor:
        """Insert a size-1 dim at ``dim``."""
        d = normalize_dim("unsqueeze", dim, self.ndim, inserting=True)
        return self.reshape(self.shape[:d] + (1,) + self.shape[d:])

    def permute(self, *dims: int | Sequence[int]) -> Tensor:
        """Reorder dims: output dim i is input dim ``dims[i]``."""
        axes = normalize_dims("permute", dims_arg(dims), self.ndim)
        if len(axes) != self.ndim:
            raise ShapeError(f"permute: got {len(axes)} dims for a tensor of {self.ndim} "
                             f"(shape {describe(self.shape)})")
        if axes == tuple(range(self.ndim)):
            return self
        return new(self.backend, kind_op(self, "permute")(self.primitive, axes), self.kind)

    def swap_dims(self, dim1: int, dim2: int) -> Tensor:
        """Exchange two dims (torch's ``transpose``)."""
        ndim = self.ndim
        if ndim == 0:
            check_scalar_dims("transpose", (dim1, dim2))
            return self
        d1 = normalize_dim("swap_dims", dim1, ndim)
        d2 = normalize_dim("swap_dims", dim2, ndim)
        if d1 == d2:
            return self
        return new(self.backend, kind_op(self, "swap_dims")(self.primitive, d1, d2), self.kind)

    transpose = swap_dims

    @property
    def T(self) -> Tensor:  # noqa: N802 - the established spelling
        """All dims reversed (a matrix transposed)."""
        return self.permute(tuple(reversed(range(self.ndim))))

    @property
    def mT(self) -> Tensor:  # noqa: N802
        """The last two dims swapped (batched matrix transpose)."""
        return self.swap_dims(-2, -1)

    def expand(self, *shape: int | Sequence[int]) -> Tensor:
        """Broadcast to ``shape``; -1 keeps a dim, new dims may be added in front."""
        target = dims_arg(shape)
        nd = len(target)
        if nd < self.ndim:
            raise ShapeError(f"expand: target {describe(target)} has fewer dims than "
                             f"{describe(self.shape)}")
        src = (1,) * (nd - self.ndim) + self.shape
        out = []
        for i, (s, t) in enumerate(zip(src, target, strict=True)):
            if t == -1:
                if i < nd - self.ndim:
                    raise ShapeError(f"expand: -1 is not allowed for the new leading dim {i}")
                t = s
            if s != t and s != 1:
                raise ShapeError(f"expand: cannot expand {describe(self.shape)} to "
                                 f"{describe(target)} (dim {i} is {s}, not 1)")
            out.append(t)
        final = tuple(out)
        if final == self.shape:
            return self
        return new(self.backend, kind_op(self, "expand")(self.primitive, final), self.kind)

    broadcast_to = expand

    def expand_as(self, other: Tensor) -> Tensor:
        """Broadcast to ``other``'s shape."""
        return self.expand(other.shape)

    def repeat(self, *sizes: int | Sequence[int]) -> Tensor:
        """Tile the tensor ``sizes[i]`` times along dim i (torch's ``repeat``)."""
        reps = dims_arg(sizes)
        if len(reps) < self.ndim:
            raise ShapeError(f"repeat: {len(reps)} repeat counts for a tensor of {self.ndim} "
                             "dims")
        if any(r < 0 for r in reps):
            raise InvalidArgumentError(f"repeat: counts must be >= 0, got {reps}")
        t = self.reshape((1,) * (len(reps) - self.ndim) + self.shape)
        for d, r in enumerate(reps):
            if r != 1:
                t = t.repeat_dim(d, r)
        return t

    def repeat_dim(self, dim: int, times: int) -> Tensor:
        """Tile the tensor ``times`` along one dim (Burn's ``repeat_dim``)."""
        d = normalize_dim("repeat_dim", dim, self.ndim)
        if times < 0:
            raise InvalidArgumentError(f"repeat_dim: times must be >= 0, got {times}")
        if times == 1:
            return self
        return new(self.backend, kind_op(self, "repeat_dim")(self.primitive, d, times),
                   self.kind)

    def flip(self, *args: int | Sequence[int], dims: int | Sequence[int] | None = None
             ) -> Tensor:
        """Reverse the element order along the dims given as ints, a sequence, or torch's
        keyword ``dims=``."""
        if dims is not None:
            if args:
                raise InvalidArgumentError(f"flip: give the dims positionally or as dims=, not "
                                           f"both ({args!r} and dims={dims!r})")
            args = (dims,)
        axes = normalize_dims("flip", dims_arg(args), self.ndim)
        if not axes:
            return self
        return new(self.backend, kind_op(self, "flip")(self.primitive, axes), self.kind)

    def narrow(self, dim: int, start: int | Tensor, length: int) -> Tensor:
        """``length`` elements from ``start`` (an int or a 0-d int tensor) along ``dim``."""
        d = normalize_dim("narrow", dim, self.ndim)
        size = self.shape[d]
        start = python_int("narrow", "start", start)
        if start < 0:
            start += size
        if not (0 <= start <= size and length >= 0 and start + length <= size):
            raise IndexOutOfBoundsError(f"narrow: range [{start}, {start + length}) is outside "
                                        f"dim {dim} of size {size}")
        return self.slice_dim(d, start, start + length)

    def slice_dim(self, dim: int, start: int, stop: int, step: int = 1) -> Tensor:
        """Elements ``start:stop:step`` of one dim (validated bounds, positive step)."""
        d = normalize_dim("slice_dim", dim, self.ndim)
        size = self.shape[d]
        if step <= 0:
            raise InvalidArgumentError(f"slice_dim: step must be positive, got {step} (dim {dim} "
                                       f"of shape {describe(self.shape)})")
        if not 0 <= start <= stop <= size:
            raise IndexOutOfBoundsError(f"slice_dim: range [{start}, {stop}) is outside dim "
                                        f"{dim} of size {size} (shape {describe(self.shape)})")
        slices = tuple(slice(0, n) for n in self.shape[:d]) + (slice(start, stop, step),)
        return new(self.backend, kind_op(self, "slice")(self.primitive, slices), self.kind)

    def split(self, split_size_or_sections: int | Sequence[int],
              dim: int = 0) -> list[Tensor]:
        """Pieces of ``split_size`` (the last may be smaller), or of the listed sizes."""
        d = normalize_dim("split", dim, self.ndim)
        size = self.shape[d]
        if isinstance(split_size_or_sections, int):
            step = split_size_or_sections
            if step <= 0:
                raise InvalidArgumentError(f"split: split_size must be > 0, got {step}")
            sizes = [min(step, size - s) for s in range(0, size, step)] or [0]
        else:
            sizes = list(split_size_or_sections)
            if sum(sizes) != size or any(s < 0 for s in sizes):
                raise ShapeError(f"split: sections {sizes} do not add up to dim {dim} of size "
                                 f"{size}")
        backend, kind, slice_op = self.backend, self.kind, kind_op(self, "slice")
        lead = tuple(slice(0, n) for n in self.shape[:d])
        out, start = [], 0
        for s in sizes:  # in bounds by construction: slice_dim's checks are not repeated
            out.append(new(backend, slice_op(self.primitive, (*lead, slice(start, start + s, 1))),
                           kind))
            start += s
        return out

    def chunk(self, chunks: int, dim: int = 0) -> list[Tensor]:
        """At most ``chunks`` near-equal pieces (torch.chunk)."""
        if chunks <= 0:
            raise InvalidArgumentError(f"chunk: chunks must be > 0, got {chunks}")
        d = normalize_dim("chunk", dim, self.ndim)
        size = self.shape[d]
        return self.split(max(1, -(-size // chunks)), d)

    def unfold(self, dim: int, size: int, step: int) -> Tensor:
        """Sliding windows of ``size`` every ``step`` along ``dim``, as a new last dim."""
        if self.ndim == 0:
            return as_vector(self, "unfold", dim, lambda v: v.unfold(0, size, step),
                             (size,))
        d = normalize_dim("unfold", dim, self.ndim)
        if size <= 0 or step <= 0:
            raise InvalidArgumentError(f"unfold: size and step must be > 0, got {size}, {step}")
        if size > self.shape[d]:
            raise ShapeError(f"unfold: window {size} is larger than dim {dim} of size "
                             f"{self.shape[d]}")
        return new(self.backend, kind_op(self, "unfold")(self.primitive, d, size, step),
                   self.kind)

    @staticmethod
    def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
        """Concatenate along an existing dim; shapes must agree elsewhere."""
        return cat(tensors, dim)

    @staticmethod
    def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
        """Join along a new dim; all shapes must be equal."""
        return stack(tensors, dim)

    # ---- reductions ------------------------------------------------------------------------------

    def sum(self, dim: Dims = None, keepdim: bool = False, *,
            dtype: DTypeLike | None = None) -> Tensor:
        """Sum over ``dim`` (an int, several, or all); ints and bools sum in int64. With
        ``dtype`` the input is cast to it first (torch's meaning)."""
        if dtype is not None:
            return self.cast(dtype).sum(dim, keepdim)
        return reduce(numeric(self, "sum"), "sum", dim, keepdim)

    def prod(self, dim: Dims = None, keepdim: bool = False, *,
             dtype: DTypeLike | None = None) -> Tensor:
        """Product over ``dim`` (an int, several, or all); bools multiply as ints. With
        ``dtype`` the input is cast to it first (torch's meaning)."""
        if dtype is not None:
            return self.cast(dtype).prod(dim, keepdim)
        return reduce(numeric(self, "prod"), "prod", dim, keepdim)

    def mean(self, dim: Dims = None, keepdim: bool = False, *,
             dtype: DTypeLike | None = None) -> Tensor:
        """Arithmetic mean (float tensors, or any cast to a float ``dtype``, as in torch)."""
        if dtype is not None:
            return self.cast(dtype).mean(dim, keepdim)
        if self.kind is not FLOAT:
            raise KindError(f"mean: expects a float tensor, got {self.kind} ({self.dtype!r}); "
                            "use .float() first")
        return reduce(self, "mean", dim, keepdim)

    def var(self, dim: Dims = None, keepdim: bool = False, correction: float | None = 1, *,
            unbiased: bool | None = None) -> Tensor:
        """Variance: the squared deviations' sum over ``max(0, N - correction)`` (Bessel's
        ``correction``, 1 by default and for None, may be fractional as in torch; a divisor of
        0 gives inf or NaN as torch's); torch's older ``unbiased=`` sets it to 1 or 0."""
        if unbiased is not None:
            correction = int(unbiased)
        elif correction is None:
            correction = 1
        mu = self.mean(dim, keepdim=True)
        sq = (self - mu).square()
        dims = range(self.ndim) if dim is None else (
            normalize_dims("var", (dim,) if isinstance(dim, int) else dim, self.ndim))
        n = math.prod(self.shape[d] for d in dims)
        total = sq.sum(dim, keepdim=keepdim)
        return total / (n - correction) if n - correction > 0 else total * float("inf")

    def std(self, dim: Dims = None, keepdim: bool = False, correction: float | None = 1, *,
            unbiased: bool | None = None) -> Tensor:
        """Standard deviation: the square root of ``var`` with the same ``correction`` (or
        torch's older ``unbiased=``).

        Where it is 0 (a constant group) the gradient is 0, as torch's, not sqrt's NaN.
        """
        v = self.var(dim, keepdim, correction, unbiased=unbiased)
        if not v.is_require_grad():
            return v.sqrt()
        zero = v == 0.0
        return v.mask_fill(zero, 1.0).sqrt().mask_fill(zero, 0.0)

    def logsumexp(self, dim: int | Sequence[int], keepdim: bool = False) -> Tensor:
        """log(sum(exp(x))) along ``dim`` (one dim or several), stable for large values."""
        if self.ndim == 0:
            return as_vector(self, "logsumexp", dim, lambda v: v.logsumexp(0))
        d = normalize_dims("logsumexp", (dim,) if isinstance(dim, int) else dim, self.ndim)
        m = self.detach().amax(d, keepdim=True)
        m = m.mask_fill(m.isinf(), 0.0)
        out = (self - m).exp().sum(d, keepdim=True).log() + m
        return drop_dims(out, d, keepdim)

    @overload
    def max(self, dim: None = None, keepdim: bool = False) -> Tensor: ...
    @overload
    def max(self, dim: int, keepdim: bool = False) -> ValuesIndices: ...
    @overload
    def max(self, dim: Tensor) -> Tensor: ...

    def max(self, dim: int | Tensor | None = None,
            keepdim: bool = False) -> Tensor | ValuesIndices:
        """As torch's: the largest value (shape ``()``) when ``dim`` is None; along ``dim``
        the named tuple ``(values, indices)`` (first index among ties, the gradient goes to
        it); given a tensor, the elementwise ``maximum``. ``amax`` gives values only."""
        if isinstance(dim, Tensor):
            return self.maximum(dim)
        if dim is None:
            t = numeric(self, "max") if self.kind is not BOOL else self.int()
            check_nonempty(t, "max", None)
            return reduce(t, "max", None, keepdim)
        return extreme_with_indices(self, "max", dim, keepdim)

    @overload
    def min(self, dim: None = None, keepdim: bool = False) -> Tensor: ...
    @overload
    def min(self, dim: int, keepdim: bool = False) -> ValuesIndices: ...
    @overload
    def min(self, dim: Tensor) -> Tensor: ...

    def min(self, dim: int | Tensor | None = None,
            keepdim: bool = False) -> Tensor | ValuesIndices:
        """As torch's: the smallest value (shape ``()``) when ``dim`` is None; along ``dim``
        the named tuple ``(values, indices)``; given a tensor, the elementwise ``minimum``.
        ``amin`` gives values only."""
        if isinstance(dim, Tensor):
            return self.minimum(dim)
        if dim is None:
            t = numeric(self, "min") if self.kind is not BOOL else self.int()
            check_nonempty(t, "min", None)
            return reduce(t, "min", None, keepdim)
        return extreme_with_indices(self, "min", dim, keepdim)

    def max_with_indices(self, dim: int, keepdim: bool = False) -> ValuesIndices:
        """Burn's name for ``max(dim)``: ``(values, indices)``, the first index among ties."""
        return extreme_with_indices(self, "max", dim, keepdim)

    def min_with_indices(self, dim: int, keepdim: bool = False) -> ValuesIndices:
        """Burn's name for ``min(dim)``: ``(values, indices)``, the first index among ties."""
        return extreme_with_indices(self, "min", dim, keepdim)

    def amax(self, dim: Dims = None, keepdim: bool = False) -> Tensor:
        """The largest values over ``dim`` (an int, several, or all for None or ``()``), values
        only (torch.amax); the gradient is shared evenly among tied maxima, as torch's."""
        return extreme_values(self, "max", dim, keepdim)

    def amin(self, dim: Dims = None, keepdim: bool = False) -> Tensor:
        """The smallest values over ``dim`` (an int, several, or all for None or ``()``),
        values only (torch.amin); the gradient is shared evenly among tied minima."""
        return extreme_values(self, "min", dim, keepdim)

    def argmax(self, dim: int | None = None, keepdim: bool = False) -> Tensor:
        """Index of the max along ``dim`` (over the flattened tensor when dim is None)."""
        if dim is None:
            return self.flatten().max_with_indices(0)[1]
        return self.max_with_indices(dim, keepdim)[1]

    def argmin(self, dim: int | None = None, keepdim: bool = False) -> Tensor:
        """Index of the min along ``dim`` (over the flattened tensor when dim is None)."""
        if dim is None:
            return self.flatten().min_with_indices(0)[1]
        return self.min_with_indices(dim, keepdim)[1]

    def any(self, dim: int | None = None, keepdim: bool = False) -> Tensor:
        """Whether any element is non-zero / true."""
        return reduce(as_bool(self), "any", dim, keepdim)

    def all(self, dim: int | None = None, keepdim: bool = False) -> Tensor:
        """Whether every element is non-zero / true."""
        return reduce(as_bool(self), "all", dim, keepdim)

    def count_nonzero(self, dim: int | None = None) -> Tensor:
        """The number of non-zero (true) elements, overall or along ``dim``, as an int tensor."""
        return as_bool(self).int().sum(dim)

    def cumsum(self, dim: int, *, dtype: DTypeLike | None = None) -> Tensor:
        """Running sum along ``dim`` (in ``dtype`` when given: the input is cast first)."""
        t = numeric(self if dtype is None else self.cast(dtype), "cumsum")
        if t.ndim == 0:
            return as_vector(t, "cumsum", dim, lambda v: v.cumsum(0))
        d = normalize_dim("cumsum", dim, t.ndim)
        return new(t.backend, kind_op(t, "cumsum")(t.primitive, d), t.kind)

    def cumprod(self, dim: int, *, dtype: DTypeLike | None = None) -> Tensor:
        """Running product along ``dim`` (in ``dtype`` when given: the input is cast first)."""
        t = numeric(self if dtype is None else self.cast(dtype), "cumprod")
        if t.ndim == 0:
            return as_vector(t, "cumprod", dim, lambda v: v.cumprod(0))
        d = normalize_dim("cumprod", dim, t.ndim)
        return new(t.backend, kind_op(t, "cumprod")(t.primitive, d), t.kind)

    def cummax(self, dim: int) -> ValuesIndices:
        """Running max along ``dim`` and the index where it was reached, as the named tuple
        ``(values, indices)`` (torch.cummax)."""
        return scan_with_indices(self, "cummax", dim)

    def cummin(self, dim: int) -> ValuesIndices:
        """Running min along ``dim`` and the index where it was reached, as the named tuple
        ``(values, indices)`` (torch.cummin)."""
        return scan_with_indices(self, "cummin", dim)

    def cummax_with_indices(self, dim: int) -> ValuesIndices:
        """Burn's name for ``cummax``."""
        return scan_with_indices(self, "cummax", dim)

    def cummin_with_indices(self, dim: int) -> ValuesIndices:
        """Burn's name for ``cummin``."""
        return scan_with_indices(self, "cummin", dim)

    def sort(self, dim: int = -1, descending: bool = False, *,
             stable: bool = False) -> ValuesIndices:
        """The named tuple ``(values, indices)`` of ``dim`` sorted, as torch.sort; always
        stable, so ``stable=True`` (torch's request for it) holds too."""
        t = numeric(self, "sort")
        d = normalize_dim("sort", dim, t.ndim) if t.ndim else 0
        if t.ndim == 0:
            return ValuesIndices(t, zero_index(t))
        values, indices = kind_op(t, "sort_with_indices")(t.primitive, d, descending)
        return ValuesIndices(new(t.backend, values, t.kind), new(t.backend, indices, INT))

    def sort_with_indices(self, dim: int = -1, descending: bool = False) -> ValuesIndices:
        """Burn's name for ``sort``: ``(sorted values, source indices)``, stable."""
        return self.sort(dim, descending)

    def argsort(self, dim: int = -1, descending: bool = False, *, stable: bool = False) -> Tensor:
        """The indices that sort ``dim`` (always stable, whatever ``stable``); see ``sort``."""
        return self.sort(dim, descending).indices

    def topk(self, k: int, dim: int = -1, largest: bool = True,
             sorted: bool = True) -> ValuesIndices:
        """The named tuple ``(values, indices)`` of the ``k`` largest (or smallest) along
        ``dim`` (torch.topk); they always come sorted, which ``sorted=False`` allows."""
        t = numeric(self, "topk")
        if t.ndim == 0:
            return pair_as_vector(t, "topk", dim, lambda v: v.topk(k, 0, largest), (k,) * (k != 1))
        d = normalize_dim("topk", dim, t.ndim)
        if not 0 <= k <= t.shape[d]:
            raise IndexOutOfBoundsError(f"topk: k={k} is outside [0, {t.shape[d]}] for dim "
                                        f"{dim} of shape {describe(t.shape)}")
        values, indices = t.sort(d, descending=largest)
        return ValuesIndices(values.slice_dim(d, 0, k), indices.slice_dim(d, 0, k))

    def topk_with_indices(self, k: int, dim: int = -1, largest: bool = True) -> ValuesIndices:
        """Burn's name for ``topk``."""
        return self.topk(k, dim, largest)

    # ---- indexing --------------------------------------------------------------------------------

    def __getitem__(self, key: Any) -> Tensor:
        """NumPy indexing: ints, slices (any step), ``None``, ``...``, int tensors or lists
        and bool masks. Basic indices become flip/slice/reshape; advanced ones one ``select``.
        """
        key = key if isinstance(key, tuple) else (key,)
        if all(is_basic(k) for k in key):
            view = apply_basic(self, key)
            if view is not self:
                view._view_of = (self, key, self.primitive)
            return view
        return getitem_advanced(self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        """Write ``value`` into the indexed region, in place (torch's rules under autodiff: a
        leaf that requires grad refuses outside ``no_grad``; see ``burnpy.tensor.inplace``)."""
        write_in_place(self, "setitem", lambda t: t._assigned(key, value))

    # ---- in-place writes (torch's ``*_`` methods; each returns this tensor) ------------------
    def add_(self, other: Tensor | float, alpha: float = 1.0) -> Tensor:
        """``self += alpha * other`` in place."""
        return write_in_place(self, "add_",
                              lambda t: t + (other if alpha == 1.0 else other * alpha))

    def sub_(self, other: Tensor | float, alpha: float = 1.0) -> Tensor:
        """``self -= alpha * other`` in place."""
        return write_in_place(self, "sub_",
                              lambda t: t - (other if alpha == 1.0 else other * alpha))

    def mul_(self, other: Tensor | float) -> Tensor:
        """``self *= other`` in place."""
        return write_in_place(self, "mul_", lambda t: t * other)

    def div_(self, other: Tensor | float) -> Tensor:
        """``self /= other`` in place (true division: float tensors only)."""
        return write_in_place(self, "div_", lambda t: t / other)

    def zero_(self) -> Tensor:
        """Fill with zeros in place."""
        return write_in_place(self, "zero_", Tensor.zeros_like)

    def fill_(self, value: float) -> Tensor:
        """Fill with ``value`` in place."""
        return write_in_place(self, "fill_", lambda t: t.full_like(value))

    def clamp_(self, min: float | None = None, max: float | None = None) -> Tensor:
        """Limit to ``[min, max]`` in place."""
        return write_in_place(self, "clamp_", lambda t: t.clamp(min, max))

    def copy_(self, src: Tensor) -> Tensor:
        """Copy ``src``'s values (broadcast to this shape, cast to this dtype) in place;
        gradients flow to ``src``."""
        check_same_backend("copy_", self, src)
        value = src if src.shape == self.shape else src.expand(self.shape)
        return write_in_place(self, "copy_", lambda t: value)

    def masked_fill_(self, mask: Tensor, value: float) -> Tensor:
        """``value`` where ``mask`` is true, in place."""
        return write_in_place(self, "masked_fill_", lambda t: t.mask_fill(mask, value))

    def index_put_(self, indices: tuple[Tensor, ...], values: Tensor | float,
                   accumulate: bool = False) -> Tensor:
        """``self[indices] = values`` in place (torch's signature: one int tensor per leading
        dim); ``accumulate=True`` adds instead, summing repeated indices."""
        key = tuple(indices)
        if not accumulate:
            return write_in_place(self, "index_put_", lambda t: t._assigned(key, values))
        return write_in_place(self, "index_put_", lambda t: accumulated(t, key, values))

    def clone(self) -> Tensor:
        """A copy in memory of its own, as torch's (differentiable): neither in-place writes to
        either tensor nor writes into an array this one shares (``from_numpy``) reach the other.
        """
        if self.kind is FLOAT:
            return self * 1.0  # also a node of its own, so writes to the copy leave this valid
        if self.kind is INT:
            return self * 1
        if self.kind is BOOL:
            return self.logical_not().logical_not()
        return new(self.backend, self.primitive, self.kind)  # quantized values are never shared

    def index_put(self, key: Any, value: Any, accumulate: bool = False) -> Tensor:
        """A copy with ``self[key] = value`` applied (the functional form of ``__setitem__``);
        ``accumulate=True`` (torch's, ``key`` a tuple of index tensors) adds instead, summing
        repeated indices."""
        if accumulate:
            indices: list[Tensor] = []
            for i in key if isinstance(key, tuple | list) else (key,):
                if isinstance(i, Tensor) and i.kind is BOOL:  # a mask: its k-d positions
                    indices.extend(i.nonzero(as_tuple=True))
                else:
                    indices.append(i)
            return accumulated(self, tuple(indices), value)
        return self._assigned(key, value)

    def _assigned(self, key: Any, value: Any) -> Tensor:
        from burnpy.tensor.tensor import Tensor

        key = key if isinstance(key, tuple) else (key,)
        if not isinstance(value, Tensor):
            value = Tensor.full((), value, backend=self.backend, device=self.device,
                                dtype=self.dtype)
        check_same_backend("setitem", self, value)
        if value.kind is not self.kind:
            raise DTypeError(f"setitem: cannot assign {article(value.kind)} value "
                             f"({value.dtype!r}) "
                             f"into {article(self.kind)} tensor ({self.dtype!r})")
        value = value.cast(self.dtype)
        if len(key) == 1 and not is_basic(key[0]):
            idx = as_index_tensor(self, key[0])
            if idx.kind is BOOL:
                if idx.shape != self.shape[:idx.ndim]:
                    raise ShapeError(f"setitem: mask of shape {describe(idx.shape)} does not "
                                     f"match the tensor's leading dims {describe(self.shape)}")
                mask = idx.reshape(idx.shape + (1,) * (self.ndim - idx.ndim))
                if value.ndim == 0:
                    return self.mask_where(mask, value.expand(self.shape))
                if value.shape == self.shape or broadcast_shapes("setitem", value.shape,
                                                                 self.shape) == self.shape:
                    return self.mask_where(mask, value)
            if idx.kind is INT:
                idx = checked_indices(idx, self.shape[0], "setitem", 0)
                if idx.ndim == 1:
                    region = (idx.shape[0],) + self.shape[1:]
                    value = value.expand(region) if value.shape != region else value
                    return self.select_assign(0, idx, value)
        if not all(is_basic(k) for k in key):
            raise IndexOutOfBoundsError(
                "setitem: assignment supports basic indices, one bool mask over the leading "
                "dims, or one 1-d int index on dim 0; use index_put-free forms such as "
                "scatter/select_assign for other patterns")
        full = expand_ellipsis(key, self.ndim)
        info = resolve_basic(full, self.shape)
        target = self.flip(info.flips) if info.flips else self
        region = info.region_shape
        if value.shape != region:
            value = value.reshape(value.shape) if value.ndim == 0 else value
            squeezed = tuple(s for s in region)
            try:
                value = value.expand(info.out_shape).reshape(squeezed)
            except ShapeError:
                raise ShapeError(f"setitem: value of shape {describe(value.shape)} cannot be "
                                 f"broadcast to the indexed region {describe(info.out_shape)}"
                                 ) from None
        out = new(self.backend, kind_op(target, "slice_assign")(
            target.primitive, info.slices, value.primitive), self.kind)
        return out.flip(info.flips) if info.flips else out

    def slice_assign(self, ranges: Sequence[tuple[int, int] | slice | int | None],
                     value: Tensor) -> Tensor:
        """A copy with the region at ``ranges`` replaced by ``value``."""
        key = tuple(slice(*r) if isinstance(r, tuple) else (slice(None) if r is None else r)
                    for r in ranges)
        return self._assigned(key, value)

    def gather(self, dim: int, indices: Tensor) -> Tensor:
        """``out[i][j] = self[i][indices[i][j]]`` along ``dim`` (torch.gather)."""
        if indices.numel() == 0 and indices.kind is INT:
            check_same_backend("gather", self, indices)
            normalize_dim("gather", dim, max(self.ndim, 1))
            return self.reshape(-1).slice_dim(0, 0, 0).reshape(indices.shape)
        if self.ndim == 0:
            return as_vector(self, "gather", dim, lambda v: v.gather(0, indices.reshape(-1)),
                             indices.shape)
        d, idx = gather_args(self, dim, indices, "gather")
        return new(self.backend, kind_op(self, "gather")(self.primitive, d, idx.primitive),
                   self.kind)

    def scatter(self, dim: int, indices: Tensor, values: Tensor | float,
                reduce: Literal["add", "multiply"] | None = None) -> Tensor:
        """A copy with ``values`` (a tensor or one number) written at ``indices`` along ``dim``
        (torch.scatter); ``reduce="add"`` sums them in, ``"multiply"`` multiplies them in."""
        if not isinstance(values, Tensor):
            values = Tensor.full(indices.shape, values, backend=self.backend, device=self.device,
                                 dtype=self.dtype)
        if self.ndim == 0:
            vals = values
            return as_vector(self, "scatter", dim, lambda v: v.scatter(
                0, indices.reshape(-1), vals.reshape(-1), reduce))
        if reduce is None:
            return scatter_into(self, dim, indices, values, "scatter")
        if reduce == "add":
            return self.scatter_add(dim, indices, values)
        if reduce != "multiply":
            raise InvalidArgumentError(f"scatter: reduce must be 'add' or 'multiply', got "
                                       f"{reduce!r}")
        return scatter_multiply(self, dim, indices, values)

    def scatter_add(self, dim: int, indices: Tensor, values: Tensor) -> Tensor:
        """A copy with ``values`` summed in at ``indices`` along ``dim`` (torch.scatter_add)."""
        if self.ndim == 0:
            return as_vector(self, "scatter_add", dim, lambda v: v.scatter_add(
                0, indices.reshape(-1), values.reshape(-1)))
        return scatter_into(self, dim, indices, values, "scatter_add")

    def select(self, dim: int, index: int | Tensor) -> Tensor:
        """The slice at ``index`` along ``dim``, that dim removed (torch.select; a negative
        index counts from the end). Burn's ``select`` is ``index_select`` here."""
        d = normalize_dim("select", dim, self.ndim)
        size = self.shape[d]
        i = python_int("select", "index", index)
        if not -size <= i < size:
            raise IndexOutOfBoundsError(f"select: index {i} is out of bounds for dim {dim} with "
                                        f"size {size} (shape {describe(self.shape)})")
        i += size if i < 0 else 0
        return self.slice_dim(d, i, i + 1).squeeze(d)

    def index_select(self, dim: int, indices: Tensor | Sequence[int]) -> Tensor:
        """Slices along ``dim`` at 1-d ``indices`` (torch.index_select; Burn's select)."""
        if self.ndim == 0:
            return as_vector(self, "index_select", dim, lambda v: v.index_select(0, indices))
        d, idx = select_args(self, dim, indices, "index_select")
        return new(self.backend, kind_op(self, "select")(self.primitive, d, idx.primitive),
                   self.kind)

    def select_assign(self, dim: int, indices: Tensor | Sequence[int],
                      values: Tensor) -> Tensor:
        """A copy with the slices at ``indices`` along ``dim`` replaced by ``values``."""
        if self.ndim == 0:
            return as_vector(self, "select_assign", dim,
                             lambda v: v.select_assign(0, indices, values.reshape(-1)))
        return select_write(self, dim, indices, values, "select_assign")

    def select_add(self, dim: int, indices: Tensor | Sequence[int],
                   values: Tensor, alpha: float = 1) -> Tensor:
        """A copy with ``alpha * values`` summed into the slices at ``indices``
        (torch.index_add)."""
        if alpha != 1:
            values = values * alpha
        if self.ndim == 0:
            return as_vector(self, "select_add", dim,
                             lambda v: v.select_add(0, indices, values.reshape(-1)))
        return select_write(self, dim, indices, values, "select_add")

    index_add = select_add

    def argwhere(self) -> Tensor:
        """Indices of non-zero elements, shape ``[n, ndim]``."""
        m = self if self.kind is BOOL else self != 0
        return new(self.backend, self.backend.bool_argwhere(m.primitive), INT)

    @overload
    def nonzero(self, *, as_tuple: Literal[False] = ...) -> Tensor: ...

    @overload
    def nonzero(self, *, as_tuple: Literal[True]) -> tuple[Tensor, ...]: ...

    def nonzero(self, *, as_tuple: bool = False) -> Tensor | tuple[Tensor, ...]:
        """torch.nonzero: the indices of the non-zero elements as ``[n, ndim]`` (``argwhere``);
        with ``as_tuple=True`` one int tensor per dim (a 0-d tensor counts as one dim of size 1,
        as torch's)."""
        if not as_tuple:
            return self.argwhere()
        if self.ndim == 0:
            return self.reshape(1).nonzero(as_tuple=True)
        m = self if self.kind is BOOL else self != 0
        return tuple(new(self.backend, p, INT) for p in self.backend.bool_nonzero(m.primitive))

    # ---- special functions and elementwise math (issue 16) ----------------------------------
    # Float-valued math takes int and bool tensors too, promoted to the default float (torch).
    def erfc(self) -> Tensor:
        """``1 - erf(x)``, accurate where erf is close to 1."""
        return elementwise_math.special_unary(self, "erfc", self.backend.float_erfc)

    def erfinv(self) -> Tensor:
        """The inverse of erf: +-inf at +-1, NaN outside [-1, 1]."""
        return elementwise_math.special_unary(self, "erfinv", self.backend.float_erfinv)

    def lgamma(self) -> Tensor:
        """``log |Gamma(x)|`` (+inf at 0, -1, -2...)."""
        return elementwise_math.special_unary(self, "lgamma", self.backend.float_lgamma)

    def digamma(self) -> Tensor:
        """``psi(x)``, the derivative of lgamma."""
        return elementwise_math.special_unary(self, "digamma", self.backend.float_digamma)

    def polygamma(self, n: int) -> Tensor:
        """The ``n``-th derivative of digamma (torch's ``x.polygamma(n)``; n = 0 is digamma)."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise InvalidArgumentError(f"polygamma: n must be a non-negative int, got {n!r}")
        x = elementwise_math.floating(self, "polygamma")
        return new(x.backend, x.backend.float_polygamma(x.primitive, n), FLOAT)

    def i0(self) -> Tensor:
        """The modified Bessel function of the first kind, order 0."""
        return elementwise_math.special_unary(self, "i0", self.backend.float_i0)

    def exp2(self) -> Tensor:
        """``2 ** x``."""
        return 2.0 ** elementwise_math.floating(self, "exp2")

    def log2(self) -> Tensor:
        """Base-2 logarithm."""
        return elementwise_math.floating(self, "log2").log() * (1.0 / math.log(2.0))

    def log10(self) -> Tensor:
        """Base-10 logarithm."""
        return elementwise_math.floating(self, "log10").log() * (1.0 / math.log(10.0))

    def logit(self, eps: float | None = None) -> Tensor:
        """``log(x / (1 - x))``, with x first clamped to [eps, 1 - eps] when eps is given."""
        x = elementwise_math.floating(self, "logit")
        if eps is not None:
            x = x.clamp(eps, 1.0 - eps)
        return (x / (1.0 - x)).log()

    def sinc(self) -> Tensor:
        """``sin(pi x) / (pi x)``, 1 at 0 (with a zero gradient there)."""
        x = elementwise_math.floating(self, "sinc")
        zero = x == 0
        scaled = x.mask_fill(zero, 1.0) * math.pi
        return (scaled.sin() / scaled).mask_fill(zero, 1.0)

    def sgn(self) -> Tensor:
        """The sign (torch's ``sgn``; the same as ``sign`` for real tensors)."""
        return self.sign()

    def signbit(self) -> Tensor:
        """Where the sign bit is set (negatives and -0.0), as a bool tensor."""
        return elementwise_math.signbit(self)

    def frac(self) -> Tensor:
        """``x - trunc(x)``: the fractional part, with x's sign."""
        require_float(self, "frac")
        return self - self.trunc()

    def copysign(self, other: Tensor | float) -> Tensor:
        """``|x|`` with the sign of ``other`` (float result)."""
        return elementwise_math.copysign(self, other)

    def xlogy(self, other: Tensor | float) -> Tensor:
        """``x * log(other)``, 0 where x is 0 (unless other is NaN)."""
        return elementwise_math.xlogy(self, other)

    def fmod(self, other: Tensor | float) -> Tensor:
        """The remainder of truncating division: C's fmod, the sign of ``self``."""
        return elementwise_math.fmod(self, other)

    def fmax(self, other: Tensor) -> Tensor:
        """Elementwise max where NaN loses to a number (torch.fmax)."""
        return elementwise_math.fmax(self, other)

    def fmin(self, other: Tensor) -> Tensor:
        """Elementwise min where NaN loses to a number (torch.fmin)."""
        return elementwise_math.fmin(self, other)

    def heaviside(self, values: Tensor) -> Tensor:
        """The step function: 0 below 0, 1 above, ``values`` at 0."""
        return elementwise_math.heaviside(self, values)

    def deg2rad(self) -> Tensor:
        """Degrees to radians."""
        return elementwise_math.floating(self, "deg2rad") * (math.pi / 180.0)

    def rad2deg(self) -> Tensor:
        """Radians to degrees."""
        return elementwise_math.floating(self, "rad2deg") * (180.0 / math.pi)

    def nan_to_num(self, nan: float = 0.0, posinf: float | None = None,
                   neginf: float | None = None) -> Tensor:
        """NaN, +inf, -inf replaced by ``nan``, ``posinf``, ``neginf`` (the dtype's extremes
        by default); gradients pass only where x is finite."""
        return elementwise_math.nan_to_num(self, nan, posinf, neginf)

    def lerp(self, end: Tensor, weight: Tensor | float) -> Tensor:
        """``self + weight * (end - self)``."""
        return elementwise_math.lerp(self, end, weight)

    def addcmul(self, tensor1: Tensor, tensor2: Tensor, value: float = 1) -> Tensor:
        """``self + value * tensor1 * tensor2``."""
        return self + tensor1 * tensor2 * value

    def addcdiv(self, tensor1: Tensor, tensor2: Tensor, value: float = 1) -> Tensor:
        """``self + value * tensor1 / tensor2``."""
        return self + tensor1 / tensor2 * value

    def isclose(self, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
                equal_nan: bool = False) -> Tensor:
        """Where ``|self - other| <= atol + rtol * |other|``, as a bool tensor."""
        return elementwise_math.isclose(self, other, rtol, atol, equal_nan)

    def allclose(self, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
                 equal_nan: bool = False) -> bool:
        """Whether ``isclose`` holds everywhere (a Python bool, as torch's)."""
        return bool(self.isclose(other, rtol, atol, equal_nan).all().item())

    def logical_and(self, other: Tensor) -> Tensor:
        """Elementwise ``self and other`` of any kinds (non-zero is true), as bools."""
        return elementwise_math.truthy(self) & elementwise_math.truthy(other)

    def logical_or(self, other: Tensor) -> Tensor:
        """Elementwise ``self or other`` of any kinds (non-zero is true), as bools."""
        return elementwise_math.truthy(self) | elementwise_math.truthy(other)

    def logical_xor(self, other: Tensor) -> Tensor:
        """Elementwise exclusive or of any kinds (non-zero is true), as bools."""
        return elementwise_math.truthy(self) ^ elementwise_math.truthy(other)

    def positive(self) -> Tensor:
        """The tensor itself (``+x``); bool tensors are refused, as torch does."""
        if self.kind is BOOL:
            raise KindError("positive: not defined for bool tensors")
        return self

    def true_divide(self, other: Tensor | float) -> Tensor:
        """True division (an alias of ``div``)."""
        return self.div(other)

    def float_power(self, exponent: Tensor | float) -> Tensor:
        """``self ** exponent`` computed and returned in float64, as torch's."""
        base = self.cast(DType.float64)
        if isinstance(exponent, Tensor):
            return base.pow(exponent.cast(DType.float64))
        return base.pow(float(exponent))

    def rsub(self, other: Tensor | float, alpha: float = 1) -> Tensor:
        """``other - alpha * self``."""
        return elementwise_math.operand(self, other, "rsub") - self * alpha

    # ---- shape, indexing and matrix products (issue 16) -------------------------------------
    def tril(self, diagonal: int = 0) -> Tensor:
        """The lower triangle of the last two dims (elements above ``diagonal`` zeroed)."""
        return shape_ops.triangle(self, diagonal, True, "tril")

    def triu(self, diagonal: int = 0) -> Tensor:
        """The upper triangle of the last two dims (elements below ``diagonal`` zeroed)."""
        return shape_ops.triangle(self, diagonal, False, "triu")

    def roll(self, shifts: int | Sequence[int],
             dims: int | Sequence[int] | None = None) -> Tensor:
        """Elements shifted cyclically by ``shifts`` along ``dims`` (flattened when None)."""
        return shape_ops.roll(self, shifts, dims)

    def rot90(self, k: int = 1, dims: Sequence[int] = (0, 1)) -> Tensor:
        """Rotated by 90 degrees ``k`` times, from the first of ``dims`` towards the second."""
        return shape_ops.rot90(self, k, dims)

    def fliplr(self) -> Tensor:
        """Reversed along dim 1 (at least 2 dims)."""
        if self.ndim < 2:
            raise ShapeError(f"fliplr: expects at least 2 dims, got {describe(self.shape)}")
        return self.flip(1)

    def flipud(self) -> Tensor:
        """Reversed along dim 0 (at least 1 dim)."""
        if self.ndim < 1:
            raise ShapeError("flipud: expects at least 1 dim, got a 0-d tensor")
        return self.flip(0)

    def mm(self, mat2: Tensor) -> Tensor:
        """The product of two matrices."""
        return shape_ops.mm(self, mat2)

    def bmm(self, mat2: Tensor) -> Tensor:
        """Batched products of two 3-d tensors with the same batch size."""
        return shape_ops.bmm(self, mat2)

    def mv(self, vec: Tensor) -> Tensor:
        """A matrix times a vector."""
        return shape_ops.mv(self, vec)

    def dot(self, other: Tensor) -> Tensor:
        """The dot product of two 1-d tensors of one dtype."""
        return shape_ops.dot(self, other)

    def outer(self, vec2: Tensor) -> Tensor:
        """``self[i] * vec2[j]`` for two 1-d tensors."""
        return shape_ops.outer(self, vec2)

    def kron(self, other: Tensor) -> Tensor:
        """The Kronecker product."""
        return shape_ops.kron(self, other)

    def addmm(self, mat1: Tensor, mat2: Tensor, *, beta: float = 1,
              alpha: float = 1) -> Tensor:
        """``beta * self + alpha * (mat1 @ mat2)``."""
        return shape_ops.added("addmm", self, shape_ops.mm(mat1, mat2, "addmm"), beta, alpha)

    def baddbmm(self, batch1: Tensor, batch2: Tensor, *, beta: float = 1,
                alpha: float = 1) -> Tensor:
        """``beta * self + alpha * bmm(batch1, batch2)``."""
        return shape_ops.added("baddbmm", self, shape_ops.bmm(batch1, batch2, "baddbmm"), beta,
                               alpha)

    def addbmm(self, batch1: Tensor, batch2: Tensor, *, beta: float = 1,
               alpha: float = 1) -> Tensor:
        """``beta * self + alpha * sum_i batch1[i] @ batch2[i]``."""
        return shape_ops.addbmm(self, batch1, batch2, beta, alpha)

    def addmv(self, mat: Tensor, vec: Tensor, *, beta: float = 1, alpha: float = 1) -> Tensor:
        """``beta * self + alpha * (mat @ vec)``."""
        return shape_ops.added("addmv", self, shape_ops.mv(mat, vec, "addmv"), beta, alpha)

    def addr(self, vec1: Tensor, vec2: Tensor, *, beta: float = 1, alpha: float = 1) -> Tensor:
        """``beta * self + alpha * outer(vec1, vec2)``."""
        return shape_ops.added("addr", self, shape_ops.outer(vec1, vec2), beta, alpha)

    def diag(self, diagonal: int = 0) -> Tensor:
        """A 1-d tensor as a matrix's ``diagonal``-th diagonal, or a matrix's diagonal."""
        return shape_ops.diag(self, diagonal)

    def diagonal(self, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
        """The ``offset`` diagonal of the (dim1, dim2) planes, as the last dim."""
        return shape_ops.diagonal(self, offset, dim1, dim2)

    def diag_embed(self, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
        """Matrices (in dims ``dim1``, ``dim2``) whose ``offset`` diagonal is the last dim."""
        return shape_ops.diag_embed(self, offset, dim1, dim2)

    def trace(self) -> Tensor:
        """The sum of a matrix's diagonal."""
        if self.ndim != 2:
            raise ShapeError(f"trace: expects a matrix, got shape {describe(self.shape)}")
        return shape_ops.diagonal(self, 0, 0, 1).sum()

    def tile(self, *dims: int | Sequence[int]) -> Tensor:
        """``repeat`` with missing leading counts taken as 1 (torch.tile)."""
        reps = dims_arg(dims)
        return self.repeat((1,) * (self.ndim - len(reps)) + reps)

    def repeat_interleave(self, repeats: int | Tensor, dim: int | None = None, *,
                          output_size: int | None = None) -> Tensor:
        """Each slice along ``dim`` (each element of the flattened tensor when None) repeated
        ``repeats`` times, or ``repeats[i]`` times for slice i. ``output_size`` (torch's hint of
        the result's length along ``dim``) is checked against it."""
        out = shape_ops.repeat_interleave(self, repeats, dim)
        if output_size is not None and out.shape[0 if dim is None else dim] != output_size:
            raise ShapeError(f"repeat_interleave: output_size={output_size}, but the repeats "
                             f"give {out.shape[0 if dim is None else dim]}")
        return out

    def movedim(self, source: int | Sequence[int], destination: int | Sequence[int]) -> Tensor:
        """Dims ``source`` moved to ``destination``; the other dims keep their order."""
        return shape_ops.movedim(self, source, destination)

    moveaxis = movedim

    def unbind(self, dim: int = 0) -> tuple[Tensor, ...]:
        """The slices along ``dim``, that dim removed."""
        d = normalize_dim("unbind", dim, self.ndim)
        return tuple(self.narrow(d, i, 1).squeeze(d) for i in range(self.shape[d]))

    def tensor_split(self, indices_or_sections: int | Sequence[int] | Tensor,
                     dim: int = 0) -> list[Tensor]:
        """``n`` near-equal pieces (the first ``size % n`` one longer), or pieces cut at the
        given indices (torch.tensor_split)."""
        return shape_ops.tensor_split(self, indices_or_sections, dim)

    def split_with_sizes(self, split_sizes: Sequence[int], dim: int = 0) -> list[Tensor]:
        """Pieces of the listed sizes along ``dim``."""
        return self.split(list(split_sizes), dim)

    def unflatten(self, dim: int, sizes: Sequence[int]) -> Tensor:
        """Dim ``dim`` split into ``sizes`` (one may be -1)."""
        return shape_ops.unflatten(self, dim, sizes)

    def ravel(self) -> Tensor:
        """The elements as a 1-d tensor."""
        return self.reshape(-1)

    def narrow_copy(self, dim: int, start: int | Tensor, length: int) -> Tensor:
        """``narrow``'s elements (primitives are immutable: the slice is already a copy)."""
        return self.narrow(dim, start, length)

    def reshape_as(self, other: Tensor) -> Tensor:
        """Reshaped to ``other``'s shape."""
        return self.reshape(other.shape)

    def view_as(self, other: Tensor) -> Tensor:
        """torch's name for ``reshape_as``."""
        return self.reshape(other.shape)

    def t(self) -> Tensor:
        """A matrix transposed; 0-d and 1-d tensors unchanged."""
        if self.ndim > 2:
            raise ShapeError(f"t: expects at most 2 dims, got shape {describe(self.shape)}")
        return self.T

    def take(self, index: Tensor) -> Tensor:
        """Elements of the flattened tensor at ``index``, in ``index``'s shape."""
        return shape_ops.take(self, index)

    def take_along_dim(self, indices: Tensor, dim: int | None = None) -> Tensor:
        """``gather`` along ``dim`` with broadcasting (of the flattened tensor when None)."""
        return shape_ops.take_along_dim(self, indices, dim)

    def masked_select(self, mask: Tensor) -> Tensor:
        """The elements where ``mask`` is true, as a 1-d tensor."""
        return shape_ops.masked_select(self, mask)

    def index_fill(self, dim: int, index: Tensor, value: float | Tensor) -> Tensor:
        """A copy with the slices at ``index`` along ``dim`` set to ``value``."""
        return shape_ops.index_fill(self, dim, index, value)

    def index_copy(self, dim: int, index: Tensor, source: Tensor) -> Tensor:
        """A copy with the slices at ``index`` along ``dim`` replaced by ``source``'s."""
        return self.select_assign(dim, index, source)

    def slice_scatter(self, src: Tensor, dim: int = 0, start: int | None = None,
                      end: int | None = None, step: int = 1) -> Tensor:
        """A copy with ``self[..., start:end:step, ...]`` (along ``dim``) replaced by ``src``."""
        d = normalize_dim("slice_scatter", dim, self.ndim)
        key = (slice(None),) * d + (slice(start, end, step),)
        expected = self[key].shape
        if src.shape != expected:
            raise ShapeError(f"slice_scatter: src {describe(src.shape)} must have the slice's "
                             f"shape {describe(expected)}")
        return self._assigned(key, src)

    def select_scatter(self, src: Tensor, dim: int, index: int) -> Tensor:
        """A copy with the slice at ``index`` along ``dim`` replaced by ``src``."""
        d = normalize_dim("select_scatter", dim, self.ndim)
        size = self.shape[d]
        if not -size <= index < size:
            raise IndexOutOfBoundsError(f"select_scatter: index {index} is out of range for dim "
                                        f"{dim} of size {size}")
        expected = self.shape[:d] + self.shape[d + 1:]
        if src.shape != expected:
            raise ShapeError(f"select_scatter: src {describe(src.shape)} must have shape "
                             f"{describe(expected)}")
        return self._assigned((slice(None),) * d + (index,), src)

    def scatter_reduce(self, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                       include_self: bool = True) -> Tensor:
        """``src`` reduced into a copy at ``index`` along ``dim`` with ``reduce`` (sum, prod,
        mean, amax, amin); ``include_self=False`` leaves this tensor's values out."""
        return shape_ops.scatter_reduce(self, dim, index, src, reduce, include_self)


    # ---- statistics, sorting and sampling (issue 16) ----------------------------------------

    @overload
    def median(self, dim: None = None, keepdim: bool = False) -> Tensor: ...
    @overload
    def median(self, dim: int, keepdim: bool = False) -> ValuesIndices: ...

    def median(self, dim: int | None = None, keepdim: bool = False) -> Tensor | ValuesIndices:
        """torch.median: the lower middle value (NaN where a NaN is); over all elements a 0-d
        tensor, along ``dim`` the named tuple ``(values, indices)``."""
        return statistics.median(self, dim, keepdim)

    @overload
    def nanmedian(self, dim: None = None, keepdim: bool = False) -> Tensor: ...
    @overload
    def nanmedian(self, dim: int, keepdim: bool = False) -> ValuesIndices: ...

    def nanmedian(self, dim: int | None = None,
                  keepdim: bool = False) -> Tensor | ValuesIndices:
        """torch.nanmedian: ``median`` ignoring NaNs (NaN only where every value is)."""
        return statistics.nanmedian(self, dim, keepdim)

    def mode(self, dim: int = -1, keepdim: bool = False) -> ValuesIndices:
        """torch.mode: ``(values, indices)`` of the most frequent value along ``dim`` (the
        smallest among equally frequent ones, at its last occurrence)."""
        return statistics.mode(self, dim, keepdim)

    def kthvalue(self, k: int, dim: int = -1, keepdim: bool = False) -> ValuesIndices:
        """torch.kthvalue: ``(values, indices)`` of the ``k``-th smallest along ``dim``."""
        return statistics.kthvalue(self, k, dim, keepdim)

    def aminmax(self, *, dim: int | None = None, keepdim: bool = False) -> MinMax:
        """torch.aminmax: the named tuple ``(min, max)`` over ``dim`` (all when None)."""
        return statistics.aminmax(self, dim=dim, keepdim=keepdim)

    def msort(self) -> Tensor:
        """torch.msort: the values sorted along dim 0."""
        return statistics.msort(self)

    def nansum(self, dim: Dims = None, keepdim: bool = False) -> Tensor:
        """torch.nansum: the sum with NaNs counted as zero."""
        return statistics.nansum(self, dim, keepdim)

    def nanmean(self, dim: Dims = None, keepdim: bool = False) -> Tensor:
        """torch.nanmean: the mean of the values that are not NaN."""
        return statistics.nanmean(self, dim, keepdim)

    def logcumsumexp(self, dim: int) -> Tensor:
        """torch.logcumsumexp: ``log(cumsum(exp(x)))`` along ``dim``, exact at any scale."""
        return statistics.logcumsumexp(self, dim)

    def norm(self, p: float | Literal["fro"] | None = "fro", dim: Dims = None,
             keepdim: bool = False) -> Tensor:
        """torch's Tensor.norm: the vector ``p``-norm (a number, inf, -inf, 0 or "fro") over
        ``dim``; the gradient at a zero norm is 0."""
        return statistics.norm(self, p, dim, keepdim)

    def dist(self, other: Tensor, p: float = 2.0) -> Tensor:
        """torch.dist: the ``p``-norm of ``self - other``."""
        return statistics.dist(self, other, p)

    def unique(self, sorted: bool = True, return_inverse: bool = False,
               return_counts: bool = False, dim: int | None = None) -> Tensor | tuple[Tensor, ...]:
        """torch.unique: the distinct values (or slices along ``dim``) in ascending order, with
        the optional inverse indices and counts."""
        return statistics.unique(self, sorted, return_inverse, return_counts, dim)

    def unique_consecutive(self, return_inverse: bool = False, return_counts: bool = False,
                           dim: int | None = None) -> Tensor | tuple[Tensor, ...]:
        """torch.unique_consecutive: one value per run of equal consecutive values."""
        return statistics.unique_consecutive(self, return_inverse, return_counts, dim)

    def histc(self, bins: int = 100, min: float = 0.0, max: float = 0.0) -> Tensor:
        """torch.histc: counts in ``bins`` equal bins over ``[min, max]`` (the data's range
        when equal), in the input's dtype."""
        return statistics.histc(self, bins, min, max)

    def bincount(self, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
        """torch.bincount: occurrences (or summed ``weights``) of each value of a 1-d
        non-negative int tensor."""
        return statistics.bincount(self, weights, minlength)

    def bernoulli(self, p: float | None = None) -> Tensor:
        """torch.bernoulli: 1 with probability ``self`` (or ``p``), else 0, without gradient."""
        return statistics.bernoulli(self, p)

    def multinomial(self, num_samples: int, replacement: bool = False) -> Tensor:
        """torch.multinomial: category indices drawn from the weights of each row."""
        return statistics.multinomial(self, num_samples, replacement)

    @staticmethod
    def logspace(start: float, end: float, steps: int, base: float = 10.0, *,
                 backend: type[Backend] | None = None, device: Device | None = None,
                 dtype: DTypeLike | None = None) -> Tensor:
        """torch.logspace: ``base ** linspace(start, end, steps)``."""
        return statistics.logspace(start, end, steps, base, backend=backend, device=device,
                                   dtype=dtype)

    @staticmethod
    def randperm(n: int, *, backend: type[Backend] | None = None, device: Device | None = None,
                 dtype: DTypeLike | None = None) -> Tensor:
        """torch.randperm: a random permutation of ``0..n-1`` from the seeded generator."""
        return statistics.randperm(n, backend=backend, device=device, dtype=dtype)

    # ---- fixes to the torch surface (issue 16) ----------------------------------------------

    # ---- quantization ----------------------------------------------------------------------------

    def quantize(self, scheme: QuantScheme, scales: Tensor | None = None,
                 tensor_scale: Tensor | None = None) -> Tensor:
        """The quantized tensor for ``scheme``: with the given ``scales`` (per tensor, shape
        ``()``; per block, the shape with the last dim divided by the block size), or scales
        calibrated on the data when omitted (``quantize_dynamic``)."""
        check_quantizable(self, scheme, "quantize")
        b = self.backend
        if scales is None:
            return new(b, b.quantize_dynamic(self.primitive, scheme), QUANTIZED)
        bs = scheme.level.block_size
        expected = () if bs is None else self.shape[:-1] + (self.shape[-1] // bs,)
        if scales.shape != expected or scales.kind is not FLOAT:
            raise ShapeError(f"quantize: scales must be a float tensor of shape "
                             f"{describe(expected)}, got {scales.kind} {describe(scales.shape)}")
        if scheme.level.two_level and tensor_scale is None:
            raise InvalidArgumentError("quantize: a two-level scheme needs tensor_scale")
        ts = None if tensor_scale is None else tensor_scale.cast("float32").primitive
        return new(b, b.quantize(self.primitive, scheme, scales.cast(scheme.param.dtype).primitive,
                                 ts), QUANTIZED)

    def quantize_dynamic(self, scheme: QuantScheme) -> Tensor:
        """Quantize with scales calibrated on this tensor."""
        return self.quantize(scheme)

    def dequantize(self) -> Tensor:
        """The float values a quantized tensor stands for."""
        if self.kind is not QUANTIZED:
            raise KindError(f"dequantize: expects a quantized tensor, got {self.kind}")
        return new(self.backend, self.backend.dequantize(self.primitive), FLOAT)

    @property
    def scheme(self) -> QuantScheme:
        """The quantization scheme of a quantized tensor."""
        if self.kind is not QUANTIZED:
            raise KindError(f"scheme: only quantized tensors have one, this is {self.kind}")
        return self.primitive.scheme

    def fake_quantize(self, scheme: QuantScheme) -> Tensor:
        """Quantize then dequantize, with the gradient of the identity (straight-through):
        trains weights that will be quantized later (quantization-aware training)."""
        check_quantizable(self, scheme, "fake_quantize")
        b = self.backend
        if b.ad_enabled():
            inner = self.detach()
            rounded = new(b, b.dequantize(b.quantize_dynamic(inner.primitive, scheme)), FLOAT)
            return self + (rounded - inner).detach()
        return new(b, b.dequantize(b.quantize_dynamic(self.primitive, scheme)), FLOAT)

    # ---- named after builtins -------------------------------------------------------------------
    # Last in the class body: from here on these names would shadow the builtin types in
    # annotations.
    def slice(self, ranges: Sequence[tuple[int, int] | slice | int | None]) -> Tensor:
        """Burn's ``slice``: one range per leading dim (``(start, end)``, a slice or None)."""
        key = tuple(slice(*r) if isinstance(r, tuple) else (slice(None) if r is None else r)
                    for r in ranges)
        return self[key]

    def float(self) -> Tensor:
        """As the backend's default float dtype (float32 on CPU, as torch's ``.float()``)."""
        return self.cast(self.backend.float_dtype)

    def int(self) -> Tensor:
        """As the backend's default int dtype (int64 on CPU)."""
        return self.cast(self.backend.int_dtype)

    def bool(self) -> Tensor:
        """As bools: non-zero is True."""
        return self.cast(DType.bool_)



def _binary(a: Tensor, other: object, spec: BinarySpec) -> Tensor:
    """The operators' hot path: a tensor of the same backend and kind (same shape and dtype
    unless the backend is ``trusted_binary_ops``) or a Python number goes straight to the
    backend op; anything else takes the general path, which checks and names every rule."""
    b = a.backend
    kind = a.kind
    if type(other) is Tensor:
        if other.backend is b and other.kind is kind:
            p, q = a.primitive, other.primitive
            if b.trusted_binary_ops:
                try:
                    if kind is FLOAT and spec.float_op is not None:
                        return new(b, getattr(b, spec.float_op)(p, q), spec.out_float)
                    if kind is INT and spec.int_fast_op is not None:
                        return new(b, getattr(b, spec.int_fast_op)(p, q), spec.out_int)
                except ValueError:
                    broadcast_shapes(spec.name, p.shape, q.shape)
                    raise
            elif (p.shape == q.shape and (p.dtype is q.dtype or p.dtype == q.dtype)
                  and (not b.multi_device or a.device == other.device)):
                if kind is FLOAT and spec.float_op is not None:
                    return new(b, getattr(b, spec.float_op)(p, q), spec.out_float)
                if kind is INT and spec.int_fast_op is not None:
                    return new(b, getattr(b, spec.int_fast_op)(p, q), spec.out_int)
        return binary_tensors(spec, a, other)
    cls = other.__class__
    if cls is float or cls is int:
        if kind is FLOAT and spec.float_scalar is not None:
            return new(b, getattr(b, spec.float_scalar)(a.primitive, other), spec.out_float)
        if (kind is INT and cls is int and spec.int_scalar is not None
                and spec.int_fast_op is not None):
            return new(b, getattr(b, spec.int_scalar)(a.primitive, other), spec.out_int)
    elif isinstance(other, Tensor):  # a subclass of Tensor
        return binary_tensors(spec, a, other)
    number = as_number(other)
    if number is None:
        return NotImplemented
    return binary_scalar(spec, a, number)


def _tracks_gradients(b: type[Backend]) -> TypeGuard[type[AutodiffBackend]]:
    """Whether ``b`` is an ``Autodiff`` decorator (imported here: autodiff imports Tensor)."""
    from burnpy.autodiff.backend import AutodiffBackend

    return b.ad_enabled() and issubclass(b, AutodiffBackend)


def _inner_float_primitive(b: type[AutodiffBackend], t: Tensor, op: str) -> Any:
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


def from_owned_data(data: np.ndarray | TensorData, *, backend: type[Backend],
                    device: Device | None = None, dtype: DTypeLike | None = None) -> Tensor:
    """``Tensor.from_data`` without its copy, for burnpy's own code only: ``data`` is an array
    burnpy made that nothing else holds or writes (a batch a ``DataLoader`` gathered)."""
    return _from_values(data, backend, device, dtype, copy=False)


def _from_values(data: Any, backend: type[Backend] | None, device: Device | None,
                 dtype: DTypeLike | None, copy: bool) -> Tensor:
    b = backend or _default_backend()
    data = data.into_data() if isinstance(data, Tensor) else host_values(data)
    td = TensorData.from_any(data, dtype, default_float=b.float_dtype, default_int=b.int_dtype,
                             copy=copy)
    return _from_tensor_data(b, td, device, "from_data")


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
