"""Adapter discovery and device selection: ``WgpuDevice``, ``list_adapters`` and the power
preference.

Devices are ``Device("wgpu", i)``: index 0 is the adapter wgpu picks for the power preference
(``BURNPY_WGPU_POWER_PREFERENCE`` = ``high-performance`` or ``low-power``, or
``set_power_preference``), the others follow in wgpu's enumeration order. Native adapters
(Vulkan, Metal, D3D12) always come before OpenGL ones: Mesa's OpenGL llvmpipe adapter lacks
``shader-f16``, so a machine with both lavapipe and llvmpipe must compute on lavapipe.
``BURNPY_WGPU_BACKEND`` (``Vulkan``, ``Metal``, ``D3D12``, ``OpenGL``) keeps only adapters of
that backend type.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any, Literal

from burnpy.backend.device import Device
from burnpy_wgpu.errors import AdapterUnavailableError, WgpuError

PowerPreference = Literal["high-performance", "low-power"]
POWER_ENV = "BURNPY_WGPU_POWER_PREFERENCE"
BACKEND_ENV = "BURNPY_WGPU_BACKEND"
_PREFERENCES = ("high-performance", "low-power")


@dataclass(frozen=True, slots=True)
class AdapterInfo:
    """What ``list_adapters`` reports about one adapter: its device index and identity."""

    index: int
    name: str
    backend_type: str
    adapter_type: str
    vendor: str
    description: str

    @property
    def device(self) -> Device:
        return Device("wgpu", self.index)


class WgpuDevice:
    """A WebGPU device by index: ``WgpuDevice(0)`` is ``Device("wgpu", 0)``."""

    def __new__(cls, index: int = 0) -> Device:  # type: ignore[misc]
        return Device("wgpu", index)


class _Discovery:
    """The adapters of this process, discovered once (the preferred one first)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.preference: PowerPreference | None = None
        self.adapters: list[Any] | None = None
        self.in_use = False


_STATE = _Discovery()


def set_power_preference(preference: PowerPreference) -> None:
    """Choose which adapter becomes device 0; only before the first WebGPU device is used."""
    if preference not in _PREFERENCES:
        raise ValueError(f"power preference must be one of {_PREFERENCES}, got {preference!r}")
    with _STATE.lock:
        if _STATE.in_use:
            raise WgpuError("set_power_preference: a WebGPU device is already in use; set the "
                            "preference (or BURNPY_WGPU_POWER_PREFERENCE) before creating "
                            "tensors")
        _STATE.preference = preference
        _STATE.adapters = None


def power_preference() -> PowerPreference:
    """The preference in force: set_power_preference, else the env var, else high-performance."""
    if _STATE.preference is not None:
        return _STATE.preference
    env = os.environ.get(POWER_ENV, "").strip().lower()
    if env and env not in _PREFERENCES:
        raise ValueError(f"{POWER_ENV} must be one of {_PREFERENCES}, got {env!r}")
    return env or "high-performance"  # type: ignore[return-value]


def _identity(adapter: Any) -> tuple[str, str, str]:
    info = adapter.info
    return info["device"], info["backend_type"], info["description"]


def adapters() -> list[Any]:
    """The wgpu adapters of this machine, device 0 first (empty when there are none)."""
    with _STATE.lock:
        if _STATE.adapters is None:
            _STATE.adapters = _discover(power_preference())
        return _STATE.adapters


def _discover(preference: PowerPreference) -> list[Any]:
    import wgpu

    found = list(wgpu.gpu.enumerate_adapters_sync())
    wanted = os.environ.get(BACKEND_ENV, "").strip().lower()
    if wanted:
        found = [a for a in found if a.info["backend_type"].lower() == wanted]
    if not found:
        return []
    try:
        key: tuple[str, str, str] | None = _identity(
            wgpu.gpu.request_adapter_sync(power_preference=preference))
    except RuntimeError:
        key = None
    first = [a for a in found if _identity(a) == key][:1]
    ordered = first + [a for a in found if a not in first]
    return sorted(ordered, key=_is_opengl)


def _is_opengl(adapter: Any) -> bool:
    """Whether ``adapter`` runs on OpenGL, the backend sorted last (no ``shader-f16`` there)."""
    return str(adapter.info["backend_type"]).lower() == "opengl"


def adapter_for(device: Device) -> Any:
    """The adapter behind ``device``; marks discovery as in use."""
    found = adapters()
    if device.type != "wgpu" or not 0 <= device.index < len(found):
        raise AdapterUnavailableError(
            f"no WebGPU adapter for device {device} ({len(found)} adapter(s) found; see "
            "burnpy_wgpu.list_adapters() and scripts/ensure_webgpu_adapter.sh)")
    _STATE.in_use = True
    return found[device.index]


def list_adapters() -> list[AdapterInfo]:
    """Every WebGPU adapter of this machine, as ``AdapterInfo`` (index = device index)."""
    out = []
    for i, a in enumerate(adapters()):
        info = a.info
        out.append(AdapterInfo(i, info["device"], info["backend_type"], info["adapter_type"],
                               info["vendor"], info["description"]))
    return out
