"""Benchmark: one training step of an ``nn.Transformer`` seq2seq model against torch's.

The model, written identically in both libraries from their own ``nn`` modules: source and
target token embeddings (vocabulary 256), ``nn.Transformer(d_model=128, nhead=4, 2 encoder
and 2 decoder layers, dim_feedforward=512, dropout=0, batch_first=True)``, a linear output
head; the decoder's self-attention masked by ``Transformer.generate_square_subsequent_mask``.
A step is the forward pass over a batch of 16 source and target sequences of length 32, the
mean cross entropy against the next target tokens, the backward pass and Adam. torch's
weights are loaded into burnpy (strictly, by torch's names); the first losses are compared.
float32, one thread, alternating burnpy and torch steps; prints medians and the steps/s
ratio (target >= 1.0x torch). Run: ``.venv/bin/python benchmarks/transformer_step.py``
(``--profile`` prints burnpy's step under cProfile instead).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import cProfile  # noqa: E402
import pstats  # noqa: E402

import _timing  # noqa: E402 - also pins glibc's allocator: freed buffers stay in the process
import numpy as np  # noqa: E402
import torch  # noqa: E402

import burnpy.nn as bnn  # noqa: E402
import burnpy.nn.functional as BF  # noqa: E402
from burnpy import Tensor  # noqa: E402
from burnpy.autodiff import Autodiff  # noqa: E402
from burnpy.optim import Adam  # noqa: E402
from burnpy_cpu import CpuBackend  # noqa: E402

VOCAB, D_MODEL, HEADS, LAYERS, FFN, BATCH, LENGTH, LR = 256, 128, 4, 2, 512, 16, 32, 1e-3
AD = Autodiff(CpuBackend)


class TorchSeq2Seq(torch.nn.Module):
    """Embeddings, ``nn.Transformer`` and an output head, in torch."""

    def __init__(self) -> None:
        super().__init__()
        self.src_embed = torch.nn.Embedding(VOCAB, D_MODEL)
        self.tgt_embed = torch.nn.Embedding(VOCAB, D_MODEL)
        self.transformer = torch.nn.Transformer(D_MODEL, HEADS, LAYERS, LAYERS, FFN, 0.0,
                                                batch_first=True)
        self.head = torch.nn.Linear(D_MODEL, VOCAB)
        self.register_buffer("causal",
                             torch.nn.Transformer.generate_square_subsequent_mask(LENGTH))

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        out = self.transformer(self.src_embed(src), self.tgt_embed(tgt), tgt_mask=self.causal)
        return self.head(out)


class BurnpySeq2Seq(bnn.Module):
    """The same model from burnpy's ``nn``."""

    def __init__(self) -> None:
        self.src_embed = bnn.Embedding(VOCAB, D_MODEL, backend=AD)
        self.tgt_embed = bnn.Embedding(VOCAB, D_MODEL, backend=AD)
        self.transformer = bnn.Transformer(D_MODEL, HEADS, LAYERS, LAYERS, FFN, 0.0,
                                           batch_first=True, backend=AD)
        self.head = bnn.Linear(D_MODEL, VOCAB, backend=AD)
        self.register_buffer("causal",
                             bnn.Transformer.generate_square_subsequent_mask(LENGTH, backend=AD))

    def forward(self, src: Tensor, tgt: Tensor) -> Tensor:
        out = self.transformer(self.src_embed(src), self.tgt_embed(tgt), tgt_mask=self.causal)
        return self.head(out)


def batches(n: int, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """``n`` random (source, target input, next target) token batches."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        src = rng.integers(0, VOCAB, (BATCH, LENGTH))
        tgt = rng.integers(0, VOCAB, (BATCH, LENGTH + 1))
        out.append((src, tgt[:, :-1].copy(), tgt[:, 1:].copy()))
    return out


class BurnpyStep:
    """Forward, cross entropy, backward and Adam on ``Autodiff(CpuBackend)``."""

    def __init__(self, model: BurnpySeq2Seq, data: list[tuple[np.ndarray, ...]]) -> None:
        self.model, self.i = model, 0
        self.data = [tuple(Tensor.from_data(a, backend=AD) for a in batch) for batch in data]
        self.optim = Adam(model.parameters(), lr=LR)

    def step(self) -> Tensor:
        src, tgt, target = self.data[self.i % len(self.data)]
        self.i += 1
        logits = self.model(src, tgt)
        loss = BF.cross_entropy(logits.reshape(-1, VOCAB), target.reshape(-1))
        self.optim.step(self.model, loss.backward())
        return loss

    def __call__(self) -> float:
        return float(self.step().item())


class TorchStep:
    """The same step in torch eager mode."""

    def __init__(self, model: TorchSeq2Seq, data: list[tuple[np.ndarray, ...]]) -> None:
        self.model, self.i = model, 0
        self.data = [tuple(torch.from_numpy(a) for a in batch) for batch in data]
        self.optim = torch.optim.Adam(model.parameters(), lr=LR)

    def step(self) -> torch.Tensor:
        src, tgt, target = self.data[self.i % len(self.data)]
        self.i += 1
        logits = self.model(src, tgt)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, VOCAB), target.reshape(-1))
        self.optim.zero_grad(set_to_none=True)
        loss.backward()
        self.optim.step()
        return loss

    def __call__(self) -> float:
        return float(self.step().item())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--profile", action="store_true")
    args = p.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    twin = TorchSeq2Seq()
    model = BurnpySeq2Seq()
    model.load_state_dict({k: v.detach().numpy() for k, v in twin.state_dict().items()})
    data = batches(8)
    ours, theirs = BurnpyStep(model, data), TorchStep(twin, data)
    for _ in range(3):
        np.testing.assert_allclose(ours(), theirs(), rtol=1e-4, err_msg="the models diverge")
    if args.profile:
        profile = cProfile.Profile()
        profile.runcall(lambda: [ours() for _ in range(20)])
        pstats.Stats(profile).sort_stats("tottime").print_stats(25)
        return
    steps = {"burnpy Autodiff(CpuBackend)": ours, "torch CPU eager": theirs}
    med = _timing.alternate(steps, 1, args.rounds)
    _timing.report_steps(
        f"nn.Transformer seq2seq: d_model {D_MODEL}, {HEADS} heads, {LAYERS}+{LAYERS} layers, "
        f"ffn {FFN}, batch {BATCH}, length {LENGTH}, vocab {VOCAB}; float32, one thread, "
        f"Adam; median of {args.rounds} alternating steps (losses agree for 3 steps)", med)


if __name__ == "__main__":
    main()
