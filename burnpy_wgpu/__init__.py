"""burnpy's WebGPU backend: every op a WGSL compute shader, run through wgpu-py."""

from burnpy.backend.registry import register_backend
from burnpy_wgpu.backend import WgpuBackend
from burnpy_wgpu.device import (
    AdapterInfo,
    WgpuDevice,
    list_adapters,
    power_preference,
    set_power_preference,
)
from burnpy_wgpu.errors import (
    AdapterUnavailableError,
    WgpuDTypeError,
    WgpuError,
    WgpuLimitError,
)

__all__ = [
    "AdapterInfo", "AdapterUnavailableError", "WgpuBackend", "WgpuDTypeError", "WgpuDevice",
    "WgpuError", "WgpuLimitError", "list_adapters", "power_preference", "set_power_preference",
]

register_backend("wgpu", WgpuBackend)
