"""The wrong or crashing cases issue 16 lists, each against torch: 0-d dims, logical_not,
nonzero, int pow, cat of legacy empties, gather with an empty index, scatter's reduce,
interpolate's scale factor, attention with broadcast batch dims, unbatched losses, conv and
pools, conv padding modes, divisor_override, softplus threshold, float arange, alpha."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import burnpy as bp
import burnpy.nn.functional as F
from burnpy import Autodiff, Tensor
from burnpy_cpu import CpuBackend

AD = Autodiff(CpuBackend)
RNG = np.random.default_rng(0)


def _np(t: Any) -> np.ndarray:
    return t.detach().numpy() if isinstance(t, torch.Tensor) else t.to_numpy()


def _pair(shape: tuple[int, ...]) -> tuple[torch.Tensor, Tensor]:
    x = RNG.standard_normal(shape)
    return torch.tensor(x, requires_grad=True), Tensor.from_data(x, backend=AD).require_grad()


def _check(tfn: Callable[[torch.Tensor], torch.Tensor], bfn: Callable[[Tensor], Tensor],
           shape: tuple[int, ...]) -> None:
    """Forward and gradient of one float64 input against torch."""
    tx, bx = _pair(shape)
    want, got = tfn(tx), bfn(bx)
    assert got.shape == tuple(want.shape)
    np.testing.assert_allclose(_np(got), _np(want), rtol=1e-10, atol=1e-12)
    cot = RNG.uniform(0.5, 1.5, tuple(want.shape))
    (gt,) = torch.autograd.grad((want * torch.tensor(cot)).sum(), tx)
    gb = bx.grad((got * Tensor.from_data(cot, backend=AD)).sum().backward())
    assert gb is not None
    np.testing.assert_allclose(gb.to_numpy(), gt.numpy(), rtol=1e-10, atol=1e-12)


ZERO_D: dict[str, tuple[Callable[[Any, int], Any], ...]] = {
    "sum": (lambda x, d: x.sum(d, keepdim=True),),
    "mean": (lambda x, d: x.mean(d),),
    "prod": (lambda x, d: x.prod(d),),
    "amax": (lambda x, d: x.amax(d),),
    "logsumexp": (lambda x, d: x.logsumexp(d),),
    "cumsum": (lambda x, d: x.cumsum(d),),
    "cumprod": (lambda x, d: x.cumprod(d),),
    "softmax": (lambda x, d: x.softmax(d),),
    "log_softmax": (lambda x, d: x.log_softmax(d),),
    "squeeze": (lambda x, d: x.squeeze(d),),
    "transpose": (lambda x, d: x.transpose(d, 0),),
    "unfold": (lambda x, d: x.unfold(d, 1, 1),),
    "cummax": (lambda x, d: x.cummax(d)[0],),
    "topk": (lambda x, d: x.topk(1, d)[0],),
}


@pytest.mark.parametrize("dim", [0, -1])
@pytest.mark.parametrize("name", ZERO_D)
def test_0d_tensors_take_dim_0_and_minus_1(name: str, dim: int) -> None:
    (fn,) = ZERO_D[name]
    _check(lambda t: fn(t, dim), lambda b: fn(b, dim), ())


def test_0d_indexing_ops_and_bad_dims() -> None:
    idx_t, idx_b = torch.tensor(0), bp.tensor(0, backend=AD)
    _check(lambda t: t.gather(0, idx_t), lambda b: b.gather(0, idx_b), ())
    _check(lambda t: t.index_select(0, torch.tensor([0])),
           lambda b: b.index_select(0, bp.tensor([0], backend=AD)), ())
    _check(lambda t: t.scatter_add(0, idx_t, t * 2), lambda b: b.scatter_add(0, idx_b, b * 2), ())
    _check(lambda t: t.index_add(0, torch.tensor([0]), t * 3, alpha=2),
           lambda b: b.index_add(0, bp.tensor([0], backend=AD), b * 3, alpha=2), ())
    assert bp.tensor([0, 2]).any(0).item() is True
    assert bp.tensor(3).count_nonzero(-1).item() == 1
    with pytest.raises(bp.IndexOutOfBoundsError, match="0-d tensor"):
        bp.tensor(1.0).sum(1)


def test_logical_not_is_bool_for_every_kind_and_nonzero_on_0d() -> None:
    for data in ([0, 1, -2], [0.0, 1.5, float("nan")], [True, False]):
        got = bp.tensor(data).logical_not()
        assert got.dtype == bp.bool_
        assert got.tolist() == torch.tensor(data).logical_not().tolist()
    for v in (0.0, 3.0):
        want = torch.tensor(v).nonzero(as_tuple=True)
        got = bp.tensor(v).nonzero(as_tuple=True)
        assert [g.tolist() for g in got] == [w.tolist() for w in want]


def test_int_pow_square_and_float_arange() -> None:
    a, e = [3, -2, 5, 0], [[0, 3, 2, 7], [1, 1, 13, 0]]
    assert (bp.tensor(a) ** bp.tensor(e)).tolist() == (torch.tensor(a) ** torch.tensor(e)).tolist()
    assert bp.tensor(a).square().tolist() == torch.tensor(a).square().tolist()
    assert bp.tensor(a).square().dtype == bp.int64
    with pytest.raises(bp.InvalidArgumentError, match="negative"):
        bp.tensor([2]) ** bp.tensor([-1])
    for args in ((0.0, -8.000001, -4.0), (1.0, 5.000001, 2.0), (0.5, 3), (0, 1, 0.1)):
        got = Tensor.arange(*args, dtype="float64")
        want = torch.arange(*args, dtype=torch.float64)
        np.testing.assert_array_equal(got.to_numpy(), want.numpy())
    assert Tensor.arange(0.0, 1.0, 0.25).dtype == bp.float32
    assert Tensor.arange(3).dtype == bp.int64


def test_cat_skips_legacy_empty_and_gather_takes_an_empty_index() -> None:
    x = RNG.standard_normal((2, 3))
    got = bp.cat([bp.tensor(np.zeros(0)), bp.tensor(x)], 1)
    np.testing.assert_array_equal(got.to_numpy(), x)
    g = bp.tensor(np.arange(5.0)).gather(0, bp.tensor(np.zeros((2, 0), dtype=np.int64)))
    assert g.shape == (2, 0) and g.dtype == bp.float64


@pytest.mark.parametrize("reduce", ["add", "multiply"])
def test_scatter_reduce_and_number_value(reduce: str) -> None:
    x, v = RNG.standard_normal((3, 4)), RNG.standard_normal((2, 4))
    i = np.array([[0, 1, 0, 2], [2, 2, 0, 1]])
    want = torch.tensor(x).scatter(0, torch.tensor(i), torch.tensor(v), reduce=reduce)
    got = bp.tensor(x).scatter(0, bp.tensor(i), bp.tensor(v), reduce=reduce)
    np.testing.assert_allclose(got.to_numpy(), want.numpy(), rtol=1e-12)
    want_n = torch.tensor(x).scatter(1, torch.tensor(i), 2.5)
    np.testing.assert_array_equal(bp.tensor(x).scatter(1, bp.tensor(i), 2.5).to_numpy(),
                                  want_n.numpy())


def test_add_sub_alpha_and_masked_fill_tensor_value() -> None:
    _check(lambda t: t.add(t * t, alpha=-3.125), lambda b: b.add(b * b, alpha=-3.125), (2, 3))
    _check(lambda t: t.sub(t.exp(), alpha=2), lambda b: b.sub(b.exp(), alpha=2), (2, 3))
    mask = RNG.random((2, 3)) > 0.5
    _check(lambda t: t.masked_fill(torch.tensor(mask), t.sum()),
           lambda b: b.masked_fill(bp.tensor(mask, backend=AD), b.sum()), (2, 3))


@pytest.mark.parametrize("mode", ["nearest", "bilinear"])
@pytest.mark.parametrize("factor", [1.7, 0.6, 2.0])
@pytest.mark.parametrize("recompute", [None, False, True])
def test_interpolate_maps_through_the_given_scale_factor(mode: str, factor: float,
                                                         recompute: bool | None) -> None:
    _check(lambda t: TF.interpolate(t, scale_factor=factor, mode=mode,
                                    recompute_scale_factor=recompute),
           lambda b: F.interpolate(b, scale_factor=factor, mode=mode,
                                   recompute_scale_factor=recompute), (2, 3, 5, 4))


def test_attention_broadcasts_batch_dims_in_backward() -> None:
    q, k, v = (RNG.standard_normal(s) for s in ((4, 3, 8), (4, 4, 6, 8), (4, 4, 6, 8)))
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
    bq, bk, bv = (Tensor.from_data(a, backend=AD).require_grad() for a in (q, k, v))
    want = TF.scaled_dot_product_attention(tq, tk, tv, is_causal=True, dropout_p=0.0)
    got = F.scaled_dot_product_attention(bq, bk, bv, is_causal=True, dropout_p=0.0)
    np.testing.assert_allclose(got.to_numpy(), _np(want), rtol=1e-10)
    grads = got.sum().backward()
    for t, b in zip(torch.autograd.grad(want.sum(), (tq, tk, tv)), (bq, bk, bv), strict=True):
        g = b.grad(grads)
        assert g is not None
        np.testing.assert_allclose(g.to_numpy(), t.numpy(), rtol=1e-9, atol=1e-12)


def test_attention_dropout_is_seeded_and_p0_exact() -> None:
    q = Tensor.from_data(RNG.standard_normal((2, 3, 4)))
    base = F.scaled_dot_product_attention(q, q, q)
    assert F.scaled_dot_product_attention(q, q, q, dropout_p=0.0).tolist() == base.tolist()
    CpuBackend.seed(q.device, 7)
    a = F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)
    CpuBackend.seed(q.device, 7)
    b = F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)
    assert a.tolist() == b.tolist() and a.tolist() != base.tolist()


def test_unbatched_inputs_and_padding_modes() -> None:
    w = RNG.standard_normal((4, 3, 3, 2))
    tw, bw = torch.tensor(w), bp.tensor(w, backend=AD)
    for padding in (1, "same", "valid"):
        _check(lambda t, p=padding: TF.conv2d(t, tw, padding=p, dilation=(1, 3)),  # type: ignore[misc]
               lambda b, p=padding: F.conv2d(b, bw, padding=p, dilation=(1, 3)),  # type: ignore[misc]
               (3, 6, 7))
    _check(lambda t: TF.avg_pool2d(t, 3, padding=(1,), ceil_mode=True, divisor_override=2),
           lambda b: F.avg_pool2d(b, 3, padding=(1,), ceil_mode=True, divisor_override=2),
           (2, 5, 7))
    _check(lambda t: TF.max_pool1d(t, 2), lambda b: F.max_pool1d(b, 2), (3, 6))
    _check(lambda t: TF.adaptive_avg_pool2d(t, (None, 2)),
           lambda b: F.adaptive_avg_pool2d(b, (None, 2)), (1, 3, 4, 5))


def test_nll_loss_unbatched_softplus_threshold_and_empty_batch_norm() -> None:
    for reduction in ("none", "mean", "sum"):
        _check(lambda t, r=reduction: TF.nll_loss(t, torch.tensor(1), reduction=r),  # type: ignore[misc]
               lambda b, r=reduction: F.nll_loss(b, bp.tensor(1, backend=AD), reduction=r),  # type: ignore[misc]
               (3,))
    _check(lambda t: TF.softplus(t * 3, beta=3, threshold=0.2),
           lambda b: F.softplus(b * 3, beta=3, threshold=0.2), (20,))
    empty = bp.tensor(np.zeros(0))
    assert F.batch_norm(empty, empty, empty).shape == (0,)


def test_flip_dims_sort_stable_var_unbiased_round_decimals() -> None:
    x = RNG.standard_normal((3, 4))
    t, b = torch.tensor(x), bp.tensor(x)
    np.testing.assert_array_equal(b.flip(dims=(0, 1)).to_numpy(), t.flip(dims=(0, 1)).numpy())
    np.testing.assert_array_equal(b.sort(0, stable=True).indices.to_numpy(),
                                  t.sort(dim=0, stable=True).indices.numpy())
    np.testing.assert_allclose(b.var(1, unbiased=False).to_numpy(),
                               t.var(1, unbiased=False).numpy(), rtol=1e-12)
    np.testing.assert_array_equal(b.round(decimals=2).to_numpy(),
                                  t.round(decimals=2).numpy())
