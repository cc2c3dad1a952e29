"""WebGPU module ops (convolutions, pools, interpolation, attention) and activations, forward
and backward, against torch in float32. The Tensor-op conformance suite does not cover module
ops, so their WGSL kernels are checked here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as tf

from burnpy.backend.data import TensorData
from burnpy.backend.ops.module_ops import ConvOptions, ConvTransposeOptions
from burnpy_wgpu import WgpuBackend
from burnpy_wgpu.kernels import conv as convolution
from burnpy_wgpu.tensor import WgpuTensor

B = WgpuBackend
DEV = B.default_device()
RNG = np.random.default_rng(11)


def _up(a: np.ndarray) -> WgpuTensor:
    data = TensorData(np.ascontiguousarray(a))
    return B.float_from_data(data, DEV) if a.dtype.kind == "f" else B.int_from_data(data, DEV)


def _down(t: WgpuTensor) -> np.ndarray:
    return B.float_into_data(t).array if t.dtype.kind == "f" else B.int_into_data(t).array


def _close(ours: WgpuTensor, ref: torch.Tensor, rtol: float = 2e-5) -> None:
    want = ref.detach().numpy()
    got = _down(ours)
    assert got.shape == want.shape
    scale = float(np.nanmax(np.abs(want))) if want.size else 0.0
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale + 1e-6)


def _randn(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _grads(fn: Callable[..., torch.Tensor], *arrays: np.ndarray
           ) -> tuple[torch.Tensor, np.ndarray, list[torch.Tensor]]:
    """torch's output, a random upstream gradient, and the gradients of every input."""
    inputs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = fn(*inputs)
    grad = _randn(*out.shape)
    out.backward(torch.from_numpy(grad))
    return out, grad, [t.grad for t in inputs]


# (spatial rank, size, kernel, stride, padding, dilation, groups, c_in, c_out, batch)
CONVS = [
    (1, 9, 3, 2, 1, 1, 1, 3, 4, 2),
    (2, 7, 3, 1, 1, 2, 2, 4, 6, 2),
    (2, 6, 2, 2, 0, 1, 1, 2, 3, 1),
    (3, 5, 3, 1, 1, 1, 1, 2, 2, 1),
]
_CONV = {1: tf.conv1d, 2: tf.conv2d, 3: tf.conv3d}
_CONV_T = {1: tf.conv_transpose1d, 2: tf.conv_transpose2d, 3: tf.conv_transpose3d}


@pytest.mark.parametrize("case", CONVS)
def test_conv_forward_and_backward(case: tuple[int, ...]) -> None:
    nd, size, k, s, p, d, g, ci, co, n = case
    x, w, b = _randn(n, ci, *(size,) * nd), _randn(co, ci // g, *(k,) * nd), _randn(co)
    opts = ConvOptions((s,) * nd, (p,) * nd, (d,) * nd, g)
    out, grad, (gx, gw, _) = _grads(
        lambda x_, w_, b_: _CONV[nd](x_, w_, b_, s, p, d, g), x, w, b)
    _close(B.conv(_up(x), _up(w), _up(b), opts), out)
    _close(B.conv_weight_backward(_up(x), _up(w), _up(grad), opts), gw, 1e-4)
    _close(B.conv_x_backward(_up(x), _up(w), _up(grad), opts), gx, 1e-4)


def test_conv_walks_the_batch_in_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """A one-byte column budget: every conv runs one sample per chunk."""
    monkeypatch.setattr(convolution, "COLS_BYTES", 1)
    test_conv_forward_and_backward(CONVS[1])
    test_conv_transpose_forward_and_backward(CONVS[1])


@pytest.mark.parametrize("case", CONVS)
def test_conv_transpose_forward_and_backward(case: tuple[int, ...]) -> None:
    nd, size, k, s, p, d, g, ci, co, n = case
    po = min(s, d) - 1
    x, w, b = _randn(n, ci, *(size,) * nd), _randn(ci, co // g, *(k,) * nd), _randn(co)
    opts = ConvTransposeOptions((s,) * nd, (p,) * nd, (po,) * nd, (d,) * nd, g)
    out, grad, (gx, gw, _) = _grads(
        lambda x_, w_, b_: _CONV_T[nd](x_, w_, b_, s, p, po, g, d), x, w, b)
    _close(B.conv_transpose(_up(x), _up(w), _up(b), opts), out)
    _close(B.conv_transpose_weight_backward(_up(x), _up(w), _up(grad), opts), gw, 1e-4)
    _close(B.conv_transpose_x_backward(_up(x), _up(w), _up(grad), opts), gx, 1e-4)


@pytest.mark.parametrize(("nd", "size", "k", "s", "p", "include_pad", "ceil"), [
    (1, 9, 3, 2, 1, True, False), (2, 7, 3, 2, 1, False, True), (2, 8, 2, 2, 0, True, False)])
def test_avg_pool_and_backward(nd: int, size: int, k: int, s: int, p: int, include_pad: bool,
                               ceil: bool) -> None:
    pool = tf.avg_pool1d if nd == 1 else tf.avg_pool2d
    x = _randn(2, 3, *(size,) * nd)
    args = ((k,) * nd, (s,) * nd, (p,) * nd)
    out, grad, (gx,) = _grads(lambda x_: pool(x_, *args, ceil, include_pad), x)
    _close(B.avg_pool(_up(x), *args, include_pad, ceil), out)
    _close(B.avg_pool_backward(_up(x), _up(grad), *args, include_pad, ceil), gx)


@pytest.mark.parametrize(("nd", "size", "k", "s", "p", "d", "ceil"), [
    (1, 9, 3, 2, 1, 1, False), (2, 7, 3, 2, 1, 2, True), (2, 6, 2, 2, 0, 1, False)])
def test_max_pool_with_indices_and_backward(nd: int, size: int, k: int, s: int, p: int, d: int,
                                            ceil: bool) -> None:
    pool = tf.max_pool1d if nd == 1 else tf.max_pool2d
    x = _randn(2, 3, *(size,) * nd)
    x.reshape(-1)[::7] = 0.5  # ties
    args = ((k,) * nd, (s,) * nd, (p,) * nd, (d,) * nd)
    ref = pool(torch.tensor(x), *args, ceil_mode=ceil, return_indices=True)
    _, grad, (gx,) = _grads(lambda x_: pool(x_, *args, ceil_mode=ceil), x)
    values, indices = B.max_pool_with_indices(_up(x), *args, ceil)
    _close(values, ref[0])
    np.testing.assert_array_equal(_down(indices), ref[1].numpy())
    _close(B.max_pool_with_indices_backward(_up(x), _up(grad), indices), gx)


@pytest.mark.parametrize(("size", "out_size"), [((7,), (3,)), ((9, 5), (4, 5)), ((3, 4), (7, 6))])
def test_adaptive_avg_pool_and_backward(size: tuple[int, ...], out_size: tuple[int, ...]) -> None:
    pool = tf.adaptive_avg_pool1d if len(size) == 1 else tf.adaptive_avg_pool2d
    x = _randn(2, 3, *size)
    out, grad, (gx,) = _grads(lambda x_: pool(x_, out_size), x)
    _close(B.adaptive_avg_pool(_up(x), out_size), out)
    _close(B.adaptive_avg_pool_backward(_up(x), _up(grad)), gx)


@pytest.mark.parametrize(("mode", "align_corners"), [
    ("nearest", False), ("bilinear", False), ("bilinear", True)])
@pytest.mark.parametrize("sizes", [((4, 5), (8, 7)), ((9, 6), (4, 4))])
def test_interpolate_and_backward(mode: str, align_corners: bool,
                                  sizes: tuple[tuple[int, int], tuple[int, int]]) -> None:
    size, out_size = sizes
    x = _randn(2, 3, *size)
    kw: dict[str, Any] = {} if mode == "nearest" else {"align_corners": align_corners}
    out, grad, (gx,) = _grads(lambda x_: tf.interpolate(x_, out_size, mode=mode, **kw), x)
    _close(B.interpolate(_up(x), out_size, mode, align_corners), out)  # type: ignore[arg-type]
    _close(B.interpolate_backward(_up(x), _up(grad), out_size, mode,  # type: ignore[arg-type]
                                  align_corners), gx)


ACTIVATIONS: list[tuple[str, Callable[[Any], Any], Callable[[torch.Tensor], torch.Tensor]]] = [
    ("relu", B.relu, torch.relu),
    ("gelu", B.gelu, tf.gelu),
    ("gelu_tanh", lambda x: B.gelu(x, "tanh"), lambda x: tf.gelu(x, approximate="tanh")),
    ("sigmoid", B.sigmoid, torch.sigmoid),
    ("log_sigmoid", B.log_sigmoid, tf.logsigmoid),
    ("silu", B.silu, tf.silu),
    ("softplus", B.softplus, tf.softplus),
    ("leaky_relu", lambda x: B.leaky_relu(x, 0.1), lambda x: tf.leaky_relu(x, 0.1)),
    ("hard_sigmoid", lambda x: B.hard_sigmoid(x, 1 / 6, 0.5), tf.hardsigmoid),
    ("softmax", lambda x: B.softmax(x, 1), lambda x: torch.softmax(x, 1)),
    ("log_softmax", lambda x: B.log_softmax(x, 0), lambda x: torch.log_softmax(x, 0)),
]


@pytest.mark.parametrize(("name", "ours", "theirs"), ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_activations(name: str, ours: Callable[[Any], Any],
                     theirs: Callable[[torch.Tensor], torch.Tensor]) -> None:
    x = _randn(5, 40) * 4
    x[0, :3] = [0.0, np.nan, -30.0]
    _close(ours(_up(x)), theirs(torch.tensor(x)), 1e-5)


def test_activation_backward_helpers() -> None:
    x = _randn(4, 33) * 3
    _, grad, (g_gelu,) = _grads(tf.gelu, x)
    _close(B.gelu_backward(_up(x), _up(grad)), g_gelu, 1e-5)
    _, grad, (g_tanh,) = _grads(lambda t: tf.gelu(t, approximate="tanh"), x)
    _close(B.gelu_backward(_up(x), _up(grad), "tanh"), g_tanh, 1e-5)
    _, grad, (g_ls,) = _grads(tf.logsigmoid, x)
    _close(B.log_sigmoid_backward(_up(x), _up(grad)), g_ls, 1e-5)
    out, grad, (g_sig,) = _grads(torch.sigmoid, x)
    _close(B.sigmoid_backward(_up(out.detach().numpy()), _up(grad)), g_sig, 1e-5)
    out, grad, (g_relu,) = _grads(torch.relu, x)
    _close(B.relu_backward(_up(out.detach().numpy()), _up(grad)), g_relu)


@pytest.mark.parametrize("causal", [False, True])
def test_attention(causal: bool) -> None:
    q, k, v = _randn(2, 3, 5, 8), _randn(2, 3, 7, 8), _randn(2, 3, 7, 4)
    ref = tf.scaled_dot_product_attention(torch.tensor(q), torch.tensor(k), torch.tensor(v),
                                          is_causal=causal)
    _close(B.attention(_up(q), _up(k), _up(v), None, None, causal), ref)


def test_embedding_and_its_backward() -> None:
    weight, idx = _randn(10, 4), RNG.integers(0, 10, (3, 6)).astype(np.int32)
    out, grad, (gw,) = _grads(lambda w: tf.embedding(torch.tensor(idx, dtype=torch.long), w),
                              weight)
    _close(B.embedding(_up(weight), _up(idx)), out)
    _close(B.embedding_backward(_up(weight), _up(grad), _up(idx)), gw)
