"""The shared suites on ``Fusion(CudaBackend)``, where every group the CUDA fuser accepts is
compiled into one kernel (it has no size floor): the conformance suite in every dtype, the
gradient suite on ``Autodiff(Fusion(CudaBackend))`` under both checkpoint strategies, and the
tangent suite on ``ForwardAD(Fusion(CudaBackend))``. Skipped, with the reason, where CuPy sees
no GPU."""

from __future__ import annotations

import pytest

from burnpy.autodiff.checkpoint import CheckpointStrategy
from burnpy.fusion import Fusion
from burnpy.testing import OpCase, parametrize_cases, run_case
from burnpy.testing.grad_check import parametrize_grad_cases, run_grad_case
from burnpy.testing.jvp_check import parametrize_jvp_cases, run_jvp_case
from burnpy_cuda import CudaBackend, cuda_available, unavailable_reason

HERE = cuda_available()
pytestmark = pytest.mark.skipif(not HERE, reason=f"needs CuPy and a CUDA GPU: "
                                f"{unavailable_reason()}")
FUSED = Fusion(CudaBackend)


@pytest.mark.parametrize(("case", "dtype"), parametrize_cases(FUSED) if HERE else [])
def test_fusion_cuda_passes_the_conformance_suite(case: OpCase, dtype: str) -> None:
    run_case(case, FUSED, dtype, seed=0)


@pytest.mark.parametrize(("case", "strategy"), parametrize_grad_cases() if HERE else [])
def test_gradients_through_fusion_cuda_match_torch(case: OpCase,
                                                   strategy: type[CheckpointStrategy]) -> None:
    run_grad_case(case, FUSED, strategy, seed=0)


@pytest.mark.parametrize("case", parametrize_jvp_cases() if HERE else [])
def test_tangents_through_fusion_cuda_match_torch(case: OpCase) -> None:
    run_jvp_case(case, FUSED, seed=0)
