"""Errors of the WebGPU backend, all ``BurnpyError`` subclasses."""

from __future__ import annotations

from burnpy.backend.errors import BurnpyError, UnsupportedDTypeError


class WgpuError(BurnpyError, RuntimeError):
    """A failure of the WebGPU runtime (device lost, a kernel that did not compile)."""


class AdapterUnavailableError(WgpuError):
    """No WebGPU adapter matches the request (none installed, or an index out of range)."""


class WgpuDTypeError(UnsupportedDTypeError):
    """A dtype WGSL cannot store or compute (f64 and i64 do not exist in WGSL)."""


class WgpuLimitError(WgpuError, ValueError):
    """A tensor or dispatch beyond the adapter's limits (storage binding size, dims)."""
