"""Benchmark: GPT-2 124M greedy generation tokens/s, float32 versus weight-only int8 and int4.

``burnpy.models.GPT2LMHeadModel`` at GPT-2 small's configuration (768 wide, 12 layers, 12
heads, 50257 tokens) with random weights built in memory, on CpuBackend, batch 1, through its
KV cache (``generate``): once as built (float32), once after ``quantize(model,
QuantScheme.int8())`` (per-tensor int8) and once after ``quantize(model, QuantScheme.int4(32))``
(int4 in blocks of 32 inputs), every linear layer and the LM head quantized, activations float.
The models alternate run by run (the order rotating); medians; one thread. Prints tokens/s,
each quantized model's ratio to float32 as the median of each round's paired ratio (a round's
runs share the machine's state) with its range, and the bytes of each model's linear weights.
Target: int8 >= 1.5x float32 (it reads 4x fewer weight bytes a token).
Run: ``.venv/bin/python benchmarks/hf_quant_generate.py [--tokens 128] [--rounds 5]``.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from burnpy import Tensor  # noqa: E402
from burnpy.models.gpt2 import GPT2Config, GPT2LMHeadModel  # noqa: E402
from burnpy.models.quantize import QuantizedLinear, quantize  # noqa: E402
from burnpy.quantization import QuantScheme  # noqa: E402
from burnpy_cpu import CpuBackend  # noqa: E402

SCHEMES = {"int8 weight-only": QuantScheme.int8(), "int4 weight-only": QuantScheme.int4(32)}


def _linear_bytes(model: GPT2LMHeadModel) -> int:
    """Bytes of the weights the decoding step's matrix products read."""
    total = 0
    for _, module in model.named_modules():
        if isinstance(module, QuantizedLinear):
            total += module.weight.into_data().nbytes
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=128, help="new tokens per run")
    parser.add_argument("--rounds", type=int, default=5, help="timed runs per model")
    parser.add_argument("--layers", type=int, default=12, help="transformer blocks (12: 124M)")
    args = parser.parse_args()
    config = GPT2Config(n_embd=768, n_layer=args.layers, n_head=12, vocab_size=50257,
                        n_positions=1024)
    CpuBackend.seed(CpuBackend.default_device(), 0)
    dense = GPT2LMHeadModel(config, backend=CpuBackend).eval()
    state = dense.state_dict()
    runs: dict[str, GPT2LMHeadModel] = {"float32": dense}
    for name, scheme in SCHEMES.items():
        model = GPT2LMHeadModel(config, backend=CpuBackend).eval()
        model.load_state_dict(state)
        runs[name] = quantize(model, scheme)
    names = list(runs)
    float_bytes = 4 * sum(int(np.prod(m.weight.shape)) for _, m in runs[names[1]].named_modules()
                          if isinstance(m, QuantizedLinear))
    prompt = Tensor.from_data(np.array([[464, 2068, 7586, 21831, 18045, 625, 262, 16931]]))
    print(f"GPT-2 {config.n_layer} layers x {config.n_embd}, vocab {config.vocab_size}: greedy "
          f"generation, {prompt.shape[1]}-token prompt + {args.tokens} new tokens, batch 1, KV "
          f"cache, 1 thread, median of {args.rounds} runs")
    outputs = {name: m.generate(prompt, max_new_tokens=args.tokens).to_numpy()
               for name, m in runs.items()}  # also compiles the kernels
    times: dict[str, list[float]] = {name: [] for name in runs}
    for r in range(args.rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            start = time.perf_counter()
            runs[name].generate(prompt, max_new_tokens=args.tokens)
            times[name].append(time.perf_counter() - start)
    for name, t in times.items():
        weight_mb = (float_bytes if name == "float32" else _linear_bytes(runs[name])) / 1e6
        line = f"  {name:17s} {args.tokens / statistics.median(t):8.2f} tokens/s, linear " \
               f"weights {weight_mb:7.1f} MB"
        if name != "float32":
            paired = [f / q for f, q in zip(times["float32"], t, strict=True)]
            same = int(np.sum(outputs[name] == outputs["float32"]))
            line += (f", {statistics.median(paired):.2f}x float32 (range {min(paired):.2f}-"
                     f"{max(paired):.2f}), greedy tokens equal {same}/{outputs[name].size}")
        print(line)


if __name__ == "__main__":
    main()
