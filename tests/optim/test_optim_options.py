"""torch's implementation switches and the closure step: accepted where they cannot change a
number, refused with a clear error where they would (or cannot be honoured)."""

from __future__ import annotations

import numpy as np
import pytest

import burnpy as bp
import burnpy.nn as nn
import burnpy.nn.functional as F
from burnpy import Tensor, optim
from burnpy.autodiff import Autodiff
from burnpy_cpu import CpuBackend

AD = Autodiff(CpuBackend)
X = np.random.default_rng(0).standard_normal((6, 3))
Y = np.random.default_rng(1).standard_normal((6, 2))


def _model() -> nn.Linear:
    model = nn.Linear(3, 2, backend=AD, dtype=bp.float64)
    model.load_state_dict({"weight": np.arange(6.0).reshape(2, 3) / 10, "bias": np.ones(2)})
    return model


def _loss(model: nn.Linear) -> Tensor:
    return F.mse_loss(model(Tensor.from_data(X, backend=AD)), Tensor.from_data(Y, backend=AD))


def test_implementation_switches_change_no_number() -> None:
    plain, switched = _model(), _model()
    a = optim.Adam(list(plain.parameters()), lr=0.1)
    b = optim.Adam(list(switched.parameters()), lr=0.1, foreach=True, fused=True,
                   capturable=True)
    for _ in range(3):
        a.step(plain, _loss(plain).backward())
        b.step(switched, _loss(switched).backward())
    for p, q in zip(plain.parameters(), switched.parameters(), strict=True):
        np.testing.assert_array_equal(p.to_numpy(), q.to_numpy())


@pytest.mark.parametrize("make", [
    lambda ps: optim.SGD(ps, differentiable=True),
    lambda ps: optim.Adam(ps, differentiable=True),
    lambda ps: optim.NAdam([{"params": ps, "differentiable": True}]),
])
def test_differentiable_is_refused(make: object) -> None:
    with pytest.raises(bp.InvalidArgumentError, match="differentiable=True"):
        make(list(_model().parameters()))  # type: ignore[operator]


def test_closure_step_equals_gradient_step() -> None:
    a, b = _model(), _model()
    opt_a, opt_b = optim.RAdam(lr=0.1), optim.RAdam(lr=0.1)
    for _ in range(3):
        opt_a.step(a, _loss(a).backward())
        opt_b.step(b, closure=lambda: _loss(b))
    for p, q in zip(a.parameters(), b.parameters(), strict=True):
        np.testing.assert_array_equal(p.to_numpy(), q.to_numpy())
    with pytest.raises(bp.InvalidArgumentError, match="not both"):
        opt_a.step(a, _loss(a).backward(), closure=lambda: _loss(a))


def test_lbfgs_needs_a_closure_and_reaches_the_least_squares_solution() -> None:
    model = _model()
    opt = optim.LBFGS(list(model.parameters()), tolerance_grad=1e-12, tolerance_change=1e-15,
                      line_search_fn="strong_wolfe")
    with pytest.raises(bp.InvalidArgumentError, match="closure"):
        opt.step(model, _loss(model).backward())
    for _ in range(3):
        opt.step(model, closure=lambda: _loss(model))
    design = np.hstack([X, np.ones((6, 1))])
    solution = np.linalg.lstsq(design, Y, rcond=None)[0]
    np.testing.assert_allclose(model.weight.to_numpy(), solution[:3].T, atol=1e-6)
    assert model.bias is not None
    np.testing.assert_allclose(model.bias.to_numpy(), solution[3], atol=1e-6)


def test_muon_refuses_a_vector_and_sparse_adam_is_an_error() -> None:
    model = _model()
    with pytest.raises(bp.ShapeError, match=r"2-d .* shape \(2,\)"):
        optim.Muon(list(model.parameters()))
    with pytest.raises(bp.InvalidArgumentError, match="no sparse gradients"):
        optim.SparseAdam(list(model.parameters()))


def test_tensor_lr_is_kept_as_its_value() -> None:
    opt = optim.SGD(list(_model().parameters()), lr=bp.tensor(0.25))
    assert opt.param_groups[0]["lr"] == 0.25 and isinstance(opt.param_groups[0]["lr"], float)
