"""Benchmark: a small training step compiled by ``bp.compile`` on CUDA, replayed as one CUDA
graph, against the same step eager and replayed op by op, and torch CUDA eager and torch's
whole-step CUDA graph (``torch.cuda.CUDAGraph``, the pattern of torch's CUDA-graph docs).

The step: an MLP 256-512-512-10 (ReLU), float32, batch 64, cross entropy against int labels,
backward and SGD with momentum at a constant rate; and burnpy's step with Adam too, eager and
as a graph (its step count changes every call: the graph reads the step's scalars from a
device table each launch fills, ``burnpy_cuda.graphs``). At this size each kernel is a few
microseconds, so
the step costs what the host pays to issue it: the figure a graph cuts. All candidates start
from the same weights on the same batch; their losses over the first steps are checked to
agree (burnpy's compiled step takes its graph from its fifth call). Steps are timed in
alternating rounds, the device drained before each timer is read; medians of wall time per
step, and of the host thread's CPU time per step (steadier on a loaded machine).
Run: ``.venv/bin/python benchmarks/cuda_compile_step.py``.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable

import numpy as np
import torch
from cuda_mlp_step import BurnpyMLP, Weights, init_weights, torch_mlp
from cuda_timing import fmt, record, require_gpu

import burnpy as bp
import burnpy.nn.functional as F
from burnpy import Tensor, optim
from burnpy_cuda import CudaBackend
from burnpy_cuda.graphs import ENV, GraphReplay

SIZES = (256, 512, 512, 10)
BATCH = 64
LR, MOMENTUM = 0.05, 0.9
ADAM_LR = 1e-3
NUMBER = 50  # steps per timed sample
ROUNDS = 9
CHECKED = 8  # steps whose losses are compared (the graph is taken from the fifth)

Step = Callable[[], object]


def burnpy_step(weights: Weights, x: np.ndarray, y: np.ndarray, compiled: bool,
                graphs: bool = True, adam: bool = False
                ) -> tuple[Callable[[], Tensor], Callable[[], str]]:
    """A step (SGD with momentum, or ``adam``) on ``Autodiff(CudaBackend)`` (eager) or
    compiled on ``Autodiff(Capture(CudaBackend))`` (as a CUDA graph, or op by op without
    ``graphs``), and a description of its replay runner."""
    backend = bp.Autodiff(bp.Capture(CudaBackend)) if compiled else bp.Autodiff(CudaBackend)
    model = BurnpyMLP(backend, SIZES)
    model.load_state_dict(weights)
    opt: optim.Optimizer = (optim.Adam(lr=ADAM_LR) if adam
                            else optim.SGD(lr=LR, momentum=MOMENTUM))
    bx, by = Tensor.from_data(x, backend=backend), Tensor.from_data(y, backend=backend)

    def step() -> Tensor:
        loss = F.cross_entropy(model(bx), by)
        opt.step(model, loss.backward())
        return loss

    if not compiled:
        return step, lambda: "eager"
    fast = bp.compile(step)
    before = os.environ.get(ENV)
    os.environ[ENV] = "1" if graphs else "0"
    try:  # the replay runner reads the switch when the graph is recorded: the first calls
        for _ in range(2):
            fast()
    finally:
        if before is None:
            del os.environ[ENV]
        else:
            os.environ[ENV] = before

    def runner() -> str:
        found = [e.run for group in fast._cache.values() for e in group]
        return "; ".join(repr(r) for r in found if isinstance(r, GraphReplay))

    return fast, runner


def torch_step(weights: Weights, x: np.ndarray, y: np.ndarray, graph: bool
               ) -> Callable[[], torch.Tensor]:
    """torch CUDA eager, or the whole step captured once into a ``torch.cuda.CUDAGraph``
    (static input copies in, the loss out), warmed up on a side stream first."""
    model = torch_mlp(weights, SIZES)
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    tx, ty = torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()

    def eager() -> torch.Tensor:
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(tx), ty)
        loss.backward()
        opt.step()
        return loss

    if not graph:
        return eager
    static_x, static_y = tx.clone(), ty.clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            eager()
    torch.cuda.current_stream().wait_stream(side)
    captured = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(captured):
        static_loss = torch.nn.functional.cross_entropy(model(static_x), static_y)
        static_loss.backward()
        opt.step()

    def replay() -> torch.Tensor:
        static_x.copy_(tx)
        static_y.copy_(ty)
        captured.replay()
        return static_loss

    return replay


def timed(candidates: dict[str, tuple[Step, Callable[[], None]]]
          ) -> tuple[dict[str, float], dict[str, float]]:
    """Median wall seconds and host-thread CPU seconds per step of each ``(step, sync)``, in
    alternating rounds whose order rotates; one untimed round first."""
    wall: dict[str, list[float]] = {name: [] for name in candidates}
    cpu: dict[str, list[float]] = {name: [] for name in candidates}
    names = list(candidates)
    for r in range(ROUNDS + 1):
        for name in names[r % len(names):] + names[:r % len(names)]:
            step, sync = candidates[name]
            sync()
            start, start_cpu = time.perf_counter(), time.thread_time()
            for _ in range(NUMBER):
                step()
            sync()
            if r:
                wall[name].append((time.perf_counter() - start) / NUMBER)
                cpu[name].append((time.thread_time() - start_cpu) / NUMBER)
    return ({n: statistics.median(s) for n, s in wall.items()},
            {n: statistics.median(s) for n, s in cpu.items()})


def main() -> None:
    require_gpu("cuda_compile_step")
    device = CudaBackend.default_device()
    rng = np.random.default_rng(0)
    weights = init_weights(rng, SIZES)
    x = rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
    y = rng.integers(0, SIZES[-1], BATCH)
    eager, _ = burnpy_step(weights, x, y, compiled=False)
    graph, graph_runner = burnpy_step(weights, x, y, compiled=True)
    op_by_op, op_runner = burnpy_step(weights, x, y, compiled=True, graphs=False)
    torch_eager = torch_step(weights, x, y, graph=False)
    # the compiled steps ran their first 2 calls (state made, recorded): the others catch up
    want = [eager().item() for _ in range(2)]
    torch_want = [torch_eager().item() for _ in range(2)]
    np.testing.assert_allclose(want, torch_want, rtol=1e-4)
    for _ in range(CHECKED):
        e, t, g, o = eager().item(), torch_eager().item(), graph().item(), op_by_op().item()
        np.testing.assert_allclose([g, o, e], [t, t, t], rtol=1e-4)
    torch_graph = torch_step(weights, x, y, graph=True)
    adam_eager, _ = burnpy_step(weights, x, y, compiled=False, adam=True)
    adam_graph, adam_runner = burnpy_step(weights, x, y, compiled=True, adam=True)
    np.testing.assert_allclose([adam_eager().item() for _ in range(2 + CHECKED)][2:],
                               [adam_graph().item() for _ in range(CHECKED)], rtol=1e-5)

    def burnpy_sync() -> None:
        CudaBackend.sync(device)

    wall, cpu = timed({
        "burnpy eager Autodiff(CudaBackend)": (eager, burnpy_sync),
        "burnpy bp.compile, op by op": (op_by_op, burnpy_sync),
        "burnpy bp.compile, CUDA graph": (graph, burnpy_sync),
        "torch CUDA eager": (torch_eager, torch.cuda.synchronize),
        "torch CUDA graph": (torch_graph, torch.cuda.synchronize),
        "burnpy eager, Adam": (adam_eager, burnpy_sync),
        "burnpy bp.compile, CUDA graph, Adam": (adam_graph, burnpy_sync),
    })
    print(f"MLP {'-'.join(map(str, SIZES))} ReLU, SGD momentum, float32, batch {BATCH} on "
          f"{torch.cuda.get_device_name()}; {NUMBER} steps per sample, median of {ROUNDS} "
          f"alternating samples; losses agree for {CHECKED} steps")
    print(f"  compiled, graph: {graph_runner()}")
    print(f"  compiled, op by op: {op_runner()}")
    print(f"  compiled with Adam, graph: {adam_runner()}")
    print(f"  {'':36s} {'wall/step':>11s} {'host CPU/step':>14s}")
    for name in wall:
        print(f"  {name:36s} {fmt(wall[name])} {fmt(cpu[name]):>14s}")
    ours = wall["burnpy bp.compile, CUDA graph"]
    ratios = {"graph vs burnpy eager": wall["burnpy eager Autodiff(CudaBackend)"] / ours,
              "graph vs op-by-op replay": wall["burnpy bp.compile, op by op"] / ours,
              "graph vs torch CUDA graph": ours / wall["torch CUDA graph"],
              "graph vs torch eager": ours / wall["torch CUDA eager"],
              "Adam graph vs Adam eager": wall["burnpy eager, Adam"]
              / wall["burnpy bp.compile, CUDA graph, Adam"]}
    for name, ratio in ratios.items():
        print(f"  {name}: {ratio:.2f}x")
    record("cuda_compile_step", batch=BATCH, seconds_per_step=wall,
           host_cpu_seconds_per_step=cpu, ratios=ratios, runner=graph_runner(),
           adam_runner=adam_runner(),
           target="graph faster than burnpy eager; within 2x of torch's CUDA graph")


if __name__ == "__main__":
    main()
