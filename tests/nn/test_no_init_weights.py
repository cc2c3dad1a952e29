"""``nn.init.no_init_weights``: inside it, layers are built without sampling (the generator
does not move, in-place initializers leave values as they are); outside, nothing changes."""

from __future__ import annotations

import numpy as np

import burnpy.nn as nn
from burnpy.nn import init
from burnpy.tensor import Tensor
from burnpy_cpu import CpuBackend


def _draw() -> np.ndarray:
    return init.normal((4,), backend=CpuBackend).into_data().array


def test_layers_built_inside_draw_nothing() -> None:
    CpuBackend.seed(CpuBackend.default_device(), 7)
    fresh = _draw()
    CpuBackend.seed(CpuBackend.default_device(), 7)
    with init.no_init_weights():
        layer = nn.Linear(3, 5, backend=CpuBackend)
        nn.Embedding(6, 2, backend=CpuBackend)
    assert layer.weight.shape == (5, 3) and layer.bias is not None and layer.bias.shape == (5,)
    np.testing.assert_array_equal(_draw(), fresh)  # the generator did not move


def test_in_place_initializers_leave_values_inside_only() -> None:
    t = Tensor.from_data(np.arange(6, dtype=np.float32).reshape(2, 3), backend=CpuBackend)
    with init.no_init_weights():
        assert init.normal_(t) is t and init.uniform_(t, -1.0, 1.0) is t
    np.testing.assert_array_equal(t.into_data().array, np.arange(6).reshape(2, 3))
    init.uniform_(t, 10.0, 11.0)
    assert (t.into_data().array >= 10.0).all()
