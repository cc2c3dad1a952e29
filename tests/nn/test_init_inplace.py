"""torch.nn.init's in-place initialisers: statistics against torch's over large tensors, exact
bounds, the same object afterwards, trainable, tied weights still tied."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import burnpy as bp
import burnpy.nn as nn
from burnpy import Tensor
from burnpy.autodiff import Autodiff
from burnpy.nn import init
from burnpy_cpu import CpuBackend

AD = Autodiff(CpuBackend)
SHAPE = (256, 128, 3)  # fan_in 384, fan_out 768


# (ours, torch's, the bound every sample must respect or None)
CASES: list[tuple[str, Callable[[Any], Any], Callable[[Any], Any], float | None]] = [
    ("uniform_", lambda t: init.uniform_(t, -0.5, 1.5),
     lambda t: torch.nn.init.uniform_(t, -0.5, 1.5), None),
    ("normal_", lambda t: init.normal_(t, 0.3, 2.0),
     lambda t: torch.nn.init.normal_(t, 0.3, 2.0), None),
    ("trunc_normal_", lambda t: init.trunc_normal_(t, 0.1, 1.0, -1.0, 0.5),
     lambda t: torch.nn.init.trunc_normal_(t, 0.1, 1.0, -1.0, 0.5), None),
    ("xavier_uniform_", lambda t: init.xavier_uniform_(t, gain=2.0),
     lambda t: torch.nn.init.xavier_uniform_(t, gain=2.0), 2.0 * math.sqrt(6.0 / (384 + 768))),
    ("xavier_normal_", init.xavier_normal_, torch.nn.init.xavier_normal_, None),
    ("kaiming_uniform_", lambda t: init.kaiming_uniform_(t, a=math.sqrt(5)),
     lambda t: torch.nn.init.kaiming_uniform_(t, a=math.sqrt(5)),
     math.sqrt(2.0 / 6.0) * math.sqrt(3.0 / 384)),
    ("kaiming_uniform_ fan_out relu",
     lambda t: init.kaiming_uniform_(t, mode="fan_out", nonlinearity="relu"),
     lambda t: torch.nn.init.kaiming_uniform_(t, mode="fan_out", nonlinearity="relu"),
     math.sqrt(2.0) * math.sqrt(3.0 / 768)),
    ("kaiming_normal_", lambda t: init.kaiming_normal_(t, mode="fan_out", nonlinearity="tanh"),
     lambda t: torch.nn.init.kaiming_normal_(t, mode="fan_out", nonlinearity="tanh"), None),
]


@pytest.mark.parametrize(("name", "ours", "theirs", "bound"), CASES, ids=[c[0] for c in CASES])
def test_statistics_match_torch(name: str, ours: Callable[[Any], Any],
                                theirs: Callable[[Any], Any], bound: float | None) -> None:
    CpuBackend.seed(CpuBackend.default_device(), 0)
    t = Tensor.zeros(SHAPE, backend=AD).require_grad()
    assert ours(t) is t
    got = t.to_numpy().astype(np.float64)
    torch.manual_seed(0)
    want = theirs(torch.empty(SHAPE)).numpy().astype(np.float64)
    n = got.size
    tol = 5 * want.std() / math.sqrt(n)  # five standard errors of the mean
    assert abs(got.mean() - want.mean()) < 2 * tol
    assert np.percentile(got, [1, 50, 99]) == pytest.approx(
        np.percentile(want, [1, 50, 99]), abs=0.02 * want.std())
    assert got.std() == pytest.approx(want.std(), rel=0.01)
    if bound is not None:
        assert np.abs(got).max() <= bound and np.abs(got).max() > 0.999 * bound


def test_trunc_normal_respects_its_bounds() -> None:
    t = init.trunc_normal_(Tensor.zeros((50_000,)), mean=1.0, std=2.0, a=0.0, b=1.5)
    arr = t.to_numpy()
    assert arr.min() >= 0.0 and arr.max() <= 1.5


def test_constants_eye_and_orthogonal() -> None:
    w = Tensor.zeros((3, 4), backend=AD).require_grad()
    np.testing.assert_array_equal(init.constant_(w, 0.25).to_numpy(), np.full((3, 4), 0.25))
    np.testing.assert_array_equal(init.ones_(w).to_numpy(), np.ones((3, 4)))
    np.testing.assert_array_equal(init.zeros_(w).to_numpy(), np.zeros((3, 4)))
    np.testing.assert_array_equal(init.eye_(w).to_numpy(), np.eye(3, 4))
    for shape in ((6, 10), (10, 6), (4, 3, 2)):
        q = init.orthogonal_(Tensor.zeros(shape, dtype=bp.float64), gain=1.5).to_numpy()
        flat = q.reshape(shape[0], -1)
        small = flat @ flat.T if flat.shape[0] <= flat.shape[1] else flat.T @ flat
        np.testing.assert_allclose(small, 2.25 * np.eye(small.shape[0]), atol=1e-12)
    counts = Tensor.zeros((3,), dtype=bp.int64)
    assert init.ones_(counts).to_numpy().tolist() == [1, 1, 1]


def test_fans_and_gains_match_torch() -> None:
    for shape in ((5, 3), (8, 4, 3, 3), (2, 6, 7)):
        assert init._calculate_fan_in_and_fan_out(Tensor.zeros(shape)) == \
            torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(shape))
    for nonlinearity, param in (("relu", None), ("tanh", None), ("leaky_relu", None),
                                ("leaky_relu", 0.2), ("selu", None), ("conv2d", None)):
        assert init.calculate_gain(nonlinearity, param) == pytest.approx(
            torch.nn.init.calculate_gain(nonlinearity, param), rel=1e-15)


def test_filled_parameters_stay_trainable_and_tied() -> None:
    class LM(nn.Module):
        def __init__(self) -> None:
            self.emb = nn.Embedding(10, 4, backend=AD)
            self.head = nn.Linear(4, 10, bias=False, backend=AD)
            self.head.weight = self.emb.weight

    m = LM()
    weight = m.emb.weight
    init.normal_(m.emb.weight, std=0.02)
    init.xavier_uniform_(m.head.weight)
    assert m.emb.weight is weight and m.head.weight is weight
    assert [n for n, _ in m.named_parameters()] == ["emb.weight"]
    x = m.head(m.emb(Tensor.from_data([1, 2, 3], backend=AD)))
    grads = x.sum().backward()
    g = weight.grad(grads)
    assert g is not None and g.shape == (10, 4)


def test_errors_name_the_op_and_tensor() -> None:
    with pytest.raises(bp.KindError, match=r"normal_: fills float tensors, got a int tensor "
                                            r"of shape \(3,\) and dtype bp\.int64"):
        init.normal_(Tensor.zeros((3,), dtype=bp.int64))
    with pytest.raises(bp.ShapeError, match=r"eye_: only 2-d tensors .* \(2, 2, 2\)"):
        init.eye_(Tensor.zeros((2, 2, 2)))
    with pytest.raises(bp.ShapeError, match="at least 2 dims"):
        init.xavier_uniform_(Tensor.zeros((5,)))
