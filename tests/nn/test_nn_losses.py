"""Losses against torch.nn.functional in float64: values and input gradients."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as tf

import burnpy as bp
import burnpy.nn.functional as F
from burnpy import Tensor
from burnpy.autodiff import Autodiff
from burnpy_cpu import CpuBackend

AD = Autodiff(CpuBackend)
RNG = np.random.default_rng(1)


def check_loss(ours: Callable[..., Tensor], theirs: Callable[..., torch.Tensor],
               x: np.ndarray, target: np.ndarray, **kwargs: Any) -> None:
    """Same loss and same gradient w.r.t. the input (and a float target) as torch."""
    wrap = {k: Tensor.from_data(v, backend=AD) if isinstance(v, np.ndarray) else v
            for k, v in kwargs.items()}
    twrap = {k: torch.from_numpy(v) if isinstance(v, np.ndarray) else v
             for k, v in kwargs.items()}
    xi = Tensor.from_data(x, backend=AD).require_grad()
    ti = Tensor.from_data(target, backend=AD)
    float_target = target.dtype.kind == "f"
    if float_target:
        ti = ti.require_grad()
    tx = torch.tensor(x, requires_grad=True)
    tt = torch.tensor(target, requires_grad=float_target)
    out, ref = ours(xi, ti, **wrap), theirs(tx, tt, **twrap)
    np.testing.assert_allclose(out.to_numpy(), ref.detach().numpy(), rtol=1e-12, atol=1e-12)
    seed = RNG.standard_normal(tuple(ref.shape))
    grads = (out * Tensor.from_data(seed, backend=AD)).sum().backward()
    (ref * torch.from_numpy(seed)).sum().backward()
    np.testing.assert_allclose(xi.grad(grads).to_numpy(), tx.grad.numpy(), rtol=1e-10,
                               atol=1e-12)
    if float_target:
        np.testing.assert_allclose(ti.grad(grads).to_numpy(), tt.grad.numpy(), rtol=1e-10,
                                   atol=1e-12)


REDUCTIONS = ["mean", "sum", "none"]
LOGITS = RNG.standard_normal((6, 4))
LABELS = np.array([0, 3, 1, 1, 2, 3])
WEIGHT = RNG.uniform(0.5, 2.0, 4)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("kwargs", [
    {},
    {"weight": WEIGHT},
    {"label_smoothing": 0.2},
    {"weight": WEIGHT, "label_smoothing": 0.1, "ignore_index": 1},
    {"ignore_index": 3},
])
def test_cross_entropy_class_indices(reduction: str, kwargs: dict[str, Any]) -> None:
    check_loss(F.cross_entropy, tf.cross_entropy, LOGITS, LABELS, reduction=reduction, **kwargs)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("kwargs", [{}, {"weight": WEIGHT, "label_smoothing": 0.3}])
def test_cross_entropy_probabilities(reduction: str, kwargs: dict[str, Any]) -> None:
    probs = RNG.dirichlet(np.ones(4), 6)
    check_loss(F.cross_entropy, tf.cross_entropy, LOGITS, probs, reduction=reduction, **kwargs)


def test_cross_entropy_spatial_and_unbatched() -> None:
    check_loss(F.cross_entropy, tf.cross_entropy, RNG.standard_normal((2, 4, 3, 2)),
               RNG.integers(0, 4, (2, 3, 2)), label_smoothing=0.1)
    check_loss(F.cross_entropy, tf.cross_entropy, RNG.standard_normal(5), np.array(2))
    check_loss(F.nll_loss, tf.nll_loss, np.log(RNG.dirichlet(np.ones(4), 6)), LABELS,
               weight=WEIGHT)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_regression_losses(reduction: str) -> None:
    x, y = RNG.standard_normal((4, 5)) * 2, RNG.standard_normal((4, 5))
    check_loss(F.mse_loss, tf.mse_loss, x, y, reduction=reduction)
    check_loss(F.l1_loss, tf.l1_loss, x, y, reduction=reduction)
    check_loss(F.huber_loss, tf.huber_loss, x, y, reduction=reduction)
    check_loss(F.huber_loss, tf.huber_loss, x, y, reduction=reduction, delta=0.5)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy_with_logits(reduction: str) -> None:
    x, y = RNG.standard_normal((4, 3)) * 3, RNG.uniform(0, 1, (4, 3))
    check_loss(F.binary_cross_entropy_with_logits, tf.binary_cross_entropy_with_logits, x, y,
               reduction=reduction)
    check_loss(F.binary_cross_entropy_with_logits, tf.binary_cross_entropy_with_logits, x, y,
               reduction=reduction, weight=RNG.uniform(0, 1, (4, 3)),
               pos_weight=RNG.uniform(0.5, 3, 3))


def test_large_logits_stay_finite() -> None:
    x = np.array([[1000.0, -1000.0]])
    assert np.isfinite(float(F.cross_entropy(Tensor.from_data(x), Tensor.from_data([1]))))
    bce = F.binary_cross_entropy_with_logits(Tensor.from_data(x), Tensor.from_data([[0.0, 1.0]]))
    assert float(bce) == pytest.approx(1000.0)


def test_loss_argument_errors() -> None:
    x = Tensor.zeros((3, 4))
    with pytest.raises(bp.InvalidArgumentError, match="reduction must be one of"):
        F.mse_loss(x, x, reduction="avg")
    with pytest.raises(bp.ShapeError, match="target shape"):
        F.mse_loss(x, Tensor.zeros((4, 3)))
    with pytest.raises(bp.ShapeError, match="do not fit"):
        F.cross_entropy(x, Tensor.from_data([0, 1]))
    with pytest.raises(bp.KindError, match="float tensor"):
        F.cross_entropy(Tensor.from_data([[1, 2]]), Tensor.from_data([0]))
    with pytest.raises(bp.InvalidArgumentError, match="label_smoothing"):
        F.cross_entropy(x, Tensor.from_data([0, 1, 2]), label_smoothing=1.5)


def test_float_class_indices_say_to_use_an_int_tensor() -> None:
    """The torch habit ``cross_entropy(logits[N, C], targets[N])`` with float targets: the
    error says indices must be int and probabilities [N, C], not only that shapes differ."""
    logits = Tensor.zeros((4, 3))
    with pytest.raises(bp.ShapeError,
                       match=r"target of shape \(4,\) and dtype bp\.float32 for input of shape "
                             r"\(4, 3\) \(bp\.float32, cpu.*\): class indices must be an int "
                             r"tensor \(target\.long\(\) or \.int\(\)\) of shape \(4,\); "
                             r"class probabilities must be float with the input's shape "
                             r"\(4, 3\)"):
        F.cross_entropy(logits, Tensor.from_data([0.0, 1.0, 2.0, 1.0]))
    assert float(F.cross_entropy(logits, Tensor.from_data([0.0, 1.0, 2.0, 1.0]).long())) == \
        pytest.approx(np.log(3), rel=1e-6)


def test_out_of_range_targets_are_refused() -> None:
    x = Tensor.zeros((3, 4))
    with pytest.raises(bp.IndexOutOfBoundsError, match="target 5 is out of range for 4"):
        F.cross_entropy(x, Tensor.from_data([0, 5, 1]))
    with pytest.raises(bp.IndexOutOfBoundsError, match="target -1 is out of range"):
        F.nll_loss(x, Tensor.from_data([0, -1, 1]))
    assert float(F.cross_entropy(x, Tensor.from_data([0, -100, 1]))) == pytest.approx(
        np.log(4), rel=1e-6)
