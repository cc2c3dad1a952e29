"""What every decorator backend (Autodiff, ForwardAD, Fusion) shares: one cached class per key,
and the int, bool and quantized ops and primitives it takes from its inner backend unchanged."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, ClassVar, Generic, TypeVar

from burnpy.backend.base import Backend
from burnpy.backend.device import Device
from burnpy.backend.dtype import DType
from burnpy.backend.errors import InvalidArgumentError
from burnpy.backend.ops.bool_ops import BoolOps
from burnpy.backend.ops.int_ops import IntOps
from burnpy.backend.ops.q_ops import QOps

T = TypeVar("T")

#: Int/bool ops with a float result: a decorator wraps them in its own float primitive.
_FLOAT_RESULTS = ("int_into_float", "bool_into_float")


def passthrough_ops(own: type) -> tuple[str, ...]:
    """The int, bool and quantized ops a decorator delegates to its inner backend (their
    primitives are the inner backend's own), leaving out those ``own`` defines."""
    return tuple(sorted(
        name for name in {*dir(IntOps), *dir(BoolOps), *dir(QOps)}
        if name.startswith(("int_", "bool_", "q_")) and not hasattr(own, name)
        and name not in _FLOAT_RESULTS))


class ClassCache(Generic[T]):
    """One value (a decorator class) per key, built once: concurrent first uses from several
    threads get the same class, so ``Autodiff(B) is Autodiff(B)`` always holds."""

    __slots__ = ("_cache", "_lock")

    def __init__(self) -> None:
        self._cache: dict[object, T] = {}  # keys: backend classes, or tuples of them
        self._lock = threading.Lock()

    def get(self, key: object, build: Callable[[], T]) -> T:
        found = self._cache.get(key)
        if found is None:
            with self._lock:
                found = self._cache.get(key)
                if found is None:
                    found = self._cache[key] = build()
        return found


class DecoratorFactory(Generic[T]):
    """``Name(B)`` and ``Name[B]`` for a decorator with no other parameter (ForwardAD, Fusion):
    checks that ``B`` is a backend class and builds one cached class per backend."""

    __slots__ = ("_build", "_classes", "_name")

    def __init__(self, name: str, build: Callable[[type[Backend]], T]) -> None:
        self._name = name
        self._build = build
        self._classes: ClassCache[T] = ClassCache()

    def __call__(self, backend: type[Backend]) -> T:
        if not (isinstance(backend, type) and issubclass(backend, Backend)):
            raise InvalidArgumentError(f"{self._name}: expected a backend class, got {backend!r}")
        return self._classes.get(backend, lambda: self._build(backend))

    def __getitem__(self, backend: type[Backend]) -> T:
        return self(backend)

    def __repr__(self) -> str:
        return self._name


class InnerDevices:
    """A decorator's devices, dtypes, seeding and synchronization are its inner backend's
    (Fusion's ``sync`` runs its pending ops first)."""

    InnerBackend: ClassVar[Any]

    @classmethod
    def default_device(cls) -> Device:
        return cls.InnerBackend.default_device()

    @classmethod
    def devices(cls) -> list[Device]:
        return cls.InnerBackend.devices()

    @classmethod
    def supports_dtype(cls, device: Device, dtype: DType) -> bool:
        return cls.InnerBackend.supports_dtype(device, dtype)

    @classmethod
    def seed(cls, device: Device, seed: int) -> None:
        cls.InnerBackend.seed(device, seed)

    @classmethod
    def sync(cls, device: Device) -> None:
        cls.InnerBackend.sync(device)


def inner_attributes(inner: type[Backend], qualname: str, doc: str) -> dict[str, Any]:
    """The class attributes every decorator of ``inner`` takes from it, with its name and
    docstring: one list for Autodiff, ForwardAD and Fusion."""
    return {"__qualname__": qualname, "__doc__": doc, "InnerBackend": inner,
            "Device": inner.Device, "QuantizedTensorPrimitive": inner.QuantizedTensorPrimitive,
            "float_dtype": inner.float_dtype, "int_dtype": inner.int_dtype,
            "multi_device": inner.multi_device}


class PassThroughKinds:
    """The int, bool and quantized side of a decorator: those primitives are the inner
    backend's own, so they cross unchanged, and the int/bool ops with a float result wrap it
    in the decorator's (untracked) ``FloatTensorPrimitive``."""

    FloatTensorPrimitive: ClassVar[Any]
    InnerBackend: ClassVar[Any]

    @staticmethod
    def int_inner(tensor: Any) -> Any:
        return tensor

    int_from_inner = bool_inner = bool_from_inner = q_inner = q_from_inner = int_inner

    @classmethod
    def int_into_float(cls, tensor: Any, dtype: DType) -> Any:
        return cls.FloatTensorPrimitive(cls.InnerBackend.int_into_float(tensor, dtype))

    @classmethod
    def bool_into_float(cls, tensor: Any, dtype: DType) -> Any:
        return cls.FloatTensorPrimitive(cls.InnerBackend.bool_into_float(tensor, dtype))
