"""BERT with transformers' names, configuration and outputs: ``BertModel`` (word, position and
token type embeddings, post-norm encoder layers of bidirectional self-attention and an MLP, a
first-token pooler), ``BertForMaskedLM`` (the ``cls.predictions`` head, its decoder tied to the
word embeddings) and ``BertForSequenceClassification`` (a linear classifier on the pooled
output, its loss chosen by ``problem_type``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import burnpy.nn as nn
from burnpy.backend.errors import InvalidArgumentError, KindError, ShapeError
from burnpy.models.classification import ClassificationConfig, classification_loss, problem_type
from burnpy.models.layers import activation, key_padding_mask
from burnpy.models.modeling import ConfigError, PreTrainedModel
from burnpy.models.outputs import (
    BaseModelOutputWithPooling,
    MaskedLMOutput,
    SequenceClassifierOutput,
)
from burnpy.nn import functional as F
from burnpy.nn import init
from burnpy.tensor import Tensor

if TYPE_CHECKING:
    from burnpy.backend.base import Backend
    from burnpy.backend.data import TensorData
    from burnpy.backend.dtype import DTypeLike
    from burnpy.nn.module import IncompatibleKeys

@dataclass(frozen=True)
class BertConfig(ClassificationConfig):
    """transformers' ``BertConfig`` fields that shape the model, with its defaults and label
    fields. An older file's ``position_embedding_type`` must be ``absolute``."""

    model_type: ClassVar[str] = "bert"

    vocab_size: int = 30522
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-12
    position_embedding_type: str = "absolute"
    is_decoder: bool = False
    add_cross_attention: bool = False
    classifier_dropout: float | None = None
    tie_word_embeddings: bool = True
    pad_token_id: int | None = 0

    def __post_init__(self) -> None:
        """Refuse, naming the field, what burnpy's BERT does not compute; resolve the label
        fields (``ClassificationConfig``)."""
        activation("BertConfig", "hidden_act", self.hidden_act)
        if self.position_embedding_type != "absolute":
            raise ConfigError(f"BertConfig: config field position_embedding_type is "
                              f"{self.position_embedding_type!r}; burnpy's BERT has absolute "
                              "position embeddings only")
        if self.is_decoder or self.add_cross_attention:
            field = "is_decoder" if self.is_decoder else "add_cross_attention"
            raise ConfigError(f"BertConfig: config field {field} is true; burnpy's BERT is a "
                              "bidirectional encoder without cross-attention")
        if self.hidden_size % self.num_attention_heads:
            raise ConfigError(f"BertConfig: config field hidden_size ({self.hidden_size}) is "
                              f"not a multiple of num_attention_heads "
                              f"({self.num_attention_heads})")
        super().__post_init__()


def _ids(owner: str, name: str, value: Tensor, like: Tensor, batch: int, seq: int) -> Tensor:
    """``value``, an int tensor ``[batch or 1, seq]``, on ``like``'s backend and device."""
    if not isinstance(value, Tensor) or value.kind != "int":
        kind = value.dtype if isinstance(value, Tensor) else type(value).__name__
        raise KindError(f"{owner}: {name} must be an int Tensor, got {kind}")
    if value.shape not in ((batch, seq), (1, seq)):
        raise ShapeError(f"{owner}: {name} must be [batch, seq] = [{batch}, {seq}] or "
                         f"[1, {seq}], got {list(value.shape)}")
    if value.backend is not like.backend or value.device != like.device:
        value = value.to_backend(like.backend, like.device)
    return value


class BertEmbeddings(nn.Module):
    """``LayerNorm(word + token type + position embeddings)``; ``position_ids`` and
    ``token_type_ids`` are non-persistent buffers ``[1, max_position_embeddings]`` as
    transformers' (the positions, and zeros: the default token types)."""

    position_ids: Tensor
    token_type_ids: Tensor

    def __init__(self, config: BertConfig, *, backend: type[Backend] | None,
                 dtype: DTypeLike | None) -> None:
        e = config.hidden_size
        self.word_embeddings = nn.Embedding(config.vocab_size, e, config.pad_token_id,
                                            backend=backend, dtype=dtype)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, e,
                                                backend=backend, dtype=dtype)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, e, backend=backend,
                                                  dtype=dtype)
        for table in (self.word_embeddings, self.position_embeddings,
                      self.token_type_embeddings):
            init.normal_(table.weight, 0.0, config.initializer_range)
        self.LayerNorm = nn.LayerNorm(e, eps=config.layer_norm_eps, backend=backend, dtype=dtype)
        self.dropout_p = config.hidden_dropout_prob
        n = config.max_position_embeddings
        positions = Tensor.arange(n, backend=backend).reshape(1, n)
        self.register_buffer("position_ids", positions, persistent=False)
        self.register_buffer("token_type_ids", positions.zeros_like(), persistent=False)

    def forward(self, input_ids: Tensor | None, token_type_ids: Tensor | None,
                position_ids: Tensor | None, inputs_embeds: Tensor | None) -> Tensor:
        """Ids ``[batch, seq]`` (or ``inputs_embeds [batch, seq, hidden]``) -> ``[batch, seq,
        hidden]``; positions default to ``0..seq-1``, token types to 0."""
        owner = "BertModel"
        if inputs_embeds is None:
            if input_ids is None:
                raise InvalidArgumentError(f"{owner}: give input_ids or inputs_embeds")
            if input_ids.ndim != 2:
                raise ShapeError(f"{owner}: input_ids must be [batch, seq], got "
                                 f"{list(input_ids.shape)}")
            inputs_embeds = self.word_embeddings(input_ids)
        elif input_ids is not None or inputs_embeds.ndim != 3:
            raise ShapeError(f"{owner}: give either input_ids or inputs_embeds [batch, seq, "
                             f"hidden], got both or {list(inputs_embeds.shape)}")
        b, t = inputs_embeds.shape[:2]
        limit = self.position_ids.shape[1]
        if position_ids is None:
            if t > limit:
                raise ShapeError(f"{owner}: {t} positions exceed max_position_embeddings "
                                 f"({limit})")
            position_ids = self.position_ids[:, :t]
        else:
            position_ids = _ids(owner, "position_ids", position_ids, self.position_ids, b, t)
        if token_type_ids is None:  # the buffer's zeros, as transformers' gather of them
            token_type_ids = self.token_type_ids[:, :1].expand(b, t)
        else:
            token_type_ids = _ids(owner, "token_type_ids", token_type_ids, self.token_type_ids,
                                  b, t)
        x = (inputs_embeds + self.token_type_embeddings(token_type_ids)
             + self.position_embeddings(position_ids))
        return F.dropout(self.LayerNorm(x), self.dropout_p, self.training)


class BertSelfAttention(nn.Module):
    """Multi-head self-attention over every unmasked key: ``query``, ``key``, ``value``."""

    def __init__(self, config: BertConfig, *, backend: type[Backend] | None,
                 dtype: DTypeLike | None) -> None:
        e = config.hidden_size
        self.num_attention_heads = config.num_attention_heads
        self.attention_head_size = e // config.num_attention_heads
        self.query = nn.Linear(e, e, backend=backend, dtype=dtype)
        self.key = nn.Linear(e, e, backend=backend, dtype=dtype)
        self.value = nn.Linear(e, e, backend=backend, dtype=dtype)
        self.dropout_p = config.attention_probs_dropout_prob

    def forward(self, x: Tensor, mask: Tensor | None) -> Tensor:
        """``[batch, seq, hidden]`` and a bool key mask ``[batch, 1, 1, seq]`` (True: attend)
        -> the heads' outputs ``[batch, seq, hidden]``."""
        b, t, e = x.shape
        shape = (b, t, self.num_attention_heads, self.attention_head_size)
        q = self.query(x).reshape(shape).swap_dims(1, 2)
        k = self.key(x).reshape(shape).swap_dims(1, 2)
        v = self.value(x).reshape(shape).swap_dims(1, 2)
        y = F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, dropout_p=self.dropout_p if self.training else 0.0)
        return y.swap_dims(1, 2).reshape(b, t, e)


class BertSelfOutput(nn.Module):
    """``LayerNorm(dense(x) + residual)``: the attention's projection, post-norm."""

    def __init__(self, width: int, config: BertConfig, *, backend: type[Backend] | None,
                 dtype: DTypeLike | None) -> None:
        e = config.hidden_size
        self.dense = nn.Linear(width, e, backend=backend, dtype=dtype)
        self.LayerNorm = nn.LayerNorm(e, eps=config.layer_norm_eps, backend=backend, dtype=dtype)
        self.dropout_p = config.hidden_dropout_prob

    def forward(self, x: Tensor, residual: Tensor) -> Tensor:
        """``[..., width]`` and ``residual [..., hidden]`` -> ``[..., hidden]``."""
        h = F.dropout(self.dense(x), self.dropout_p, self.training)
        return self.LayerNorm(h + residual)


class BertOutput(BertSelfOutput):
    """``LayerNorm(dense(x) + residual)``: the MLP's down projection, post-norm."""


class BertAttention(nn.Module):
    """Self-attention (``self``) and its output projection (``output``)."""

    def __init__(self, config: BertConfig, *, backend: type[Backend] | None,
                 dtype: DTypeLike | None) -> None:
        self.self = BertSelfAttention(config, backend=backend, dtype=dtype)
        self.output = BertSelfOutput(config.hidden_size, config, backend=backend, dtype=dtype)

    def forward(self, x: Tensor, mask: Tensor | None) -> Tensor:
        """``[batch, seq, hidden]`` -> same shape."""
        return self.output(self.self(x, mask), x)


class BertIntermediate(nn.Module):
    """``act(dense(x))``: the MLP's up projection with the config's ``hidden_act``."""

    def __init__(self, config: BertConfig, *, backend: type[Backend] | None,
                 dtype: DTypeLike | None) -> None:
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size, backend=backend,
                               dtype=dtype)
        self.intermediate_act_fn = activation("BertConfig", "hidden_act", config.hidden_act)

    def forward(self, x: Tensor) -> Tensor:
        """``[..., hidden]`` -> ``[..., intermediate_size]``."""
        return self.intermediate_act_fn(self.dense(x))


class BertLayer(nn.Module):
    """One encoder layer: attention, then the MLP, each with a residual and a LayerNorm."""

    def __init__(self, config: BertConfig, *, backend: type[Backend] | None,
                 dtype: DTypeLike | None) -> None:
        self.attention = BertAttention(config, backend=backend, dtype=dtype)
        self.intermediate = BertIntermediate(config, backend=backend, dtype=dtype)
        self.output = BertOutput(config.intermediate_size, config, backend=backend, dtype=dtype)

    def forward(self, x: Tensor, mask: Tensor | None) -> Tensor:
        """``[batch, seq, hidden]`` -> same shape."""
        h = self.attention(x, mask)
        return self.output(self.intermediate(h), h)


class BertEncoder(nn.Module):
    """The stack of ``num_hidden_layers`` layers (``layer``)."""

    def __init__(self, config: BertConfig, *, backend: type[Backend] | None,
                 dtype: DTypeLike | None) -> None:
        self.layer = [BertLayer(config, backend=backend, dtype=dtype)
                      for _ in range(config.num_hidden_layers)]

    def forward(self, x: Tensor, mask: Tensor | None) -> list[Tensor]:
        """``[batch, seq, hidden]`` -> the input and every layer's output."""
        states = [x]
        for layer in self.layer:
            states.append(layer(states[-1], mask))
        return states


class BertPooler(nn.Module):
    """``tanh(dense(first token's hidden state))``."""

    def __init__(self, config: BertConfig, *, backend: type[Backend] | None,
                 dtype: DTypeLike | None) -> None:
        e = config.hidden_size
        self.dense = nn.Linear(e, e, backend=backend, dtype=dtype)

    def forward(self, x: Tensor) -> Tensor:
        """``[batch, seq, hidden]`` -> ``[batch, hidden]``."""
        return self.dense(x[:, 0]).tanh()


class BertPreTrainedModel(PreTrainedModel):
    """What the BERT classes share: the config, the ``bert`` prefix, and the names older
    checkpoints used (``position_ids`` buffers, ignored; ``LayerNorm.gamma``/``beta``, read as
    ``weight``/``bias``), as transformers loads them."""

    config_class = BertConfig
    config: BertConfig
    base_model_prefix = "bert"
    keys_to_ignore_on_load: ClassVar[tuple[str, ...]] = (r"(^|\.)position_ids$",)

    def load_checkpoint(self, state: dict[str, TensorData],
                        strict: bool = True) -> IncompatibleKeys:
        """``PreTrainedModel.load_checkpoint`` after renaming TensorFlow-era LayerNorm keys."""
        renamed = {_legacy_name(k): v for k, v in state.items()}
        return super().load_checkpoint(renamed, strict=strict)


def _legacy_name(key: str) -> str:
    """``...LayerNorm.gamma`` -> ``...LayerNorm.weight``, ``...LayerNorm.beta`` -> ``.bias``."""
    if key.endswith("LayerNorm.gamma"):
        return key.removesuffix("gamma") + "weight"
    if key.endswith("LayerNorm.beta"):
        return key.removesuffix("beta") + "bias"
    return key


class BertModel(BertPreTrainedModel):
    """Token ids ``[batch, seq]`` -> hidden states ``[batch, seq, hidden]`` and, with the
    pooler (``add_pooling_layer``), the pooled first token ``[batch, hidden]``."""

    def __init__(self, config: BertConfig, add_pooling_layer: bool = True, *,
                 backend: type[Backend] | None = None, dtype: DTypeLike | None = None) -> None:
        self.config = config
        self.embeddings = BertEmbeddings(config, backend=backend, dtype=dtype)
        self.encoder = BertEncoder(config, backend=backend, dtype=dtype)
        self.pooler = (BertPooler(config, backend=backend, dtype=dtype) if add_pooling_layer
                       else None)

    def forward(self, input_ids: Tensor | None = None, attention_mask: Tensor | None = None,
                token_type_ids: Tensor | None = None, position_ids: Tensor | None = None,
                inputs_embeds: Tensor | None = None,
                output_hidden_states: bool = False) -> BaseModelOutputWithPooling:
        """transformers' ``BertModel.forward``: ``attention_mask [batch, seq]`` (1 for a real
        token, 0 for padding) hides padded keys from every query; ``hidden_states`` are the
        embeddings and each layer's output."""
        x = self.embeddings(input_ids, token_type_ids, position_ids, inputs_embeds)
        mask = None if attention_mask is None else key_padding_mask(
            "BertModel", attention_mask, x, x.shape[1])
        states = self.encoder(x, mask)
        h = states[-1]
        return BaseModelOutputWithPooling(
            h, None if self.pooler is None else self.pooler(h),
            tuple(states) if output_hidden_states else None)


class BertPredictionHeadTransform(nn.Module):
    """``LayerNorm(act(dense(x)))`` before the MLM decoder."""

    def __init__(self, config: BertConfig, *, backend: type[Backend] | None,
                 dtype: DTypeLike | None) -> None:
        e = config.hidden_size
        self.dense = nn.Linear(e, e, backend=backend, dtype=dtype)
        self.transform_act_fn = activation("BertConfig", "hidden_act", config.hidden_act)
        self.LayerNorm = nn.LayerNorm(e, eps=config.layer_norm_eps, backend=backend, dtype=dtype)

    def forward(self, x: Tensor) -> Tensor:
        """``[..., hidden]`` -> same shape."""
        return self.LayerNorm(self.transform_act_fn(self.dense(x)))


class BertLMPredictionHead(nn.Module):
    """``decoder(transform(x))``. With ``tie_word_embeddings`` the decoder's bias is this
    head's ``bias`` (one tensor, saved as ``cls.predictions.bias``); without, transformers
    ties neither, and ``bias`` is a parameter the forward does not read."""

    def __init__(self, config: BertConfig, *, backend: type[Backend] | None,
                 dtype: DTypeLike | None) -> None:
        self.bias = Tensor.zeros((config.vocab_size,), backend=backend, dtype=dtype)
        self.transform = BertPredictionHeadTransform(config, backend=backend, dtype=dtype)
        self.decoder = nn.Linear(config.hidden_size, config.vocab_size, backend=backend,
                                 dtype=dtype)
        if config.tie_word_embeddings:
            self.decoder.bias = self.bias

    def forward(self, x: Tensor) -> Tensor:
        """``[..., hidden]`` -> logits ``[..., vocab]``."""
        return self.decoder(self.transform(x))


class BertOnlyMLMHead(nn.Module):
    """The masked LM head (``predictions``)."""

    def __init__(self, config: BertConfig, *, backend: type[Backend] | None,
                 dtype: DTypeLike | None) -> None:
        self.predictions = BertLMPredictionHead(config, backend=backend, dtype=dtype)

    def forward(self, x: Tensor) -> Tensor:
        """``[..., hidden]`` -> logits ``[..., vocab]``."""
        return self.predictions(x)


class BertForMaskedLM(BertPreTrainedModel):
    """``BertModel`` without its pooler and the masked LM head ``cls``, whose decoder weight
    is the word embedding table (and its bias ``cls.predictions.bias``) unless
    ``tie_word_embeddings`` is false. A pretraining checkpoint's pooler and next-sentence
    head (``BertForPreTraining``'s, as published BERT checkpoints hold) are ignored."""

    keys_to_ignore_on_load = (*BertPreTrainedModel.keys_to_ignore_on_load,
                              r"^bert\.pooler\.", r"^cls\.seq_relationship\.")

    def __init__(self, config: BertConfig, *, backend: type[Backend] | None = None,
                 dtype: DTypeLike | None = None) -> None:
        self.config = config
        self.bert = BertModel(config, add_pooling_layer=False, backend=backend, dtype=dtype)
        self.cls = BertOnlyMLMHead(config, backend=backend, dtype=dtype)
        if config.tie_word_embeddings:
            self.cls.predictions.decoder.weight = self.bert.embeddings.word_embeddings.weight

    def forward(self, input_ids: Tensor | None = None, attention_mask: Tensor | None = None,
                token_type_ids: Tensor | None = None, position_ids: Tensor | None = None,
                inputs_embeds: Tensor | None = None, labels: Tensor | None = None,
                output_hidden_states: bool = False) -> MaskedLMOutput:
        """transformers' ``BertForMaskedLM.forward``: logits ``[batch, seq, vocab]`` and,
        with ``labels [batch, seq]`` (-100 where ignored), their mean cross entropy."""
        out = self.bert(input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds,
                        output_hidden_states)
        logits = self.cls(out.last_hidden_state)
        loss = None
        if labels is not None:
            v = self.config.vocab_size
            if labels.shape != logits.shape[:-1]:
                raise ShapeError(f"BertForMaskedLM: labels must be [batch, seq] = "
                                 f"{list(logits.shape[:-1])}, got {list(labels.shape)}")
            loss = F.cross_entropy(logits.reshape(-1, v), labels.reshape(-1), ignore_index=-100)
        return MaskedLMOutput(logits, loss, out.hidden_states)


class BertForSequenceClassification(BertPreTrainedModel):
    """``BertModel`` and ``classifier``, a linear layer from the pooled output to
    ``num_labels`` logits (after dropout of ``classifier_dropout``, else
    ``hidden_dropout_prob``)."""

    def __init__(self, config: BertConfig, *, backend: type[Backend] | None = None,
                 dtype: DTypeLike | None = None) -> None:
        self.config = config
        self.num_labels = config.num_labels
        self.bert = BertModel(config, backend=backend, dtype=dtype)
        self.dropout_p = (config.classifier_dropout if config.classifier_dropout is not None
                          else config.hidden_dropout_prob)
        self.classifier = nn.Linear(config.hidden_size, self.num_labels, backend=backend,
                                    dtype=dtype)

    def problem_type(self, labels: Tensor) -> str:
        """The loss ``labels`` get: the config's ``problem_type``, else transformers' choice
        from the labels."""
        return problem_type(self.config, labels)

    def forward(self, input_ids: Tensor | None = None, attention_mask: Tensor | None = None,
                token_type_ids: Tensor | None = None, position_ids: Tensor | None = None,
                inputs_embeds: Tensor | None = None, labels: Tensor | None = None,
                output_hidden_states: bool = False) -> SequenceClassifierOutput:
        """transformers' ``BertForSequenceClassification.forward``: logits ``[batch,
        num_labels]`` and, with ``labels``, the loss of ``problem_type``."""
        out = self.bert(input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds,
                        output_hidden_states)
        assert out.pooler_output is not None
        pooled = F.dropout(out.pooler_output, self.dropout_p, self.training)
        logits = self.classifier(pooled)
        loss = None if labels is None else classification_loss(
            "BertForSequenceClassification", self.config, logits, labels)
        return SequenceClassifierOutput(logits, loss, out.hidden_states)

