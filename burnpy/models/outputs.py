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


@dataclass
class BaseModelOutputWithPooling:
    """An encoder's output (BERT, ViT): the final hidden states ``[batch, seq, hidden]``, the
    pooled first token when the model has a pooler, and with ``output_hidden_states`` the
    embeddings and every layer's output."""

    last_hidden_state: Tensor
    pooler_output: Tensor | None = None
    hidden_states: tuple[Tensor, ...] | None = None
    attentions: tuple[Tensor, ...] | None = None


@dataclass
class BaseModelOutputWithPoolingAndNoAttention:
    """A convolutional backbone's output (ResNet): the last feature map ``[batch, channels,
    h, w]``, the globally pooled features ``[batch, channels, 1, 1]`` and every stage's map."""

    last_hidden_state: Tensor
    pooler_output: Tensor
    hidden_states: tuple[Tensor, ...] | None = None


@dataclass
class MaskedLMOutput:
    """A masked LM's output: ``logits [batch, seq, vocab]`` and, given ``labels`` (-100 where
    ignored), the mean cross entropy."""

    logits: Tensor
    loss: Tensor | None = None
    hidden_states: tuple[Tensor, ...] | None = None
    attentions: tuple[Tensor, ...] | None = None


@dataclass
class SequenceClassifierOutput:
    """A sequence classifier's output: ``logits [batch, num_labels]`` and, given ``labels``,
    the loss of the config's ``problem_type`` (regression, single- or multi-label)."""

    logits: Tensor
    loss: Tensor | None = None
    hidden_states: tuple[Tensor, ...] | None = None
    attentions: tuple[Tensor, ...] | None = None


@dataclass
class ImageClassifierOutput:
    """An image classifier's output (ViT): ``logits [batch, num_labels]``, the loss given
    ``labels``, and the hidden states as above."""

    logits: Tensor
    loss: Tensor | None = None
    hidden_states: tuple[Tensor, ...] | None = None
    attentions: tuple[Tensor, ...] | None = None


@dataclass
class ImageClassifierOutputWithNoAttention:
    """A convolutional image classifier's output (ResNet): ``logits [batch, num_labels]``, the
    loss given ``labels``, and every stage's feature map."""

    logits: Tensor
    loss: Tensor | None = None
    hidden_states: tuple[Tensor, ...] | None = None
