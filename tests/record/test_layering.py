"""``burnpy.record`` only writes and reads files: it sits below ``nn``, ``optim`` and ``train``,
which give and take state through the ``Stateful`` protocol, so no import cycle runs through it."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

import burnpy.record
from burnpy.backend.errors import RecordError

ABOVE_RECORD = ("burnpy.nn", "burnpy.optim", "burnpy.train", "burnpy.data", "burnpy.examples")


def _imported(tree: ast.AST) -> set[str]:
    """Every module an import statement anywhere in ``tree`` names (function bodies and
    ``TYPE_CHECKING`` blocks included), ``from a import b`` counted as ``a.b`` too."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            assert node.level == 0, "burnpy uses absolute imports"
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _is_above(name: str) -> bool:
    return any(name == top or name.startswith(top + ".") for top in ABOVE_RECORD)


def test_record_sources_import_nothing_above_record() -> None:
    package = Path(burnpy.record.__file__).parent
    sources = sorted(package.rglob("*.py"))
    assert len(sources) >= 3
    for source in sources:
        above = sorted(n for n in _imported(ast.parse(source.read_text())) if _is_above(n))
        assert not above, f"{source.name} imports {above}"


def test_importing_record_loads_neither_nn_nor_optim() -> None:
    code = ("import sys, burnpy.record\n"
            "print(sorted(m for m in sys.modules if m.split('.')[:2] in "
            "(['burnpy', 'nn'], ['burnpy', 'optim'], ['burnpy', 'train'])))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=Path(burnpy.record.__file__).parents[2])
    assert out.stdout.strip() == "[]"


def test_modules_optimizers_and_schedulers_are_stateful() -> None:
    import burnpy.nn as nn
    from burnpy import optim

    for obj, kind in ((nn.Linear(2, 1), "module"), (optim.Adam(), "optimizer"),
                      (optim.StepLR(0.1, 2), "scheduler")):
        assert isinstance(obj, burnpy.record.Stateful)
        assert burnpy.record.to_record(obj).kind == kind


class _Counter:
    """A user object recorded through the protocol alone."""

    record_kind = "counter"

    def __init__(self, state: dict[str, object]) -> None:
        self.state = state

    def state_dict(self) -> dict[str, object]:
        return self.state

    def load_state_dict(self, state: Mapping[str, object]) -> _Counter:
        self.state = dict(state)
        return self


def test_any_stateful_object_round_trips_its_nested_state(tmp_path: Path) -> None:
    import burnpy as bp
    from burnpy.nn import Linear

    state = {"count": 3, "empty": {}, "buffers": {"a": bp.Tensor.from_data([1.0, 2.0]),
                                                 "meta": {"name": "a"}}}
    path = burnpy.record.save(_Counter(state), tmp_path / "c.safetensors")
    loaded = burnpy.record.load(_Counter({}), path).state
    assert loaded["count"] == 3 and loaded["empty"] == {}
    assert loaded["buffers"]["meta"] == {"name": "a"}
    assert loaded["buffers"]["a"].array.tolist() == [1.0, 2.0]
    with pytest.raises(RecordError, match="holds a counter record, not a module one"):
        burnpy.record.load(Linear(2, 1), path)
    with pytest.raises(RecordError, match="'x/y' contains '/'"):
        burnpy.record.to_record(_Counter({"x/y": bp.Tensor.from_data([1.0])}))
