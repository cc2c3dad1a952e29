"""Benchmark: the GPT example's training step under bfloat16 autocast against its float32 step,
for burnpy and for torch (the issue's target on the CPU: burnpy's autocast step costs at most
1.3x its float32 step; torch's ratio is printed beside it, from the same run).

The models, batches and optimizer are ``gpt_step.py``'s (its torch twin, the same weights).
One thread, the four steps alternating; medians. This CPU may lack bfloat16 instructions, so
autocast buys no speed here: the ratio measures what the casts cost.
Run: ``.venv/bin/python benchmarks/gpt_amp_step.py``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import _timing
import torch
from gpt_step import VOCAB, BurnpyStep, TorchStep, batches, torch_twin

from burnpy import autocast
from burnpy.autodiff import Autodiff
from burnpy.examples.gpt_model import GPT, GPTConfig
from burnpy_cpu import CpuBackend


def _under_autocast(step: Callable[[], object], torch_side: bool) -> Callable[[], object]:
    def run() -> object:
        if torch_side:
            with torch.autocast("cpu", torch.bfloat16):
                return step()
        with autocast("cpu"):
            return step()
    return run


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--rounds", type=int, default=15)
    args = p.parse_args()
    torch.set_num_threads(1)
    config = GPTConfig(VOCAB)
    data = batches(config, 8)
    models = [GPT(config, backend=Autodiff(CpuBackend)) for _ in range(2)]
    ours32, ours16 = BurnpyStep(models[0], data), BurnpyStep(models[1], data)
    theirs32, theirs16 = (TorchStep(torch_twin(m), data) for m in models)
    steps = {"burnpy float32": ours32.step,
             "burnpy autocast bf16": _under_autocast(ours16.step, False),
             "torch float32": theirs32.step,
             "torch autocast bf16": _under_autocast(theirs16.step, True)}
    med = _timing.alternate(steps, 1, args.rounds)
    print(f"GPT {config.n_layer} layers, width {config.n_embd}, context {config.block_size}; "
          f"one thread, AdamW + clipping; median of {args.rounds} alternating steps")
    for name, s in med.items():
        print(f"  {name:24s} {s * 1e3:8.2f} ms/step")
    print(f"  burnpy autocast / float32: {med['burnpy autocast bf16'] / med['burnpy float32']:.2f}x"
          f" (target <= 1.3x); torch: {med['torch autocast bf16'] / med['torch float32']:.2f}x")


if __name__ == "__main__":
    main()
