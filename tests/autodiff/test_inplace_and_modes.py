"""In-place writes under autodiff (torch's rules), no_grad / enable_grad and detect_anomaly."""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np
import pytest
import torch

import burnpy as bp
from burnpy import Autodiff, BalancedCheckpointing, Tensor
from burnpy.autodiff.modes import AnomalyError
from burnpy.backend.errors import AutodiffError, DTypeError, ShapeError
from burnpy_cpu import CpuBackend

AD = Autodiff(CpuBackend)
STRATEGIES = [AD, Autodiff(CpuBackend, BalancedCheckpointing)]
rng = np.random.default_rng(0)
W = rng.normal(size=(3, 4))
V = rng.normal(size=(4,))


def leaf(values: np.ndarray, backend: type = AD) -> Tensor:
    return Tensor.from_data(values.copy(), backend=backend).require_grad()


# ---- in-place writes ----------------------------------------------------------------------------
INPLACE: dict[str, Callable[..., object]] = {
    "setitem": lambda t, v: t.__setitem__((slice(None), 1), v[:3]),
    "add_": lambda t, v: t.add_(v, alpha=0.5),
    "sub_": lambda t, v: t.sub_(v, alpha=2.0),
    "mul_": lambda t, v: t.mul_(v),
    "div_": lambda t, v: t.div_(v * v + 1.0),
    "zero_": lambda t, v: t.zero_(),
    "fill_": lambda t, v: t.fill_(1.5),
    "clamp_": lambda t, v: t.clamp_(-0.5, 0.5),
    "copy_": lambda t, v: t.copy_(v),
    "masked_fill_": lambda t, v: t.masked_fill_(t > 0.0, 2.0),
}
#: The same spellings work on torch tensors: one table drives both sides.
TORCH_INPLACE = INPLACE


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_in_place_on_a_leaf_that_requires_grad_raises(name: str) -> None:
    w, v = leaf(W), leaf(V)
    before = w.primitive
    with pytest.raises(AutodiffError, match="leaf tensor that requires grad cannot be modified"):
        INPLACE[name](w, v)
    assert w.primitive is before


@pytest.mark.parametrize("backend", STRATEGIES, ids=["none", "balanced"])
@pytest.mark.parametrize("name", sorted(INPLACE))
def test_in_place_on_a_tracked_result_is_recorded_like_torch(name: str, backend: type) -> None:
    """Gradients reach both the old value and the written operand, as in torch."""
    w, v = leaf(W, backend), leaf(V, backend)
    y = w * 3.0
    out = INPLACE[name](y, v)
    assert out is y or out is None
    loss = (y * y).sum()
    grads = loss.backward()
    tw = torch.tensor(W, requires_grad=True)
    tv = torch.tensor(V, requires_grad=True)
    ty = tw * 3.0
    TORCH_INPLACE[name](ty, tv)
    (ty * ty).sum().backward()
    np.testing.assert_allclose(y.to_numpy(), ty.detach().numpy(), rtol=1e-12)
    for mine, theirs in ((w, tw), (v, tv)):  # None: no path to the leaf (torch: None or zeros)
        got = mine.grad(grads)
        want = np.zeros(mine.shape) if theirs.grad is None else theirs.grad.numpy()
        np.testing.assert_allclose(np.zeros(mine.shape) if got is None else got.to_numpy(),
                                   want, rtol=1e-12)


def test_index_put_accumulate_sums_repeated_positions_like_torch() -> None:
    w = leaf(W)
    rows = Tensor.from_data([0, 2, 2, -1], backend=AD)
    cols = Tensor.from_data([1, 3, 3, 0], backend=AD)
    vals = leaf(np.array([1.0, 2.0, 3.0, 4.0]))
    y = w * 1.0
    y.index_put_((rows, cols), vals, accumulate=True)
    grads = (y * y).sum().backward()
    tw, tvals = torch.tensor(W, requires_grad=True), torch.tensor([1.0, 2.0, 3.0, 4.0],
                                                                  dtype=torch.float64,
                                                                  requires_grad=True)
    ty = tw * 1.0
    ty.index_put_((torch.tensor([0, 2, 2, -1]), torch.tensor([1, 3, 3, 0])), tvals,
                  accumulate=True)
    (ty * ty).sum().backward()
    np.testing.assert_allclose(y.to_numpy(), ty.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(w.grad(grads).to_numpy(), tw.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(vals.grad(grads).to_numpy(), tvals.grad.numpy(), rtol=1e-12)
    plain = Tensor.zeros((2, 3), backend=CpuBackend, dtype="float64")
    plain.index_put_((Tensor.from_data([1, 1], backend=CpuBackend),), 1.0, accumulate=True)
    np.testing.assert_array_equal(plain.to_numpy(), [[0, 0, 0], [2, 2, 2]])
    with pytest.raises(DTypeError, match="index_put_: indices must be int tensors"):
        plain.index_put_((Tensor.from_data([1.0], backend=CpuBackend),), 1.0, accumulate=True)


def test_in_place_keeps_shape_and_kind() -> None:
    t = Tensor.zeros((3,), backend=CpuBackend)
    with pytest.raises(ShapeError, match=r"add_: the result has shape \(2, 3\)"):
        t.add_(Tensor.ones((2, 3), backend=CpuBackend))
    i = Tensor.from_data([1, 2], backend=CpuBackend)
    assert i.add_(3) is i and i.to_numpy().tolist() == [4, 5]
    f64 = Tensor.zeros((2,), backend=CpuBackend, dtype="float64")
    f64.add_(Tensor.ones((2,), backend=CpuBackend, dtype="float32"))
    assert f64.dtype == bp.float64


def test_a_value_saved_for_backward_then_modified_in_place_makes_backward_raise() -> None:
    w = leaf(W)
    y = w * 2.0
    z = y * y  # saves y
    y.add_(1.0)
    with pytest.raises(AutodiffError, match=r"float_mul saved its input 0 .* modified in place "
                                            r"by add_ at .*test_inplace_and_modes.py"):
        z.sum().backward()
    e = w.exp()  # saves its output
    e.mul_(2.0)
    with pytest.raises(AutodiffError, match="float_exp saved its output"):
        e.sum().backward()
    s = w * 2.0
    t = s + 1.0  # add saves nothing: modifying s afterwards is harmless, as in torch
    s.zero_()
    grads = t.sum().backward()
    np.testing.assert_allclose(w.grad(grads).to_numpy(), np.full(W.shape, 2.0))


def test_clone_gives_a_copy_that_writes_cannot_reach() -> None:
    w = leaf(W)
    y = w * 2.0
    z = y * y
    c = y.clone()
    c.add_(1.0)  # y's node is untouched, so z's backward still runs
    grads = (z.sum() + c.sum()).backward()
    np.testing.assert_allclose(w.grad(grads).to_numpy(), 8.0 * W + 2.0, rtol=1e-12)
    plain = Tensor.from_data(W, backend=CpuBackend)
    copy = plain.clone()
    copy.zero_()
    np.testing.assert_array_equal(plain.to_numpy(), W)


# ---- no_grad / enable_grad -----------------------------------------------------------------------
def test_no_grad_stops_recording_and_updates_leaves_in_place() -> None:
    w = leaf(W)
    with bp.no_grad():
        assert not bp.is_grad_enabled()
        y = w * 2.0
        assert not y.is_require_grad()
        w.sub_(w * 0.5)  # the optimizer habit: w stays the same trainable leaf
        with bp.enable_grad():
            assert bp.is_grad_enabled() and (w * 1.0).is_require_grad()
        assert not bp.is_grad_enabled()
    assert bp.is_grad_enabled()
    assert w.is_require_grad()
    np.testing.assert_allclose(w.to_numpy(), 0.5 * W)
    grads = (w * w).sum().backward()
    np.testing.assert_allclose(w.grad(grads).to_numpy(), W, rtol=1e-12)


def test_no_grad_as_decorator_set_grad_enabled_and_per_thread() -> None:
    w = leaf(W)

    @bp.no_grad()
    def infer(x: Tensor) -> Tensor:
        return x * 2.0

    assert not infer(w).is_require_grad() and bp.is_grad_enabled()
    with bp.set_grad_enabled(False):
        assert not (w * 1.0).is_require_grad()
    seen: list[bool] = []
    with bp.no_grad():
        thread = threading.Thread(target=lambda: seen.append((w * 1.0).is_require_grad()))
        thread.start()
        thread.join()
    assert seen == [True]  # the other thread still records


def test_a_leaf_modified_under_no_grad_after_being_saved_makes_backward_raise() -> None:
    w = leaf(W)
    loss = (w * w).sum()  # mul saved w
    with bp.no_grad():
        w.mul_(0.5)
    with pytest.raises(AutodiffError, match="float_mul saved its input 0"):
        loss.backward()


# ---- detect_anomaly ------------------------------------------------------------------------------
def test_detect_anomaly_names_the_forward_op_and_the_user_line() -> None:
    w = leaf(np.array([1.0, -1.0]))
    assert np.isnan((w.log()).to_numpy()[1])  # off: NaN flows silently, as in torch
    with bp.detect_anomaly(), pytest.raises(
            AnomalyError, match=r"float_log at .*test_inplace_and_modes.py:\d+ in "
                                r"test_detect_anomaly_names_the_forward_op"):
        w.log()


def test_detect_anomaly_names_the_backward_op_and_where_it_was_recorded() -> None:
    w = leaf(np.array([0.0, 4.0]))

    @bp.detect_anomaly()
    def run() -> None:
        y = w.sqrt()  # finite forward, infinite gradient at 0
        y.sum().backward()

    with pytest.raises(AnomalyError, match=r"backward of float_sqrt \(recorded at "
                                           r".*test_inplace_and_modes.py:\d+ in run\)"):
        run()
    grads = w.sqrt().sum().backward()  # off again: no check
    assert np.isinf(w.grad(grads).to_numpy()[0])


# ---- writes through views ------------------------------------------------------------------------
def test_in_place_on_a_basic_index_writes_into_the_base_like_torch() -> None:
    t = Tensor.from_data(W, backend=CpuBackend)
    tt = torch.tensor(W)
    for mine, theirs in ((t, tt),):
        mine[0].add_(1.0)
        mine[:, 1].mul_(3.0)
        mine[1][2].fill_(7.0)  # a view of a view
        mine[..., ::2].zero_()
        row = mine[2]
        mine.fill_(5.0)  # the view was taken before: its write reads the base again
        row.add_(1.0)
        theirs[0].add_(1.0)
        theirs[:, 1].mul_(3.0)
        theirs[1][2].fill_(7.0)
        theirs[..., ::2].zero_()
        trow = theirs[2]
        theirs.fill_(5.0)
        trow.add_(1.0)
        np.testing.assert_array_equal(mine.to_numpy(), theirs.numpy())
        np.testing.assert_array_equal(row.to_numpy(), trow.numpy())
    picked = t[Tensor.from_data([0, 1], backend=CpuBackend)]  # advanced indexing copies
    picked.zero_()
    assert t.to_numpy()[0, 0] == 5.0


def test_in_place_on_a_view_of_a_tracked_result_is_recorded_and_of_a_leaf_refused() -> None:
    w = leaf(W)
    with pytest.raises(AutodiffError, match="leaf tensor that requires grad"):
        w[0].zero_()
    y = w * 2.0
    y[1].mul_(3.0)
    y[0].add_(y[2] * 3.0)
    grads = (y * y).sum().backward()
    tw = torch.tensor(W, requires_grad=True)
    ty = tw * 2.0
    ty[1].mul_(3.0)
    ty[0].add_(ty[2] * 3.0)
    (ty * ty).sum().backward()
    np.testing.assert_allclose(y.to_numpy(), ty.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(w.grad(grads).to_numpy(), tw.grad.numpy(), rtol=1e-12)
