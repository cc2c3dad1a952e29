"""Benchmark: KV-cache generation with the GPT example's model against the same model in torch.

The model is ``burnpy.examples.gpt_model.GPT`` at the example's default shape, run on its
inference path (``valid()``: the inner ``CpuBackend``, untracked) by the example's own
``generate`` (the prompt fed once, then one token per step through every layer's cached keys
and values); torch runs ``gpt_step.TorchGPT`` with the same weights and its own KV-cache loop
under ``torch.inference_mode()``. Greedy decoding on both sides, so the tokens must agree.
float32, one thread, alternating rounds; prints medians and the tokens/s ratio (target >= 1.0x
torch eager). Run: ``.venv/bin/python benchmarks/gpt_generate.py``.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402

import _timing  # noqa: E402 - also pins glibc's allocator: freed buffers stay in the process
import torch  # noqa: E402
from gpt_step import VOCAB, TorchGPT, torch_twin  # noqa: E402

from burnpy.autodiff import Autodiff  # noqa: E402
from burnpy.examples.gpt import generate, inference  # noqa: E402
from burnpy.examples.gpt_model import GPT, GPTConfig  # noqa: E402
from burnpy_cpu import CpuBackend  # noqa: E402

PROMPT = [1, 5, 9, 2, 7, 3, 11, 4]


def torch_generate(model: TorchGPT, prompt: list[int], new_tokens: int) -> list[int]:
    """Greedy tokens through torch's own KV cache (one [keys, values] pair per block)."""
    out = list(prompt)
    cache: list[list[torch.Tensor]] = [[] for _ in model.blocks]
    feed = out
    with torch.inference_mode():
        for _ in range(new_tokens):
            logits = model(torch.tensor([feed]), cache)
            out.append(int(logits[0, -1].argmax()))
            feed = out[-1:]
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--tokens", type=int, default=56, help="new tokens per generation")
    args = p.parse_args()
    torch.set_num_threads(1)
    config = GPTConfig(VOCAB)
    model = GPT(config, backend=Autodiff(CpuBackend))
    twin = torch_twin(model).eval()
    ours = inference(model)
    if len(PROMPT) + args.tokens > config.block_size:
        p.error(f"prompt + tokens must fit the context ({config.block_size})")
    runs = {"burnpy CpuBackend (valid())": lambda: generate(ours, PROMPT, args.tokens,
                                                            temperature=0.0),
            "torch CPU eager": lambda: torch_generate(twin, PROMPT, args.tokens)}
    tokens = {name: run() for name, run in runs.items()}
    first, second = tokens.values()
    agree = sum(a == b for a, b in zip(first, second, strict=True))
    med = _timing.alternate(runs, 1, args.rounds)
    print(f"GPT {config.n_layer} layers, {config.n_head} heads, width {config.n_embd}; prompt "
          f"{len(PROMPT)} tokens, {args.tokens} new tokens through a KV cache, greedy; float32, "
          f"one thread; median of {args.rounds} alternating generations "
          f"({agree}/{len(first)} tokens agree)")
    for name, s in med.items():
        print(f"  {name:30s} {s * 1e3:8.2f} ms  {args.tokens / s:8.1f} tokens/s")
    ratio = med["torch CPU eager"] / med["burnpy CpuBackend (valid())"]
    print(f"  burnpy / torch tokens/s: {ratio:.2f}x (target >= 1.0x)")


if __name__ == "__main__":
    main()
