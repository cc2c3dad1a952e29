"""The dropout family: masks are random, so each output is checked by deriving its mask from
it: values (torch's constants, read off torch's own outputs), the mask's structure (whole
channels for the channel-wise kinds), its rate, the gradient through it, and eval's identity."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import burnpy as bp
import burnpy.nn as nn
import burnpy.nn.functional as F
from burnpy import Tensor
from burnpy.autodiff import Autodiff
from burnpy_cpu import CpuBackend

AD = Autodiff(CpuBackend)
RNG = np.random.default_rng(291)


def _seed(n: int) -> None:
    CpuBackend.seed(CpuBackend.default_device(), n)


def _run(layer: nn.Module, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``layer``'s float64 output for ``x``, the gradient of ``sum(out * w)`` w.r.t. ``x``,
    and ``w``."""
    xt = Tensor.from_data(x, backend=AD, dtype=bp.float64).require_grad()
    out = layer(xt)
    w = RNG.standard_normal(x.shape)
    grad = xt.grad((out * Tensor.from_data(w, backend=AD)).sum().backward())
    assert grad is not None
    return out.to_numpy(), grad.to_numpy(), w


def _constant_over(mask: np.ndarray, drawn: int) -> None:
    """The mask depends on its leading ``drawn`` dims only (one draw per channel)."""
    first = mask.reshape(*mask.shape[:drawn], -1)[..., :1]
    assert (mask.reshape(*mask.shape[:drawn], -1) == first).all()


@pytest.mark.parametrize(("layer", "shape", "drawn"), [
    (nn.Dropout(0.3), (40, 50), 2),
    (nn.Dropout1d(0.3), (40, 50, 6), 2),
    (nn.Dropout1d(0.3), (2000, 6), 1),
    (nn.Dropout2d(0.3), (40, 50, 3, 2), 2),
    (nn.Dropout3d(0.3), (40, 50, 2, 3, 2), 2),
    (nn.Dropout3d(0.3), (2000, 2, 3, 2), 1),
])
def test_dropout_masks_rate_scale_gradient_and_eval(layer: nn.Module, shape: tuple[int, ...],
                                                    drawn: int) -> None:
    x = RNG.uniform(0.5, 1.5, shape)
    _seed(7)
    out, grad, w = _run(layer, x)
    ratio = out / x
    kept = ratio != 0
    np.testing.assert_allclose(ratio[kept], 1 / 0.7, rtol=1e-12)
    _constant_over(kept, drawn)
    assert abs((~kept).mean() - 0.3) < 0.04
    np.testing.assert_allclose(grad, w * ratio, rtol=1e-12)
    _seed(7)
    np.testing.assert_array_equal(_run(layer, x)[0], out)  # seeded
    xt = Tensor.from_data(x)
    assert layer.eval()(xt) is xt


def _torch_alpha_constants(fn: str, p: float) -> tuple[float, float, float]:
    """``(a, kept_shift, dropped)`` of torch's alpha dropout, read off its outputs: kept
    elements become ``a * x + kept_shift``, dropped ones ``dropped``."""
    zeros = getattr(torch.nn.functional, fn)(torch.zeros(400, 10, dtype=torch.float64), p, True)
    ones = getattr(torch.nn.functional, fn)(torch.ones(400, 10, dtype=torch.float64), p, True)
    dropped, kept_shift = np.unique(zeros.numpy())
    dropped_again, kept_one = np.unique(ones.numpy())
    assert dropped == dropped_again
    return float(kept_one - kept_shift), float(kept_shift), float(dropped)


@pytest.mark.parametrize(("layer", "fn", "shape", "drawn"), [
    (nn.AlphaDropout(0.2), "alpha_dropout", (300, 200), 2),
    (nn.FeatureAlphaDropout(0.2), "feature_alpha_dropout", (300, 40, 5), 2),
])
def test_alpha_dropout_is_torchs_affine_map(layer: nn.Module, fn: str, shape: tuple[int, ...],
                                            drawn: int) -> None:
    a, kept_shift, dropped = _torch_alpha_constants(fn, 0.2)
    x = RNG.standard_normal(shape)
    _seed(3)
    out, grad, w = _run(layer, x)
    kept = np.isclose(out, a * x + kept_shift, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out[~kept], dropped, rtol=1e-12)
    _constant_over(kept, drawn)
    assert abs((~kept).mean() - 0.2) < 0.03
    np.testing.assert_allclose(grad, w * a * kept, rtol=1e-12)
    # SELU's self-normalization: a standard normal input stays standard
    assert abs(out.mean()) < 0.03 and abs(out.std() - 1.0) < 0.03
    xt = Tensor.from_data(x)
    assert layer.eval()(xt) is xt
    assert getattr(F, fn)(xt, 0.2) is xt  # torch's functional default: training=False


def test_dropout_edges_inplace_and_bad_input() -> None:
    x = Tensor.from_data(RNG.uniform(1.0, 2.0, (4, 3, 5)))
    assert F.dropout1d(x, 0.0) is x
    np.testing.assert_array_equal(F.alpha_dropout(x, 1.0, True).to_numpy(), 0.0)
    target = Tensor.from_data(x.to_numpy())
    _seed(1)
    returned = F.dropout1d(target, 0.5, inplace=True)
    assert returned is target
    _seed(1)
    np.testing.assert_array_equal(target.to_numpy(), F.dropout1d(x, 0.5).to_numpy())
    assert repr(nn.Dropout1d(0.5, inplace=True)) == "Dropout1d(p=0.5, inplace=True)"
    with pytest.raises(bp.ShapeError, match="dropout1d"):
        F.dropout1d(Tensor.zeros((2, 3, 4, 5)))
    with pytest.raises(bp.ShapeError, match="dropout3d"):
        F.dropout3d(Tensor.zeros((2, 3)))
    with pytest.raises(bp.InvalidArgumentError, match="FeatureAlphaDropout: p"):
        nn.FeatureAlphaDropout(-0.1)
    with pytest.warns(UserWarning, match="3D input to dropout2d"):
        _constant_over(F.dropout2d(Tensor.ones((30, 20, 4)), 0.5).to_numpy() != 0, 2)
