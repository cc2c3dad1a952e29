"""``burnpy_cuda.graphs.GraphReplay``'s bookkeeping on the CPU: a compiled replay captured
once into a graph and launched after, driven through a stand-in for CuPy's capture API whose
"graph" behaves as a CUDA graph does (it reads the static input buffers and writes the static
output buffers it was captured with, its scalars baked in). Training steps on
``Autodiff(Capture(B))``, B a CpuBackend whose replay runner is that ``GraphReplay``, are
compared bit for bit with the same steps run eagerly on a twin model; the fallbacks (random
ops, checks of computed values, changing scalars, a failed capture, no capture API) are
checked to be taken and to give eager's numbers. The same runner on a real GPU:
tests/cuda/test_cuda_graphs.py."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np
import pytest

import burnpy as bp
import burnpy.nn.functional as F
from burnpy import nn, optim
from burnpy.jit import Compiled
from burnpy_cpu import CpuBackend
from burnpy_cuda import graphs
from burnpy_cuda.graphs import GraphCaptureError, GraphReplay


class FakeGraph:
    """A captured call as a CUDA graph replays it: the same call on the static inputs with the
    scalars it was captured with, its results written into the captured output arrays."""

    def __init__(self, call: Callable[[], list[Any]], outs: list[Any]) -> None:
        self.call = call
        self.outs = outs

    def launch(self) -> None:
        for out, new in zip(self.outs, self.call(), strict=True):
            if out is not new:
                np.copyto(out, new)


class FakeGraphs:
    """``GraphApi`` on NumPy, counting what the runner asks of it."""

    def __init__(self, unavailable: str = "", fail: Exception | None = None) -> None:
        self._unavailable = unavailable
        self.fail = fail
        self.copies_in = self.copies_out = self.launched = self.uploads = 0
        self.readable: list[Any] = []

    def unavailable(self) -> str:
        return self._unavailable

    def is_array(self, x: Any) -> bool:
        return isinstance(x, np.ndarray)

    def device_of(self, x: Any) -> int:
        return 0

    def empty_like(self, x: Any) -> Any:
        return np.empty_like(x)

    def copy_into(self, dst: Any, src: Any) -> None:
        self.copies_in += 1
        np.copyto(dst, src)

    def copy(self, x: Any) -> Any:
        self.copies_out += 1
        return x.copy()

    def capture(self, device: int, call: Callable[[], list[Any]], readable: Sequence[Any]
                ) -> tuple[Any, list[Any], Any]:
        if self.fail is not None:
            raise self.fail
        self.readable = list(readable)
        # NumPy returns scalars where CuPy returns 0-d arrays: a graph writes into arrays
        outs = [np.array(o) if isinstance(o, np.generic) else o for o in call()]
        return FakeGraph(call, outs), outs, None

    def launch(self, graph: Any, device: int) -> None:
        self.launched += 1
        graph.launch()

    def scalar_buffer(self, host: np.ndarray, device: int) -> Any:
        return host  # on the CPU the "device" table is the host's

    def upload(self, device: Any, host: np.ndarray) -> None:
        self.uploads += 1
        if device is not host:
            np.copyto(device, host)


class GraphCpu(CpuBackend):
    """CpuBackend whose compiled replays run through a ``GraphReplay`` on ``FakeGraphs``."""

    make_api: ClassVar[Callable[[], FakeGraphs]] = FakeGraphs
    apis: ClassVar[list[FakeGraphs]] = []

    #: Whether adam_step reads per-call scalars from the graph's table, as CudaBackend's
    #: fused kernel does (``graphs.fed_adam_step``), or on the host.
    feeds_adam: ClassVar[bool] = True

    @classmethod
    def replay_runner(cls, run: Any, graph: Any) -> Any:
        api = cls.make_api()
        cls.apis.append(api)
        return GraphReplay(run, graph, api)

    @classmethod
    def adam_step(cls, param: Any, grad: Any, exp_avg: Any, exp_avg_sq: Any,
                  max_exp_avg_sq: Any, *, step: Any, lr: Any, **options: Any) -> Any:
        """CpuBackend's Adam step; captured, its step count and rate are read from the scalar
        table when the step runs (a CUDA kernel reads the table at each launch)."""
        table = graphs.active_table()
        if cls.feeds_adam and table is not None and (graphs.is_slot(step)
                                                     or graphs.is_slot(lr)):
            slots = (step, lr)
            got_step, got_lr = table.take(lambda s: [graphs.slot_value(v, s) for v in slots])
            return super().adam_step(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq,
                                     step=int(got_step), lr=float(got_lr), **options)
        return super().adam_step(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, step=step,
                                 lr=lr, **options)


class HostAdamCpu(GraphCpu):
    """An Adam step that computes with its scalars on the host, even captured."""

    feeds_adam = False


C = bp.Capture(GraphCpu)
A = bp.Autodiff(C)


@pytest.fixture(autouse=True)
def _fresh_api() -> Any:
    GraphCpu.apis.clear()
    yield
    GraphCpu.make_api = FakeGraphs


def _runners(compiled: Compiled) -> list[GraphReplay]:
    found = [e.run for group in compiled._cache.values() for e in group]
    assert all(isinstance(r, GraphReplay) for r in found)
    return found  # type: ignore[return-value]  # checked just above


def _mlp(backend: Any = A, dropout: float = 0.0) -> nn.Module:
    layers: list[nn.Module] = [nn.Linear(8, 16, backend=backend), nn.ReLU()]
    if dropout:
        layers.append(nn.Dropout(dropout))
    layers.append(nn.Linear(16, 4, backend=backend))
    return nn.Sequential(*layers)


def _twins(backend: Any = A, dropout: float = 0.0) -> tuple[nn.Module, nn.Module]:
    a, b = _mlp(backend, dropout), _mlp(backend, dropout)
    b.load_state_dict({k: v.clone() for k, v in a.state_dict().items()})
    return a, b


def _same(a: nn.Module, b: nn.Module) -> None:
    sa, sb = a.state_dict(), b.state_dict()
    for k in sa:
        assert np.array_equal(sa[k].to_numpy(), sb[k].to_numpy()), k


def _batch(i: int, backend: Any = A) -> tuple[bp.Tensor, bp.Tensor]:
    rng = np.random.default_rng(i)
    x = rng.standard_normal((6, 8)).astype(np.float32)
    return (bp.Tensor.from_numpy(x, backend=backend),
            bp.Tensor.from_numpy(rng.integers(0, 4, 6), backend=backend))


def _step(model: nn.Module, opt: optim.Optimizer) -> Callable[[bp.Tensor, bp.Tensor], bp.Tensor]:
    def step(x: bp.Tensor, y: bp.Tensor) -> bp.Tensor:
        loss = F.cross_entropy(model(x), y)
        opt.step(model, loss.backward())
        return loss

    return step


def test_an_sgd_step_is_captured_once_and_launched_bitwise_equal_to_eager() -> None:
    compiled_model, eager_model = _twins()
    step = bp.compile(_step(compiled_model, optim.SGD(lr=0.1, momentum=0.9)))
    eager = _step(eager_model, optim.SGD(lr=0.1, momentum=0.9))
    losses = []
    for i in range(8):  # a new batch each call: the graph must read the new inputs
        x, y = _batch(i)
        loss_c, loss_e = step(x, y), eager(x, y)
        assert np.array_equal(loss_c.to_numpy(), loss_e.to_numpy())
        _same(compiled_model, eager_model)
        losses.append((loss_c, loss_e.to_numpy()))
    # the losses handed out earlier are copies, not the graph's output buffer
    for held, want in losses:
        assert np.array_equal(held.to_numpy(), want)
    (runner,) = _runners(step)
    assert runner.reason == ""
    # call 1 makes the momentum buffers (eagerly), call 2 records, then 6 replays: 2 warm
    # up, the third captures and launches, the others launch
    assert step.cache_info().replays == 6
    assert (runner.eager_calls, runner.captures, runner.launches) == (2, 1, 4)
    api = GraphCpu.apis[-1]
    assert api.launched == 4
    inputs = len(api.readable)
    assert inputs == 4 + 4 + 2  # weights and biases, their momentum buffers, x and y
    assert api.copies_in == 4 * inputs  # every launch copies every input in
    assert api.copies_out == 4 * (1 + 8)  # the loss, the new weights and momentum buffers


def test_a_changed_learning_rate_recaptures_once_it_holds() -> None:
    compiled_model, eager_model = _twins()
    opt_c, opt_e = optim.SGD(lr=0.1), optim.SGD(lr=0.1)
    step, eager = bp.compile(_step(compiled_model, opt_c)), _step(eager_model, opt_e)
    for i in range(12):
        if i == 6:  # a per-epoch schedule: the rate changes once, then holds
            opt_c.param_groups[0]["lr"] = opt_e.param_groups[0]["lr"] = 0.03
        x, y = _batch(i)
        assert np.array_equal(step(x, y).to_numpy(), eager(x, y).to_numpy())
        _same(compiled_model, eager_model)
    (runner,) = _runners(step)
    # calls 1-2 make the state and record; replays 3-6 at 0.1: warm-up 2, capture, 1 launch;
    # replays 7-12 at 0.03: 2 eager (the graph has the old rate baked in), capture, 3 launches
    assert step.cache_info().replays == 10
    assert (runner.captures, runner.launches, runner.eager_calls) == (2, 6, 4)


def _scheduled(compiled_model: nn.Module, eager_model: nn.Module, opt_c: optim.Optimizer,
               opt_e: optim.Optimizer, decay: float, steps: int) -> Compiled:
    """``steps`` compiled and eager steps, each optimizer's rate scaled by ``decay`` after
    every one (``LambdaLR``), losses and weights compared bit for bit at each."""
    sched_c = optim.lr_scheduler.LambdaLR(opt_c, lambda epoch: decay ** epoch)
    sched_e = optim.lr_scheduler.LambdaLR(opt_e, lambda epoch: decay ** epoch)
    step, eager = bp.compile(_step(compiled_model, opt_c)), _step(eager_model, opt_e)
    for i in range(steps):
        x, y = _batch(i)
        assert np.array_equal(step(x, y).to_numpy(), eager(x, y).to_numpy())
        _same(compiled_model, eager_model)
        sched_c.step()
        sched_e.step()
    return step


def test_scalars_changing_every_call_keep_the_replay_eager() -> None:
    compiled_model, eager_model = _twins()
    opt_c, opt_e = optim.SGD(lr=0.1), optim.SGD(lr=0.1)
    # a new rate every call: SGD bakes it into its kernels
    step = _scheduled(compiled_model, eager_model, opt_c, opt_e, 0.9, 7)
    (runner,) = _runners(step)
    assert runner.captures == 0 and runner.reason == ""
    assert runner.last_eager == "symbolic scalars changed since the last call"


@pytest.mark.parametrize("kind", ["adam", "adamw"])
def test_adam_steps_share_one_graph_fed_from_the_scalar_table(kind: str) -> None:
    """Adam's step count and a rate scheduled every step change each call: the graph reads
    them (through the step's scalars) from the table each launch fills."""
    compiled_model, eager_model = _twins()

    def make() -> optim.Optimizer:
        return optim.Adam(lr=1e-2) if kind == "adam" else optim.AdamW(lr=1e-2,
                                                                       weight_decay=0.1)

    opt_c, opt_e = make(), make()
    step = _scheduled(compiled_model, eager_model, opt_c, opt_e, 0.8, 9)
    (runner,) = _runners(step)
    replays = step.cache_info().replays
    assert replays == 7
    assert (runner.reason, runner.eager_calls, runner.captures, runner.launches) == (
        "", 2, 1, replays - 2)
    assert GraphCpu.apis[-1].uploads == replays - 2  # one table upload per launch


def test_an_adam_step_taking_its_scalars_on_the_host_stays_eager() -> None:
    hosted = bp.Autodiff(bp.Capture(HostAdamCpu))
    compiled_model, eager_model = _twins(hosted)
    opt_c, opt_e = optim.Adam(lr=1e-2), optim.Adam(lr=1e-2)
    step, eager = bp.compile(_step(compiled_model, opt_c)), _step(eager_model, opt_e)
    for i in range(7):
        x, y = _batch(i, hosted)
        assert np.array_equal(step(x, y).to_numpy(), eager(x, y).to_numpy())
        _same(compiled_model, eager_model)
    (runner,) = _runners(step)
    assert re.match(r"(\d+) of \1 adam_step node\(s\) took their per-call scalars on the "
                    "host", runner.reason), runner.reason
    assert runner.launches == 0


def test_a_bad_target_raises_on_a_launch_and_the_graph_stays() -> None:
    model, _ = _twins()
    step = bp.compile(_step(model, optim.SGD(lr=0.1)))
    for i in range(6):  # make the state, record, 2 warm-up replays, capture, launch
        step(*_batch(i))
    (runner,) = _runners(step)
    assert runner.launches == 2
    x, y = _batch(9)
    bad = y.to_numpy().copy()
    bad[3] = 4
    before = {k: v.to_numpy() for k, v in model.state_dict().items()}
    with pytest.raises(bp.BurnpyError, match="cross_entropy: target 4 is out of range"):
        step(x, bp.Tensor.from_numpy(bad, backend=A))
    assert runner.launches == 2  # checked on the host before the launch: nothing ran
    for k, v in model.state_dict().items():
        assert np.array_equal(v.to_numpy(), before[k])
    step(x, y)
    assert (runner.captures, runner.launches) == (1, 3)


def test_a_check_of_a_computed_value_keeps_the_replay_eager() -> None:
    embed, head = nn.Embedding(11, 4, backend=A), nn.Linear(4, 5, backend=A)

    def loss_of(ids: bp.Tensor, targets: bp.Tensor) -> bp.Tensor:
        logits = head(embed(ids + 1)).reshape(-1, 5)  # the indices checked are computed
        return F.cross_entropy(logits, targets.reshape(-1))

    compiled = bp.compile(loss_of)
    ids = np.array([[0, 1, 2], [3, 4, 5]])
    targets = np.array([[0, 1, 2], [3, 4, 0]])
    for _ in range(5):
        args = (bp.Tensor.from_numpy(ids, backend=A), bp.Tensor.from_numpy(targets, backend=A))
        assert np.array_equal(compiled(*args).to_numpy(), loss_of(*args).to_numpy())
    (runner,) = _runners(compiled)
    assert "a value computed inside the graph" in runner.reason
    assert runner.captures == 0 and runner.eager_calls == 4


def test_random_ops_keep_the_replay_eager_with_fresh_draws() -> None:
    compiled_model, eager_model = _twins(C, dropout=0.5)
    x = bp.Tensor.from_numpy(np.random.default_rng(3).standard_normal((6, 8)).astype(
        np.float32), backend=C)
    forward = bp.compile(compiled_model)
    device = GraphCpu.default_device()
    GraphCpu.seed(device, 7)
    got = [forward(x).to_numpy() for _ in range(5)]
    GraphCpu.seed(device, 7)
    want = [eager_model(x).to_numpy() for _ in range(5)]
    for g, w in zip(got, want, strict=True):
        assert np.array_equal(g, w)
    assert not np.array_equal(got[3], got[4])
    (runner,) = _runners(forward)
    assert runner.reason.startswith("random op float_random")
    assert runner.captures == 0


@pytest.mark.parametrize("why", ["unavailable", "fail"])
def test_no_capture_api_or_a_failed_capture_runs_eagerly(why: str) -> None:
    if why == "unavailable":
        GraphCpu.make_api = lambda: FakeGraphs(unavailable="CuPy 8 has no CUDA graph capture")
    else:
        GraphCpu.make_api = lambda: FakeGraphs(fail=GraphCaptureError("a host read"))
    compiled_model, eager_model = _twins()
    step = bp.compile(_step(compiled_model, optim.SGD(lr=0.1)))
    eager = _step(eager_model, optim.SGD(lr=0.1))
    for i in range(6):
        x, y = _batch(i)
        assert np.array_equal(step(x, y).to_numpy(), eager(x, y).to_numpy())
        _same(compiled_model, eager_model)
    (runner,) = _runners(step)
    assert runner.captures == runner.launches == 0
    assert runner.eager_calls == step.cache_info().replays == 4
    assert runner.reason == ("CuPy 8 has no CUDA graph capture" if why == "unavailable" else
                             "capture failed: GraphCaptureError: a host read")


def test_a_call_while_another_thread_launches_runs_eagerly() -> None:
    model, _ = _twins()
    step = bp.compile(_step(model, optim.SGD(lr=0.1)))
    for i in range(4):
        step(*_batch(i))
    (runner,) = _runners(step)
    runner._lock.acquire()  # as another thread in the middle of a launch would hold it
    try:
        x, y = _batch(5)
        launches = runner.launches
        step(x, y)
    finally:
        runner._lock.release()
    assert runner.launches == launches
    assert runner.last_eager == "another thread is launching this graph"


class _Array:
    """Stands in for a ``cupy.ndarray`` in ``host_read``: records the stream it was read on."""

    shape = (2,)
    dtype = np.dtype(np.int64)

    def __init__(self) -> None:
        self.streams: list[Any] = []

    def get(self, stream: Any = None) -> np.ndarray:
        self.streams.append(stream)
        return np.array([1, 2])


def test_inside_a_capture_only_static_inputs_are_read_and_nothing_is_uploaded() -> None:
    static, computed, caller = _Array(), _Array(), object()
    assert np.array_equal(graphs.host_read(computed), [1, 2])  # no capture: a plain read
    graphs._CAPTURING.state = ({id(static)}, caller)
    try:
        assert np.array_equal(graphs.host_read(static), [1, 2])
        with pytest.raises(GraphCaptureError, match=r"computed inside the graph \(shape"):
            graphs.host_read(computed)
        with pytest.raises(GraphCaptureError, match="an op uploads 64 bytes of host data"):
            graphs._pinned_outside_capture(64)  # CuPy's staging of an upload
    finally:
        graphs._CAPTURING.state = None
    assert static.streams == [caller] and computed.streams == [None]
    done = threading.Event()

    def other_thread() -> None:  # the capture state is per thread
        graphs._CAPTURING.state = ({id(static)}, caller)
        done.set()

    thread = threading.Thread(target=other_thread)
    thread.start()
    thread.join()
    assert done.is_set() and graphs.host_read(computed) is not None


class _Log:
    """What a stand-in CuPy was asked, in order."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def context(self, name: str) -> Any:
        log = self

        class Context:
            def __enter__(self) -> None:
                log.calls.append(f"enter {name}")

            def __exit__(self, *exc: object) -> None:
                log.calls.append(f"exit {name}")

        return Context()


def _fake_cupy(log: _Log, fail_in_capture: bool) -> Any:
    """The parts of CuPy ``CupyGraphs.capture`` uses, logging each call."""

    class Stream:
        def __init__(self, non_blocking: bool = False) -> None:
            self.name = "side" if non_blocking else "caller"
            self.capturing = False

        def __enter__(self) -> None:
            log.calls.append(f"enter stream {self.name}")

        def __exit__(self, *exc: object) -> None:
            log.calls.append(f"exit stream {self.name}")

        def record(self) -> str:
            return f"event on {self.name}"

        def wait_event(self, event: str) -> None:
            log.calls.append(f"{self.name} waits for {event}")

        def begin_capture(self) -> None:
            log.calls.append("begin capture")
            self.capturing = True

        def end_capture(self) -> str:
            log.calls.append("end capture")
            was, self.capturing = self.capturing, False
            if fail_in_capture:
                raise RuntimeError("capture invalidated")
            assert was
            return "graph"

    caller = Stream()
    pool = type("Pool", (), {"malloc": lambda self, size: f"pinned {size}"})()
    private = type("PrivatePool", (), {"malloc": lambda self, size: None})()
    cuda = type("cuda", (), {
        "Stream": Stream,
        "Device": staticmethod(lambda index: log.context(f"device {index}")),
        "MemoryPool": staticmethod(lambda: private),
        "using_allocator": staticmethod(lambda malloc: log.context("private allocator")),
        "get_current_stream": staticmethod(lambda: caller),
        "set_pinned_memory_allocator": staticmethod(
            lambda allocator: log.calls.append(
                "pinned: guard" if allocator is graphs._pinned_outside_capture
                else f"pinned: {allocator(8)}")),
    })
    return type("cupy", (), {"cuda": cuda,
                             "get_default_pinned_memory_pool": staticmethod(lambda: pool)})


@pytest.mark.parametrize("fail", [False, True])
def test_the_cupy_adapter_rehearses_then_captures_and_always_restores(fail: bool) -> None:
    log = _Log()
    cupy = _fake_cupy(log, fail)
    api = graphs.CupyGraphs(cupy)
    static = [object()]

    def call() -> list[Any]:
        state = graphs._CAPTURING.state if hasattr(graphs._CAPTURING, "state") else None
        log.calls.append("call" if state is None else "call (capturing)")
        if state is not None:
            assert state[0] == {id(static[0])}  # only the static inputs are readable
            if fail:
                raise GraphCaptureError("a host read")
        return ["out"]

    if fail:
        with pytest.raises(GraphCaptureError, match="a host read"):
            api.capture(0, call, static)
    else:
        assert api.capture(0, call, static) == ("graph", ["out"], cupy.cuda.MemoryPool())
    middle = ["call (capturing)", "end capture"] if fail else ["call (capturing)"]
    tail = [] if fail else ["end capture"]
    assert log.calls == [
        "enter device 0", "side waits for event on caller",
        "enter stream side", "call", "exit stream side",  # the rehearsal, uncaptured
        "caller waits for event on side",
        "enter stream side", "enter private allocator", "pinned: guard", "begin capture",
        *middle, "pinned: pinned 8", *tail,
        "exit private allocator", "exit stream side", "exit device 0"]
    assert graphs._CAPTURING.state is None
    assert not graphs._PINNED_LOCK.locked()
