"""Property tests of indexing: ``t[key]`` and ``t[key] = v`` on random shapes and keys (ints,
slices with negative indices and steps, ``None``, ``...``, bool masks, int arrays) against
NumPy's values, and their gradients on ``Autodiff(CpuBackend)`` against torch autograd (or the
exact scatter of the upstream gradient where torch refuses the key: negative steps)."""

from __future__ import annotations

from typing import Any

import hypothesis.extra.numpy as hnp
import numpy as np
import torch
from hypothesis import given
from hypothesis import strategies as st

from burnpy import Autodiff, Tensor
from burnpy_cpu import CpuBackend

AD = Autodiff(CpuBackend)
SHAPES = hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=5)


def _values(shape: tuple[int, ...], seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape)


def _as_tuple(key: Any) -> tuple[Any, ...]:
    return key if isinstance(key, tuple) else (key,)


def _torch_accepts(key: tuple[Any, ...]) -> bool:
    return all(not isinstance(k, slice) or k.step is None or k.step > 0 for k in key)


def _torch_key(key: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(torch.from_numpy(k) if isinstance(k, np.ndarray) else k for k in key)


def _check_getitem(arr: np.ndarray, key: tuple[Any, ...], seed: int) -> None:
    """Values against NumPy; the gradient of ``sum(t[key] * w)`` against torch (or NumPy's
    ``add.at`` scatter, the same thing, where torch refuses the key)."""
    expected = arr[key]
    got = Tensor.from_data(arr)[key]
    assert got.shape == expected.shape, (key, got.shape, expected.shape)
    np.testing.assert_array_equal(got.to_numpy(), expected)

    w = np.random.default_rng(seed + 1).standard_normal(expected.shape)
    x = Tensor.from_data(arr, backend=AD).require_grad()
    grads = (x[key] * Tensor.from_data(w, backend=AD)).sum().backward()
    gx = x.grad(grads)
    assert gx is not None
    if _torch_accepts(key):
        tx = torch.tensor(arr, requires_grad=True)
        (tx[_torch_key(key)] * torch.from_numpy(w)).sum().backward()
        assert tx.grad is not None
        want = tx.grad.numpy()
    else:
        want = np.zeros_like(arr)
        np.add.at(want, key, w)
    np.testing.assert_allclose(gx.to_numpy(), want, rtol=1e-12, atol=1e-12)


@given(data=st.data(), shape=SHAPES, seed=st.integers(0, 2**16))
def test_basic_getitem_matches_numpy_and_its_gradient(data: st.DataObject,
                                                      shape: tuple[int, ...], seed: int) -> None:
    key = data.draw(hnp.basic_indices(shape, min_dims=0, allow_newaxis=True,
                                      allow_ellipsis=True))
    _check_getitem(_values(shape, seed), _as_tuple(key), seed)


@given(data=st.data(), shape=SHAPES, seed=st.integers(0, 2**16))
def test_int_array_getitem_matches_numpy_and_torch_gradient(data: st.DataObject,
                                                            shape: tuple[int, ...],
                                                            seed: int) -> None:
    """One int array per leading dim (negative entries and repeats included), the remaining
    dims kept whole: the repeats make the gradient accumulate."""
    n = data.draw(st.integers(1, len(shape)))
    index_shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=2, min_side=1, max_side=4))
    key = tuple(data.draw(hnp.arrays(np.int64, index_shape,
                                     elements=st.integers(-size, size - 1)))
                for size in shape[:n])
    _check_getitem(_values(shape, seed), key, seed)


@given(data=st.data(), shape=SHAPES, seed=st.integers(0, 2**16))
def test_mixed_slices_and_int_arrays_follow_numpy_placement(data: st.DataObject,
                                                            shape: tuple[int, ...],
                                                            seed: int) -> None:
    """Positive-step slices and int arrays in any order: adjacent arrays keep their place,
    separated ones go first, as NumPy and torch place them."""
    index_shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=2, min_side=1, max_side=3))
    key: list[Any] = []
    for size in shape:
        if data.draw(st.booleans()):
            key.append(data.draw(hnp.arrays(np.int64, index_shape,
                                            elements=st.integers(-size, size - 1))))
        else:
            start = data.draw(st.none() | st.integers(-size, size))
            step = data.draw(st.none() | st.integers(1, 3))
            key.append(slice(start, None, step))
    if not any(isinstance(k, np.ndarray) for k in key):
        key[0] = np.array([0, -1])
    _check_getitem(_values(shape, seed), tuple(key), seed)


@given(data=st.data(), shape=SHAPES, seed=st.integers(0, 2**16))
def test_bool_mask_getitem_matches_numpy_and_torch_gradient(data: st.DataObject,
                                                            shape: tuple[int, ...],
                                                            seed: int) -> None:
    k = data.draw(st.integers(1, len(shape)))
    mask = data.draw(hnp.arrays(np.bool_, shape[:k]))
    _check_getitem(_values(shape, seed), (mask,), seed)


@given(data=st.data(), shape=SHAPES, seed=st.integers(0, 2**16))
def test_basic_setitem_matches_numpy_and_index_put_gradient(data: st.DataObject,
                                                            shape: tuple[int, ...],
                                                            seed: int) -> None:
    """``t[key] = v`` with ``v`` broadcast to the region (or a scalar) against NumPy; the
    gradient of the functional ``index_put``: the upstream gradient outside the region for
    ``t``, the region's gradient summed over the broadcast for ``v``."""
    key = _as_tuple(data.draw(hnp.basic_indices(shape, min_dims=0, allow_newaxis=True,
                                                allow_ellipsis=True)))
    arr = _values(shape, seed)
    region = arr[key].shape
    lead = data.draw(st.integers(0, len(region)))  # v's shape broadcasts *to* the region
    v_shape = tuple(1 if data.draw(st.booleans()) else s for s in region[lead:])
    v = np.random.default_rng(seed + 2).standard_normal(v_shape)
    expected = arr.copy()
    expected[key] = v
    t = Tensor.from_data(arr)
    t[key] = Tensor.from_data(v)
    np.testing.assert_array_equal(t.to_numpy(), expected)
    scalar = Tensor.from_data(arr)
    scalar[key] = 0.5
    filled = arr.copy()
    filled[key] = 0.5
    np.testing.assert_array_equal(scalar.to_numpy(), filled)

    w = np.random.default_rng(seed + 3).standard_normal(shape)
    x = Tensor.from_data(arr, backend=AD).require_grad()
    y = Tensor.from_data(v, backend=AD).require_grad()
    grads = (x.index_put(key, y) * Tensor.from_data(w, backend=AD)).sum().backward()
    gx, gy = x.grad(grads), y.grad(grads)
    want_x = w.copy()
    want_x[key] = 0.0
    want_y = w[key].sum(axis=tuple(range(lead)))
    want_y = want_y.sum(axis=tuple(i for i, s in enumerate(v_shape) if s == 1), keepdims=True)
    assert gx is not None and gy is not None
    np.testing.assert_allclose(gx.to_numpy(), want_x, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gy.to_numpy(), want_y.reshape(v_shape), rtol=1e-12, atol=1e-12)


@given(data=st.data(), shape=SHAPES, seed=st.integers(0, 2**16))
def test_mask_and_index_setitem_match_numpy(data: st.DataObject, shape: tuple[int, ...],
                                            seed: int) -> None:
    arr = _values(shape, seed)
    k = data.draw(st.integers(1, len(shape)))
    mask = data.draw(hnp.arrays(np.bool_, shape[:k]))
    t = Tensor.from_data(arr)
    t[mask] = -1.5
    expected = arr.copy()
    expected[mask] = -1.5
    np.testing.assert_array_equal(t.to_numpy(), expected)

    rows = data.draw(st.lists(st.integers(-shape[0], shape[0] - 1), min_size=1,
                              max_size=shape[0], unique_by=lambda i: i % shape[0]))
    v = np.random.default_rng(seed + 4).standard_normal((len(rows),) + shape[1:])
    t = Tensor.from_data(arr)
    t[rows] = Tensor.from_data(v)
    expected = arr.copy()
    expected[rows] = v
    np.testing.assert_array_equal(t.to_numpy(), expected)
