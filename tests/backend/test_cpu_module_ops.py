"""The array-module mixins (module ops and activations) against PyTorch's CPU kernels.

Every op runs on NumPy through a tiny test-only backend class and is compared with
``torch.nn.functional`` (forward) or torch autograd (backward) in float64 and float32.
"""

from __future__ import annotations

import math
from typing import Any

import numpy
import pytest
import scipy.special
import torch
import torch.nn.functional as tf

from burnpy.backend.ops.module_ops import ConvOptions, ConvTransposeOptions, ModuleOps
from burnpy_cpu.array_ops.activation_ops import ArrayActivationOps
from burnpy_cpu.array_ops.module_ops import ArrayModuleOps


class Ops(ArrayModuleOps, ArrayActivationOps, ModuleOps):
    """The mixins on NumPy, plus the protocol's provided ``conv_x_backward``."""

    xp = numpy
    special = scipy.special


class ChunkedOps(Ops):
    """A one-byte im2col budget: every convolution walks its batch one sample at a time."""

    conv_chunk_bytes = 1


TOL = {numpy.float64: 1e-10, numpy.float32: 1e-4}
DTYPES = [numpy.float64, numpy.float32]
# Convolutions run whole-batch in both dtypes, and sample by sample in float64.
CONV_RUNS = [(Ops, numpy.float64), (Ops, numpy.float32), (ChunkedOps, numpy.float64)]


def _rand(rng: numpy.random.Generator, shape: tuple[int, ...], dtype: Any) -> numpy.ndarray:
    return rng.standard_normal(shape).astype(dtype)


def _t(a: numpy.ndarray, grad: bool = False) -> torch.Tensor:
    return torch.tensor(a, requires_grad=grad)


def _close(ours: numpy.ndarray, ref: torch.Tensor, rtol: float) -> None:
    """Same shape and dtype, and equal to ``rtol`` relative to the reference's magnitude."""
    expected = ref.detach().numpy()
    assert ours.shape == expected.shape
    assert ours.dtype == expected.dtype
    scale = float(numpy.abs(expected).max()) if expected.size else 0.0
    numpy.testing.assert_allclose(ours, expected, rtol=rtol, atol=rtol * scale)


# ---- convolution --------------------------------------------------------------------------------
# (in spatial, kernel, stride, padding, dilation, groups, c_in, c_out, batch)
CONV_CASES = [
    ((11,), (3,), (1,), (1,), (1,), 1, 3, 4, 2),
    ((16,), (4,), (3,), (2,), (2,), 2, 4, 6, 3),
    ((9,), (3,), (1,), (0,), (1,), 4, 4, 8, 2),
    ((7,), (1,), (1,), (0,), (1,), 1, 3, 5, 0),
    ((9, 8), (3, 3), (1, 1), (1, 1), (1, 1), 1, 3, 5, 3),
    ((10, 7), (3, 2), (2, 1), (1, 0), (1, 2), 1, 2, 3, 2),
    ((11, 9), (3, 3), (2, 2), (0, 1), (2, 1), 2, 4, 6, 2),
    ((8, 8), (3, 3), (1, 1), (1, 1), (1, 1), 4, 4, 8, 2),
    ((9, 7), (3, 3), (1, 1), (1, 1), (1, 1), 3, 3, 3, 2),
    ((6, 5), (1, 1), (1, 1), (0, 0), (1, 1), 1, 3, 4, 2),
    ((7, 6), (5, 4), (3, 2), (2, 2), (1, 1), 1, 2, 3, 0),
    ((5, 6, 4), (2, 3, 2), (1, 2, 1), (1, 1, 0), (1, 1, 2), 3, 3, 6, 2),
    ((4, 5, 5), (3, 3, 3), (1, 1, 1), (1, 1, 1), (1, 1, 1), 1, 2, 3, 2),
]


@pytest.mark.parametrize(("ops", "dtype"), CONV_RUNS)
@pytest.mark.parametrize("case", CONV_CASES)
def test_conv_and_grads(case: tuple, dtype: Any, ops: type[Ops]) -> None:
    spatial, kernel, stride, padding, dilation, groups, c_in, c_out, batch = case
    rng = numpy.random.default_rng(0)
    x = _rand(rng, (batch, c_in, *spatial), dtype)
    w = _rand(rng, (c_out, c_in // groups, *kernel), dtype)
    b = _rand(rng, (c_out,), dtype)
    tx, tw = _t(x, True), _t(w, True)
    conv = getattr(tf, f"conv{len(spatial)}d")
    ref = conv(tx, tw, _t(b), stride, padding, dilation, groups)
    opts = ConvOptions(stride, padding, dilation, groups)
    rtol = TOL[dtype]
    _close(ops.conv(x, w, b, opts), ref, rtol)
    _close(ops.conv(x, w, None, opts), ref - _t(b).reshape(-1, *(1,) * len(spatial)), rtol)
    grad = _rand(rng, tuple(ref.shape), dtype)
    ref.backward(_t(grad))
    _close(ops.conv_weight_backward(x, w, grad, opts), tw.grad, rtol)
    _close(ops.conv_x_backward(x, w, grad, opts), tx.grad, rtol)


# (in spatial, kernel, stride, padding, padding_out, dilation, groups, c_in, c_out / groups, batch)
CONV_T_CASES = [
    ((7,), (3,), (1,), (0,), (0,), (1,), 1, 3, 4, 2),
    ((6,), (4,), (2,), (1,), (1,), (1,), 2, 4, 3, 3),
    ((5,), (3,), (3,), (2,), (2,), (2,), 1, 2, 2, 2),
    ((6,), (3,), (1,), (1,), (1,), (2,), 1, 2, 3, 2),
    ((5,), (2,), (2,), (0,), (0,), (1,), 1, 2, 3, 0),
    ((6,), (2,), (1,), (2,), (0,), (1,), 1, 2, 3, 2),
    ((8,), (3,), (1,), (1,), (0,), (1,), 2, 6, 2, 2),
    ((5, 4), (3, 3), (1, 1), (1, 1), (0, 0), (1, 1), 1, 3, 4, 3),
    ((4, 5), (3, 2), (2, 1), (1, 0), (1, 0), (1, 2), 1, 2, 3, 2),
    ((5, 5), (3, 3), (2, 2), (0, 1), (1, 0), (2, 1), 2, 4, 3, 2),
    ((6, 5), (3, 3), (1, 1), (1, 2), (1, 0), (2, 2), 4, 4, 1, 2),
    ((4, 4), (2, 2), (2, 2), (0, 0), (0, 0), (1, 1), 1, 3, 2, 0),
    ((3, 4, 3), (2, 3, 2), (1, 2, 1), (0, 1, 1), (0, 1, 0), (1, 1, 1), 1, 2, 3, 2),
    ((3, 3, 4), (3, 3, 3), (1, 1, 1), (1, 1, 1), (0, 0, 0), (1, 1, 1), 1, 2, 2, 2),
]


@pytest.mark.parametrize(("ops", "dtype"), CONV_RUNS)
@pytest.mark.parametrize("case", CONV_T_CASES)
def test_conv_transpose_and_grads(case: tuple, dtype: Any, ops: type[Ops]) -> None:
    spatial, kernel, stride, padding, padding_out, dilation, groups, c_in, c_out_g, batch = case
    rng = numpy.random.default_rng(1)
    x = _rand(rng, (batch, c_in, *spatial), dtype)
    w = _rand(rng, (c_in, c_out_g, *kernel), dtype)
    b = _rand(rng, (c_out_g * groups,), dtype)
    tx, tw = _t(x, True), _t(w, True)
    conv_t = getattr(tf, f"conv_transpose{len(spatial)}d")
    ref = conv_t(tx, tw, _t(b), stride, padding, padding_out, groups, dilation)
    opts = ConvTransposeOptions(stride, padding, padding_out, dilation, groups)
    rtol = TOL[dtype]
    _close(ops.conv_transpose(x, w, b, opts), ref, rtol)
    grad = _rand(rng, tuple(ref.shape), dtype)
    ref.backward(_t(grad))
    _close(ops.conv_transpose_weight_backward(x, w, grad, opts), tw.grad, rtol)
    # The x gradient is a plain conv of grad cropped to x (the protocol's provided op).
    as_conv = ops.conv(grad, w, None, ConvOptions(stride, padding, dilation, groups))
    _close(as_conv[tuple(slice(0, n) for n in x.shape)], tx.grad, rtol)


def test_conv_16_bit_floats_keep_their_dtype() -> None:
    rng = numpy.random.default_rng(2)
    x = _rand(rng, (2, 3, 6, 6), numpy.float32)
    w = _rand(rng, (4, 3, 3, 3), numpy.float32)
    opts = ConvOptions((1, 1), (1, 1), (1, 1), 1)
    ref = Ops.conv(x, w, None, opts)
    bf16 = numpy.dtype("bfloat16")
    for low in (numpy.dtype(numpy.float16), bf16):
        out = Ops.conv(x.astype(low), w.astype(low), None, opts)
        assert out.dtype == low
        numpy.testing.assert_allclose(out.astype(numpy.float32), ref, atol=0.3, rtol=0.05)


# ---- pooling ------------------------------------------------------------------------------------
# (spatial, kernel, stride, padding, ceil_mode, batch)
AVG_CASES = [
    ((10,), (3,), (2,), (1,), False, 2),
    ((11,), (4,), (3,), (2,), True, 2),
    ((7,), (2,), (2,), (0,), True, 2),
    ((6,), (3,), (1,), (1,), False, 0),
    ((7, 8), (3, 2), (2, 1), (1, 1), False, 2),
    ((9, 9), (3, 3), (2, 2), (1, 1), True, 2),
    ((6, 7), (2, 2), (2, 2), (0, 0), True, 2),
    ((5, 6), (5, 4), (2, 3), (2, 2), True, 2),
    ((4, 4), (2, 2), (2, 2), (1, 1), False, 0),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("count_include_pad", [True, False])
@pytest.mark.parametrize("case", AVG_CASES)
def test_avg_pool_and_grad(case: tuple, count_include_pad: bool, dtype: Any) -> None:
    spatial, kernel, stride, padding, ceil_mode, batch = case
    rng = numpy.random.default_rng(3)
    x = _rand(rng, (batch, 3, *spatial), dtype)
    tx = _t(x, True)
    pool = getattr(tf, f"avg_pool{len(spatial)}d")
    ref = pool(tx, kernel, stride, padding, ceil_mode, count_include_pad)
    rtol = TOL[dtype]
    _close(Ops.avg_pool(x, kernel, stride, padding, count_include_pad, ceil_mode), ref, rtol)
    grad = _rand(rng, tuple(ref.shape), dtype)
    ref.backward(_t(grad))
    out = Ops.avg_pool_backward(x, grad, kernel, stride, padding, count_include_pad, ceil_mode)
    _close(out, tx.grad, rtol)


# (spatial, kernel, stride, padding, dilation, ceil_mode, batch)
MAX_CASES = [
    ((10,), (3,), (2,), (1,), (1,), False, 2),
    ((11,), (4,), (3,), (2,), (2,), True, 2),
    ((8,), (2,), (2,), (0,), (3,), True, 0),
    ((7, 8), (3, 2), (2, 1), (1, 1), (1, 2), False, 2),
    ((9, 9), (3, 3), (2, 2), (1, 1), (2, 1), True, 2),
    ((6, 7), (2, 2), (2, 2), (0, 0), (1, 1), True, 2),
    ((5, 5), (3, 3), (1, 1), (1, 1), (1, 1), False, 0),
]


def _max_pool_ref(x: numpy.ndarray, case: tuple) -> tuple[torch.Tensor, torch.Tensor]:
    spatial, kernel, stride, padding, dilation, ceil_mode, _ = case
    pool = getattr(tf, f"max_pool{len(spatial)}d")
    return pool(_t(x), kernel, stride, padding, dilation, ceil_mode, return_indices=True)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("data", ["normal", "ties", "neg_inf", "nan"])
@pytest.mark.parametrize("case", MAX_CASES)
def test_max_pool_with_indices(case: tuple, data: str, dtype: Any) -> None:
    spatial, kernel, stride, padding, dilation, ceil_mode, batch = case
    rng = numpy.random.default_rng(4)
    x = _rand(rng, (batch, 3, *spatial), dtype)
    if data == "ties":
        x = rng.integers(0, 3, x.shape).astype(dtype)
    elif data == "neg_inf":
        x[rng.random(x.shape) < 0.7] = -numpy.inf
    elif data == "nan":
        x[rng.random(x.shape) < 0.2] = numpy.nan
    ref_values, ref_indices = _max_pool_ref(x, case)
    values, indices = Ops.max_pool_with_indices(x, kernel, stride, padding, dilation, ceil_mode)
    numpy.testing.assert_array_equal(values, ref_values.numpy())
    assert values.dtype == dtype
    assert indices.dtype == numpy.int64
    numpy.testing.assert_array_equal(indices, ref_indices.numpy())


# (spatial, output size, batch)
ADAPTIVE_CASES = [
    ((10,), (3,), 2),
    ((7,), (7,), 2),
    ((5,), (8,), 2),
    ((9,), (1,), 2),
    ((4,), (3,), 0),
    ((7, 9), (3, 4), 2),
    ((5, 5), (7, 3), 2),
    ((8, 6), (1, 1), 2),
    ((6, 6), (4, 5), 0),
    ((3, 4, 5), (1, 1, 1), 2),  # global pools: one matrix-vector product
    ((4, 4), (1, 1), 0),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", ADAPTIVE_CASES)
def test_adaptive_avg_pool_and_grad(case: tuple, dtype: Any) -> None:
    spatial, output_size, batch = case
    rng = numpy.random.default_rng(5)
    x = _rand(rng, (batch, 3, *spatial), dtype)
    tx = _t(x, True)
    ref = getattr(tf, f"adaptive_avg_pool{len(spatial)}d")(tx, output_size)
    rtol = TOL[dtype]
    _close(Ops.adaptive_avg_pool(x, output_size), ref, rtol)
    grad = _rand(rng, tuple(ref.shape), dtype)
    ref.backward(_t(grad))
    _close(Ops.adaptive_avg_pool_backward(x, grad), tx.grad, rtol)


def test_adaptive_avg_pool_keeps_infinities_in_their_bins() -> None:
    x = numpy.zeros((1, 1, 8))
    x[0, 0, 1] = numpy.inf
    ref = tf.adaptive_avg_pool1d(_t(x), 3)
    numpy.testing.assert_array_equal(Ops.adaptive_avg_pool(x, (3,)), ref.numpy())


# ---- interpolation ------------------------------------------------------------------------------
INTERP_SIZES = [((5, 7), (9, 4)), ((4, 4), (8, 8)), ((6, 3), (2, 5)), ((1, 4), (3, 7)),
                ((3, 1), (3, 1)), ((7, 5), (7, 11))]
INTERP_MODES = [("nearest", False), ("bilinear", False), ("bilinear", True)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("mode", "align_corners"), INTERP_MODES)
@pytest.mark.parametrize("sizes", INTERP_SIZES)
@pytest.mark.parametrize("batch", [2, 0])
def test_interpolate_and_grad(sizes: tuple, mode: str, align_corners: bool, dtype: Any,
                              batch: int) -> None:
    spatial, output_size = sizes
    rng = numpy.random.default_rng(6)
    x = _rand(rng, (batch, 3, *spatial), dtype)
    tx = _t(x, True)
    kwargs = {"align_corners": align_corners} if mode == "bilinear" else {}
    ref = tf.interpolate(tx, size=output_size, mode=mode, **kwargs)
    rtol = TOL[dtype]
    _close(Ops.interpolate(x, output_size, mode, align_corners), ref, rtol)
    grad = _rand(rng, tuple(ref.shape), dtype)
    ref.backward(_t(grad))
    _close(Ops.interpolate_backward(x, grad, output_size, mode, align_corners), tx.grad, rtol)


# ---- activations --------------------------------------------------------------------------------
ACT_TOL = {numpy.float64: 1e-12, numpy.float32: 1e-6}
EXTREMES = [-1000.0, -100.0, -30.0, -5.0, -1e-8, 0.0, 1e-8, 5.0, 20.0, 100.0, 1000.0]


def _act_input(dtype: Any) -> numpy.ndarray:
    """Normal samples (scaled to reach both tails) followed by extreme values."""
    rng = numpy.random.default_rng(7)
    return numpy.concatenate([rng.standard_normal(200) * 4, EXTREMES]).astype(dtype)


def _act_close(ours: numpy.ndarray, ref: torch.Tensor, dtype: Any, atol: float = 0.0) -> None:
    """Equal to ``ACT_TOL`` relative; differences below the smallest normal number (torch's
    float32 kernels flush tails such as sigmoid(-100) to zero) are ignored."""
    expected = ref.detach().numpy()
    assert ours.dtype == expected.dtype
    numpy.testing.assert_allclose(ours, expected, rtol=ACT_TOL[dtype],
                                  atol=max(atol, float(numpy.finfo(dtype).tiny)))


def _gelu_atol(dtype: Any, float32_atol: float) -> float:
    """Absolute slack for gelu against torch, whose 1 + erf(x) and 1 + tanh(u) cancel in the
    left tail (ours uses erfc and sigmoid): a few eps in float64; in float32 torch's erf and
    tanh approximations are off by ~1e-6 absolute there (ours is checked exactly below)."""
    return float32_atol if dtype == numpy.float32 else 8 * float(numpy.finfo(dtype).eps)


ACTIVATIONS = [
    ("relu", lambda x: Ops.relu(x), torch.relu),
    ("leaky_relu", lambda x: Ops.leaky_relu(x, 0.01), lambda t: tf.leaky_relu(t, 0.01)),
    ("leaky_relu_steep", lambda x: Ops.leaky_relu(x, 2.5), lambda t: tf.leaky_relu(t, 2.5)),
    ("leaky_relu_negative", lambda x: Ops.leaky_relu(x, -0.5),
     lambda t: tf.leaky_relu(t, -0.5)),
    ("gelu", lambda x: Ops.gelu(x), tf.gelu),
    ("gelu_tanh", lambda x: Ops.gelu(x, "tanh"), lambda t: tf.gelu(t, approximate="tanh")),
    ("sigmoid", lambda x: Ops.sigmoid(x), torch.sigmoid),
    ("log_sigmoid", lambda x: Ops.log_sigmoid(x), tf.logsigmoid),
    ("silu", lambda x: Ops.silu(x), tf.silu),
    ("hard_sigmoid", lambda x: Ops.hard_sigmoid(x, 1 / 6, 0.5), tf.hardsigmoid),
    ("softplus", lambda x: Ops.softplus(x), tf.softplus),
    ("softplus_beta", lambda x: Ops.softplus(x, 2.0), lambda t: tf.softplus(t, 2.0)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("name", "ours", "theirs"), ACTIVATIONS)
def test_activation(name: str, ours: Any, theirs: Any, dtype: Any) -> None:
    x = _act_input(dtype)
    atol = 0.0
    if name.startswith("gelu"):
        atol = _gelu_atol(dtype, 2e-6)
    elif name == "hard_sigmoid":
        # torch rounds (x + 3) / 6, ours x / 6 + 0.5: they differ by an ulp of 0.5 near 0.
        atol = float(numpy.finfo(dtype).eps)
    _act_close(ours(x), theirs(_t(x)), dtype, atol)


@pytest.mark.parametrize(("name", "ours", "theirs"), ACTIVATIONS)
def test_activation_propagates_nan(name: str, ours: Any, theirs: Any) -> None:
    x = numpy.array([numpy.nan, -1.0, numpy.nan, 2.0])
    numpy.testing.assert_array_equal(numpy.isnan(ours(x)), numpy.isnan(theirs(_t(x)).numpy()))


def test_gelu_is_accurate_in_float32() -> None:
    x = _act_input(numpy.float32)
    xd = x.astype(numpy.float64)
    exact = 0.5 * xd * scipy.special.erfc(-xd / math.sqrt(2))
    # float32 is computed in float32 (issue 17: 1e-6 relative). The kernel forms x^2 exactly
    # (hi + lo by FMA), so no x^2 condition factor applies: it measures 5.8e-7 at most over
    # [-16, 16]. Results below the smallest normal float32 only have absolute accuracy.
    info = numpy.finfo(numpy.float32)
    normal = numpy.abs(exact) >= info.tiny
    err = numpy.abs(Ops.gelu(x) - exact)
    assert (err[normal] / numpy.abs(exact[normal])).max() < 7e-7
    assert err[~normal].max() <= 2 * info.smallest_subnormal


def test_sigmoid_tails_are_accurate() -> None:
    x = numpy.array([-740.0, -700.0, -40.0, 40.0, 700.0])
    # Beyond |x| = 40, sigmoid is exp(x) on the left and 1 on the right to double precision.
    tails = numpy.where(x < 0, numpy.exp(x), 1.0)
    numpy.testing.assert_allclose(Ops.sigmoid(x), tails, rtol=1e-14)
    numpy.testing.assert_allclose(Ops.log_sigmoid(x), -numpy.logaddexp(0, -x), rtol=1e-14)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_backward(approximate: str, dtype: Any) -> None:
    x = _act_input(dtype)
    grad = numpy.random.default_rng(8).standard_normal(x.shape).astype(dtype)
    tx = _t(x, True)
    tf.gelu(tx, approximate=approximate).backward(_t(grad))
    ours = Ops.gelu_backward(x, grad, approximate)
    _act_close(ours, tx.grad, dtype, atol=_gelu_atol(dtype, 2e-5))


@pytest.mark.parametrize("dtype", DTYPES)
def test_output_based_backwards(dtype: Any) -> None:
    x = _act_input(dtype)
    grad = numpy.random.default_rng(9).standard_normal(x.shape).astype(dtype)
    for ours_fwd, ours_bwd, theirs in [(Ops.relu, Ops.relu_backward, torch.relu),
                                       (Ops.sigmoid, Ops.sigmoid_backward, torch.sigmoid)]:
        tx = _t(x, True)
        theirs(tx).backward(_t(grad))
        _act_close(ours_bwd(ours_fwd(x), grad), tx.grad, dtype)
    tx = _t(x, True)
    tf.logsigmoid(tx).backward(_t(grad))
    _act_close(Ops.log_sigmoid_backward(x, grad), tx.grad, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_softmax_and_log_softmax(dim: int, dtype: Any) -> None:
    rng = numpy.random.default_rng(10)
    x = (rng.standard_normal((4, 5, 6)) * 5).astype(dtype)
    x[0, 0, :] = [1000.0, -1000.0, 100.0, -100.0, 0.0, 999.0]
    x[1, :, 0] = [-1000.0, -1000.0, -999.0, -1000.0, -1001.0]
    _act_close(Ops.softmax(x, dim), torch.softmax(_t(x), dim), dtype, atol=1e-300)
    _act_close(Ops.log_softmax(x, dim), torch.log_softmax(_t(x), dim), dtype)


@pytest.mark.parametrize("dtype", [numpy.dtype(numpy.float16), numpy.dtype("bfloat16")])
def test_activations_keep_16_bit_dtypes(dtype: Any) -> None:
    x = numpy.linspace(-6, 6, 25).astype(dtype)
    wide = x.astype(numpy.float32)
    for op in (Ops.gelu, Ops.sigmoid, Ops.silu, Ops.log_sigmoid, Ops.softplus, Ops.relu,
               lambda a: Ops.softmax(a, 0), lambda a: Ops.log_softmax(a, 0)):
        out = op(x)
        assert out.dtype == dtype
        numpy.testing.assert_allclose(out.astype(numpy.float32), op(wide), rtol=2e-2,
                                      atol=2e-2)


def test_empty_tensors() -> None:
    empty = numpy.zeros((0, 3, 5), numpy.float32)
    for op in (Ops.relu, Ops.gelu, Ops.sigmoid, Ops.log_sigmoid, Ops.silu, Ops.softplus,
               lambda a: Ops.softmax(a, 0), lambda a: Ops.log_softmax(a, 0),
               lambda a: Ops.softmax(a, 2), lambda a: Ops.hard_sigmoid(a, 0.2, 0.5)):
        out = op(empty)
        assert out.shape == empty.shape
        assert out.dtype == empty.dtype
    zero_channels = numpy.zeros((2, 0, 6, 6), numpy.float64)
    w = numpy.zeros((4, 0, 3, 3))
    out = Ops.conv(zero_channels, w, None, ConvOptions((1, 1), (1, 1), (1, 1), 1))
    assert out.shape == (2, 4, 6, 6)
    assert not out.any()
    assert math.prod(Ops.max_pool_with_indices(zero_channels, (2, 2), (2, 2), (0, 0), (1, 1),
                                               False)[1].shape) == 0
