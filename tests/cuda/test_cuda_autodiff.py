"""The gradient and tangent suites on the GPU: every gradient case on ``Autodiff(CudaBackend)``
under both checkpoint strategies (float64 against torch and finite differences, and float32),
the forward suite on the decorated backend, and every tangent case on
``ForwardAD(CudaBackend)``, in that order (the GPU check may stop a part at its time limit,
and pytest hands out tests in this order). Skipped, with the reason, where CuPy sees no GPU."""

from __future__ import annotations

import pytest

from burnpy.autodiff import Autodiff
from burnpy.autodiff.checkpoint import CheckpointStrategy
from burnpy.testing import CASES, OpCase, parametrize_cases, run_case
from burnpy.testing.grad_check import parametrize_grad_cases, run_grad_case
from burnpy.testing.jvp_check import parametrize_jvp_cases, run_jvp_case
from burnpy_cuda import CudaBackend, cuda_available, unavailable_reason

HERE = cuda_available()
pytestmark = pytest.mark.skipif(not HERE, reason=f"needs CuPy and a CUDA GPU: "
                                f"{unavailable_reason()}")


@pytest.mark.parametrize(("case", "strategy"), parametrize_grad_cases() if HERE else [])
def test_gradients_on_cuda_match_torch_and_finite_differences(
        case: OpCase, strategy: type[CheckpointStrategy]) -> None:
    run_grad_case(case, CudaBackend, strategy, seed=0)


@pytest.mark.parametrize("case", parametrize_jvp_cases() if HERE else [])
def test_tangents_on_cuda_match_torch_func_jvp(case: OpCase) -> None:
    run_jvp_case(case, CudaBackend, seed=0)


@pytest.mark.parametrize(("case", "dtype"),
                         parametrize_cases(Autodiff(CudaBackend), CASES) if HERE else [])
def test_autodiff_cuda_passes_the_forward_suite(case: OpCase, dtype: str) -> None:
    run_case(case, Autodiff(CudaBackend), dtype, seed=0)


@pytest.mark.parametrize(("case", "strategy"), parametrize_grad_cases() if HERE else [])
def test_float32_gradients_on_cuda(case: OpCase, strategy: type[CheckpointStrategy]) -> None:
    run_grad_case(case, CudaBackend, strategy, seed=0, dtype="float32")
