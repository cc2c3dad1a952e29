"""A seq2seq Transformer in torch's default ``(L, N, E)`` layout: an encoder layer with a
per-head float (ALiBi) attention bias, a decoder with a float causal mask and cross-attention
over the encoder's memory with a padding mask, cross entropy ignoring the padding, Adam and
gradient-norm clipping; four steps in float64 and in float32 (torch's default), burnpy's port
against torch's, with the metrics a training loop reads (``select``, ``argmax``,
``sum(dtype=)``, ``nonzero``)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
import torch

import burnpy as bp
import burnpy.nn as nn
import burnpy.nn.functional as F
from burnpy import Tensor, optim
from tests.programs.harness import AD, Snapshot, copy_from, observe, side_by_side

VOCAB, D, HEADS, FF, PAD = 11, 8, 2, 16, 0
S, T, N, STEPS = 5, 4, 3, 4


def _batches() -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(src [S, N], tgt_in [T, N], tgt_out [T, N]) token ids, sequence first, padded."""
    rng = np.random.default_rng(0)
    out = []
    for _ in range(STEPS):
        src = rng.integers(1, VOCAB, (S, N))
        src[3:, 0] = PAD  # the first sequence is shorter
        tgt = rng.integers(1, VOCAB, (T + 1, N))
        tgt[T:, 1] = PAD
        out.append((src, tgt[:-1], tgt[1:]))
    return out


def _alibi(slopes: np.ndarray) -> np.ndarray:
    """-slope * |i - j| per head: [heads, S, S]."""
    pos = np.arange(S)
    return -slopes[:, None, None] * np.abs(pos[:, None] - pos[None, :])


# ---- the PyTorch program ------------------------------------------------------------------------
class TorchSeq2Seq(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, D)
        self.encoder = torch.nn.TransformerEncoderLayer(D, HEADS, FF, dropout=0.0)
        self.self_attn = torch.nn.MultiheadAttention(D, HEADS)
        self.cross_attn = torch.nn.MultiheadAttention(D, HEADS)
        self.norm = torch.nn.LayerNorm(D)
        self.out = torch.nn.Linear(D, VOCAB)

    def forward(self, src: torch.Tensor, tgt: torch.Tensor, src_bias: torch.Tensor,
                tgt_mask: torch.Tensor, src_pad: torch.Tensor) -> torch.Tensor:
        memory = self.encoder(self.embed(src), src_mask=src_bias)  # [S, N, E]
        x = self.embed(tgt)  # [T, N, E]
        x = x + self.self_attn(x, x, x, attn_mask=tgt_mask)[0]
        x = x + self.cross_attn(x, memory, memory, key_padding_mask=src_pad)[0]
        return self.out(self.norm(x))


def torch_model(dtype: torch.dtype) -> TorchSeq2Seq:
    torch.manual_seed(0)
    return TorchSeq2Seq().to(dtype)


def torch_run(dtype: str) -> Iterator[Snapshot]:
    model = torch_model(getattr(torch, dtype))
    # float32 trains with SGD: the key bias's gradient is zero in exact arithmetic (softmax
    # ignores a shift shared by all keys), so each framework's is its own rounding noise,
    # which Adam would scale up to +-lr
    opt = (torch.optim.Adam(model.parameters(), lr=1e-2) if dtype == "float64" else
           torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))
    tgt_mask = torch.nn.Transformer.generate_square_subsequent_mask(T, dtype=getattr(torch, dtype))
    slopes = torch.tensor([0.5, 0.25], dtype=getattr(torch, dtype))
    pos = torch.arange(S)
    bias = -slopes[:, None, None] * (pos[:, None] - pos[None, :]).abs()  # [heads, S, S]
    src_bias = bias.repeat(N, 1, 1)  # [N * heads, S, S], batch-major
    for step, (src, tgt_in, tgt_out) in enumerate(_batches()):
        src_t = torch.tensor(src)
        opt.zero_grad()
        logits = model(src_t, torch.tensor(tgt_in), src_bias, tgt_mask, (src_t == PAD).T)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, VOCAB),
                                                 torch.tensor(tgt_out).reshape(-1),
                                                 ignore_index=PAD)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        tgt_out_t = torch.tensor(tgt_out)
        yield observe(f"step {step}", loss=loss, model=model,
                      last=logits.select(0, -1),  # the last position's logits [N, VOCAB]
                      correct=(logits.argmax(-1) == tgt_out_t).sum(dtype=torch.float64),
                      pads=(src_t == PAD).nonzero())


# ---- the burnpy port ----------------------------------------------------------------------------
class Seq2Seq(nn.Module):
    def __init__(self) -> None:
        self.embed = nn.Embedding(VOCAB, D)
        self.encoder = nn.TransformerEncoderLayer(D, HEADS, FF, dropout=0.0)
        self.self_attn = nn.MultiheadAttention(D, HEADS)
        self.cross_attn = nn.MultiheadAttention(D, HEADS)
        self.norm = nn.LayerNorm(D)
        self.out = nn.Linear(D, VOCAB)

    def forward(self, src: Tensor, tgt: Tensor, src_bias: Tensor, tgt_mask: Tensor,
                src_pad: Tensor) -> Tensor:
        memory = self.encoder(self.embed(src), src_mask=src_bias)
        x = self.embed(tgt)
        x = x + self.self_attn(x, x, x, attn_mask=tgt_mask)[0]
        x = x + self.cross_attn(x, memory, memory, key_padding_mask=src_pad)[0]
        return self.out(self.norm(x))


def burnpy_run(dtype: str) -> Iterator[Snapshot]:
    model = copy_from(Seq2Seq().to(backend=AD, dtype=dtype), torch_model(getattr(torch, dtype)))
    opt = (optim.Adam(model.parameters(), lr=1e-2) if dtype == "float64" else
           optim.SGD(model.parameters(), lr=0.1, momentum=0.9))
    tgt_mask = Tensor.full((T, T), float("-inf"), backend=AD, dtype=dtype).triu(1)
    slopes = bp.tensor([0.5, 0.25], backend=AD, dtype=dtype)
    pos = Tensor.arange(S, backend=AD)
    # torch promotes int * float; burnpy asks for the cast (a DTypeError naming both)
    bias = -slopes[:, None, None] * (pos[:, None] - pos[None, :]).abs().to(dtype=dtype)
    src_bias = bias.repeat(N, 1, 1)
    for step, (src, tgt_in, tgt_out) in enumerate(_batches()):
        src_t = bp.tensor(src, backend=AD)
        logits = model(src_t, bp.tensor(tgt_in, backend=AD), src_bias, tgt_mask,
                       (src_t == PAD).T)
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), bp.tensor(tgt_out, backend=AD)
                               .reshape(-1), ignore_index=PAD)
        grads = loss.backward()
        optim.clip_grad_norm(model, grads, 1.0)
        opt.step(model, grads)
        tgt_out_t = bp.tensor(tgt_out, backend=AD)
        yield observe(f"step {step}", loss=loss, model=model,
                      last=logits.select(0, -1),
                      correct=(logits.argmax(-1) == tgt_out_t).sum(dtype=bp.float64),
                      pads=(src_t == PAD).nonzero())


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_seq2seq_transformer_matches_torch(dtype: str) -> None:
    side_by_side(torch_run(dtype), burnpy_run(dtype), dtype)
