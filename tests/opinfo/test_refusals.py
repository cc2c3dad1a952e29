"""Arguments torch takes that burnpy refused (the OpInfo report's REFUSING entries), each
against torch: unbatched and None-sized adaptive pools, a negative divisor_override, 0-d
PReLU weights, the 0-norm's zero gradient, and interpolate's linear, bicubic, trilinear and
1-d / 3-d nearest modes."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import burnpy as bp
import burnpy.nn.functional as F
from burnpy import Tensor
from tests.opinfo.test_torch_fixes import AD, RNG, _check


def test_unbatched_and_none_sized_adaptive_pools() -> None:
    _check(lambda t: TF.adaptive_avg_pool3d(t, (None, 2, None)),
           lambda b: F.adaptive_avg_pool3d(b, (None, 2, None)), (3, 4, 5, 6))
    _check(lambda t: TF.adaptive_max_pool2d(t, (2, 3)),
           lambda b: F.adaptive_max_pool2d(b, (2, 3)), (3, 5, 7))
    _check(lambda t: TF.adaptive_max_pool2d(t, (None, 3), return_indices=True)[0],
           lambda b: F.adaptive_max_pool2d(b, (None, 3), return_indices=True)[0], (2, 3, 4, 7))
    x = RNG.standard_normal((3, 5, 7))
    _, want = TF.adaptive_max_pool2d(torch.tensor(x), (None, 3), return_indices=True)
    _, got = F.adaptive_max_pool2d(Tensor.from_data(x, backend=AD), (None, 3),
                                   return_indices=True)
    np.testing.assert_array_equal(got.to_numpy(), want.numpy())


def test_avg_pool3d_takes_a_negative_divisor_override() -> None:
    _check(lambda t: TF.avg_pool3d(t, (2, 2, 3), (2, 2, 1), divisor_override=-2),
           lambda b: F.avg_pool3d(b, (2, 2, 3), (2, 2, 1), divisor_override=-2), (1, 1, 4, 5, 4))
    with pytest.raises(bp.InvalidArgumentError):
        F.avg_pool3d(Tensor.from_data(RNG.standard_normal((1, 1, 2, 2, 2)), backend=AD), 2,
                     divisor_override=0)


@pytest.mark.parametrize(("shape", "weight"), [((20,), ()), ((), ()), ((), (1,)),
                                               ((2, 3, 4), ()), ((2, 3, 4), (3,))])
def test_prelu_takes_a_0d_or_per_channel_weight(shape: tuple[int, ...],
                                                weight: tuple[int, ...]) -> None:
    w = RNG.uniform(0.1, 0.5, weight)
    _check(lambda t: TF.prelu(t, torch.tensor(w)),
           lambda b: F.prelu(b, Tensor.from_data(w, backend=AD)), shape)
    with pytest.raises(bp.ShapeError):
        F.prelu(Tensor.from_data(RNG.standard_normal((2, 3)), backend=AD),
                Tensor.from_data(np.ones((1, 3)), backend=AD))


@pytest.mark.parametrize("shape", [(), (5,), (3, 4)])
def test_zero_norm_counts_non_zeros_with_a_zero_gradient(shape: tuple[int, ...]) -> None:
    from burnpy import linalg

    x = RNG.standard_normal(shape) * (RNG.uniform(size=shape) > 0.3)
    want = torch.linalg.vector_norm(torch.tensor(x), 0).item()
    for fn in (lambda b: linalg.vector_norm(b, 0), lambda b: b.norm(0)):
        b = Tensor.from_data(x, backend=AD).require_grad()
        got = fn(b)
        assert got.item() == want
        grad = b.grad(got.backward())
        assert grad is not None
        np.testing.assert_array_equal(grad.to_numpy(), np.zeros(shape))
    nan = Tensor.from_data(np.array([0.0, 2.0, math.nan, -1.0]), backend=AD)
    assert nan.norm(0).item() == 3.0


@pytest.mark.parametrize(("mode", "shape", "size"), [
    ("linear", (2, 3, 5), (8,)), ("linear", (2, 3, 7), (3,)), ("nearest", (2, 3, 5), (8,)),
    ("nearest", (1, 2, 3, 4, 5), (5, 3, 7)), ("bicubic", (2, 3, 4, 5), (7, 3)),
    ("bicubic", (1, 2, 6, 6), (9, 13)), ("trilinear", (1, 2, 3, 4, 5), (5, 3, 7))])
@pytest.mark.parametrize("align_corners", [False, True])
def test_interpolate_modes_by_size(mode: str, shape: tuple[int, ...], size: tuple[int, ...],
                                   align_corners: bool) -> None:
    corners = None if mode == "nearest" else align_corners
    _check(lambda t: TF.interpolate(t, size, mode=mode, align_corners=corners),
           lambda b: F.interpolate(b, size, mode=mode, align_corners=corners), shape)


@pytest.mark.parametrize(("mode", "shape"), [("linear", (2, 3, 4)), ("nearest", (2, 3, 4)),
                                             ("bicubic", (2, 3, 4, 5)),
                                             ("trilinear", (1, 2, 3, 4, 5))])
@pytest.mark.parametrize("factor", [1.7, 0.6, 2.5])
@pytest.mark.parametrize("recompute", [False, True])
def test_interpolate_modes_by_scale_factor(mode: str, shape: tuple[int, ...], factor: float,
                                           recompute: bool) -> None:
    kw = {"scale_factor": factor, "mode": mode, "recompute_scale_factor": recompute}
    _check(lambda t: TF.interpolate(t, **kw), lambda b: F.interpolate(b, **kw), shape)


def test_interpolate_mode_needs_its_number_of_spatial_dims() -> None:
    x = Tensor.from_data(RNG.standard_normal((2, 3, 4, 5)), backend=AD)
    for mode in ("linear", "trilinear"):
        with pytest.raises(bp.ShapeError):
            F.interpolate(x, scale_factor=2.0, mode=mode)
    with pytest.raises(bp.InvalidArgumentError, match="mode"):
        F.interpolate(x, scale_factor=2.0, mode="area")
    with pytest.raises(bp.InvalidArgumentError, match="2 positive"):
        F.interpolate(x, scale_factor=(2.0, 2.0, 2.0), mode="bicubic")
