"""burnpy.nn.functional through the public API: values against torch, and argument errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as tf

import burnpy as bp
import burnpy.nn.functional as F
from burnpy import Tensor

RNG = np.random.default_rng(7)


def _pair(*shape: int) -> tuple[Tensor, torch.Tensor]:
    arr = RNG.standard_normal(shape)
    return Tensor.from_data(arr), torch.from_numpy(arr.copy())


def _close(ours: Tensor, ref: torch.Tensor, rtol: float = 1e-12) -> None:
    assert ours.shape == tuple(ref.shape)
    np.testing.assert_allclose(ours.to_numpy(), ref.numpy(), rtol=rtol, atol=1e-12)


@pytest.mark.parametrize(("n", "kwargs"), [
    (1, {"stride": 2, "padding": 1}),
    (2, {"stride": (2, 1), "padding": (1, 0), "dilation": (1, 2), "groups": 2}),
    (3, {"padding": 1}),
])
def test_conv_matches_torch(n: int, kwargs: dict) -> None:
    spatial = (7,) * n
    x, tx = _pair(2, 4, *spatial)
    w, tw = _pair(6, 4 // kwargs.get("groups", 1), *(3,) * n)
    b, tb = _pair(6)
    ours = getattr(F, f"conv{n}d")(x, w, b, **kwargs)
    _close(ours, getattr(tf, f"conv{n}d")(tx, tw, tb, **kwargs))


@pytest.mark.parametrize("n", [1, 2, 3])
def test_conv_transpose_matches_torch(n: int) -> None:
    x, tx = _pair(2, 4, *(5,) * n)
    w, tw = _pair(4, 3, *(3,) * n)
    kwargs = {"stride": 2, "padding": 1, "output_padding": 1}
    ours = getattr(F, f"conv_transpose{n}d")(x, w, None, **kwargs)
    _close(ours, getattr(tf, f"conv_transpose{n}d")(tx, tw, None, **kwargs))


def test_pools_interpolate_embedding_attention_match_torch() -> None:
    x, tx = _pair(2, 3, 9, 8)
    _close(F.avg_pool2d(x, 3, 2, 1, ceil_mode=True), tf.avg_pool2d(tx, 3, 2, 1, ceil_mode=True))
    values, indices = F.max_pool2d(x, 2, return_indices=True)
    ref_values, ref_indices = tf.max_pool2d(tx, 2, return_indices=True)
    _close(values, ref_values)
    assert (indices.to_numpy() == ref_indices.numpy()).all()
    _close(F.adaptive_avg_pool2d(x, (4, 3)), tf.adaptive_avg_pool2d(tx, (4, 3)))
    _close(F.interpolate(x, size=(5, 11), mode="bilinear", align_corners=False),
           tf.interpolate(tx, size=(5, 11), mode="bilinear", align_corners=False))
    _close(F.interpolate(x, scale_factor=2), tf.interpolate(tx, scale_factor=2))
    weight, tweight = _pair(10, 4)
    idx = RNG.integers(0, 10, size=(3, 5))
    _close(F.embedding(Tensor.from_data(idx), weight), tf.embedding(torch.from_numpy(idx), tweight))
    q, tq = _pair(2, 5, 4)
    k, tk = _pair(2, 6, 4)
    v, tv = _pair(2, 6, 3)
    mask = RNG.random((5, 6)) < 0.8
    mask[:, 0] = True
    _close(F.scaled_dot_product_attention(q, k, v, Tensor.from_data(mask)),
           tf.scaled_dot_product_attention(tq, tk, tv, torch.from_numpy(mask)))
    qc, tqc = _pair(2, 6, 4)
    _close(F.scaled_dot_product_attention(qc, k, v, is_causal=True),
           tf.scaled_dot_product_attention(tqc, tk, tv, is_causal=True))
    lin_w, tlin_w = _pair(3, 4)
    lin_b, tlin_b = _pair(3)
    _close(F.linear(q, lin_w, lin_b), tf.linear(tq, tlin_w, tlin_b))


@pytest.mark.parametrize(("call", "error", "match"), [
    (lambda x, w: F.conv2d(x, w, stride=0), bp.InvalidArgumentError, r"conv2d: stride"),
    (lambda x, w: F.conv2d(x, w, padding=-1), bp.InvalidArgumentError, r"conv2d: padding"),
    (lambda x, w: F.conv2d(x, w, groups=3), bp.ShapeError, r"conv2d: .*groups=3"),
    (lambda x, w: F.conv2d(x[0, 0], w), bp.ShapeError, r"conv2d: input must be .*\(8, 8\)"),
    (lambda x, w: F.conv2d(x, w[:, :2]), bp.ShapeError, r"conv2d: input has 4 channels"),
    (lambda x, w: F.conv2d(x, Tensor.zeros((6, 4, 9, 9), dtype="float64")), bp.ShapeError,
     r"conv2d: kernel \(9, 9\)"),
    (lambda x, w: F.conv2d(x, w.cast("float32")), bp.DTypeError,
     r"conv2d: input is bp.float64 but a parameter is bp.float32"),
    (lambda x, w: F.conv2d(x, w, Tensor.zeros(5, dtype="float64")), bp.ShapeError,
     r"conv2d: bias must have shape \(6,\)"),
    (lambda x, w: F.max_pool2d(x, 3, padding=2), bp.InvalidArgumentError,
     r"max_pool2d: padding \(2, 2\) must be at most half"),
    (lambda x, w: F.avg_pool2d(x, 9), bp.ShapeError, r"avg_pool2d: kernel \(9, 9\) does not fit"),
    (lambda x, w: F.adaptive_avg_pool2d(x, 0), bp.InvalidArgumentError, r"output_size"),
    (lambda x, w: F.interpolate(x, size=4, mode="cubic"), bp.InvalidArgumentError, r"mode"),
    (lambda x, w: F.interpolate(x), bp.InvalidArgumentError, r"exactly one of size"),
    (lambda x, w: F.conv_transpose2d(x, w, output_padding=2), bp.InvalidArgumentError,
     r"output_padding"),
    (lambda x, w: F.embedding(Tensor.from_data([0, 7]), Tensor.zeros((3, 2))),
     bp.IndexOutOfBoundsError, r"embedding: index 7 is out of range for a vocabulary of 3"),
    (lambda x, w: F.linear(x, w), bp.ShapeError, r"linear: input \(2, 4, 8, 8\)"),
])
def test_invalid_module_arguments(call, error: type[Exception], match: str) -> None:
    x = Tensor.zeros((2, 4, 8, 8), dtype="float64")
    w = Tensor.zeros((6, 4, 3, 3), dtype="float64")
    with pytest.raises(error, match=match) as info:
        call(x, w)
    assert isinstance(info.value, bp.BurnpyError)
