"""Benchmark: ``generate`` of a pretrained-architecture model against transformers' own.

Two random-weight checkpoints, written by transformers' ``save_pretrained`` and loaded by
``bp.models.from_pretrained(backend=CpuBackend)``: GPT-2 at its 124M configuration, and a
~100M Llama with grouped-query attention (hidden 768, 12 layers, 12 heads, 4 key/value heads,
intermediate 2048, vocabulary 32000). Batch 1, a 16-token prompt, 128 new tokens, greedy,
with the KV cache on both sides (transformers' eager ``generate`` with its default SDPA
attention, under ``torch.inference_mode``); end-of-sequence is off so every run makes all 128.
float32, one thread, alternating rounds; prints medians of wall time and of the thread's CPU
time (``time.thread_time``: both sides run on this one thread, so CPU time is robust to other
processes loading the machine), tokens/s and both ratios (target >= 1.2x transformers), and
how many tokens agree. Run: ``.venv/bin/python benchmarks/hf_generate.py
[--rounds 5 --tokens 128 --model gpt2|llama]``.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import tempfile  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import _timing  # noqa: E402 - pins glibc's allocator where BURNPY_BENCH_PIN_MALLOC=1
import numpy as np  # noqa: E402
import torch  # noqa: E402
import transformers as tf  # noqa: E402

import burnpy.models as bpm  # noqa: E402
from burnpy_cpu import CpuBackend  # noqa: E402

MODELS: dict[str, tuple[type[Any], Any]] = {
    "gpt2": (tf.GPT2LMHeadModel, lambda: tf.GPT2Config(eos_token_id=None, bos_token_id=None)),
    "llama": (tf.LlamaForCausalLM, lambda: tf.LlamaConfig(
        vocab_size=32000, hidden_size=768, intermediate_size=2048, num_hidden_layers=12,
        num_attention_heads=12, num_key_value_heads=4, max_position_embeddings=1024,
        eos_token_id=None, bos_token_id=None)),
}


def run(name: str, tokens: int, rounds: int, directory: Path) -> tuple[float, float]:
    """Write, load and time one model; returns burnpy's tokens/s over transformers' by wall
    time and by thread CPU time."""
    cls, make_config = MODELS[name]
    torch.manual_seed(0)
    theirs = cls(make_config()).eval()
    theirs.save_pretrained(directory / name)
    theirs.generation_config.pad_token_id = 0
    ours = bpm.from_pretrained(directory / name, backend=CpuBackend)
    assert isinstance(ours, bpm.GenerationMixin)
    prompt = np.random.default_rng(0).integers(0, theirs.config.vocab_size, (1, 16))
    ids = torch.from_numpy(prompt)

    def hf() -> np.ndarray:
        with torch.inference_mode():
            out = theirs.generate(ids, max_new_tokens=tokens, do_sample=False,
                                  attention_mask=torch.ones_like(ids))
        return out.numpy()

    def bp() -> np.ndarray:
        return ours.generate(prompt, max_new_tokens=tokens, eos_token_id=[]).into_data().array

    runs: dict[str, Callable[[], object]] = {"burnpy CpuBackend": bp, "transformers eager": hf}
    agree = int((bp()[0, 16:] == hf()[0, 16:]).sum())
    med = _timing.alternate_clocks(runs, rounds)
    params = sum(p.numel() for p in theirs.parameters())
    print(f"{name} ({params / 1e6:.0f}M parameters), batch 1, 16-token prompt, {tokens} new "
          f"tokens with the KV cache, greedy, float32, one thread; median of {rounds} "
          f"alternating generations ({agree}/{tokens} tokens agree)")
    for label, (wall, cpu) in med.items():
        print(f"  {label:22s} wall {wall * 1e3:8.1f} ms {tokens / wall:7.1f} tokens/s   "
              f"cpu {cpu * 1e3:8.1f} ms {tokens / cpu:7.1f} tokens/s")
    (hf_wall, hf_cpu), (bp_wall, bp_cpu) = med["transformers eager"], med["burnpy CpuBackend"]
    wall_ratio, cpu_ratio = hf_wall / bp_wall, hf_cpu / bp_cpu
    print(f"  burnpy / transformers tokens/s: wall {wall_ratio:.2f}x, thread CPU time "
          f"{cpu_ratio:.2f}x (target >= 1.2x); {_timing.allocator_note()}")
    return wall_ratio, cpu_ratio


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--tokens", type=int, default=128)
    p.add_argument("--model", choices=[*MODELS, "all"], default="all")
    args = p.parse_args()
    torch.set_num_threads(1)
    names = list(MODELS) if args.model == "all" else [args.model]
    with tempfile.TemporaryDirectory(prefix="burnpy-hf-generate-") as tmp:
        for name in names:
            run(name, args.tokens, args.rounds, Path(tmp))


if __name__ == "__main__":
    main()
