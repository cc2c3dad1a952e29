"""The program harness fails where a port differs from torch, and says where: the step, the
entry, the largest difference (so a program test cannot pass by comparing nothing)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
import torch

import burnpy as bp
import burnpy.nn as nn
from tests.programs.harness import AD, Snapshot, copy_from, observe, side_by_side


def _run(values: list[dict[str, object]]) -> Iterator[Snapshot]:
    for step, items in enumerate(values):
        yield observe(f"step {step}", **items)  # type: ignore[arg-type]


def test_a_module_is_observed_by_dotted_names_and_the_port_starts_from_torchs_weights() -> None:
    torch.manual_seed(0)
    ref = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.BatchNorm1d(3)).double()
    ours = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3)).to(backend=AD, dtype=bp.float64)
    copy_from(ours, ref)
    want, got = observe("s", model=ref), observe("s", model=ours)
    assert list(want.values) == ["model.0.weight", "model.0.bias", "model.1.weight",
                                 "model.1.bias", "model.1.running_mean", "model.1.running_var",
                                 "model.1.num_batches_tracked"]
    assert side_by_side(iter([want]), iter([got]))[0] == (want, got)
    with torch.no_grad():
        ref[0].weight[1, 0] += 1e-3
    with pytest.raises(AssertionError, match=r"step 0 \(t\), model\.0\.weight: 1 of 6 values "
                       r"differ; largest at \(.*1.*0.*\)"):
        side_by_side(iter([observe("t", model=ref)]), iter([observe("t", model=ours)]))


def test_the_first_differing_step_and_entry_are_named() -> None:
    a = np.array([1.0, 2.0, 3.0])
    torch_steps = [{"loss": 1.0, "w": a}, {"loss": 0.5, "w": a * 2}, {"loss": 0.25, "w": a * 3}]
    ours = [{"loss": 1.0, "w": a}, {"loss": 0.5, "w": a * 2 + [0, 1e-5, 0]},
            {"loss": 0.0, "w": a}]
    with pytest.raises(AssertionError, match=r"^step 1 \(step 1\), w: 1 of 3 values differ; "
                       r"largest at \(.*1.*\): torch .*4\.0.*, burnpy .*4\.00001"):
        side_by_side(_run(torch_steps), _run(ours))
    # float32's tolerance lets that difference pass; the loss at step 2 does not
    with pytest.raises(AssertionError, match=r"^step 2 \(step 2\), loss"):
        side_by_side(_run(torch_steps), _run(ours), dtype="float32")


@pytest.mark.parametrize(("theirs", "ours", "message"), [
    ([{"w": np.ones(2)}], [{"w": np.ones(2)}, {"w": np.ones(2)}],
     r"step 1: torch's program is at '<ended>', burnpy's at 'step 1'"),
    ([{"w": np.ones(2)}], [{"v": np.ones(2)}],
     r"torch's entries not in burnpy's: \['w'\]; burnpy's not in torch's: \['v'\]"),
    ([{"w": np.ones(2)}], [{"w": np.ones(3)}], r"w: torch gives shape \(2,\) float64, burnpy"),
    ([{"w": np.ones(2)}], [{"w": np.ones(2, np.float32)}], r"w: torch gives shape \(2,\) "
     r"float64, burnpy \(2,\) float32"),
    ([{"w": np.ones(2)}], [{"w": np.array([1.0, np.nan])}], r"w: 1 of 2 values differ"),
    ([{"i": torch.tensor([[0, 1]])}], [{"i": bp.tensor([[0, 2]])}],
     r"i: at \(.*0.*1.*\) torch gives 1, burnpy 2"),
])
def test_any_difference_fails(theirs: list[dict[str, object]], ours: list[dict[str, object]],
                              message: str) -> None:
    with pytest.raises(AssertionError, match=message):
        side_by_side(_run(theirs), _run(ours))


def test_programs_that_take_no_step_fail() -> None:
    with pytest.raises(AssertionError, match="took no step"):
        side_by_side(iter([]), iter([]))
