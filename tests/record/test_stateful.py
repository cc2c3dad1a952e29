"""The ``Stateful`` protocol: ``nn``, ``optim`` and ``train`` give and take their state through
it, and any object following it round-trips through ``burnpy.record``. (That ``record`` sits
below them is tests/test_layers.py's to check.)"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

import burnpy.record
from burnpy.backend.errors import RecordError


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
