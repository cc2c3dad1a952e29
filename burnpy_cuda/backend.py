"""``CudaBackend``: the array-module ops of ``burnpy_cpu`` run on CuPy, with CUDA devices,
per-device seeding, the CuPy memory pool and zero-copy DLPack.

One implementation of each op's logic serves both backends (``burnpy_cpu/array_ops``), except
where ``CudaKernelOps`` (``kernel_ops.py``) runs a fused CUDA kernel instead (activations,
softmax, cross entropy, layer norm, the Adam step); this module holds only what is CUDA's own:
devices, streams, synchronization and host transfer.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from burnpy.backend.device import Device
from burnpy.backend.dtype import DType
from burnpy.backend.errors import DeviceMismatchError
from burnpy_cpu.array_ops import ArrayOps
from burnpy_cpu.array_ops.q_ops import QuantizedArray
from burnpy_cuda import graphs
from burnpy_cuda.fuser import CudaFuser, cuda_fuser
from burnpy_cuda.kernel_ops import CudaKernelOps
from burnpy_cuda.kernel_ops import _fused as fused_dtypes
from burnpy_cuda.runtime import LazyModule, require_cupy

#: CuPy has no bfloat16 storage type.
_UNSUPPORTED = frozenset({DType.bfloat16})


def CudaDevice(index: int = 0) -> Device:  # noqa: N802 - reads like a device type, as in Burn
    """The CUDA GPU ``index`` as a burnpy Device."""
    return Device("cuda", index)


class CudaBackend(CudaKernelOps, ArrayOps):
    """Every op on ``cupy.ndarray``s; quantized tensors are ``QuantizedArray``s of CuPy arrays.

    Ops run on the device of their inputs: the Tensor layer refuses operands on different
    GPUs, and each op enters that device's context.
    """

    xp: ClassVar[Any] = LazyModule(0)
    special: ClassVar[Any] = LazyModule(1)
    Device: ClassVar[Any] = CudaDevice
    QuantizedTensorPrimitive: ClassVar[Any] = QuantizedArray
    _generators: ClassVar[dict[Device, Any]] = {}
    _generator_lock: ClassVar[threading.Lock] = threading.Lock()

    @classmethod
    def name(cls, device: Device | None = None) -> str:
        return "cuda" if device is None else f"cuda:{device.index}"

    @classmethod
    def devices(cls) -> list[Device]:
        return [CudaDevice(i) for i in range(require_cupy()[2])]

    @classmethod
    def default_device(cls) -> Device:
        return CudaDevice(int(require_cupy()[0].cuda.runtime.getDevice()))

    @classmethod
    def supports_dtype(cls, device: Device, dtype: DType) -> bool:
        return dtype not in _UNSUPPORTED

    @classmethod
    def fuser(cls) -> CudaFuser:
        """The CUDA C fuser ``Fusion(CudaBackend)`` compiles its groups with."""
        return cuda_fuser()

    @classmethod
    def replay_runner(cls, run: Callable[[list[Any], list[Any]], list[Any]], graph: Any
                      ) -> Callable[[list[Any], list[Any]], list[Any]]:
        """A ``bp.compile`` replay as one CUDA graph once warm (``burnpy_cuda.graphs``)."""
        return graphs.replay_runner(run, graph)

    @classmethod
    def adam_step(cls, param: Any, grad: Any, exp_avg: Any | None, exp_avg_sq: Any | None,
                  max_exp_avg_sq: Any | None, *, step: int, lr: float, beta1: float,
                  beta2: float, eps: float, weight_decay: float = 0.0, decoupled: bool = False,
                  amsgrad: bool = False) -> tuple[Any, Any, Any, Any | None]:
        """The fused Adam step (``CudaKernelOps``); while a CUDA graph is captured with the
        step count or rate per call, its scalars are read from the graph's scalar table
        (``graphs.fed_adam_step``), so one graph serves every step."""
        table = graphs.active_table()
        if (table is not None and (graphs.is_slot(step) or graphs.is_slot(lr))
                and fused_dtypes(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq)):
            return graphs.fed_adam_step(
                table, param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, step=step, lr=lr,
                beta1=beta1, beta2=beta2, eps=eps, weight_decay=weight_decay,
                decoupled=decoupled, amsgrad=amsgrad)
        return super().adam_step(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, step=step,
                                 lr=lr, beta1=beta1, beta2=beta2, eps=eps,
                                 weight_decay=weight_decay, decoupled=decoupled,
                                 amsgrad=amsgrad)

    @classmethod
    def seed(cls, device: Device, seed: int) -> None:
        with cls._on(device), cls._generator_lock:
            cls._generators[device] = require_cupy()[0].random.default_rng(seed)

    @classmethod
    def sync(cls, device: Device) -> None:
        require_cupy()[0].cuda.Device(device.index).synchronize()

    @classmethod
    def _generator(cls, device: Device) -> Any:
        gen = cls._generators.get(device)
        if gen is None:
            with cls._generator_lock:
                gen = cls._generators.get(device)
                if gen is None:
                    gen = cls._generators[device] = require_cupy()[0].random.default_rng()
        return gen

    @staticmethod
    def _on(device: Device) -> Any:
        return require_cupy()[0].cuda.Device(device.index)

    @staticmethod
    def _to_host(tensor: Any) -> np.ndarray:
        return graphs.host_read(tensor)

    @staticmethod
    def _device(tensor: Any) -> Device:
        return CudaDevice(tensor.device.id)

    float_device = int_device = bool_device = _device

    @staticmethod
    def q_device(tensor: QuantizedArray) -> Device:
        return CudaDevice(tensor.data.device.id)

    @classmethod
    def _to_device(cls, tensor: Any, device: Device) -> Any:
        if tensor.device.id == device.index:
            return tensor
        with cls._on(device):
            return cls.xp.asarray(tensor)

    float_to_device = int_to_device = bool_to_device = _to_device

    @classmethod
    def q_to_device(cls, tensor: QuantizedArray, device: Device) -> QuantizedArray:
        if tensor.data.device.id == device.index:
            return tensor
        move = cls._to_device
        ts = None if tensor.tensor_scale is None else move(tensor.tensor_scale, device)
        return QuantizedArray(move(tensor.data, device), tensor.shape, tensor.scheme,
                              move(tensor.scales, device), ts, tensor.block_axis,
                              tensor.float_dtype)

    @classmethod
    def memory_pool(cls) -> Any:
        """CuPy's device memory pool (``used_bytes()``, ``free_all_blocks()``...)."""
        return require_cupy()[0].get_default_memory_pool()

    @classmethod
    def check_same_device(cls, op: str, *tensors: Any) -> None:
        """DeviceMismatchError unless every primitive lives on one GPU."""
        ids = {t.device.id for t in tensors}
        if len(ids) > 1:
            raise DeviceMismatchError(f"{op}: operands are on GPUs {sorted(ids)}")
