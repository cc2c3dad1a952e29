"""Packaging promises: what imports without the test and demo extras installed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Run first in a fresh interpreter: the named top-level packages cannot be imported.
BLOCK = """
import sys
class _Missing:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {blocked!r}:
            raise ImportError(f"No module named {{name!r}} (blocked by the test)")
sys.meta_path.insert(0, _Missing())
"""


def run_without(blocked: set[str], code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter where the ``blocked`` packages cannot be imported."""
    return subprocess.run([sys.executable, "-c", BLOCK.format(blocked=blocked) + code],
                          capture_output=True, text=True, cwd=ROOT)


def test_burnpy_testing_imports_without_pytest_and_torch() -> None:
    out = run_without({"pytest", "torch"}, (
        "import burnpy.testing\n"
        "assert not [m for m in sys.modules if m.split('.')[0] in ('pytest', 'torch')]\n"
        "print(len(burnpy.testing.CASES))"))
    assert out.returncode == 0, out.stderr
    import burnpy.testing

    assert int(out.stdout) == len(burnpy.testing.CASES) > 0


def test_the_blocker_blocks() -> None:
    out = run_without({"torch"}, "import torch")
    assert out.returncode != 0 and "blocked by the test" in out.stderr


def test_demo_without_scikit_learn_names_the_extra(tmp_path: Path) -> None:
    out = run_without({"sklearn"}, (
        "from burnpy.examples import digits\n"
        f"digits.main(['--epochs', '1', '--limit', '20', '--out', {str(tmp_path)!r}])"))
    assert out.returncode == 1
    assert "needs scikit-learn" in out.stderr and "burnpy[examples]" in out.stderr


def test_subpackages_are_attributes_of_burnpy_imported_on_first_use() -> None:
    """``import burnpy as bp`` then ``bp.nn.Linear``, as torch users write ``torch.nn``; the
    subpackages load only when first asked for, keeping ``import burnpy`` lean."""
    code = ("import sys, burnpy as bp; assert 'burnpy.nn' not in sys.modules; "
            "assert bp.nn.Linear and bp.nn.functional.relu and bp.optim.AdamW and "
            "bp.linalg.norm and bp.func.grad and bp.data.DataLoader; "
            "assert 'burnpy.nn' in sys.modules and 'nn' in dir(bp); "
            "missing = getattr(bp, 'no_such_thing', None); assert missing is None")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
