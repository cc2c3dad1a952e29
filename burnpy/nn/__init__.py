"""Neural-network building blocks: ``Module`` and its layers, initializers (``init``), losses
and ``burnpy.nn.functional`` (torch's signatures)."""

from burnpy.nn import functional, init
from burnpy.nn.activation import (
    GELU,
    Flatten,
    Hardsigmoid,
    Identity,
    LeakyReLU,
    LogSoftmax,
    ReLU,
    Sigmoid,
    SiLU,
    Softmax,
    Softplus,
    Tanh,
)
from burnpy.nn.attention import MultiHeadAttention, MultiheadAttention
from burnpy.nn.container import Sequential
from burnpy.nn.conv import Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d
from burnpy.nn.dropout import Dropout
from burnpy.nn.linear import Embedding, Linear
from burnpy.nn.module import IncompatibleKeys, Module, ParamSlot, StateDictError, rename_keys
from burnpy.nn.norm import BatchNorm1d, BatchNorm2d, GroupNorm, LayerNorm, RMSNorm
from burnpy.nn.pool import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AvgPool1d,
    AvgPool2d,
    MaxPool1d,
    MaxPool2d,
)
from burnpy.nn.transformer import TransformerEncoderLayer

__all__ = [
    "GELU", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AvgPool1d", "AvgPool2d", "BatchNorm1d",
    "BatchNorm2d", "Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d", "Dropout",
    "Embedding", "Flatten", "GroupNorm", "Hardsigmoid", "Identity", "IncompatibleKeys",
    "LayerNorm", "LeakyReLU", "Linear", "LogSoftmax", "MaxPool1d", "MaxPool2d", "Module",
    "MultiHeadAttention", "MultiheadAttention", "ParamSlot", "RMSNorm", "ReLU", "Sequential",
    "SiLU", "Sigmoid", "Softmax", "Softplus", "StateDictError", "Tanh", "TransformerEncoderLayer",
    "functional", "init", "rename_keys",
]
