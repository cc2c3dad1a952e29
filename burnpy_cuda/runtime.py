"""Finding CuPy and the GPUs, once, and saying clearly why the CUDA backend cannot run."""

from __future__ import annotations

import functools
import importlib
from types import ModuleType
from typing import Any

from burnpy.backend.errors import BurnpyError


class CudaUnavailableError(BurnpyError, RuntimeError):
    """The CUDA backend cannot run here (no CuPy, no driver, or no GPU); the message says which."""


@functools.cache
def _probe() -> tuple[ModuleType | None, ModuleType | None, int, str]:
    """(cupy, cupyx.scipy.special, device count, reason when unusable)."""
    try:
        cupy = importlib.import_module("cupy")
    except ImportError as exc:
        return None, None, 0, (f"CuPy is not installed ({exc}); install burnpy[cuda] "
                               "(cupy-cuda12x), or cupy-cuda13x for CUDA 13 drivers")
    try:
        count = int(cupy.cuda.runtime.getDeviceCount())
    except Exception as exc:  # CuPy raises driver-specific error types
        return cupy, None, 0, f"CuPy found no usable CUDA driver or GPU ({exc})"
    if count == 0:
        return cupy, None, 0, "CuPy sees no CUDA GPU on this machine"
    special = importlib.import_module("cupyx.scipy.special")
    return cupy, special, count, ""


def cuda_available() -> bool:
    """Whether CuPy imports and sees at least one GPU."""
    return not _probe()[3]


def unavailable_reason() -> str:
    """Why the CUDA backend cannot run here ("" when it can)."""
    return _probe()[3]


def require_cupy() -> tuple[ModuleType, ModuleType, int]:
    """CuPy, its special functions and the GPU count, or a CudaUnavailableError saying why."""
    cupy, special, count, reason = _probe()
    if reason:
        raise CudaUnavailableError(f"CudaBackend: {reason}")
    assert cupy is not None and special is not None
    return cupy, special, count


class LazyModule:
    """Stands in for CuPy (or its special functions) until first use, so ``import burnpy_cuda``
    works on any machine and using the backend raises CudaUnavailableError with the reason."""

    __slots__ = ("_index",)

    def __init__(self, index: int) -> None:
        self._index = index

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # introspection (copy, pickle, class checks) stays lazy
            raise AttributeError(name)
        return getattr(require_cupy()[self._index], name)
