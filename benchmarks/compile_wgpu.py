"""Benchmark: ``bp.compile`` of the GPT example's training step on WebGPU (issue 31).

The step of ``benchmarks/gpt_step.py`` (forward, mean cross entropy, backward, gradient-norm
clipping, AdamW with decay on matrices) three ways, alternating in one process: eager on
``Autodiff(WgpuBackend)``; compiled on ``Autodiff(Capture(WgpuBackend))`` with the taped replay
(``burnpy_wgpu.replay``: one submission of the dispatches taped on the first replay, rebound to
each call's buffers); and compiled with the plain op-by-op replay (``Backend.replay_runner``'s
default), to tell the tape's share from the graph's. Each step uploads its batch, runs, and
reads the loss back (so the device has finished). Losses are checked to agree (to rounding:
the embeddings' gradients sum with float atomics in thread order). Reports the median wall,
main-thread CPU and process CPU time per step (the CPU software adapter computes on its own
threads: process minus main-thread CPU is the device's execution), the main thread's CPU time
inside the step's call alone (the host's Python and wgpu encoding work, with no wait for the
device: nothing is read back inside it), dispatches and submissions per step,
and the first calls' times (AdamW creates its state, then the step records, then the first
replay tapes). Two shapes: the example's (2 layers, 4 heads, width 64, context 64, batch 16)
and a small one (1 layer, 2 heads, width 32, context 16, batch 4) where Python's share is
larger. ``--kernels`` also times each kernel of one eager step on the device (timestamp
queries written around each dispatch; the compiled step runs the same kernels) and prints the
share of the step's wall time they take, by kernel family.
Run: ``.venv/bin/python benchmarks/compile_wgpu.py [--rounds N] [--small-only] [--kernels]``.
"""

from __future__ import annotations

# isort: off
import _timing  # noqa: F401  first: it pins BLAS to one thread before NumPy loads

# isort: on
import argparse
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np
from compile_step import Step as GptStep
from gpt_step import BATCH, VOCAB, batches

import burnpy as bp
from burnpy import Tensor
from burnpy.examples.gpt_model import GPT, GPTConfig
from burnpy_wgpu import WgpuBackend
from burnpy_wgpu.device import adapter_for
from burnpy_wgpu.runtime import WgpuRuntime, runtime_for

_TIMESTAMPS = ["timestamp-query", "timestamp-query-inside-passes"]
if "--kernels" in sys.argv:  # the runtime's device must be asked for timestamp queries
    _adapter = adapter_for(WgpuBackend.default_device())
    _request = type(_adapter).request_device_sync

    def _with_timestamps(self: Any, required_features: Any = (), **kw: Any) -> Any:
        return _request(self, required_features=[*required_features, *_TIMESTAMPS], **kw)

    type(_adapter).request_device_sync = _with_timestamps
RT = runtime_for(WgpuBackend.default_device())
SMALL, SMALL_BATCH = GPTConfig(VOCAB, block_size=16, n_layer=1, n_head=2, n_embd=32), 4


class Step(GptStep):
    """``compile_step``'s GPT training step (compiled when asked), also summing ``host``: the
    main thread's CPU seconds in the step's call, before the loss is read back (the host's
    work alone, no readback waits inside it)."""

    def __init__(self, model: GPT, data: list[tuple[np.ndarray, np.ndarray]], backend: Any,
                 compiled: bool) -> None:
        super().__init__(model, data, backend, compiled)
        self.host = 0.0

    def __call__(self) -> float:
        start = time.thread_time()
        loss = self.step()
        self.host += time.thread_time() - start
        return float(loss.item())


def _op_by_op(run: Any, graph: Any) -> Any:
    """``Backend.replay_runner``'s default: the generated replay itself."""
    return run


def _measure(step: Step, number: int) -> tuple[float, float, float, float, float, float]:
    """Wall, main-thread CPU, process CPU (the adapter's threads too) and host-work seconds,
    dispatches and submissions per step."""
    dispatches, submits, host = RT.stats["dispatches"], RT.stats["submits"], step.host
    wall, cpu, process = time.perf_counter(), time.thread_time(), time.process_time()
    for _ in range(number):
        step()
    return ((time.perf_counter() - wall) / number, (time.thread_time() - cpu) / number,
            (time.process_time() - process) / number, (step.host - host) / number,
            (RT.stats["dispatches"] - dispatches) / number,
            (RT.stats["submits"] - submits) / number)


def kernel_times(step: Callable[[], float]) -> None:
    """Time each dispatch of one call of ``step`` on the device (a timestamp before and after
    it in the compute pass) and print the kernels' total against the step's wall time."""
    import wgpu

    queries = RT.device.create_query_set(type="timestamp", count=4096)  # 2048 dispatches at most
    dispatch = WgpuRuntime.dispatch
    families: list[str] = []

    def timed(self: WgpuRuntime, kernel: Any, *args: Any) -> None:
        index = 2 * len(families)
        self._pass()._write_timestamp(queries, index)
        dispatch(self, kernel, *args)
        self._pass()._write_timestamp(queries, index + 1)
        key = kernel.key
        families.append(str(key[0]) + (f" {key[1]}" if key[0] == "map" else ""))

    RT.sync()
    WgpuRuntime.dispatch = timed  # type: ignore[method-assign,assignment]
    try:
        start = time.perf_counter()
        step()
        wall = time.perf_counter() - start
    finally:
        WgpuRuntime.dispatch = dispatch  # type: ignore[method-assign]
    out = RT.device.create_buffer(size=16 * len(families), usage=wgpu.BufferUsage.QUERY_RESOLVE
                                  | wgpu.BufferUsage.COPY_SRC)
    encoder = RT.device.create_command_encoder()
    encoder.resolve_query_set(queries, 0, 2 * len(families), out, 0)
    RT.queue.submit([encoder.finish()])
    stamps = np.frombuffer(RT.queue.read_buffer(out), np.uint64).astype(np.float64)
    spans = (stamps[1::2] - stamps[0::2]) * 1e-9
    by_family: dict[str, float] = defaultdict(float)
    for family, seconds in zip(families, spans, strict=True):
        by_family[family] += seconds
    print(f"  kernels of one eager step: {len(families)} dispatches, {spans.sum() * 1e3:.1f} ms "
          f"on the device of {wall * 1e3:.1f} ms wall ({spans.sum() / wall:.0%}); largest:")
    for family, seconds in sorted(by_family.items(), key=lambda kv: -kv[1])[:6]:
        print(f"    {family[:60]:60s} {seconds * 1e3:7.2f} ms")


def run_shape(name: str, config: GPTConfig, batch: int, rounds: int, number: int,
              kernels: bool) -> None:
    data = [(x.astype(np.int32), y.astype(np.int32))
            for x, y in batches(config, 8, batch=batch)]
    eager_backend = bp.Autodiff(WgpuBackend)
    model = GPT(config, backend=eager_backend)
    state = {k: v.to_numpy() for k, v in model.state_dict().items()}
    steps: dict[str, Step] = {"eager": Step(model, data, eager_backend, False)}
    firsts: dict[str, list[float]] = {}
    for label, runner in (("compiled, taped", None), ("compiled, op by op", _op_by_op)):
        backend = bp.Autodiff(bp.Capture(WgpuBackend))
        twin = GPT(config, backend=backend)
        twin.load_state_dict({k: Tensor.from_data(v, backend=backend) for k, v in state.items()})
        steps[label] = Step(twin, data, backend, True)
        saved = WgpuBackend.__dict__["replay_runner"]
        if runner is not None:
            WgpuBackend.replay_runner = classmethod(  # type: ignore[method-assign,assignment]
                lambda cls, run, graph: _op_by_op(run, graph))
        try:
            firsts[label] = []
            for _ in range(3):  # creates AdamW's state; records; first replay (tapes)
                start = time.perf_counter()
                steps[label]()
                firsts[label].append(time.perf_counter() - start)
        finally:
            WgpuBackend.replay_runner = saved  # type: ignore[method-assign]
    for _ in range(3):
        steps["eager"]()
    for _ in range(2):  # all at the same step again: losses agree
        losses = {label: step() for label, step in steps.items()}
        for label, loss in losses.items():
            np.testing.assert_allclose(loss, losses["eager"], rtol=1e-5, err_msg=label)
    samples: dict[str, list[tuple[float, ...]]] = {k: [] for k in steps}
    names = list(steps)
    for r in range(rounds):
        for label in names[r % len(names):] + names[:r % len(names)]:
            samples[label].append(_measure(steps[label], number))
    med = {label: tuple(statistics.median(s[i] for s in v) for i in range(6))
           for label, v in samples.items()}
    print(f"{name}: GPT {config.n_layer} layers, {config.n_head} heads, width {config.n_embd}, "
          f"context {config.block_size}, batch {batch}; AdamW + clipping, float32; adapter "
          f"{RT.adapter.info['device']}; median of {rounds} alternating rounds of {number} steps")
    for label, (wall, cpu, process, host, disp, subs) in med.items():
        print(f"  {label:20s} {wall * 1e3:8.2f} ms/step wall, {cpu * 1e3:6.2f} ms main-thread "
              f"CPU, {process * 1e3:7.2f} ms process CPU (main thread {cpu / process:4.0%}); "
              f"the call's host work {host * 1e3:5.2f} ms; {disp:.0f} dispatches, "
              f"{subs:.1f} submissions")
    eager_wall, eager_cpu, eager_process, eager_host = med["eager"][:4]
    for label in names[1:]:
        wall, cpu, process, host = med[label][:4]
        print(f"  {label} / eager: {eager_wall / wall:.2f}x steps/s wall (target >= 2x), "
              f"{eager_cpu / cpu:.2f}x main-thread CPU, {eager_process / process:.2f}x "
              f"process CPU, {eager_host / host:.2f}x the call's host work")
    device = eager_process - eager_cpu
    print(f"  the adapter's threads take {device * 1e3:.1f} ms of CPU per eager step "
          f"({device / eager_process:.0%} of the process's): with no Python at all a step "
          f"would cost at most {eager_process / device:.2f}x less CPU")
    for label, times in firsts.items():
        print(f"  {label}: first calls {', '.join(f'{t * 1e3:.0f}' for t in times)} ms "
              "(eager + AdamW state; records; first replay)")
    if kernels:
        kernel_times(steps["eager"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--small-only", action="store_true")
    parser.add_argument("--kernels", action="store_true")
    args = parser.parse_args()
    run_shape("small", SMALL, SMALL_BATCH, args.rounds, 5, args.kernels)
    if not args.small_only:
        run_shape("example", GPTConfig(VOCAB), BATCH, args.rounds, 2, args.kernels)


if __name__ == "__main__":
    main()
