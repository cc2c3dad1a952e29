"""torch's ``inplace=True`` on the activation layers and ``Softplus(threshold=)``: the layer
writes its result into its (non-leaf) input, returns it, and gradients reach what came
before as torch's do, compositions included."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import burnpy.nn as nn
from burnpy import Tensor
from burnpy.backend.errors import BurnpyError
from tests.nn.test_nn_layers import AD, check_layer

RNG = np.random.default_rng(2930)


@pytest.mark.parametrize(("name", "kwargs"), [
    ("ReLU", {}), ("ReLU6", {}), ("SiLU", {}), ("ELU", {"alpha": 0.7}), ("CELU", {"alpha": 1.3}),
    ("SELU", {}), ("Mish", {}), ("Hardswish", {}), ("Hardsigmoid", {}), ("Hardtanh", {}),
    ("LeakyReLU", {"negative_slope": 0.2}), ("Threshold", {"threshold": 0.1, "value": -2.0}),
    ("RReLU", {}), ("Dropout", {"p": 0.0}), ("AlphaDropout", {}),
])
def test_inplace_activation_writes_its_input_and_keeps_gradients(
        name: str, kwargs: dict[str, Any]) -> None:
    x, w = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))
    layer = getattr(nn, name)(**kwargs, inplace=True).eval()
    reference = getattr(torch.nn, name)(**kwargs, inplace=True).eval()
    xt = Tensor.from_data(x, backend=AD).require_grad()
    hidden = xt * 2.0
    out = layer(hidden)
    assert out is hidden
    grad = xt.grad((out * Tensor.from_data(w, backend=AD)).sum().backward())
    tx = torch.tensor(x, requires_grad=True)
    ref = reference(tx * 2.0)
    (ref * torch.from_numpy(w)).sum().backward()
    assert grad is not None and tx.grad is not None
    np.testing.assert_allclose(out.to_numpy(), ref.detach().numpy(), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(grad.to_numpy(), tx.grad.numpy(), rtol=1e-7, atol=1e-12)


def test_inplace_on_a_leaf_that_requires_grad_refuses_as_torch() -> None:
    leaf = Tensor.from_data(RNG.standard_normal((2, 3)), backend=AD).require_grad()
    with pytest.raises(BurnpyError, match="leaf"):
        nn.ELU(inplace=True)(leaf)


@pytest.mark.parametrize("kwargs", [{}, {"beta": 2.0, "threshold": 1.0},
                                    {"beta": 0.5, "threshold": 0.3}])
def test_softplus_threshold(kwargs: dict[str, float]) -> None:
    check_layer(nn.Softplus(**kwargs), torch.nn.Softplus(**kwargs).double(),
                RNG.standard_normal((4, 5)) * 3)
    assert repr(nn.Softplus(**kwargs)) == repr(torch.nn.Softplus(**kwargs))
