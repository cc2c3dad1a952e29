"""The float32 cases of the ONNX project's backend node tests on WgpuBackend.

"The float32 ones" are ``node_suite.is_float32``: eligible, float32 outputs, and float32
data with int64 shapes and indices (run as int32: WebGPU has no 64-bit integers, so the
interpreter narrows int64 inputs, initializers and constants to the backend's int dtype) and
bool masks. Every one runs, compared as onnx's runner does with the case's own rtol and atol
(the CPU side's comparison; no WGSL builtin needed a looser one). A case listed in
``expected_passing_wgpu.txt`` must pass; any other must pass or end in a clean
``BurnpyError``; a wrong result (outside ``node_suite.KNOWN_DIFFERENCES``: the inverse DFTs,
whose expected zeros hold NumPy's FFT round-off, off by 4e-6 on values up to 47 here) or a
crash fails. All of them take about 10 s on the software adapter, so none is left out.
``python tests/onnx/test_node_suite_wgpu.py --write-expected`` rewrites the list after a fix,
so the count only grows.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from burnpy.onnx import node_suite
from burnpy.onnx.dtypes import for_backend
from burnpy.onnx.errors import UnsupportedOnnxError
from burnpy_cpu import CpuBackend
from burnpy_wgpu import WgpuBackend

LIST = Path(__file__).parent / "expected_passing_wgpu.txt"
CASES = node_suite.cases()
FLOAT32 = sorted(name for name, case in CASES.items() if node_suite.is_float32(case))
EXPECTED = frozenset(LIST.read_text().split())


def test_the_float32_selection() -> None:
    assert len(FLOAT32) == 1162
    eligible = {name for name, case in CASES.items() if node_suite.category(case) is None}
    assert set(FLOAT32) <= eligible
    # A case that asks for float64 somewhere is not a float32 one.
    assert "test_attention_local_window_gqa_rank4_mask" not in FLOAT32  # softmax_precision
    assert "test_cast_FLOAT_to_DOUBLE" not in FLOAT32
    assert "test_gather_0" in FLOAT32 and "test_reshape_extended_dims" in FLOAT32  # int64
    assert set(FLOAT32) >= EXPECTED, sorted(EXPECTED - set(FLOAT32))


@pytest.mark.parametrize("name", FLOAT32)
def test_node_case_on_webgpu(name: str) -> None:
    outcome = node_suite.run_case(CASES[name], WgpuBackend)
    if name in EXPECTED:
        assert outcome.status == "pass", f"{outcome.status}: {outcome.detail}"
    else:
        allowed = {"pass", "unsupported", "error"}
        if name in node_suite.KNOWN_DIFFERENCES:
            allowed.add("wrong")
        assert outcome.status in allowed, f"{outcome.status}: {outcome.detail}"


if __name__ == "__main__" and sys.argv[1:] == ["--write-expected"]:
    passing = [n for n in FLOAT32 if node_suite.run_case(CASES[n], WgpuBackend).status == "pass"]
    LIST.write_text("".join(f"{n}\n" for n in passing))
    print(f"wrote {len(passing)} of {len(FLOAT32)} names to {LIST}")


def test_int64_runs_as_int32_on_webgpu_and_out_of_range_values_are_a_clean_error() -> None:
    ends = np.array([np.iinfo(np.int64).max, -3, np.iinfo(np.int64).min])
    narrowed = for_backend(ends, WgpuBackend, None, "Slice's ends")
    assert narrowed.dtype == np.int32
    assert narrowed.tolist() == [np.iinfo(np.int32).max, -3, np.iinfo(np.int32).min]
    assert for_backend(ends, CpuBackend, None, "Slice's ends") is ends
    with pytest.raises(UnsupportedOnnxError, match="beyond int32"):
        for_backend(np.array([2**40]), WgpuBackend, None, "Gather's indices")
    halves = np.array([0.5])
    assert for_backend(halves, WgpuBackend, None, "a constant").dtype == np.float64
    assert for_backend(halves, WgpuBackend, None, "a constant",
                       host_floats=True).dtype == np.float32
