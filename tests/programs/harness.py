"""Whole small PyTorch training programs beside their burnpy ports, compared step by step.

A program is two generators, each written as a user of that framework writes the script:
``torch_run()`` and ``burnpy_run()``. After every step each yields ``observe(label, ...)``:
the step's label and what it produced (losses, learning rates, and every parameter and buffer
of the modules named, by dotted name). ``side_by_side`` advances both generators in lockstep
and fails at the first step whose labels, names, shapes, dtypes or values differ, naming the
step, the entry and the largest difference; so a silent difference from torch (an aliased
array, a shared optimizer state, a layout, a default) shows as the step where it starts.

Both programs start from the same weights: the port loads the torch model's state dict
(``copy_from``), as a user porting a checkpoint does, and both read the same NumPy data.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch

import burnpy as bp
import burnpy.nn as nn
from burnpy.autodiff import Autodiff
from burnpy_cpu import CpuBackend

AD = Autodiff(CpuBackend)
#: (rtol, atol) by the programs' float dtype: the two frameworks sum in different orders.
TOLERANCE = {"float64": (1e-6, 1e-9), "float32": (1e-4, 1e-5)}

Value = float | int | list[float] | np.ndarray | torch.Tensor | bp.Tensor | torch.nn.Module \
    | nn.Module


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What one step of a program produced: its label and named host arrays."""

    label: str
    values: dict[str, np.ndarray]


def _host(value: torch.Tensor | bp.Tensor | np.ndarray | float | int | list[float]) -> np.ndarray:
    """A copy of ``value`` as a NumPy array of its dtype (Python numbers as float64)."""
    if isinstance(value, torch.Tensor):
        return value.detach().numpy().copy()
    if isinstance(value, bp.Tensor):
        return value.to_numpy().copy()
    if isinstance(value, np.ndarray):
        return value.copy()
    return np.asarray(value, dtype=np.float64)


def observe(label: str, **items: Value) -> Snapshot:
    """A step's snapshot: each item by its keyword; a module (torch's or burnpy's) gives every
    entry of its state dict as ``keyword.name``."""
    values: dict[str, np.ndarray] = {}
    for key, item in items.items():
        if isinstance(item, torch.nn.Module | nn.Module):
            for name, t in item.state_dict().items():
                values[f"{key}.{name}"] = _host(t)
        else:
            values[key] = _host(item)
    return Snapshot(label, values)


def copy_from(model: nn.Module, reference: torch.nn.Module) -> nn.Module:
    """Load ``reference``'s weights into the port (strictly: every name must match)."""
    model.load_state_dict(reference.state_dict())
    return model


def _difference(where: str, key: str, want: np.ndarray, got: np.ndarray, rtol: float,
                atol: float, names: tuple[str, str]) -> str | None:
    """Why ``got`` is not ``want`` (each named by ``names``), or None when they agree."""
    first, second = names
    if want.shape != got.shape or want.dtype != got.dtype:
        return (f"{where}, {key}: {first} gives shape {want.shape} {want.dtype}, {second} "
                f"{got.shape} {got.dtype}")
    if want.dtype.kind in "biu":
        if np.array_equal(want, got):
            return None
        at = np.unravel_index(int(np.argmax(want != got)), want.shape)
        return f"{where}, {key}: at {at} {first} gives {want[at]}, {second} {got[at]}"
    excess = np.abs(got - want) - (atol + rtol * np.abs(want))
    bad = ~(excess <= 0)  # NaN counts as a difference
    if not bad.any():
        return None
    at = np.unravel_index(int(np.argmax(np.where(bad, np.nan_to_num(excess, nan=np.inf),
                                                 -np.inf))), want.shape)
    return (f"{where}, {key}: {int(bad.sum())} of {want.size} values differ; largest at {at}: "
            f"{first} {want[at]!r}, {second} {got[at]!r} "
            f"(|diff| {abs(float(got[at] - want[at])):.3g}, rtol {rtol:g}, atol {atol:g})")


def assert_same(where: str, want: Snapshot, got: Snapshot, rtol: float, atol: float,
                names: tuple[str, str] = ("torch", "burnpy")) -> None:
    """Raise ``AssertionError`` naming ``where`` and the first entry where the two snapshots
    differ (their labels, names, shapes, dtypes, or values beyond ``rtol``/``atol``)."""
    first, second = names
    if want.label != got.label:
        raise AssertionError(f"{where}: {first}'s program is at '{want.label}', {second}'s at "
                             f"'{got.label}'")
    if want.values.keys() != got.values.keys():
        raise AssertionError(
            f"{where} ({want.label}): {first}'s entries not in {second}'s: "
            f"{sorted(want.values.keys() - got.values.keys())}; {second}'s not in {first}'s: "
            f"{sorted(got.values.keys() - want.values.keys())}")
    for key, value in want.values.items():
        why = _difference(f"{where} ({want.label})", key, value, got.values[key], rtol, atol,
                          names)
        if why is not None:
            raise AssertionError(why)


def side_by_side(torch_run: Iterator[Snapshot], burnpy_run: Iterator[Snapshot],
                 dtype: str = "float64") -> list[tuple[Snapshot, Snapshot]]:
    """Run both programs step by step; raise ``AssertionError`` at the first step where they
    differ. Returns the (torch, burnpy) snapshot pairs."""
    rtol, atol = TOLERANCE[dtype]
    pairs: list[tuple[Snapshot, Snapshot]] = []
    end = Snapshot("<ended>", {})
    while True:
        want = next(torch_run, end)
        got = next(burnpy_run, end)
        if want is end and got is end:
            assert pairs, "the programs took no step"
            return pairs
        assert_same(f"step {len(pairs)}", want, got, rtol, atol)
        pairs.append((want, got))
