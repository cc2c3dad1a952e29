"""``bp.compile`` on WebGPU: a replay of a graph recorded on ``Capture(WgpuBackend)`` is one
submission of the dispatches taped on its first replay (``burnpy_wgpu.replay``), rebound to
each call's buffers. Results are compared bit for bit with the same steps run eagerly on
``WgpuBackend`` (the same kernels on the same parameter words), and with NumPy or
``CpuBackend`` as independent oracles."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import burnpy as bp
import burnpy_wgpu.backend
from burnpy import nn, optim
from burnpy.examples.gpt_model import GPT, GPTConfig, training_step
from burnpy_cpu import CpuBackend
from burnpy_wgpu import WgpuBackend
from burnpy_wgpu.kernels.common import entry, header
from burnpy_wgpu.kernels.elementwise import launch_map
from burnpy_wgpu.replay import TapedReplay
from burnpy_wgpu.runtime import runtime_for

C = bp.Capture(WgpuBackend)
A = bp.Autodiff(C)
E = bp.Autodiff(WgpuBackend)
CPU = bp.Autodiff(CpuBackend)
DEV = WgpuBackend.default_device()
RT = runtime_for(DEV)


@pytest.fixture
def runners(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[TapedReplay]]:
    """The taped replays ``WgpuBackend.replay_runner`` makes during the test, in order."""
    made: list[TapedReplay] = []

    def tracked(run: Any, graph: Any) -> TapedReplay:
        made.append(TapedReplay(run, graph))
        return made[-1]

    monkeypatch.setattr(burnpy_wgpu.backend, "TapedReplay", tracked)
    yield made


def _floats(shape: tuple[int, ...], seed: int, backend: Any = C) -> bp.Tensor:
    data = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return bp.Tensor.from_data(data, backend=backend)


def _same_weights(a: nn.Module, b: nn.Module) -> None:
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys()
    for k in sa:
        assert np.array_equal(sa[k].to_numpy(), sb[k].to_numpy()), k


def test_training_step_replays_as_one_submission_equal_to_eager_bitwise(
        runners: list[TapedReplay]) -> None:
    def mlp(backend: Any) -> nn.Module:
        return nn.Sequential(nn.Linear(12, 32, backend=backend), nn.LayerNorm(32, backend=backend),
                             nn.GELU(), nn.Linear(32, 5, backend=backend))

    compiled_model, eager_model = mlp(A), mlp(E)
    eager_model.load_state_dict({k: bp.Tensor.from_data(v.to_numpy(), backend=E)
                                 for k, v in compiled_model.state_dict().items()})

    def trainer(model: nn.Module) -> Callable[[bp.Tensor, bp.Tensor], bp.Tensor]:
        opt = optim.AdamW(lr=1e-2, grad_clipping=optim.GradientClipping.norm(0.5))

        def train(x: bp.Tensor, y: bp.Tensor) -> bp.Tensor:
            loss = ((model(x) - y) ** 2).mean()
            opt.step(model, loss.backward())
            return loss
        return train

    step, eager = bp.compile(trainer(compiled_model), fullgraph=True), trainer(eager_model)
    for i in range(6):
        x, y = _floats((16, 12), 2 * i, A), _floats((16, 5), 2 * i + 1, A)
        RT.flush()
        submits = RT.stats["submits"]
        loss = step(x, y)
        pending = RT.pending_dispatches()
        value = loss.to_numpy()
        replay_submits = RT.stats["submits"] - submits
        expected = eager(*(bp.Tensor.from_data(t.to_numpy(), backend=E) for t in (x, y)))
        assert np.array_equal(value, expected.to_numpy()), i
        _same_weights(compiled_model, eager_model)
        if i >= 2:  # the first call creates AdamW's state, the second records
            # the replay's dispatches wait in one batch, submitted once with the readback
            assert pending > 50 and replay_submits == 1, i
    (runner,) = runners
    assert runner.stats["replays"] == 3  # after the replay that taped
    # every op call but AdamW's steps (a learning rate and step count each) is taped
    assert set(runner.untaped) == {"a symbolic scalar"}
    live = runner.untaped["a symbolic scalar"]
    assert runner.stats == {"played": 3 * (len(runner.tapes) - live), "live": 3 * live,
                            "mismatched": 0, "replays": 3}


def test_gpt_step_replays_equal_to_eager_and_cpu(runners: list[TapedReplay]) -> None:
    config = GPTConfig(vocab_size=13, block_size=8, n_layer=1, n_head=2, n_embd=16)
    model = GPT(config, backend=A)
    state = {k: v.to_numpy() for k, v in model.state_dict().items()}
    twins = {name: GPT(config, backend=b) for name, b in (("eager", E), ("cpu", CPU))}
    for twin in twins.values():
        twin.load_state_dict({k: bp.Tensor.from_data(v, backend=twin.backend)
                              for k, v in state.items()})
    step = bp.compile(training_step(model), fullgraph=True)
    eager, cpu = training_step(twins["eager"]), training_step(twins["cpu"])
    rng = np.random.default_rng(7)
    for i in range(6):
        x, y = (rng.integers(0, 13, (3, 8)).astype(np.int32) for _ in "xy")
        xs, ys = bp.Tensor.from_data(x, backend=A), bp.Tensor.from_data(y, backend=A)
        RT.flush()
        submits = RT.stats["submits"]
        loss = step(xs, ys)
        loss.to_numpy()
        if i >= 2:  # one submission: the embedding's bounds checks read no kernel's output
            assert RT.stats["submits"] - submits == 1, i
        expected = eager(bp.Tensor.from_data(x, backend=E), bp.Tensor.from_data(y, backend=E))
        reference = cpu(bp.Tensor.from_data(x.astype(np.int64), backend=CPU),
                        bp.Tensor.from_data(y.astype(np.int64), backend=CPU))
        # the embeddings' gradients sum rows with float atomics, in whichever order the
        # adapter's threads run: eager and replayed steps agree to rounding, not bitwise
        # (the keys' bias, whose gradient is zero but for rounding, drifts apart under Adam)
        np.testing.assert_allclose(loss.to_numpy(), expected.to_numpy(), rtol=1e-6, err_msg=str(i))
        np.testing.assert_allclose(loss.to_numpy(), reference.to_numpy(), rtol=2e-5)
    assert step.cache_info().replays == 4
    (runner,) = runners
    assert runner.stats["replays"] == 3 and runner.stats["mismatched"] == 0
    # live at each replay: the two AdamW groups' steps, and the small uploads (positions)
    assert runner.untaped["a symbolic scalar"] == 2 and set(runner.untaped) == {
        "a symbolic scalar", "upload"}
    assert runner.stats["played"] == 3 * (len(runner.tapes) - sum(runner.untaped.values()))


def test_dropout_draws_fresh_masks_equal_to_eager(runners: list[TapedReplay]) -> None:
    layers = [nn.Linear(6, 32, backend=C), nn.GELU(), nn.Dropout(0.5),
              nn.Linear(32, 3, backend=C)]
    compiled_model = nn.Sequential(*layers)
    eager_model = nn.Sequential(nn.Linear(6, 32, backend=WgpuBackend), nn.GELU(),
                                nn.Dropout(0.5), nn.Linear(32, 3, backend=WgpuBackend))
    eager_model.load_state_dict({k: bp.Tensor.from_data(v.to_numpy(), backend=WgpuBackend)
                                 for k, v in compiled_model.state_dict().items()})
    forward = bp.compile(compiled_model)
    x = _floats((8, 6), 3)
    xe = bp.Tensor.from_data(x.to_numpy(), backend=WgpuBackend)
    WgpuBackend.seed(DEV, 99)
    compiled = [forward(x).to_numpy() for _ in range(5)]
    WgpuBackend.seed(DEV, 99)
    eager = [eager_model(xe).to_numpy() for _ in range(5)]
    for c, e in zip(compiled, eager, strict=True):
        assert np.array_equal(c, e)
    assert not np.array_equal(compiled[3], compiled[4])  # a new mask at each taped replay
    (runner,) = runners
    assert runner.untaped.get("random numbers") == 1
    assert runner.stats["replays"] == 3 and runner.stats["played"] > 0


def test_shape_change_records_and_tapes_again(runners: list[TapedReplay]) -> None:
    w = _floats((5, 4), 11)

    def f(x: bp.Tensor) -> bp.Tensor:
        return (x @ w).tanh() * 2.0 + x.sum(dim=1, keepdim=True)

    compiled = bp.compile(f)
    wn = w.to_numpy().astype(np.float64)

    def expected(x: bp.Tensor) -> np.ndarray:
        xn = x.to_numpy().astype(np.float64)
        return np.tanh(xn @ wn) * 2.0 + xn.sum(axis=1, keepdims=True)

    for rows, seed in ((3, 0), (3, 1), (3, 2), (7, 3), (7, 4), (7, 5), (3, 6), (3, 7)):
        x = _floats((rows, 5), seed)
        got = compiled(x)
        np.testing.assert_allclose(got.to_numpy(), expected(x), rtol=1e-5, atol=1e-6)
        assert np.array_equal(got.to_numpy(), f(x).to_numpy())  # eager: the same kernels
        assert got.shape == (rows, 4)
    assert compiled.cache_info().recordings == 2
    first, second = runners
    assert first.stats["replays"] == 3 and second.stats["replays"] == 1  # (3: 2, then 2 more)
    assert first.tapes is not second.tapes and len(first.tapes) == len(second.tapes)
    assert first.stats["mismatched"] == second.stats["mismatched"] == 0


def test_an_input_of_another_layout_runs_its_ops_for_real(runners: list[TapedReplay]) -> None:
    compiled = bp.compile(lambda x: (x * 3.0).exp() - x)
    base = _floats((4, 4), 21)
    for x in (base, _floats((4, 4), 22), _floats((4, 4), 23).swap_dims(0, 1), base):
        xn = x.to_numpy()
        got = compiled(x).to_numpy()
        np.testing.assert_allclose(got, np.exp(xn * 3.0) - xn, rtol=1e-5)
    (runner,) = runners
    # the transposed input has the recorded shape but other strides: its calls ran for real
    assert runner.stats["mismatched"] >= 1 and runner.stats["played"] >= 2


def test_results_of_earlier_replays_survive_later_ones(runners: list[TapedReplay]) -> None:
    w = _floats((16, 16), 31)

    def f(x: bp.Tensor) -> tuple[bp.Tensor, bp.Tensor]:
        h = (x @ w).relu()
        return h * 0.5 + 1.0, (h - x).sum(dim=0)

    compiled = bp.compile(f)
    inputs = [_floats((8, 16), 40 + i) for i in range(8)]
    kept = [compiled(x) for x in inputs]  # nothing read until every replay has run
    wn = w.to_numpy().astype(np.float64)
    for x, (a, b) in zip(inputs, kept, strict=True):
        xn = x.to_numpy().astype(np.float64)
        h = np.maximum(xn @ wn, 0.0)
        np.testing.assert_allclose(a.to_numpy(), h * 0.5 + 1.0, rtol=1e-5)
        np.testing.assert_allclose(b.to_numpy(), (h - xn).sum(axis=0), rtol=1e-5, atol=1e-5)
    (runner,) = runners
    assert runner.stats["replays"] == 6 and runner.stats["mismatched"] == 0


def test_arange_is_uploaded_with_its_host_copy_when_small() -> None:
    # embedding's bounds check reads the positions on the host: a small arange keeps its
    # values there, so a replay checking them waits for no kernel (one submission)
    b = WgpuBackend
    for start, end, step, dtype, host in ((0, 16, 1, bp.int32, True), (5, -7, -3, bp.int32, True),
                                          (-3, 3, 1, bp.uint32, True),
                                          (0, 70000, 3, bp.int32, False),
                                          (-9, 300000, 5, bp.uint32, False)):
        t = b.int_arange(start, end, step, DEV, dtype)
        assert (t.handle.slab.host is not None) == host
        RT.flush()
        submits = RT.stats["submits"]
        got = b.int_into_data(t).array
        assert (RT.stats["submits"] == submits) == host  # no readback from a host copy
        want = np.arange(start, end, step).astype(np.uint32 if dtype is bp.uint32 else np.int32)
        assert got.dtype == want.dtype and np.array_equal(got, want)


def test_a_taped_dispatch_reading_its_own_output_is_copied_first(
        runners: list[TapedReplay]) -> None:
    # an op whose second kernel reads and writes the buffer it allocated: WebGPU forbids the
    # binding, the runtime copies the read side first, and a tape must keep doing so (exp,
    # on a backend of its own, is that op here: 2x + 1)
    double = RT.kernel(("test_taped_alias",), lambda: header(["f32"], ["f32"]) + entry(
        "    if (gid < mu(0u)) { out0[gid] = in0[gid] * 2.0 + 1.0; }"), 1, 1)

    def exp_as_affine(tensor: Any) -> Any:
        out = launch_map(RT, "a", [tensor], tensor.dtype)
        RT.dispatch_linear(double, [out.handle.slab], [out.handle.slab], [out.numel()], 1)
        return out

    class AliasingWgpu(WgpuBackend):
        float_exp = staticmethod(exp_as_affine)

    compiled = bp.compile(lambda x: (x - 1.0).exp() * 3.0)
    for seed in range(5):
        x = _floats((4, 8), 60 + seed, bp.Capture(AliasingWgpu))
        copies = RT.stats["alias_copies"]
        got = compiled(x).to_numpy()
        assert RT.stats["alias_copies"] == copies + 1
        xn = x.to_numpy().astype(np.float64)
        np.testing.assert_allclose(got, ((xn - 1.0) * 2.0 + 1.0) * 3.0, rtol=1e-6, atol=1e-6)
    (runner,) = runners
    aliased = [t for t in runner.tapes if t is not None and t.aliased]
    assert len(aliased) == 1 and runner.stats["played"] == 3 * 3
