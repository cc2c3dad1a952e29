"""Llama with transformers' names, configuration and outputs: ``LlamaModel`` (token embedding,
pre-norm decoder layers of grouped-query self-attention with rotary position embeddings and a
SwiGLU MLP, RMSNorm) and ``LlamaForCausalLM`` (its output layer, tied to the embedding when the
config says so). RoPE takes the config's ``rope_parameters`` (or an older file's
``rope_scaling``) of type ``default`` or ``llama3``."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

import burnpy.nn as nn
from burnpy.backend.dtype import DType
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
class LlamaConfig(PretrainedConfig):
    """transformers' ``LlamaConfig`` fields that shape the model, with its defaults."""

    model_type: ClassVar[str] = "llama"

    vocab_size: int = 32000
    hidden_size: int = 4096
    intermediate_size: int = 11008
    num_hidden_layers: int = 32
    num_attention_heads: int = 32
    num_key_value_heads: int | None = None
    head_dim: int | None = None
    hidden_act: str = "silu"
    max_position_embeddings: int = 2048
    initializer_range: float = 0.02
    rms_norm_eps: float = 1e-6
    rope_parameters: dict[str, Any] | None = None
    rope_scaling: dict[str, Any] | None = None  # an older file's name for rope_parameters
    rope_theta: float = 10000.0  # an older file's place for rope_parameters["rope_theta"]
    attention_bias: bool = False
    attention_dropout: float = 0.0
    mlp_bias: bool = False
    tie_word_embeddings: bool = False
    bos_token_id: int | None = 1
    eos_token_id: int | list[int] | None = 2
    pad_token_id: int | None = None

    @property
    def kv_heads(self) -> int:
        """Key/value heads (``num_key_value_heads``, all heads when None)."""
        return self.num_key_value_heads or self.num_attention_heads

    @property
    def head_size(self) -> int:
        """Width of one head (``head_dim``, ``hidden_size / num_attention_heads`` when None)."""
        return self.head_dim or self.hidden_size // self.num_attention_heads


def _rope_field(params: dict[str, Any], name: str, field: str) -> float:
    value = params.get(name)
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise ConfigError(f"LlamaConfig: config field {field}.{name} must be a number for "
                          f"rope_type 'llama3', got {value!r}")
    return float(value)


def rope_inv_freq(config: LlamaConfig, dtype: DType) -> np.ndarray:
    """RoPE's inverse frequencies ``[head_dim / 2]`` in ``dtype`` (float32 or float64), as
    transformers computes them for rope_type ``default`` and ``llama3``; ``ConfigError``
    names any other setting."""
    field = "rope_parameters" if config.rope_parameters is not None else "rope_scaling"
    params = config.rope_parameters or config.rope_scaling or {}
    if not isinstance(params, dict):
        raise ConfigError(f"LlamaConfig: config field {field} must be an object, got {params!r}")
    rope_type = params.get("rope_type", params.get("type", "default"))
    if params.get("partial_rotary_factor", 1.0) != 1.0:
        raise ConfigError(f"LlamaConfig: config field {field}.partial_rotary_factor is "
                          f"{params['partial_rotary_factor']!r}; burnpy rotates whole heads")
    theta = params.get("rope_theta", config.rope_theta)
    dt = dtype.numpy
    dim = config.head_size
    inv = dt.type(1.0) / (dt.type(theta) ** (np.arange(0, dim, 2).astype(dt) / dt.type(dim)))
    if rope_type == "default":
        return inv
    if rope_type != "llama3":
        raise ConfigError(f"LlamaConfig: config field {field}.rope_type is {rope_type!r}, which "
                          "burnpy does not implement (supported: 'default', 'llama3')")
    factor = _rope_field(params, "factor", field)
    low = _rope_field(params, "low_freq_factor", field)
    high = _rope_field(params, "high_freq_factor", field)
    context = _rope_field(params, "original_max_position_embeddings", field)
    wavelen = dt.type(2 * math.pi) / inv
    scaled = np.where(wavelen > context / low, inv / dt.type(factor), inv)
    smooth = (context / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * scaled / dt.type(factor) + smooth * scaled
    medium = ~(wavelen < context / high) & ~(wavelen > context / low)
    return np.where(medium, smoothed, scaled).astype(dt)


class LlamaRMSNorm(nn.Module):
    """``weight * x / sqrt(mean(x^2) + eps)``, normalized in at least float32."""

    def __init__(self, hidden_size: int, eps: float = 1e-6, *,
                 backend: type[Backend] | None = None, dtype: DTypeLike | None = None) -> None:
        self.hidden_size, self.variance_epsilon = hidden_size, eps
        self.weight = Tensor.ones((hidden_size,), backend=backend, dtype=dtype)

    def forward(self, x: Tensor) -> Tensor:
        """``[..., hidden_size]`` -> same shape."""
        h = x if x.dtype.itemsize >= 4 else x.float()
        normed = F.rms_norm(h, (self.hidden_size,), eps=self.variance_epsilon)
        return self.weight * normed.cast(x.dtype)

    def extra_repr(self) -> str:
        return f"({self.hidden_size},), eps={self.variance_epsilon}"


def _rotate_half(x: Tensor) -> Tensor:
    first, second = x.chunk(2, dim=-1)
    return Tensor.cat([-second, first], -1)


class LlamaAttention(nn.Module):
    """Grouped-query self-attention with RoPE applied to the queries and keys."""

    def __init__(self, config: LlamaConfig, layer_idx: int, *, backend: type[Backend] | None,
                 dtype: DTypeLike | None) -> None:
        h, kv, d, e = (config.num_attention_heads, config.kv_heads, config.head_size,
                       config.hidden_size)
        if h % kv:
            raise ConfigError(f"LlamaConfig: config field num_key_value_heads ({kv}) does not "
                              f"divide num_attention_heads ({h})")
        self.num_heads, self.num_key_value_heads, self.head_dim = h, kv, d
        self.layer_idx, self.attention_dropout = layer_idx, config.attention_dropout
        bias = config.attention_bias
        self.q_proj = nn.Linear(e, h * d, bias=bias, backend=backend, dtype=dtype)
        self.k_proj = nn.Linear(e, kv * d, bias=bias, backend=backend, dtype=dtype)
        self.v_proj = nn.Linear(e, kv * d, bias=bias, backend=backend, dtype=dtype)
        self.o_proj = nn.Linear(h * d, e, bias=bias, backend=backend, dtype=dtype)

    def forward(self, x: Tensor, rope: tuple[Tensor, Tensor], mask: AttentionMask,
                cache: DynamicCache | None) -> Tensor:
        """``[batch, seq, hidden]`` -> same shape; with ``cache``, this layer's keys and values
        are appended to it and the queries see every cached position."""
        b, t, _ = x.shape
        d = self.head_dim
        q = self.q_proj(x).reshape(b, t, self.num_heads, d).swap_dims(1, 2)
        k = self.k_proj(x).reshape(b, t, self.num_key_value_heads, d).swap_dims(1, 2)
        v = self.v_proj(x).reshape(b, t, self.num_key_value_heads, d).swap_dims(1, 2)
        cos, sin = rope
        q, k = q * cos + _rotate_half(q) * sin, k * cos + _rotate_half(k) * sin
        if cache is not None:
            k, v = cache.update(k, v, self.layer_idx)
        kv = self.num_key_value_heads
        if t == 1 and mask.mask is None and kv != self.num_heads and not self.training:
            # a decoding step: each key/value head's query heads attend as one group, so the
            # cached keys and values are read in place instead of repeated per query head
            groups = self.num_heads // kv
            y = F.scaled_dot_product_attention(
                q.reshape(b, kv, groups, 1, d), k.unsqueeze(2), v.unsqueeze(2), scale=d ** -0.5)
            return self.o_proj(y.reshape(b, 1, self.num_heads * d))
        y = F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask.mask, is_causal=mask.is_causal, scale=d ** -0.5,
            enable_gqa=self.num_heads != self.num_key_value_heads,
            dropout_p=self.attention_dropout if self.training else 0.0)
        return self.o_proj(y.swap_dims(1, 2).reshape(b, t, self.num_heads * d))


class LlamaMLP(nn.Module):
    """SwiGLU: ``down_proj(act(gate_proj(x)) * up_proj(x))``."""

    def __init__(self, config: LlamaConfig, *, backend: type[Backend] | None,
                 dtype: DTypeLike | None) -> None:
        e, i, bias = config.hidden_size, config.intermediate_size, config.mlp_bias
        self.gate_proj = nn.Linear(e, i, bias=bias, backend=backend, dtype=dtype)
        self.up_proj = nn.Linear(e, i, bias=bias, backend=backend, dtype=dtype)
        self.down_proj = nn.Linear(i, e, bias=bias, backend=backend, dtype=dtype)
        self.act_fn = activation("LlamaConfig", "hidden_act", config.hidden_act)

    def forward(self, x: Tensor) -> Tensor:
        """``[..., hidden]`` -> same shape."""
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Module):
    """``x + self_attn(input_layernorm(x))``, then ``x + mlp(post_attention_layernorm(x))``."""

    def __init__(self, config: LlamaConfig, layer_idx: int, *, backend: type[Backend] | None,
                 dtype: DTypeLike | None) -> None:
        e, eps = config.hidden_size, config.rms_norm_eps
        self.self_attn = LlamaAttention(config, layer_idx, backend=backend, dtype=dtype)
        self.mlp = LlamaMLP(config, backend=backend, dtype=dtype)
        self.input_layernorm = LlamaRMSNorm(e, eps, backend=backend, dtype=dtype)
        self.post_attention_layernorm = LlamaRMSNorm(e, eps, backend=backend, dtype=dtype)

    def forward(self, x: Tensor, rope: tuple[Tensor, Tensor], mask: AttentionMask,
                cache: DynamicCache | None) -> Tensor:
        """``[batch, seq, hidden]`` -> same shape."""
        x = x + self.self_attn(self.input_layernorm(x), rope, mask, cache)
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaModel(PreTrainedModel):
    """Token ids ``[batch, seq]`` -> hidden states ``[batch, seq, hidden_size]``."""

    config_class = LlamaConfig
    config: LlamaConfig
    base_model_prefix = "model"
    keys_to_ignore_on_load = (r"rotary_emb\.inv_freq$",)

    def __init__(self, config: LlamaConfig, *, backend: type[Backend] | None = None,
                 dtype: DTypeLike | None = None) -> None:
        self.config = config
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size,
                                         padding_idx=config.pad_token_id, backend=backend,
                                         dtype=dtype)
        init.normal_(self.embed_tokens.weight, 0.0, config.initializer_range)
        self.layers = [LlamaDecoderLayer(config, i, backend=backend, dtype=dtype)
                       for i in range(config.num_hidden_layers)]
        self.norm = LlamaRMSNorm(config.hidden_size, config.rms_norm_eps, backend=backend,
                                 dtype=dtype)
        self._inv_freq = {dt: rope_inv_freq(config, dt) for dt in (DType.float32, DType.float64)}

    def rotary(self, x: Tensor, position_ids: Tensor) -> tuple[Tensor, Tensor]:
        """RoPE's ``(cos, sin) [batch or 1, 1, seq, head_dim]`` of ``position_ids``, computed in
        at least float32 and cast to ``x``'s dtype."""
        dt = DType.float64 if x.dtype is DType.float64 else DType.float32
        inv = Tensor.from_data(self._inv_freq[dt], backend=x.backend, device=x.device)
        angles = position_ids.cast(dt).unsqueeze(-1) * inv
        both = Tensor.cat([angles, angles], -1).unsqueeze(1)
        return both.cos().cast(x.dtype), both.sin().cast(x.dtype)

    def forward(self, input_ids: Tensor, attention_mask: Tensor | None = None,
                position_ids: Tensor | None = None, past_key_values: DynamicCache | None = None,
                use_cache: bool = False,
                output_hidden_states: bool = False) -> BaseModelOutputWithPast:
        """transformers' ``LlamaModel.forward``: ``position_ids`` default to the positions after
        the cached ones; ``attention_mask [batch, past + seq]`` masks padded keys."""
        t = input_ids.shape[1]
        if use_cache and past_key_values is None:
            past_key_values = DynamicCache()
        past = 0 if past_key_values is None else past_key_values.get_seq_length()
        if position_ids is None:
            position_ids = Tensor.arange(past, past + t, backend=input_ids.backend,
                                         device=input_ids.device).reshape(1, t)
        x = self.embed_tokens(input_ids)
        rope = self.rotary(x, position_ids)
        mask = causal_mask("LlamaModel", x, t, past, attention_mask)
        hidden: list[Tensor] = []
        for layer in self.layers:
            hidden.append(x)
            x = layer(x, rope, mask, past_key_values)
        x = self.norm(x)
        return BaseModelOutputWithPast(
            x, past_key_values if use_cache else None,
            (*hidden, x) if output_hidden_states else None)


class LlamaForCausalLM(GenerationMixin):
    """``LlamaModel`` and the output layer ``lm_head`` giving next-token logits."""

    config_class = LlamaConfig
    config: LlamaConfig
    base_model_prefix = "model"
    keys_to_ignore_on_load = LlamaModel.keys_to_ignore_on_load

    def __init__(self, config: LlamaConfig, *, backend: type[Backend] | None = None,
                 dtype: DTypeLike | None = None) -> None:
        self.config = config
        self.model = LlamaModel(config, backend=backend, dtype=dtype)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False,
                                 backend=backend, dtype=dtype)
        if config.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight
