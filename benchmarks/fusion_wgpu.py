"""Fusion on WebGPU: a GELU MLP training step and the GPT example's step under
``Autodiff(Fusion(WgpuBackend))`` against ``Autodiff(WgpuBackend)``.

Counts the WebGPU dispatches of one step (the runtime's counter) and times whole steps, each
until the device has finished, alternating the two backends in the same process: medians, and
the median of each round's paired ratio with its quartiles.
Targets (issue 18): the MLP step with >= 3x fewer dispatches and >= 2x faster; the GPT step
faster with Fusion than without. Also the first step's compile time and the plan-cache hit
rate over the timed steps. ``--list`` prints every dispatch of one MLP step, unfused and fused
(kernel and shape), to see what still costs a dispatch.
Run: ``.venv/bin/python benchmarks/fusion_wgpu.py [--quick] [--list]``

Measured (Mesa 22.3 lavapipe on llvmpipe, 2 cores, no other work on the machine, the median
paired ratio of each of four runs): the MLP step 82 -> 22 dispatches, 2.18x, 2.34x, 2.34x
and 2.29x faster (fused 5.2-5.7 ms: about 2.7 ms of Python recording and flushing, the rest
device time, the dispatches' fixed cost of ~30 us each on lavapipe and one readback); before
the recorder lost its per-call comprehensions, 1.86-2.00x over four runs. The MSE/SGD MLP
step 1.40-1.49x; the GPT step 461 -> 193 dispatches, 1.41-1.56x.
"""

from __future__ import annotations

# isort: off
from _timing import fmt, per_call  # first: it pins BLAS to one thread before NumPy loads

# isort: on
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from burnpy import Tensor, nn, optim
from burnpy.autodiff import Autodiff
from burnpy.backend.base import Backend
from burnpy.examples.gpt_model import GPT, GPTConfig
from burnpy.fusion import Fusion
from burnpy.nn import functional as fn
from burnpy_wgpu import WgpuBackend, list_adapters
from burnpy_wgpu.runtime import runtime_for

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
QUICK = "--quick" in sys.argv
RT = runtime_for(WgpuBackend.default_device())
Step = Callable[[], object]


class MLP(nn.Module):
    """Three linear layers with GELU between: the elementwise work fusion takes."""

    def __init__(self, backend: type[Backend], width: int) -> None:
        super().__init__()
        self.l1 = nn.Linear(64, width, backend=backend)
        self.l2 = nn.Linear(width, width, backend=backend)
        self.l3 = nn.Linear(width, 10, backend=backend)

    def forward(self, x: Tensor) -> Tensor:
        return self.l3(fn.gelu(self.l2(fn.gelu(self.l1(x)))))


def mlp_step(backend: type[Backend]) -> Step:
    """One training step (forward, cross entropy, backward, Adam) of a GELU MLP."""
    rng = np.random.default_rng(0)
    model = MLP(backend, 128 if QUICK else 256)
    opt = optim.Adam(lr=1e-3)
    x = Tensor.from_data(rng.standard_normal((64, 64)).astype(np.float32), backend=backend)
    y = Tensor.from_data(rng.integers(0, 10, 64).astype(np.int32), backend=backend)

    def step() -> object:
        loss = fn.cross_entropy(model(x), y)
        opt.step(model, loss.backward(), 1e-3)
        return loss.item()
    return step


def mlp_sgd_step(backend: type[Backend]) -> Step:
    """The same MLP with a mean squared error written in tensor ops and plain SGD."""
    rng = np.random.default_rng(0)
    model = MLP(backend, 128 if QUICK else 256)
    x = Tensor.from_data(rng.standard_normal((64, 64)).astype(np.float32), backend=backend)
    y = Tensor.from_data(rng.standard_normal((64, 10)).astype(np.float32), backend=backend)
    opt = optim.SGD(lr=1e-3)

    def step() -> object:
        diff = model(x) - y
        loss = (diff * diff).mean()
        opt.step(model, loss.backward(), 1e-3)
        return loss.item()
    return step


def gpt_step(backend: type[Backend]) -> Step:
    """One training step of the GPT example's model (small config), AdamW."""
    rng = np.random.default_rng(0)
    config = GPTConfig(vocab_size=65, block_size=32, n_layer=2, n_head=4, n_embd=64)
    model = GPT(config, backend=backend)
    opt = optim.AdamW(lr=1e-3)
    idx = rng.integers(0, 65, (8, 32)).astype(np.int32)
    x = Tensor.from_data(idx, backend=backend)
    t = Tensor.from_data(np.roll(idx, -1, axis=1), backend=backend)

    def step() -> object:
        loss = model.loss(x, t)
        opt.step(model, loss.backward(), 1e-3)
        return loss.item()
    return step


def dispatches(step: Step) -> int:
    """WebGPU dispatches of one call of ``step`` (after a warm-up call)."""
    step()
    before = RT.stats["dispatches"]
    step()
    return RT.stats["dispatches"] - before


def _describe(key: object) -> str:
    """A dispatch's kernel key, short: a fused group as its ops and shape."""
    if isinstance(key, tuple) and key and key[0] == "fused":
        group = key[2]
        red = f" | {group.reduction.name}" if group.reduction is not None else ""
        return f"fused {','.join(op.name for op in group.ops)}{red} over {list(group.shape)}"
    if isinstance(key, tuple) and key and key[0] == "fused_batch":
        return "fused batch: " + "; ".join(f"{len(g.ops)} ops over {list(g.shape)}"
                                           for g, _ in key[1])
    if isinstance(key, tuple) and key and str(key[0]).endswith("_epilogue"):
        group = key[-1][0]
        return f"matmul + epilogue {','.join(op.name for op in group.ops)} over {list(group.shape)}"
    return str(key)[:90]


def list_dispatches(make: Callable[[type[Backend]], Step]) -> None:
    """Print every dispatch of one step (after two warm-up steps), unfused then fused."""
    original = RT.dispatch
    seen: list[str] = []

    def record(kernel: Any, *args: Any) -> None:
        seen.append(_describe(kernel.key))
        original(kernel, *args)

    for backend in (Autodiff(WgpuBackend), Autodiff(Fusion(WgpuBackend))):
        step = make(backend)
        step()
        step()
        seen.clear()
        RT.dispatch = record  # type: ignore[method-assign]
        try:
            step()
        finally:
            RT.dispatch = original  # type: ignore[method-assign]
        print(f"{backend.name()}: {len(seen)} dispatches")
        for line in seen:
            print("  ", line)


def paired(plain: Step, fused: Step, number: int, rounds: int
           ) -> tuple[float, float, float, float, float]:
    """Alternating rounds (the order rotating): each round times ``number`` steps of each
    and gives one ratio, so a busy spell of the shared machine moves both sides of a ratio.
    Returns the median step times, the median ratio and its quartiles."""
    per_call(plain, max(1, number // 2))
    per_call(fused, max(1, number // 2))
    times: dict[str, list[float]] = {"plain": [], "fused": []}
    ratios = []
    for r in range(rounds):
        order = [("plain", plain), ("fused", fused)]
        for name, step in order[r % 2:] + order[:r % 2]:
            times[name].append(per_call(step, number))
        ratios.append(times["plain"][-1] / times["fused"][-1])
    q1, median, q3 = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else ratios * 3
    return (statistics.median(times["plain"]), statistics.median(times["fused"]), median, q1,
            q3)


def compare(label: str, make: Callable[[type[Backend]], Step], number: int,
            rounds: int) -> None:
    fused_backend = Fusion(WgpuBackend)
    fused_backend.clear_plans()
    fused_backend.stats.reset()
    plain, fused = make(Autodiff(WgpuBackend)), make(Autodiff(fused_backend))
    start = time.perf_counter()
    fused()
    first = time.perf_counter() - start
    compiles = fused_backend.stats.compiles
    plain()
    n_plain, n_fused = dispatches(plain), dispatches(fused)
    fused_backend.stats.reset()
    t_plain, t_fused, ratio, q1, q3 = paired(plain, fused, number, rounds)
    st = fused_backend.stats
    hit_rate = st.cache_hits / max(st.cache_hits + st.compiles, 1)
    print(f"{label}: dispatches/step {n_plain} -> {n_fused} ({n_plain / n_fused:.1f}x fewer); "
          f"step {fmt(t_plain)} -> {fmt(t_fused)} ({ratio:.2f}x faster, rounds' quartiles "
          f"{q1:.2f}-{q3:.2f})")
    print(f"  first fused step {first:.2f} s ({compiles} groups compiled); plan-cache hit rate "
          f"over {st.cache_hits + st.compiles} timed groups: {hit_rate:.1%}, "
          f"{st.compiles} compiled after the first step")


def main() -> None:
    info = list_adapters()[0]
    print(f"adapter: {info.name} ({info.backend_type}, {info.adapter_type})")
    if "--list" in sys.argv:
        list_dispatches(mlp_step)
        return
    compare("GELU MLP step (cross entropy, Adam)", mlp_step, 3 if QUICK else 5,
            4 if QUICK else 15)
    compare("GELU MLP step (MSE in tensor ops, SGD)", mlp_sgd_step, 3 if QUICK else 5,
            4 if QUICK else 15)
    compare("GPT step", gpt_step, 2, 4 if QUICK else 11)


if __name__ == "__main__":
    main()
