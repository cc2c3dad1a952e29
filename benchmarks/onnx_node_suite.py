"""The ONNX backend node tests on CpuBackend: pass counts per category and per op, run time.

Every case of ``onnx.backend.test.loader.load_model_tests(kind="node")`` (onnx 1.23.2: 1,884)
is sorted by ``burnpy.onnx.node_suite.category``; the eligible ones run through
``run_case`` (compared as onnx's runner does). Prints the outcome counts, the ops with a case
that does not pass, and with ``--failures`` each wrong or crashing case with why;
``--write-expected`` rewrites ``tests/onnx/expected_passing.txt``, the list the test holds;
``--autodiff`` runs on ``Autodiff(CpuBackend)`` with the float inputs tracked and counts the
passing cases whose backward pass runs.

Run: ``python benchmarks/onnx_node_suite.py [--failures] [--only SUBSTRING] [--autodiff]
[--write-expected]``.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

import burnpy as bp
from burnpy.onnx import node_suite
from burnpy.onnx.model import OnnxModule
from burnpy_cpu import CpuBackend

if TYPE_CHECKING:
    from onnx.backend.test.case.test_case import TestCase

EXPECTED = Path(__file__).resolve().parent.parent / "tests" / "onnx" / "expected_passing.txt"


AUTODIFF = bp.Autodiff(CpuBackend)


def _tracked_input(array: np.ndarray) -> bp.Tensor:
    t = bp.Tensor.from_data(array, backend=AUTODIFF)
    return t.require_grad() if t.dtype in (bp.float32, bp.float64) else t


def _backward(case: TestCase) -> str:
    """Whether a backward pass runs from the sum of the case's tracked float outputs."""
    try:
        assert case.model is not None and case.data_sets is not None
        module = OnnxModule(case.model, AUTODIFF)
        result = module(*[_tracked_input(node_suite.as_array(a))
                          for a in case.data_sets[0][0]])
        outputs = [result] if isinstance(result, bp.Tensor) else list(result)
        tracked = [t for t in outputs if t is not None and t.is_require_grad()]
        if not tracked:
            return "no tracked output"
        loss = tracked[0].float().sum()
        for t in tracked[1:]:
            loss = loss + t.float().sum()
        loss.backward()
        return "ran"
    except Exception as e:
        return f"failed ({type(e).__name__})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--failures", action="store_true", help="print each failing case")
    parser.add_argument("--only", default="", help="run the cases whose name contains this")
    parser.add_argument("--autodiff", action="store_true",
                        help="run on Autodiff(CpuBackend) with float inputs tracked, and "
                             "count the cases whose backward runs")
    parser.add_argument("--write-expected", action="store_true",
                        help="rewrite tests/onnx/expected_passing.txt from this run")
    args = parser.parse_args()

    start = time.perf_counter()
    cases = node_suite.cases()
    built = time.perf_counter() - start
    excluded = Counter(node_suite.category(c) for c in cases.values())
    eligible = [c for c in cases.values() if node_suite.category(c) is None
                and args.only in c.name]
    outcomes: dict[str, node_suite.Outcome] = {}
    backward = Counter[str]()
    start = time.perf_counter()
    for case in eligible:
        if args.autodiff:
            outcomes[case.name] = node_suite.run_case(case, AUTODIFF, convert=_tracked_input)
            if outcomes[case.name].status == "pass":
                backward[_backward(case)] += 1
        else:
            outcomes[case.name] = node_suite.run_case(case, CpuBackend)
    ran = time.perf_counter() - start

    status = Counter(o.status for o in outcomes.values())
    print(f"onnx node cases: {len(cases)} (built in {built:.1f} s), excluded "
          f"{sum(v for k, v in excluded.items() if k)}, eligible {excluded[None]}")
    for name in node_suite.EXCLUDED:
        print(f"  excluded {name:14s} {excluded[name]:4d}")
    print(f"ran {len(eligible)} in {ran:.1f} s: " + ", ".join(
        f"{k} {status[k]}" for k in ("pass", "unsupported", "error", "wrong", "crash")))
    if args.autodiff:
        print("backward through the float outputs: " + ", ".join(
            f"{k} {v}" for k, v in sorted(backward.items())))

    per_op: dict[str, Counter[str]] = defaultdict(Counter)
    for case in eligible:
        for op in node_suite.op_types(case):
            per_op[op][outcomes[case.name].status] += 1
    print("\nops with a case that does not pass (pass/total, then the other outcomes):")
    for op, counts in sorted(per_op.items()):
        total = sum(counts.values())
        if counts["pass"] < total:
            rest = ", ".join(f"{k} {v}" for k, v in counts.items() if k != "pass")
            print(f"  {op:28s} {counts['pass']:3d}/{total:<3d} {rest}")
    passing_ops = sorted(op for op, c in per_op.items() if c["pass"] == sum(c.values()))
    print(f"\nops passing every case ({len(passing_ops)}): {' '.join(passing_ops)}")
    if args.failures:
        print("\nfailures:")
        for name, outcome in sorted(outcomes.items()):
            if outcome.status in ("wrong", "crash", "error"):
                known = " (known difference)" if name in node_suite.KNOWN_DIFFERENCES else ""
                print(f"  {name}: {outcome.status}{known}: {outcome.detail[:300]}")
    if args.write_expected:
        passing = sorted(n for n, o in outcomes.items() if o.status == "pass")
        EXPECTED.write_text("".join(f"{n}\n" for n in passing))
        print(f"\nwrote {len(passing)} names to {EXPECTED}")


if __name__ == "__main__":
    main()
