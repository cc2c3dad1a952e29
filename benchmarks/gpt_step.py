"""Benchmark: one training step of the GPT example's model against the same model in torch.

The model is ``burnpy.examples.gpt_model.GPT`` at the example's default shape (2 blocks, 4
heads, width 64, context 64, batch 16, a 65-character vocabulary); torch runs an equivalent
model written here (pre-norm blocks, causal ``F.scaled_dot_product_attention``, exact GELU,
tied output weights) loaded with the same weights. A step is the forward pass, the mean cross
entropy, the backward pass and AdamW (decay on matrices only) after gradient-norm clipping.
float32, one thread, alternating burnpy and torch steps; prints medians, steps/s ratio
(target >= 1.0x torch) and minor page faults per step. ``--large`` runs the larger shape users
train (3 blocks, 6 heads, width 192, context 128, batch 8), where each step's activations
outgrow glibc's mmap threshold. Run: ``.venv/bin/python benchmarks/gpt_step.py [--large]``.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
from collections.abc import Callable  # noqa: E402

import _timing  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

from burnpy import Tensor  # noqa: E402
from burnpy.autodiff import Autodiff  # noqa: E402
from burnpy.examples.gpt_model import GPT, GPTConfig, decay_groups  # noqa: E402
from burnpy.optim import AdamW, GradientClipping  # noqa: E402
from burnpy_cpu import CpuBackend  # noqa: E402

VOCAB, BATCH = 65, 16
LARGE, LARGE_BATCH = GPTConfig(VOCAB, block_size=128, n_layer=3, n_head=6, n_embd=192), 8
LR, WEIGHT_DECAY, CLIP = 3e-3, 0.1, 1.0


class TorchAttention(nn.Module):
    """The example's causal self-attention in torch, with the same KV-cache protocol."""

    def __init__(self, c: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv, self.proj = nn.Linear(c, 3 * c), nn.Linear(c, c)

    def forward(self, x: torch.Tensor, cache: list[torch.Tensor] | None) -> torch.Tensor:
        """``[b, t, c]`` -> same; with ``cache`` ([keys, values] or empty) the new keys and
        values are appended to it and the query attends to every cached position."""
        b, t, c = x.shape
        q, k, v = (z.reshape(b, t, self.heads, c // self.heads).transpose(1, 2)
                   for z in self.qkv(x).chunk(3, dim=-1))
        causal = True
        if cache is not None:
            if cache:
                k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)
                causal = False
            cache[:] = [k, v]
        y = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
        return self.proj(y.transpose(1, 2).reshape(b, t, c))


class TorchBlock(nn.Module):
    """The example's pre-norm block in torch."""

    def __init__(self, c: int, heads: int) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(c), nn.LayerNorm(c)
        self.attn = TorchAttention(c, heads)
        self.fc, self.proj = nn.Linear(c, 4 * c), nn.Linear(4 * c, c)

    def forward(self, x: torch.Tensor, cache: list[torch.Tensor] | None = None) -> torch.Tensor:
        x = x + self.attn(self.ln1(x), cache)
        return x + self.proj(nn.functional.gelu(self.fc(self.ln2(x))))


class TorchGPT(nn.Module):
    """The example's GPT in torch: embeddings, blocks, final norm, tied output."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        c = config.n_embd
        self.tok = nn.Embedding(config.vocab_size, c)
        self.pos = nn.Embedding(config.block_size, c)
        self.blocks = nn.ModuleList(TorchBlock(c, config.n_head) for _ in range(config.n_layer))
        self.ln_f = nn.LayerNorm(c)

    def forward(self, idx: torch.Tensor,
                cache: list[list[torch.Tensor]] | None = None) -> torch.Tensor:
        start = 0 if not cache or not cache[0] else cache[0][0].shape[2]
        x = self.tok(idx) + self.pos(torch.arange(start, start + idx.shape[1], device=idx.device))
        for i, block in enumerate(self.blocks):
            x = block(x, None if cache is None else cache[i])
        return nn.functional.linear(self.ln_f(x), self.tok.weight)


def torch_twin(model: GPT) -> TorchGPT:
    """A TorchGPT holding ``model``'s weights (the parameter names are the same)."""
    twin = TorchGPT(model.config)
    ours = {name: p.to_numpy() for name, p in model.named_parameters()}
    with torch.no_grad():
        for name, p in twin.named_parameters():
            p.copy_(torch.from_numpy(ours[name]))
    return twin


def batches(config: GPTConfig, n: int, seed: int = 0,
            batch: int = BATCH) -> list[tuple[np.ndarray, np.ndarray]]:
    """``n`` random (input, next-token target) windows of a synthetic token stream, ``batch``
    windows each."""
    rng = np.random.default_rng(seed)
    stream = rng.integers(0, config.vocab_size, 4096)
    out = []
    for _ in range(n):
        start = rng.integers(0, stream.size - config.block_size - 1, batch)
        x = np.stack([stream[s:s + config.block_size] for s in start])
        y = np.stack([stream[s + 1:s + config.block_size + 1] for s in start])
        out.append((x, y))
    return out


class BurnpyStep:
    """The example's training step on ``Autodiff(CpuBackend)``, or on the backend given."""

    def __init__(self, model: GPT, data: list[tuple[np.ndarray, np.ndarray]],
                 backend: type | None = None) -> None:
        self.model, self.data, self.i = model, data, 0
        self.backend = Autodiff(CpuBackend) if backend is None else backend
        self.optim = AdamW(decay_groups(model, WEIGHT_DECAY), lr=LR, betas=(0.9, 0.99),
                           grad_clipping=GradientClipping.norm(CLIP))

    def step(self) -> Tensor:
        """One step; the loss stays on the device (no host read)."""
        x, y = self.data[self.i % len(self.data)]
        self.i += 1
        loss = self.model.loss(Tensor.from_data(x, backend=self.backend),
                               Tensor.from_data(y, backend=self.backend))
        grads = loss.backward()
        self.optim.step(self.model, grads, LR)
        return loss

    def __call__(self) -> float:
        return float(self.step().item())


class TorchStep:
    """The same step in torch eager mode, on the CPU or the device given."""

    def __init__(self, model: TorchGPT, data: list[tuple[np.ndarray, np.ndarray]],
                 device: str = "cpu") -> None:
        self.model, self.i = model.to(device), 0
        self.data = [(torch.from_numpy(x).to(device), torch.from_numpy(y).to(device))
                     for x, y in data]
        params = list(model.named_parameters())
        groups = [{"params": [p for _, p in params if p.ndim >= 2],
                   "weight_decay": WEIGHT_DECAY},
                  {"params": [p for _, p in params if p.ndim < 2], "weight_decay": 0.0}]
        self.optim = torch.optim.AdamW(groups, lr=LR, betas=(0.9, 0.99))

    def train(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """The step on one batch: loss, backward, clipping, AdamW."""
        logits = self.model(x)
        loss = nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        self.optim.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(self.model.parameters(), CLIP)
        self.optim.step()
        return loss

    def step(self) -> torch.Tensor:
        """One step; the loss stays on the device (no host read)."""
        x, y = self.data[self.i % len(self.data)]
        self.i += 1
        return self.train(x, y)

    def __call__(self) -> float:
        return float(self.step().item())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--large", action="store_true",
                   help="3 blocks, 6 heads, width 192, context 128, batch 8")
    args = p.parse_args()
    torch.set_num_threads(1)
    config, batch = GPTConfig(VOCAB), BATCH
    if args.large:
        config, batch = LARGE, LARGE_BATCH
    model = GPT(config, backend=Autodiff(CpuBackend))
    twin = torch_twin(model)
    data = batches(config, 8, batch=batch)
    ours, theirs = BurnpyStep(model, data), TorchStep(twin, data)
    first = [(ours(), theirs()) for _ in range(3)]
    for a, b in first:
        np.testing.assert_allclose(a, b, rtol=1e-3, err_msg="the models diverge")
    steps: dict[str, Callable[[], object]] = {"burnpy Autodiff(CpuBackend)": ours,
                                              "torch CPU eager": theirs}
    med = _timing.alternate(steps, 1, args.rounds)
    _timing.report_steps(
        f"GPT {config.n_layer} layers, {config.n_head} heads, width {config.n_embd}, context "
        f"{config.block_size}, batch {batch}, vocab {VOCAB}; float32, one thread, AdamW + "
        f"clipping; median of {args.rounds} alternating steps (losses agree for 3 steps)", med)
    for name, fn in steps.items():
        print(f"  {name:28s} {_timing.faults_per_call(fn, 5):8.0f} minor page faults/step")


if __name__ == "__main__":
    main()
