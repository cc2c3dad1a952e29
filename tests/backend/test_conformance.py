"""Every op case of ``burnpy.testing`` on every backend available here, against torch."""

from __future__ import annotations

from typing import Any

import pytest

from burnpy import DType
from burnpy.backend.device import Device
from burnpy.testing import (
    CASES,
    OpCase,
    backends_available,
    conformance_tests,
    parametrize_cases,
    run_case,
)
from burnpy.testing.module_cases import MODULE_CASES
from burnpy_cpu import CpuBackend

BACKENDS = backends_available()


@pytest.mark.parametrize(
    ("backend", "case", "dtype"),
    [pytest.param(backend, *p.values, id=f"{backend.__name__}-{p.id}", marks=p.marks)
     for backend in BACKENDS for p in parametrize_cases(backend)])
def test_forward_matches_torch(backend: type, case: OpCase, dtype: str) -> None:
    run_case(case, backend, dtype, seed=0)


class NoHalfCpu(CpuBackend):
    """A CPU backend that refuses float16."""

    @classmethod
    def supports_dtype(cls, device: Device, dtype: DType) -> bool:
        return dtype is not DType.float16


class OffByOneUlpExp(CpuBackend):
    """A CPU backend whose exp is slightly wrong: the suite must catch it."""

    @classmethod
    def float_exp(cls, tensor: Any) -> Any:
        return CpuBackend.float_exp(tensor) * (1 + 1e-9)


def test_cpu_backend_is_available() -> None:
    assert CpuBackend in BACKENDS


def test_names_are_unique_and_every_case_has_dtypes() -> None:
    assert len({c.name for c in CASES}) == len(CASES)
    assert all(c.dtypes for c in CASES)


def test_parametrize_cases_skips_unsupported_dtypes_with_reason() -> None:
    params = parametrize_cases(NoHalfCpu)
    assert len(params) == sum(len(c.dtypes) for c in [*CASES, *MODULE_CASES])
    for p in params:
        case, dtype = p.values
        assert p.id == f"{case.name}-{dtype}"
        reasons = [m.kwargs["reason"] for m in p.marks]
        assert reasons == (["NoHalfCpu does not support float16"] if dtype == "float16" else [])


def test_conformance_tests_builds_a_parametrized_test() -> None:
    test = conformance_tests(CpuBackend)
    (mark,) = test.pytestmark
    assert mark.name == "parametrize" and len(mark.args[1]) == len(parametrize_cases(CpuBackend))


def test_run_case_catches_a_wrong_backend() -> None:
    exp = next(c for c in CASES if c.name == "exp")
    run_case(exp, CpuBackend, "float64")
    with pytest.raises(AssertionError, match=r"case 'exp' \[float64\] on OffByOneUlpExp"):
        run_case(exp, OffByOneUlpExp, "float64")
