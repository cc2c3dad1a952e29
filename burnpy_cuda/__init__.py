"""burnpy's CUDA backend on CuPy: ``from burnpy_cuda import CudaBackend``.

Importing works on any machine; using the backend without CuPy or a GPU raises
``CudaUnavailableError`` saying why (``unavailable_reason()`` tells in advance).
"""

from burnpy.backend.registry import register_backend
from burnpy_cuda.backend import CudaBackend, CudaDevice
from burnpy_cuda.runtime import CudaUnavailableError, cuda_available, unavailable_reason

__all__ = ["CudaBackend", "CudaDevice", "CudaUnavailableError", "cuda_available",
           "unavailable_reason"]

register_backend("cuda", CudaBackend)
