"""``F.scaled_dot_product_attention`` against torch's, forward and backward in float64: bool and
float masks (with -inf entries and fully masked rows), causal with L != S, ``scale``,
``enable_gqa``, torch's positional order, and the gradient a float mask receives."""

from __future__ import annotations

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
RNG = np.random.default_rng(11)


def _float_mask(shape: tuple[int, ...], dead_row: bool) -> np.ndarray:
    """A relative-position-like bias with some -inf entries (and, if asked, one row all -inf)."""
    mask = RNG.standard_normal(shape)
    mask[..., 0, 1] = -np.inf
    if dead_row:
        mask[..., 1, :] = -np.inf
    return mask


def _bool_mask(shape: tuple[int, ...], dead_row: bool) -> np.ndarray:
    mask = RNG.random(shape) < 0.7
    mask[..., 0] = True
    if dead_row:
        mask[..., 1, :] = False
    return mask


def _compare(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray | None,
             **kwargs: Any) -> None:
    """Output and the gradients of q, k, v (and of a float mask) equal torch's. A bool mask
    with ``is_causal`` (which torch sometimes refuses, sometimes combines) is compared with
    torch given the two combined."""
    arrays = [q, k, v] + ([] if mask is None else [mask])
    ours = [Tensor.from_data(a, backend=AD) for a in arrays]
    ours = [t.require_grad() if t.kind == "float" else t for t in ours]
    out = F.scaled_dot_product_attention(*ours[:3], *ours[3:], **kwargs)
    if mask is not None and kwargs.get("is_causal"):
        kwargs = {**kwargs, "is_causal": False}
        allowed = np.tril(np.ones(mask.shape[-2:], dtype=bool))
        arrays[3] = (mask & allowed if mask.dtype == bool
                     else mask + np.where(allowed, 0.0, -np.inf))
    theirs = [torch.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    ref = tf.scaled_dot_product_attention(*theirs[:3], *theirs[3:], **kwargs)
    assert out.shape == tuple(ref.shape)
    np.testing.assert_allclose(out.to_numpy(), ref.detach().numpy(), rtol=1e-10, atol=1e-12)
    seed = RNG.standard_normal(tuple(ref.shape))
    grads = (out * Tensor.from_data(seed, backend=AD)).sum().backward()
    (ref * torch.from_numpy(seed)).sum().backward()
    for i, (x, tx) in enumerate(zip(ours, theirs, strict=True)):
        if tx.requires_grad:
            g = x.grad(grads)
            assert g is not None and tx.grad is not None, f"input {i}: no gradient"
            np.testing.assert_allclose(g.to_numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12,
                                       err_msg=f"gradient of input {i}")


@pytest.mark.parametrize("dead_row", [False, True])
@pytest.mark.parametrize("mask_shape", [(5, 6), (2, 1, 5, 6), (3, 5, 6)])
def test_float_masks_are_added_and_get_gradients(mask_shape: tuple[int, ...],
                                                 dead_row: bool) -> None:
    q, k, v = (RNG.standard_normal(s) for s in ((2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 3)))
    _compare(q, k, v, _float_mask(mask_shape, dead_row))


@pytest.mark.parametrize("dead_row", [False, True])
@pytest.mark.parametrize("is_causal", [False, True])
def test_bool_masks_and_fully_masked_rows(dead_row: bool, is_causal: bool) -> None:
    # 9 queries take the CPU kernel's global-shift softmax path; 3 the per-row one
    for lq in (3, 9):
        q, k, v = (RNG.standard_normal(s) for s in ((2, 2, lq, 4), (2, 2, 6, 4), (2, 2, 6, 5)))
        _compare(q, k, v, _bool_mask((lq, 6), dead_row), is_causal=is_causal)


@pytest.mark.parametrize(("lq", "lk"), [(3, 7), (7, 3), (4, 4)])
def test_causal_is_top_left_aligned_with_float_mask_and_scale(lq: int, lk: int) -> None:
    q, k, v = (RNG.standard_normal(s) for s in ((2, lq, 4), (2, lk, 4), (2, lk, 4)))
    _compare(q, k, v, None, is_causal=True, scale=0.3)
    _compare(q, k, v, _float_mask((lq, lk), False), is_causal=True)


def test_enable_gqa_repeats_key_value_heads() -> None:
    q, k, v = (RNG.standard_normal(s) for s in ((2, 6, 5, 4), (2, 2, 7, 4), (2, 2, 7, 3)))
    _compare(q, k, v, None, enable_gqa=True)
    _compare(q, k, v, _float_mask((5, 7), True), enable_gqa=True, is_causal=True)
    qt, kt, vt = (Tensor.from_data(a) for a in (q, k, v))
    with pytest.raises(bp.ShapeError, match="scaled_dot_product_attention"):
        F.scaled_dot_product_attention(qt, kt, vt)  # heads differ without enable_gqa
    with pytest.raises(bp.ShapeError, match="divide the query heads"):
        F.scaled_dot_product_attention(qt, kt[:, :1].expand(2, 4, 7, 4),
                                       vt[:, :1].expand(2, 4, 7, 3), enable_gqa=True)


def test_positional_arguments_follow_torch_order() -> None:
    """torch's order is ``attn_mask, dropout_p, is_causal``: a positional 0.0 is dropout_p,
    never a falsy is_causal; a positional True after it is is_causal."""
    q, k, v = (RNG.standard_normal(s) for s in ((2, 5, 4), (2, 5, 4), (2, 5, 4)))
    out = F.scaled_dot_product_attention(*(Tensor.from_data(a) for a in (q, k, v)), None, 0.0,
                                         True)
    ref = tf.scaled_dot_product_attention(*(torch.from_numpy(a) for a in (q, k, v)), None, 0.0,
                                          True)
    np.testing.assert_allclose(out.to_numpy(), ref.numpy(), rtol=1e-12)


def test_mask_errors_name_the_op() -> None:
    q = Tensor.from_data(RNG.standard_normal((2, 5, 4)))
    with pytest.raises(bp.KindError, match="attn_mask must be bool"):
        F.scaled_dot_product_attention(q, q, q, Tensor.zeros((5, 5), dtype=bp.int64))
    with pytest.raises(bp.DTypeError, match="query's dtype"):
        F.scaled_dot_product_attention(q, q, q, Tensor.zeros((5, 5), dtype=bp.float32))
    with pytest.raises(bp.ShapeError, match="does not broadcast"):
        F.scaled_dot_product_attention(q, q, q, Tensor.zeros((3, 5, 5), dtype=bp.float64))
    with pytest.raises(bp.ShapeError, match="does not broadcast"):  # it may not widen them
        F.scaled_dot_product_attention(q, q, q, Tensor.zeros((3, 1, 5, 5)) > 0)


def test_dropout_with_a_float_mask_keeps_masked_keys_at_zero() -> None:
    """Dropout and a float mask together: keys at -inf still get no weight at all."""
    q = Tensor.from_data(RNG.standard_normal((1, 4, 3)))
    v = Tensor.from_data(np.eye(4)[None])
    mask = np.zeros((4, 4))
    mask[:, 2] = -np.inf
    out = F.scaled_dot_product_attention(q, q, v, Tensor.from_data(mask), 0.5).to_numpy()
    assert np.all(out[..., 2] == 0.0) and np.isfinite(out).all() and (out != 0).any()
