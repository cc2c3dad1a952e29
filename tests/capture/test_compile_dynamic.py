"""``bp.compile(dynamic=True)``: one graph for every size of the arguments' dims. Each call's
results and the state it leaves are compared bit for bit with the same calls run eagerly on a
twin, at sizes the graph was not recorded at; and where a program depends on the sizes in a
way the graph cannot follow (a host array built from a size, a Python loop over one, a branch
on one), every call is still right and the recording counts show the specialization."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import burnpy as bp
import burnpy.nn.functional as F
from burnpy import nn, optim
from burnpy.capture.dynamic import Shaped
from burnpy.examples.digits import DigitsCNN
from burnpy.examples.gpt_model import GPT, GPTConfig, training_step
from burnpy.fusion import Fusion
from burnpy_cpu import CpuBackend
from burnpy_wgpu import WgpuBackend

C = bp.Capture(CpuBackend)
A = bp.Autodiff(C)


def _floats(shape: tuple[int, ...], seed: int, backend: Any = A) -> bp.Tensor:
    data = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return bp.Tensor.from_data(data, backend=backend)


def _same_state(a: nn.Module, b: nn.Module) -> None:
    sa, sb = a.state_dict(), b.state_dict()
    for k in sa:
        assert np.array_equal(sa[k].to_numpy(), sb[k].to_numpy()), k


def _mlp_twins(backend: Any) -> tuple[nn.Module, nn.Module]:
    def mlp() -> nn.Module:
        return nn.Sequential(nn.Linear(6, 16, backend=backend), nn.GELU(),
                             nn.Linear(16, 3, backend=backend))
    a, b = mlp(), mlp()
    b.load_state_dict({k: v.clone() for k, v in a.state_dict().items()})
    return a, b


def _mlp_step(model: nn.Module, opt: optim.Optimizer) -> Callable[..., Any]:
    def step(x: bp.Tensor, y: bp.Tensor) -> tuple[bp.Tensor, bp.Tensor]:
        loss = ((model(x) - y) ** 2).mean()
        opt.step(model, loss.backward())
        return loss, model(x)
    return step


@pytest.mark.parametrize("backend", [A, bp.Autodiff(bp.Capture(Fusion(CpuBackend))),
                                     bp.Autodiff(bp.Capture(WgpuBackend))],
                         ids=["cpu", "fusion", "wgpu"])
def test_an_adam_step_replays_one_graph_at_every_batch_size(backend: Any) -> None:
    compiled_model, eager_model = _mlp_twins(backend)
    step = bp.compile(_mlp_step(compiled_model, optim.Adam(lr=1e-2)), dynamic=True)
    eager = _mlp_step(eager_model, optim.Adam(lr=1e-2))
    sizes = [4, 4, 4, 8, 5, 12, 4, 9, 9, 2]
    for i, n in enumerate(sizes):
        x, y = _floats((n, 6), 10 + i, backend), _floats((n, 3), 40 + i, backend)
        (loss, out), (eager_loss, eager_out) = step(x, y), eager(x, y)
        assert np.array_equal(loss.to_numpy(), eager_loss.to_numpy()), n
        assert np.array_equal(out.to_numpy(), eager_out.to_numpy()), n
        assert out.shape == (n, 3)
        _same_state(compiled_model, eager_model)
    info = step.cache_info()
    # the first step makes Adam's moments (eager); the second records; the first other size
    # records again and finds the same program: every later size replays that one graph
    assert (info.recordings, info.replays, info.dynamic_graphs, info.size) == (3, 7, 1, 1)


def test_the_gpt_step_replays_at_other_batch_sizes_and_context_lengths() -> None:
    config = GPTConfig(vocab_size=11, block_size=8, n_layer=1, n_head=2, n_embd=8)
    compiled_model, eager_model = GPT(config, backend=A), GPT(config, backend=A)
    eager_model.load_state_dict({k: v.clone() for k, v in compiled_model.state_dict().items()})

    step = bp.compile(training_step(compiled_model), dynamic=True)
    eager = training_step(eager_model)
    rng = np.random.default_rng(5)
    shapes = [(2, 8), (2, 8), (2, 8), (3, 8), (5, 8), (4, 6), (4, 6), (2, 3), (6, 7)]
    for shape in shapes:
        x, y = (bp.Tensor.from_numpy(rng.integers(0, 11, shape), backend=A) for _ in "xy")
        assert np.array_equal(step(x, y).to_numpy(), eager(x, y).to_numpy()), shape
        _same_state(compiled_model, eager_model)
    info = step.cache_info()
    assert info.dynamic_graphs == 1
    assert info.recordings <= 4  # (2, 8) twice, (3, 8) confirms; at most one more for T
    assert info.replays >= len(shapes) - info.recordings


def test_a_branch_on_a_size_records_each_outcome_once() -> None:
    def fn(x: bp.Tensor) -> bp.Tensor:
        return x * 2.0 if x.shape[0] > 6 else x * 3.0 + x.shape[0]

    compiled = bp.compile(fn, dynamic=True)
    for i, n in enumerate([3, 4, 5, 8, 9, 10, 4, 11, 2]):
        x = _floats((n, 2), i, C)
        np.testing.assert_array_equal(compiled(x).to_numpy(), fn(x).to_numpy())
    info = compiled.cache_info()
    assert info.dynamic_graphs == 2  # one graph per outcome of the branch
    assert info.recordings == 4


def test_sizes_that_escape_into_host_data_specialize_and_stay_right() -> None:
    def from_host(x: bp.Tensor) -> bp.Tensor:  # np.arange reads the size without a guard
        ramp = bp.Tensor.from_numpy(np.arange(x.shape[0], dtype=np.float32), backend=C)
        return x + ramp.reshape(-1, 1)

    def python_loop(x: bp.Tensor) -> bp.Tensor:  # range() reads it too
        total = x[0]
        for i in range(1, x.shape[0]):
            total = total + x[i] * float(i)
        return total

    for fn in (from_host, python_loop):
        compiled = bp.compile(fn, dynamic=True)
        sizes = [3, 3, 5, 5, 7, 3]
        for i, n in enumerate(sizes):
            x = _floats((n, 4), 20 + i, C)
            np.testing.assert_array_equal(compiled(x).to_numpy(), fn(x).to_numpy())
        info = compiled.cache_info()
        assert info.dynamic_graphs == 0  # every graph serves its own size only
        assert (info.recordings, info.replays) == (3, 3)


def test_symbolic_slices_scalars_and_reshapes_follow_the_sizes() -> None:
    def fn(x: bp.Tensor) -> tuple[bp.Tensor, bp.Tensor, int]:
        n, m = x.shape
        half = x[: n // 2, 1:]
        return half.reshape(-1) * 2.0, x.reshape(m, n).sum(dim=0) / n, n * m

    compiled = bp.compile(fn, dynamic=True)
    for i, (n, m) in enumerate([(4, 3), (4, 3), (6, 5), (9, 4), (7, 5)]):
        x = _floats((n, m), 30 + i, C)
        got, want = compiled(x), fn(x)
        for a, b in zip(got[:2], want[:2], strict=True):
            np.testing.assert_array_equal(a.to_numpy(), b.to_numpy())
        assert got[2] == want[2] == n * m and type(got[2]) is int
        assert type(got[0].primitive) is np.ndarray  # no symbolic primitive escapes
    assert compiled.cache_info().dynamic_graphs == 1
    assert compiled.cache_info().recordings == 2


def test_size_one_dims_and_tracked_arguments_stay_fixed() -> None:
    compiled = bp.compile(lambda x: x * 2.0, dynamic=True)
    for n in (1, 3, 1, 4):  # a size-1 dim broadcasts: its own signature, as in torch
        x = _floats((n, 2), n, C)
        np.testing.assert_array_equal(compiled(x).to_numpy(), x.to_numpy() * np.float32(2))
    assert compiled.cache_info().recordings == 3

    def grad_of(x: bp.Tensor) -> bp.Tensor | None:
        return x.grad((x * x).sum().backward())

    tracked = bp.compile(grad_of, dynamic=True)
    for n in (3, 3, 5, 5):
        x = _floats((n, 2), n).require_grad()
        np.testing.assert_array_equal(tracked(x).to_numpy(), 2 * x.to_numpy())
    assert tracked.cache_info().dynamic_graphs == 0


def test_no_symbolic_primitive_outlives_the_recording() -> None:
    model, _ = _mlp_twins(A)
    holder: dict[str, bp.Tensor] = {}

    def fn(x: bp.Tensor) -> bp.Tensor:
        out = model(x)
        holder["last"] = out.detach()
        return out

    compiled = bp.compile(fn, dynamic=True)
    out = compiled(_floats((5, 6), 0))
    for t in (out, holder["last"]):
        primitive = A.inner(t.primitive)
        assert not isinstance(primitive, Shaped) and type(primitive) is np.ndarray
        np.testing.assert_array_equal((t * 1.0).to_numpy(), t.to_numpy())


def test_the_digits_cnn_step_with_dropout_and_batch_norm_replays_at_every_batch_size() -> None:
    compiled_model = DigitsCNN(backend=A, dropout=0.2)
    eager_model = DigitsCNN(backend=A, dropout=0.2)
    eager_model.load_state_dict({k: v.clone() for k, v in compiled_model.state_dict().items()})

    def step_of(model: nn.Module) -> Callable[..., bp.Tensor]:
        opt = optim.Adam(lr=1e-3)

        def step(x: bp.Tensor, y: bp.Tensor) -> bp.Tensor:
            loss = F.cross_entropy(model(x), y)
            opt.step(model, loss.backward())
            return loss
        return step

    step, eager = bp.compile(step_of(compiled_model), dynamic=True), step_of(eager_model)
    rng = np.random.default_rng(0)
    for n in [32, 32, 32, 17, 32, 5, 64, 17]:
        x = rng.standard_normal((n, 1, 8, 8)).astype(np.float32)
        y = rng.integers(0, 10, n)
        losses = []
        for fn in (step, eager):  # the same dropout masks: the generator reseeded for each
            A.seed(A.default_device(), n)
            losses.append(fn(bp.Tensor.from_data(x, backend=A),
                             bp.Tensor.from_data(y, backend=A)).to_numpy())
        assert np.array_equal(*losses), n
        _same_state(compiled_model, eager_model)  # weights and batch norm's running stats
    info = step.cache_info()
    assert (info.dynamic_graphs, info.recordings, info.replays) == (1, 3, 5)


def test_a_recording_that_raises_leaves_no_symbolic_primitive_in_the_state() -> None:
    model, _ = _mlp_twins(A)
    state: dict[str, bp.Tensor] = {}

    def fn(x: bp.Tensor) -> bp.Tensor:
        state["hidden"] = model(x)
        raise ValueError("user code failed")

    compiled = bp.compile(fn, dynamic=True)
    with pytest.raises(ValueError, match="user code failed"):
        compiled(_floats((5, 6), 0))
    assert type(A.inner(state["hidden"].primitive)) is np.ndarray
    assert state["hidden"].shape == (5, 3) and type(state["hidden"].shape[0]) is int
