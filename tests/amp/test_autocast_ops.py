"""Every op of the conformance tables (the Tensor ops' and the functional ops') under
``bp.autocast("cpu", dtype)`` against the same op under ``torch.autocast("cpu", dtype)``: the
output dtypes are equal and the values agree within the output dtype's tolerance
(``burnpy.testing.conformance``'s comparison).

Each case runs with float32 inputs under bfloat16 and float16 autocast (the lower-precision
list shows), and with bfloat16 inputs under bfloat16 autocast (the float32 list shows) where
the case declares bfloat16 inputs, or is a functional op whose torch list entry is float32.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
import torch

import burnpy as bp
import burnpy.testing.op_cases  # registers the cases
from burnpy.testing import conformance
from burnpy.testing.cases import CASES, OpCase
from burnpy.testing.module_cases import MODULE_CASES
from burnpy_cpu import CpuBackend

#: Cases whose torch side is an oracle composed of other torch ops, not the op itself: under
#: torch's autocast the oracle's parts follow the policy where the op would not.
ORACLE_CASES = {
    # _scatter_prod_oracle multiplies with torch.prod (float32 list); scatter_reduce is not
    # listed, so torch's own op keeps bfloat16, as burnpy's does.
    "scatter_reduce_prod", "scatter_reduce_prod_exclude_self",
    # _torch_lstm runs the recurrence's matmuls (lower-precision list) one by one.
    "lstm_recurrence", "lstm_recurrence_one_step",
}

#: (case, input dtype) pairs where torch's op and burnpy's reach the lists on different
#: paths, with the reason.
DIVERGENT = {
    ("inner_1d", "float32"): "torch.inner of two vectors ends in dot (not listed); burnpy's "
                             "in matmul",
    ("einsum_outer", "float32"): "torch's einsum multiplies when no label is summed; "
                                 "burnpy's uses matmul",
    ("einsum_repeat_across", "float32"): "torch's einsum multiplies when no label is summed; "
                                         "burnpy's uses matmul",
    ("max_pool3d_all", "bfloat16"): "torch's float32 list holds max_pool3d but not "
                                    "max_pool3d_with_indices (return_indices=True)",
    ("local_response_norm_even", "bfloat16"): "torch's local_response_norm of a 3-d input "
                                              "pools with avg_pool2d (not listed), of a "
                                              "4-d+ one with avg_pool3d (float32 list)",
    ("pad_reflect_3d", "bfloat16"): "torch's float32 list holds reflection_pad1d and 2d, "
                                    "not 3d",
}

_TORCH_DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16}
_MODULE_CASE_NAMES = {c.name for c in MODULE_CASES}


def _selected(input_dtype: str) -> list[Any]:
    """The cases with float inputs: every one in float32; in bfloat16 the Tensor-op cases that
    declare it and every functional case (the float32 list is mostly functional ops)."""
    out = []
    for c in (*CASES, *MODULE_CASES):
        if not any(a.kind == "float" for a in c.args) or c.name in ORACLE_CASES:
            continue
        if input_dtype not in c.dtypes and c.name not in _MODULE_CASE_NAMES:
            continue
        reason = DIVERGENT.get((c.name, input_dtype))
        marks = [] if reason is None else [pytest.mark.xfail(reason=reason, strict=True)]
        out.append(pytest.param(c, id=c.name, marks=marks))
    return out


def _run(case: OpCase, input_dtype: str, autocast_dtype: str) -> None:
    # Values computed partly in the autocast dtype (a float32 op fed by a half one, in
    # torch's composites or burnpy's) agree within that dtype's tolerance, not float32's.
    rtol, atol = conformance.TOLERANCES[autocast_dtype]
    case = dataclasses.replace(case, rtol=max(case.rtol or 0.0, rtol),
                               atol=max(case.atol or 0.0, atol))
    rng = np.random.default_rng(0)
    arrays = [conformance._draw(a, rng, input_dtype, case.name) for a in case.args]
    torch_fn = case.torch_fn or case.fn
    with torch.autocast("cpu", _TORCH_DTYPES[autocast_dtype]):
        theirs = torch_fn(*[conformance._to_torch(a) for a in arrays])
    inputs = [conformance.to_burnpy(a, arr, CpuBackend)
              for a, arr in zip(case.args, arrays, strict=True)]
    with bp.autocast("cpu", autocast_dtype):
        ours = case.fn(*inputs)
    ours_list, theirs_list = conformance._outputs(ours), conformance._outputs(theirs)
    assert len(ours_list) == len(theirs_list)
    where = f"case {case.name!r} [{input_dtype} inputs, autocast {autocast_dtype}]"
    for i, (got, want) in enumerate(zip(ours_list, theirs_list, strict=True)):
        conformance._compare(f"{where}, output {i}", got, want, case)


@pytest.mark.parametrize("autocast_dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("case", _selected("float32"))
def test_float32_inputs(case: OpCase, autocast_dtype: str) -> None:
    _run(case, "float32", autocast_dtype)


@pytest.mark.parametrize("case", _selected("bfloat16"))
def test_bfloat16_inputs_bfloat16(case: OpCase) -> None:
    _run(case, "bfloat16", "bfloat16")
