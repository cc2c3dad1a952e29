"""The prepared GPU check (``scripts/gpu_check.py``) works before it meets a GPU: its dry run
goes through every part here, its time limits stop a part and pass on to the next, and its
digests read junit XML right."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gpu_check", ROOT / "scripts" / "gpu_check.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_check"] = module
    spec.loader.exec_module(module)
    return module


gpu_check = _load()


def _vulkan_adapter() -> bool:
    import wgpu

    return any(a.info["backend_type"] == "Vulkan" for a in wgpu.gpu.enumerate_adapters_sync())


def test_the_dry_run_goes_through_every_part(tmp_path: Path) -> None:
    out = tmp_path / "out"
    env = {**os.environ, "PY": sys.executable}
    run = subprocess.run(["bash", "scripts/gpu_check.sh", "--dry-run", "--out", str(out)],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=400,
                         check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    files = sorted(p.name for p in out.iterdir())
    assert files == ["benchmarks.json", "junit.tar.gz", "log.txt", "summary.txt"]
    assert len(files) <= gpu_check.MAX_FILES
    summary = (out / "summary.txt").read_text()
    assert "nvidia-smi" in summary and "burnpy     CudaBackend usable: False" in summary
    table = summary.split("parts (dry run: True):")[1].split("\n\n")[0].splitlines()[1:]
    assert [row.split()[0] for row in table] == [p.name for p in gpu_check.PARTS]
    rows = {row.split()[0]: row for row in table}
    for part in gpu_check.PARTS:
        if part.tests and (part.name != "wgpu" or _vulkan_adapter()):
            assert " collected " in rows[part.name], rows[part.name]
            assert int(rows[part.name].split()[-2]) > 0, rows[part.name]
    # Without a GPU every example and benchmark fails fast, saying why.
    assert "CudaUnavailableError" in summary and "not run" in summary
    with tarfile.open(out / "junit.tar.gz") as archive:
        assert sorted(archive.getnames()) == sorted(
            f"junit-{p.name}.xml" for p in gpu_check.PARTS if p.tests)
    figures = json.loads((out / "benchmarks.json").read_text())
    benchmarks = next(p for p in gpu_check.PARTS if p.name == "benchmarks")
    assert sorted(figures) == sorted(Path(c[0]).stem for c in benchmarks.commands)
    assert all(rows[0]["status"].startswith("failures") for rows in figures.values())


def test_every_gpu_test_file_is_in_exactly_one_part() -> None:
    named = [t for p in gpu_check.PARTS for t in p.tests if t.endswith(".py")]
    assert len(named) == len(set(named))
    on_disk = {f"tests/cuda/{p.name}" for p in (ROOT / "tests" / "cuda").glob("test_*.py")}
    assert on_disk <= set(named)
    for path in named:
        assert (ROOT / path).exists(), path
    for part in gpu_check.PARTS:
        for command in part.commands:
            target = command[1] if command[0] == "-m" else command[0]
            assert command[0] == "-m" or (ROOT / target).exists(), target


def test_unused_time_passes_on_but_never_into_later_budgets() -> None:
    budgets = gpu_check.limits([gpu_check.Part("a", "", 100), gpu_check.Part("b", "", 50),
                                gpu_check.Part("c", "", 50)], 200)
    assert budgets == [100, 50, 50]
    assert gpu_check.time_for(0, budgets, 200) == 100
    assert gpu_check.time_for(1, budgets, 180) == 130  # part a used 20 of its 100
    assert gpu_check.time_for(1, budgets, 60) == 50  # a overran: b keeps its own budget
    assert gpu_check.time_for(2, budgets, 30) == 30  # never past the deadline
    assert gpu_check.limits([gpu_check.Part("a", "", 300), gpu_check.Part("b", "", 300)],
                            300) == [150, 150]


def test_the_digest_has_one_line_per_failure_or_error() -> None:
    xml = b"""<testsuites><testsuite>
      <testcase classname="tests.cuda.test_x" name="test_ok"/>
      <testcase classname="tests.cuda.test_x" name="test_bad[f16]">
        <failure message="AssertionError: case 'exp' [float16] off by 3e-2&#10;more">tb</failure>
      </testcase>
      <testcase classname="tests.cuda.test_x" name="test_err"><error message="">Boom
      second line</error></testcase>
      <testcase classname="tests.cuda.test_x" name="test_skip"><skipped message="no"/></testcase>
    </testsuite></testsuites>"""
    counts, lines = gpu_check.junit_digest(xml)
    assert counts == {"passed": 1, "failed": 1, "errors": 1, "skipped": 1}
    assert lines == ["tests.cuda.test_x::test_bad[f16]: AssertionError: case 'exp' [float16] "
                     "off by 3e-2", "tests.cuda.test_x::test_err: Boom"]


def test_a_part_past_its_limit_is_stopped_keeping_its_results(tmp_path: Path) -> None:
    tests = tmp_path / "test_slow.py"
    tests.write_text("import time\n\ndef test_quick():\n    pass\n\n"
                     "def test_slow():\n    time.sleep(120)\n")
    parts = [gpu_check.Part("slow", "a test that overruns", gpu_check.GRACE + 5,
                            tests=(str(tests),)),
             gpu_check.Part("after", "runs all the same", 10,
                            commands=(("-c", "print('after')"),))]
    check = gpu_check.Check(tmp_path / "out", sys.executable, False,
                            gpu_check.GRACE + 15, parts, workers=1)
    assert check.run() == 0
    slow, after = check.outcomes
    assert slow.status == "timed out" and slow.seconds < gpu_check.GRACE + 10
    assert slow.counts["passed"] == 1
    assert after.status == "ok"
    summary = (tmp_path / "out" / "summary.txt").read_text()
    assert "timed out" in summary and "after" in summary


@pytest.mark.parametrize("rc", [0, 1, 5, gpu_check.TIMED_OUT])
def test_status_words(rc: int) -> None:
    assert gpu_check.status_of(rc, False) == {0: "ok", 1: "failures (exit 1)",
                                              5: "failures (exit 5)",
                                              gpu_check.TIMED_OUT: "timed out"}[rc]
