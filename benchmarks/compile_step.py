"""Benchmark: ``bp.compile`` on the GPT example's training step, the digits CNN's and a 50-op chain.

1. The training step of ``benchmarks/gpt_step.py`` (forward, mean cross entropy, backward,
   gradient-norm clipping, AdamW with decay on matrices) six ways: burnpy eager on
   ``Autodiff(CpuBackend)`` and on ``Autodiff(Fusion(CpuBackend))``, the same step compiled
   (the model on ``Autodiff(Capture(CpuBackend))``, ``bp.compile`` replaying its recorded
   graph op by op, and on ``Autodiff(Capture(Fusion(CpuBackend)))``, whose replay runs each
   elementwise run as one fused kernel), torch eager on an equivalent model with the same
   weights, and that torch step under ``torch.compile`` (default mode, inductor's C++ CPU
   backend) as the reference figure. All agree on the first losses (bitwise, or within 1e-6
   where fused; torch within 1e-3); the first two calls' times are the compile cost (burnpy:
   the first creates AdamW's state, the second records; torch: the first traces and compiles,
   in a fresh inductor cache directory unless ``TORCHINDUCTOR_CACHE_DIR`` is set, so it is
   the cold cost a first run pays). Where torch.compile fails (no C++ compiler, say), its
   error is printed in place of its figures.
2. The GEMM ceiling: the time the eager and compiled steps spend in GEMMs (every
   ``burnpy_cpu.memory.matmul`` call: matmul, linear, attention and their gradients), timed in
   place, and so the most any removal of everything else (Python, autodiff, elementwise
   kernels) could speed the step up: step / GEMM time, which bounds compiled / eager.
3. The digits example's CNN step (batch 32 of 8x8 images, Adam), eager against compiled.
4. Chains of 50 elementwise ops on a 64-value tensor, eager on ``CpuBackend`` against compiled
   on ``Capture(CpuBackend)`` (op by op) and on ``Capture(Fusion(CpuBackend))`` (one kernel):
   the per-op cost of a replay. The issue's chain has 20 transcendental ops (tanh, sin), which
   the fused kernel computes with ``burnpy_cpu/vector_math.py``'s vectorized float32 functions;
   a chain of arithmetic and sqrt shows the fused replay's dispatch cost alone.
5. The GPT step over a cycle of 12 batch sizes, more than a graph cache holds: eager, compiled
   (a graph per size, so the cycle keeps recording) and ``dynamic=True`` (one graph).

float32, one thread, candidates alternating in the same process, medians of wall time and of
the thread's CPU time (``time.thread_time``, which other processes on a loaded machine do not
inflate); quotes ratios of both.
Run: ``.venv/bin/python benchmarks/compile_step.py [--large] [--rounds N] [--no-torch-compile]
[--only chain,digits,gpt,sizes]``.
"""

from __future__ import annotations

import os
import tempfile

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_var] = "1"
#: inductor keeps compiled graphs across processes; a fresh directory makes torch.compile's
#: first call the cold compile a first run pays (removed when the process exits).
_INDUCTOR_CACHE = None
if "TORCHINDUCTOR_CACHE_DIR" not in os.environ:
    _INDUCTOR_CACHE = tempfile.TemporaryDirectory(prefix="compile_step_inductor_")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = _INDUCTOR_CACHE.name

import argparse  # noqa: E402
import operator  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable, Iterator, Mapping  # noqa: E402
from contextlib import contextmanager  # noqa: E402
from typing import Any  # noqa: E402

import _timing  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from gpt_step import (  # noqa: E402
    BATCH,
    CLIP,
    LARGE,
    LARGE_BATCH,
    LR,
    VOCAB,
    WEIGHT_DECAY,
    TorchGPT,
    TorchStep,
    batches,
    torch_twin,
)

import burnpy as bp  # noqa: E402
import burnpy.nn.functional as F  # noqa: E402
import burnpy_cpu.memory  # noqa: E402
from burnpy import Tensor  # noqa: E402
from burnpy.examples.digits import DigitsCNN  # noqa: E402
from burnpy.examples.gpt_model import GPT, GPTConfig, training_step  # noqa: E402
from burnpy.fusion import Fusion  # noqa: E402
from burnpy.jit import Compiled  # noqa: E402
from burnpy.optim import Adam  # noqa: E402
from burnpy_cpu import CpuBackend  # noqa: E402

CHAIN = 50
Clocks = tuple[dict[str, float], dict[str, float]]


def alternate(candidates: Mapping[str, Callable[[], object]], number: int, rounds: int) -> Clocks:
    """Median wall seconds and median thread CPU seconds per call of each candidate, measured
    in the same alternating rounds (the order rotates each round, as ``_timing.alternate``)."""
    for fn in candidates.values():
        _timing.per_call(fn, max(1, number // 10))
    wall: dict[str, list[float]] = {name: [] for name in candidates}
    cpu: dict[str, list[float]] = {name: [] for name in candidates}
    names = list(candidates)
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            fn = candidates[name]
            start, start_cpu = time.perf_counter(), time.thread_time()
            for _ in range(number):
                fn()
            cpu[name].append((time.thread_time() - start_cpu) / number)
            wall[name].append((time.perf_counter() - start) / number)
    return ({k: statistics.median(v) for k, v in wall.items()},
            {k: statistics.median(v) for k, v in cpu.items()})


def ratio(clocks: Clocks, slow: str, fast: str) -> str:
    """``fast``'s speed over ``slow``'s, by wall time and by thread CPU time."""
    wall, cpu = clocks
    return f"{wall[slow] / wall[fast]:.2f}x wall, {cpu[slow] / cpu[fast]:.2f}x thread CPU"


class Step:
    """The GPT training step on ``backend``; compiled with ``bp.compile`` when asked. Each
    call uploads the next batch (as a user's loop does) and runs the step on it."""

    def __init__(self, model: GPT, data: list[tuple[np.ndarray, np.ndarray]], backend: Any,
                 compiled: bool) -> None:
        self.data, self.backend, self.i = data, backend, 0
        train = training_step(model, LR, WEIGHT_DECAY, CLIP)
        self.train: Callable[[Tensor, Tensor], Tensor] = bp.compile(train) if compiled else train

    def step(self) -> Tensor:
        x, y = self.data[self.i % len(self.data)]
        self.i += 1
        return self.train(Tensor.from_data(x, backend=self.backend),
                          Tensor.from_data(y, backend=self.backend))

    def __call__(self) -> float:
        return float(self.step().item())


class TorchCompiledStep(TorchStep):
    """``TorchStep``'s step with its body (forward, loss, backward, clipping, AdamW) under
    ``torch.compile`` in its default mode. Dynamo cannot trace ``Tensor.backward()`` or
    ``zero_grad`` there, so it splits the step at them: the forward and loss are one compiled
    graph whose backward AOTAutograd compiles too (``backward()`` runs it), clipping and AdamW
    compiled graphs; only the graph breaks' glue runs eagerly. The batch is picked outside,
    so the step compiles once rather than once per batch index."""

    def __init__(self, model: TorchGPT, data: list[tuple[np.ndarray, np.ndarray]]) -> None:
        super().__init__(model, data)
        self.compiled = torch.compile(self.train)  # TorchStep.train, the one batch's step

    def step(self) -> torch.Tensor:
        x, y = self.data[self.i % len(self.data)]
        self.i += 1
        result: torch.Tensor = self.compiled(x, y)
        return result


def torch_compile_summary() -> str:
    """How Dynamo split the compiled step: its graphs and graph breaks so far."""
    counters = torch._dynamo.utils.counters
    breaks = sum(counters["graph_break"].values())
    return f"{counters['stats']['unique_graphs']} graphs, {breaks} graph breaks"


def cpu_seconds() -> float:
    """CPU time of this process and its finished children (inductor's compiler runs), which
    other processes on a loaded machine do not inflate as they do wall time."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


class Timer:
    """Wall and CPU seconds (``cpu_seconds``) of each timed call, for the compile costs."""

    def __init__(self) -> None:
        self.wall: list[float] = []
        self.cpu: list[float] = []

    def __call__(self, fn: Callable[[], float]) -> float:
        start, start_cpu = time.perf_counter(), cpu_seconds()
        result = fn()
        self.cpu.append(cpu_seconds() - start_cpu)
        self.wall.append(time.perf_counter() - start)
        return result

    def seconds(self, i: int) -> str:
        return f"{self.wall[i]:.2f} s wall, {self.cpu[i]:.2f} s CPU"


@contextmanager
def gemm_clock() -> Iterator[list[float]]:
    """Times every ``burnpy_cpu.memory.matmul`` call (CpuBackend's matmul, linear and
    attention GEMMs, forward and backward) in thread CPU seconds while open; yields
    ``[seconds, flops]``. The replay of a compiled step calls ``CpuBackend.float_matmul``,
    which looks the function up at each call, so its GEMMs are timed as the eager step's are."""
    total = [0.0, 0.0]
    inner = burnpy_cpu.memory.matmul
    clock = time.thread_time

    def timed(lhs: Any, rhs: Any,
              fallback: Callable[[Any, Any], Any] = operator.matmul) -> Any:
        start = clock()
        out = inner(lhs, rhs, fallback)
        total[0] += clock() - start
        total[1] += 2.0 * out.size * lhs.shape[-1]
        return out

    burnpy_cpu.memory.matmul = timed
    try:
        yield total
    finally:
        burnpy_cpu.memory.matmul = inner


def sgemm_rate(n: int = 512, calls: int = 20) -> float:
    """FLOP/s of one ``n``x``n`` float32 matmul alone, the best of ``calls`` by thread CPU
    time (BLAS's best on one thread here)."""
    a, b = (np.random.default_rng(s).standard_normal((n, n), dtype=np.float32) for s in (0, 1))
    out = np.empty((n, n), np.float32)
    np.matmul(a, b, out=out)
    best = float("inf")
    for _ in range(calls):
        start = time.thread_time()
        np.matmul(a, b, out=out)
        best = min(best, time.thread_time() - start)
    return 2.0 * n ** 3 / best


def gemm_ceiling(steps: dict[str, Callable[[], object]], rounds: int) -> None:
    """The GEMMs' share of each step by thread CPU time (medians of ``rounds`` steps, timed in
    place) and the speed-up left if all else cost nothing: step / GEMM time bounds what any
    removal of Python overhead (or of every non-GEMM kernel) could reach, compiled / eager."""
    peak = sgemm_rate()
    print(f"GEMM ceiling (every CpuBackend GEMM timed in place, thread CPU time; median of "
          f"{rounds} steps; a 512x512 sgemm alone runs {peak / 1e9:.1f} GFLOP/s here)")
    for name, fn in steps.items():
        step_s, gemm_s, flops = [], [], 0.0
        for _ in range(rounds):
            with gemm_clock() as total:
                start = time.thread_time()
                fn()
                step_s.append(time.thread_time() - start)
            gemm_s.append(total[0])
            flops = total[1]
        step, gemm = statistics.median(step_s), statistics.median(gemm_s)
        print(f"  {name:16s} step {step * 1e3:7.2f} ms, GEMMs {gemm * 1e3:6.2f} ms "
              f"({gemm / step:.0%}; {flops / 1e9:.3f} GFLOP at {flops / gemm / 1e9:.1f} GFLOP/s, "
              f"{flops / gemm / peak:.0%} of the 512x512 rate); ceiling step / GEMMs "
              f"{step / gemm:.2f}x")


def _twin(model: GPT, config: GPTConfig, backend: Any) -> GPT:
    twin = GPT(config, backend=backend)
    twin.load_state_dict({k: Tensor.from_data(v.to_numpy(), backend=backend)
                          for k, v in model.state_dict().items()})
    return twin


def gpt(large: bool, rounds: int, torch_compile: bool) -> None:
    config, batch = (LARGE, LARGE_BATCH) if large else (GPTConfig(VOCAB), BATCH)
    eager_backend = bp.Autodiff(CpuBackend)
    model = GPT(config, backend=eager_backend)
    data = batches(config, 8, batch=batch)
    eager = Step(model, data, eager_backend, compiled=False)
    others: dict[str, Callable[[], float]] = {}
    for name, backend, compiled_step in (
            ("burnpy compiled", bp.Autodiff(bp.Capture(CpuBackend)), True),
            ("compiled+fusion", bp.Autodiff(bp.Capture(Fusion(CpuBackend))), True),
            ("eager+fusion", bp.Autodiff(Fusion(CpuBackend)), False)):
        others[name] = Step(_twin(model, config, backend), data, backend, compiled_step)
    compiled = others["burnpy compiled"]
    assert isinstance(compiled, Step)
    theirs = TorchStep(torch_twin(model), data)
    torch_steps: dict[str, Callable[[], float]] = {"torch eager": theirs}
    warm, torch_warm = Timer(), Timer()
    absent = "not run (--no-torch-compile)"
    if torch_compile:
        torch_steps["torch compiled"] = TorchCompiledStep(torch_twin(model), data)
    for _ in range(2):
        loss = warm(compiled)
        reference = eager()
        np.testing.assert_allclose(loss, reference, rtol=1e-6, err_msg="compiled diverges")
        torch_loss = theirs()
        np.testing.assert_allclose(loss, torch_loss, rtol=1e-3, err_msg="torch diverges")
        if "torch compiled" in torch_steps:
            try:
                torch_compiled_loss = torch_warm(torch_steps["torch compiled"])
            except Exception as error:  # no C++ compiler, say: the figure is absent, not the run
                first_line = str(error).strip().splitlines()[0] if str(error).strip() else ""
                absent = f"no figure, its first call failed: {type(error).__name__}: {first_line}"
                del torch_steps["torch compiled"]
            else:
                np.testing.assert_allclose(torch_compiled_loss, torch_loss, rtol=1e-5,
                                           err_msg="torch.compile diverges")
        for name in ("compiled+fusion", "eager+fusion"):
            np.testing.assert_allclose(others[name](), reference, rtol=1e-6,
                                       err_msg=f"{name} diverges")
    for _ in range(2):
        reference = eager()
        for name, other in others.items():
            np.testing.assert_allclose(other(), reference, rtol=1e-6, err_msg=f"{name} diverges")
        torch_loss = theirs()
        if "torch compiled" in torch_steps:
            np.testing.assert_allclose(torch_steps["torch compiled"](), torch_loss, rtol=1e-5,
                                       err_msg="torch.compile diverges")
    steps: dict[str, Callable[[], object]] = {**others, "burnpy eager": eager, **torch_steps}
    clocks = alternate(steps, 1, rounds)
    wall, cpu = clocks
    print(f"GPT {config.n_layer} layers, {config.n_head} heads, width {config.n_embd}, "
          f"context {config.block_size}, batch {batch}; AdamW + clipping, float32, one thread; "
          f"median of {rounds} alternating steps")
    for name in steps:
        print(f"  {name:16s} {wall[name] * 1e3:8.2f} ms/step wall, {cpu[name] * 1e3:8.2f} ms "
              f"thread CPU")
    for name in ("burnpy compiled", "compiled+fusion"):
        print(f"  {name} / burnpy eager steps/s: {ratio(clocks, 'burnpy eager', name)} "
              f"(target >= 1.3x)")
        print(f"  {name} / torch eager steps/s:  {ratio(clocks, 'torch eager', name)} "
              f"(target >= 1.3x)")
    print(f"  compiled+fusion / eager+fusion:  {ratio(clocks, 'eager+fusion', 'compiled+fusion')}")
    print(f"  burnpy eager / torch eager:      {ratio(clocks, 'torch eager', 'burnpy eager')}")
    if "torch compiled" in steps:
        print(f"  torch compiled / torch eager:    "
              f"{ratio(clocks, 'torch eager', 'torch compiled')}")
        print(f"  burnpy compiled / torch compiled: "
              f"{ratio(clocks, 'torch compiled', 'burnpy compiled')}")
    print(f"  burnpy: first call (eager, creates AdamW's state) {warm.seconds(0)}; second "
          f"(records and generates the replay) {warm.seconds(1)}; "
          f"{compiled.train.cache_info()}")  # type: ignore[attr-defined]
    if "torch compiled" in steps:
        cache = "a fresh" if _INDUCTOR_CACHE is not None else "the given"
        print(f"  torch.compile (default mode, {torch_compile_summary()}): first call "
              f"(traces and compiles, {cache} inductor cache) {torch_warm.seconds(0)}; second "
              f"{torch_warm.seconds(1)}")
    else:
        print(f"  torch.compile: {absent}")
    gemm_ceiling({"burnpy eager": eager, "burnpy compiled": compiled}, rounds)


def digits_step(model: DigitsCNN, backend: Any, images: np.ndarray, labels: np.ndarray,
                compiled: bool) -> Callable[[], float]:
    """The digits example's training step on ``model`` (Adam, cross entropy), compiled with
    ``bp.compile`` when asked; each call uploads the batch and returns the loss."""
    optim = Adam(lr=1e-2)

    def train(x: Tensor, y: Tensor) -> Tensor:
        loss = F.cross_entropy(model(x), y)
        optim.step(model, loss.backward())
        return loss

    fn = bp.compile(train) if compiled else train
    return lambda: float(fn(Tensor.from_data(images, backend=backend),
                            Tensor.from_data(labels, backend=backend)).item())


def digits(rounds: int) -> None:
    """The digits CNN's training step (batch 32, Adam, dropout 0.2), eager against compiled."""
    rng = np.random.default_rng(0)
    images = rng.random((32, 1, 8, 8), dtype=np.float32)
    labels = rng.integers(0, 10, 32)
    device = CpuBackend.default_device()
    eager_backend, compiled_backend = bp.Autodiff(CpuBackend), bp.Autodiff(bp.Capture(CpuBackend))
    model = DigitsCNN(backend=eager_backend)
    twin = DigitsCNN(backend=compiled_backend)
    twin.load_state_dict({k: Tensor.from_data(v.to_numpy(), backend=compiled_backend)
                          for k, v in model.state_dict().items()})
    steps = {"eager": digits_step(model, eager_backend, images, labels, compiled=False),
             "compiled": digits_step(twin, compiled_backend, images, labels, compiled=True)}
    for i in range(4):  # the same dropout draws: each step from the same seed
        CpuBackend.seed(device, i)
        reference = steps["eager"]()
        CpuBackend.seed(device, i)
        np.testing.assert_allclose(steps["compiled"](), reference, rtol=1e-6,
                                   err_msg="compiled digits step diverges")
    clocks = alternate(steps, 10, rounds)
    print(f"digits CNN step, batch 32 of 8x8, Adam, float32, one thread; median of {rounds} "
          f"rounds of 10 steps")
    for name in steps:
        print(f"  {name:16s} {clocks[0][name] * 1e3:8.3f} ms/step wall, "
              f"{clocks[1][name] * 1e3:8.3f} ms thread CPU")
    print(f"  compiled / eager steps/s: {ratio(clocks, 'eager', 'compiled')}")


#: Batch sizes of a loader that varies them (bucketing, a last short batch), more distinct
#: ones than a graph cache holds.
SIZES = (16, 12, 9, 16, 5, 14, 11, 16, 7, 13, 10, 15)


def sizes(rounds: int) -> None:
    """The GPT step at the example shape over batches of ``SIZES``: eager, compiled (a graph
    per size, ``cache_size`` 8: the cycle misses and records again) and ``dynamic=True``
    (one graph, once a second size confirmed it)."""
    config = GPTConfig(VOCAB)
    eager_backend, backend = bp.Autodiff(CpuBackend), bp.Autodiff(bp.Capture(CpuBackend))
    model = GPT(config, backend=eager_backend)
    rng = np.random.default_rng(0)
    data = [(rng.integers(0, VOCAB, (n, config.block_size)),
             rng.integers(0, VOCAB, (n, config.block_size))) for n in SIZES]
    trainers = {"eager": (eager_backend, training_step(model, LR, WEIGHT_DECAY, CLIP))}
    for name, dynamic in (("compiled", False), ("compiled dynamic", True)):
        trainers[name] = (backend, bp.compile(training_step(_twin(model, config, backend), LR,
                                                            WEIGHT_DECAY, CLIP),
                                              dynamic=dynamic))

    def cycle(backend: Any, train: Callable[[Tensor, Tensor], Tensor]) -> Callable[[], float]:
        def run() -> float:
            losses = [train(Tensor.from_data(x, backend=backend),
                            Tensor.from_data(y, backend=backend)) for x, y in data]
            return float(losses[-1].item())
        return run

    steps = {name: cycle(*pair) for name, pair in trainers.items()}
    for _ in range(2):  # twins: the same losses after each cycle
        losses = {name: step() for name, step in steps.items()}
        for name, loss in losses.items():
            np.testing.assert_allclose(loss, losses["eager"], rtol=1e-6, err_msg=name)
    clocks = alternate(steps, 1, rounds)
    print(f"GPT step (example shape) over {len(SIZES)} batch sizes {SIZES}, one thread; median "
          f"of {rounds} rounds, ms per step")
    for name, (_, train) in trainers.items():
        info = train.cache_info() if isinstance(train, Compiled) else ""
        print(f"  {name:17s} {clocks[0][name] / len(SIZES) * 1e3:8.2f} ms wall, "
              f"{clocks[1][name] / len(SIZES) * 1e3:8.2f} ms thread CPU  {info}")
    print(f"  compiled dynamic / compiled steps/s: {ratio(clocks, 'compiled', 'compiled dynamic')}")
    print(f"  compiled dynamic / eager steps/s:    {ratio(clocks, 'eager', 'compiled dynamic')}")


def transcendental(x: Tensor) -> Tensor:
    """The issue's chain: per 5 ops a multiply, an add, tanh, sin and a subtraction."""
    for i in range(CHAIN // 5):
        x = (x * 1.001 + 0.01).tanh().sin() - float(i) * 1e-3
    return x


def arithmetic(x: Tensor) -> Tensor:
    """The same chain with sqrt and abs for tanh and sin (its values stay positive)."""
    for i in range(CHAIN // 5):
        x = (x * 1.001 + 0.01).sqrt().abs() - float(i) * 1e-3
    return x


def chain(fn: Callable[[Tensor], Tensor], rounds: int) -> None:
    data = np.abs(np.random.default_rng(0).standard_normal(64)).astype(np.float32)
    x_eager = Tensor.from_numpy(data, backend=CpuBackend)
    x_capture = Tensor.from_numpy(data, backend=bp.Capture(CpuBackend))
    x_fusion = Tensor.from_data(data, backend=bp.Capture(Fusion(CpuBackend)))
    compiled, fused = bp.compile(fn), bp.compile(fn)
    for _ in range(2):
        expected = fn(x_eager).to_numpy()
        assert np.array_equal(compiled(x_capture).to_numpy(), expected)
        np.testing.assert_allclose(fused(x_fusion).to_numpy(), expected, rtol=1e-6)
    wall, cpu = clocks = alternate({"eager": lambda: fn(x_eager),
                                    "compiled": lambda: compiled(x_capture),
                                    "compiled+fusion": lambda: fused(x_fusion)}, 200, rounds)
    print(f"{CHAIN}-op elementwise chain ({fn.__name__}) on 64 float32 values, median of "
          f"{rounds} rounds (guards and binding included)")
    for name, s in wall.items():
        print(f"  {name:16s} {_timing.fmt(s)} per call, {s / CHAIN * 1e6:.2f} us/op "
              f"({cpu[name] / CHAIN * 1e6:.2f} thread CPU); {ratio(clocks, 'eager', name)} eager")
    print("  target: >= 5x eager and < 1 us/op")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--large", action="store_true",
                   help="3 blocks, 6 heads, width 192, context 128, batch 8")
    p.add_argument("--no-torch-compile", action="store_true",
                   help="leave out torch.compile (its first call compiles for tens of seconds)")
    p.add_argument("--only", default="chain,digits,gpt",
                   help="comma-separated sections to run")
    args = p.parse_args()
    torch.set_num_threads(1)
    torch._inductor.config.compile_threads = 1
    sections = set(args.only.split(","))
    if "chain" in sections:
        chain(transcendental, args.rounds)
        chain(arithmetic, args.rounds)
    if "digits" in sections:
        digits(args.rounds)
    if "gpt" in sections:
        gpt(args.large, args.rounds, not args.no_torch_compile)
    if "sizes" in sections:
        sizes(args.rounds)


if __name__ == "__main__":
    main()
