"""CudaBackend: a clear error where it cannot run; the shared suites where a GPU exists."""

from __future__ import annotations

import numpy as np
import pytest

import burnpy as bp
from burnpy import Tensor
from burnpy.testing import parametrize_cases, run_case
from burnpy_cuda import CudaBackend, CudaUnavailableError, cuda_available, unavailable_reason

needs_gpu = pytest.mark.skipif(not cuda_available(),
                               reason=f"needs CuPy and a CUDA GPU: {unavailable_reason()}")


@pytest.mark.skipif(cuda_available(), reason="a GPU is present; the no-GPU path is not taken")
def test_using_the_backend_without_a_gpu_says_why() -> None:
    assert unavailable_reason()
    with pytest.raises(CudaUnavailableError, match=r"CudaBackend: .*(CuPy|GPU|driver)") as info:
        Tensor.zeros((2, 2), backend=CudaBackend)
    assert isinstance(info.value, bp.BurnpyError)
    with pytest.raises(CudaUnavailableError):
        CudaBackend.devices()


@needs_gpu
@pytest.mark.parametrize(("case", "dtype"), parametrize_cases(CudaBackend) if cuda_available()
                         else [])
def test_conformance_on_cuda(case, dtype: str) -> None:
    run_case(case, CudaBackend, dtype)


@needs_gpu
def test_dlpack_and_devices() -> None:
    import torch

    x = Tensor.from_data(np.arange(6, dtype=np.float32).reshape(2, 3), backend=CudaBackend)
    assert x.device == CudaBackend.devices()[0]
    np.testing.assert_array_equal(x.to_numpy(), np.arange(6).reshape(2, 3))
    if torch.cuda.is_available():
        shared = torch.from_dlpack(x)
        assert shared.is_cuda
        np.testing.assert_array_equal(shared.cpu().numpy(), x.to_numpy())


@needs_gpu
def test_seeding_is_per_device_and_reproducible() -> None:
    device = CudaBackend.default_device()
    CudaBackend.seed(device, 5)
    a = Tensor.random((4,), backend=CudaBackend).to_numpy()
    CudaBackend.seed(device, 5)
    b = Tensor.random((4,), backend=CudaBackend).to_numpy()
    np.testing.assert_array_equal(a, b)
