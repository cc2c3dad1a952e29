"""The Vision Transformer with transformers' names, configuration and outputs: ``ViTModel``
(non-overlapping patches embedded by a strided convolution, a class token and learned position
embeddings, pre-norm encoder layers, a final LayerNorm and a tanh pooler of the class token)
and ``ViTForImageClassification`` (a linear classifier on the class token). Modules carry the
names checkpoints are saved with (``encoder.layer.N.attention.attention.query``...)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import burnpy.nn as nn
from burnpy.backend.errors import ShapeError
from burnpy.models.classification import ClassificationConfig, classification_loss
from burnpy.models.layers import activation
from burnpy.models.modeling import ConfigError, PreTrainedModel
from burnpy.models.outputs import BaseModelOutputWithPooling, ImageClassifierOutput
from burnpy.nn import functional as F
from burnpy.nn import init
from burnpy.tensor import Tensor

if TYPE_CHECKING:
    from burnpy.backend.base import Backend
    from burnpy.backend.dtype import DTypeLike


def _pair(owner: str, field: str, value: Any) -> tuple[int, int]:
    """An ``int`` or a pair of ints from ``config.json`` as ``(height, width)``."""
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value, value
    if (isinstance(value, list | tuple) and len(value) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value)):
        return value[0], value[1]
    raise ConfigError(f"{owner}: config field {field} must be a positive int or a pair of "
                      f"them, got {value!r}")


@dataclass(frozen=True)
class ViTConfig(ClassificationConfig):
    """transformers' ``ViTConfig`` fields that shape the model, with its defaults
    (``image_size`` and ``patch_size`` are an int or ``[height, width]``)."""

    model_type: ClassVar[str] = "vit"

    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.0
    attention_probs_dropout_prob: float = 0.0
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-12
    image_size: int | tuple[int, int] = 224
    patch_size: int | tuple[int, int] = 16
    num_channels: int = 3
    qkv_bias: bool = True
    encoder_stride: int = 16
    pooler_output_size: int | None = None
    pooler_act: str = "tanh"

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> ViTConfig:
        """As ``PretrainedConfig.from_dict``, with ``image_size`` and ``patch_size`` taken as
        an int or a pair of ints."""
        sizes: dict[str, Any] = {f: _pair(cls.__name__, f, raw[f])
                                 for f in ("image_size", "patch_size") if f in raw}
        rest = {k: v for k, v in raw.items() if k not in sizes}
        return dataclasses.replace(super().from_dict(rest), **sizes)

    @property
    def image_hw(self) -> tuple[int, int]:
        """``image_size`` as ``(height, width)``."""
        return _pair("ViTConfig", "image_size", self.image_size)

    @property
    def patch_hw(self) -> tuple[int, int]:
        """``patch_size`` as ``(height, width)``."""
        return _pair("ViTConfig", "patch_size", self.patch_size)


class ViTPatchEmbeddings(nn.Module):
    """``[batch, channels, h, w]`` -> one embedding per patch ``[batch, patches, hidden]``: a
    convolution whose kernel and stride are the patch size."""

    def __init__(self, config: ViTConfig, *, backend: type[Backend] | None,
                 dtype: DTypeLike | None) -> None:
        (ih, iw), (ph, pw) = config.image_hw, config.patch_hw
        self.num_channels = config.num_channels
        self.num_patches = (ih // ph) * (iw // pw)
        self.projection = nn.Conv2d(config.num_channels, config.hidden_size, (ph, pw),
                                    stride=(ph, pw), backend=backend, dtype=dtype)

    def forward(self, pixel_values: Tensor) -> Tensor:
        """The patches in row-major order, each projected to ``hidden_size``."""
        if pixel_values.ndim != 4 or pixel_values.shape[1] != self.num_channels:
            raise ShapeError(f"ViTPatchEmbeddings: pixel_values must be [batch, "
                             f"{self.num_channels}, height, width], got "
                             f"{list(pixel_values.shape)}")
        return self.projection(pixel_values).flatten(2).swap_dims(1, 2)


class ViTEmbeddings(nn.Module):
    """The class token followed by the patch embeddings, plus the position embeddings
    (resized bicubically to the image with ``interpolate_pos_encoding``)."""

    def __init__(self, config: ViTConfig, *, backend: type[Backend] | None,
                 dtype: DTypeLike | None) -> None:
        h, std = config.hidden_size, config.initializer_range
        self.cls_token = init.trunc_normal_(
            Tensor.empty((1, 1, h), backend=backend, dtype=dtype), 0.0, std)
        self.patch_embeddings = ViTPatchEmbeddings(config, backend=backend, dtype=dtype)
        self.position_embeddings = init.trunc_normal_(Tensor.empty(
            (1, self.patch_embeddings.num_patches + 1, h), backend=backend, dtype=dtype), 0.0, std)
        self.image_size, self.patch_size = config.image_hw, config.patch_hw
        self.hidden_dropout_prob = config.hidden_dropout_prob

    def interpolate_pos_encoding(self, embeddings: Tensor, height: int, width: int) -> Tensor:
        """The position embeddings for an image of ``height x width`` pixels: as trained when
        it has as many patches and is square, else the patch positions' square grid resized
        bicubically to the image's patch grid (transformers' rule, after DINO)."""
        num_patches = embeddings.shape[1] - 1
        num_positions = self.position_embeddings.shape[1] - 1
        if num_patches == num_positions and height == width:
            return self.position_embeddings
        dim = embeddings.shape[-1]
        side = int(num_positions ** 0.5)
        patch_pos = self.position_embeddings[:, 1:].reshape(1, side, side, dim).permute(0, 3, 1, 2)
        patch_pos = F.interpolate(
            patch_pos, size=(height // self.patch_size[0], width // self.patch_size[1]),
            mode="bicubic", align_corners=False)
        patch_pos = patch_pos.permute(0, 2, 3, 1).reshape(1, -1, dim)
        return Tensor.cat([self.position_embeddings[:, :1], patch_pos], dim=1)

    def forward(self, pixel_values: Tensor, interpolate_pos_encoding: bool = False) -> Tensor:
        """``[batch, channels, h, w]`` -> ``[batch, 1 + patches, hidden]``."""
        batch, _, height, width = pixel_values.shape
        patches = self.patch_embeddings(pixel_values)
        cls = self.cls_token.expand(batch, 1, patches.shape[-1])
        x = Tensor.cat([cls, patches], dim=1)
        if interpolate_pos_encoding:
            x = x + self.interpolate_pos_encoding(x, height, width)
        else:
            if (height, width) != self.image_size:
                raise ShapeError(f"ViTEmbeddings: the image is {height}x{width}, the model's "
                                 f"image_size is {self.image_size[0]}x{self.image_size[1]} "
                                 "(pass interpolate_pos_encoding=True to resize the position "
                                 "embeddings)")
            x = x + self.position_embeddings
        return F.dropout(x, self.hidden_dropout_prob, self.training)


class ViTSelfAttention(nn.Module):
    """Bidirectional multi-head attention of the queries, keys and values ``query``, ``key``,
    ``value`` project from the layer's input."""

    def __init__(self, config: ViTConfig, *, backend: type[Backend] | None,
                 dtype: DTypeLike | None) -> None:
        h, bias = config.hidden_size, config.qkv_bias
        self.num_heads, self.head_dim = config.num_attention_heads, h // config.num_attention_heads
        self.query = nn.Linear(h, h, bias=bias, backend=backend, dtype=dtype)
        self.key = nn.Linear(h, h, bias=bias, backend=backend, dtype=dtype)
        self.value = nn.Linear(h, h, bias=bias, backend=backend, dtype=dtype)
        self.dropout_prob = config.attention_probs_dropout_prob

    def forward(self, x: Tensor) -> Tensor:
        """``[batch, seq, hidden]`` -> every head's output, concatenated, same shape."""
        b, t, h = x.shape
        q, k, v = (proj(x).reshape(b, t, self.num_heads, self.head_dim).swap_dims(1, 2)
                   for proj in (self.query, self.key, self.value))
        y = F.scaled_dot_product_attention(
            q, k, v, scale=self.head_dim ** -0.5,
            dropout_p=self.dropout_prob if self.training else 0.0)
        return y.swap_dims(1, 2).reshape(b, t, h)


class ViTSelfOutput(nn.Module):
    """The attention's output projection ``dense``."""

    def __init__(self, config: ViTConfig, *, backend: type[Backend] | None,
                 dtype: DTypeLike | None) -> None:
        h = config.hidden_size
        self.dense = nn.Linear(h, h, backend=backend, dtype=dtype)

    def forward(self, x: Tensor) -> Tensor:
        """``[..., hidden]`` -> same shape."""
        return self.dense(x)


class ViTAttention(nn.Module):
    """Self-attention (``attention``) and its output projection (``output``)."""

    def __init__(self, config: ViTConfig, *, backend: type[Backend] | None,
                 dtype: DTypeLike | None) -> None:
        self.attention = ViTSelfAttention(config, backend=backend, dtype=dtype)
        self.output = ViTSelfOutput(config, backend=backend, dtype=dtype)

    def forward(self, x: Tensor) -> Tensor:
        """``[batch, seq, hidden]`` -> same shape."""
        return self.output(self.attention(x))


class ViTIntermediate(nn.Module):
    """The MLP's widening projection ``dense`` and the config's activation."""

    def __init__(self, config: ViTConfig, *, backend: type[Backend] | None,
                 dtype: DTypeLike | None) -> None:
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size, backend=backend,
                               dtype=dtype)
        self.act = activation("ViTConfig", "hidden_act", config.hidden_act)

    def forward(self, x: Tensor) -> Tensor:
        """``[..., hidden]`` -> ``[..., intermediate_size]``."""
        return self.act(self.dense(x))


class ViTOutput(nn.Module):
    """The MLP's narrowing projection ``dense``."""

    def __init__(self, config: ViTConfig, *, backend: type[Backend] | None,
                 dtype: DTypeLike | None) -> None:
        self.dense = nn.Linear(config.intermediate_size, config.hidden_size, backend=backend,
                               dtype=dtype)

    def forward(self, x: Tensor) -> Tensor:
        """``[..., intermediate_size]`` -> ``[..., hidden]``."""
        return self.dense(x)


class ViTLayer(nn.Module):
    """A pre-norm encoder layer: ``x + attention(layernorm_before(x))``, then
    ``x + output(intermediate(layernorm_after(x)))``, each branch dropped out."""

    def __init__(self, config: ViTConfig, *, backend: type[Backend] | None,
                 dtype: DTypeLike | None) -> None:
        h, eps = config.hidden_size, config.layer_norm_eps
        self.attention = ViTAttention(config, backend=backend, dtype=dtype)
        self.intermediate = ViTIntermediate(config, backend=backend, dtype=dtype)
        self.output = ViTOutput(config, backend=backend, dtype=dtype)
        self.layernorm_before = nn.LayerNorm(h, eps=eps, backend=backend, dtype=dtype)
        self.layernorm_after = nn.LayerNorm(h, eps=eps, backend=backend, dtype=dtype)
        self.hidden_dropout_prob = config.hidden_dropout_prob

    def forward(self, x: Tensor) -> Tensor:
        """``[batch, seq, hidden]`` -> same shape."""
        p, train = self.hidden_dropout_prob, self.training
        x = x + F.dropout(self.attention(self.layernorm_before(x)), p, train)
        return x + F.dropout(self.output(self.intermediate(self.layernorm_after(x))), p, train)


class ViTEncoder(nn.Module):
    """The stack of ``num_hidden_layers`` layers (``layer.N``)."""

    def __init__(self, config: ViTConfig, *, backend: type[Backend] | None,
                 dtype: DTypeLike | None) -> None:
        self.layer = [ViTLayer(config, backend=backend, dtype=dtype)
                      for _ in range(config.num_hidden_layers)]

    def forward(self, x: Tensor) -> tuple[Tensor, ...]:
        """The input and every layer's output, in order."""
        states = [x]
        for layer in self.layer:
            states.append(layer(states[-1]))
        return tuple(states)


class ViTPooler(nn.Module):
    """The class token's final state through ``dense`` and the config's ``pooler_act``."""

    def __init__(self, config: ViTConfig, *, backend: type[Backend] | None,
                 dtype: DTypeLike | None) -> None:
        out = config.pooler_output_size or config.hidden_size
        self.dense = nn.Linear(config.hidden_size, out, backend=backend, dtype=dtype)
        self.act = activation("ViTConfig", "pooler_act", config.pooler_act)

    def forward(self, x: Tensor) -> Tensor:
        """``[batch, seq, hidden]`` -> ``[batch, pooler_output_size]``."""
        return self.act(self.dense(x[:, 0]))


def _init_linears(module: nn.Module, std: float) -> None:
    """transformers' ViT initialization of every linear layer: weights normal with
    ``initializer_range``, biases zero."""
    for m in module.modules():
        if isinstance(m, nn.Linear):
            init.normal_(m.weight, 0.0, std)
            if m.bias is not None:
                init.zeros_(m.bias)


class ViTModel(PreTrainedModel):
    """Images ``[batch, channels, h, w]`` -> hidden states ``[batch, 1 + patches, hidden]``
    (the class token first) and, with the pooler, the pooled class token."""

    config_class = ViTConfig
    config: ViTConfig
    base_model_prefix = "vit"

    def __init__(self, config: ViTConfig, *, backend: type[Backend] | None = None,
                 dtype: DTypeLike | None = None, add_pooling_layer: bool = True) -> None:
        if config.hidden_size % config.num_attention_heads:
            raise ConfigError(f"ViTModel: config field hidden_size ({config.hidden_size}) is "
                              f"not a multiple of num_attention_heads "
                              f"({config.num_attention_heads})")
        self.config = config
        self.embeddings = ViTEmbeddings(config, backend=backend, dtype=dtype)
        self.encoder = ViTEncoder(config, backend=backend, dtype=dtype)
        self.layernorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps,
                                      backend=backend, dtype=dtype)
        self.pooler = ViTPooler(config, backend=backend, dtype=dtype) if add_pooling_layer \
            else None
        _init_linears(self, config.initializer_range)

    def forward(self, pixel_values: Tensor, output_hidden_states: bool = False,
                interpolate_pos_encoding: bool = False) -> BaseModelOutputWithPooling:
        """transformers' ``ViTModel.forward``: ``hidden_states`` are the embeddings and each
        layer's output (the last before the final LayerNorm). ``pixel_values`` are cast to the
        model's dtype and backend, as transformers casts them."""
        like = self.embeddings.cls_token
        if pixel_values.backend is not like.backend or pixel_values.device != like.device:
            pixel_values = pixel_values.to_backend(like.backend, like.device)
        if pixel_values.dtype != like.dtype:
            pixel_values = pixel_values.cast(like.dtype)
        states = self.encoder(self.embeddings(pixel_values, interpolate_pos_encoding))
        x = self.layernorm(states[-1])
        return BaseModelOutputWithPooling(
            x, self.pooler(x) if self.pooler is not None else None,
            states if output_hidden_states else None)


class ViTForImageClassification(PreTrainedModel):
    """``ViTModel`` without its pooler and a linear ``classifier`` of the final class token
    (the class token itself when ``num_labels`` is 0)."""

    config_class = ViTConfig
    config: ViTConfig
    base_model_prefix = "vit"

    def __init__(self, config: ViTConfig, *, backend: type[Backend] | None = None,
                 dtype: DTypeLike | None = None) -> None:
        self.config = config
        self.vit = ViTModel(config, backend=backend, dtype=dtype, add_pooling_layer=False)
        self.classifier: nn.Module = nn.Identity()
        if config.num_labels > 0:
            self.classifier = nn.Linear(config.hidden_size, config.num_labels, backend=backend,
                                        dtype=dtype)
            _init_linears(self.classifier, config.initializer_range)

    def forward(self, pixel_values: Tensor, labels: Tensor | None = None,
                output_hidden_states: bool = False,
                interpolate_pos_encoding: bool = False) -> ImageClassifierOutput:
        """``logits [batch, num_labels]`` and, given ``labels``, the loss of the config's
        ``problem_type`` (see ``classification_loss``)."""
        out = self.vit(pixel_values, output_hidden_states, interpolate_pos_encoding)
        logits = self.classifier(out.last_hidden_state[:, 0])
        loss = None if labels is None else classification_loss(
            "ViTForImageClassification", self.config, logits, labels)
        return ImageClassifierOutput(logits, loss, out.hidden_states)
