"""``bp.compile`` replays as CUDA graphs on a real GPU (``burnpy_cuda.graphs``): a compiled MLP
training step on ``Autodiff(Capture(CudaBackend))`` is captured once and launched after, and
agrees with the same steps run eagerly on a twin model within float rounding at every step,
with SGD (a changed rate captured again) and with Adam and AdamW (step counts and a rate
changing every call, read from the graph's scalar table); the fallbacks (dropout, an op that
synchronizes or uploads host data inside the capture, ``BURNPY_CUDA_GRAPHS=0``) are taken and
give eager's numbers.
The bookkeeping itself is tested on the CPU (tests/capture/test_graph_replay.py). Skipped,
with the reason, where CuPy sees no GPU."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import burnpy as bp
import burnpy.nn.functional as F
from burnpy import nn, optim
from burnpy.jit import Compiled
from burnpy_cuda import CudaBackend, cuda_available, unavailable_reason
from burnpy_cuda.graphs import GraphReplay

pytestmark = pytest.mark.skipif(not cuda_available(), reason=f"needs CuPy and a CUDA GPU: "
                                f"{unavailable_reason()}")

C = bp.Capture(CudaBackend)
A = bp.Autodiff(C)


def _near(got: np.ndarray, want: np.ndarray, what: str = "") -> None:
    """float32 agreement of a replay with eager: the same kernels, maybe other cuBLAS
    choices."""
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=what)


def _runners(compiled: Compiled) -> list[GraphReplay]:
    found = [e.run for group in compiled._cache.values() for e in group]
    assert all(isinstance(r, GraphReplay) for r in found), found
    return found  # type: ignore[return-value]  # checked just above


def _mlp(backend: Any = A, dropout: float = 0.0) -> nn.Module:
    layers: list[nn.Module] = [nn.Linear(32, 64, backend=backend), nn.ReLU()]
    if dropout:
        layers.append(nn.Dropout(dropout))
    layers += [nn.Linear(64, 64, backend=backend), nn.GELU(), nn.Linear(64, 10, backend=backend)]
    return nn.Sequential(*layers)


def _twins(backend: Any = A, dropout: float = 0.0) -> tuple[nn.Module, nn.Module]:
    a, b = _mlp(backend, dropout), _mlp(backend, dropout)
    b.load_state_dict({k: v.clone() for k, v in a.state_dict().items()})
    return a, b


def _close(a: nn.Module, b: nn.Module) -> None:
    sa, sb = a.state_dict(), b.state_dict()
    for k in sa:
        _near(sa[k].to_numpy(), sb[k].to_numpy(), k)


def _batch(i: int, backend: Any = A) -> tuple[bp.Tensor, bp.Tensor]:
    rng = np.random.default_rng(i)
    x = rng.standard_normal((16, 32)).astype(np.float32)
    return (bp.Tensor.from_numpy(x, backend=backend),
            bp.Tensor.from_numpy(rng.integers(0, 10, 16), backend=backend))


def _step(model: nn.Module, opt: optim.Optimizer) -> Callable[[bp.Tensor, bp.Tensor], bp.Tensor]:
    def step(x: bp.Tensor, y: bp.Tensor) -> bp.Tensor:
        loss = F.cross_entropy(model(x), y)
        opt.step(model, loss.backward())
        return loss

    return step


def _train(compiled_model: nn.Module, eager_model: nn.Module, opt_c: optim.Optimizer,
           opt_e: optim.Optimizer, steps: int,
           between: Callable[[int], None] | None = None) -> Compiled:
    """``steps`` steps compiled and eagerly, a new batch each; losses and weights compared at
    every step, and each step's loss again at the end (a later launch must not change it)."""
    step, eager = bp.compile(_step(compiled_model, opt_c)), _step(eager_model, opt_e)
    held = []
    for i in range(steps):
        if between is not None:
            between(i)
        x, y = _batch(i)
        loss, eager_loss = step(x, y), eager(x, y).to_numpy()
        _near(loss.to_numpy(), eager_loss)
        _close(compiled_model, eager_model)
        held.append((loss, eager_loss))
    for loss, eager_loss in held:
        _near(loss.to_numpy(), eager_loss)
    return step


def test_a_compiled_sgd_step_is_one_cuda_graph_and_agrees_with_eager() -> None:
    compiled_model, eager_model = _twins()
    step = _train(compiled_model, eager_model, optim.SGD(lr=0.05, momentum=0.9),
                  optim.SGD(lr=0.05, momentum=0.9), steps=12)
    (runner,) = _runners(step)
    assert runner.reason == "", runner.reason
    replays = step.cache_info().replays
    assert replays >= 8
    assert (runner.eager_calls, runner.captures, runner.launches) == (2, 1, replays - 2)


def test_a_changed_learning_rate_is_captured_again() -> None:
    compiled_model, eager_model = _twins()
    opt_c, opt_e = optim.SGD(lr=0.05), optim.SGD(lr=0.05)

    def drop(i: int) -> None:
        if i == 7:
            opt_c.param_groups[0]["lr"] = opt_e.param_groups[0]["lr"] = 0.01

    step = _train(compiled_model, eager_model, opt_c, opt_e, steps=14, between=drop)
    (runner,) = _runners(step)
    assert runner.reason == "" and runner.captures == 2


@pytest.mark.parametrize("kind", ["adam", "adamw_scheduled"])
def test_adam_steps_are_one_graph_reading_their_scalars_from_the_device(kind: str) -> None:
    """Adam's step count (and here a rate scheduled every step) change each call: the graph
    reads the step's scalars from its device table, which each launch fills first."""
    compiled_model, eager_model = _twins()
    if kind == "adam":
        opt_c, opt_e = optim.Adam(lr=1e-3), optim.Adam(lr=1e-3)
        between = None
    else:
        opt_c, opt_e = (optim.AdamW(lr=1e-3, weight_decay=0.05) for _ in range(2))
        scheds = [optim.lr_scheduler.LambdaLR(o, lambda epoch: 0.9 ** epoch)
                  for o in (opt_c, opt_e)]

        def between(i: int) -> None:
            if i:
                for sched in scheds:
                    sched.step()

    step = _train(compiled_model, eager_model, opt_c, opt_e, steps=10, between=between)
    (runner,) = _runners(step)
    assert runner.reason == "", runner.reason
    replays = step.cache_info().replays
    assert (runner.eager_calls, runner.captures, runner.launches) == (2, 1, replays - 2)


def test_a_bad_target_raises_before_a_launch() -> None:
    model, _ = _twins()
    step = bp.compile(_step(model, optim.SGD(lr=0.05)))
    for i in range(6):
        step(*_batch(i))
    (runner,) = _runners(step)
    launches = runner.launches
    assert launches >= 1
    x, y = _batch(20)
    bad = y.to_numpy().copy()
    bad[0] = 10
    with pytest.raises(bp.BurnpyError, match="cross_entropy: target 10 is out of range"):
        step(x, bp.Tensor.from_numpy(bad, backend=A))
    assert runner.launches == launches
    step(x, y)
    assert runner.launches == launches + 1


def test_dropout_stays_eager_with_fresh_masks() -> None:
    compiled_model, eager_model = _twins(C, dropout=0.5)
    forward = bp.compile(compiled_model)
    x = _batch(3, C)[0]
    device = CudaBackend.default_device()
    CudaBackend.seed(device, 11)
    got = [forward(x).to_numpy() for _ in range(5)]
    CudaBackend.seed(device, 11)
    want = [eager_model(x).to_numpy() for _ in range(5)]
    for g, w in zip(got, want, strict=True):
        _near(g, w)
    assert not np.array_equal(got[3], got[4])
    (runner,) = _runners(forward)
    assert runner.reason.startswith("random op float_random") and runner.captures == 0


def test_an_op_that_synchronizes_fails_the_capture_and_runs_eagerly() -> None:
    """Max pooling's forward asks the host whether a window held a NaN: inside a capture that
    read is refused, so the replay stays eager (and keeps eager's NaN-aware branch)."""
    conv = nn.Conv2d(2, 3, 3, padding=1, backend=C)

    def pooled(x: bp.Tensor) -> bp.Tensor:
        return F.max_pool2d(conv(x), 2)

    compiled = bp.compile(pooled)
    rng = np.random.default_rng(5)
    for i in range(5):
        data = rng.standard_normal((2, 2, 8, 8)).astype(np.float32)
        if i == 4:
            data[0, 0, 0, 0] = np.nan
        x = bp.Tensor.from_numpy(data, backend=C)
        _near(compiled(x).to_numpy(), pooled(x).to_numpy())
    (runner,) = _runners(compiled)
    assert runner.reason.startswith("capture failed"), runner.reason
    assert runner.launches == 0


def test_an_op_uploading_host_data_fails_the_capture_and_runs_eagerly() -> None:
    """Adaptive pooling uploads its bin sizes from the host at each call: captured, the graph
    would copy from CuPy's reused staging buffer, so the capture is refused."""
    compiled = bp.compile(lambda x: F.adaptive_avg_pool2d(x, 3) * 2.0)
    rng = np.random.default_rng(6)
    for _ in range(5):
        data = rng.standard_normal((2, 3, 7, 7)).astype(np.float32)
        x = bp.Tensor.from_numpy(data, backend=C)
        _near(compiled(x).to_numpy(), (F.adaptive_avg_pool2d(x, 3) * 2.0).to_numpy())
    (runner,) = _runners(compiled)
    assert runner.reason.startswith("capture failed: GraphCaptureError: CUDA graph capture: "
                                    "an op uploads"), runner.reason


def test_graphs_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BURNPY_CUDA_GRAPHS", "0")
    compiled_model, eager_model = _twins()
    step = _train(compiled_model, eager_model, optim.SGD(lr=0.05), optim.SGD(lr=0.05),
                  steps=6)
    (runner,) = _runners(step)
    assert runner.reason == "turned off by BURNPY_CUDA_GRAPHS=0" and runner.launches == 0


def test_a_dynamic_graph_replays_op_by_op_at_every_batch_size() -> None:
    """``dynamic=True`` on CUDA: one graph for every batch size, launched op by op (a CUDA
    graph holds one set of shapes), agreeing with eager at each size."""
    compiled_model, eager_model = _twins()
    step = bp.compile(_step(compiled_model, optim.Adam(lr=1e-2)), dynamic=True)
    eager = _step(eager_model, optim.Adam(lr=1e-2))
    rng = np.random.default_rng(0)
    for n in (16, 16, 16, 24, 9, 40, 16):
        x = bp.Tensor.from_numpy(rng.standard_normal((n, 32)).astype(np.float32), backend=A)
        y = bp.Tensor.from_numpy(rng.integers(0, 10, n), backend=A)
        _near(step(x, y).to_numpy(), eager(x, y).to_numpy(), str(n))
        _close(compiled_model, eager_model)
    info = step.cache_info()
    assert (info.dynamic_graphs, info.recordings) == (1, 3), info
    assert not any(isinstance(e.run, GraphReplay) for g in step._cache.values() for e in g)
