"""Fusion(CpuBackend) against CpuBackend and NumPy: a 10-op elementwise chain on 4M float32
values, transcendental chains (GELU-tanh, sigmoid), and training steps under Autodiff (a GELU
MLP, the GPT example's model with AdamW and clipping, the digits CNN with Adam); one thread,
alternating, medians.

``python -m benchmarks.fusion [--repeats N] [--only chain,mlp,gpt,digits] [--pinned]
[--ceiling]``. Prints each median, the ratios, the first step's compile time and the
plan-cache hit rate over 100 steps.
Times are the process's CPU time (one thread), which other processes on a shared machine do
not inflate as they do wall-clock time.

Allocator state matters to the training steps: by default glibc returns freed buffers of a
few hundred KB to the OS and page-faults the next ones in, which costs a GPT step 24-28 ms on
either backend against 15-18 ms with ``--pinned`` (``benchmarks._timing``'s thresholds: the
arithmetic alone). After the chain section has freed its 16 MB arrays glibc's thresholds have
risen, so the full run sits between the two.

Runs of 28 Nov 2026 (21 repeats, one thread, the two-core machine shared with other jobs at a
load of 5-8; ratio to CpuBackend): chain 6.3-6.8x CpuBackend and 4.0-4.1x NumPy, with --pinned
8.3-9.0x and 5.9-6.9x; gelu-tanh 0.91-0.96x, sigmoid 0.99-1.05x, gelu-erf 0.94-0.97x; MLP
0.90-1.00x, GPT 0.98-1.01x, digits 0.97-1.03x (medians of the rounds' ratios, --pinned).
``--ceiling`` says why the steps barely move: CpuBackend runs attention, GELU, layer norm,
cross entropy and Adam as compiled kernels of its own and matmuls are BLAS. Of the GPT step
(18.2 ms of thread CPU time clocked), 12.4 ms is BLAS and those kernels, 3.1 ms autodiff and
optimizer Python, 1.6 ms fusable ops and 1.2 ms data movement: at no cost for all of the last
two, 1.17-1.18x (the digits step 1.12x, the MLP 1.16-1.17x); 1.1x on the GPT step needs 60% of
that time gone with nothing added, while what Fusion already removes (unwritten zeros: each
layer's padded q, k, v gradients written once) is offset by its Python frame per op (~0.4 us).
The CPU training-step targets are measured in ``benchmarks/compile_step.py`` (``bp.compile``
over ``Fusion``), which removes the Python per op as well.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from functools import partial

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

import burnpy.nn.functional as F  # noqa: E402
from benchmarks._op_clock import OpClock  # noqa: E402
from burnpy import Autodiff, Fusion, Tensor  # noqa: E402
from burnpy.backend.base import Backend  # noqa: E402
from burnpy.examples.digits import DigitsCNN  # noqa: E402
from burnpy.examples.gpt_model import GPT, GPTConfig, decay_groups  # noqa: E402
from burnpy.fusion.backend import UNWRITTEN_OPS  # noqa: E402
from burnpy.fusion.lazy import LAZY_OPS  # noqa: E402
from burnpy.ir.fused import ELEMENTWISE_COMPOSITES, FUSABLE  # noqa: E402
from burnpy.nn import Module  # noqa: E402
from burnpy.optim import Adam, AdamW, GradientClipping, Optimizer  # noqa: E402
from burnpy_cpu import CpuBackend  # noqa: E402

FUSED = Fusion(CpuBackend)


def chain(x: Tensor) -> Tensor:
    """Ten elementwise ops."""
    y = x * 1.5 + 0.5
    y = y * y - x
    y = y.abs() * 0.25 + x
    y = y.clamp(0.0, 2.0)
    return (y - 0.5) * x


def numpy_chain(x: np.ndarray) -> np.ndarray:
    """The same ten ops on NumPy."""
    y = x * np.float32(1.5) + np.float32(0.5)
    y = y * y - x
    y = np.abs(y) * np.float32(0.25) + x
    y = np.clip(y, np.float32(0.0), np.float32(2.0))
    return (y - np.float32(0.5)) * x


def to_host(fn: Callable[[Tensor], Tensor], x: Tensor) -> np.ndarray:
    """``fn(x)`` computed and read back (a lazy backend runs it here)."""
    return fn(x).to_numpy()


def timed_rounds(runs: dict[str, Callable[[], object]], repeats: int) -> dict[str, np.ndarray]:
    """Seconds of each run in each round, alternating them; the order rotates each round, so
    that no run always follows the same one (whichever runs next finds the caches and the
    allocator as the previous one left them)."""
    times: dict[str, list[float]] = {k: [] for k in runs}
    names = list(runs)
    for r in range(repeats):
        for name in names[r % len(names):] + names[:r % len(names)]:
            start = time.process_time()
            runs[name]()
            times[name].append(time.process_time() - start)
    return {k: np.array(v) for k, v in times.items()}


def medians(runs: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """Median seconds of each run (see ``timed_rounds``)."""
    return {k: float(np.median(v)) for k, v in timed_rounds(runs, repeats).items()}


def mlp_step(backend: type, w1: Tensor, w2: Tensor, x: Tensor, y: Tensor) -> float:
    """One GELU MLP step: forward, backward and both weights' gradients."""
    h = (x @ w1).gelu()
    loss = ((h @ w2 - y) * (h @ w2 - y)).mean()
    grads = loss.backward()
    for w in (w1, w2):
        g = w.grad(grads)
        assert g is not None
        g.to_numpy()
    return float(loss.item())


#: Transcendental chains: the CPU fuser leaves exp, tanh and the like to NumPy's SIMD loops.
TRANSCENDENTAL: dict[str, Callable[[Tensor], Tensor]] = {
    "gelu-tanh": lambda x: F.gelu(x * 1.5, approximate="tanh") + 1.0,
    "sigmoid": lambda x: (x * 2.0 - 1.0).sigmoid() * x,
    "gelu-erf": lambda x: F.gelu(x * 1.5) + 1.0,
}


def train_step(model: Module, optim: Optimizer, loss: Callable[[], Tensor]) -> float:
    """Forward (``loss``), backward and the optimizer's update; the loss as a number."""
    value = loss()
    optim.step(model, value.backward())
    return float(value.item())


Step = Callable[[], object]


def gpt_step(inner: type[Backend]) -> Step:
    """One training step of the GPT example's model (default config, batch 16 of 64 tokens,
    AdamW with weight decay on matrices and norm clipping, as ``burnpy.examples.gpt``)."""
    ad = Autodiff(inner)
    CpuBackend.seed(CpuBackend.default_device(), 0)
    model = GPT(GPTConfig(48), backend=ad)
    optim = AdamW(decay_groups(model, 0.1), lr=3e-3, betas=(0.9, 0.99),
                  grad_clipping=GradientClipping.norm(1.0))
    rng = np.random.default_rng(0)
    x, y = (Tensor.from_data(rng.integers(0, 48, (16, 64)), backend=ad) for _ in range(2))
    return lambda: train_step(model, optim, lambda: model.loss(x, y))


def digits_step(inner: type[Backend]) -> Step:
    """One training step of the digits example's CNN (batch 32 of 8x8 images, Adam)."""
    ad = Autodiff(inner)
    CpuBackend.seed(CpuBackend.default_device(), 0)
    model = DigitsCNN(backend=ad)
    optim = Adam(lr=1e-2)
    rng = np.random.default_rng(0)
    x = Tensor.from_data(rng.random((32, 1, 8, 8), dtype=np.float32), backend=ad)
    y = Tensor.from_data(rng.integers(0, 10, 32), backend=ad)
    return lambda: train_step(model, optim, lambda: F.cross_entropy(model(x), y))


def mlp(inner: type[Backend]) -> Step:
    """One GELU MLP step (see ``mlp_step``)."""
    rng = np.random.default_rng(1)
    arrays = [rng.normal(size=s).astype(np.float32) * 0.1
              for s in ((256, 512), (512, 64), (128, 256), (128, 64))]
    ad = Autodiff(inner)
    w1, w2, x, y = (Tensor.from_data(a, backend=ad) for a in arrays)
    w1, w2 = w1.require_grad(), w2.require_grad()
    return lambda: mlp_step(ad, w1, w2, x, y)


def compare_steps(name: str, make: Callable[[type[Backend]], Step], repeats: int) -> None:
    """First-step compile time, alternating medians, and the plan cache over 100 steps."""
    fused, plain = make(FUSED), make(CpuBackend)
    FUSED.clear_plans()
    FUSED.stats.reset()
    start = time.process_time()
    fused()
    print(f"{name}: first step under fusion (compiles) {time.process_time() - start:.3f} s, "
          f"{FUSED.stats.compiles} kernels compiled")
    rounds = timed_rounds({"fusion": fused, "cpu": plain}, repeats)
    print(f"{name} medians (s):", {k: round(float(np.median(v)), 5) for k, v in rounds.items()})
    q1, q2, q3 = np.percentile(rounds["cpu"] / rounds["fusion"], [25, 50, 75])
    print(f"{name}: fusion is {q2:.2f}x CpuBackend (median of the rounds' ratios; "
          f"quartiles {q1:.2f}-{q3:.2f})")
    FUSED.stats.reset()
    for _ in range(100):
        fused()
    s = FUSED.stats
    looked_up = s.cache_hits + s.compiles
    print(f"{name}: plan cache over 100 steps: {s.cache_hits}/{looked_up} hits "
          f"({s.cache_hits / max(looked_up, 1):.1%}), {s.kernels / 100:.0f} kernels, "
          f"{s.fallback_ops / 100:.0f} ops one by one, {s.eager_ops / 100:.0f} eager ops a step")


def fusion_share(op: str) -> str:
    """What Fusion can change of an op B runs in a plain step: a "fusable" op joins a fused
    kernel (``burnpy.ir``'s ``FUSABLE`` and ``ELEMENTWISE_COMPOSITES``), a "movement" op may
    stay a view or unwritten (``LAZY_OPS`` but matmul, ``UNWRITTEN_OPS``, cat); any other op is
    "kept": BLAS and B's own compiled kernels, which Fusion runs on B as plain runs them."""
    if op in FUSABLE or op in ELEMENTWISE_COMPOSITES:
        return "fusable"
    if (op in LAZY_OPS and op != "float_matmul") or op in UNWRITTEN_OPS or op == "float_cat":
        return "movement"
    return "kept"


def ceiling(name: str, make: Callable[[type[Backend]], Step], repeats: int) -> None:
    """Where the plain step's time goes (each of CpuBackend's ops timed, see ``OpClock``) and
    the most Fusion could gain on it: the step's time over its time without every fusable and
    movement op, as if fusion removed them at no cost of its own (it cannot: a fused kernel
    still reads its inputs and writes what is live, and recording costs a Python frame an op).
    The clock's own ~0.5 us an op counts in the ops' time, so the ceiling errs high. Times are
    the thread's CPU time, which other processes on a shared machine do not inflate."""
    step = make(CpuBackend)
    for _ in range(3):
        step()
    shares: dict[str, list[float]] = {"kept": [], "fusable": [], "movement": [], "total": []}
    by_op: dict[str, list[float]] = {}
    calls: dict[str, int] = {}
    for _ in range(repeats):
        with OpClock(CpuBackend, clock=time.thread_time) as clock:
            start = time.thread_time()
            step()
            shares["total"].append(time.thread_time() - start)
        for kind in ("kept", "fusable", "movement"):
            shares[kind].append(0.0)
        for op, t in clock.seconds.items():
            shares[fusion_share(op)][-1] += t
            by_op.setdefault(op, []).append(t)
            calls[op] = clock.calls[op]
    ms = {k: float(np.median(v)) * 1e3 for k, v in shares.items()}
    outside = ms["total"] - ms["kept"] - ms["fusable"] - ms["movement"]
    print(f"{name} ceiling: plain step {ms['total']:.2f} ms = kept {ms['kept']:.2f} "
          f"(BLAS and B's compiled kernels) + fusable {ms['fusable']:.2f} + movement "
          f"{ms['movement']:.2f} + outside the backend {outside:.2f} (autodiff, optimizer, "
          f"modules)")
    for kind in ("kept", "fusable", "movement"):
        ops = sorted((op for op in by_op if fusion_share(op) == kind),
                     key=lambda op: -float(np.median(by_op[op])))[:6]
        print(f"  {kind}: " + ", ".join(
            f"{op} {float(np.median(by_op[op])) * 1e3:.2f} ms x{calls[op]}" for op in ops))
    removable = ms["fusable"] + ms["movement"]
    print(f"{name} ceiling: {ms['total'] / (ms['total'] - removable):.2f}x if every fusable and "
          f"movement op cost nothing; 1.1x needs {ms['total'] * (1 - 1 / 1.1) / removable:.0%} "
          f"of their time gone, with nothing added")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--only", default="chain,mlp,gpt,digits",
                        help="comma-separated sections to run")
    parser.add_argument("--ceiling", action="store_true",
                        help="for each training step, where the plain step's time goes and the "
                             "most fusion could gain on it (see ``ceiling``)")
    parser.add_argument("--pinned", action="store_true",
                        help="keep freed buffers in the process (benchmarks._timing's glibc "
                             "thresholds): the steps' arithmetic without page faults")
    args = parser.parse_args()
    if args.pinned:
        from benchmarks._timing import pin_glibc_allocator
        pin_glibc_allocator()
    sections = set(args.only.split(","))
    if "chain" in sections:
        data = np.random.default_rng(0).random(1 << 22, dtype=np.float32)
        xs = {b: Tensor.from_data(data, backend=b) for b in (CpuBackend, FUSED)}
        start = time.process_time()
        chain(xs[FUSED]).to_numpy()
        print(f"chain: first fused run (compiles) {time.process_time() - start:.3f} s")
        m = medians({"fusion": lambda: chain(xs[FUSED]).to_numpy(),
                     "cpu": lambda: chain(xs[CpuBackend]).to_numpy(),
                     "numpy": lambda: numpy_chain(data)}, args.repeats)
        print("chain medians (s):", {k: round(v, 5) for k, v in m.items()})
        print(f"chain: fusion is {m['cpu'] / m['fusion']:.2f}x CpuBackend, "
              f"{m['numpy'] / m['fusion']:.2f}x NumPy")
        for name, fn in TRANSCENDENTAL.items():
            fn(xs[FUSED]).to_numpy()
            m = medians({"fusion": partial(to_host, fn, xs[FUSED]),
                         "cpu": partial(to_host, fn, xs[CpuBackend])}, args.repeats)
            print(f"{name} on 4M float32: fusion is {m['cpu'] / m['fusion']:.2f}x CpuBackend "
                  f"({m['fusion'] * 1e3:.1f} ms against {m['cpu'] * 1e3:.1f})")
    for name, make in (("mlp", mlp), ("gpt", gpt_step), ("digits", digits_step)):
        if name in sections:
            compare_steps(name, make, args.repeats)
            if args.ceiling:
                ceiling(name, make, args.repeats)


if __name__ == "__main__":
    main()
