"""``register_buffer`` as torch's: a registered buffer counts whatever its name (a ``_``-named
one too, as FractionalMaxPool's ``_random_samples``), a non-persistent one is moved but not
saved, and private attributes that were never registered stay out of the state."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import burnpy as bp
import burnpy.nn as nn
from burnpy import BurnpyError, Tensor


def test_fractional_max_pool_random_samples_round_trip_with_torch_strictly() -> None:
    samples = torch.rand(2, 3, 2, dtype=torch.float64)
    theirs = torch.nn.FractionalMaxPool2d(2, output_size=(3, 3), _random_samples=samples)
    ours = nn.FractionalMaxPool2d(2, output_size=(3, 3),
                                  _random_samples=Tensor.zeros((2, 3, 2), dtype="float64"))
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["_random_samples"]
    assert [n for n, _ in ours.named_buffers()] == ["_random_samples"]
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    x = torch.randn(2, 3, 7, 7, dtype=torch.float64)
    np.testing.assert_array_equal(ours(Tensor.from_data(x.numpy())).to_numpy(),
                                  theirs(x).numpy())
    back = torch.nn.FractionalMaxPool2d(2, output_size=(3, 3),
                                        _random_samples=torch.zeros(2, 3, 2, dtype=torch.float64))
    back.load_state_dict({k: torch.from_numpy(v.to_numpy()) for k, v in
                          ours.state_dict().items()}, strict=True)
    assert torch.equal(back._random_samples, samples)
    # without samples, torch's state dict is empty (a None buffer), and so is burnpy's
    assert ours.__class__(2, output_ratio=0.5).state_dict() == {}


class _Stats(nn.Module):
    def __init__(self) -> None:
        self.weight = Tensor.ones((2,))
        self.register_buffer("_count", Tensor.zeros((2,)))
        self.register_buffer("scratch", Tensor.zeros((3,)), persistent=False)
        self._cache = Tensor.zeros((4,))  # private, never registered: not state


def test_private_registered_and_non_persistent_buffers_as_torchs() -> None:
    m = _Stats()
    assert [n for n, _ in m.named_parameters()] == ["weight"]
    assert [n for n, _ in m.named_buffers()] == ["_count", "scratch"]
    assert list(m.state_dict()) == ["weight", "_count"]
    m.load_state_dict({"weight": np.full(2, 3.0), "_count": np.array([4.0, 5.0])})
    np.testing.assert_array_equal(m._count.to_numpy(), [4.0, 5.0])
    m.double()  # every buffer moves, the non-persistent one too; the private cache stays
    assert (m._count.dtype, m.scratch.dtype, m._cache.dtype) == (
        bp.float64, bp.float64, bp.float32)
    with pytest.raises(BurnpyError, match="unexpected scratch"):
        m.load_state_dict({"weight": np.ones(2), "_count": np.ones(2), "scratch": np.ones(3)})


def test_register_buffer_refuses_bad_names_and_values() -> None:
    m = _Stats()
    with pytest.raises(BurnpyError, match="without '\\.'"):
        m.register_buffer("a.b", Tensor.zeros((1,)))
    with pytest.raises(BurnpyError, match="already exists"):
        m.register_buffer("weight", Tensor.zeros((1,)))
    with pytest.raises(BurnpyError, match="expected a Tensor or None, got ndarray"):
        m.register_buffer("c", np.zeros(1))  # type: ignore[arg-type]
