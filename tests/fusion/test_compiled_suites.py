"""A slice of the shared suites with every group compiled: the fuser's size floor at 0 and no
op left to NumPy, so each fusable op runs at least once inside a numba kernel, in float32 and
float64, against torch (conformance) and against torch's gradients (the gradient suite).

The full suites in ``test_suites.py`` run at their natural sizes, mostly below the floor (op by
op on NumPy); this slice is what checks the kernels. Each conformance case's tensor inputs pass
through one identity op first (``x * 1``, ``not not b``), so even a one-op case forms a group
of two, which compiles.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from burnpy.autodiff.checkpoint import NoCheckpointing
from burnpy.fusion import Fusion
from burnpy.tensor import Tensor
from burnpy.testing import OpCase, run_case
from burnpy.testing.cases import CASES
from burnpy.testing.grad_check import grad_cases, run_grad_case
from burnpy_cpu import CpuBackend
from burnpy_cpu.fuser import FUSER

FUSED = Fusion(CpuBackend)

#: One or two cases per fusable op and composite (float, int and bool; broadcasting, scalars,
#: special values, reductions along a dim and over everything), each forming a group of two or
#: more ops (a case whose inputs have different loop shapes would leave one-op groups).
FLOAT = [
    "add", "sub_bcast_vec", "mul", "div", "div_by_zero", "remainder",
    "pow", "atan2", "add_scalar", "rsub_scalar", "mul_scalar", "div_scalar", "remainder_scalar",
    "pow_scalar_3f", "neg", "abs", "sign", "exp", "exp_special", "log", "log_special", "log1p",
    "sqrt", "sqrt_special", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
    "asinh", "acosh", "atanh", "erf", "erf_3d", "round", "floor", "ceil", "trunc", "recip",
    "square", "sigmoid", "sigmoid_special", "relu", "relu_special", "leaky_relu", "gelu",
    "gelu_tanh", "gelu_tails", "log_sigmoid", "silu", "softplus", "hard_sigmoid", "clamp",
    "clamp_min", "clamp_max", "clamp_nan", "isnan", "isinf", "eq_ties", "ne_scalar", "gt_ties",
    "ge_scalar", "lt_ties", "le_scalar", "sum_all", "sum_dim0", "sum_nan", "mean_all",
    "mean_dim_neg", "prod_dim", "amax_dim", "amin_dim", "max_nan", "mask_where",
    "mask_where_bcast_mask", "masked_fill", "float_to_bool",
]
INT_BOOL = [
    "int_add", "int_sub_scalar", "int_mul", "int_pow_scalar", "int_neg", "int_abs",
    "int_sign", "int_eq", "int_lt_scalar", "int_sum_dim", "int_prod_dim", "int_clamp",
    "int_mask_where", "int_masked_fill", "bool_and_bcast", "bool_or",
    "bool_xor", "bool_eq", "bool_not", "bool_to_float", "bool_to_long", "bool_mask_where",
]
GRAD = [
    "add_bcast_col_row", "mul", "div", "pow", "atan2", "exp", "log", "sqrt", "tanh", "sin",
    "erf", "sigmoid", "relu", "gelu", "gelu_tanh", "silu", "softplus", "clamp", "sum_dim0",
    "mean_all", "amax_dim", "mask_where",
]


@pytest.fixture(autouse=True)
def compile_everything() -> Iterator[None]:
    """Every group compiles (no size floor, no op declined or owned) for the test, then back."""
    before = FUSER.min_elements, FUSER.declined, FUSER.own_ops
    FUSER.min_elements, FUSER.declined, FUSER.own_ops = 0, frozenset(), frozenset()
    FUSED._accepted.clear()
    FUSED.stats.reset()
    yield
    FUSER.min_elements, FUSER.declined, FUSER.own_ops = before
    FUSED._accepted.clear()


def _identity(arg: Any) -> Any:
    """``arg`` through one fusable identity op (tensors only)."""
    if not isinstance(arg, Tensor):
        return arg
    if arg.dtype.is_bool:
        return arg.logical_not().logical_not()
    return arg * (1.0 if arg.dtype.is_float else 1)


def _through_a_group(case: OpCase) -> OpCase:
    """``case`` with its burnpy inputs passed through ``_identity`` first (torch unchanged)."""
    fn: Callable[..., Any] = case.fn

    def grouped(*args: Any) -> Any:
        return fn(*[_identity(a) for a in args])

    return dataclasses.replace(case, fn=grouped, torch_fn=case.torch_fn or case.fn)


def _cases(names: list[str]) -> list[OpCase]:
    by_name = {c.name: c for c in CASES}
    missing = [n for n in names if n not in by_name]
    assert not missing, f"no such conformance cases: {missing}"
    return [by_name[n] for n in names]


def _params() -> list[Any]:
    params = []
    for case in _cases(FLOAT):
        params += [pytest.param(case, d, id=f"{case.name}-{d}") for d in ("float32", "float64")
                   if d in case.dtypes]
    params += [pytest.param(c, c.dtypes[0], id=c.name) for c in _cases(INT_BOOL)]
    return params


@pytest.mark.parametrize(("case", "dtype"), _params())
def test_compiled_kernels_pass_the_conformance_case(case: OpCase, dtype: str) -> None:
    run_case(_through_a_group(case), FUSED, dtype, seed=0)
    assert FUSED.stats.kernels > 0


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", [c for c in grad_cases(None) if c.name in GRAD],
                         ids=lambda c: c.name)
def test_compiled_kernels_pass_the_gradient_case(case: OpCase, dtype: str) -> None:
    run_grad_case(case, FUSED, NoCheckpointing, seed=0, dtype=dtype)
    assert FUSED.stats.kernels > 0
