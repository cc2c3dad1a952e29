"""``bp.compile``'s guards on the replay path: once a call has replayed, the next ones run the
entry's generated check (``fast``) first, so each thing a signature or state is specialized on
is changed here right after a replay, and must record again (or replay where it may), with
the results compared against NumPy."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import burnpy as bp
from burnpy import nn, optim
from burnpy.fusion import Fusion
from burnpy_cpu import CpuBackend

C = bp.Capture(CpuBackend)
A = bp.Autodiff(C)
CF = bp.Capture(Fusion(CpuBackend))

OFFSET = 0.5
GLOBAL_MODEL: Any = None


def _data(shape: tuple[int, ...], seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _t(data: np.ndarray, backend: Any = C) -> bp.Tensor:
    return bp.Tensor.from_data(data, backend=backend)


def _linear(model: nn.Linear, x: np.ndarray) -> np.ndarray:
    """``model`` applied by NumPy to its current weights."""
    weight = model.weight.to_numpy()
    bias = model.bias.to_numpy() if model.bias is not None else 0.0
    return np.asarray(x @ weight.T + bias)


def _counts(f: Any) -> tuple[int, int]:
    info = f.cache_info()
    return info.recordings, info.replays


def test_an_arguments_shape_dtype_or_backend_records_again() -> None:
    f = bp.compile(lambda x: x * 2.0 + 1.0)
    a = _data((3, 4), 0)
    calls = [(a, C), (a, C), (a[:2], C), (a.astype(np.float64), C), (a.astype(np.float64), C),
             (a, CF), (a, CF), (a, A), (a, A), (a, C)]
    for data, backend in calls:
        got = f(_t(data, backend))
        assert got.backend is backend and got.to_numpy().dtype == data.dtype
        np.testing.assert_allclose(got.to_numpy(), data * data.dtype.type(2) + 1, rtol=1e-6)
    assert _counts(f) == (5, 5)  # a, a[:2], float64, CF, A recorded; the rest replayed


def test_arguments_by_count_keyword_type_and_value() -> None:
    def scale(x: bp.Tensor, s: float = 2.0) -> bp.Tensor:
        return x * s

    f = bp.compile(scale)
    a = _data((5,), 1)
    x = _t(a)
    fresh = float(np.float64(3.0))  # another float object of an equal value: replays
    calls: list[tuple[tuple[Any, ...], dict[str, Any], float]] = [
        ((x,), {}, 2.0), ((x,), {}, 2.0), ((x, 3.0), {}, 3.0), ((x, fresh), {}, 3.0),
        ((x, 3), {}, 3.0), ((x,), {"s": 3.0}, 3.0), ((x,), {"s": 3.0}, 3.0), ((x,), {}, 2.0)]
    for args, kwargs, s in calls:
        np.testing.assert_array_equal(f(*args, **kwargs).to_numpy(), a * np.float32(s))
    # recorded: (x), (x, 3.0), (x, 3) (an int), s=3.0 by keyword
    assert _counts(f) == (4, 4)

    dropped = bp.compile(scale, cache_size=1)  # a replayed entry dropped from the cache
    for s in (2.0, 2.0, 3.0, 2.0):
        np.testing.assert_array_equal(dropped(x, s).to_numpy(), a * np.float32(s))
    assert _counts(dropped) == (3, 1)


def test_an_object_argument_is_held_by_identity() -> None:
    f = bp.compile(lambda m, x: m(x))
    m1, m2 = nn.Linear(4, 2, backend=C), nn.Linear(4, 2, backend=C)
    a = _data((3, 4), 2)
    for m in (m1, m1, m2, m2, m1):
        np.testing.assert_allclose(f(m, _t(a)).to_numpy(), _linear(m, a), rtol=1e-6)
    assert _counts(f) == (2, 3)


def test_closure_cells_and_globals_rebound_record_again() -> None:
    global OFFSET, GLOBAL_MODEL
    model, scale = nn.Linear(4, 2, backend=C), 2.0
    GLOBAL_MODEL = nn.Linear(2, 2, backend=C)

    def fn(x: bp.Tensor) -> bp.Tensor:
        return GLOBAL_MODEL(model(x) * scale) + OFFSET

    f = bp.compile(fn)
    a = _data((3, 4), 3)

    def check() -> None:
        want = _linear(GLOBAL_MODEL, _linear(model, a) * np.float32(scale)) + np.float32(OFFSET)
        for _ in range(2):  # records, then replays
            np.testing.assert_allclose(f(_t(a)).to_numpy(), want, rtol=1e-5)

    try:
        check()
        scale = 3.0  # a closure scalar
        check()
        model = nn.Linear(4, 2, backend=C)  # a closure cell holding another module
        check()
        OFFSET = -1.5  # a global scalar
        check()
        GLOBAL_MODEL = nn.Linear(2, 2, backend=C)  # a global holding another module
        check()
    finally:
        OFFSET, GLOBAL_MODEL = 0.5, None
    assert _counts(f) == (5, 5)


def test_an_emptied_closure_cell_is_read_as_eager_reads_it() -> None:
    scale = 2.0

    def fn(x: bp.Tensor) -> bp.Tensor:
        return x * scale  # noqa: F821 - the cell is emptied below, on purpose

    f = bp.compile(fn)
    a = _data((4,), 4)
    for _ in range(2):
        np.testing.assert_array_equal(f(_t(a)).to_numpy(), a * np.float32(2.0))
    del scale
    with pytest.raises(NameError, match="scale"):
        f(_t(a))


def test_a_state_tensor_replaced_is_bound_or_records_again() -> None:
    state: dict[str, Any] = {"w": _t(_data((4,), 5))}
    f = bp.compile(lambda x: x * state["w"])
    a = _data((4,), 6)
    values = [_data((4,), 5), _data((4,), 7), _data((3, 4), 8), _data((4,), 9).astype(np.float64)]
    for w in values:
        state["w"] = _t(w)  # same desc: bound anew; another shape or dtype: recorded
        for _ in range(2):
            np.testing.assert_array_equal(f(_t(a)).to_numpy(), a * w)
    state["w"] = 2.0  # no longer a tensor
    np.testing.assert_array_equal(f(_t(a)).to_numpy(), a * np.float32(2.0))
    assert _counts(f) == (4, 5)  # the second value replays twice


def test_tensors_that_were_one_or_shared_storage_must_still() -> None:
    f = bp.compile(lambda p, q: p * 2.0 + q)
    a, b = _data((3,), 10), _data((3,), 11)
    x, y = _t(a), _t(b)
    for p, q in ((x, x), (x, x), (x, y), (x, y), (y, y)):
        np.testing.assert_array_equal(f(p, q).to_numpy(), p.to_numpy() * np.float32(2.0)
                                      + q.to_numpy())
    assert _counts(f) == (2, 3)  # (y, y) replays (x, x)'s graph

    g = bp.compile(lambda p, q: p * 2.0 + q)
    xa, ya = _t(a, A), _t(b, A)
    for p, q in ((xa, xa.detach()), (xa, xa.detach()), (xa, ya), (xa, ya)):
        np.testing.assert_array_equal(g(p, q).to_numpy(), p.to_numpy() * np.float32(2.0)
                                      + q.to_numpy())
    assert _counts(g) == (2, 2)  # one storage, then two


def test_a_branch_on_the_learning_rate_records_again() -> None:
    opt = optim.SGD(lr=0.1)

    def fn(x: bp.Tensor) -> bp.Tensor:
        return x * (2.0 if opt.param_groups[0]["lr"] > 0.5 else 3.0)

    f = bp.compile(fn)
    a = _data((4,), 12)
    for lr in (0.1, 0.1, 0.2, 0.7, 0.8, 0.3):  # 0.3 replays 0.1's graph
        opt.param_groups[0]["lr"] = lr
        want = a * np.float32(2.0 if lr > 0.5 else 3.0)
        np.testing.assert_array_equal(f(_t(a)).to_numpy(), want)
    assert _counts(f) == (2, 4)


def _train(model: nn.Module, opt: optim.Optimizer) -> Callable[[bp.Tensor, bp.Tensor], bp.Tensor]:
    def step(x: bp.Tensor, y: bp.Tensor) -> bp.Tensor:
        loss = ((model(x) - y) ** 2).mean()
        opt.step(model, loss.backward())
        return loss

    return step


def test_optimizer_state_cleared_after_replays_runs_as_eager() -> None:
    models = [nn.Linear(4, 2, backend=A), nn.Linear(4, 2, backend=A)]
    models[1].load_state_dict({k: v.clone() for k, v in models[0].state_dict().items()})
    opts = [optim.Adam(lr=0.05), optim.Adam(lr=0.05)]
    step, eager = bp.compile(_train(models[0], opts[0])), _train(models[1], opts[1])
    for i in range(7):
        if i == 4:  # a fresh start: the moments and step counts are gone
            for opt in opts:
                opt.state.clear()
                opt.steps.clear()
        x, y = _t(_data((3, 4), 20 + i), A), _t(_data((3, 2), 30 + i), A)
        np.testing.assert_array_equal(step(x, y).to_numpy(), eager(x, y).to_numpy())
        for p, q in zip(models[0].parameters(), models[1].parameters(), strict=True):
            np.testing.assert_array_equal(p.to_numpy(), q.to_numpy())
    # eager (creates the state), record, replay, replay; eager again, record, replay
    assert _counts(step) == (4, 3)


def test_step_counts_guarded_by_value_record_again() -> None:
    model = nn.Linear(4, 2, backend=A)
    opt = optim.Adamax(lr=0.1)  # computes with the count in Python: guarded by its value

    def forward(x: bp.Tensor) -> bp.Tensor:
        return model(x).sum() * opt.param_groups[0]["lr"]

    f = bp.compile(forward)
    a = _data((3, 4), 40)

    def check() -> None:
        for _ in range(2):
            want = _linear(model, a).sum() * np.float32(0.1)
            np.testing.assert_allclose(f(_t(a, A)).to_numpy(), want, rtol=1e-5)

    check()
    for _ in range(2):  # the first step adds state, the second only counts
        opt.step(model, model(_t(a, A)).sum().backward())
        check()
    assert _counts(f) == (3, 3)


def test_grad_mode_and_an_autocast_region_after_replays() -> None:
    model = nn.Linear(4, 3, backend=A)
    f = bp.compile(lambda x: model(x))
    a = _data((2, 4), 50)
    want = _linear(model, a)
    for _ in range(2):
        np.testing.assert_allclose(f(_t(a, A)).to_numpy(), want, rtol=1e-6)
    with bp.autocast("cpu", dtype=bp.bfloat16):  # the grad mode as the replay's
        for _ in range(2):
            cast = f(_t(a, A))
            assert cast.dtype == bp.bfloat16
            np.testing.assert_allclose(cast.to_numpy().astype(np.float32), want, rtol=2e-2,
                                       atol=2e-2)
    with bp.no_grad():
        for _ in range(2):
            np.testing.assert_allclose(f(_t(a, A)).to_numpy(), want, rtol=1e-6)
    assert f(_t(a, A)).dtype == bp.float32  # the first graph again
    assert _counts(f) == (3, 4)


def test_a_training_flag_changed_after_replays_records_again() -> None:
    linear = nn.Linear(8, 8, backend=C)
    model = nn.Sequential(linear, nn.Dropout(0.5))
    f = bp.compile(model)
    a = _data((4, 8), 51)
    for _ in range(2):
        dropped = f(_t(a)).to_numpy()
        assert (dropped == 0).any()  # a mask drawn at each call
    model.eval()
    for _ in range(2):
        np.testing.assert_allclose(f(_t(a)).to_numpy(), _linear(linear, a), rtol=1e-6)
    assert _counts(f) == (2, 2)


def test_nested_results_are_rebuilt_at_each_replay() -> None:
    f = bp.compile(lambda x: {"a": (x * 2.0, None), "b": [x + 1.0, 3, "s"]})
    for seed in range(3):
        a = _data((3,), 60 + seed)
        got = f(_t(a))
        assert set(got) == {"a", "b"} and type(got["a"]) is tuple and type(got["b"]) is list
        np.testing.assert_array_equal(got["a"][0].to_numpy(), a * np.float32(2.0))
        np.testing.assert_array_equal(got["b"][0].to_numpy(), a + np.float32(1.0))
        assert got["a"][1] is None and got["b"][1:] == [3, "s"]
    assert _counts(f) == (1, 2)


class _Blocks(nn.Module):
    def __init__(self) -> None:
        self.blocks = [nn.Linear(4, 4, backend=C), nn.Linear(4, 4, backend=C)]
        self.head = nn.Linear(4, 2, backend=C)

    def forward(self, x: bp.Tensor) -> bp.Tensor:
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def test_a_swapped_submodule_records_again() -> None:
    net = _Blocks()
    f = bp.compile(net)
    a = _data((3, 4), 70)

    def check() -> None:
        want = _linear(net.head, _linear(net.blocks[1], _linear(net.blocks[0], a)))
        for _ in range(2):
            np.testing.assert_allclose(f(_t(a)).to_numpy(), want, rtol=1e-5)

    check()
    net.head = nn.Linear(4, 2, backend=C)  # an attribute
    check()
    net.blocks[0] = nn.Linear(4, 4, backend=C)  # an item of a list attribute
    check()
    assert _counts(f) == (3, 3)


def test_a_swapped_optimizer_records_again() -> None:
    class Trainer:
        def __init__(self) -> None:
            self.model, self.opt = nn.Linear(4, 2, backend=A), optim.SGD(lr=0.1)

        def step(self, x: bp.Tensor) -> bp.Tensor:
            loss = self.model(x).sum()
            self.opt.step(self.model, loss.backward())
            return loss

    trainer = Trainer()
    f = bp.compile(trainer.step)
    a = _data((3, 4), 71)
    for lr in (0.1, 0.1, 0.1, 0.5, 0.5, 0.5):
        if lr != trainer.opt.param_groups[0]["lr"]:
            trainer.opt = optim.SGD(lr=lr)  # another optimizer, reached through an attribute
        bias_of = trainer.model.bias
        assert bias_of is not None
        weight, bias = trainer.model.weight.to_numpy(), bias_of.to_numpy()
        f(_t(a, A))
        # d(sum(x W^T + b))/dW is each row of W getting the column sums of x; /db the rows
        np.testing.assert_allclose(trainer.model.weight.to_numpy(),
                                   weight - np.float32(lr) * a.sum(0), rtol=1e-5)
        np.testing.assert_allclose(bias_of.to_numpy(), bias - np.float32(lr) * a.shape[0],
                                   rtol=1e-5)
    # each optimizer's first call makes its step counts (eager), the second records
    assert _counts(f) == (4, 2)


# ---- state reached through objects: scalars, new entries, deep and opaque state --------------
class _Scaled(nn.Module):
    """``linear(x) * scale + shift``, with Python scalars a replay must not bake."""

    def __init__(self) -> None:
        self.linear = nn.Linear(4, 3, backend=C)
        self.scale, self.shift = 0.5, 0.0

    def forward(self, x: bp.Tensor) -> bp.Tensor:
        return self.linear(x) * self.scale + self.shift


def test_a_modules_scalar_attribute_changed_after_replays() -> None:
    net = _Scaled()
    f = bp.compile(net)
    a = _data((2, 4), 80)
    for scale in (0.5, 0.5, 2.0, 2.0, 0.5):
        net.scale = scale
        for _ in range(2):
            np.testing.assert_allclose(f(_t(a)).to_numpy(),
                                       _linear(net.linear, a) * np.float32(scale), rtol=1e-6)
    assert _counts(f) == (2, 8)  # 0.5 and 2.0 recorded; 0.5 again replays its graph


def test_a_scalar_of_another_type_or_sign_records_again() -> None:
    net = _Scaled()
    f = bp.compile(lambda x: x * net.scale + net.shift)
    z = np.array([-0.0, 1.0], np.float32)
    for _ in range(2):
        assert not np.signbit(f(_t(z)).to_numpy()[0])  # -0.0 * 0.5 + 0.0 is +0.0
    net.shift = -0.0  # equal to 0.0, but -0.0 + -0.0 stays -0.0
    for _ in range(2):
        got = f(_t(z)).to_numpy()
        assert np.signbit(got[0]) and got[1] == np.float32(0.5)
    g = bp.compile(lambda n: n * net.scale)
    n = bp.Tensor.from_data(np.array([1, 2], np.int32), backend=C)
    net.scale = 2
    for _ in range(2):
        np.testing.assert_array_equal(g(n).to_numpy(), [2, 4])
    net.scale = 2.0  # equal to 2, but eager refuses an int tensor times a float
    with pytest.raises(bp.BurnpyError, match="int tensor"):
        g(n)


def test_dropouts_rate_changed_after_replays() -> None:
    drop = nn.Dropout(0.5)
    f = bp.compile(lambda x: drop(x))
    a = np.abs(_data((64,), 81)) + np.float32(1)
    for _ in range(2):
        assert (f(_t(a)).to_numpy() == 0).any()
    drop.p = 0.0  # keeps everything: the identity
    for _ in range(2):
        np.testing.assert_array_equal(f(_t(a)).to_numpy(), a)


class _Settings:
    def __init__(self) -> None:
        self.temperature = 2.0
        self.extra: Any = None


def test_a_user_objects_scalar_or_none_replaced_after_replays() -> None:
    settings = _Settings()
    w = _t(_data((3,), 82))

    def fn(x: bp.Tensor) -> bp.Tensor:
        y = x / settings.temperature
        return y if settings.extra is None else y + settings.extra

    f = bp.compile(fn)
    a = _data((3,), 83)
    for _ in range(2):
        np.testing.assert_allclose(f(_t(a)).to_numpy(), a / np.float32(2.0), rtol=1e-6)
    settings.temperature = 4.0
    for _ in range(2):
        np.testing.assert_allclose(f(_t(a)).to_numpy(), a / np.float32(4.0), rtol=1e-6)
    settings.extra = w  # None, now a tensor
    for _ in range(2):
        np.testing.assert_allclose(f(_t(a)).to_numpy(), a / np.float32(4.0) + w.to_numpy(),
                                   rtol=1e-6)
    assert _counts(f) == (3, 3)


def test_a_new_attribute_or_key_or_item_after_replays() -> None:
    settings, options, extra = _Settings(), {"scale": 2.0}, [1.0]

    def fn(x: bp.Tensor) -> bp.Tensor:
        y = x * options["scale"] * getattr(settings, "gain", 1.0) + options.get("shift", 0.0)
        for e in extra:
            y = y + e
        return y

    f = bp.compile(fn)
    a = _data((3,), 84)

    def check(want: np.ndarray) -> None:
        for _ in range(2):
            np.testing.assert_allclose(f(_t(a)).to_numpy(), want, rtol=1e-6)

    check(a * np.float32(2.0) + np.float32(1.0))
    options["scale"] = 3.0  # a dict's scalar
    check(a * np.float32(3.0) + np.float32(1.0))
    options["shift"] = 5.0  # a new key
    check(a * np.float32(3.0) + np.float32(6.0))
    settings.gain = 10.0  # type: ignore[attr-defined]  # a new attribute
    check(a * np.float32(30.0) + np.float32(6.0))
    extra.append(2.0)  # a longer list
    check(a * np.float32(30.0) + np.float32(8.0))
    extra[0] = -1.0  # a list's scalar
    check(a * np.float32(30.0) + np.float32(6.0))
    assert _counts(f) == (6, 6)


def test_a_tuple_of_tensors_replaced_after_replays() -> None:
    holder = _Settings()
    holder.extra = (_t(_data((3,), 85)), _t(_data((3,), 86)))
    f = bp.compile(lambda x: x * holder.extra[0] + holder.extra[1])
    a = _data((3,), 87)
    for seed in (88, 90):
        for _ in range(2):
            p, q = (t.to_numpy() for t in holder.extra)
            np.testing.assert_allclose(f(_t(a)).to_numpy(), a * p + q, rtol=1e-6)
        holder.extra = (_t(_data((3,), seed)), _t(_data((3,), seed + 1)))


def test_a_set_of_names_changed_after_replays() -> None:
    skip = {"scale"}
    f = bp.compile(lambda x: x if "scale" in skip else x * 2.0)
    a = _data((3,), 92)
    for _ in range(2):
        np.testing.assert_array_equal(f(_t(a)).to_numpy(), a)
    skip.clear()
    for _ in range(2):
        np.testing.assert_array_equal(f(_t(a)).to_numpy(), a * np.float32(2.0))


class _Slotted:
    __slots__ = ("factor", "weight")

    def __init__(self, factor: float, weight: bp.Tensor) -> None:
        self.factor, self.weight = factor, weight


def test_an_object_with_slots_changed_after_replays() -> None:
    obj = _Slotted(2.0, _t(_data((3,), 93)))
    f = bp.compile(lambda x: x * obj.weight * obj.factor)
    a = _data((3,), 94)

    def check() -> None:
        for _ in range(2):
            np.testing.assert_allclose(f(_t(a)).to_numpy(),
                                       a * obj.weight.to_numpy() * np.float32(obj.factor),
                                       rtol=1e-6)

    check()
    obj.factor = 3.0
    check()
    obj.weight = _t(_data((3,), 95))
    check()
    assert _counts(f) == (3, 3)


def _nest(levels: int, leaf: Any) -> Any:
    """``leaf`` under ``levels`` objects, each holding the next as ``inner``."""
    for _ in range(levels):
        outer = _Settings()
        outer.extra = leaf
        leaf = outer
    return leaf


def _deepest(obj: Any) -> Any:
    while isinstance(obj.extra, _Settings):
        obj = obj.extra
    return obj


@pytest.mark.parametrize("levels", [6, 40])
def test_state_deep_in_objects_changed_after_replays(levels: int) -> None:
    root = _nest(levels, _t(_data((3,), 96)))

    def fn(x: bp.Tensor) -> bp.Tensor:
        deepest = _deepest(root)
        return x * deepest.extra / deepest.temperature

    f = bp.compile(fn)
    a = _data((3,), 97)

    def check() -> None:
        deepest = _deepest(root)
        for _ in range(2):
            want = a * deepest.extra.to_numpy() / np.float32(deepest.temperature)
            np.testing.assert_allclose(f(_t(a)).to_numpy(), want, rtol=1e-6)

    check()
    _deepest(root).temperature = 8.0  # a scalar deep down
    check()
    _deepest(root).extra = _t(_data((3,), 98))  # a tensor deep down, replaced: bound anew
    check()
    info = f.cache_info()
    if levels == 6:  # walked whole: recorded and replayed
        assert (info.recordings, info.replays, info.eager_signatures) == (2, 4, 0)
    else:  # deeper than the walk goes: that signature runs eagerly
        assert info.eager_signatures == 1 and info.replays == 0
        with pytest.raises(bp.jit.GraphBreakError, match="objects deep"):
            bp.compile(fn, fullgraph=True)(_t(a))


def test_a_set_of_objects_runs_eagerly() -> None:
    held = {_Settings()}
    f = bp.compile(lambda x: x * next(iter(held)).temperature)
    a = _data((3,), 99)
    for temperature in (2.0, 2.0, 5.0, 5.0):
        next(iter(held)).temperature = temperature
        np.testing.assert_allclose(f(_t(a)).to_numpy(), a * np.float32(temperature), rtol=1e-6)
    assert f.cache_info().eager_signatures == 1


def test_optimizer_options_changed_after_replays() -> None:
    models = [nn.Linear(4, 2, backend=A), nn.Linear(4, 2, backend=A)]
    models[1].load_state_dict({k: v.clone() for k, v in models[0].state_dict().items()})
    opts = [optim.SGD(lr=0.1, momentum=0.9), optim.SGD(lr=0.1, momentum=0.9)]
    step, eager = bp.compile(_train(models[0], opts[0])), _train(models[1], opts[1])
    for i in range(9):
        if i == 4:
            for opt in opts:
                opt.param_groups[0]["weight_decay"] = 0.5
        if i == 7:
            for opt in opts:
                opt.param_groups[0]["nesterov"] = True
        x, y = _t(_data((3, 4), 100 + i), A), _t(_data((3, 2), 110 + i), A)
        np.testing.assert_array_equal(step(x, y).to_numpy(), eager(x, y).to_numpy())
        for p, q in zip(models[0].parameters(), models[1].parameters(), strict=True):
            np.testing.assert_array_equal(p.to_numpy(), q.to_numpy())
    assert _counts(step)[1] >= 4


def test_a_scheduler_stepped_inside_the_function() -> None:
    models = [nn.Linear(4, 2, backend=A), nn.Linear(4, 2, backend=A)]
    models[1].load_state_dict({k: v.clone() for k, v in models[0].state_dict().items()})
    opts = [optim.SGD(lr=0.1), optim.SGD(lr=0.1)]
    scheds = [optim.lr_scheduler.LambdaLR(o, lambda epoch: 0.5 ** epoch) for o in opts]

    def train(i: int) -> Callable[[bp.Tensor, bp.Tensor], bp.Tensor]:
        inner = _train(models[i], opts[i])

        def step(x: bp.Tensor, y: bp.Tensor) -> bp.Tensor:
            loss = inner(x, y)
            scheds[i].step()
            return loss

        return step

    step, eager = bp.compile(train(0)), train(1)
    for i in range(5):
        x, y = _t(_data((3, 4), 120 + i), A), _t(_data((3, 2), 130 + i), A)
        np.testing.assert_array_equal(step(x, y).to_numpy(), eager(x, y).to_numpy())
        for p, q in zip(models[0].parameters(), models[1].parameters(), strict=True):
            np.testing.assert_array_equal(p.to_numpy(), q.to_numpy())
        assert opts[0].param_groups[0]["lr"] == opts[1].param_groups[0]["lr"]


def test_a_zero_arguments_sign_records_again() -> None:
    shift = 0.0
    f = bp.compile(lambda x, s: x + s)
    g = bp.compile(lambda x: x + shift)
    z = _t(np.array([-0.0], np.float32))
    for s in (0.0, 0.0, -0.0, -0.0, 0.0):  # -0.0 + 0.0 is +0.0, -0.0 + -0.0 is -0.0
        assert np.signbit(f(z, s).to_numpy()[0]) == np.signbit(s)
    assert np.signbit(f(z, s=-0.0).to_numpy()[0])
    for value in (0.0, 0.0, -0.0, -0.0):
        shift = value  # a closure's zero
        assert np.signbit(g(z).to_numpy()[0]) == np.signbit(value)


class _ClassScaled(nn.Module):
    """``x * factor``, its factor a class attribute until an instance sets its own."""

    factor = 2.0

    def forward(self, x: bp.Tensor) -> bp.Tensor:
        return x * self.factor


def test_a_class_attribute_changed_after_replays() -> None:
    net = _ClassScaled()
    f = bp.compile(net)
    a = _data((3,), 140)
    try:
        for factor in (2.0, 3.0):
            _ClassScaled.factor = factor
            for _ in range(2):
                np.testing.assert_array_equal(f(_t(a)).to_numpy(), a * np.float32(factor))
        net.factor = 5.0  # an instance's own, over the class's
        for _ in range(2):
            np.testing.assert_array_equal(f(_t(a)).to_numpy(), a * np.float32(5.0))
    finally:
        _ClassScaled.factor = 2.0
    assert _counts(f) == (3, 3)


def test_a_numpy_array_written_after_replays() -> None:
    holder = _Settings()
    holder.extra = np.ones(3, np.float32)
    f = bp.compile(lambda x: x * bp.Tensor.from_data(holder.extra, backend=C))
    a = _data((3,), 141)
    for _ in range(2):
        np.testing.assert_array_equal(f(_t(a)).to_numpy(), a)
    holder.extra[1] = 5.0  # written in place: what the recording baked is stale
    for _ in range(2):
        np.testing.assert_array_equal(f(_t(a)).to_numpy(), a * holder.extra)
    holder.extra = holder.extra.astype(np.float64)  # another dtype
    np.testing.assert_array_equal(f(_t(a)).to_numpy(), a * holder.extra)
    assert _counts(f) == (3, 2)

    big = np.ones(1 << 15, np.float32)  # past what a replay compares: runs eagerly
    g = bp.compile(lambda x: x * bp.Tensor.from_data(big, backend=C).sum())
    for value in (1.0, 2.0):
        big[:] = value
        np.testing.assert_allclose(g(_t(a)).to_numpy(), a * np.float32(value * big.size))
    assert g.cache_info().eager_signatures == 1


def test_a_scalar_the_function_changes_records_each_call() -> None:
    counter = _Settings()
    counter.extra = 0

    def fn(x: bp.Tensor) -> bp.Tensor:
        counter.extra += 1  # a replay would not count: each call records, as eager counts
        return x * float(counter.extra)

    f = bp.compile(fn)
    a = _data((3,), 142)
    for n in range(1, 5):
        np.testing.assert_array_equal(f(_t(a)).to_numpy(), a * np.float32(n))
    assert counter.extra == 4 and _counts(f) == (4, 0)


def test_a_closure_held_in_state_changed_after_replays() -> None:
    def make() -> tuple[Callable[[bp.Tensor], bp.Tensor], Callable[[float], None],
                        dict[str, float]]:
        scale, options = 2.0, {"shift": 1.0}

        def post(y: bp.Tensor) -> bp.Tensor:
            return y * scale + options["shift"]

        def rescale(value: float) -> None:
            nonlocal scale
            scale = value

        return post, rescale, options

    post, rescale, options = make()
    holder = _Settings()
    holder.extra = post  # a function held in state, reached through an attribute
    f = bp.compile(lambda x: holder.extra(x))
    a = _data((3,), 143)

    def check(scale: float, shift: float) -> None:
        for _ in range(2):
            np.testing.assert_allclose(f(_t(a)).to_numpy(),
                                       a * np.float32(scale) + np.float32(shift), rtol=1e-6)

    check(2.0, 1.0)
    rescale(3.0)  # a cell rebound
    check(3.0, 1.0)
    options["shift"] = -1.0  # a dict in a cell
    check(3.0, -1.0)
    assert _counts(f) == (3, 3)


def test_a_learning_rate_reached_through_its_group_stays_symbolic() -> None:
    models = [nn.Linear(4, 2, backend=A), nn.Linear(4, 2, backend=A)]
    models[1].load_state_dict({k: v.clone() for k, v in models[0].state_dict().items()})
    opts = [optim.SGD(lr=0.1), optim.SGD(lr=0.1)]
    groups = opts[0].param_groups  # reached before the optimizer: the group's other options
    inner = _train(models[0], opts[0])  # by value, its rate still read at each call

    def step(x: bp.Tensor, y: bp.Tensor) -> bp.Tensor:
        return inner(x, y) * groups[0]["momentum"]

    f, eager = bp.compile(step), _train(models[1], opts[1])
    for i in range(5):
        for opt in opts:
            opt.param_groups[0]["lr"] = 0.1 / (i + 1)
        x, y = _t(_data((3, 4), 150 + i), A), _t(_data((3, 2), 160 + i), A)
        np.testing.assert_array_equal(f(x, y).to_numpy(), eager(x, y).to_numpy() * 0.0)
        for p, q in zip(models[0].parameters(), models[1].parameters(), strict=True):
            np.testing.assert_array_equal(p.to_numpy(), q.to_numpy())
    assert _counts(f) == (2, 3)  # the first call makes the step counts, the second records


LOG = logging.getLogger("burnpy.tests.compile_guards")


def test_a_logger_reached_is_held_not_walked() -> None:
    """A logger reaches every logger of the process, and its level cache changes as it logs:
    walked, it would make each replay check hundreds of entries (and the first call's log
    record again); it computes no values, so it is held by identity only."""

    def fn(x: bp.Tensor) -> bp.Tensor:
        LOG.debug("a step")
        return x * 2.0

    f = bp.compile(fn)
    a = _data((3,), 170)
    for _ in range(4):
        np.testing.assert_array_equal(f(_t(a)).to_numpy(), a * np.float32(2.0))
    assert _counts(f) == (1, 3)


def test_more_state_than_a_replay_checks_runs_eagerly() -> None:
    table = [0.0] * 10_001  # more entries than a replay checks

    def fn(x: bp.Tensor) -> bp.Tensor:
        return x + table[-1]

    f = bp.compile(fn)
    a = _data((3,), 171)
    for value in (1.0, 1.0, 2.0):
        table[-1] = value
        np.testing.assert_array_equal(f(_t(a)).to_numpy(), a + np.float32(value))
    assert f.cache_info().eager_signatures == 1 and _counts(f)[1] == 0
    with pytest.raises(bp.jit.GraphBreakError, match="more than 10000 entries"):
        bp.compile(fn, fullgraph=True)(_t(a))


def test_a_closure_of_another_modules_function_changed_after_replays() -> None:
    scope: dict[str, Any] = {}  # a function of another module: its globals are not ours
    exec("def make(options):\n"
         "    def post(y):\n"
         "        return y * options['scale']\n"
         "    return post\n", scope)
    options = {"scale": 2.0}
    post = scope["make"](options)
    f = bp.compile(lambda x: post(x))
    a = _data((3,), 172)
    for scale in (2.0, 2.0, 5.0, 5.0):
        options["scale"] = scale
        np.testing.assert_array_equal(f(_t(a)).to_numpy(), a * np.float32(scale))
    assert _counts(f) == (2, 2)


@pytest.mark.parametrize("source", ["numpy global", "numpy generator", "python random"])
def test_host_random_draws_run_eagerly(source: str) -> None:
    """A value drawn on the host inside ``fn`` would be baked into the graph: a recording that
    advances a host generator (reached, or NumPy's or Python's global one) runs eagerly, each
    call drawing anew; with fullgraph=True it raises."""
    import random

    rng = np.random.default_rng(0)

    def draw() -> float:
        if source == "numpy global":
            return float(np.random.standard_normal())
        if source == "numpy generator":
            return float(rng.standard_normal())
        return random.random()

    def noisy(x: bp.Tensor) -> bp.Tensor:
        return x + draw()

    f = bp.compile(noisy)
    x = _t(np.zeros(3, np.float32))
    results = {float(f(x).to_numpy()[0]) for _ in range(4)}
    assert len(results) == 4  # four draws, none repeated by a replay
    assert f.cache_info().replays == 0 and f.cache_info().eager_calls == 3
    with pytest.raises(bp.jit.GraphBreakError, match="draws host random numbers"):
        bp.compile(noisy, fullgraph=True)(x)


def test_a_generator_unused_by_the_function_does_not_stop_replays() -> None:
    rng = np.random.default_rng(0)
    f = bp.compile(lambda x: x * 2.0 if rng is not None else x)
    x = _t(np.ones(3, np.float32))
    for _ in range(3):
        np.testing.assert_array_equal(f(x).to_numpy(), np.full(3, 2.0, np.float32))
    assert _counts(f) == (1, 2)


@pytest.mark.parametrize("kind", ["generator", "list iterator"])
def test_an_iterator_reached_runs_eagerly(kind: str) -> None:
    """``next(batches)`` inside ``fn`` would be replayed as the first batch again: a call
    reaching an iterator runs eagerly, taking a new batch each time."""
    data = [np.full(2, float(i), np.float32) for i in range(4)]
    batches = (d for d in data) if kind == "generator" else iter(data)

    def step(scale: bp.Tensor) -> bp.Tensor:
        return _t(next(batches)) * scale

    f = bp.compile(step)
    scale = _t(np.full(2, 3.0, np.float32))
    got = [f(scale).to_numpy() for _ in range(4)]
    np.testing.assert_array_equal(got, [d * 3.0 for d in data])
    with pytest.raises(bp.jit.GraphBreakError, match="iterator"):
        bp.compile(step, fullgraph=True)(scale)


_MODULE_MODEL = nn.Linear(3, 2, backend=A)
_MODULE_OPT = optim.SGD(lr=0.1)


def _module_train(x: bp.Tensor) -> bp.Tensor:
    loss = (_MODULE_MODEL(x) ** 2).mean()
    _MODULE_OPT.step(_MODULE_MODEL, loss.backward())  # ``step``: an attribute, not a global
    return loss


step = bp.compile(_module_train)  # a global named like the optimizer's method


def test_an_attribute_name_is_not_a_global_and_a_compiled_function_is_not_state() -> None:
    # co_names lists ``step`` for ``_MODULE_OPT.step``: taken for a global, it made the
    # compiled function itself (its growing cache) part of the state, and no call replayed
    def outer(x: bp.Tensor) -> bp.Tensor:  # calls a compiled function: its ops join the graph
        return step(x) * 2.0

    compiled_outer = bp.compile(outer)
    weight = _MODULE_MODEL.weight.to_numpy().copy()
    bias = _MODULE_MODEL.bias.to_numpy().copy() if _MODULE_MODEL.bias is not None else 0.0
    for i in range(10):
        x = _data((4, 3), i)
        out = x @ weight.T + bias
        got = step(_t(x, A)) if i < 5 else compiled_outer(_t(x, A)) / 2.0
        np.testing.assert_allclose(got.to_numpy(), (out ** 2).mean(), rtol=1e-5, err_msg=str(i))
        grad_out = 2 * out / out.size
        weight = weight - np.float32(0.1) * (grad_out.T @ x)
        bias = bias - np.float32(0.1) * grad_out.sum(0)
        np.testing.assert_allclose(_MODULE_MODEL.weight.to_numpy(), weight, rtol=1e-5)
    assert step.cache_info()[3:5] == (2, 3)  # recordings, replays
    assert compiled_outer.cache_info().replays == 4
