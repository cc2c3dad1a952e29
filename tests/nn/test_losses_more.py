"""The margin losses, ``linear_cross_entropy`` and ``AdaptiveLogSoftmaxWithLoss`` against torch:
values and gradients (inputs and parameters) in float64 for every reduction, float32 values,
torch's weights loaded into the modules, and the weights of weighted losses as buffers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as tf

import burnpy.nn as nn
import burnpy.nn.functional as F
from burnpy import BurnpyError, Tensor
from burnpy.autodiff import Autodiff
from burnpy_cpu import CpuBackend

AD = Autodiff(CpuBackend)
RNG = np.random.default_rng(29)
REDUCTIONS = ["mean", "sum", "none"]


def _ours(v: Any, grad: bool = False) -> Any:
    if not isinstance(v, np.ndarray):
        return v
    t = Tensor.from_data(v, backend=AD)
    return t.require_grad() if grad and v.dtype.kind == "f" else t


def _theirs(v: Any, grad: bool = False) -> Any:
    if not isinstance(v, np.ndarray):
        return v
    return torch.tensor(v, requires_grad=grad and v.dtype.kind == "f")


def check(ours: Callable[..., Any], theirs: Callable[..., Any], inputs: list[np.ndarray],
          n_grad: int = 1, **kwargs: Any) -> None:
    """Same value and same gradient for the first ``n_grad`` inputs (float64), same value in
    float32 (for a function: a module holds float64 weights)."""
    xs = [_ours(v, i < n_grad) for i, v in enumerate(inputs)]
    txs = [_theirs(v, i < n_grad) for i, v in enumerate(inputs)]
    out = ours(*xs, **{k: _ours(v) for k, v in kwargs.items()})
    ref = theirs(*txs, **{k: _theirs(v) for k, v in kwargs.items()})
    assert out.shape == tuple(ref.shape)
    np.testing.assert_allclose(out.to_numpy(), ref.detach().numpy(), rtol=1e-12, atol=1e-12)
    seed = RNG.standard_normal(tuple(ref.shape))
    grads = (out * Tensor.from_data(seed, backend=AD)).sum().backward()
    (ref * torch.from_numpy(seed)).sum().backward()
    for x, tx in zip(xs[:n_grad], txs[:n_grad], strict=True):
        np.testing.assert_allclose(x.grad(grads).to_numpy(), tx.grad.numpy(), rtol=1e-10,
                                   atol=1e-12)
    if isinstance(ours, nn.Module):
        return
    single = [v.astype(np.float32) if v.dtype == np.float64 else v for v in inputs]
    kw32 = {k: v.astype(np.float32) if isinstance(v, np.ndarray) and v.dtype == np.float64
            else v for k, v in kwargs.items()}
    out32 = ours(*[Tensor.from_data(v, backend=CpuBackend) for v in single],
                 **{k: Tensor.from_data(v, backend=CpuBackend) if isinstance(v, np.ndarray)
                    else v for k, v in kw32.items()})
    ref32 = theirs(*[torch.tensor(v) for v in single], **{k: _theirs(v) for k, v in kw32.items()})
    np.testing.assert_allclose(out32.to_numpy(), ref32.numpy(), rtol=2e-5, atol=1e-6)


X = RNG.standard_normal((6, 5))
SIGNS = RNG.choice([-1.0, 1.0], (6, 5))
CLASSES = np.array([0, 4, 1, 1, 3, 2])
WEIGHT5 = RNG.uniform(0.5, 2.0, 5)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_hinge_embedding_loss(reduction: str) -> None:
    odd = SIGNS.copy()
    odd[0, 0] = 0.0  # neither label: torch adds both terms
    check(F.hinge_embedding_loss, tf.hinge_embedding_loss, [X, odd], margin=0.8,
          reduction=reduction)
    check(nn.HingeEmbeddingLoss(0.3, reduction=reduction),
          torch.nn.HingeEmbeddingLoss(0.3, reduction=reduction), [X, SIGNS])


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_soft_margin_loss(reduction: str) -> None:
    check(F.soft_margin_loss, tf.soft_margin_loss, [X, SIGNS], reduction=reduction)
    check(nn.SoftMarginLoss(reduction=reduction), torch.nn.SoftMarginLoss(reduction=reduction),
          [X, SIGNS])


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multilabel_soft_margin_loss(reduction: str) -> None:
    target = (SIGNS > 0).astype(np.float64)
    check(F.multilabel_soft_margin_loss, tf.multilabel_soft_margin_loss, [X, target],
          reduction=reduction)
    check(F.multilabel_soft_margin_loss, tf.multilabel_soft_margin_loss, [X, target],
          weight=WEIGHT5, reduction=reduction)
    check(nn.MultiLabelSoftMarginLoss(_ours(WEIGHT5), reduction=reduction),
          torch.nn.MultiLabelSoftMarginLoss(torch.tensor(WEIGHT5), reduction=reduction),
          [X[0], target[0]])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("p", [1, 2])
def test_multi_margin_loss(reduction: str, p: int) -> None:
    classes = CLASSES.copy()
    check(F.multi_margin_loss, tf.multi_margin_loss, [X, classes], p=p, margin=0.7,
          reduction=reduction)
    check(F.multi_margin_loss, tf.multi_margin_loss, [X, classes], p=p, weight=WEIGHT5,
          reduction=reduction)
    check(nn.MultiMarginLoss(p, 1.3, _ours(WEIGHT5), reduction=reduction),
          torch.nn.MultiMarginLoss(p, 1.3, torch.tensor(WEIGHT5), reduction=reduction),
          [X[2], np.array(3)])


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multilabel_margin_loss(reduction: str) -> None:
    target = np.array([[1, 3, -1, 0, 2], [0, 0, 1, -1, 4], [4, -1, 0, 0, 0], [3, 2, 1, 0, 4],
                       [-1, 1, 2, 3, 4], [2, 4, -1, 1, 1]])
    check(F.multilabel_margin_loss, tf.multilabel_margin_loss, [X, target], reduction=reduction)
    check(nn.MultiLabelMarginLoss(reduction=reduction),
          torch.nn.MultiLabelMarginLoss(reduction=reduction), [X[1], target[1]])


def _manhattan(a: Any, b: Any) -> Any:
    return (a - b).abs().sum(-1)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("swap", [False, True])
@pytest.mark.parametrize("distance", [None, _manhattan])
def test_triplet_margin_with_distance_loss(reduction: str, swap: bool,
                                           distance: Callable[[Any, Any], Any] | None) -> None:
    a, p, n = (RNG.standard_normal((7, 4)) for _ in range(3))
    check(F.triplet_margin_with_distance_loss, tf.triplet_margin_with_distance_loss, [a, p, n],
          3, distance_function=distance, margin=1.5, swap=swap, reduction=reduction)
    check(nn.TripletMarginWithDistanceLoss(distance_function=distance, swap=swap,
                                           reduction=reduction),
          torch.nn.TripletMarginWithDistanceLoss(distance_function=distance, swap=swap,
                                                 reduction=reduction), [a, p, n], 3)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("kwargs", [
    {},
    {"weight": WEIGHT5, "ignore_index": 1},
    {"label_smoothing": 0.2, "linear_bias": RNG.standard_normal(5)},
])
def test_linear_cross_entropy(reduction: str, kwargs: dict[str, Any]) -> None:
    w = RNG.standard_normal((5, 3))
    check(F.linear_cross_entropy, tf.linear_cross_entropy, [X[:, :3], w, CLASSES], 2,
          reduction=reduction, **kwargs)


def test_linear_cross_entropy_k_dimensional_and_probabilities() -> None:
    w = RNG.standard_normal((5, 2, 3, 4))
    bias = RNG.standard_normal((5, 2, 3))
    labels = RNG.integers(0, 5, (6, 2, 3))
    check(F.linear_cross_entropy, tf.linear_cross_entropy, [X[:, :4], w, labels], 2,
          linear_bias=bias, label_smoothing=0.1)
    probs = RNG.dirichlet(np.ones(5), 6)
    check(F.linear_cross_entropy, tf.linear_cross_entropy, [X[:, :3], w[:, 0, 0, :3], probs],
          3, reduction="sum")
    with pytest.raises(BurnpyError, match="ignore_index"):
        F.linear_cross_entropy(_ours(X[:, :3]), _ours(w[:, 0, 0, :3]), _ours(probs),
                               ignore_index=0)


def _load(ours: nn.Module, theirs: torch.nn.Module) -> None:
    ours.load_state_dict({k: v.detach().numpy().copy() for k, v in theirs.state_dict().items()})


def _param_grads(ours: nn.Module, theirs: torch.nn.Module, grads: Any) -> None:
    mine = dict(ours.named_parameters())
    for name, p in theirs.named_parameters():
        np.testing.assert_allclose(mine[name].grad(grads).to_numpy(), p.grad.numpy(),
                                   rtol=1e-10, atol=1e-12, err_msg=name)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_linear_cross_entropy_loss_module(reduction: str) -> None:
    theirs = torch.nn.LinearCrossEntropyLoss(4, 5, out_features=(2,), bias=True,
                                             dtype=torch.float64, reduction=reduction,
                                             weight=torch.tensor(WEIGHT5), ignore_index=3)
    ours = nn.LinearCrossEntropyLoss(4, 5, out_features=(2,), bias=True, backend=AD,
                                     dtype="float64", reduction=reduction,
                                     weight=_ours(WEIGHT5), ignore_index=3)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_parameters()] == ["linear.weight", "linear.bias"]
    _load(ours, theirs)
    x, labels = RNG.standard_normal((6, 4)), RNG.integers(0, 5, (6, 2))
    xi = _ours(x, True)
    out = ours(xi, _ours(labels))
    tx = torch.tensor(x, requires_grad=True)
    ref = theirs(tx, torch.tensor(labels))
    np.testing.assert_allclose(out.to_numpy(), ref.detach().numpy(), rtol=1e-12)
    grads = out.sum().backward()
    ref.sum().backward()
    np.testing.assert_allclose(xi.grad(grads).to_numpy(), tx.grad.numpy(), rtol=1e-10)
    _param_grads(ours, theirs, grads)


@pytest.mark.parametrize("head_bias", [False, True])
def test_adaptive_log_softmax_matches_torch(head_bias: bool) -> None:
    theirs = torch.nn.AdaptiveLogSoftmaxWithLoss(16, 20, [4, 9, 15], div_value=2.0,
                                                 head_bias=head_bias, dtype=torch.float64)
    ours = nn.AdaptiveLogSoftmaxWithLoss(16, 20, [4, 9, 15], div_value=2.0,
                                         head_bias=head_bias, backend=AD, dtype="float64")
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert {k: v.shape for k, v in ours.state_dict().items()} == {
        k: tuple(v.shape) for k, v in theirs.state_dict().items()}
    _load(ours, theirs)
    x = RNG.standard_normal((9, 16))
    labels = np.array([0, 19, 5, 3, 9, 14, 15, 2, 8])  # every cluster, not in order
    xi = _ours(x, True)
    out, loss = ours(xi, _ours(labels))
    tx = torch.tensor(x, requires_grad=True)
    ref_out, ref_loss = theirs(tx, torch.tensor(labels))
    np.testing.assert_allclose(out.to_numpy(), ref_out.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(loss.to_numpy(), ref_loss.detach().numpy(), rtol=1e-12)
    seed = RNG.standard_normal(9)
    grads = (loss + (out * _ours(seed)).sum()).backward()
    (ref_loss + (ref_out * torch.from_numpy(seed)).sum()).backward()
    np.testing.assert_allclose(xi.grad(grads).to_numpy(), tx.grad.numpy(), rtol=1e-10)
    _param_grads(ours, theirs, grads)
    with torch.no_grad():
        np.testing.assert_allclose(ours.log_prob(_ours(x)).to_numpy(),
                                   theirs.log_prob(torch.tensor(x)).numpy(), rtol=1e-12)
        np.testing.assert_array_equal(ours.predict(_ours(x)).to_numpy(),
                                      theirs.predict(torch.tensor(x)).numpy())
        one, one_loss = ours(_ours(x[3]), _ours(np.array(12)))
        ref_one, ref_one_loss = theirs(torch.tensor(x[3]), torch.tensor(12))
    assert one.shape == ()
    np.testing.assert_allclose(one.to_numpy(), ref_one.numpy(), rtol=1e-12)
    np.testing.assert_allclose(one_loss.to_numpy(), ref_one_loss.numpy(), rtol=1e-12)


def test_adaptive_log_softmax_rejects_bad_cutoffs_and_targets() -> None:
    with pytest.raises(BurnpyError, match="cutoffs"):
        nn.AdaptiveLogSoftmaxWithLoss(8, 10, [5, 3])
    asm = nn.AdaptiveLogSoftmaxWithLoss(8, 10, [5])
    with pytest.raises(BurnpyError, match=r"\[0, 9\]"):
        asm(Tensor.ones((2, 8)), Tensor.from_data(np.array([1, 10])))
    with pytest.raises(BurnpyError, match="target"):
        asm(Tensor.ones((2, 8)), Tensor.from_data(np.array([[1, 2]])))


@pytest.mark.parametrize("make", [
    lambda w: nn.CrossEntropyLoss(w), lambda w: nn.NLLLoss(w), lambda w: nn.BCELoss(w),
    lambda w: nn.BCEWithLogitsLoss(w, pos_weight=w * 2.0), lambda w: nn.MultiMarginLoss(weight=w),
    lambda w: nn.MultiLabelSoftMarginLoss(w),
])
def test_loss_weights_are_buffers_as_torchs(make: Callable[[Tensor], nn.Module]) -> None:
    """A class weight is saved with the loss but never trained (an optimizer over
    ``loss.parameters()`` would otherwise change it)."""
    w = Tensor.from_data(np.array([1.0, 2.0, 0.5]), backend=AD)
    loss = make(w)
    assert loss.parameters() == []
    assert set(loss.state_dict()) == {n for n, _ in loss.named_buffers()} != set()
    assert not w.is_require_grad()


def test_margin_losses_reject_bad_input() -> None:
    x = _ours(X)
    with pytest.raises(BurnpyError, match="multi_margin_loss: p"):
        F.multi_margin_loss(x, _ours(CLASSES), p=3)
    with pytest.raises(BurnpyError, match="out of range"):
        F.multi_margin_loss(x, _ours(np.array([0, 1, 2, 3, 4, 5])))
    for bad in (5, -2):  # torch checks every value, past the first -1 too
        labels = np.full((6, 5), -1)
        labels[2, 3] = bad
        with pytest.raises(BurnpyError, match="out of range"):
            F.multilabel_margin_loss(x, _ours(labels))
    with pytest.raises(BurnpyError, match=r"multilabel_margin_loss: .*\(6, 5\)"):
        F.multilabel_margin_loss(x, _ours(CLASSES))
    with pytest.raises(BurnpyError, match="margin must be greater than 0"):
        F.triplet_margin_with_distance_loss(x, x, x, margin=0.0)
    with pytest.raises(BurnpyError, match="hinge_embedding_loss: target shape"):
        F.hinge_embedding_loss(x, _ours(SIGNS[:2]))
