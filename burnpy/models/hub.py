"""``from_pretrained``: the architecture a checkpoint's ``config.json`` names, built and loaded."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from burnpy.models.bert import BertForMaskedLM, BertForSequenceClassification, BertModel
from burnpy.models.gpt2 import GPT2LMHeadModel, GPT2Model
from burnpy.models.llama import LlamaForCausalLM, LlamaModel
from burnpy.models.modeling import ConfigError, PreTrainedModel, read_config
from burnpy.models.resnet import ResNetForImageClassification, ResNetModel
from burnpy.models.vit import ViTForImageClassification, ViTModel

if TYPE_CHECKING:
    from burnpy.backend.base import Backend
    from burnpy.backend.dtype import DTypeLike

#: transformers' class names burnpy implements, by the ``model_type`` they belong to; the
#: first of each (the head published checkpoints carry) is what a config naming no
#: ``architectures`` gets.
ARCHITECTURES: dict[str, tuple[type[PreTrainedModel], ...]] = {
    "bert": (BertForMaskedLM, BertModel, BertForSequenceClassification),
    "gpt2": (GPT2LMHeadModel, GPT2Model),
    "llama": (LlamaForCausalLM, LlamaModel),
    "resnet": (ResNetForImageClassification, ResNetModel),
    "vit": (ViTForImageClassification, ViTModel),
}


def architecture(config: dict[str, object]) -> type[PreTrainedModel]:
    """The class for a ``config.json``: its ``architectures`` entry when burnpy has it, else
    the first class of its ``model_type``; ``ConfigError`` names the field otherwise."""
    model_type = config.get("model_type")
    classes = ARCHITECTURES.get(model_type) if isinstance(model_type, str) else None
    if classes is None:
        raise ConfigError(f"from_pretrained: config field model_type is {model_type!r}, which "
                          f"burnpy does not implement (supported: {sorted(ARCHITECTURES)})")
    names = config.get("architectures") or []
    by_name = {cls.__name__: cls for cls in classes}
    if not isinstance(names, list):
        raise ConfigError(f"from_pretrained: config field architectures must be a list, got "
                          f"{names!r}")
    for name in names:
        if name in by_name:
            return by_name[name]
    if names:
        raise ConfigError(f"from_pretrained: config field architectures is {names}, which "
                          f"burnpy does not implement for model_type {model_type!r} "
                          f"(supported: {sorted(by_name)})")
    return classes[0]


def from_pretrained(directory: str | Path, *, backend: type[Backend] | None = None,
                    dtype: DTypeLike | None = None, strict: bool = True) -> PreTrainedModel:
    """The model saved in ``directory`` by transformers' ``save_pretrained`` (``config.json``
    and ``model.safetensors`` or its shards), of the architecture its config names, on
    ``backend`` in ``dtype`` (see ``PreTrainedModel.from_pretrained``)."""
    cls = architecture(read_config(directory))
    return cls.from_pretrained(directory, backend=backend, dtype=dtype, strict=strict)
