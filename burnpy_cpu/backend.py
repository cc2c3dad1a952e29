"""``CpuBackend``: the NumPy backend, burnpy's embedded default."""

from __future__ import annotations

import threading
from typing import Any, ClassVar

import numpy as np
import scipy.special

from burnpy.backend.device import Device
from burnpy_cpu import memory
from burnpy_cpu.array_ops import ArrayOps
from burnpy_cpu.array_ops.q_ops import QuantizedArray
from burnpy_cpu.array_ops.recurrent_ops import ArrayRecurrentOps
from burnpy_cpu.fuser import FUSER, CpuFuser

CPU = Device("cpu", 0)


class CpuDevice:
    """The CPU backend's single device, ``Device("cpu", 0)``."""

    def __new__(cls, index: int = 0) -> Device:  # type: ignore[misc]
        return CPU


class CpuBackend(ArrayRecurrentOps, ArrayOps):
    """Every op on NumPy arrays: float, int and bool primitives are ``numpy.ndarray``;
    quantized ones are ``QuantizedArray`` (int8 or packed uint32 values plus scales)."""

    xp: ClassVar[Any] = np
    special: ClassVar[Any] = scipy.special
    Device: ClassVar[Any] = CpuDevice
    FloatTensorPrimitive: ClassVar[Any] = np.ndarray
    IntTensorPrimitive: ClassVar[Any] = np.ndarray
    BoolTensorPrimitive: ClassVar[Any] = np.ndarray
    QuantizedTensorPrimitive: ClassVar[Any] = QuantizedArray
    multi_device: ClassVar[bool] = False
    trusted_binary_ops: ClassVar[bool] = True
    _generators: ClassVar[dict[Device, np.random.Generator]] = {}
    _generator_lock: ClassVar[threading.Lock] = threading.Lock()

    @staticmethod
    def float_matmul(lhs: Any, rhs: Any) -> Any:
        """``lhs @ rhs``: float32 and float64 products on cached memory, the others (16-bit
        floats, mixed dtypes) as ``ArrayOps``'s."""
        return memory.matmul(lhs, rhs, ArrayOps.float_matmul)

    @classmethod
    def name(cls, device: Device | None = None) -> str:
        return "cpu"

    @classmethod
    def devices(cls) -> list[Device]:
        return [CPU]

    @classmethod
    def fuser(cls) -> CpuFuser:
        """The numba fuser ``Fusion(CpuBackend)`` compiles its elementwise groups with."""
        return FUSER

    @classmethod
    def default_device(cls) -> Device:
        return CPU

    @classmethod
    def seed(cls, device: Device, seed: int) -> None:
        with cls._generator_lock:
            cls._generators[device] = np.random.default_rng(seed)

    @classmethod
    def _generator(cls, device: Device) -> np.random.Generator:
        gen = cls._generators.get(device)
        if gen is None:
            with cls._generator_lock:
                gen = cls._generators.setdefault(device, np.random.default_rng())
        return gen

    @staticmethod
    def _device(tensor: Any) -> Device:
        return CPU

    float_device = int_device = bool_device = q_device = _device

    @staticmethod
    def _to_device(tensor: Any, device: Device) -> Any:
        return tensor

    float_to_device = int_to_device = bool_to_device = q_to_device = _to_device
