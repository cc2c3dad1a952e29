"""burnpy's CPU backend on NumPy: ``from burnpy_cpu import CpuBackend``. Importing it registers
``CpuBackend`` as ``"cpu"``, the default backend (``burnpy.backend.registry``)."""

from burnpy.backend.registry import register_backend
from burnpy_cpu.backend import CpuBackend, CpuDevice

register_backend("cpu", CpuBackend, default=True)

__all__ = ["CpuBackend", "CpuDevice"]
