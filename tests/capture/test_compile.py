"""``bp.compile``: a compiled function records once per signature and replays after, with the
state it reaches (parameters, buffers, optimizer state, step counts, learning rates) bound as
the graph's inputs and written back from its outputs; every result is compared bit for bit
with the same steps run eagerly on a twin model, and the Adam step against torch too."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import burnpy as bp
from burnpy import nn, optim
from burnpy.backend.errors import InvalidArgumentError
from burnpy.examples.gpt_model import GPT, GPTConfig, training_step
from burnpy.fusion import Fusion
from burnpy.jit import Compiled, GraphBreakError
from burnpy.jit.fuse import fused_runs
from burnpy_cpu import CpuBackend

C = bp.Capture(CpuBackend)
A = bp.Autodiff(C)


def _floats(shape: tuple[int, ...], seed: int, backend: Any = A) -> bp.Tensor:
    data = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return bp.Tensor.from_numpy(data, backend=backend)


def _mlp(backend: Any = A, dropout: float = 0.0) -> nn.Module:
    layers: list[nn.Module] = [nn.Linear(6, 16, backend=backend), nn.GELU()]
    if dropout:
        layers.append(nn.Dropout(dropout))
    layers.append(nn.Linear(16, 3, backend=backend))
    return nn.Sequential(*layers)


def _twins(backend: Any = A, dropout: float = 0.0) -> tuple[nn.Module, nn.Module]:
    a, b = _mlp(backend, dropout), _mlp(backend, dropout)
    b.load_state_dict({k: v.clone() for k, v in a.state_dict().items()})
    return a, b


def _same(a: nn.Module, b: nn.Module) -> None:
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys()
    for k in sa:
        assert np.array_equal(sa[k].to_numpy(), sb[k].to_numpy()), k


def _train_step(model: nn.Module, opt: optim.Optimizer) -> Callable[..., bp.Tensor]:
    def step(x: bp.Tensor, y: bp.Tensor) -> bp.Tensor:
        loss = ((model(x) - y) ** 2).mean()
        opt.step(model, loss.backward())
        return loss

    return step


def test_adam_training_step_matches_eager_bitwise_and_torch() -> None:
    compiled_model, eager_model = _twins()
    clip = optim.GradientClipping.norm(0.5)
    opt_c, opt_e = optim.Adam(lr=1e-2, grad_clipping=clip), optim.Adam(lr=1e-2,
                                                                        grad_clipping=clip)
    torch_model = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.GELU(),
                                      torch.nn.Linear(16, 3))
    torch_model.load_state_dict({k: torch.from_numpy(v.to_numpy().copy())
                                 for k, v in eager_model.state_dict().items()})
    torch_opt = torch.optim.Adam(torch_model.parameters(), lr=1e-2)
    step = bp.compile(_train_step(compiled_model, opt_c))
    eager = _train_step(eager_model, opt_e)
    for i in range(5):
        x, y = _floats((4, 6), 2 * i), _floats((4, 3), 2 * i + 1)
        loss_c, loss_e = step(x, y), eager(x, y)
        assert np.array_equal(loss_c.to_numpy(), loss_e.to_numpy())
        _same(compiled_model, eager_model)
        torch_opt.zero_grad()
        tx, ty = (torch.from_numpy(t.to_numpy().copy()) for t in (x, y))
        torch_loss = ((torch_model(tx) - ty) ** 2).mean()
        torch_loss.backward()
        torch.nn.utils.clip_grad_norm_(torch_model.parameters(), 0.5)
        torch_opt.step()
        np.testing.assert_allclose(loss_c.to_numpy(), torch_loss.item(), rtol=1e-5)
    for p_c, p_e in zip(compiled_model.parameters(), eager_model.parameters(), strict=True):
        assert opt_c.steps[p_c] == opt_e.steps[p_e] == 5 and type(opt_c.steps[p_c]) is int
        for name in ("exp_avg", "exp_avg_sq"):
            assert np.array_equal(opt_c.state[p_c][name].to_numpy(),
                                  opt_e.state[p_e][name].to_numpy())
        assert p_c.is_require_grad()
    for p, t in zip(compiled_model.parameters(), torch_model.parameters(), strict=True):
        np.testing.assert_allclose(p.to_numpy(), t.detach().numpy(), rtol=1e-4, atol=1e-6)
    # the first call creates Adam's state (eager), the second records, the rest replay
    info = step.cache_info()
    assert (info.size, info.recordings, info.replays) == (1, 2, 3)


def test_sgd_with_a_scheduler_reads_the_learning_rate_each_call() -> None:
    compiled_model, eager_model = _twins()
    opt_c = optim.SGD(lr=0.1, momentum=0.9)
    opt_e = optim.SGD(lr=0.1, momentum=0.9)
    sched_c = optim.lr_scheduler.LambdaLR(opt_c, lambda epoch: 0.7 ** epoch)
    sched_e = optim.lr_scheduler.LambdaLR(opt_e, lambda epoch: 0.7 ** epoch)
    step = bp.compile(_train_step(compiled_model, opt_c))
    eager = _train_step(eager_model, opt_e)
    rates = []
    for i in range(6):
        x, y = _floats((4, 6), 10 + i), _floats((4, 3), 20 + i)
        step(x, y)
        eager(x, y)
        _same(compiled_model, eager_model)
        rates.append(opt_c.param_groups[0]["lr"])
        sched_c.step()
        sched_e.step()
    assert len(set(rates)) == 6  # a new rate each step, every one of them used
    assert type(opt_c.param_groups[0]["lr"]) is float
    assert step.cache_info().replays == 4


def test_gradient_accumulation_across_calls() -> None:
    compiled_model, eager_model = _twins()

    def accumulate(model: nn.Module, acc: dict[str, bp.Tensor]) -> Callable[..., None]:
        def fn(x: bp.Tensor, y: bp.Tensor) -> None:
            grads = ((model(x) - y) ** 2).mean().backward()
            for name, p in model.named_parameters():
                g = p.grad(grads)
                assert g is not None
                acc[name] = acc[name] + g if name in acc else g
        return fn

    acc_c: dict[str, bp.Tensor] = {}
    acc_e: dict[str, bp.Tensor] = {}
    step = bp.compile(accumulate(compiled_model, acc_c))
    eager = accumulate(eager_model, acc_e)
    for i in range(4):
        x, y = _floats((3, 6), 30 + i), _floats((3, 3), 40 + i)
        assert step(x, y) is None
        eager(x, y)
    assert acc_c.keys() == acc_e.keys()
    for name in acc_c:
        assert np.array_equal(acc_c[name].to_numpy(), acc_e[name].to_numpy())
    # the first call creates the sums (eager); the second records; the rest replay
    assert step.cache_info().replays == 2


def test_no_grad_blocks_and_in_place_writes() -> None:
    compiled_model, eager_model = _twins()

    def sgd(model: nn.Module) -> Callable[..., bp.Tensor]:
        def fn(x: bp.Tensor, y: bp.Tensor) -> bp.Tensor:
            with bp.no_grad():
                target = model(y[:, :3].repeat(1, 2)) * 0.5  # untracked
            loss = ((model(x) - target) ** 2).mean()
            grads = loss.backward()
            with bp.no_grad():
                for p in model.parameters():
                    g = p.grad(grads)
                    assert g is not None
                    p.sub_(bp.Tensor.from_inner(g, backend=p.backend) * 0.05)
            return loss
        return fn

    step, eager = bp.compile(sgd(compiled_model)), sgd(eager_model)
    for i in range(4):
        x, y = _floats((5, 6), 50 + i), _floats((5, 3), 60 + i)
        assert np.array_equal(step(x, y).to_numpy(), eager(x, y).to_numpy())
        _same(compiled_model, eager_model)
    assert step.cache_info().replays == 3


def test_batch_norm_running_statistics_are_written_back() -> None:
    def net() -> nn.Module:
        return nn.Sequential(nn.Linear(4, 8, backend=C), nn.BatchNorm1d(8, backend=C))

    a, b = net(), net()
    b.load_state_dict({k: v.clone() for k, v in a.state_dict().items()})
    forward = bp.compile(a)
    for i in range(4):
        x = _floats((6, 4), 70 + i, C)
        assert np.array_equal(forward(x).to_numpy(), b(x).to_numpy())
        _same(a, b)
    a.eval()
    b.eval()  # another training flag: records again
    x = _floats((6, 4), 80, C)
    assert np.array_equal(forward(x).to_numpy(), b(x).to_numpy())
    assert forward.cache_info().recordings == 2


def test_a_new_shape_or_scalar_records_again_and_the_cache_is_bounded() -> None:
    model = _mlp(C)
    fn = bp.compile(lambda x, scale: model(x) * scale, cache_size=2)
    with pytest.warns(RuntimeWarning, match="more signatures than cache_size=2") as warned:
        for rows, scale in ((4, 2.0), (4, 2.0), (6, 2.0), (4, 2.0), (4, 3.0), (4, 3.0)):
            x = _floats((rows, 6), rows, C)
            assert np.array_equal(fn(x, scale).to_numpy(), (model(x) * scale).to_numpy())
    assert len(warned) == 1 and "dynamic=True" in str(warned[0].message)
    assert warned[0].filename == __file__  # the caller's line
    info = fn.cache_info()
    assert (info.size, info.max_size, info.recordings, info.replays) == (2, 2, 3, 3)
    x = _floats((6, 6), 1, C)  # dropped from the cache by (4, 3.0): recorded again, no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fn(x, 2.0)
    assert fn.cache_info().recordings == 4


def test_a_host_read_raises_with_fullgraph_and_splits_without() -> None:
    """Without fullgraph the replay reads the sum again where the recording did; a sum other
    than the recorded one (every call here) runs eagerly, and after two the signature does."""
    model = _mlp(C)

    def fn(x: bp.Tensor) -> bp.Tensor:
        y = model(x)
        if y.sum().item() > 1e9:  # a host read
            return y
        return y * 2.0

    strict = bp.compile(fn, fullgraph=True)
    with pytest.raises(GraphBreakError, match=r"item\(\) at .*test_compile.py:\d+ .*"
                                              r"y.sum\(\).item\(\)"):
        strict(_floats((2, 6), 1, C))
    loose = bp.compile(fn)
    for seed in range(3):
        x = _floats((2, 6), seed, C)
        assert np.array_equal(loose(x).to_numpy(), (model(x) * 2.0).to_numpy())
    info = loose.cache_info()
    assert (info.eager_signatures, info.recordings, info.eager_calls) == (1, 1, 2)


def _branchy(x: bp.Tensor) -> bp.Tensor:
    """A branch on a value read on the host mid-way, and the read value used after it."""
    y = x * 2.0 + 1.0
    if bool((y > 0).all()):  # a host read: the rest was recorded for its outcome
        scale = float(y.max().item())  # another one, whose value is baked into the rest
        return (y / scale).tanh() * 3.0
    return y - 1.0


def _branchy_numpy(x: np.ndarray) -> np.ndarray:
    y = x * np.float32(2.0) + np.float32(1.0)
    if (y > 0).all():
        return np.tanh(y / y.max()) * np.float32(3.0)
    return y - np.float32(1.0)


@pytest.mark.parametrize("backend", [C, bp.Capture(Fusion(CpuBackend))], ids=["op", "fused"])
def test_a_host_read_splits_the_graph_where_it_reads(backend: Any) -> None:
    """A replay runs up to each host read, reads the value again and goes on while it equals
    the recording's (the Python after the read was recorded for it); where it differs the
    call runs eagerly, and after two such calls the signature does. Results equal eager's
    (NumPy's within float rounding where fused) at every call."""
    fn = bp.compile(_branchy)
    base = np.abs(np.random.default_rng(0).standard_normal(8)).astype(np.float32)
    same_max = base.copy()
    same_max[0] = base.min() / 2  # other values, the same outcome of both reads
    calls = [base, same_max, base, -base - 5.0, base, -base - 5.0, base, base]
    for data in calls:
        got = fn(bp.Tensor.from_data(data, backend=backend)).to_numpy()
        np.testing.assert_allclose(got, _branchy_numpy(data), rtol=1e-6)
    info = fn.cache_info()
    # base recorded; same_max, base, base replayed; each -base-5 is a read that differs
    # (the second makes the signature eager), then base, base run eagerly
    assert (info.recordings, info.replays, info.eager_calls, info.eager_signatures) == (
        1, 3, 4, 1)


def test_a_host_read_after_a_random_op_runs_eagerly() -> None:
    """A replay stopped at a read would have drawn the dropout mask already: such a graph is
    not split, its signature runs eagerly (the masks as eager draws them)."""
    model = _mlp(C, dropout=0.5)

    def fn(x: bp.Tensor) -> bp.Tensor:
        y = model(x)
        return y * 2.0 if bool(y.abs().sum() > -1.0) else y

    compiled = bp.compile(fn)
    x = _floats((4, 6), 3, C)
    device = CpuBackend.default_device()
    CpuBackend.seed(device, 5)
    ours = [compiled(x).to_numpy() for _ in range(3)]
    CpuBackend.seed(device, 5)
    eager = [fn(x).to_numpy() for _ in range(3)]
    for a, b in zip(ours, eager, strict=True):
        np.testing.assert_array_equal(a, b)
    assert compiled.cache_info().eager_signatures == 1


def test_dropout_draws_fresh_masks_as_eager_does() -> None:
    compiled_model, eager_model = _twins(C, dropout=0.5)
    forward = bp.compile(compiled_model)
    x = _floats((8, 6), 90, C)
    device = CpuBackend.default_device()
    CpuBackend.seed(device, 123)
    compiled = [forward(x).to_numpy() for _ in range(4)]
    CpuBackend.seed(device, 123)
    eager = [eager_model(x).to_numpy() for _ in range(4)]
    assert forward.cache_info().replays == 3
    for c, e in zip(compiled, eager, strict=True):
        assert np.array_equal(c, e)
    assert not np.array_equal(compiled[1], compiled[2])  # a new mask each replay


def test_bad_uses_are_refused() -> None:
    plain = nn.Linear(2, 2, backend=CpuBackend)
    with pytest.raises(InvalidArgumentError, match="does not run on a Capture backend"):
        bp.compile(plain)(bp.Tensor.from_numpy(np.ones((1, 2), np.float32)))
    with pytest.raises(InvalidArgumentError, match="cache_size"):
        bp.compile(plain, cache_size=0)
    decorated = bp.compile(fullgraph=True)(lambda x: x + 1.0)
    assert isinstance(decorated, Compiled)
    x = _floats((2,), 0, C)
    assert np.array_equal(decorated(x).to_numpy(), x.to_numpy() + np.float32(1.0))


def test_gpt_training_step_with_adamw_and_clipping_matches_eager_bitwise() -> None:
    config = GPTConfig(vocab_size=11, block_size=8, n_layer=1, n_head=2, n_embd=8)
    compiled_model, eager_model = GPT(config, backend=A), GPT(config, backend=A)
    eager_model.load_state_dict({k: v.clone() for k, v in compiled_model.state_dict().items()})

    step = bp.compile(training_step(compiled_model), fullgraph=True)  # no host read in the step
    eager = training_step(eager_model)
    rng = np.random.default_rng(5)
    for _ in range(4):
        x, y = (bp.Tensor.from_numpy(rng.integers(0, 11, (2, 8)), backend=A) for _ in "xy")
        assert np.array_equal(step(x, y).to_numpy(), eager(x, y).to_numpy())
        _same(compiled_model, eager_model)
    assert step.cache_info().replays == 2


def test_a_bound_method_reaches_the_state_its_object_holds() -> None:
    class Trainer:
        def __init__(self, model: nn.Module) -> None:
            self.model, self.opt = model, optim.SGD(lr=0.05, momentum=0.5)
            self.seen = _floats((3,), 0)  # replaced by each step: a written attribute

        def step(self, x: bp.Tensor, y: bp.Tensor) -> bp.Tensor:
            loss = ((self.model(x) - y) ** 2).mean()
            self.opt.step(self.model, loss.backward())
            self.seen = self.seen * 0.5 + loss.detach()
            return loss

    compiled_model, eager_model = _twins()
    ours, theirs = Trainer(compiled_model), Trainer(eager_model)
    step = bp.compile(ours.step)
    for i in range(4):
        x, y = _floats((4, 6), 100 + i), _floats((4, 3), 110 + i)
        assert np.array_equal(step(x, y).to_numpy(), theirs.step(x, y).to_numpy())
        _same(compiled_model, eager_model)
        assert np.array_equal(ours.seen.to_numpy(), theirs.seen.to_numpy())
    assert step.cache_info().replays == 2


def test_results_other_than_tensors_and_scalars_are_refused() -> None:
    model = _mlp()
    opt = optim.SGD(lr=0.1)

    def fn(x: bp.Tensor) -> tuple[Any, float]:
        grads = model(x).sum().backward()
        return grads, opt.param_groups[0]["lr"]

    with pytest.raises(InvalidArgumentError, match="returns a Gradients"):
        bp.compile(fn)(_floats((2, 6), 0))

    def rate(x: bp.Tensor) -> tuple[bp.Tensor, float, None]:
        return x * 2.0, opt.param_groups[0]["lr"] * 2.0, None

    compiled = bp.compile(rate)
    x = _floats((2, 6), 1)
    for lr in (0.1, 0.2, 0.3):
        opt.param_groups[0]["lr"] = lr
        doubled, scaled, nothing = compiled(x)
        assert np.array_equal(doubled.to_numpy(), (x * 2.0).to_numpy())
        assert scaled == lr * 2.0 and type(scaled) is float and nothing is None
    assert compiled.cache_info().replays == 2


SCALE = 2.0
HELPER_MODEL: list[nn.Module] = []


def _helper(x: bp.Tensor) -> bp.Tensor:
    return HELPER_MODEL[0](x) * SCALE


def test_globals_and_helpers_are_reached_and_global_scalars_guard() -> None:
    global SCALE
    HELPER_MODEL[:] = [nn.Sequential(nn.Linear(6, 3, backend=A))]
    opt = optim.SGD(lr=0.1)

    def step(x: bp.Tensor) -> bp.Tensor:
        loss = _helper(x).sum()
        opt.step(HELPER_MODEL[0], loss.backward())  # the model, reached through a global
        return loss

    compiled = bp.compile(step)
    x = _floats((2, 6), 7)
    before = HELPER_MODEL[0].state_dict()["0.weight"].to_numpy().copy()
    for _ in range(3):  # the first step counts (eager), the second records, the third replays
        compiled(x)
    after = HELPER_MODEL[0].state_dict()["0.weight"].to_numpy()
    assert compiled.cache_info().replays == 1
    np.testing.assert_allclose(after, before - 0.3 * 2.0 * x.to_numpy().sum(0), rtol=1e-5)
    try:
        SCALE = 3.0  # a global scalar the helper reads: recorded again
        expected = (HELPER_MODEL[0](x) * 3.0).sum().to_numpy()
        assert np.array_equal(compiled(x).to_numpy(), expected)
        assert compiled.cache_info().recordings == 3
    finally:
        SCALE = 2.0


def test_an_in_place_write_to_an_argument_is_written_back() -> None:
    def bump(x: bp.Tensor, y: bp.Tensor) -> bp.Tensor:
        x.add_(y * 0.5)  # writes into the caller's tensor
        return x.sum()

    compiled = bp.compile(bump)
    for seed in range(3):
        x, y = _floats((3, 4), seed, C).clone(), _floats((3, 4), 10 + seed, C)
        twin = x.clone()
        total = compiled(x, y)
        expected = twin.to_numpy() + y.to_numpy() * np.float32(0.5)
        assert np.array_equal(x.to_numpy(), expected)
        assert np.array_equal(total.to_numpy(), bp.Tensor.from_numpy(expected,
                                                                     backend=C).sum().to_numpy())
    assert compiled.cache_info().replays == 2

    # a tensor sharing a NumPy array (from_numpy) is written through that array, outside
    # the graph: that signature runs eagerly, with eager's results
    shared = bp.compile(bump)
    for seed in range(3):
        array = np.random.default_rng(seed).standard_normal((3, 4)).astype(np.float32)
        expected = array + array * np.float32(0.5)
        x = bp.Tensor.from_numpy(array, backend=C)
        shared(x, x.clone())
        assert np.array_equal(array, expected) and np.array_equal(x.to_numpy(), expected)
    info = shared.cache_info()
    assert (info.eager_signatures, info.eager_calls, info.replays) == (1, 2, 0)


def test_grad_mode_and_autocast_regions_are_part_of_the_signature() -> None:
    model = _mlp()
    forward = bp.compile(lambda x: model(x))
    x = _floats((2, 6), 3)
    forward(x)
    with bp.no_grad():  # records again (no backward state), then replays
        forward(x)
        untracked = forward(x)
    with bp.autocast("cpu", dtype=bp.bfloat16):
        cast = forward(x)
        assert np.array_equal(cast.to_numpy(), model(x).to_numpy())
    assert cast.dtype == bp.bfloat16 and untracked.dtype == bp.float32
    info = forward.cache_info()
    assert (info.recordings, info.replays) == (3, 1)


@pytest.mark.parametrize("bad", [-1, 11])
def test_replayed_index_and_target_checks_still_raise(bad: int) -> None:
    """Embedding's index bounds and cross entropy's targets are checked at every replay (a
    check kept in the graph), not only while recording: a bad index never wraps silently."""
    embed = nn.Embedding(11, 4, backend=A)
    head = nn.Linear(4, 5, backend=A)

    def loss_of(ids: bp.Tensor, targets: bp.Tensor) -> bp.Tensor:
        logits = head(embed(ids)).reshape(-1, 5)
        return nn.functional.cross_entropy(logits, targets.reshape(-1))

    compiled = bp.compile(loss_of, fullgraph=True)
    ids = np.array([[1, 2, 3], [4, 5, 6]])
    targets = np.array([[0, 1, 2], [3, 4, 0]])
    for _ in range(3):  # record, then replay
        got = compiled(bp.Tensor.from_numpy(ids, backend=A),
                       bp.Tensor.from_numpy(targets, backend=A))
        want = loss_of(bp.Tensor.from_numpy(ids, backend=A),
                       bp.Tensor.from_numpy(targets, backend=A))
        assert np.array_equal(got.to_numpy(), want.to_numpy())
    assert compiled.cache_info().replays >= 1
    wrong_ids = ids.copy()
    wrong_ids[1, 2] = bad
    with pytest.raises(bp.BurnpyError, match=f"embedding: index {bad} is out of range"):
        compiled(bp.Tensor.from_numpy(wrong_ids, backend=A),
                 bp.Tensor.from_numpy(targets, backend=A))
    wrong_targets = targets.copy()
    wrong_targets[0, 1] = bad if bad < 0 else 5
    with pytest.raises(bp.BurnpyError, match=r"cross_entropy: target .* is out of range"):
        compiled(bp.Tensor.from_numpy(ids, backend=A),
                 bp.Tensor.from_numpy(wrong_targets, backend=A))


# ---- replays on Capture(Fusion(B)): elementwise runs fused into one kernel each -------------
CF = bp.Capture(Fusion(CpuBackend))
AF = bp.Autodiff(CF)


def _chain(x: bp.Tensor) -> bp.Tensor:
    for i in range(4):
        x = (x * 1.001 + 0.01).tanh().sin() - float(i) * 1e-3
    return x


def _chain_numpy(x: np.ndarray) -> np.ndarray:
    for i in range(4):
        x = np.sin(np.tanh(x.astype(np.float64) * 1.001 + 0.01)) - i * 1e-3
    return x


def test_an_elementwise_chain_replays_as_one_kernel_writing_only_its_result() -> None:
    data = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)
    graph, _ = CF.record(lambda p: CF.float_mul_scalar(CF.float_exp(CF.float_add_scalar(
        p, 0.5)), 2.0), data)
    (run,) = fused_runs(graph)
    assert (run.start, run.stop, run.scalars) == (0, 3, (0.5, 2.0))
    assert run.outputs == tuple(graph.outputs)  # the intermediates are never written
    np.testing.assert_allclose(graph.replay([data])[0], np.exp(data + 0.5) * 2.0, rtol=1e-6)
    plain, _ = C.record(lambda p: C.float_exp(C.float_add_scalar(p, 0.5)), data)
    assert fused_runs(plain) == []  # off Fusion: op by op, bitwise equal to eager

    step = bp.compile(_chain)
    x = bp.Tensor.from_data(data, backend=CF)
    for _ in range(3):
        np.testing.assert_allclose(step(x).to_numpy(), _chain_numpy(data), rtol=1e-6,
                                   atol=1e-7)
    assert step.cache_info().replays == 2


def test_values_read_after_a_run_are_written_and_broadcasts_cut_runs() -> None:
    a = np.random.default_rng(1).standard_normal((4, 3)).astype(np.float32)
    b = np.random.default_rng(2).standard_normal((3,)).astype(np.float32)

    def fn(x: bp.Tensor, y: bp.Tensor) -> tuple[bp.Tensor, bp.Tensor]:
        u = (x + 1.0).abs()
        v = (u * u).sqrt() * y  # y broadcasts: the run stops before it
        return u, v.neg().exp()

    step = bp.compile(fn)
    x, y = (bp.Tensor.from_data(d, backend=CF) for d in (a, b))
    for _ in range(3):
        u, w = step(x, y)
        np.testing.assert_allclose(u.to_numpy(), np.abs(a + 1.0), rtol=1e-6)
        np.testing.assert_allclose(w.to_numpy(), np.exp(-(np.abs(a + 1.0) * b)), rtol=1e-6)


def test_gpt_training_step_on_fusion_matches_eager_within_rounding() -> None:
    config = GPTConfig(vocab_size=11, block_size=8, n_layer=1, n_head=2, n_embd=8)
    eager_backend = bp.Autodiff(CpuBackend)
    eager_model, compiled_model = GPT(config, backend=eager_backend), GPT(config, backend=AF)
    compiled_model.load_state_dict({k: bp.Tensor.from_data(v.to_numpy(), backend=AF)
                                    for k, v in eager_model.state_dict().items()})

    step = bp.compile(training_step(compiled_model), fullgraph=True)
    eager = training_step(eager_model)
    rng = np.random.default_rng(5)
    for _ in range(4):
        x, y = rng.integers(0, 11, (2, 8)), rng.integers(0, 11, (2, 8))
        np.testing.assert_allclose(
            step(*(bp.Tensor.from_data(d, backend=AF) for d in (x, y))).to_numpy(),
            eager(*(bp.Tensor.from_data(d, backend=eager_backend) for d in (x, y))).to_numpy(),
            rtol=1e-6)
    assert step.cache_info().replays == 2
    mine, theirs = compiled_model.state_dict(), eager_model.state_dict()
    for k in theirs:
        np.testing.assert_allclose(mine[k].to_numpy(), theirs[k].to_numpy(), rtol=1e-6,
                                   atol=1e-7, err_msg=k)


def test_runs_of_a_kernel_size_use_the_fuser_as_fusion_does() -> None:
    rng = np.random.default_rng(3)
    a, b = (rng.standard_normal((512, 512)) for _ in "ab")  # float64: float32 fuses tanh

    def fn(x: bp.Tensor, y: bp.Tensor) -> tuple[bp.Tensor, bp.Tensor]:
        z = (x.exp() * 2.0 + y).tanh()  # exp and tanh run on NumPy at this size: runs cut
        return (z * z + 1.0).sqrt() * 3.0, z

    step = bp.compile(fn)
    x, y = (bp.Tensor.from_data(d, backend=CF) for d in (a, b))
    z = np.tanh(np.exp(a) * 2.0 + b)
    for _ in range(3):
        w, t = step(x, y)
        np.testing.assert_allclose(t.to_numpy(), z, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(w.to_numpy(), np.sqrt(z * z + 1.0) * 3.0, rtol=1e-6)
    assert step.cache_info().replays == 2
