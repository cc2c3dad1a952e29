"""Every conformance case recorded on ``Capture(CpuBackend)``: recording leaves each op's
result as torch gives it (``run_case`` compares), and replaying the recording gives every
recorded value bit for bit again (its first dtype per case, as the Fusion suite runs)."""

from __future__ import annotations

import numpy as np
import pytest

from burnpy.capture import NODE, Capture
from burnpy.testing import OpCase, parametrize_cases, run_case
from burnpy_cpu import CpuBackend

C = Capture(CpuBackend)


def _first_dtype_each() -> list[object]:
    seen: set[str] = set()
    params = []
    for p in parametrize_cases(C):
        case = p.values[0]
        if case.name not in seen:
            seen.add(case.name)
            params.append(p)
    return params


@pytest.mark.parametrize(("case", "dtype"), _first_dtype_each())
def test_every_case_records_and_replays_bitwise(case: OpCase, dtype: str) -> None:
    with C.recording() as graph:
        run_case(case, C, dtype, seed=0)
        recording = C._state.recording
        assert recording is not None
        made = [p for index, p in recording.ids.values() if graph.values[index].kind == NODE]
        C.set_outputs(graph, made)
    if any("random" in node.op for node in graph.nodes):
        return  # a replay draws new numbers
    for replayed, eager in zip(graph.replay([]), made, strict=True):
        np.testing.assert_array_equal(replayed, eager)
