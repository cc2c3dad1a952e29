"""``WgpuBackend``: every op of the Backend protocol as WGSL compute shaders on wgpu-py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from burnpy.backend.base import Backend
from burnpy.backend.device import Device
from burnpy.backend.dtype import DType
from burnpy_wgpu.device import WgpuDevice, adapter_for, adapters
from burnpy_wgpu.dtypes import supported
from burnpy_wgpu.errors import AdapterUnavailableError
from burnpy_wgpu.fuser import WgslFuser, wgsl_fuser
from burnpy_wgpu.ops.activation_ops import WgpuActivationOps
from burnpy_wgpu.ops.bool_ops import WgpuBoolOps
from burnpy_wgpu.ops.float_ops import WgpuFloatOps
from burnpy_wgpu.ops.int_ops import WgpuIntOps
from burnpy_wgpu.ops.module_ops import WgpuModuleOps
from burnpy_wgpu.ops.q_ops import WgpuQOps
from burnpy_wgpu.qtensor import WgpuQTensor
from burnpy_wgpu.replay import TapedReplay
from burnpy_wgpu.runtime import runtime_for
from burnpy_wgpu.tensor import WgpuTensor


class WgpuBackend(WgpuFloatOps, WgpuIntOps, WgpuBoolOps, WgpuQOps, WgpuModuleOps,
                  WgpuActivationOps, Backend):
    """Tensors in WebGPU storage buffers (float32, float16 with ``shader-f16``, int32, uint32,
    bool, and quantized values packed in u32 words); devices are ``Device("wgpu", i)``, one
    per adapter (see ``list_adapters``)."""

    Device: ClassVar[Any] = WgpuDevice
    FloatTensorPrimitive: ClassVar[Any] = WgpuTensor
    IntTensorPrimitive: ClassVar[Any] = WgpuTensor
    BoolTensorPrimitive: ClassVar[Any] = WgpuTensor
    QuantizedTensorPrimitive: ClassVar[Any] = WgpuQTensor
    float_dtype: ClassVar[DType] = DType.float32
    int_dtype: ClassVar[DType] = DType.int32

    @classmethod
    def name(cls, device: Device | None = None) -> str:
        return "wgpu"

    @classmethod
    def devices(cls) -> list[Device]:
        return [Device("wgpu", i) for i in range(len(adapters()))]

    @classmethod
    def default_device(cls) -> Device:
        if not adapters():
            raise AdapterUnavailableError(
                "WgpuBackend: no WebGPU adapter found (run scripts/ensure_webgpu_adapter.sh to "
                "install the Vulkan software adapter)")
        return Device("wgpu", 0)

    @classmethod
    def supports_dtype(cls, device: Device, dtype: DType) -> bool:
        return supported(dtype, "shader-f16" in adapter_for(device).features)

    @classmethod
    def fuser(cls) -> WgslFuser:
        """The WGSL fuser ``Fusion(WgpuBackend)`` compiles its groups with."""
        return wgsl_fuser()

    @classmethod
    def seed(cls, device: Device, seed: int) -> None:
        rt = runtime_for(device)
        with rt.lock:
            rt.rng_seed = seed & ((1 << 64) - 1)
            rt.rng_counter = 0

    @classmethod
    def sync(cls, device: Device) -> None:
        runtime_for(device).sync()

    @classmethod
    def replay_runner(cls, run: Callable[[list[Any], list[Any]], list[Any]], graph: Any
                      ) -> Callable[[list[Any], list[Any]], list[Any]]:
        """A compiled replay as one submission of the dispatches taped on its first call,
        rebound to each call's buffers (``burnpy_wgpu.replay``); a graph reading values on
        the host mid-way (``graph.host_reads``) submits at each read, so it runs op by op."""
        if graph.host_reads:
            return run
        return TapedReplay(run, graph)
