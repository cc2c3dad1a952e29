"""A small GPT (decoder-only transformer) built from ``burnpy.nn``, with a KV cache.

Token and position embeddings, pre-norm blocks (LayerNorm -> causal self-attention ->
residual, LayerNorm -> exact-GELU MLP -> residual), a final LayerNorm and an output layer tied to
the token embedding. ``forward(idx)`` trains on whole sequences; ``forward(idx, cache)`` is the
inference path that feeds a prompt once, then one token per step, keeping each layer's keys and
values so a step costs one position, not the whole sequence.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import burnpy.nn as nn
from burnpy.backend.errors import InvalidArgumentError, ShapeError
from burnpy.nn import functional as F
from burnpy.nn import init
from burnpy.optim import AdamW, GradientClipping
from burnpy.tensor import Tensor

if TYPE_CHECKING:
    from burnpy.backend.base import Backend
    from burnpy.backend.dtype import DTypeLike


@dataclass(frozen=True)
class GPTConfig:
    """The shape of a GPT: vocabulary, context length and width."""

    vocab_size: int
    block_size: int = 64
    n_layer: int = 2
    n_head: int = 4
    n_embd: int = 64

    def as_dict(self) -> dict[str, int]:
        """The fields by name (stored in checkpoints to refuse a resume with another shape)."""
        return asdict(self)


class KVCache:
    """Per-layer keys and values ``[batch, heads, seen, head_dim]`` of the tokens seen so far."""

    __slots__ = ("keys", "values")

    def __init__(self, n_layer: int) -> None:
        self.keys: list[Tensor | None] = [None] * n_layer
        self.values: list[Tensor | None] = [None] * n_layer

    @property
    def length(self) -> int:
        """How many positions the cache holds (0 when empty)."""
        k = self.keys[0]
        return 0 if k is None else k.shape[2]


def _linear(fan_in: int, fan_out: int, backend: type[Backend] | None,
            dtype: DTypeLike | None, std: float = 0.02) -> nn.Linear:
    """A Linear initialized GPT-2's way: weight N(0, std^2), bias zero."""
    layer = nn.Linear(fan_in, fan_out, backend=backend, dtype=dtype)
    init.normal_(layer.weight, 0.0, std)
    assert layer.bias is not None
    init.zeros_(layer.bias)
    return layer


class CausalSelfAttention(nn.Module):
    """Multi-head self-attention: one ``qkv`` projection, causal fused attention, ``proj``."""

    def __init__(self, config: GPTConfig, *, backend: type[Backend] | None = None,
                 dtype: DTypeLike | None = None) -> None:
        if config.n_embd % config.n_head:
            raise InvalidArgumentError(f"GPT: n_embd {config.n_embd} is not a multiple of n_head "
                                       f"{config.n_head}")
        self.n_head = config.n_head
        self.qkv = _linear(config.n_embd, 3 * config.n_embd, backend, dtype)
        self.proj = _linear(config.n_embd, config.n_embd, backend, dtype,
                            std=0.02 / (2 * config.n_layer) ** 0.5)

    def forward(self, x: Tensor, cache: KVCache | None = None, layer: int = 0) -> Tensor:
        """``[batch, seq, n_embd]`` -> same shape. With ``cache``, the new keys and values are
        appended to layer ``layer``'s and the queries attend to every cached position."""
        b, t, c = x.shape
        h = self.n_head
        # [b, t, 3c] -> [b, 3h, t, head_dim], then q, k, v as three [b, h, t, head_dim] views:
        # one reshape and one swap instead of one each per part.
        q, k, v = self.qkv(x).reshape(b, t, 3 * h, c // h).swap_dims(1, 2).chunk(3, dim=1)
        causal = True
        if cache is not None:
            past_k, past_v = cache.keys[layer], cache.values[layer]
            if past_k is not None and past_v is not None:
                if t != 1:
                    raise ShapeError("GPT: after the prompt, a cached step feeds one token, got "
                                     f"{t}")
                k, v = Tensor.cat([past_k, k], 2), Tensor.cat([past_v, v], 2)
                causal = False  # one query at the newest position sees every cached key
            cache.keys[layer], cache.values[layer] = k, v
        y = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        return self.proj(y.swap_dims(1, 2).reshape(b, t, c))


class Block(nn.Module):
    """Pre-norm transformer block: ``x + attn(ln1(x))``, then ``x + mlp(ln2(x))``."""

    def __init__(self, config: GPTConfig, *, backend: type[Backend] | None = None,
                 dtype: DTypeLike | None = None) -> None:
        self.ln1 = nn.LayerNorm(config.n_embd, backend=backend, dtype=dtype)
        self.attn = CausalSelfAttention(config, backend=backend, dtype=dtype)
        self.ln2 = nn.LayerNorm(config.n_embd, backend=backend, dtype=dtype)
        self.fc = _linear(config.n_embd, 4 * config.n_embd, backend, dtype)
        self.proj = _linear(4 * config.n_embd, config.n_embd, backend, dtype,
                            std=0.02 / (2 * config.n_layer) ** 0.5)

    def forward(self, x: Tensor, cache: KVCache | None = None, layer: int = 0) -> Tensor:
        """``[batch, seq, n_embd]`` -> same shape (see ``CausalSelfAttention`` for ``cache``)."""
        x = x + self.attn(self.ln1(x), cache, layer)
        return x + self.proj(F.gelu(self.fc(self.ln2(x))))


class GPT(nn.Module):
    """Token ids ``[batch, seq]`` -> next-token logits ``[batch, seq, vocab_size]``."""

    def __init__(self, config: GPTConfig, *, backend: type[Backend] | None = None,
                 dtype: DTypeLike | None = None) -> None:
        self.config = config
        self.tok = nn.Embedding(config.vocab_size, config.n_embd, backend=backend, dtype=dtype)
        self.pos = nn.Embedding(config.block_size, config.n_embd, backend=backend, dtype=dtype)
        init.normal_(self.tok.weight, 0.0, 0.02)
        init.normal_(self.pos.weight, 0.0, 0.02)
        self.blocks = [Block(config, backend=backend, dtype=dtype)
                       for _ in range(config.n_layer)]
        self.ln_f = nn.LayerNorm(config.n_embd, backend=backend, dtype=dtype)

    def forward(self, idx: Tensor, cache: KVCache | None = None) -> Tensor:
        """Logits of every position; with ``cache``, ``idx`` continues the cached sequence
        (positions start at ``cache.length``) and the cache grows by ``idx``'s length."""
        t = idx.shape[1]
        start = 0 if cache is None else cache.length
        if start + t > self.config.block_size:
            raise ShapeError(f"GPT: {start + t} positions exceed block_size "
                             f"{self.config.block_size}")
        positions = Tensor.arange(start, start + t, backend=idx.backend, device=idx.device)
        x = self.tok(idx) + self.pos(positions)
        for i, block in enumerate(self.blocks):
            x = block(x, cache, i)
        return F.linear(self.ln_f(x), self.tok.weight)  # output weights tied to the embedding

    def loss(self, idx: Tensor, targets: Tensor) -> Tensor:
        """Mean cross entropy of the next-token logits against ``targets [batch, seq]``."""
        logits = self(idx)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))

    def new_cache(self) -> KVCache:
        """An empty KV cache with one slot per block."""
        return KVCache(self.config.n_layer)

    def extra_repr(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.config.as_dict().items())


def decay_groups(model: nn.Module, weight_decay: float) -> list[dict[str, Any]]:
    """AdamW parameter groups: matrices (embeddings, linear weights) decay, vectors (biases,
    LayerNorm scales and shifts) do not."""
    params = list(model.named_parameters())
    return [{"params": [n for n, p in params if p.ndim >= 2], "weight_decay": weight_decay},
            {"params": [n for n, p in params if p.ndim < 2], "weight_decay": 0.0}]


def training_step(model: GPT, lr: float = 3e-3, weight_decay: float = 0.1,
                  clip: float = 1.0) -> Callable[[Tensor, Tensor], Tensor]:
    """The example's training step on ``model`` without its extras (autocast, loss scaling,
    DDP): mean cross entropy, backward, AdamW (betas 0.9, 0.99; decay on matrices) after
    gradient-norm clipping; it returns the loss. What ``bp.compile``'s tests replay."""
    opt = AdamW(decay_groups(model, weight_decay), lr=lr, betas=(0.9, 0.99),
                grad_clipping=GradientClipping.norm(clip))

    def step(x: Tensor, y: Tensor) -> Tensor:
        loss = model.loss(x, y)
        opt.step(model, loss.backward())
        return loss

    return step
