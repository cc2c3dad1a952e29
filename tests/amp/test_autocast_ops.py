"""Every op of the conformance table under ``bp.autocast("cpu", dtype)`` against the same op
under ``torch.autocast("cpu", dtype)``: the output dtypes are equal and the values agree
within the output dtype's tolerance (``burnpy.testing.conformance``'s comparison).

Each case runs with the float inputs it declares in float32 (the lower-precision list shows)
and, where it declares them, in bfloat16 (the float32 list shows).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import burnpy as bp
import burnpy.testing.op_cases  # registers the cases
from burnpy.testing import conformance
from burnpy.testing.cases import CASES, OpCase
from burnpy_cpu import CpuBackend

#: Cases whose torch side is an oracle composed of other torch ops, not the op itself: under
#: torch's autocast the oracle's parts follow the policy where the op would not.
ORACLE_CASES = {
    # _scatter_prod_oracle multiplies with torch.prod (float32 list); scatter_reduce is not
    # listed, so torch's own op keeps bfloat16, as burnpy's does.
    "scatter_reduce_prod", "scatter_reduce_prod_exclude_self",
}

#: Cases (with float32 inputs) where torch's composite op and burnpy's composition reach a
#: listed op on different paths: burnpy's output is bfloat16 where torch's stays float32.
DIVERGENT = {
    "inner_1d": "torch.inner of two vectors ends in dot (not listed); burnpy's in matmul",
    "einsum_outer": "torch's einsum multiplies when no label is summed; burnpy's uses matmul",
    "einsum_repeat_across": "torch's einsum multiplies when no label is summed; burnpy's "
                            "uses matmul",
}

_TORCH_DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16}


def _selected(input_dtype: str) -> list[Any]:
    out = []
    for c in CASES:
        if not any(a.kind == "float" for a in c.args) or input_dtype not in c.dtypes:
            continue
        marks = []
        if c.name in ORACLE_CASES:
            continue
        if input_dtype == "float32" and c.name in DIVERGENT:
            marks.append(pytest.mark.xfail(reason=DIVERGENT[c.name], strict=True))
        out.append(pytest.param(c, id=c.name, marks=marks))
    return out


def _run(case: OpCase, input_dtype: str, autocast_dtype: str) -> None:
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


@pytest.mark.parametrize("case", _selected("float32"))
def test_float32_inputs_bfloat16(case: OpCase) -> None:
    _run(case, "float32", "bfloat16")


@pytest.mark.parametrize("case", _selected("bfloat16"))
def test_bfloat16_inputs_bfloat16(case: OpCase) -> None:
    _run(case, "bfloat16", "bfloat16")
