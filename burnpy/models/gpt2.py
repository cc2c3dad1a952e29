"""GPT-2 with transformers' names, configuration and outputs: ``GPT2Model`` (token and learned
position embeddings, pre-norm blocks of causal self-attention and an MLP, a final LayerNorm)
and ``GPT2LMHeadModel`` (its output layer tied to the token embedding unless the config says
otherwise). Its projections are ``Conv1D`` layers storing ``[in, out]`` weights, as saved."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import burnpy.nn as nn
from burnpy.models.cache import DynamicCache
from burnpy.models.generation import GenerationMixin
from burnpy.models.layers import activation, causal_mask
from burnpy.models.modeling import ConfigError, PretrainedConfig, PreTrainedModel
from burnpy.models.outputs import BaseModelOutputWithPast
from burnpy.nn import functional as F
from burnpy.nn import init
from burnpy.tensor import Tensor

if TYPE_CHECKING:
    from burnpy.backend.base import Backend
    from burnpy.backend.dtype import DTypeLike
    from burnpy.models.layers import AttentionMask


@dataclass(frozen=True)
class GPT2Config(PretrainedConfig):
    """transformers' ``GPT2Config`` fields that shape the model, with its defaults."""

    model_type: ClassVar[str] = "gpt2"
    attribute_map: ClassVar[dict[str, str]] = {
        "hidden_size": "n_embd", "max_position_embeddings": "n_positions",
        "num_attention_heads": "n_head", "num_hidden_layers": "n_layer"}

    vocab_size: int = 50257
    n_positions: int = 1024
    n_embd: int = 768
    n_layer: int = 12
    n_head: int = 12
    n_inner: int | None = None
    activation_function: str = "gelu_new"
    resid_pdrop: float = 0.1
    embd_pdrop: float = 0.1
    attn_pdrop: float = 0.1
    layer_norm_epsilon: float = 1e-5
    initializer_range: float = 0.02
    scale_attn_weights: bool = True
    scale_attn_by_inverse_layer_idx: bool = False
    reorder_and_upcast_attn: bool = False  # the same values (a mixed-precision detail)
    add_cross_attention: bool = False
    tie_word_embeddings: bool = True
    bos_token_id: int | None = 50256
    eos_token_id: int | list[int] | None = 50256
    pad_token_id: int | None = None


class Conv1D(nn.Module):
    """transformers' ``Conv1D``: a linear layer ``x @ weight + bias`` whose weight is stored
    ``[in, out]`` (GPT-2's layout)."""

    #: ``x @ weight`` multiplies by the weight as stored (``PreTrainedModel``'s load layout).
    weight_is_in_out: ClassVar[bool] = True

    def __init__(self, nf: int, nx: int, *, std: float = 0.02, backend: type[Backend] | None = None,
                 dtype: DTypeLike | None = None) -> None:
        self.nf, self.nx = nf, nx
        self.weight = init.normal_(Tensor.empty((nx, nf), backend=backend, dtype=dtype), 0.0, std)
        self.bias = Tensor.zeros((nf,), backend=backend, dtype=dtype)

    def forward(self, x: Tensor) -> Tensor:
        """``[..., nx]`` -> ``[..., nf]``."""
        return F.linear(x, self.weight.swap_dims(0, 1), self.bias)

    def extra_repr(self) -> str:
        return f"nf={self.nf}, nx={self.nx}"


class GPT2Attention(nn.Module):
    """Causal multi-head self-attention: ``c_attn`` gives queries, keys and values at once."""

    def __init__(self, config: GPT2Config, layer_idx: int, *, backend: type[Backend] | None,
                 dtype: DTypeLike | None) -> None:
        e = config.n_embd
        self.num_heads, self.head_dim, self.layer_idx = config.n_head, e // config.n_head, layer_idx
        self.scaling = self.head_dim ** -0.5 if config.scale_attn_weights else 1.0
        if config.scale_attn_by_inverse_layer_idx:
            self.scaling /= float(layer_idx + 1)
        self.attn_pdrop, self.resid_pdrop = config.attn_pdrop, config.resid_pdrop
        self.c_attn = Conv1D(3 * e, e, std=config.initializer_range, backend=backend, dtype=dtype)
        self.c_proj = Conv1D(e, e, std=config.initializer_range, backend=backend, dtype=dtype)

    def forward(self, x: Tensor, mask: AttentionMask, cache: DynamicCache | None) -> Tensor:
        """``[batch, seq, n_embd]`` -> same shape; with ``cache``, this layer's keys and values
        are appended to it and the queries see every cached position."""
        b, t, e = x.shape
        q, k, v = self.c_attn(x).reshape(b, t, 3 * self.num_heads, self.head_dim) \
            .swap_dims(1, 2).chunk(3, dim=1)
        if cache is not None:
            k, v = cache.update(k, v, self.layer_idx)
        y = F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask.mask, is_causal=mask.is_causal, scale=self.scaling,
            dropout_p=self.attn_pdrop if self.training else 0.0)
        out = self.c_proj(y.swap_dims(1, 2).reshape(b, t, e))
        return F.dropout(out, self.resid_pdrop, self.training)


class GPT2MLP(nn.Module):
    """``c_proj(act(c_fc(x)))`` with the config's activation."""

    def __init__(self, inner: int, config: GPT2Config, *, backend: type[Backend] | None,
                 dtype: DTypeLike | None) -> None:
        e, std = config.n_embd, config.initializer_range
        self.c_fc = Conv1D(inner, e, std=std, backend=backend, dtype=dtype)
        self.c_proj = Conv1D(e, inner, std=std, backend=backend, dtype=dtype)
        self.act = activation("GPT2Config", "activation_function", config.activation_function)
        self.resid_pdrop = config.resid_pdrop

    def forward(self, x: Tensor) -> Tensor:
        """``[..., n_embd]`` -> same shape."""
        return F.dropout(self.c_proj(self.act(self.c_fc(x))), self.resid_pdrop, self.training)


class GPT2Block(nn.Module):
    """``x + attn(ln_1(x))``, then ``x + mlp(ln_2(x))``."""

    def __init__(self, config: GPT2Config, layer_idx: int, *, backend: type[Backend] | None,
                 dtype: DTypeLike | None) -> None:
        e, eps = config.n_embd, config.layer_norm_epsilon
        inner = config.n_inner if config.n_inner is not None else 4 * e
        self.ln_1 = nn.LayerNorm(e, eps=eps, backend=backend, dtype=dtype)
        self.attn = GPT2Attention(config, layer_idx, backend=backend, dtype=dtype)
        self.ln_2 = nn.LayerNorm(e, eps=eps, backend=backend, dtype=dtype)
        self.mlp = GPT2MLP(inner, config, backend=backend, dtype=dtype)

    def forward(self, x: Tensor, mask: AttentionMask, cache: DynamicCache | None) -> Tensor:
        """``[batch, seq, n_embd]`` -> same shape."""
        x = x + self.attn(self.ln_1(x), mask, cache)
        return x + self.mlp(self.ln_2(x))


class GPT2Model(PreTrainedModel):
    """Token ids ``[batch, seq]`` -> hidden states ``[batch, seq, n_embd]``."""

    config_class = GPT2Config
    config: GPT2Config
    base_model_prefix = "transformer"
    keys_to_ignore_on_load = (r"\.attn\.masked_bias$", r"\.attn\.bias$")

    def __init__(self, config: GPT2Config, *, backend: type[Backend] | None = None,
                 dtype: DTypeLike | None = None) -> None:
        if config.add_cross_attention:
            raise ConfigError("GPT2Model: config field add_cross_attention is true; burnpy's "
                              "GPT-2 is a decoder without cross-attention")
        if config.n_embd % config.n_head:
            raise ConfigError(f"GPT2Model: config field n_embd ({config.n_embd}) is not a "
                              f"multiple of n_head ({config.n_head})")
        self.config = config
        e = config.n_embd
        self.wte = nn.Embedding(config.vocab_size, e, backend=backend, dtype=dtype)
        self.wpe = nn.Embedding(config.n_positions, e, backend=backend, dtype=dtype)
        for table in (self.wte.weight, self.wpe.weight):
            init.normal_(table, 0.0, config.initializer_range)
        self.h = [GPT2Block(config, i, backend=backend, dtype=dtype)
                  for i in range(config.n_layer)]
        self.ln_f = nn.LayerNorm(e, eps=config.layer_norm_epsilon, backend=backend, dtype=dtype)

    def forward(self, input_ids: Tensor, attention_mask: Tensor | None = None,
                position_ids: Tensor | None = None, past_key_values: DynamicCache | None = None,
                use_cache: bool = False,
                output_hidden_states: bool = False) -> BaseModelOutputWithPast:
        """transformers' ``GPT2Model.forward``: ``position_ids`` default to the positions after
        the cached ones; ``attention_mask [batch, past + seq]`` masks padded keys."""
        t = input_ids.shape[1]
        if use_cache and past_key_values is None:
            past_key_values = DynamicCache()
        past = 0 if past_key_values is None else past_key_values.get_seq_length()
        if position_ids is None:
            position_ids = Tensor.arange(past, past + t, backend=input_ids.backend,
                                         device=input_ids.device).reshape(1, t)
        x = self.wte(input_ids) + self.wpe(position_ids)
        x = F.dropout(x, self.config.embd_pdrop, self.training)
        mask = causal_mask("GPT2Model", x, t, past, attention_mask)
        hidden: list[Tensor] = []
        for block in self.h:
            hidden.append(x)
            x = block(x, mask, past_key_values)
        x = self.ln_f(x)
        return BaseModelOutputWithPast(
            x, past_key_values if use_cache else None,
            (*hidden, x) if output_hidden_states else None)


class GPT2LMHeadModel(GenerationMixin):
    """``GPT2Model`` and the output layer ``lm_head`` giving next-token logits."""

    config_class = GPT2Config
    config: GPT2Config
    base_model_prefix = "transformer"
    keys_to_ignore_on_load = GPT2Model.keys_to_ignore_on_load

    def __init__(self, config: GPT2Config, *, backend: type[Backend] | None = None,
                 dtype: DTypeLike | None = None) -> None:
        self.config = config
        self.transformer = GPT2Model(config, backend=backend, dtype=dtype)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False, backend=backend,
                                 dtype=dtype)
        if config.tie_word_embeddings:
            self.lm_head.weight = self.transformer.wte.weight
