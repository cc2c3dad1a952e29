"""Every op case of ``burnpy.testing`` on every backend available here, against torch."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from burnpy import DType
from burnpy.autodiff import NoCheckpointing
from burnpy.backend.device import Device
from burnpy.testing import (
    CASES,
    F,
    OpCase,
    backends_available,
    conformance_tests,
    parametrize_cases,
    run_case,
)
from burnpy.testing.grad_check import run_grad_case
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
    cases = [*CASES, *MODULE_CASES]
    assert len({c.name for c in cases}) == len(cases)
    assert all(c.dtypes for c in cases)


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


class WebGpuDTypesCpu(CpuBackend):
    """A CPU backend with WebGPU's dtypes: ints are int32; no int64, float64 or bfloat16."""

    int_dtype = DType.int32

    @classmethod
    def supports_dtype(cls, device: Device, dtype: DType) -> bool:
        return dtype not in (DType.int64, DType.float64, DType.bfloat16)


def _outcome(run: Callable[[], None]) -> str:
    """How a runner ended: "pass", "fail: <message>" or "skip: <reason>" (a skip is caught
    here, so a wrong skip fails the test instead of skipping it)."""
    try:
        run()
    except pytest.skip.Exception as exc:
        return f"skip: {exc.msg}"
    except AssertionError as exc:
        return f"fail: {exc}"
    return "pass"


_HALF_INSIDE = OpCase("half_inside", lambda x: (x.half() * 2).float(), (F(3, 4),),
                      dtypes=("float32",))


def test_a_dtype_the_case_does_not_ask_for_fails_naming_the_case() -> None:
    """An op (or a case) that builds float16 on a backend without it is a real gap."""
    outcome = _outcome(lambda: run_case(_HALF_INSIDE, NoHalfCpu, "float32"))
    assert outcome.startswith("fail: case 'half_inside' [float32] on NoHalfCpu: cast: "), outcome
    assert "bp.float16" in outcome
    grad = _outcome(lambda: run_grad_case(_HALF_INSIDE, NoHalfCpu, NoCheckpointing))
    assert grad.startswith("fail: grad case 'half_inside' [float64] on Autodiff[NoHalfCpu"), grad


def test_a_dtype_the_case_asks_for_is_a_skip_with_the_reason() -> None:
    asked = dataclasses.replace(_HALF_INSIDE, asks_dtypes=("float16",))
    outcome = _outcome(lambda: run_case(asked, NoHalfCpu, "float32"))
    assert outcome.startswith("skip: case 'half_inside' [float32] on NoHalfCpu: the case asks "
                              "for float16: cast: "), outcome
    grad = _outcome(lambda: run_grad_case(asked, NoHalfCpu, NoCheckpointing))
    assert grad.startswith("skip: grad case 'half_inside'"), grad
    assert _outcome(lambda: run_case(asked, CpuBackend, "float32")) == "pass"


#: Cases that build int tensors themselves, or whose ops do (gather indices, ranks, targets).
_BUILDS_INTS = [c for c in [*CASES, *MODULE_CASES]
                if c.name.endswith("_int") or "_float_int" in c.name or c.name.startswith(
                    ("grid_sample", "ctc_loss", "linalg_matrix_rank", "linalg_lstsq", "fold",
                     "max_pool3d", "max_pool2d_with_indices", "adaptive_max_pool"))]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in _BUILDS_INTS])
def test_int_building_cases_run_in_the_backends_int_dtype(case: OpCase) -> None:
    """Without int64 (WebGPU), the cases and ops build their ints in the backend's int
    dtype: they run and match torch instead of skipping."""
    dtype = "float32" if "float32" in case.dtypes else WebGpuDTypesCpu.int_dtype.value
    assert _outcome(lambda: run_case(case, WebGpuDTypesCpu, dtype)) == "pass"


def test_int_cases_run_in_the_backends_int_dtype() -> None:
    ints = [p for p in parametrize_cases(WebGpuDTypesCpu) if p.values[0].dtypes == ("int64",)]
    assert ints and all(p.values[1] == "int32" and not p.marks for p in ints)
    assert all(p.id.endswith("-int32") for p in ints)
