"""Pretrained architectures with transformers' names, configurations and outputs, loaded from a
Hugging Face checkpoint directory: ``from_pretrained(directory, backend=B)``."""

from burnpy.models.bert import (
    BertConfig,
    BertForMaskedLM,
    BertForSequenceClassification,
    BertModel,
)
from burnpy.models.cache import DynamicCache
from burnpy.models.classification import ClassificationConfig
from burnpy.models.generation import GenerationMixin
from burnpy.models.gpt2 import GPT2Config, GPT2LMHeadModel, GPT2Model
from burnpy.models.hub import ARCHITECTURES, from_pretrained
from burnpy.models.llama import LlamaConfig, LlamaForCausalLM, LlamaModel
from burnpy.models.modeling import ConfigError, PretrainedConfig, PreTrainedModel
from burnpy.models.outputs import (
    BaseModelOutputWithPast,
    BaseModelOutputWithPooling,
    BaseModelOutputWithPoolingAndNoAttention,
    CausalLMOutputWithPast,
    ImageClassifierOutput,
    ImageClassifierOutputWithNoAttention,
    MaskedLMOutput,
    SequenceClassifierOutput,
)
from burnpy.models.quantize import QuantizedLinear, load_quantized, quantize
from burnpy.models.resnet import ResNetConfig, ResNetForImageClassification, ResNetModel
from burnpy.models.vit import ViTConfig, ViTForImageClassification, ViTModel

__all__ = [
    "ARCHITECTURES", "BaseModelOutputWithPast", "BaseModelOutputWithPooling",
    "BaseModelOutputWithPoolingAndNoAttention", "BertConfig", "BertForMaskedLM",
    "BertForSequenceClassification", "BertModel", "CausalLMOutputWithPast",
    "ClassificationConfig", "ConfigError", "DynamicCache", "GPT2Config", "GPT2LMHeadModel",
    "GPT2Model", "GenerationMixin", "ImageClassifierOutput",
    "ImageClassifierOutputWithNoAttention", "LlamaConfig", "LlamaForCausalLM", "LlamaModel",
    "MaskedLMOutput", "PreTrainedModel", "PretrainedConfig", "QuantizedLinear", "ResNetConfig",
    "ResNetForImageClassification", "ResNetModel", "SequenceClassifierOutput", "ViTConfig",
    "ViTForImageClassification", "ViTModel", "from_pretrained", "load_quantized", "quantize",
]
