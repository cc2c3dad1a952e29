"""What the models return, with transformers' class and field names (``out.logits``,
``out.last_hidden_state``, ``out.hidden_states``, ``out.past_key_values``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from burnpy.models.cache import DynamicCache
    from burnpy.tensor import Tensor


@dataclass
class BaseModelOutputWithPast:
    """A base model's output: the final hidden states ``[batch, seq, hidden]``, the cache when
    ``use_cache``, and with ``output_hidden_states`` the embeddings and every layer's output
    (the last one after the final norm)."""

    last_hidden_state: Tensor
    past_key_values: DynamicCache | None = None
    hidden_states: tuple[Tensor, ...] | None = None


@dataclass
class CausalLMOutputWithPast:
    """A causal LM's output: next-token ``logits [batch, seq, vocab]``, the mean shifted
    cross entropy when ``labels`` were given, the cache and the hidden states as above."""

    logits: Tensor
    loss: Tensor | None = None
    past_key_values: DynamicCache | None = None
    hidden_states: tuple[Tensor, ...] | None = None
