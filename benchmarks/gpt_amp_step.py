"""Benchmark: the GPT example's training step under CPU autocast (bfloat16, or float16 with
``--dtype float16``) against its float32 step, for burnpy and for torch (the issue's target:
burnpy's ratio below torch's, printed beside it from the same run, and ideally <= 1.1x).

The models, batches and optimizer are ``gpt_step.py``'s (its torch twin, the same weights).
One thread, the four steps alternating; medians. This CPU may lack 16-bit float arithmetic,
so autocast buys no speed here: the ratio measures what the casts and 16-bit kernels cost.
Run: ``.venv/bin/python benchmarks/gpt_amp_step.py``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import _timing
import torch
from gpt_step import VOCAB, BurnpyStep, TorchStep, batches, torch_twin

from burnpy import autocast
from burnpy.autodiff import Autodiff
from burnpy.examples.gpt_model import GPT, GPTConfig
from burnpy_cpu import CpuBackend


def _under_autocast(step: Callable[[], object], dtype: str,
                    torch_side: bool) -> Callable[[], object]:
    def run() -> object:
        if torch_side:
            with torch.autocast("cpu", getattr(torch, dtype)):
                return step()
        with autocast("cpu", dtype):
            return step()
    return run


def _thread_timed(step: Callable[[], object], samples: list[float]) -> Callable[[], object]:
    """``step`` appending each call's thread CPU time to ``samples``: steadier than wall time
    on a machine other work shares."""
    def run() -> object:
        start = time.thread_time()
        out = step()
        samples.append(time.thread_time() - start)
        return out
    return run


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--dtype", choices=("bfloat16", "float16"), default="bfloat16")
    args = p.parse_args()
    torch.set_num_threads(1)
    config = GPTConfig(VOCAB)
    data = batches(config, 8)
    models = [GPT(config, backend=Autodiff(CpuBackend)) for _ in range(2)]
    ours32, ours16 = BurnpyStep(models[0], data), BurnpyStep(models[1], data)
    theirs32, theirs16 = (TorchStep(torch_twin(m), data) for m in models)
    half = f"autocast {args.dtype}"
    steps = {"burnpy float32": ours32.step,
             f"burnpy {half}": _under_autocast(ours16.step, args.dtype, False),
             "torch float32": theirs32.step,
             f"torch {half}": _under_autocast(theirs16.step, args.dtype, True)}
    samples: dict[str, list[float]] = {name: [] for name in steps}
    med = _timing.alternate({name: _thread_timed(fn, samples[name]) for name, fn in steps.items()},
                            1, args.rounds)
    cpu = {name: statistics.median(s[1:]) for name, s in samples.items()}  # s[0]: the warm-up
    print(f"GPT {config.n_layer} layers, width {config.n_embd}, context {config.block_size}; "
          f"one thread, AdamW + clipping; median of {args.rounds} alternating steps")
    for name, s in med.items():
        print(f"  {name:24s} {s * 1e3:8.2f} ms/step  (thread CPU {cpu[name] * 1e3:8.2f} ms)")
    for label, t in (("wall", med), ("thread CPU", cpu)):
        ours = t[f"burnpy {half}"] / t["burnpy float32"]
        theirs = t[f"torch {half}"] / t["torch float32"]
        print(f"  {half} / float32, {label}: burnpy {ours:.2f}x, torch {theirs:.2f}x (target: "
              f"below torch's, ideally <= 1.1x)")


if __name__ == "__main__":
    main()
