"""Every gradient case (the shared op table and the module-op table) on every backend wrapped in
Autodiff, under both checkpoint strategies, against torch autograd and finite differences; and
the forward suite on the decorated backend, whose values must be the inner backend's."""

from __future__ import annotations

import pytest

from burnpy.autodiff import Autodiff, BalancedCheckpointing, NoCheckpointing
from burnpy.autodiff.checkpoint import CheckpointStrategy
from burnpy.testing import CASES, OpCase, backends_available, parametrize_cases, run_case
from burnpy.testing.grad_check import (
    grad_cases,
    parametrize_grad_cases,
    run_grad_case,
    run_second_order_case,
)
from burnpy_cpu import CpuBackend

#: The backends the gradient suite wraps (CPU for now; GPU backends join when they pass the
#: forward suite).
BACKENDS = [CpuBackend]


@pytest.mark.parametrize(
    ("backend", "case", "strategy"),
    [pytest.param(b, *p.values, id=f"{b.__name__}-{p.id}")
     for b in BACKENDS for p in parametrize_grad_cases()])
def test_gradients_match_torch_and_finite_differences(backend: type, case: OpCase,
                                                      strategy: type[CheckpointStrategy]) -> None:
    run_grad_case(case, backend, strategy, seed=0)


@pytest.mark.parametrize(
    ("backend", "case", "dtype"),
    [pytest.param(b, *p.values, id=f"{b.__name__}-{p.id}", marks=p.marks)
     for b in BACKENDS for p in parametrize_cases(Autodiff(b), CASES)])
def test_decorated_backend_passes_the_forward_suite(backend: type, case: OpCase,
                                                    dtype: str) -> None:
    run_case(case, Autodiff(backend), dtype, seed=0)


def test_the_gradient_table_covers_the_module_ops_and_both_strategies() -> None:
    names = {c.name for c in grad_cases()}
    for op in ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
               "conv_transpose3d", "avg_pool2d", "max_pool2d", "adaptive_avg_pool2d",
               "embedding", "interpolate_bilinear", "linear", "attention_mask",
               "attention_causal_scale", "prod_two_zeros", "cumprod_zero"):
        assert any(name.startswith(op) for name in names), op
    strategies = {p.values[1] for p in parametrize_grad_cases()}
    assert strategies == {NoCheckpointing, BalancedCheckpointing}


@pytest.mark.parametrize(
    ("backend", "case", "strategy"),
    [pytest.param(b, *p.values, id=f"{b.__name__}-{p.id}")
     for b in BACKENDS for p in parametrize_grad_cases()])
def test_second_derivatives_through_nested_autodiff_match_torch(
        backend: type, case: OpCase, strategy: type[CheckpointStrategy]) -> None:
    run_second_order_case(case, backend, strategy, seed=0)


@pytest.mark.parametrize(
    ("backend", "case", "strategy"),
    [pytest.param(b, *p.values, id=f"{b.__name__}-f32-{p.id}")
     for b in backends_available() for p in parametrize_grad_cases()])
def test_float32_gradients_on_every_backend(backend: type, case: OpCase,
                                            strategy: type[CheckpointStrategy]) -> None:
    """The float32 mode: how backends without float64 (WebGPU) run the gradient suite."""
    run_grad_case(case, backend, strategy, seed=0, dtype="float32")
