"""ResNet with transformers' names, configuration and outputs: ``ResNetModel`` (a 7x7 stride-2
convolution stem with BatchNorm and a max pool, stages of basic or bottleneck residual layers
with projection shortcuts where the shape changes, global average pooling) and
``ResNetForImageClassification`` (a linear classifier of the pooled features). BatchNorm uses
its running statistics in eval and, in train mode, the batch's, updating them as torch does."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import burnpy.nn as nn
from burnpy.backend.errors import ShapeError
from burnpy.models.classification import ClassificationConfig, classification_loss
from burnpy.models.layers import activation
from burnpy.models.modeling import ConfigError, PreTrainedModel
from burnpy.models.outputs import (
    BaseModelOutputWithPoolingAndNoAttention,
    ImageClassifierOutputWithNoAttention,
)
from burnpy.nn import init
from burnpy.tensor import Tensor

if TYPE_CHECKING:
    from collections.abc import Callable

    from burnpy.backend.base import Backend
    from burnpy.backend.dtype import DTypeLike

LAYER_TYPES = ("basic", "bottleneck")


@dataclass(frozen=True)
class ResNetConfig(ClassificationConfig):
    """transformers' ``ResNetConfig`` fields that shape the model, with its defaults
    (ResNet-50's)."""

    model_type: ClassVar[str] = "resnet"

    num_channels: int = 3
    embedding_size: int = 64
    hidden_sizes: tuple[int, ...] = (256, 512, 1024, 2048)
    depths: tuple[int, ...] = (3, 4, 6, 3)
    layer_type: str = "bottleneck"
    hidden_act: str = "relu"
    downsample_in_first_stage: bool = False
    downsample_in_bottleneck: bool = False

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> ResNetConfig:
        """As ``PretrainedConfig.from_dict``, with ``hidden_sizes`` and ``depths`` taken as
        lists of positive ints."""
        lists: dict[str, Any] = {}
        for field in ("hidden_sizes", "depths"):
            if field not in raw:
                continue
            value = raw[field]
            if not (isinstance(value, list | tuple) and value and all(
                    isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value)):
                raise ConfigError(f"{cls.__name__}: config field {field} must be a non-empty "
                                  f"list of positive ints, got {value!r}")
            lists[field] = tuple(value)
        return super().from_dict({**raw, **lists})

    def __post_init__(self) -> None:
        """Check ``layer_type`` and that ``depths`` has one entry per ``hidden_sizes``."""
        super().__post_init__()
        if self.layer_type not in LAYER_TYPES:
            raise ConfigError(f"ResNetConfig: config field layer_type is {self.layer_type!r}, "
                              f"not one of {LAYER_TYPES}")
        if len(self.depths) != len(self.hidden_sizes):
            raise ConfigError(f"ResNetConfig: config field depths has {len(self.depths)} "
                              f"stages, hidden_sizes {len(self.hidden_sizes)}")


class ResNetConvLayer(nn.Module):
    """A bias-free convolution (``convolution``, padded to keep the size at stride 1), a
    BatchNorm (``normalization``) and an activation (none for a residual branch's last)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int = 3,
                 stride: int = 1, act: str | None = "relu", *, backend: type[Backend] | None,
                 dtype: DTypeLike | None) -> None:
        self.convolution = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride,
                                     padding=kernel_size // 2, bias=False, backend=backend,
                                     dtype=dtype)
        init.kaiming_normal_(self.convolution.weight, mode="fan_out", nonlinearity="relu")
        self.normalization = nn.BatchNorm2d(out_channels, backend=backend, dtype=dtype)
        self.act: Callable[[Tensor], Tensor] | None = (
            None if act is None else activation("ResNetConfig", "hidden_act", act))

    def forward(self, x: Tensor) -> Tensor:
        """``[batch, in, h, w]`` -> ``[batch, out, h / stride, w / stride]``."""
        y = self.normalization(self.convolution(x))
        return y if self.act is None else self.act(y)


class ResNetEmbeddings(nn.Module):
    """The stem: a 7x7 stride-2 ``embedder`` convolution layer and a 3x3 stride-2 max pool."""

    def __init__(self, config: ResNetConfig, *, backend: type[Backend] | None,
                 dtype: DTypeLike | None) -> None:
        self.num_channels = config.num_channels
        self.embedder = ResNetConvLayer(config.num_channels, config.embedding_size, 7, 2,
                                        config.hidden_act, backend=backend, dtype=dtype)
        self.pooler = nn.MaxPool2d(3, stride=2, padding=1)

    def forward(self, pixel_values: Tensor) -> Tensor:
        """``[batch, num_channels, h, w]`` -> ``[batch, embedding_size, h / 4, w / 4]``."""
        if pixel_values.ndim != 4 or pixel_values.shape[1] != self.num_channels:
            raise ShapeError(f"ResNetEmbeddings: pixel_values must be [batch, "
                             f"{self.num_channels}, height, width], got "
                             f"{list(pixel_values.shape)}")
        return self.pooler(self.embedder(pixel_values))


class ResNetShortCut(nn.Module):
    """The projection of a residual to a layer's output shape: a 1x1 strided ``convolution``
    and a BatchNorm (``normalization``)."""

    def __init__(self, in_channels: int, out_channels: int, stride: int, *,
                 backend: type[Backend] | None, dtype: DTypeLike | None) -> None:
        self.convolution = nn.Conv2d(in_channels, out_channels, 1, stride=stride, bias=False,
                                     backend=backend, dtype=dtype)
        init.kaiming_normal_(self.convolution.weight, mode="fan_out", nonlinearity="relu")
        self.normalization = nn.BatchNorm2d(out_channels, backend=backend, dtype=dtype)

    def forward(self, x: Tensor) -> Tensor:
        """``[batch, in, h, w]`` -> ``[batch, out, h / stride, w / stride]``."""
        return self.normalization(self.convolution(x))


class ResNetResidualLayer(nn.Module):
    """``act(layer(x) + shortcut(x))``: the branch ``layer`` is two 3x3 convolutions (basic)
    or 1x1 reduce, 3x3, 1x1 expand by 4 (bottleneck, striding in the 3x3 unless
    ``downsample_in_bottleneck``); the shortcut projects only when channels or stride change.
    The branch's inner activations are ReLU, the output's the config's, as transformers'."""

    def __init__(self, config: ResNetConfig, in_channels: int, out_channels: int,
                 stride: int, *, backend: type[Backend] | None,
                 dtype: DTypeLike | None) -> None:
        kw: dict[str, Any] = {"backend": backend, "dtype": dtype}
        self.shortcut = (ResNetShortCut(in_channels, out_channels, stride, **kw)
                         if in_channels != out_channels or stride != 1 else None)
        if config.layer_type == "basic":
            self.layer = [ResNetConvLayer(in_channels, out_channels, 3, stride, **kw),
                          ResNetConvLayer(out_channels, out_channels, 3, 1, None, **kw)]
        else:
            reduced = out_channels // 4
            early = config.downsample_in_bottleneck
            self.layer = [ResNetConvLayer(in_channels, reduced, 1, stride if early else 1, **kw),
                          ResNetConvLayer(reduced, reduced, 3, 1 if early else stride, **kw),
                          ResNetConvLayer(reduced, out_channels, 1, 1, None, **kw)]
        self.act = activation("ResNetConfig", "hidden_act", config.hidden_act)

    def forward(self, x: Tensor) -> Tensor:
        """``[batch, in, h, w]`` -> ``[batch, out, h / stride, w / stride]``."""
        y = x
        for conv in self.layer:
            y = conv(y)
        return self.act(y + (x if self.shortcut is None else self.shortcut(x)))


class ResNetStage(nn.Module):
    """``depth`` residual layers (``layers.N``), the first changing channels and stride."""

    def __init__(self, config: ResNetConfig, in_channels: int, out_channels: int, stride: int,
                 depth: int, *, backend: type[Backend] | None, dtype: DTypeLike | None) -> None:
        kw: dict[str, Any] = {"backend": backend, "dtype": dtype}
        self.layers = [ResNetResidualLayer(config, in_channels, out_channels, stride, **kw)] + [
            ResNetResidualLayer(config, out_channels, out_channels, 1, **kw)
            for _ in range(depth - 1)]

    def forward(self, x: Tensor) -> Tensor:
        """``[batch, in, h, w]`` -> ``[batch, out, h / stride, w / stride]``."""
        for layer in self.layers:
            x = layer(x)
        return x


class ResNetEncoder(nn.Module):
    """The ``stages``: the first keeps the stem's resolution unless
    ``downsample_in_first_stage``, each later one halves it."""

    def __init__(self, config: ResNetConfig, *, backend: type[Backend] | None,
                 dtype: DTypeLike | None) -> None:
        widths = (config.embedding_size, *config.hidden_sizes)
        self.stages = [
            ResNetStage(config, widths[i], widths[i + 1],
                        2 if i > 0 or config.downsample_in_first_stage else 1, depth,
                        backend=backend, dtype=dtype)
            for i, depth in enumerate(config.depths)]

    def forward(self, x: Tensor) -> tuple[Tensor, ...]:
        """The input and every stage's output, in order."""
        states = [x]
        for stage in self.stages:
            states.append(stage(states[-1]))
        return tuple(states)


class ResNetModel(PreTrainedModel):
    """Images ``[batch, channels, h, w]`` -> the last feature map ``[batch, hidden_sizes[-1],
    h / 32, w / 32]`` and its global average ``[batch, hidden_sizes[-1], 1, 1]``."""

    config_class = ResNetConfig
    config: ResNetConfig
    base_model_prefix = "resnet"

    def __init__(self, config: ResNetConfig, *, backend: type[Backend] | None = None,
                 dtype: DTypeLike | None = None) -> None:
        self.config = config
        self.embedder = ResNetEmbeddings(config, backend=backend, dtype=dtype)
        self.encoder = ResNetEncoder(config, backend=backend, dtype=dtype)
        self.pooler = nn.AdaptiveAvgPool2d((1, 1))

    def forward(self, pixel_values: Tensor,
                output_hidden_states: bool = False) -> BaseModelOutputWithPoolingAndNoAttention:
        """transformers' ``ResNetModel.forward``: ``hidden_states`` are the stem's output and
        each stage's. ``pixel_values`` are cast to the model's dtype and backend."""
        like = self.embedder.embedder.convolution.weight
        if pixel_values.backend is not like.backend or pixel_values.device != like.device:
            pixel_values = pixel_values.to_backend(like.backend, like.device)
        if pixel_values.dtype != like.dtype:
            pixel_values = pixel_values.cast(like.dtype)
        states = self.encoder(self.embedder(pixel_values))
        return BaseModelOutputWithPoolingAndNoAttention(
            states[-1], self.pooler(states[-1]), states if output_hidden_states else None)


class ResNetForImageClassification(PreTrainedModel):
    """``ResNetModel`` and a ``classifier`` of its flattened pooled features: ``Flatten`` then
    ``Linear`` (the features themselves when ``num_labels`` is 0), saved as ``classifier.1``."""

    config_class = ResNetConfig
    config: ResNetConfig
    base_model_prefix = "resnet"

    def __init__(self, config: ResNetConfig, *, backend: type[Backend] | None = None,
                 dtype: DTypeLike | None = None) -> None:
        self.config = config
        self.resnet = ResNetModel(config, backend=backend, dtype=dtype)
        head: nn.Module = nn.Identity()
        if config.num_labels > 0:
            head = nn.Linear(config.hidden_sizes[-1], config.num_labels, backend=backend,
                             dtype=dtype)
        self.classifier = nn.Sequential(nn.Flatten(), head)

    def forward(self, pixel_values: Tensor, labels: Tensor | None = None,
                output_hidden_states: bool = False) -> ImageClassifierOutputWithNoAttention:
        """``logits [batch, num_labels]`` and, given ``labels``, the loss of the config's
        ``problem_type`` (see ``classification_loss``)."""
        out = self.resnet(pixel_values, output_hidden_states)
        logits = self.classifier(out.pooler_output)
        loss = None if labels is None else classification_loss(
            "ResNetForImageClassification", self.config, logits, labels)
        return ImageClassifierOutputWithNoAttention(logits, loss, out.hidden_states)
