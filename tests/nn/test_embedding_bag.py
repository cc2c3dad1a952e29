"""``EmbeddingBag`` and ``F.embedding_bag`` (every mode, offsets or 2-d input, per-sample
weights, padding, include_last_offset), ``Embedding``'s options and ``from_pretrained``, and
``Bilinear``: against torch in float64 (values, input and weight gradients) and float32."""

from __future__ import annotations

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
RNG = np.random.default_rng(7)
TABLE = RNG.standard_normal((8, 3))
INDICES = np.array([1, 2, 4, 2, 5, 2, 3, 7, 0])
OFFSETS = np.array([0, 2, 2, 5, 6])  # an empty bag, bags of 1, 2 and 3


def _t(v: np.ndarray, backend: Any = AD) -> Tensor:
    return Tensor.from_data(v, backend=backend)


def _bag(kwargs: dict[str, Any], indices: np.ndarray, offsets: np.ndarray | None,
         psw: np.ndarray | None) -> None:
    w, tw = _t(TABLE).require_grad(), torch.tensor(TABLE, requires_grad=True)
    ps = None if psw is None else _t(psw).require_grad()
    tps = None if psw is None else torch.tensor(psw, requires_grad=True)
    out = F.embedding_bag(_t(indices), w, None if offsets is None else _t(offsets),
                          per_sample_weights=ps, **kwargs)
    ref = tf.embedding_bag(torch.tensor(indices), tw,
                           None if offsets is None else torch.tensor(offsets),
                           per_sample_weights=tps, **kwargs)
    np.testing.assert_allclose(out.to_numpy(), ref.detach().numpy(), rtol=1e-12, atol=1e-14)
    seed = RNG.standard_normal(tuple(ref.shape))
    grads = (out * _t(seed)).sum().backward()
    (ref * torch.from_numpy(seed)).sum().backward()
    np.testing.assert_allclose(w.grad(grads).to_numpy(), tw.grad.numpy(), rtol=1e-12,
                               atol=1e-14)
    if ps is not None and tps is not None:
        np.testing.assert_allclose(ps.grad(grads).to_numpy(), tps.grad.numpy(), rtol=1e-12)
    out32 = F.embedding_bag(_t(indices, CpuBackend), _t(TABLE.astype(np.float32), CpuBackend),
                            None if offsets is None else _t(offsets, CpuBackend),
                            per_sample_weights=None if psw is None
                            else _t(psw.astype(np.float32), CpuBackend), **kwargs)
    np.testing.assert_allclose(out32.to_numpy(), ref.detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 2, -6])
def test_embedding_bag_offsets(mode: str, padding_idx: int | None) -> None:
    _bag({"mode": mode, "padding_idx": padding_idx}, INDICES, OFFSETS, None)
    _bag({"mode": mode, "padding_idx": padding_idx, "include_last_offset": True}, INDICES,
         np.append(OFFSETS, len(INDICES)), None)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_2d_input(mode: str) -> None:
    _bag({"mode": mode}, INDICES.reshape(3, 3), None, None)
    _bag({"mode": mode, "padding_idx": 2}, INDICES.reshape(3, 3), None, None)


def test_embedding_bag_per_sample_weights_and_gradient_scaling() -> None:
    psw = RNG.standard_normal(len(INDICES))
    _bag({"mode": "sum"}, INDICES, OFFSETS, psw)
    _bag({"mode": "sum", "padding_idx": 2}, INDICES.reshape(3, 3), None, psw.reshape(3, 3))
    _bag({"mode": "sum", "max_norm": 1.0}, INDICES, OFFSETS, None)


def test_embedding_bag_scale_grad_by_freq_as_documented() -> None:
    """Each row's gradient divided by its count in the batch, as torch documents and its
    ``embedding`` does. torch 2.13's CPU ``embedding_bag`` divides by another row's count
    (here row 3, seen once, gets a third and row 2, seen 3 times, is not divided), so the
    oracle is torch's ``embedding`` followed by the bag means."""
    w, tw = _t(TABLE).require_grad(), torch.tensor(TABLE, requires_grad=True)
    out = F.embedding_bag(_t(INDICES), w, _t(OFFSETS), mode="mean", scale_grad_by_freq=True)
    rows = tf.embedding(torch.tensor(INDICES), tw, scale_grad_by_freq=True)
    bounds = list(zip(OFFSETS, [*OFFSETS[1:], len(INDICES)], strict=True))
    ref = torch.stack([rows[a:b].mean(0) if b > a else torch.zeros(3, dtype=torch.float64)
                       for a, b in bounds])
    np.testing.assert_allclose(out.to_numpy(), ref.detach().numpy(), rtol=1e-12)
    seed = RNG.standard_normal(tuple(ref.shape))
    grads = (out * _t(seed)).sum().backward()
    (ref * torch.from_numpy(seed)).sum().backward()
    assert tw.grad is not None
    np.testing.assert_allclose(w.grad(grads).to_numpy(), tw.grad.numpy(), rtol=1e-12)


def test_embedding_bag_module_matches_torch() -> None:
    theirs = torch.nn.EmbeddingBag(8, 3, mode="sum", padding_idx=2, dtype=torch.float64)
    assert not theirs.weight[2].any()
    ours = nn.EmbeddingBag(8, 3, mode="sum", padding_idx=2, backend=AD, dtype="float64")
    assert ours.padding_idx == 2 and not ours.weight.to_numpy()[2].any()
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict({"weight": theirs.weight.detach().numpy().copy()})
    psw = RNG.standard_normal(len(INDICES))
    out = ours(_t(INDICES), _t(OFFSETS), _t(psw))
    ref = theirs(torch.tensor(INDICES), torch.tensor(OFFSETS), torch.tensor(psw))
    np.testing.assert_allclose(out.to_numpy(), ref.detach().numpy(), rtol=1e-12)
    grads = out.sum().backward()
    ref.sum().backward()
    assert theirs.weight.grad is not None
    np.testing.assert_allclose(ours.weight.grad(grads).to_numpy(), theirs.weight.grad.numpy(),
                               rtol=1e-12)
    pre = nn.EmbeddingBag.from_pretrained(_t(TABLE), mode="max")
    assert not pre.weight.is_require_grad()
    np.testing.assert_allclose(
        pre(_t(INDICES.reshape(3, 3))).to_numpy(),
        torch.nn.EmbeddingBag.from_pretrained(torch.tensor(TABLE), mode="max")(
            torch.tensor(INDICES.reshape(3, 3))).numpy())
    assert "mode='max'" in repr(pre)


def test_embedding_bag_rejects_what_torch_rejects() -> None:
    w = _t(TABLE)
    with pytest.raises(BurnpyError, match="per_sample_weights needs mode 'sum'"):
        F.embedding_bag(_t(INDICES), w, _t(OFFSETS), per_sample_weights=_t(np.ones(9)))
    with pytest.raises(BurnpyError, match="takes no offsets"):
        F.embedding_bag(_t(INDICES.reshape(3, 3)), w, _t(OFFSETS))
    with pytest.raises(BurnpyError, match="offsets must start at 0"):
        F.embedding_bag(_t(INDICES), w, _t(np.array([1, 3])))
    with pytest.raises(BurnpyError, match="needs 1-d int offsets"):
        F.embedding_bag(_t(INDICES), w)
    with pytest.raises(BurnpyError, match="mode 'max'"):
        F.embedding_bag(_t(INDICES), w, _t(OFFSETS), mode="max", scale_grad_by_freq=True)
    with pytest.raises(BurnpyError, match="sparse"):
        nn.EmbeddingBag(8, 3, sparse=True)
    with pytest.raises(BurnpyError, match="out of range"):
        F.embedding_bag(_t(np.array([0, 9])), w, _t(np.array([0])))


@pytest.mark.parametrize("kwargs", [
    {"padding_idx": 3}, {"padding_idx": -2}, {"max_norm": 1.0, "norm_type": 1.5},
    {"scale_grad_by_freq": True},
])
def test_embedding_module_passes_torchs_options(kwargs: dict[str, Any]) -> None:
    theirs = torch.nn.Embedding(8, 3, dtype=torch.float64, **kwargs)
    ours = nn.Embedding(8, 3, backend=AD, dtype="float64", **kwargs)
    if "padding_idx" in kwargs:  # normalized, and the row zero at init, as torch's
        assert ours.padding_idx == theirs.padding_idx
        assert not ours.weight.to_numpy()[ours.padding_idx].any()
    assert repr(ours).replace("'", "") == repr(theirs)
    ours.load_state_dict({"weight": theirs.weight.detach().numpy().copy()})
    idx = np.array([[1, 3, 6], [3, 3, 0]])
    out = ours(_t(idx))
    ref = theirs(torch.tensor(idx))
    np.testing.assert_allclose(out.to_numpy(), ref.detach().numpy(), rtol=1e-12)
    seed = RNG.standard_normal(tuple(ref.shape))
    grads = (out * _t(seed)).sum().backward()
    (ref * torch.from_numpy(seed)).sum().backward()
    assert theirs.weight.grad is not None
    np.testing.assert_allclose(ours.weight.grad(grads).to_numpy(), theirs.weight.grad.numpy(),
                               rtol=1e-12)
    np.testing.assert_allclose(ours.weight.to_numpy(), theirs.weight.detach().numpy(),
                               rtol=1e-12)  # max_norm renormalized the same rows in place


def test_embedding_from_pretrained_and_weight() -> None:
    table = _t(TABLE)
    frozen = nn.Embedding.from_pretrained(table, padding_idx=1)
    assert frozen.padding_idx == 1 and not frozen.weight.is_require_grad()
    np.testing.assert_array_equal(frozen.weight.to_numpy(), TABLE)  # the row kept as given
    trained = nn.Embedding.from_pretrained(table, freeze=False)
    assert trained.weight.is_require_grad() and not table.is_require_grad()
    given = nn.Embedding(8, 3, 2, _weight=_t(TABLE, CpuBackend))
    np.testing.assert_array_equal(given.weight.to_numpy(), TABLE)
    with pytest.raises(BurnpyError, match="sparse"):
        nn.Embedding(8, 3, sparse=True)
    with pytest.raises(BurnpyError, match="padding_idx 8"):
        nn.Embedding(8, 3, padding_idx=8)
    with pytest.raises(BurnpyError, match=r"_weight must have shape \(4, 3\)"):
        nn.Embedding(4, 3, _weight=table)
    with pytest.raises(BurnpyError, match="2-d"):
        nn.Embedding.from_pretrained(_t(np.ones(3)))


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("lead", [(5,), (2, 3), ()])
def test_bilinear_matches_torch(bias: bool, lead: tuple[int, ...]) -> None:
    theirs = torch.nn.Bilinear(4, 3, 2, bias=bias, dtype=torch.float64)
    ours = nn.Bilinear(4, 3, 2, bias=bias, backend=AD, dtype="float64")
    assert {k: v.shape for k, v in ours.state_dict().items()} == {
        k: tuple(v.shape) for k, v in theirs.state_dict().items()}
    ours.load_state_dict({k: v.detach().numpy().copy() for k, v in theirs.state_dict().items()})
    a, b = RNG.standard_normal((*lead, 4)), RNG.standard_normal((*lead, 3))
    xa, xb = _t(a).require_grad(), _t(b).require_grad()
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    out, ref = ours(xa, xb), theirs(ta, tb)
    np.testing.assert_allclose(out.to_numpy(), ref.detach().numpy(), rtol=1e-12)
    seed = RNG.standard_normal(tuple(ref.shape))
    grads = (out * _t(seed)).sum().backward()
    (ref * torch.from_numpy(seed)).sum().backward()
    for mine, torchs in [(xa, ta), (xb, tb)] + [
            (dict(ours.named_parameters())[n], p) for n, p in theirs.named_parameters()]:
        assert torchs.grad is not None
        np.testing.assert_allclose(mine.grad(grads).to_numpy(), torchs.grad.numpy(),
                                   rtol=1e-11, atol=1e-13)
    single = ours.float()
    np.testing.assert_allclose(
        single(_t(a.astype(np.float32), AD), _t(b.astype(np.float32), AD)).to_numpy(),
        ref.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_bilinear_init_and_shape_errors() -> None:
    layer = nn.Bilinear(16, 3, 5)
    bound = 1 / 4  # 1/sqrt(in1_features), as torch
    assert np.abs(layer.weight.to_numpy()).max() <= bound
    assert layer.bias is not None and np.abs(layer.bias.to_numpy()).max() <= bound
    assert np.abs(layer.weight.to_numpy()).max() > bound / 2
    with pytest.raises(BurnpyError, match=r"bilinear: inputs \(2, 16\) and \(3, 3\)"):
        layer(Tensor.ones((2, 16)), Tensor.ones((3, 3)))
