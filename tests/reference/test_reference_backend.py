"""The conformance, gradient and tangent suites on ``ReferenceBackend`` (the required core
only), so every provided default of the Backend protocol runs and is checked against torch."""

from __future__ import annotations

import pytest
from reference_backend import ReferenceBackend, required_ops

from burnpy.autodiff.checkpoint import CheckpointStrategy
from burnpy.backend.base import Backend
from burnpy.testing import OpCase, parametrize_cases, run_case
from burnpy.testing.grad_check import parametrize_grad_cases, run_grad_case
from burnpy.testing.jvp_check import parametrize_jvp_cases, run_jvp_case


def test_the_reference_implements_the_required_core_and_nothing_else() -> None:
    """Required ops are CpuBackend's; every other op of the protocol is its provided default."""
    from burnpy_cpu import CpuBackend

    required = set(required_ops())
    assert required and not required_ops(ReferenceBackend)
    for name in dir(Backend):
        if name.startswith("__") or name in vars(Backend):
            continue
        ours = getattr(ReferenceBackend, name)
        if name in required:
            assert _function(ours) is _function(getattr(CpuBackend, name)), name
        else:
            assert _function(ours) is _function(getattr(Backend, name)), name


def _function(attr: object) -> object:
    """The plain function behind a bound class method (a static method is one already)."""
    return getattr(attr, "__func__", attr)


@pytest.mark.parametrize(("case", "dtype"), parametrize_cases(ReferenceBackend))
def test_forward_matches_torch(case: OpCase, dtype: str) -> None:
    run_case(case, ReferenceBackend, dtype, seed=0)


@pytest.mark.parametrize(("case", "strategy"), parametrize_grad_cases())
def test_gradients_match_torch(case: OpCase, strategy: type[CheckpointStrategy]) -> None:
    run_grad_case(case, ReferenceBackend, strategy, seed=0)


@pytest.mark.parametrize("case", parametrize_jvp_cases())
def test_tangents_match_torch(case: OpCase) -> None:
    run_jvp_case(case, ReferenceBackend, seed=0)
