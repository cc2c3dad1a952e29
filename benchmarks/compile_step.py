"""Benchmark: ``bp.compile`` on the GPT example's training step and on a 50-op chain.

1. The training step of ``benchmarks/gpt_step.py`` (forward, mean cross entropy, backward,
   gradient-norm clipping, AdamW with decay on matrices) three ways: burnpy eager on
   ``Autodiff(CpuBackend)``, the same step compiled (the model on
   ``Autodiff(Capture(CpuBackend))``, ``bp.compile`` replaying its recorded graph) and torch
   eager on an equivalent model with the same weights. The three agree on the first losses;
   the first two calls' times (the first creates AdamW's state, the second records) are the
   compile cost.
2. A chain of 50 elementwise ops on a 64-value tensor, eager on ``CpuBackend`` against
   compiled on ``Capture(CpuBackend)``: the per-op cost of a replay.

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


def gpt(large: bool, rounds: int) -> None:
    config, batch = (LARGE, LARGE_BATCH) if large else (GPTConfig(VOCAB), BATCH)
    eager_backend = bp.Autodiff(CpuBackend)
    capture_backend = bp.Autodiff(bp.Capture(CpuBackend))
    model = GPT(config, backend=eager_backend)
    twin = GPT(config, backend=capture_backend)
    twin.load_state_dict({k: Tensor.from_data(v.to_numpy(), backend=capture_backend)
                          for k, v in model.state_dict().items()})
    data = batches(config, 8, batch=batch)
    eager = Step(model, data, eager_backend, compiled=False)
    compiled = Step(twin, data, capture_backend, compiled=True)
    theirs = TorchStep(torch_twin(model), data)
    warm = []
    for _ in range(2):
        start = time.perf_counter()
        loss = compiled()
        warm.append(time.perf_counter() - start)
        np.testing.assert_allclose(loss, eager(), rtol=1e-6, err_msg="compiled diverges")
        np.testing.assert_allclose(loss, theirs(), rtol=1e-3, err_msg="torch diverges")
    for _ in range(2):
        np.testing.assert_allclose(compiled(), eager(), rtol=1e-6, err_msg="replay diverges")
        theirs()
    steps = {"burnpy compiled": compiled, "burnpy eager": eager, "torch eager": theirs}
    med = _timing.alternate(steps, 1, rounds)
    print(f"GPT {config.n_layer} layers, {config.n_head} heads, width {config.n_embd}, "
          f"context {config.block_size}, batch {batch}; AdamW + clipping, float32, one thread; "
          f"median of {rounds} alternating steps")
    for name, s in med.items():
        print(f"  {name:16s} {s * 1e3:8.2f} ms/step")
    print(f"  compiled / burnpy eager steps/s: {med['burnpy eager'] / med['burnpy compiled']:.2f}x"
          f" (target >= 1.3x)")
    print(f"  compiled / torch eager steps/s:  {med['torch eager'] / med['burnpy compiled']:.2f}x"
          f" (target >= 1.3x)")
    print(f"  burnpy eager / torch eager:      {med['torch eager'] / med['burnpy eager']:.2f}x")
    print(f"  first call (eager, creates AdamW's state) {warm[0] * 1e3:.0f} ms; second "
          f"(records and generates the replay) {warm[1] * 1e3:.0f} ms; "
          f"{compiled.train.cache_info()}")  # type: ignore[attr-defined]


def chain(rounds: int) -> None:
    def fn(x: Tensor) -> Tensor:
        for i in range(CHAIN // 5):
            x = (x * 1.001 + 0.01).tanh().sin() - float(i) * 1e-3
        return x

    data = np.random.default_rng(0).standard_normal(64).astype(np.float32)
    x_eager = Tensor.from_numpy(data, backend=CpuBackend)
    x_capture = Tensor.from_numpy(data, backend=bp.Capture(CpuBackend))
    compiled = bp.compile(fn)
    assert np.array_equal(compiled(x_capture).to_numpy(), fn(x_eager).to_numpy())
    assert np.array_equal(compiled(x_capture).to_numpy(), fn(x_eager).to_numpy())
    med = _timing.alternate({"eager": lambda: fn(x_eager),
                             "compiled": lambda: compiled(x_capture)}, 200, rounds)
    print(f"{CHAIN}-op elementwise chain on 64 float32 values, median of {rounds} rounds")
    print(f"  eager    {_timing.fmt(med['eager'])} per call, "
          f"{med['eager'] / CHAIN * 1e6:.2f} us/op")
    print(f"  compiled {_timing.fmt(med['compiled'])} per call, "
          f"{med['compiled'] / CHAIN * 1e6:.2f} us/op (guards and binding included)")
    print(f"  compiled / eager: {med['eager'] / med['compiled']:.2f}x (target >= 5x, "
          "< 1 us/op)")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--large", action="store_true",
                   help="3 blocks, 6 heads, width 192, context 128, batch 8")
    args = p.parse_args()
    torch.set_num_threads(1)
    chain(args.rounds)
    gpt(args.large, args.rounds)


if __name__ == "__main__":
    main()
