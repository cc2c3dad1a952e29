"""The op defects issue 27 found by running every OpInfo sample, each against torch: select's
meaning, unique over a moved or empty dim, and the rest listed in the issue's item 7."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import torch

import burnpy as bp
import burnpy.nn.functional as F
from burnpy import Autodiff, BurnpyError, Tensor
from burnpy_cpu import CpuBackend

AD = Autodiff(CpuBackend)
RNG = np.random.default_rng(27)


def _np(t: Any) -> np.ndarray:
    return t.detach().numpy() if isinstance(t, torch.Tensor) else t.to_numpy()


def _same(got: Any, want: Any, tol: float = 1e-12) -> None:
    """Same shape, dtype name and values (floats to ``tol``)."""
    if isinstance(want, tuple | list):
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            _same(g, w, tol)
        return
    assert got.shape == tuple(want.shape)
    assert got.dtype.name == str(want.dtype).removeprefix("torch.").replace("bool", "bool_")
    np.testing.assert_allclose(_np(got), _np(want), rtol=tol, atol=tol)


# ---- select is torch's select ---------------------------------------------------------------

@pytest.mark.parametrize(("dim", "index"), [(0, 1), (1, -1), (-1, 0), (2, -4)])
def test_select_is_torchs_slice_with_gradient(dim: int, index: int) -> None:
    x = RNG.standard_normal((3, 2, 4))
    tx = torch.tensor(x, requires_grad=True)
    bx = Tensor.from_data(x, backend=AD).require_grad()
    want, got = tx.select(dim, index), bx.select(dim, index)
    _same(got, want)
    cot = RNG.standard_normal(tuple(want.shape))
    (gt,) = torch.autograd.grad((want * torch.tensor(cot)).sum(), tx)
    gb = bx.grad((got * Tensor.from_data(cot, backend=AD)).sum().backward())
    assert gb is not None
    np.testing.assert_array_equal(gb.to_numpy(), gt.numpy())


def test_select_takes_a_0d_int_tensor_and_refuses_out_of_range() -> None:
    x = Tensor.from_data(np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(x.select(1, bp.tensor(2)).to_numpy(), [2.0, 5.0])
    with pytest.raises(BurnpyError, match="select: index 3 is out of bounds for dim 1"):
        x.select(1, 3)


def test_index_select_is_burns_select() -> None:
    x = Tensor.from_data(np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(x.index_select(1, [2, 0]).to_numpy(), [[2, 0], [5, 3]])


# ---- unique over dims -----------------------------------------------------------------------

def test_unique_dim_orders_slices_as_torch() -> None:
    # Slice c of dim 2 is the 2x2 matrix x[:, :, c]; torch compares it in (dim 0, dim 1) order.
    x = torch.tensor([[[0, 0], [1, 0]], [[0, 1], [0, 0]]], dtype=torch.float64)
    want = torch.unique(x, sorted=True, return_inverse=True, return_counts=True, dim=2)
    got = bp.unique(Tensor.from_data(x.numpy()), sorted=True, return_inverse=True,
                    return_counts=True, dim=2)
    _same(got, want)


@pytest.mark.parametrize("fn", ["unique", "unique_consecutive"])
@pytest.mark.parametrize(("shape", "dim"), [((3, 0, 2), 1), ((0, 3), 0), ((0,), 0)])
def test_unique_over_a_zero_size_dim(fn: str, shape: tuple[int, ...], dim: int) -> None:
    want = getattr(torch, fn)(torch.zeros(shape, dtype=torch.float64), return_inverse=True,
                              return_counts=True, dim=dim)
    got = getattr(bp, fn)(Tensor.zeros(shape, dtype="float64"), return_inverse=True,
                          return_counts=True, dim=dim)
    _same(got, want)


def test_unique_refuses_empty_slices_as_torch() -> None:
    with pytest.raises(RuntimeError):
        torch.unique(torch.zeros(2, 0), dim=0)
    with pytest.raises(BurnpyError, match=r"unique: the slices along dim 0 of shape \(2, 0\)"):
        bp.unique(Tensor.zeros((2, 0)), dim=0)


# ---- refusals where torch answers -----------------------------------------------------------

def _pair(shape: tuple[int, ...]) -> tuple[torch.Tensor, Tensor]:
    x = RNG.standard_normal(shape)
    return torch.tensor(x, requires_grad=True), Tensor.from_data(x, backend=AD).require_grad()


def _check(tfn: Any, bfn: Any, *shapes: tuple[int, ...], tol: float = 1e-10) -> None:
    """Forward and gradients of float64 inputs against torch."""
    pairs = [_pair(s) for s in shapes]
    want, got = tfn(*(t for t, _ in pairs)), bfn(*(b for _, b in pairs))
    _same(got, want, tol)
    cot = RNG.uniform(0.5, 1.5, tuple(want.shape))
    tg = torch.autograd.grad((want * torch.tensor(cot)).sum(), [t for t, _ in pairs],
                             allow_unused=True, materialize_grads=True)
    grads = (got * Tensor.from_data(cot, backend=AD)).sum().backward()
    for (_, b), g in zip(pairs, tg, strict=True):
        gb = b.grad(grads)
        np.testing.assert_allclose(np.zeros(b.shape) if gb is None else gb.to_numpy(),
                                   g.numpy(), rtol=tol, atol=tol * 1e-2)


@pytest.mark.parametrize("shape", [(0, 2), (0, 4, 3)])
def test_group_norm_on_an_empty_batch(shape: tuple[int, ...]) -> None:
    c = shape[1]
    _check(lambda x, w, b: torch.nn.functional.group_norm(x, 2 if c == 4 else 1, w, b),
           lambda x, w, b: F.group_norm(x, 2 if c == 4 else 1, w, b), shape, (c,), (c,))


@pytest.mark.parametrize("ord", [2, math.inf, 1, -math.inf, "fro", "nuc"])
@pytest.mark.parametrize("shape", [(0, 0), (3, 0), (2, 0, 4)])
def test_matrix_norm_of_an_empty_matrix(ord: float | str, shape: tuple[int, ...]) -> None:
    try:
        want = torch.linalg.matrix_norm(torch.zeros(shape, dtype=torch.float64), ord)
    except IndexError:  # the smallest of no values: torch refuses, and so must burnpy
        with pytest.raises(BurnpyError):
            bp.linalg.matrix_norm(Tensor.zeros(shape, dtype="float64"), ord)
        return
    _same(bp.linalg.matrix_norm(Tensor.zeros(shape, dtype="float64"), ord), want)
    if len(shape) == 2:
        _same(bp.linalg.norm(Tensor.zeros(shape, dtype="float64"), ord),
              torch.linalg.norm(torch.zeros(shape, dtype=torch.float64), ord))


@pytest.mark.parametrize("indices", [False, True])
def test_3d_pools_take_unbatched_input(indices: bool) -> None:
    def pool(x: Tensor) -> Tensor:
        if indices:
            return F.max_pool3d(x, 3, 2, 1, ceil_mode=True, return_indices=True)[0]
        return F.max_pool3d(x, 3, 2, 1, ceil_mode=True)
    _check(lambda x: torch.nn.functional.max_pool3d(x, 3, 2, 1, ceil_mode=True), pool,
           (2, 3, 6, 5))
    _check(lambda x: torch.nn.functional.avg_pool3d(x, 2, 1, ceil_mode=indices),
           lambda x: F.avg_pool3d(x, 2, 1, ceil_mode=indices), (2, 3, 4, 5))
    x = RNG.standard_normal((2, 3, 6, 5))
    want = torch.nn.functional.max_pool3d(torch.tensor(x), 3, 2, 1, return_indices=True)
    _same(F.max_pool3d(Tensor.from_data(x), 3, 2, 1, return_indices=True), want)


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
@pytest.mark.parametrize("widths", [(-1, 1, -2, 1), (2, -1, 0, 0), (-3, 3, 1, -3)])
def test_reflect_and_replicate_crop_at_negative_widths(mode: str,
                                                       widths: tuple[int, ...]) -> None:
    _check(lambda x: torch.nn.functional.pad(x, widths, mode=mode),
           lambda x: F.pad(x, widths, mode=mode), (1, 3, 4, 5))


def test_pad_refuses_what_torch_refuses() -> None:
    with pytest.raises(BurnpyError, match="leave dim 2"):
        F.pad(Tensor.zeros((1, 2, 5)), (-2, -3), mode="reflect")
    with pytest.raises(BurnpyError, match="'circular' needs non-negative widths"):
        F.pad(Tensor.zeros((1, 2, 5)), (-1, 2), mode="circular")


# ---- int dtypes on WebGPU, and tensor arguments under Autodiff --------------------------------

def test_narrow_takes_a_0d_int_tensor_start_under_autodiff() -> None:
    _check(lambda x: x.narrow(1, torch.tensor(1), 2),
           lambda x: x.narrow(1, bp.tensor(1), 2), (3, 4))
    with pytest.raises(BurnpyError, match="narrow: start must be an int"):
        Tensor.zeros((3, 4)).narrow(1, 1.0, 2)  # type: ignore[arg-type]


def test_int_results_on_webgpu_use_its_int_dtype() -> None:
    wgpu = pytest.importorskip("burnpy_wgpu")
    w = wgpu.WgpuBackend
    x = RNG.standard_normal((1, 2, 4, 5, 6)).astype(np.float32)
    want_v, want_i = torch.nn.functional.max_pool3d(torch.tensor(x), 2, return_indices=True)
    values, index = F.max_pool3d(Tensor.from_data(x, backend=w), 2, return_indices=True)
    _, index2d = F.max_pool2d(Tensor.from_data(x[0], backend=w), 2, return_indices=True)
    assert index.dtype == index2d.dtype == bp.int32
    np.testing.assert_array_equal(values.to_numpy(), want_v.numpy())
    np.testing.assert_array_equal(index.to_numpy(), want_i.numpy())
    classes = Tensor.from_data(np.array([0, 2, 1]), backend=w, dtype="int32")
    hot = F.one_hot(classes, 4)
    assert hot.dtype == bp.int32
    np.testing.assert_array_equal(hot.to_numpy(),
                                  torch.nn.functional.one_hot(torch.tensor([0, 2, 1]), 4))
    ad = Autodiff(w)
    xs = Tensor.from_data(x[0, 0, 0], backend=ad).require_grad()
    grad = xs.grad(xs.narrow(1, bp.tensor(1), 2).sum().backward())
    assert grad is not None
    np.testing.assert_array_equal(grad.to_numpy(), np.pad(np.ones((5, 2)), ((0, 0), (1, 3))))


# ---- torch's meaning --------------------------------------------------------------------------

@pytest.mark.parametrize("data", [[[0.0, 1.5], [2.0, 0.0]], 3.0, 0.0, [[[1, 0, 2]]]])
def test_nonzero_is_torchs_index_matrix_by_default(data: Any) -> None:
    want = torch.tensor(data).nonzero()
    got = bp.tensor(data).nonzero()
    assert isinstance(got, Tensor)
    _same(got, want)
    want_t = torch.tensor(data).nonzero(as_tuple=True)
    got_t = bp.tensor(data).nonzero(as_tuple=True)
    assert isinstance(got_t, tuple)
    _same(got_t, want_t)


@pytest.mark.parametrize("mode", ["trunc", "floor", None])
def test_div_rounding_mode_as_torch(mode: Any) -> None:
    a, b = [7, -7, 7, -7, 0, 5], [2, 2, -2, -2, 3, 5]
    ints = (torch.tensor(a), torch.tensor(b))
    floats = (torch.tensor([7.5, -7.5, 1.0, -1.0, 0.0, 3.0], dtype=torch.float64),
              torch.tensor([2.0, 2.0, 0.0, 0.0, 0.0, -2.0], dtype=torch.float64))
    for x, y in (ints, floats, (ints[0], 2), (ints[0], 2.5), (floats[0], 2)):
        want = x.div(y, rounding_mode=mode)
        by = Tensor.from_data(y.numpy()) if isinstance(y, torch.Tensor) else y
        _same(Tensor.from_data(x.numpy()).div(by, rounding_mode=mode), want)
    _check(lambda x, y: x.div(y, rounding_mode=mode), lambda x, y: x.div(y, rounding_mode=mode),
           (3, 4), (3, 4))


def test_int_div_by_zero_with_rounding_refuses_as_torch() -> None:
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        torch.tensor([1]).div(0, rounding_mode="trunc")
    with pytest.raises(BurnpyError, match="division by zero"):
        Tensor.from_data(np.array([1])).div(0, rounding_mode="trunc")
    with pytest.raises(BurnpyError, match="rounding_mode"):
        Tensor.from_data(np.array([1.0])).div(2.0, rounding_mode="round")  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "cumsum", "cumprod", "softmax",
                                  "log_softmax"])
def test_dtype_casts_the_input_first(name: str) -> None:
    x = RNG.standard_normal((3, 4)).astype(np.float32) * 3
    dim = 1 if name in ("cumsum", "cumprod", "softmax", "log_softmax") else None
    args = () if dim is None else (dim,)
    want = getattr(torch.tensor(x), name)(*args, dtype=torch.float64)
    got = getattr(Tensor.from_data(x), name)(*args, dtype="float64")
    _same(got, want, tol=1e-13)
    _check(lambda t: getattr(t.float(), name)(*args, dtype=torch.float64),
           lambda t: getattr(t.float(), name)(*args, dtype="float64"), (2, 3), tol=1e-6)
    ints = np.array([[1, 2, 3], [4, 5, 6]])
    if name != "mean":  # torch's mean refuses an int input even with dtype=
        _same(getattr(Tensor.from_data(ints), name)(*args, dtype="float32"),
              getattr(torch.tensor(ints), name)(*args, dtype=torch.float32), tol=1e-6)


def test_functional_softmax_and_like_creators_take_dtype() -> None:
    x = RNG.standard_normal((2, 5)).astype(np.float32)
    _same(F.softmax(Tensor.from_data(x), 1, dtype="float64"),
          torch.softmax(torch.tensor(x), 1, dtype=torch.float64), tol=1e-13)
    _same(F.log_softmax(Tensor.from_data(x), 0, dtype="float64"),
          torch.log_softmax(torch.tensor(x), 0, dtype=torch.float64), tol=1e-13)
    b, t = Tensor.from_data(x), torch.tensor(x)
    _same(b.zeros_like(dtype="int64"), torch.zeros_like(t, dtype=torch.int64))
    _same(b.ones_like(dtype="float64"), torch.ones_like(t, dtype=torch.float64))
    _same(b.full_like(2.5, dtype="float64"), torch.full_like(t, 2.5, dtype=torch.float64))


@pytest.mark.parametrize("kwargs", [
    {"padding_idx": 1}, {"padding_idx": -2}, {"scale_grad_by_freq": True},
    {"padding_idx": 0, "scale_grad_by_freq": True}, {"max_norm": 1.0},
    {"max_norm": 0.5, "norm_type": 1.0, "padding_idx": 2}])
def test_embedding_options_as_torch(kwargs: dict[str, Any]) -> None:
    w = RNG.standard_normal((5, 3)) * 2
    idx = np.array([[0, 1, 2, 1], [4, 1, 0, 3]])
    tw = torch.tensor(w, requires_grad=True)
    bw = Tensor.from_data(w, backend=AD).require_grad()
    want = torch.nn.functional.embedding(torch.tensor(idx), tw, **kwargs)
    got = F.embedding(Tensor.from_data(idx, backend=AD), bw, **kwargs)
    _same(got, want)
    # max_norm rescales the referenced rows of the weight itself, as torch's does
    np.testing.assert_allclose(bw.to_numpy(), tw.detach().numpy(), rtol=1e-12, atol=1e-12)
    cot = RNG.uniform(0.5, 1.5, tuple(want.shape))
    (tg,) = torch.autograd.grad((want * torch.tensor(cot)).sum(), tw)
    gb = bw.grad((got * Tensor.from_data(cot, backend=AD)).sum().backward())
    assert gb is not None
    np.testing.assert_allclose(gb.to_numpy(), tg.numpy(), rtol=1e-12, atol=1e-12)
