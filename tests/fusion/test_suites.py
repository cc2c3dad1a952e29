"""The shared suites on Fusion(CpuBackend): the conformance suite (every case, its first dtype,
to keep ``make test`` short), the gradient suite on ``Autodiff(Fusion(CpuBackend))`` under
both checkpoint strategies, and the tangent suite on ``ForwardAD(Fusion(CpuBackend))``.

The suites' inputs are small, so most ops run eagerly on NumPy (below the fuser's
``min_elements``); ``test_compiled_suites.py`` runs a slice of them with every group compiled."""

from __future__ import annotations

import pytest

from burnpy.autodiff.checkpoint import CheckpointStrategy
from burnpy.fusion import Fusion
from burnpy.testing import OpCase, parametrize_cases, run_case
from burnpy.testing.grad_check import parametrize_grad_cases, run_grad_case
from burnpy.testing.jvp_check import parametrize_jvp_cases, run_jvp_case
from burnpy_cpu import CpuBackend

FUSED = Fusion(CpuBackend)


def _first_dtype_each() -> list[object]:
    seen: set[str] = set()
    params = []
    for p in parametrize_cases(FUSED):
        case = p.values[0]
        if case.name not in seen:
            seen.add(case.name)
            params.append(p)
    return params


@pytest.mark.parametrize(("case", "dtype"), _first_dtype_each())
def test_fusion_passes_the_conformance_suite(case: OpCase, dtype: str) -> None:
    run_case(case, FUSED, dtype, seed=0)


@pytest.mark.parametrize(("case", "strategy"), parametrize_grad_cases())
def test_gradients_through_fusion_match_torch(case: OpCase,
                                              strategy: type[CheckpointStrategy]) -> None:
    run_grad_case(case, FUSED, strategy, seed=0)


@pytest.mark.parametrize("case", parametrize_jvp_cases())
def test_tangents_through_fusion_match_torch(case: OpCase) -> None:
    run_jvp_case(case, FUSED, seed=0)
