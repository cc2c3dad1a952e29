"""Benchmark: GPT generation tokens/s, float32 weights versus int8 weight-only.

The GPT example's model (``burnpy.examples.gpt_model``) with random weights on CpuBackend,
greedy decoding through its KV cache (``burnpy.examples.gpt.generate``): once as built
(float32), once after ``Module.quantize_weights(QuantScheme.int8())`` (int8 per-tensor
weights, float activations: each Linear runs ``q_linear``). Two shapes: the example's
default and a wider one where the weights, not Python, dominate a token. The two models
alternate run by run (the order rotating); medians; one thread. Prints tokens/s and the
int8 / float32 ratio (target >= 1.0) as the median of each round's paired ratio with its
quartiles (a round's two runs share the machine's state, so a busy spell on a shared machine
moves both), and how many greedy tokens agree.
Run: ``.venv/bin/python benchmarks/quant_generate.py``.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from burnpy.examples.gpt import generate  # noqa: E402
from burnpy.examples.gpt_model import GPT, GPTConfig  # noqa: E402
from burnpy.quantization import QuantScheme  # noqa: E402
from burnpy_cpu import CpuBackend  # noqa: E402

SHAPES = {
    "example default (2 layers, 64 wide)": GPTConfig(vocab_size=65),
    "wide (4 layers, 512 wide)": GPTConfig(vocab_size=65, block_size=128, n_layer=4, n_head=8,
                                           n_embd=512),
}


def _models(config: GPTConfig) -> tuple[GPT, GPT]:
    """The float32 model and an int8 weight-only copy with the same weights."""
    CpuBackend.seed(CpuBackend.default_device(), 0)
    dense = GPT(config, backend=CpuBackend)
    quant = GPT(config, backend=CpuBackend)
    quant.load_state_dict(dense.state_dict())
    quant.quantize_weights(QuantScheme.int8())
    return dense, quant


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=48, help="new tokens per run")
    parser.add_argument("--rounds", type=int, default=15, help="timed runs per model")
    args = parser.parse_args()
    prompt = [1, 2, 3, 4, 5, 6, 7, 8]
    print(f"GPT greedy generation, {len(prompt)}-token prompt + {args.tokens} new tokens, "
          f"KV cache, 1 thread, median of {args.rounds} runs")
    for label, config in SHAPES.items():
        dense, quant = _models(config)
        runs = {"float32": dense, "int8 weight-only": quant}
        outputs = {name: generate(m, prompt, args.tokens, temperature=0.0)
                   for name, m in runs.items()}
        times: dict[str, list[float]] = {name: [] for name in runs}
        names = list(runs)
        for r in range(args.rounds):
            for name in names[r % 2:] + names[:r % 2]:
                start = time.perf_counter()
                generate(runs[name], prompt, args.tokens, temperature=0.0)
                times[name].append(time.perf_counter() - start)
        rate = {name: args.tokens / statistics.median(t) for name, t in times.items()}
        paired = [f / q for f, q in zip(times["float32"], times["int8 weight-only"],
                                        strict=True)]
        low, mid, high = statistics.quantiles(paired, n=4) if len(paired) > 1 else paired * 3
        same = int(np.sum(np.array(outputs["float32"]) == np.array(outputs["int8 weight-only"])))
        print(f"  {label}:")
        for name, tps in rate.items():
            print(f"    {name:17s} {tps:9.1f} tokens/s")
        print(f"    int8 / float32: {mid:.2f}x (quartiles {low:.2f}-{high:.2f}; target >= 1.0); "
              f"greedy tokens equal: {same}/{len(outputs['float32'])}")


if __name__ == "__main__":
    main()
