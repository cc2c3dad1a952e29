"""The examples in examples/ run and print what they promise."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(("script", "expected"), [
    ("quickstart.py", "d loss / d w"),
    ("custom_op.py", "d2/dx2"),
])
def test_example_runs(script: str, expected: str) -> None:
    result = subprocess.run([sys.executable, str(ROOT / "examples" / script)], cwd=ROOT,
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert expected in result.stdout
