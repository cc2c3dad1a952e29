"""The nn.functional ops composed of Tensor ops, and their layers, beyond the module-op cases:
the layers against torch.nn's, the random and stateful paths (rrelu in training, instance norm's
running statistics), CTC's edge cases and the errors."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import burnpy.nn as nn
import burnpy.nn.functional as F
from burnpy import Tensor
from burnpy.autodiff import Autodiff
from burnpy.backend.errors import BurnpyError
from burnpy_cpu import CpuBackend

AD = Autodiff(CpuBackend)
RNG = np.random.default_rng(7)


def _t(a: np.ndarray, grad: bool = False) -> Tensor:
    t = Tensor.from_data(a, backend=AD)
    return t.require_grad() if grad else t


LAYERS: list[tuple[str, Callable[[], Any], Callable[[], Any], tuple[int, ...]]] = [
    ("ReLU6", nn.ReLU6, torch.nn.ReLU6, (2, 3, 4)),
    ("ELU", lambda: nn.ELU(0.5), lambda: torch.nn.ELU(0.5), (2, 3, 4)),
    ("CELU", lambda: nn.CELU(0.5), lambda: torch.nn.CELU(0.5), (2, 3, 4)),
    ("SELU", nn.SELU, torch.nn.SELU, (2, 3, 4)),
    ("Mish", nn.Mish, torch.nn.Mish, (2, 3, 4)),
    ("Hardswish", nn.Hardswish, torch.nn.Hardswish, (2, 3, 4)),
    ("Hardtanh", lambda: nn.Hardtanh(-0.5, 0.5), lambda: torch.nn.Hardtanh(-0.5, 0.5), (2, 5)),
    ("Hardshrink", nn.Hardshrink, torch.nn.Hardshrink, (2, 5)),
    ("Softshrink", nn.Softshrink, torch.nn.Softshrink, (2, 5)),
    ("Tanhshrink", nn.Tanhshrink, torch.nn.Tanhshrink, (2, 5)),
    ("Softsign", nn.Softsign, torch.nn.Softsign, (2, 5)),
    ("Threshold", lambda: nn.Threshold(0.1, 20.0), lambda: torch.nn.Threshold(0.1, 20.0),
     (2, 5)),
    ("GLU", nn.GLU, torch.nn.GLU, (2, 6)),
    ("Softmin", lambda: nn.Softmin(1), lambda: torch.nn.Softmin(1), (2, 6)),
    ("LogSigmoid", nn.LogSigmoid, torch.nn.LogSigmoid, (2, 6)),
    ("PReLU", lambda: nn.PReLU(3, backend=AD, dtype="float64"),
     lambda: torch.nn.PReLU(3).double(), (2, 3, 4)),
    ("ZeroPad2d", lambda: nn.ZeroPad2d((1, 2, 0, 1)), lambda: torch.nn.ZeroPad2d((1, 2, 0, 1)),
     (1, 2, 3, 4)),
    ("ConstantPad1d", lambda: nn.ConstantPad1d(2, 3.5), lambda: torch.nn.ConstantPad1d(2, 3.5),
     (1, 2, 3)),
    ("ReflectionPad2d", lambda: nn.ReflectionPad2d(2), lambda: torch.nn.ReflectionPad2d(2),
     (1, 2, 3, 4)),
    ("ReplicationPad3d", lambda: nn.ReplicationPad3d(1), lambda: torch.nn.ReplicationPad3d(1),
     (1, 1, 2, 3, 2)),
    ("CircularPad1d", lambda: nn.CircularPad1d((2, 1)), lambda: torch.nn.CircularPad1d((2, 1)),
     (1, 2, 4)),
    ("InstanceNorm1d", lambda: nn.InstanceNorm1d(3), lambda: torch.nn.InstanceNorm1d(3),
     (2, 3, 5)),
    ("InstanceNorm2d_affine", lambda: nn.InstanceNorm2d(3, affine=True, backend=AD,
                                                        dtype="float64"),
     lambda: torch.nn.InstanceNorm2d(3, affine=True).double(), (2, 3, 4, 3)),
    ("LocalResponseNorm", lambda: nn.LocalResponseNorm(3, 0.1),
     lambda: torch.nn.LocalResponseNorm(3, 0.1), (2, 5, 3)),
    ("PixelShuffle", lambda: nn.PixelShuffle(2), lambda: torch.nn.PixelShuffle(2), (1, 8, 2, 3)),
    ("PixelUnshuffle", lambda: nn.PixelUnshuffle(2), lambda: torch.nn.PixelUnshuffle(2),
     (1, 2, 4, 6)),
    ("Unfold", lambda: nn.Unfold(2, padding=1), lambda: torch.nn.Unfold(2, padding=1),
     (1, 2, 3, 4)),
    ("Fold", lambda: nn.Fold((3, 4), 2), lambda: torch.nn.Fold((3, 4), 2), (1, 8, 6)),
    ("AvgPool3d", lambda: nn.AvgPool3d(2, padding=1), lambda: torch.nn.AvgPool3d(2, padding=1),
     (1, 2, 3, 4, 3)),
    ("MaxPool3d", lambda: nn.MaxPool3d(2, stride=1), lambda: torch.nn.MaxPool3d(2, stride=1),
     (1, 2, 3, 4, 3)),
    ("AdaptiveAvgPool3d", lambda: nn.AdaptiveAvgPool3d(2), lambda: torch.nn.AdaptiveAvgPool3d(2),
     (1, 2, 3, 5, 4)),
    ("AdaptiveMaxPool1d", lambda: nn.AdaptiveMaxPool1d(3),
     lambda: torch.nn.AdaptiveMaxPool1d(3), (2, 2, 7)),
    ("AdaptiveMaxPool2d", lambda: nn.AdaptiveMaxPool2d((2, 3)),
     lambda: torch.nn.AdaptiveMaxPool2d((2, 3)), (2, 2, 5, 7)),
    ("LPPool1d", lambda: nn.LPPool1d(2, 3), lambda: torch.nn.LPPool1d(2, 3), (2, 2, 7)),
    ("LPPool2d", lambda: nn.LPPool2d(2, 2), lambda: torch.nn.LPPool2d(2, 2), (2, 2, 4, 5)),
]


@pytest.mark.parametrize(("make", "make_torch", "shape"),
                         [pytest.param(m, t, s, id=name) for name, m, t, s in LAYERS])
def test_layer_matches_torch(make: Callable[[], Any], make_torch: Callable[[], Any],
                             shape: tuple[int, ...]) -> None:
    x = RNG.uniform(-2.0, 2.0, size=shape)
    ours, theirs = make(), make_torch()
    xi, xt = _t(x, grad=True), torch.from_numpy(x).requires_grad_()
    out, ref = ours(xi), theirs(xt)
    np.testing.assert_allclose(out.to_numpy(), ref.detach().numpy(), rtol=1e-10, atol=1e-12)
    cot = RNG.standard_normal(ref.shape)
    grads = (out * _t(cot)).sum().backward()
    (ref * torch.from_numpy(cot)).sum().backward()
    assert xt.grad is not None
    np.testing.assert_allclose(xi.grad(grads).to_numpy(), xt.grad.numpy(), rtol=1e-9,
                               atol=1e-12)


LOSSES: list[tuple[str, Callable[[], Any], Callable[[], Any], list[np.ndarray]]] = [
    ("L1Loss", nn.L1Loss, torch.nn.L1Loss, [RNG.normal(size=(3, 4)), RNG.normal(size=(3, 4))]),
    ("MSELoss", lambda: nn.MSELoss(reduction="sum"), lambda: torch.nn.MSELoss(reduction="sum"),
     [RNG.normal(size=(3, 4)), RNG.normal(size=(3, 4))]),
    ("BCELoss", nn.BCELoss, torch.nn.BCELoss,
     [RNG.uniform(0.1, 0.9, size=(3, 4)), RNG.uniform(size=(3, 4))]),
    ("BCEWithLogitsLoss", nn.BCEWithLogitsLoss, torch.nn.BCEWithLogitsLoss,
     [RNG.normal(size=(3, 4)), RNG.uniform(size=(3, 4))]),
    ("KLDivLoss", lambda: nn.KLDivLoss(reduction="batchmean"),
     lambda: torch.nn.KLDivLoss(reduction="batchmean"),
     [RNG.normal(size=(3, 4)), RNG.uniform(size=(3, 4))]),
    ("SmoothL1Loss", lambda: nn.SmoothL1Loss(beta=0.5), lambda: torch.nn.SmoothL1Loss(beta=0.5),
     [RNG.normal(size=(3, 4)), RNG.normal(size=(3, 4))]),
    ("HuberLoss", lambda: nn.HuberLoss(delta=0.5), lambda: torch.nn.HuberLoss(delta=0.5),
     [RNG.normal(size=(3, 4)), RNG.normal(size=(3, 4))]),
    ("PoissonNLLLoss", nn.PoissonNLLLoss, torch.nn.PoissonNLLLoss,
     [RNG.normal(size=(3, 4)), RNG.uniform(0, 3, size=(3, 4))]),
    ("GaussianNLLLoss", nn.GaussianNLLLoss, torch.nn.GaussianNLLLoss,
     [RNG.normal(size=(3, 4)), RNG.normal(size=(3, 4)), RNG.uniform(0.1, 1, size=(3, 4))]),
    ("MarginRankingLoss", lambda: nn.MarginRankingLoss(0.1),
     lambda: torch.nn.MarginRankingLoss(0.1),
     [RNG.normal(size=5), RNG.normal(size=5), np.array([1.0, -1.0, 1.0, 1.0, -1.0])]),
    ("TripletMarginLoss", nn.TripletMarginLoss, torch.nn.TripletMarginLoss,
     [RNG.normal(size=(3, 4)), RNG.normal(size=(3, 4)), RNG.normal(size=(3, 4))]),
    ("CosineEmbeddingLoss", nn.CosineEmbeddingLoss, torch.nn.CosineEmbeddingLoss,
     [RNG.normal(size=(3, 4)), RNG.normal(size=(3, 4)), np.array([1.0, -1.0, 1.0])]),
    ("CosineSimilarity", nn.CosineSimilarity, torch.nn.CosineSimilarity,
     [RNG.normal(size=(3, 4)), RNG.normal(size=(3, 4))]),
    ("PairwiseDistance", nn.PairwiseDistance, torch.nn.PairwiseDistance,
     [RNG.normal(size=(3, 4)), RNG.normal(size=(3, 4))]),
]


@pytest.mark.parametrize(("make", "make_torch", "args"),
                         [pytest.param(m, t, a, id=name) for name, m, t, a in LOSSES])
def test_loss_module_matches_torch(make: Callable[[], Any], make_torch: Callable[[], Any],
                                   args: list[np.ndarray]) -> None:
    ours = make()(*[_t(a) for a in args])
    theirs = make_torch()(*[torch.from_numpy(a) for a in args])
    np.testing.assert_allclose(ours.to_numpy(), theirs.numpy(), rtol=1e-10)


def test_cross_entropy_and_nll_modules_match_torch() -> None:
    x, y = RNG.normal(size=(4, 3)), np.array([0, 2, 1, 2])
    w = np.array([0.2, 1.0, 2.0])
    ours = nn.CrossEntropyLoss(_t(w), label_smoothing=0.1)(_t(x), _t(y))
    theirs = torch.nn.CrossEntropyLoss(torch.from_numpy(w), label_smoothing=0.1)(
        torch.from_numpy(x), torch.from_numpy(y))
    np.testing.assert_allclose(ours.to_numpy(), theirs.numpy(), rtol=1e-10)
    ours = nn.NLLLoss(reduction="sum")(_t(x), _t(y))
    theirs = torch.nn.NLLLoss(reduction="sum")(torch.from_numpy(x), torch.from_numpy(y))
    np.testing.assert_allclose(ours.to_numpy(), theirs.numpy(), rtol=1e-10)


def test_rrelu_training_draws_seeded_slopes_in_range() -> None:
    x = _t(-np.ones((4, 50)))
    CpuBackend.seed(CpuBackend.default_device(), 3)
    first = F.rrelu(x, 0.1, 0.3, training=True).to_numpy()
    CpuBackend.seed(CpuBackend.default_device(), 3)
    again = F.rrelu(x, 0.1, 0.3, training=True).to_numpy()
    np.testing.assert_array_equal(first, again)
    assert ((-first >= 0.1) & (-first < 0.3)).all() and len(np.unique(first)) > 100
    positive = _t(np.full((3,), 2.0))
    np.testing.assert_array_equal(F.rrelu(positive, training=True).to_numpy(), [2.0] * 3)
    layer = nn.RReLU(0.1, 0.3)
    layer.eval()
    np.testing.assert_allclose(layer(x).to_numpy(), np.full((4, 50), -0.2))


def test_instance_norm_tracks_running_statistics_as_torch() -> None:
    x = RNG.normal(size=(3, 2, 6))
    ours = nn.InstanceNorm1d(2, momentum=0.3, track_running_stats=True, backend=AD,
                             dtype="float64")
    theirs = torch.nn.InstanceNorm1d(2, momentum=0.3, track_running_stats=True).double()
    for _ in range(2):
        np.testing.assert_allclose(ours(_t(x)).to_numpy(),
                                   theirs(torch.from_numpy(x)).numpy(), rtol=1e-10)
    np.testing.assert_allclose(ours.running_mean.to_numpy(), theirs.running_mean.numpy(),
                               rtol=1e-10)
    np.testing.assert_allclose(ours.running_var.to_numpy(), theirs.running_var.numpy(),
                               rtol=1e-10)
    ours.eval()
    theirs.eval()
    np.testing.assert_allclose(ours(_t(x)).to_numpy(), theirs(torch.from_numpy(x)).numpy(),
                               rtol=1e-10)


def _ctc_inputs(t: int, n: int, c: int) -> np.ndarray:
    logits = RNG.normal(size=(t, n, c))
    return logits - np.log(np.exp(logits).sum(-1, keepdims=True))


def test_ctc_concatenated_targets_unbatched_and_impossible_alignments() -> None:
    lp = _ctc_inputs(4, 2, 5)
    flat, lengths = np.array([1, 1, 3, 2]), [3, 1]  # "1 1 3" needs 4 steps: only just fits
    for reduction in ("mean", "sum", "none"):
        ours = F.ctc_loss(_t(lp), _t(flat), [4, 3], lengths, reduction=reduction)
        theirs = torch.nn.functional.ctc_loss(torch.from_numpy(lp), torch.from_numpy(flat),
                                              [4, 3], lengths, reduction=reduction)
        np.testing.assert_allclose(ours.to_numpy(), theirs.numpy(), rtol=1e-10)
    single = F.ctc_loss(_t(lp[:, 0]), _t(np.array([2, 4])), [4], [2], reduction="none")
    ref = torch.nn.functional.ctc_loss(torch.from_numpy(lp[:, 0]), torch.tensor([2, 4]),
                                       [4], [2], reduction="none")
    np.testing.assert_allclose(single.to_numpy(), ref.numpy(), rtol=1e-10)
    # "1 1 3" cannot fit in 3 steps: inf, or 0 with a zero gradient under zero_infinity.
    impossible = F.ctc_loss(_t(lp), _t(flat), [3, 3], lengths, reduction="none")
    assert np.isinf(impossible.to_numpy()[0]) and np.isfinite(impossible.to_numpy()[1])
    x = _t(lp, grad=True)
    loss = nn.CTCLoss(zero_infinity=True, reduction="sum")(x, _t(flat), [3, 3], lengths)
    grad = x.grad(loss.backward()).to_numpy()
    assert np.isfinite(loss.item()) and (grad[:, 0] == 0).all() and (grad[:, 1] != 0).any()


def test_grid_sample_identity_grid_returns_the_input() -> None:
    x = RNG.normal(size=(1, 2, 3, 4))
    theta = np.array([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
    grid = F.affine_grid(_t(theta), (1, 2, 3, 4), align_corners=False)
    np.testing.assert_allclose(F.grid_sample(_t(x), grid, align_corners=False).to_numpy(), x,
                               atol=1e-12)


def test_one_hot_values_and_errors() -> None:
    out = F.one_hot(_t(np.array([[0, 2], [1, 0]])))
    assert out.shape == (2, 2, 3) and out.dtype.name == "int64"
    np.testing.assert_array_equal(out.to_numpy(), np.eye(3, dtype=np.int64)[[[0, 2], [1, 0]]])
    with pytest.raises(BurnpyError, match="one_hot"):
        F.one_hot(_t(np.array([0, 3])), 3)
    with pytest.raises(BurnpyError, match="one_hot"):
        F.one_hot(_t(np.array([0.0, 1.0])))


@pytest.mark.parametrize(("call", "message"), [
    (lambda x: F.pad(x, (1,)), "even length"),
    (lambda x: F.pad(x, (1, 1), mode="wrap"), "mode"),
    (lambda x: F.pad(x, (4, 0), mode="reflect"), "smaller"),
    (lambda x: F.pad(x, (1, 1), mode="reflect", value=2.0), "value"),
    (lambda x: F.glu(x, -1), "even"),
    (lambda x: F.unfold(x, 5), "does not fit"),
    (lambda x: F.fold(x, (3, 3), 2), "expected"),
    (lambda x: F.pixel_shuffle(x, 2), "pixel_shuffle"),
    (lambda x: F.grid_sample(x, x), "grid"),
    (lambda x: F.group_norm(x, 4), "num_groups"),
    (lambda x: F.avg_pool3d(x, 4), "avg_pool3d: kernel"),
    (lambda x: F.smooth_l1_loss(x, x, beta=-1.0), "beta"),
    (lambda x: F.kl_div(x, x, reduction="avg"), "reduction"),
])
def test_bad_arguments_raise_naming_the_op(call: Callable[[Tensor], Any], message: str) -> None:
    x = _t(RNG.normal(size=(1, 3, 3, 3)))
    with pytest.raises(BurnpyError, match=message):
        call(x)
