"""The transformer's fused ops (attention, rms_norm, the embedding gradient) on the CPU
backend against the protocol's compositions and torch, and recorded as one autodiff node."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import burnpy.nn as nn
import burnpy.nn.functional as F
from burnpy.autodiff import Autodiff, BalancedCheckpointing
from burnpy.backend.ops.module_ops import ModuleOps
from burnpy.func import grad, jvp
from burnpy.tensor import Tensor
from burnpy_cpu import CpuBackend

#: (query shape, key length, value width, mask, is_causal, scale)
ATTENTION = [
    ((2, 3, 5, 4), 5, 4, False, True, None),    # heads, causal self-attention
    ((2, 3, 3, 4), 7, 5, True, False, 0.3),     # a bool mask, another scale
    ((2, 4, 4), 6, 3, False, True, None),       # causal with fewer queries than keys
    ((2, 3, 1, 4), 6, 4, False, False, None),   # one cached step over six keys
    ((2, 2, 12, 4), 12, 3, False, True, None),  # enough queries for the global-shift path
    ((2, 9, 4), 11, 3, True, False, 0.5),       # the same, with a mask
]


def _draw(shape: tuple[int, ...], dtype: str, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _operands(case: tuple, dtype: str) -> tuple[np.ndarray, ...]:
    qshape, lk, dv, masked, _, _ = case
    q = _draw(qshape, dtype, 0)
    k = _draw((*qshape[:-2], lk, qshape[-1]), dtype, 1)
    v = _draw((*qshape[:-2], lk, dv), dtype, 2)
    g = _draw((*qshape[:-1], dv), dtype, 3)
    mask = np.random.default_rng(4).random((qshape[-2], lk)) > 0.4 if masked else None
    if mask is not None:
        mask[:, 0] = True  # every query attends to something
    return q, k, v, g, mask


@pytest.mark.parametrize("case", ATTENTION)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_fused_attention_matches_the_protocol_composition(case: tuple, dtype: str) -> None:
    q, k, v, g, mask = _operands(case, dtype)
    causal, scale = case[4], case[5]
    tol = 1e-12 if dtype == "float64" else 2e-5
    fused = CpuBackend.attention(q, k, v, mask, scale, causal)
    composed = ModuleOps.attention.__func__(CpuBackend, q, k, v, mask, scale, causal)
    assert fused.dtype == np.dtype(dtype) and fused.shape == composed.shape
    np.testing.assert_allclose(fused, composed, rtol=tol, atol=tol)
    weights = CpuBackend.attention_weights(q, k, mask, scale, causal)
    np.testing.assert_allclose(weights.sum(-1), 1.0, rtol=tol)
    want = ModuleOps.attention_backward.__func__(CpuBackend, q, k, v, mask, scale, causal, g)
    for given in (None, weights):
        got = CpuBackend.attention_backward(q, k, v, mask, scale, causal, g, given)
        for a, b in zip(got, want, strict=True):
            assert a.dtype == np.dtype(dtype) and a.shape == b.shape
            np.testing.assert_allclose(a, b, rtol=tol * 10, atol=tol * 10)


@pytest.mark.parametrize("case", ATTENTION)
@pytest.mark.parametrize("backend", [Autodiff(CpuBackend),
                                     Autodiff[CpuBackend, BalancedCheckpointing]])
def test_attention_is_one_node_and_matches_torch_gradients(case: tuple, backend: type) -> None:
    q, k, v, g, mask = _operands(case, "float64")
    causal, scale = case[4], case[5]
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
    want = torch.nn.functional.scaled_dot_product_attention(
        tq, tk, tv, attn_mask=None if mask is None else torch.from_numpy(mask),
        is_causal=causal, scale=scale)
    want.backward(torch.from_numpy(g))
    bq, bk, bv = (Tensor.from_data(a, backend=backend).require_grad() for a in (q, k, v))
    bmask = None if mask is None else Tensor.from_data(mask, backend=backend)
    out = F.scaled_dot_product_attention(bq, bk, bv, attn_mask=bmask, is_causal=causal,
                                         scale=scale)
    node = out.primitive.node
    assert node.op.name == "attention"
    assert all(p is t.primitive.node for p, t in zip(node.parents, (bq, bk, bv), strict=True))
    np.testing.assert_allclose(out.to_numpy(), want.detach().numpy(), rtol=1e-12, atol=1e-14)
    grads = out.backward(grad_output=Tensor.from_data(g, backend=backend))
    for ours, theirs in ((bq, tq), (bk, tk), (bv, tv)):
        np.testing.assert_allclose(ours.grad(grads).to_numpy(), theirs.grad.numpy(),
                                   rtol=1e-11, atol=1e-13)


def test_attention_second_order_matches_torch() -> None:
    """The gradient of a function of the attention's gradient (Autodiff over Autodiff: the
    outer node's backward runs ``attention_backward``'s composition, recorded)."""
    q, k, v, _, _ = _operands(ATTENTION[0], "float64")
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))

    def torch_inner(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        # torch's fused kernel has no double backward: its math written out
        scores = a @ b.transpose(-1, -2) / a.shape[-1] ** 0.5
        causal = torch.ones(scores.shape[-2:], dtype=torch.bool).triu(1)
        out = scores.masked_fill(causal, float("-inf")).softmax(-1) @ tv
        return (out * out).sum()

    gq, gk = torch.autograd.grad(torch_inner(tq, tk), (tq, tk), create_graph=True)
    (gq.square().sum() + (gq * gk).sum()).backward()
    def inner(a: Tensor, b: Tensor) -> Tensor:
        value = Tensor.from_data(v, backend=a.backend)
        out = F.scaled_dot_product_attention(a, b, value, is_causal=True)
        return (out * out).sum()

    def outer(a: Tensor, b: Tensor) -> Tensor:
        da, db = grad(inner, argnums=(0, 1))(a, b)
        return da.square().sum() + (da * db).sum()

    second = grad(outer, argnums=(0, 1))(*(Tensor.from_data(a, backend=CpuBackend)
                                           for a in (q, k)))
    for ours, theirs in zip(second, (tq, tk), strict=True):
        np.testing.assert_allclose(ours.to_numpy(), theirs.grad.numpy(), rtol=1e-10,
                                   atol=1e-12)


def test_attention_tangent_matches_torch_jvp() -> None:
    q, k, v, _, _ = _operands(ATTENTION[2], "float64")
    tangents = tuple(_draw(a.shape, "float64", 10 + i) for i, a in enumerate((q, k, v)))

    def ours(a: Tensor, b: Tensor, c: Tensor) -> Tensor:
        return F.scaled_dot_product_attention(a, b, c, is_causal=True)

    out, tangent = jvp(ours, tuple(Tensor.from_data(a, backend=CpuBackend) for a in (q, k, v)),
                       tuple(Tensor.from_data(t, backend=CpuBackend) for t in tangents))
    want, want_tangent = torch.func.jvp(
        lambda a, b, c: torch.nn.functional.scaled_dot_product_attention(a, b, c,
                                                                         is_causal=True),
        tuple(map(torch.from_numpy, (q, k, v))), tuple(map(torch.from_numpy, tangents)))
    np.testing.assert_allclose(out.to_numpy(), want.numpy(), rtol=1e-12)
    np.testing.assert_allclose(tangent.to_numpy(), want_tangent.numpy(), rtol=1e-10,
                               atol=1e-13)


def test_half_precision_attention_computes_in_float32() -> None:
    q, k, v, _, _ = _operands(ATTENTION[0], "float16")
    out = CpuBackend.attention(q, k, v, None, None, True)
    assert out.dtype == np.float16
    want = torch.nn.functional.scaled_dot_product_attention(
        *(torch.from_numpy(a).float() for a in (q, k, v)), is_causal=True)
    np.testing.assert_allclose(out.astype(np.float32), want.numpy(), rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("shape,ndim", [((3, 4, 6), 1), ((2, 3, 4), 2), ((5, 8), 1)])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("weighted", [True, False])
def test_fused_rms_norm_matches_the_protocol_composition(shape: tuple[int, ...], ndim: int,
                                                         dtype: str, weighted: bool) -> None:
    x, g = _draw(shape, dtype, 0), _draw(shape, dtype, 1)
    weight = _draw(shape[len(shape) - ndim:], dtype, 2) if weighted else None
    tol = 1e-12 if dtype == "float64" else 2e-5
    fused = CpuBackend.rms_norm(x, ndim, weight, 1e-5)
    composed = ModuleOps.rms_norm.__func__(CpuBackend, x, ndim, weight, 1e-5)
    assert fused.dtype == np.dtype(dtype)
    np.testing.assert_allclose(fused, composed, rtol=tol, atol=tol)
    got = CpuBackend.rms_norm_backward(x, ndim, weight, g, 1e-5)
    want = ModuleOps.rms_norm_backward.__func__(CpuBackend, x, ndim, weight, g, 1e-5)
    for a, b in zip(got, want, strict=True):
        assert a.dtype == np.dtype(dtype) and a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=tol * 10, atol=tol * 10)


def test_rms_norm_module_is_one_node_and_matches_torch() -> None:
    x, g = _draw((4, 3, 6), "float64", 0), _draw((4, 3, 6), "float64", 1)
    weight = _draw((6,), "float64", 2)
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(weight, requires_grad=True)
    want = torch.nn.functional.rms_norm(tx, (6,), tw, 1e-6)
    want.backward(torch.from_numpy(g))
    backend = Autodiff(CpuBackend)
    layer = nn.RMSNorm(6, eps=1e-6, backend=backend, dtype="float64")
    layer.load_state_dict({"weight": weight})
    bx = Tensor.from_data(x, backend=backend).require_grad()
    out = layer(bx)
    assert out.primitive.node.op.name == "rms_norm"
    np.testing.assert_allclose(out.to_numpy(), want.detach().numpy(), rtol=1e-12)
    grads = out.backward(grad_output=Tensor.from_data(g, backend=backend))
    np.testing.assert_allclose(bx.grad(grads).to_numpy(), tx.grad.numpy(), rtol=1e-11)
    np.testing.assert_allclose(layer.weight.grad(grads).to_numpy(), tw.grad.numpy(), rtol=1e-11)


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
@pytest.mark.parametrize("index_shape,vocab", [((4, 7), 5), ((30,), 40), ((0,), 3)])
def test_embedding_backward_sums_rows_per_index(dtype: str, index_shape: tuple[int, ...],
                                                vocab: int) -> None:
    rng = np.random.default_rng(0)
    indices = rng.integers(0, vocab, index_shape)
    weight = _draw((vocab, 6), dtype, 1)
    grad = _draw((*index_shape, 6), dtype, 2)
    got = CpuBackend.embedding_backward(weight, grad, indices)
    composed = ModuleOps.embedding_backward.__func__(CpuBackend, weight, grad, indices)
    want = np.zeros((vocab, 6))
    np.add.at(want, indices.reshape(-1), grad.reshape(-1, 6).astype(np.float64))
    assert got.dtype == np.dtype(dtype) and got.shape == (vocab, 6)
    tol = {"float64": 1e-12, "float32": 1e-5, "float16": 1e-2}[dtype]
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol)
    np.testing.assert_allclose(got.astype(np.float64), composed.astype(np.float64), rtol=tol,
                               atol=tol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cross_entropy_rows_far_below_the_global_maximum_match_torch(dtype: str) -> None:
    """The NumPy kernel shifts by the global maximum; rows 200 below it take the per-row path."""
    logits = _draw((6, 5), dtype, 0)
    logits[0] += 300.0
    logits[3] -= 200.0
    target = np.array([0, 4, 2, 1, 3, 0])
    grad = _draw((6,), dtype, 1)
    tl = torch.tensor(logits, requires_grad=True)
    want = torch.nn.functional.cross_entropy(tl, torch.from_numpy(target), reduction="none")
    want.backward(torch.from_numpy(grad))
    tol = 1e-12 if dtype == "float64" else 1e-5
    np.testing.assert_allclose(CpuBackend.cross_entropy(logits, target, -100),
                               want.detach().numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(CpuBackend.cross_entropy_backward(logits, target, -100, grad),
                               tl.grad.numpy(), rtol=tol, atol=tol)


def test_cross_entropy_ignored_rows_are_zero_whatever_their_logits() -> None:
    logits = _draw((3, 4), "float32", 0)
    logits[1] = [np.nan, np.inf, -np.inf, 1.0]
    target = np.array([2, -100, 1])
    loss = CpuBackend.cross_entropy(logits, target, -100)
    grad = CpuBackend.cross_entropy_backward(logits, target, -100, np.ones(3, np.float32))
    assert loss[1] == 0.0 and np.all(grad[1] == 0.0)
    assert np.isfinite(loss).all() and np.isfinite(grad).all()


@pytest.mark.parametrize("causal", [True, False])
def test_attention_with_scores_far_apart_matches_torch(causal: bool) -> None:
    """Queries whose scores lie hundreds apart: the global shift would underflow them, so
    the kernel falls back to per-column maxima."""
    q, k, v, _, _ = _operands(((1, 2, 10, 4), 10, 3, False, causal, None), "float32")
    q[0, 0, 3] *= 300.0
    q[0, 1, 7] *= -250.0
    want = torch.nn.functional.scaled_dot_product_attention(
        *(torch.from_numpy(a) for a in (q, k, v)), is_causal=causal)
    np.testing.assert_allclose(CpuBackend.attention(q, k, v, None, None, causal), want.numpy(),
                               rtol=1e-5, atol=1e-6)


def test_a_mask_with_more_batch_dims_broadcasts_the_attention_as_the_composition() -> None:
    """torch refuses a mask that widens the batch; the protocol's composition broadcasts."""
    q, k, v, _, _ = _operands(((3, 4), 5, 2, False, False, None), "float64")
    mask = np.random.default_rng(5).random((2, 3, 5)) > 0.3
    mask[..., 0] = True
    got = CpuBackend.attention(q, k, v, mask, None, False)
    want = ModuleOps.attention.__func__(CpuBackend, q, k, v, mask, None, False)
    assert got.shape == want.shape == (2, 3, 2)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    g = _draw((2, 3, 2), "float64", 6)
    composed = ModuleOps.attention_backward.__func__(CpuBackend, q, k, v, mask, None, False, g)
    fused = CpuBackend.attention_backward(q, k, v, mask, None, False, g)
    for a, b in zip(fused, composed, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
