"""Benchmark: a BERT-base forward pass in burnpy against transformers' own ``BertModel``.

A random-weight BERT-base (12 layers, hidden 768, 12 heads, MLP 3072) is written by
transformers' ``save_pretrained`` and loaded by ``burnpy.models.bert.BertModel.from_pretrained``
on ``CpuBackend`` (the inference path: no autodiff). Both run the same padded batch (8
sequences of 128 tokens, two token types, the last rows padded) with the pooler; transformers
runs eagerly under ``torch.inference_mode()`` with its default attention (``sdpa``), or the
one ``--attn`` names. float32, one thread, alternating rounds; prints medians and the
sequences/s ratio (target >= 1.0x transformers). Run: ``.venv/bin/python
benchmarks/bert_forward.py``.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import tempfile  # noqa: E402

import _timing  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
import transformers as tf  # noqa: E402

from burnpy.models.bert import BertModel  # noqa: E402
from burnpy.tensor import Tensor  # noqa: E402
from burnpy_cpu import CpuBackend  # noqa: E402

OURS, THEIRS = "burnpy CpuBackend", "transformers eager"


def batch(size: int, length: int, vocab: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Token ids, the padding mask (row i keeps ``length - 8 i`` tokens) and token types (the
    second half of each sequence is segment 1)."""
    rng = np.random.default_rng(0)
    ids = rng.integers(1, vocab, size=(size, length))
    mask = np.ones_like(ids)
    for i in range(size):
        mask[i, length - 8 * i:] = 0
    types = np.zeros_like(ids)
    types[:, length // 2:] = 1
    return ids, mask, types


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--length", type=int, default=128)
    p.add_argument("--attn", default="sdpa", choices=["sdpa", "eager"],
                   help="transformers' attention implementation")
    args = p.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    config = tf.BertConfig()
    hf = tf.BertModel(config).eval()
    hf.set_attn_implementation(args.attn)
    with tempfile.TemporaryDirectory() as directory:
        hf.save_pretrained(directory)
        ours = BertModel.from_pretrained(directory, backend=CpuBackend)
    ids, mask, types = batch(args.batch, args.length, config.vocab_size)
    b_in = [Tensor.from_data(a, backend=CpuBackend) for a in (ids, mask, types)]
    t_in = [torch.from_numpy(a) for a in (ids, mask, types)]

    def run_ours() -> np.ndarray:
        return ours(*b_in).last_hidden_state.into_data().array

    def run_theirs() -> np.ndarray:
        with torch.inference_mode():
            return hf(*t_in).last_hidden_state.numpy()

    valid = mask.astype(bool)
    err = np.abs(run_ours()[valid] - run_theirs()[valid]).max()
    med = _timing.alternate({OURS: run_ours, THEIRS: run_theirs}, 1, args.rounds)
    print(f"BERT-base forward ({config.num_hidden_layers} layers, hidden {config.hidden_size}, "
          f"{config.num_attention_heads} heads), batch {args.batch} x {args.length} tokens "
          f"padded, with the pooler; float32, one thread; transformers attention "
          f"{args.attn!r}; median of {args.rounds} alternating forwards (max |difference| "
          f"{err:.2g})")
    for name, s in med.items():
        print(f"  {name:24s} {s * 1e3:9.1f} ms  {args.batch / s:7.2f} sequences/s")
    print(f"  burnpy / transformers sequences/s: {med[THEIRS] / med[OURS]:.2f}x "
          "(target >= 1.0x)")


if __name__ == "__main__":
    main()
