"""The CPU backend's fused batch norm and cross entropy against the protocol's compositions
and torch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import burnpy.nn.functional as F
from burnpy.backend.errors import IndexOutOfBoundsError, InvalidArgumentError, ShapeError
from burnpy.backend.ops.module_ops import ModuleOps
from burnpy.tensor import Tensor
from burnpy_cpu import CpuBackend

SHAPES = [(4, 3, 5, 2), (6, 4), (2, 3, 7)]


def _draw(shape: tuple[int, ...], dtype: str, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * 2.0 + 0.5).astype(dtype)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("affine", [True, False])
def test_fused_batch_norm_matches_the_protocol_composition(shape: tuple[int, ...], dtype: str,
                                                          affine: bool) -> None:
    x, grad = _draw(shape, dtype), _draw(shape, dtype, seed=1)
    c = shape[1]
    weight = _draw((c,), dtype, seed=2) if affine else None
    bias = _draw((c,), dtype, seed=3) if affine else None
    rtol = 1e-12 if dtype == "float64" else 2e-5
    fused = CpuBackend.batch_norm(x, weight, bias, 1e-3)
    composed = ModuleOps.batch_norm.__func__(CpuBackend, x, weight, bias, 1e-3)
    for got, want in zip(fused, composed, strict=True):
        assert got.dtype == np.dtype(dtype) and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)
    fused = CpuBackend.batch_norm_backward(x, weight, grad, 1e-3)
    composed = ModuleOps.batch_norm_backward.__func__(CpuBackend, x, weight, grad, 1e-3)
    for got, want in zip(fused, composed, strict=True):
        assert got.dtype == np.dtype(dtype) and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=rtol * 10, atol=rtol * 10)


def test_fused_batch_norm_backward_matches_torch_autograd() -> None:
    x, grad = _draw((5, 3, 4), "float64"), _draw((5, 3, 4), "float64", seed=1)
    weight, bias = _draw((3,), "float64", seed=2), _draw((3,), "float64", seed=3)
    dx, dw, db = CpuBackend.batch_norm_backward(x, weight, grad, 1e-5)
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, weight, bias))
    torch.nn.functional.batch_norm(tx, None, None, tw, tb, training=True).backward(
        torch.from_numpy(grad))
    for got, want in ((dx, tx.grad), (dw, tw.grad), (db, tb.grad)):
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-10, atol=1e-12)


def test_half_precision_batch_norm_computes_in_float32() -> None:
    x = _draw((8, 2, 3), "float16")
    y, mean, var = CpuBackend.batch_norm(x, None, None, 1e-5)
    assert y.dtype == mean.dtype == var.dtype == np.float16
    want = torch.nn.functional.batch_norm(torch.from_numpy(x).float(), None, None,
                                          training=True)
    np.testing.assert_allclose(y.astype(np.float32), want.numpy(), rtol=2e-3, atol=2e-3)


def test_functional_batch_norm_updates_running_statistics_in_place_like_torch() -> None:
    x = _draw((6, 3, 4), "float64")
    mean = Tensor.from_data(np.zeros(3), backend=CpuBackend)
    var = Tensor.from_data(np.ones(3), backend=CpuBackend)
    y = F.batch_norm(Tensor.from_data(x, backend=CpuBackend), mean, var, training=True,
                     momentum=0.3)
    t_mean, t_var = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    want = torch.nn.functional.batch_norm(torch.from_numpy(x), t_mean, t_var, training=True,
                                          momentum=0.3)
    np.testing.assert_allclose(y.to_numpy(), want.numpy(), rtol=1e-12)
    np.testing.assert_allclose(mean.to_numpy(), t_mean.numpy(), rtol=1e-12)
    np.testing.assert_allclose(var.to_numpy(), t_var.numpy(), rtol=1e-12)


def test_functional_batch_norm_errors_name_the_problem() -> None:
    x = Tensor.from_data(_draw((4, 3), "float64"), backend=CpuBackend)
    with pytest.raises(InvalidArgumentError, match="running_mean and running_var"):
        F.batch_norm(x)
    with pytest.raises(ShapeError, match=r"\(3,\)"):
        F.batch_norm(x, weight=Tensor.from_data(np.ones(4), backend=CpuBackend), training=True)
    with pytest.raises(ShapeError, match="more than 1 value per channel"):
        F.batch_norm(Tensor.from_data(np.ones((1, 3)), backend=CpuBackend), training=True)


# ---- cross entropy -------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
@pytest.mark.parametrize("ignore_index", [-100, 2])
def test_fused_cross_entropy_matches_the_protocol_composition(dtype: str,
                                                              ignore_index: int) -> None:
    logits, grad = _draw((7, 5), dtype), _draw((7,), dtype, seed=1)
    target = np.array([0, 2, 4, ignore_index, 1, 2, 3]) if ignore_index < 0 else np.array(
        [0, 2, 4, 1, 1, 2, 3])
    rtol = {"float64": 1e-12, "float32": 2e-5, "float16": 2e-3}[dtype]
    pairs = [(CpuBackend.cross_entropy(logits, target, ignore_index),
              ModuleOps.cross_entropy.__func__(CpuBackend, logits, target, ignore_index)),
             (CpuBackend.cross_entropy_backward(logits, target, ignore_index, grad),
              ModuleOps.cross_entropy_backward.__func__(CpuBackend, logits, target,
                                                        ignore_index, grad))]
    for got, want in pairs:
        assert got.dtype == np.dtype(dtype) and got.shape == want.shape
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol,
                                   atol=rtol)
    assert (CpuBackend.cross_entropy(logits, target, ignore_index)[target == ignore_index]
            == 0).all()


def test_cross_entropy_ignored_rows_and_bad_targets() -> None:
    logits = Tensor.from_data(_draw((4, 3), "float64"), backend=CpuBackend)
    ignored = Tensor.from_data(np.array([-100, 1, -100, 0]), backend=CpuBackend)
    want = torch.nn.functional.cross_entropy(torch.from_numpy(logits.to_numpy()),
                                             torch.from_numpy(ignored.to_numpy()))
    np.testing.assert_allclose(F.cross_entropy(logits, ignored).item(), want.item(),
                               rtol=1e-12)
    every = Tensor.from_data(np.full(4, -100), backend=CpuBackend)
    assert np.isnan(F.cross_entropy(logits, every).item())
    with pytest.raises(IndexOutOfBoundsError, match="target 3 is out of range for 3 classes"):
        F.cross_entropy(logits, Tensor.from_data(np.array([0, 3, 1, 1]), backend=CpuBackend))
    with pytest.raises(IndexOutOfBoundsError, match="target -1"):
        F.cross_entropy(logits, Tensor.from_data(np.array([0, -1, 1, 1]), backend=CpuBackend))


def test_ignored_rows_are_exactly_zero_even_with_non_finite_logits() -> None:
    logits = _draw((3, 4), "float64")
    logits[1] = [np.nan, np.inf, -np.inf, 1.0]
    target, grad = np.array([2, -100, 0]), np.ones(3)
    for impl in (CpuBackend, None):
        if impl is None:
            loss = ModuleOps.cross_entropy.__func__(CpuBackend, logits, target, -100)
            dx = ModuleOps.cross_entropy_backward.__func__(CpuBackend, logits, target, -100,
                                                           grad)
        else:
            loss = impl.cross_entropy(logits, target, -100)
            dx = impl.cross_entropy_backward(logits, target, -100, grad)
        assert loss[1] == 0.0 and np.isfinite(loss).all()
        assert (dx[1] == 0.0).all() and np.isfinite(dx).all()
    want = torch.nn.functional.cross_entropy(torch.from_numpy(logits), torch.from_numpy(target),
                                             reduction="none")
    np.testing.assert_allclose(CpuBackend.cross_entropy(logits, target, -100), want.numpy(),
                               rtol=1e-12)


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
def test_batch_norm_backward_reuses_the_forward_statistics(dtype: str) -> None:
    x, grad = _draw((6, 3, 5), dtype), _draw((6, 3, 5), dtype, seed=1)
    weight = _draw((3,), dtype, seed=2)
    _, mean, var = CpuBackend.batch_norm(x, weight, None, 1e-5)
    reused = CpuBackend.batch_norm_backward(x, weight, grad, 1e-5, mean, var)
    recomputed = CpuBackend.batch_norm_backward(x, weight, grad, 1e-5)
    rtol = {"float64": 1e-12, "float32": 1e-5, "float16": 0.0}[dtype]
    for got, want in zip(reused, recomputed, strict=True):
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)
    # Wrong statistics must change the result: the hint is really used.
    shifted = CpuBackend.batch_norm_backward(x, weight, grad, 1e-5, mean + 1, var)
    if dtype != "float16":
        assert not np.allclose(shifted[0], reused[0])


@pytest.mark.parametrize("shape", [*SHAPES, (32, 16, 8, 8)])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("affine", [True, False])
def test_compiled_batch_norm_matches_torch(shape: tuple[int, ...], dtype: str,
                                           affine: bool) -> None:
    """float32/float64 run the compiled kernels (the forward's three passes, the backward's
    two with the forward's statistics): output, statistics and gradients agree with torch,
    with and without a weight and bias."""
    x, grad = _draw(shape, dtype) * 3, _draw(shape, dtype, seed=1)
    weight = _draw((shape[1],), dtype, seed=2) if affine else None
    bias = _draw((shape[1],), dtype, seed=3) if affine else None
    y, mean, var = CpuBackend.batch_norm(x, weight, bias, 1e-5)
    got = CpuBackend.batch_norm_backward(x, weight, grad, 1e-5, mean, var)
    tx = torch.tensor(x, requires_grad=True)
    tw = torch.tensor(np.ones(shape[1], dtype) if weight is None else weight,
                      requires_grad=True)
    tb = torch.tensor(np.zeros(shape[1], dtype) if bias is None else bias, requires_grad=True)
    ty = torch.nn.functional.batch_norm(tx, None, None, tw, tb, training=True)
    ty.backward(torch.tensor(grad))
    rtol = {"float64": 1e-10, "float32": 1e-4}[dtype]
    dims = tuple(d for d in range(len(shape)) if d != 1)
    want_var = torch.tensor(x).var(dim=dims, unbiased=False).numpy()
    for ours, want in [(y, ty.detach().numpy()), (mean, x.mean(axis=dims)), (var, want_var)]:
        assert ours.dtype == x.dtype and ours.shape == want.shape
        np.testing.assert_allclose(ours, want, rtol=rtol, atol=rtol * np.abs(want).max())
    for ours, ref in zip(got, (tx.grad, tw.grad, tb.grad), strict=True):
        want = ref.numpy()
        assert ours.dtype == want.dtype and ours.shape == want.shape
        np.testing.assert_allclose(ours, want, rtol=rtol, atol=rtol * np.abs(want).max())


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_compiled_batch_norm_propagates_nan_and_infinity_as_torch(dtype: str) -> None:
    """A NaN or an infinity in a channel makes that channel's statistics, outputs and
    gradients NaN, as torch's, and leaves the other channels exact; a NaN in the output
    gradient reaches its channel's gradients only. (The kernels once assumed finite values:
    a NaN raised ZeroDivisionError from the forward.)"""
    x, grad = _draw((6, 4, 5), dtype), _draw((6, 4, 5), dtype, seed=1)
    x[2, 1, 3], x[0, 2, 0], grad[1, 3, 2] = np.nan, np.inf, np.nan
    weight, bias = _draw((4,), dtype, seed=2), _draw((4,), dtype, seed=3)
    y, mean, var = CpuBackend.batch_norm(x, weight, bias, 1e-5)
    got = CpuBackend.batch_norm_backward(x, weight, grad, 1e-5, mean, var)
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, weight, bias))
    ty = torch.nn.functional.batch_norm(tx, None, None, tw, tb, training=True)
    ty.backward(torch.tensor(grad))
    with np.errstate(invalid="ignore"):
        want_mean, want_var = x.mean(axis=(0, 2)), x.var(axis=(0, 2))
    rtol = {"float64": 1e-10, "float32": 1e-4}[dtype]
    for ours, ref in zip((y, mean, var, *got),
                         (ty.detach().numpy(), want_mean, want_var, tx.grad.numpy(),
                          tw.grad.numpy(), tb.grad.numpy()), strict=True):
        np.testing.assert_array_equal(np.isnan(ours), np.isnan(ref))
        np.testing.assert_allclose(ours, ref, rtol=rtol, atol=rtol * 10)
    assert np.isnan(y[:, 1]).all() and np.isfinite(y[:, [0, 3]]).all()


# ---- layer norm ----------------------------------------------------------------------------------
@pytest.mark.parametrize(("shape", "ndim"), [((3, 4, 5), 1), ((2, 3, 4), 2), ((7, 6), 1)])
@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
@pytest.mark.parametrize("affine", [True, False])
def test_fused_layer_norm_matches_the_protocol_composition(shape: tuple[int, ...], ndim: int,
                                                           dtype: str, affine: bool) -> None:
    x, grad = _draw(shape, dtype), _draw(shape, dtype, seed=1)
    trailing = shape[len(shape) - ndim:]
    weight = _draw(trailing, dtype, seed=2) if affine else None
    bias = _draw(trailing, dtype, seed=3) if affine else None
    rtol = {"float64": 1e-11, "float32": 5e-5, "float16": 2e-2}[dtype]
    pairs = [((CpuBackend.layer_norm(x, ndim, weight, bias, 1e-5),),
              (ModuleOps.layer_norm.__func__(CpuBackend, x, ndim, weight, bias, 1e-5),)),
             (CpuBackend.layer_norm_backward(x, ndim, weight, grad, 1e-5),
              ModuleOps.layer_norm_backward.__func__(CpuBackend, x, ndim, weight, grad, 1e-5))]
    for fused, composed in pairs:
        for got, want in zip(fused, composed, strict=True):
            assert got.dtype == np.dtype(dtype) and got.shape == want.shape
            np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                                       rtol=rtol, atol=rtol)


def test_layer_norm_of_empty_rows_is_empty_on_every_path() -> None:
    x = np.zeros((2, 0), dtype=np.float32)
    assert CpuBackend.layer_norm(x, 1, None, None, 1e-5).shape == (2, 0)
    assert ModuleOps.layer_norm.__func__(CpuBackend, x, 1, None, None, 1e-5).shape == (2, 0)
    grads = CpuBackend.layer_norm_backward(x, 1, None, x, 1e-5)
    assert [g.shape for g in grads] == [(2, 0), (0,), (0,)]
