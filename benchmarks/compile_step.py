"""Benchmark: ``bp.compile`` on the GPT example's training step and on a 50-op chain.

1. The training step of ``benchmarks/gpt_step.py`` (forward, mean cross entropy, backward,
   gradient-norm clipping, AdamW with decay on matrices) five ways: burnpy eager on
   ``Autodiff(CpuBackend)`` and on ``Autodiff(Fusion(CpuBackend))``, the same step compiled
   (the model on ``Autodiff(Capture(CpuBackend))``, ``bp.compile`` replaying its recorded
   graph op by op, and on ``Autodiff(Capture(Fusion(CpuBackend)))``, whose replay runs each
   elementwise run as one fused kernel) and torch eager on an equivalent model with the same
   weights. All agree on the first losses (bitwise, or within 1e-6 where fused); the first two
   calls' times (the first creates AdamW's state, the second records) are the compile cost.
2. Chains of 50 elementwise ops on a 64-value tensor, eager on ``CpuBackend`` against compiled
   on ``Capture(CpuBackend)`` (op by op) and on ``Capture(Fusion(CpuBackend))`` (one kernel):
   the per-op cost of a replay. The issue's chain has 20 transcendental ops (tanh, sin), which
   the fused kernel computes with libm one element at a time; a chain of arithmetic and sqrt
   shows the fused replay's dispatch cost alone.

float32, one thread, candidates alternating in the same process, medians; quotes ratios.
Run: ``.venv/bin/python benchmarks/compile_step.py [--large] [--rounds N]``.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
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
    TorchStep,
    batches,
    torch_twin,
)

import burnpy as bp  # noqa: E402
from burnpy import Tensor  # noqa: E402
from burnpy.examples.gpt_model import GPT, GPTConfig, decay_groups  # noqa: E402
from burnpy.fusion import Fusion  # noqa: E402
from burnpy.optim import AdamW, GradientClipping  # noqa: E402
from burnpy_cpu import CpuBackend  # noqa: E402

CHAIN = 50


class Step:
    """The GPT training step on ``backend``; compiled with ``bp.compile`` when asked. Each
    call uploads the next batch (as a user's loop does) and runs the step on it."""

    def __init__(self, model: GPT, data: list[tuple[np.ndarray, np.ndarray]], backend: Any,
                 compiled: bool) -> None:
        self.data, self.backend, self.i = data, backend, 0
        optim = AdamW(decay_groups(model, WEIGHT_DECAY), lr=LR, betas=(0.9, 0.99),
                      grad_clipping=GradientClipping.norm(CLIP))

        def train(x: Tensor, y: Tensor) -> Tensor:
            loss = model.loss(x, y)
            optim.step(model, loss.backward())
            return loss

        self.train: Callable[[Tensor, Tensor], Tensor] = bp.compile(train) if compiled else train

    def step(self) -> Tensor:
        x, y = self.data[self.i % len(self.data)]
        self.i += 1
        return self.train(Tensor.from_data(x, backend=self.backend),
                          Tensor.from_data(y, backend=self.backend))

    def __call__(self) -> float:
        return float(self.step().item())


def _twin(model: GPT, config: GPTConfig, backend: Any) -> GPT:
    twin = GPT(config, backend=backend)
    twin.load_state_dict({k: Tensor.from_data(v.to_numpy(), backend=backend)
                          for k, v in model.state_dict().items()})
    return twin


def gpt(large: bool, rounds: int) -> None:
    config, batch = (LARGE, LARGE_BATCH) if large else (GPTConfig(VOCAB), BATCH)
    eager_backend = bp.Autodiff(CpuBackend)
    model = GPT(config, backend=eager_backend)
    data = batches(config, 8, batch=batch)
    eager = Step(model, data, eager_backend, compiled=False)
    others: dict[str, Step] = {}
    for name, backend, compiled_step in (
            ("burnpy compiled", bp.Autodiff(bp.Capture(CpuBackend)), True),
            ("compiled+fusion", bp.Autodiff(bp.Capture(Fusion(CpuBackend))), True),
            ("eager+fusion", bp.Autodiff(Fusion(CpuBackend)), False)):
        others[name] = Step(_twin(model, config, backend), data, backend, compiled_step)
    compiled = others["burnpy compiled"]
    theirs = TorchStep(torch_twin(model), data)
    warm = []
    for _ in range(2):
        start = time.perf_counter()
        loss = compiled()
        warm.append(time.perf_counter() - start)
        reference = eager()
        np.testing.assert_allclose(loss, reference, rtol=1e-6, err_msg="compiled diverges")
        np.testing.assert_allclose(loss, theirs(), rtol=1e-3, err_msg="torch diverges")
        for name in ("compiled+fusion", "eager+fusion"):
            np.testing.assert_allclose(others[name](), reference, rtol=1e-6,
                                       err_msg=f"{name} diverges")
    for _ in range(2):
        reference = eager()
        for name, other in others.items():
            np.testing.assert_allclose(other(), reference, rtol=1e-6, err_msg=f"{name} diverges")
        theirs()
    steps: dict[str, Callable[[], object]] = {**others, "burnpy eager": eager,
                                              "torch eager": theirs}
    med = _timing.alternate(steps, 1, rounds)
    print(f"GPT {config.n_layer} layers, {config.n_head} heads, width {config.n_embd}, "
          f"context {config.block_size}, batch {batch}; AdamW + clipping, float32, one thread; "
          f"median of {rounds} alternating steps")
    for name, seconds in med.items():
        print(f"  {name:16s} {seconds * 1e3:8.2f} ms/step")
    for name in ("burnpy compiled", "compiled+fusion"):
        print(f"  {name} / burnpy eager steps/s: "
              f"{med['burnpy eager'] / med[name]:.2f}x (target >= 1.3x)")
        print(f"  {name} / torch eager steps/s:  "
              f"{med['torch eager'] / med[name]:.2f}x (target >= 1.3x)")
    print(f"  compiled+fusion / eager+fusion:  "
          f"{med['eager+fusion'] / med['compiled+fusion']:.2f}x")
    print(f"  burnpy eager / torch eager:      {med['torch eager'] / med['burnpy eager']:.2f}x")
    print(f"  first call (eager, creates AdamW's state) {warm[0] * 1e3:.0f} ms; second "
          f"(records and generates the replay) {warm[1] * 1e3:.0f} ms; "
          f"{compiled.train.cache_info()}")  # type: ignore[attr-defined]


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
    med = _timing.alternate({"eager": lambda: fn(x_eager),
                             "compiled": lambda: compiled(x_capture),
                             "compiled+fusion": lambda: fused(x_fusion)}, 200, rounds)
    print(f"{CHAIN}-op elementwise chain ({fn.__name__}) on 64 float32 values, median of "
          f"{rounds} rounds (guards and binding included)")
    for name, s in med.items():
        print(f"  {name:16s} {_timing.fmt(s)} per call, {s / CHAIN * 1e6:.2f} us/op, "
              f"{med['eager'] / s:.2f}x eager")
    print("  target: >= 5x eager and < 1 us/op")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--large", action="store_true",
                   help="3 blocks, 6 heads, width 192, context 128, batch 8")
    args = p.parse_args()
    torch.set_num_threads(1)
    chain(transcendental, args.rounds)
    chain(arithmetic, args.rounds)
    gpt(args.large, args.rounds)


if __name__ == "__main__":
    main()
