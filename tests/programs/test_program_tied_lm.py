"""A small causal language model, GPT style, in place of the LSTM one (burnpy has no LSTM yet):
token and position embeddings, a pre-norm ``TransformerEncoderLayer(batch_first=True)`` with
torch's float causal mask, an output layer tied to the token embedding
(``out.weight = embed.weight``), AdamW with weight decay on matrices only; four steps, then
torch's model loads burnpy's state dict strictly, as a checkpoint moved back to torch is."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import torch

import burnpy as bp
import burnpy.nn as nn
import burnpy.nn.functional as F
from burnpy import Tensor, optim
from tests.programs.harness import AD, Snapshot, copy_from, observe, side_by_side

VOCAB, D, HEADS, FF, CONTEXT, BATCH, STEPS = 13, 8, 2, 16, 6, 3, 4

rng = np.random.default_rng(10)
TEXT = rng.integers(0, VOCAB, (STEPS, BATCH, CONTEXT + 1))


# ---- the PyTorch program ------------------------------------------------------------------------
class TorchLM(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, D)
        self.pos = torch.nn.Parameter(torch.randn(CONTEXT, D) * 0.1)
        self.block = torch.nn.TransformerEncoderLayer(D, HEADS, FF, dropout=0.0,
                                                      batch_first=True, norm_first=True)
        self.norm = torch.nn.LayerNorm(D)
        self.out = torch.nn.Linear(D, VOCAB, bias=False)
        self.out.weight = self.embed.weight

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        length = idx.shape[1]
        mask = torch.nn.Transformer.generate_square_subsequent_mask(length, dtype=torch.float64)
        x = self.embed(idx) + self.pos[:length]
        return self.out(self.norm(self.block(x, src_mask=mask, is_causal=True)))


def torch_model() -> TorchLM:
    torch.manual_seed(10)
    return TorchLM().double()


def torch_run() -> Iterator[Snapshot]:
    model = torch_model()
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}], lr=1e-2)
    for step, chunk in enumerate(TEXT):
        x, y = torch.tensor(chunk[:, :-1]), torch.tensor(chunk[:, 1:])
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x).view(-1, VOCAB), y.reshape(-1))
        loss.backward()
        opt.step()
        yield observe(f"step {step}", loss=loss, model=model)
    fresh = torch_model()
    fresh.load_state_dict(model.state_dict())
    yield observe("the state dict loaded into a torch model", model=fresh)


# ---- the burnpy port ----------------------------------------------------------------------------
class LM(nn.Module):
    def __init__(self) -> None:
        self.embed = nn.Embedding(VOCAB, D)
        self.pos = Tensor.random((CONTEXT, D), bp.Distribution.normal(0.0, 0.1))
        self.block = nn.TransformerEncoderLayer(D, HEADS, FF, dropout=0.0, batch_first=True,
                                                norm_first=True)
        self.norm = nn.LayerNorm(D)
        self.out = nn.Linear(D, VOCAB, bias=False)
        self.out.weight = self.embed.weight

    def forward(self, idx: Tensor) -> Tensor:
        length = idx.shape[1]
        mask = Tensor.full((length, length), float("-inf"), backend=idx.backend,
                           dtype=bp.float64).triu(1)
        x = self.embed(idx) + self.pos[:length]
        return self.out(self.norm(self.block(x, src_mask=mask, is_causal=True)))


def burnpy_run() -> Iterator[Snapshot]:
    model = copy_from(LM().to(backend=AD, dtype=bp.float64), torch_model())
    decay = [p for p in model.parameters() if p.ndim >= 2]  # torch's p.dim()
    no_decay = [p for p in model.parameters() if p.ndim < 2]
    opt = optim.AdamW([{"params": decay, "weight_decay": 0.1},
                       {"params": no_decay, "weight_decay": 0.0}], lr=1e-2)
    for step, chunk in enumerate(TEXT):
        x, y = bp.tensor(chunk[:, :-1], backend=AD), bp.tensor(chunk[:, 1:], backend=AD)
        loss = F.cross_entropy(model(x).view(-1, VOCAB), y.reshape(-1))
        opt.step(model, loss.backward())
        yield observe(f"step {step}", loss=loss, model=model)
    fresh = torch_model()
    fresh.load_state_dict({k: torch.from_numpy(v.to_numpy())
                           for k, v in model.state_dict().items()})
    yield observe("the state dict loaded into a torch model", model=fresh)


def test_tied_language_model_matches_torch_and_its_state_dict_loads_in_torch() -> None:
    side_by_side(torch_run(), burnpy_run())
