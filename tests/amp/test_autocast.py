"""``bp.autocast``'s behaviour against ``torch.autocast``: regions per thread, nesting, the
decorator, the weight cache, float64 and other device types left alone, and a training step
(loss, gradients in each parameter's dtype) on Autodiff, with checkpointing and Fusion, in
bfloat16 and float16."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as tf

import burnpy as bp
from burnpy import Autodiff, BalancedCheckpointing, DType, Fusion, Tensor
from burnpy.amp.autocast import _state as autocast_state
from burnpy.backend.base import Backend
from burnpy.nn import functional as F
from burnpy_cpu import CpuBackend

AD = Autodiff(CpuBackend)
TORCH = {"bfloat16": torch.bfloat16, "float16": torch.float16}
RTOL = {"bfloat16": 2e-2, "float16": 2e-3}


def _arr(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _t(arr: np.ndarray, backend: type[Backend] = CpuBackend) -> Tensor:
    return Tensor.from_data(arr, backend=backend)


def test_regions_nest_and_opt_out() -> None:
    a, b = _t(_arr(3, 4)), _t(_arr(4, 2))
    assert (a @ b).dtype is DType.float32
    with bp.autocast("cpu"):
        assert bp.amp.is_autocast_enabled("cpu")
        assert (a @ b).dtype is DType.bfloat16
        with bp.autocast("cpu", enabled=False):
            assert (a @ b).dtype is DType.float32
        with bp.autocast("cpu", dtype=bp.float16):
            assert (a @ b).dtype is DType.float16
        assert (a @ b).dtype is DType.bfloat16
    assert not bp.amp.is_autocast_enabled("cpu")
    assert (a @ b).dtype is DType.float32


def test_decorator() -> None:
    @bp.autocast("cpu")
    def product(x: Tensor, y: Tensor) -> Tensor:
        return x @ y

    a, b = _t(_arr(3, 4)), _t(_arr(4, 2))
    assert product(a, b).dtype is DType.bfloat16
    assert (a @ b).dtype is DType.float32


def test_regions_are_per_thread() -> None:
    a, b = _t(_arr(3, 4)), _t(_arr(4, 2))
    entered, done = threading.Event(), threading.Event()
    seen: list[DType] = []

    def other() -> None:
        entered.wait()
        seen.append((a @ b).dtype)
        done.set()

    thread = threading.Thread(target=other)
    thread.start()
    with bp.autocast("cpu"):
        entered.set()
        done.wait()
        assert (a @ b).dtype is DType.bfloat16
    thread.join()
    assert seen == [DType.float32]


def test_float64_and_other_device_types_are_left_alone() -> None:
    a, b = _t(_arr(3, 4).astype(np.float64)), _t(_arr(4, 2).astype(np.float64))
    with bp.autocast("cpu"):
        assert (a @ b).dtype is DType.float64
    c, d = _t(_arr(3, 4)), _t(_arr(4, 2))
    with bp.autocast("cuda"):
        assert (c @ d).dtype is DType.float32  # CPU tensors: a CUDA region does not apply


def test_bad_arguments_name_the_op() -> None:
    with pytest.raises(bp.InvalidArgumentError, match="autocast: unknown device_type 'tpu'"):
        bp.autocast("tpu")
    with pytest.raises(bp.DTypeError, match="autocast: dtype must be bfloat16 or float16"):
        bp.autocast("cpu", dtype=bp.float64)


def test_promote_takes_the_widest_input() -> None:
    a, b = _t(_arr(2, 3)), _t(_arr(2, 3)).cast(bp.bfloat16)
    with bp.autocast("cpu"):
        assert bp.cat([a, b]).dtype is DType.float32
        assert bp.stack([b, b]).dtype is DType.bfloat16


def test_parameters_are_cast_once_per_region() -> None:
    w = _t(_arr(2, 4), AD).require_grad()
    x = _t(_arr(3, 4), AD)
    cache = autocast_state.cache
    with bp.autocast("cpu"):
        y1, y2 = F.linear(x, w), F.linear(x, w)
        assert len(cache) == 1
        assert (y1.to_numpy() == y2.to_numpy()).all()
        with bp.autocast("cpu", enabled=False):
            F.linear(x, w)
        assert len(cache) == 1
    assert not cache
    with bp.autocast("cpu", cache_enabled=False):
        F.linear(x, w)
        assert not cache
    with bp.autocast("cpu"):
        F.linear(x, w * 1.0)  # not a leaf: cast at each use, as torch
        assert not cache


def test_a_cast_under_no_grad_is_not_cached() -> None:
    w = _t(_arr(2, 4), AD).require_grad()
    x = _t(_arr(3, 4), AD)
    with bp.autocast("cpu"):
        with bp.no_grad():
            F.linear(x, w)
        y = F.linear(x, w)
    g = w.grad(y.float().sum().backward())
    assert g is not None
    np.testing.assert_allclose(g.to_numpy(), np.broadcast_to(x.to_numpy().sum(0), (2, 4)),
                               rtol=2e-2)


def test_several_backward_passes_in_one_region() -> None:
    w = _t(_arr(2, 4), AD).require_grad()
    x = _t(_arr(3, 4), AD)
    want = np.broadcast_to(x.to_numpy().sum(0), (2, 4))
    with bp.autocast("cpu"):
        for _ in range(2):  # the first backward consumed the cached cast: it is cast again
            g = w.grad(F.linear(x, w).float().sum().backward())
            assert g is not None
            np.testing.assert_allclose(g.to_numpy(), want, rtol=2e-2)


def test_cached_cast_follows_a_written_parameter() -> None:
    w = _t(_arr(2, 4), AD).require_grad()
    x = _t(_arr(3, 4), AD)
    with bp.autocast("cpu"):
        before = F.linear(x, w).to_numpy()
        w.primitive = _t(_arr(2, 4, seed=1), AD).require_grad().primitive  # a step's write
        after = F.linear(x, w).to_numpy()
    assert not np.array_equal(before, after)


def _functional_pairs() -> list[tuple[str, Callable[..., Any], Callable[..., Any],
                                      list[np.ndarray]]]:
    x4, w4 = _arr(2, 3, 6, 6), _arr(4, 3, 3, 3, seed=1)
    q = _arr(1, 2, 5, 4)
    target = np.array([0, 2, 1, 3])
    return [
        ("linear", F.linear, tf.linear, [_arr(5, 4), _arr(3, 4, seed=1), _arr(3, seed=2)]),
        ("conv2d", F.conv2d, tf.conv2d, [x4, w4]),
        ("sdpa", F.scaled_dot_product_attention, tf.scaled_dot_product_attention,
         [q, _arr(1, 2, 5, 4, seed=1), _arr(1, 2, 5, 4, seed=2)]),
        ("mse_loss", F.mse_loss, tf.mse_loss, [_arr(3, 4), _arr(3, 4, seed=1)]),
        ("softmax_of_matmul", lambda a, b: F.softmax(a @ b, -1),
         lambda a, b: tf.softmax(a @ b, -1), [_arr(3, 4), _arr(4, 5, seed=1)]),
        ("layer_norm_of_linear", lambda x, w: F.layer_norm(F.linear(x, w), (3,)),
         lambda x, w: tf.layer_norm(tf.linear(x, w), (3,)), [_arr(4, 5), _arr(3, 5, seed=1)]),
        ("cross_entropy_of_linear",
         lambda x, w: F.cross_entropy(F.linear(x, w), Tensor.from_data(target)),
         lambda x, w: tf.cross_entropy(tf.linear(x, w), torch.from_numpy(target)),
         [_arr(4, 5), _arr(4, 5, seed=1)]),
    ]


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("pair", _functional_pairs(), ids=lambda p: p[0])
def test_functional_ops_follow_torch(pair: Any, dtype: str) -> None:
    _, ours_fn, theirs_fn, arrays = pair
    with torch.autocast("cpu", TORCH[dtype]):
        theirs = theirs_fn(*[torch.from_numpy(a) for a in arrays])
    with bp.autocast("cpu", dtype):
        ours = ours_fn(*[_t(a) for a in arrays])
    assert ours.dtype.value == str(theirs.dtype).removeprefix("torch.")
    np.testing.assert_allclose(ours.float().to_numpy(), theirs.float().numpy(),
                               rtol=RTOL[dtype], atol=RTOL[dtype])


def _mlp_step(backend: type[Backend], dtype: str, params: list[np.ndarray], x: np.ndarray,
              target: np.ndarray) -> tuple[float, list[np.ndarray], list[DType]]:
    ws = [_t(p, backend).require_grad() for p in params]
    with bp.autocast("cpu", dtype):
        h = F.relu(F.linear(_t(x, backend), ws[0], ws[1]))
        loss = F.cross_entropy(F.linear(h, ws[2], ws[3]), Tensor.from_data(target, backend=backend))
    grads = loss.backward()
    gs = [w.grad(grads) for w in ws]
    assert all(g is not None for g in gs)
    return (loss.item(), [g.to_numpy() for g in gs if g is not None],
            [g.dtype for g in gs if g is not None])


def _torch_mlp_step(dtype: str, params: list[np.ndarray], x: np.ndarray,
                    target: np.ndarray) -> tuple[float, list[np.ndarray]]:
    ws = [torch.from_numpy(p.copy()).requires_grad_() for p in params]
    with torch.autocast("cpu", TORCH[dtype]):
        h = tf.relu(tf.linear(torch.from_numpy(x), ws[0], ws[1]))
        loss = tf.cross_entropy(tf.linear(h, ws[2], ws[3]), torch.from_numpy(target))
    loss.backward()
    return loss.item(), [w.grad.numpy() for w in ws]  # type: ignore[union-attr]


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("backend", [AD, Autodiff[CpuBackend, BalancedCheckpointing],
                                     Autodiff(Fusion(CpuBackend))],
                         ids=["autodiff", "checkpointing", "fusion"])
def test_training_step_matches_torch(backend: type[Backend], dtype: str) -> None:
    params = [_arr(8, 6, seed=1) * 0.5, _arr(8, seed=2) * 0.1, _arr(4, 8, seed=3) * 0.5,
              _arr(4, seed=4) * 0.1]
    x, target = _arr(5, 6), np.array([0, 3, 1, 2, 3])
    loss, grads, dtypes = _mlp_step(backend, dtype, params, x, target)
    want_loss, want_grads = _torch_mlp_step(dtype, params, x, target)
    assert dtypes == [DType.float32] * 4  # each parameter's dtype, through the cast
    np.testing.assert_allclose(loss, want_loss, rtol=RTOL[dtype])
    for got, want in zip(grads, want_grads, strict=True):
        np.testing.assert_allclose(got, want, rtol=4 * RTOL[dtype],
                                   atol=4 * RTOL[dtype] * float(np.abs(want).max()))


def test_half_parameters_get_half_gradients() -> None:
    w = _t(_arr(3, 4), AD).cast(bp.bfloat16).require_grad()
    x = _t(_arr(2, 4), AD)
    with bp.autocast("cpu"):
        loss = F.linear(x, w).float().sum()
    g = w.grad(loss.backward())
    assert g is not None and g.dtype is DType.bfloat16


def test_no_grad_region() -> None:
    w = _t(_arr(3, 4), AD).require_grad()
    x = _t(_arr(2, 4), AD)
    with bp.no_grad(), bp.autocast("cpu"):
        y = F.linear(x, w)
    assert y.dtype is DType.bfloat16 and not y.is_require_grad()


def test_func_grad_and_jvp_run_inside_regions() -> None:
    x, w = _t(_arr(3, 4)), _t(_arr(4, 2, seed=1))

    def f(x: Tensor, w: Tensor) -> Tensor:
        with bp.autocast("cpu"):
            y = x @ w
        assert y.dtype is DType.bfloat16
        return y.float().sum()

    want_grad = np.broadcast_to(w.to_numpy().sum(1), (3, 4))
    np.testing.assert_allclose(bp.func.grad(f)(x, w).to_numpy(), want_grad, rtol=2e-2,
                               atol=2e-2)
    ones = _t(np.ones((3, 4), np.float32))
    _, tangent = bp.func.jvp(f, (x, w), (ones, None))
    np.testing.assert_allclose(tangent.item(), float((ones.to_numpy() @ w.to_numpy()).sum()),
                               rtol=2e-2)
