"""Both code paths of the array-module convolutions and max pools against PyTorch's CPU kernels.

Convolutions take channels-last im2col rows on small output planes and channels-first
columns on large ones (``ArrayModuleOps.conv_rows_max_plane``); max pools scan a tap-major
copy of the windows, chunk by chunk, and retry NaN-holding chunks. Each test forces a path
with a test-only backend class, checks that the path really ran, and compares values (and
max-pool indices, exactly) with torch in float64 and float32.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy
import pytest
import scipy.special
import torch
import torch.nn.functional as tf

from burnpy.backend.ops.module_ops import ConvOptions, ModuleOps
from burnpy_cpu.array_ops import module_ops
from burnpy_cpu.array_ops.activation_ops import ArrayActivationOps
from burnpy_cpu.array_ops.module_ops import ArrayModuleOps


class Ops(ArrayModuleOps, ArrayActivationOps, ModuleOps):
    """The mixins on NumPy with their default path choices."""

    xp = numpy
    special = scipy.special


class RowsOps(Ops):
    """Channels-last rows for every plane size (where their runs are long enough), never
    Winograd."""

    conv_rows_max_plane = 1 << 30
    conv_winograd_min_channels = 1 << 30


class ColsOps(Ops):
    """Channels-first columns always."""

    conv_rows_max_plane = 0
    conv_winograd_min_channels = 1 << 30


class ChunkedRowsOps(RowsOps):
    """Rows (and max-pool taps) one sample at a time."""

    conv_chunk_bytes = 1


class ChunkedOps(Ops):
    """Default paths, one sample at a time."""

    conv_chunk_bytes = 1


TOL = {numpy.float64: 1e-10, numpy.float32: 1e-4}
DTYPES = [numpy.float64, numpy.float32]


def _close(ours: numpy.ndarray, ref: torch.Tensor, rtol: float) -> None:
    """Same shape and dtype, and equal to ``rtol`` relative to the reference's magnitude."""
    expected = ref.detach().numpy()
    assert ours.shape == expected.shape
    assert ours.dtype == expected.dtype
    scale = float(numpy.abs(expected).max()) if expected.size else 0.0
    numpy.testing.assert_allclose(ours, expected, rtol=rtol, atol=rtol * scale)


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Counts of calls to the rows helpers (``_conv_by_rows``, ``_row_chunks``)."""
    counts = {"_conv_by_rows": 0, "_row_chunks": 0}

    def spy(name: str) -> Callable[..., Any]:
        real = getattr(module_ops, name)

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            counts[name] += 1
            return real(*args, **kwargs)

        return wrapped

    for name in counts:
        monkeypatch.setattr(module_ops, name, spy(name))
    return counts


# ---- convolution --------------------------------------------------------------------------------
# (in spatial, kernel, stride, padding, dilation, c_in, c_out, batch); one group, and every case
# long-run enough for the rows path when its plane limit allows.
CONV_CASES = [
    ((4, 4), (3, 3), (1, 1), (1, 1), (1, 1), 16, 32, 5),  # the digits CNN's second conv
    ((8, 8), (3, 3), (1, 1), (1, 1), (1, 1), 8, 16, 3),
    ((16, 16), (3, 3), (1, 1), (1, 1), (1, 1), 8, 6, 2),  # a plane over the default limit
    ((9, 7), (3, 2), (2, 1), (1, 0), (1, 2), 8, 5, 3),
    ((8, 9), (3, 3), (2, 2), (0, 3), (1, 1), 6, 4, 2),  # cropped rows, wide zero padding
    ((6, 6), (1, 1), (1, 1), (0, 0), (1, 1), 12, 7, 2),
    ((10,), (3,), (2,), (1,), (1,), 6, 4, 3),
    ((4, 5, 3), (2, 3, 2), (1, 2, 1), (1, 1, 0), (1, 1, 2), 4, 3, 2),
    ((5, 5), (3, 3), (1, 1), (1, 1), (1, 1), 9, 4, 0),  # an empty batch
]


def _conv_case(case: tuple, dtype: Any) -> tuple[Any, ...]:
    spatial, kernel, stride, padding, dilation, c_in, c_out, batch = case
    rng = numpy.random.default_rng(len(spatial) * 100 + c_in)
    x = rng.standard_normal((batch, c_in, *spatial)).astype(dtype)
    w = rng.standard_normal((c_out, c_in, *kernel)).astype(dtype)
    b = rng.standard_normal(c_out).astype(dtype)
    return x, w, b, ConvOptions(stride, padding, dilation, 1)


def _conv_ref(x: numpy.ndarray, w: numpy.ndarray, b: numpy.ndarray, opts: ConvOptions,
              grad: numpy.ndarray | None = None) -> tuple[torch.Tensor, ...]:
    """torch's output and, for ``grad``, its x, weight and bias gradients."""
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    conv = getattr(tf, f"conv{x.ndim - 2}d")
    out = conv(tx, tw, tb, opts.stride, opts.padding, opts.dilation, 1)
    if grad is None:
        return (out,)
    out.backward(torch.tensor(grad))
    return out, tx.grad, tw.grad, tb.grad


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("ops", [RowsOps, ColsOps, ChunkedRowsOps])
@pytest.mark.parametrize("case", CONV_CASES)
def test_conv_paths_match_torch(case: tuple, ops: type[Ops], dtype: Any,
                                calls: dict[str, int]) -> None:
    x, w, b, opts = _conv_case(case, dtype)
    rtol = TOL[dtype]
    ref = _conv_ref(x, w, b, opts)[0]
    _close(ops.conv(x, w, b, opts), ref, rtol)
    assert calls["_conv_by_rows"] == (ops is not ColsOps)
    grad = numpy.random.default_rng(7).standard_normal(tuple(ref.shape)).astype(dtype)
    _, gx, gw, gb = _conv_ref(x, w, b, opts, grad)
    calls["_row_chunks"] = 0
    _close(ops.conv_weight_backward(x, w, grad, opts), gw, rtol)
    assert calls["_row_chunks"] == (ops is not ColsOps)
    _close(ops.conv_x_backward(x, w, grad, opts), gx, rtol)
    _close(ops.conv_bias_backward(grad), gb, rtol)


@pytest.mark.parametrize(("spatial", "rows"), [((4, 4), True), ((8, 8), True),
                                               ((14, 14), True), ((16, 16), False),
                                               ((28, 28), False)])
def test_conv_default_path_follows_the_plane_size(spatial: tuple[int, int], rows: bool,
                                                  calls: dict[str, int]) -> None:
    x, w, b, opts = _conv_case((spatial, (3, 3), (1, 1), (1, 1), (1, 1), 16, 8, 2),
                               numpy.float64)
    _close(Ops.conv(x, w, b, opts), _conv_ref(x, w, b, opts)[0], TOL[numpy.float64])
    assert calls["_conv_by_rows"] == rows


@pytest.mark.parametrize("ops", [RowsOps, ColsOps])
@pytest.mark.parametrize(("c_in", "c_out", "rows"), [(16, 32, True), (4, 16, True),
                                                     (1, 16, False), (32, 16, True)])
def test_conv_x_backward_route(c_in: int, c_out: int, rows: bool, ops: type[Ops],
                               calls: dict[str, int]) -> None:
    """The x gradient at stride 1 is a conv of grad with the flipped kernel on rows while
    its channels grow at most 4x (else col2im, or the columns conv); every route is exact."""
    dtype = numpy.float64
    x, w, b, opts = _conv_case(((8, 8), (3, 3), (1, 1), (1, 1), (1, 1), c_in, c_out, 3), dtype)
    grad = numpy.random.default_rng(3).standard_normal((3, c_out, 8, 8)).astype(dtype)
    _, gx, _, _ = _conv_ref(x, w, b, opts, grad)
    _close(ops.conv_x_backward(x, w, grad, opts), gx, TOL[dtype])
    assert calls["_conv_by_rows"] == (rows and ops is RowsOps)


@pytest.mark.parametrize("groups", [2, 8])
def test_grouped_conv_stays_on_columns(groups: int, calls: dict[str, int]) -> None:
    dtype = numpy.float64
    rng = numpy.random.default_rng(groups)
    x = rng.standard_normal((3, 16, 4, 4)).astype(dtype)
    w = rng.standard_normal((16, 16 // groups, 3, 3)).astype(dtype)
    grad = rng.standard_normal((3, 16, 4, 4)).astype(dtype)
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    ref = tf.conv2d(tx, tw, None, 1, 1, 1, groups)
    ref.backward(torch.tensor(grad))
    opts = ConvOptions((1, 1), (1, 1), (1, 1), groups)
    _close(RowsOps.conv(x, w, None, opts), ref, TOL[dtype])
    _close(RowsOps.conv_weight_backward(x, w, grad, opts), tw.grad, TOL[dtype])
    _close(RowsOps.conv_x_backward(x, w, grad, opts), tx.grad, TOL[dtype])
    assert calls == {"_conv_by_rows": 0, "_row_chunks": 0}


def test_conv_rows_path_keeps_16_bit_dtypes() -> None:
    x, w, b, opts = _conv_case(((4, 4), (3, 3), (1, 1), (1, 1), (1, 1), 16, 8, 2),
                               numpy.float32)
    ref = ColsOps.conv(x, w, b, opts)
    for low in (numpy.dtype(numpy.float16), numpy.dtype("bfloat16")):
        out = RowsOps.conv(x.astype(low), w.astype(low), b.astype(low), opts)
        assert out.dtype == low
        numpy.testing.assert_allclose(out.astype(numpy.float32), ref, atol=0.5, rtol=0.05)


# ---- max pool -----------------------------------------------------------------------------------
# (spatial, kernel, stride, padding, dilation, ceil_mode, channels, batch)
POOL_CASES = [
    ((8, 8), (2, 2), (2, 2), (0, 0), (1, 1), False, 16, 4),  # the digits CNN's pools
    ((4, 4), (2, 2), (2, 2), (0, 0), (1, 1), False, 32, 3),
    ((7, 8), (3, 2), (2, 1), (1, 1), (1, 2), False, 3, 2),
    ((9, 9), (3, 3), (2, 2), (1, 1), (2, 1), True, 2, 3),
    ((6, 7), (2, 2), (2, 2), (0, 0), (1, 1), True, 3, 2),
    ((5, 5), (3, 3), (1, 1), (1, 1), (1, 1), False, 2, 2),
    ((11,), (4,), (3,), (2,), (2,), True, 3, 2),
    ((6, 6), (2, 2), (2, 2), (0, 0), (1, 1), False, 2, 0),
]


def _pool_input(case: tuple, dtype: Any, nan: bool) -> numpy.ndarray:
    """Small integers (so windows tie often), a few ``-inf`` and, with ``nan``, NaNs."""
    spatial, *_, channels, batch = case
    rng = numpy.random.default_rng(11)
    x = rng.integers(-2, 3, (batch, channels, *spatial)).astype(dtype)
    x[rng.random(x.shape) < 0.1] = -numpy.inf
    if nan:
        x[rng.random(x.shape) < 0.15] = numpy.nan
    return x


def _pool_ref(x: numpy.ndarray, case: tuple,
              grad: numpy.ndarray | None = None) -> tuple[torch.Tensor, ...]:
    kernel, stride, padding, dilation, ceil_mode = case[1:6]
    tx = torch.tensor(x, requires_grad=True)
    pool = getattr(tf, f"max_pool{x.ndim - 2}d")
    out, idx = pool(tx, kernel, stride, padding, dilation, ceil_mode, return_indices=True)
    if grad is None:
        return out, idx
    out.backward(torch.tensor(grad))
    return out, idx, tx.grad


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("nan", [False, True])
@pytest.mark.parametrize("ops", [Ops, ChunkedOps])
@pytest.mark.parametrize("case", POOL_CASES)
def test_max_pool_ties_and_nan_match_torch(case: tuple, ops: type[Ops], nan: bool,
                                           dtype: Any) -> None:
    x = _pool_input(case, dtype, nan)
    ref, ref_idx = _pool_ref(x, case)
    kernel, stride, padding, dilation, ceil_mode = case[1:6]
    out, idx = ops.max_pool_with_indices(x, kernel, stride, padding, dilation, ceil_mode)
    assert out.dtype == dtype
    numpy.testing.assert_array_equal(out, ref.detach().numpy())  # NaNs compare equal here
    assert idx.dtype == numpy.int64
    numpy.testing.assert_array_equal(idx, ref_idx.numpy())
    if nan and x.size:
        assert numpy.isnan(out).any()  # the NaN retry really ran


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", POOL_CASES)
def test_max_pool_backward_matches_torch(case: tuple, dtype: Any) -> None:
    """Overlapping windows send several grads to one input; ties send them to the first."""
    x = _pool_input(case, dtype, nan=False)
    kernel, stride, padding, dilation, ceil_mode = case[1:6]
    out, idx = Ops.max_pool_with_indices(x, kernel, stride, padding, dilation, ceil_mode)
    grad = numpy.random.default_rng(5).standard_normal(out.shape).astype(dtype)
    _, _, ref_grad = _pool_ref(x, case, grad)
    _close(Ops.max_pool_with_indices_backward(x, grad, idx), ref_grad, TOL[dtype])


def test_max_pool_backward_sums_repeated_indices() -> None:
    x = numpy.zeros((1, 2, 2, 2))
    idx = numpy.array([[[[3, 3], [0, 3]]], [[[1, 1], [1, 2]]]]).reshape(1, 2, 2, 2)
    grad = numpy.arange(1.0, 9.0).reshape(1, 2, 2, 2)
    out = Ops.max_pool_with_indices_backward(x, grad, idx)
    numpy.testing.assert_array_equal(out, [[[[3.0, 0.0], [0.0, 7.0]],
                                            [[0.0, 18.0], [8.0, 0.0]]]])


def _winograd_spy(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Counts calls to the Winograd conv and weight-gradient helpers."""
    counts = {"_conv_winograd": 0, "_weight_grad_winograd": 0}

    def spy(name: str) -> Callable[..., Any]:
        real = getattr(module_ops, name)

        def wrapped(*args: Any) -> Any:
            counts[name] += 1
            return real(*args)

        return wrapped

    for name in counts:
        monkeypatch.setattr(module_ops, name, spy(name))
    return counts


# (spatial, padding, c_in, c_out, batch): full and partial 16-channel blocks, odd and tiny
# planes, wide padding, a plane as wide as the transforms' scratch allows.
WINOGRAD_CASES = [
    ((16, 16), 1, 32, 32, 2),
    ((18, 19), 0, 32, 32, 1),
    ((16, 21), 1, 32, 32, 1),
    ((18, 16), 2, 32, 32, 3),
    ((16, 16), 1, 16, 16, 3),  # the ResNet's first stage
    ((4, 4), 1, 64, 64, 16),  # its last stage
    ((7, 5), 1, 24, 40, 2),  # partial channel blocks on both sides
    ((5, 9), 0, 17, 16, 2),
    ((6, 64), 1, 20, 16, 1),
    ((20, 20), 1, 16, 80, 1),  # x gradient: a transposed conv 5x wider in than out
    ((8, 8), 1, 16, 32, 0),  # an empty batch
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("spatial", "padding", "c_in", "c_out", "batch"), WINOGRAD_CASES)
@pytest.mark.parametrize("ops", [Ops, ChunkedOps])
def test_winograd_conv_matches_torch(spatial: tuple[int, int], padding: int, c_in: int,
                                     c_out: int, batch: int, ops: type[Ops], dtype: Any,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """3x3 stride-1 convs with 16 channels or more on both sides run as Winograd F(2x2,
    3x3), forward, x gradient (its conv with the flipped kernel) and weight gradient (in the
    Winograd domain), one chunk or one sample at a time, within float32's rounding of the
    direct conv."""
    ran = _winograd_spy(monkeypatch)
    x, w, b, opts = _conv_case((spatial, (3, 3), (1, 1), (padding, padding), (1, 1), c_in,
                                c_out, batch), dtype)
    rtol = 1e-5 if dtype == numpy.float32 else 1e-12
    ref = _conv_ref(x, w, b, opts)[0]
    _close(ops.conv(x, w, b, opts), ref, rtol)
    grad = numpy.random.default_rng(5).standard_normal(tuple(ref.shape)).astype(dtype)
    _, gx, gw, _ = _conv_ref(x, w, b, opts, grad)
    _close(ops.conv_x_backward(x, w, grad, opts), gx, rtol)
    _close(ops.conv_weight_backward(x, w, grad, opts), gw, rtol)
    # (an empty batch has no tiles for the weight gradient's GEMMs: it takes the rows)
    assert ran == {"_conv_winograd": 2, "_weight_grad_winograd": int(batch > 0)}


# (spatial, kernel, stride, padding, dilation, c_in, c_out, groups): each misses one condition.
WINOGRAD_MISSES = [
    ((16, 16), (3, 3), (1, 1), (1, 1), (1, 1), 8, 32, 1),  # too few input channels
    ((16, 16), (3, 3), (1, 1), (1, 1), (1, 1), 32, 8, 1),  # too few output channels
    ((16, 16), (3, 3), (2, 2), (1, 1), (1, 1), 32, 32, 1),  # strided
    ((16, 16), (3, 3), (1, 1), (2, 2), (2, 2), 32, 32, 1),  # dilated
    ((16, 16), (3, 3), (1, 1), (1, 1), (1, 1), 32, 32, 2),  # grouped
    ((16, 16), (5, 5), (1, 1), (2, 2), (1, 1), 32, 32, 1),  # not 3x3
    ((3, 3), (3, 3), (1, 1), (1, 1), (1, 1), 32, 32, 1),  # a plane under 16 outputs
    ((4, 66), (3, 3), (1, 1), (1, 1), (1, 1), 16, 16, 1),  # wider than the scratch rows
]


def test_winograd_keeps_16_bit_dtypes(monkeypatch: pytest.MonkeyPatch) -> None:
    """16-bit inputs are widened to float32 for the Winograd path and narrowed back."""
    ran = _winograd_spy(monkeypatch)
    x, w, b, opts = _conv_case(((6, 6), (3, 3), (1, 1), (1, 1), (1, 1), 16, 16, 4),
                               numpy.float32)
    grad = numpy.random.default_rng(2).standard_normal((4, 16, 6, 6)).astype(numpy.float32)
    want = [ColsOps.conv(x, w, b, opts), ColsOps.conv_weight_backward(x, w, grad, opts)]
    for low in (numpy.dtype(numpy.float16), numpy.dtype("bfloat16")):
        xl, wl, bl, gl = (a.astype(low) for a in (x, w, b, grad))
        for got, ref in zip([Ops.conv(xl, wl, bl, opts),
                             Ops.conv_weight_backward(xl, wl, gl, opts)], want, strict=True):
            assert got.dtype == low
            scale = float(numpy.abs(ref).max())
            numpy.testing.assert_allclose(got.astype(numpy.float32), ref, rtol=0.05,
                                          atol=0.02 * scale)
    assert ran == {"_conv_winograd": 2, "_weight_grad_winograd": 2}


def test_winograd_weight_gradient_needs_enough_tiles(monkeypatch: pytest.MonkeyPatch) -> None:
    """With fewer tiles than half the channels, the forward and x gradient still run as
    Winograd but the weight gradient takes the im2col rows; all three are torch's."""
    ran = _winograd_spy(monkeypatch)
    x, w, b, opts = _conv_case(((4, 4), (3, 3), (1, 1), (1, 1), (1, 1), 64, 48, 2),
                               numpy.float64)
    ref = _conv_ref(x, w, b, opts)[0]
    grad = numpy.random.default_rng(5).standard_normal(tuple(ref.shape))
    _, gx, gw, _ = _conv_ref(x, w, b, opts, grad)
    _close(Ops.conv(x, w, b, opts), ref, TOL[numpy.float64])
    _close(Ops.conv_x_backward(x, w, grad, opts), gx, TOL[numpy.float64])
    _close(Ops.conv_weight_backward(x, w, grad, opts), gw, TOL[numpy.float64])
    assert ran == {"_conv_winograd": 2, "_weight_grad_winograd": 0}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", WINOGRAD_MISSES)
def test_winograd_gate_misses_match_torch(case: tuple, dtype: Any,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Convs outside the Winograd gate take the im2col paths, values and all gradients
    still torch's."""
    ran = _winograd_spy(monkeypatch)
    spatial, kernel, stride, padding, dilation, c_in, c_out, groups = case
    rng = numpy.random.default_rng(c_in + c_out)
    x = rng.standard_normal((2, c_in, *spatial)).astype(dtype)
    w = rng.standard_normal((c_out, c_in // groups, *kernel)).astype(dtype)
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    ref = tf.conv2d(tx, tw, None, stride, padding, dilation, groups)
    grad = rng.standard_normal(tuple(ref.shape)).astype(dtype)
    ref.backward(torch.tensor(grad))
    opts = ConvOptions(stride, padding, dilation, groups)
    rtol = TOL[dtype]
    _close(Ops.conv(x, w, None, opts), ref, rtol)
    _close(Ops.conv_x_backward(x, w, grad, opts), tx.grad, rtol)
    _close(Ops.conv_weight_backward(x, w, grad, opts), tw.grad, rtol)
    assert ran == {"_conv_winograd": 0, "_weight_grad_winograd": 0}


@pytest.mark.parametrize("bad", [numpy.inf, -numpy.inf, numpy.nan])
def test_winograd_leaves_non_finite_inputs_to_the_direct_paths(
        bad: float, monkeypatch: pytest.MonkeyPatch) -> None:
    """An infinity in x or the output gradient would meet a subtraction in Winograd's
    transforms and turn into NaN where torch's direct conv gives +-inf: such convs take the
    im2col paths, and every value, infinite or NaN, is torch's. (An infinite weight is
    checked too, but meets padding's zeros in im2col as in torch's forward, whose NaNs its
    own x gradient does not share: no one pattern to match.)"""
    ran = _winograd_spy(monkeypatch)
    rng = numpy.random.default_rng(3)
    x = rng.standard_normal((2, 16, 8, 8))
    w = rng.standard_normal((16, 16, 3, 3))
    grad = rng.standard_normal((2, 16, 8, 8))
    opts = ConvOptions((1, 1), (1, 1), (1, 1), 1)
    for where in (0, 2):
        x2, w2, g2 = x.copy(), w.copy(), grad.copy()
        (x2, w2, g2)[where][0, 3, 2, 1] = bad
        tx, tw = torch.tensor(x2, requires_grad=True), torch.tensor(w2, requires_grad=True)
        ref = tf.conv2d(tx, tw, None, 1, 1)
        ref.backward(torch.tensor(g2))
        for got, want in ((Ops.conv(x2, w2, None, opts), ref),
                          (Ops.conv_x_backward(x2, w2, g2, opts), tx.grad),
                          (Ops.conv_weight_backward(x2, w2, g2, opts), tw.grad)):
            numpy.testing.assert_allclose(got, want.detach().numpy(), rtol=1e-10, atol=1e-10)
    # (only the convs with every input finite ran as Winograd: the x gradient with bad x,
    # and the forward, x gradient with bad grad)
    assert ran["_weight_grad_winograd"] == 0
    assert ran["_conv_winograd"] == 2
