"""burnpy's CPU backend on NumPy: ``from burnpy_cpu import CpuBackend``."""

from burnpy_cpu.backend import CpuBackend, CpuDevice

__all__ = ["CpuBackend", "CpuDevice"]
