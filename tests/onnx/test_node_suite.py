"""The ONNX project's backend node tests on CpuBackend (``burnpy.onnx.node_suite``).

Each eligible case (outside the excluded categories) runs once: a case listed in
``expected_passing.txt`` must pass (compared as onnx's runner does), and every other one
must pass or fail with a clean ``BurnpyError`` (an op or dtype burnpy does not implement):
a wrong result (outside ``node_suite.KNOWN_DIFFERENCES``, each with its reason) or a crash
fails. ``benchmarks/onnx_node_suite.py --write-expected`` rewrites
the list after an op lands, so the count only grows.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from burnpy.onnx import node_suite
from burnpy_cpu import CpuBackend

CASES = node_suite.cases()
ELIGIBLE = sorted(name for name, case in CASES.items() if node_suite.category(case) is None)
EXPECTED = frozenset((Path(__file__).parent / "expected_passing.txt").read_text().split())


def test_the_suite_and_its_exclusions_are_those_of_onnx_1_23_2() -> None:
    counts = {name: 0 for name in node_suite.EXCLUDED}
    for case in CASES.values():
        found = node_suite.category(case)
        if found is not None:
            counts[found] += 1
    assert len(CASES) == 1884
    assert counts == {"training": 7, "onnx-ml": 8, "string": 22, "sequence": 25, "optional": 9,
                      "float8": 82, "int4/int2": 68, "float4": 14, "random": 10,
                      "image decoder": 9}
    assert len(ELIGIBLE) == 1630
    assert set(ELIGIBLE) >= EXPECTED, sorted(EXPECTED - set(ELIGIBLE))


@pytest.mark.parametrize("name", ELIGIBLE)
def test_node_case(name: str) -> None:
    outcome = node_suite.run_case(CASES[name], CpuBackend)
    if name in EXPECTED:
        assert outcome.status == "pass", f"{outcome.status}: {outcome.detail}"
    else:
        allowed = {"pass", "unsupported", "error"}
        if name in node_suite.KNOWN_DIFFERENCES:
            allowed.add("wrong")
        assert outcome.status in allowed, f"{outcome.status}: {outcome.detail}"
