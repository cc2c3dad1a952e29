"""Neural-network building blocks: ``Module`` and its layers, initializers (``init``), losses
and ``burnpy.nn.functional`` (torch's signatures)."""

from burnpy.nn import functional, init, utils
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
from burnpy.nn.layers_extra import (
    CELU,
    ELU,
    GLU,
    SELU,
    AdaptiveAvgPool3d,
    AdaptiveMaxPool1d,
    AdaptiveMaxPool2d,
    AvgPool3d,
    CircularPad1d,
    CircularPad2d,
    CircularPad3d,
    ConstantPad1d,
    ConstantPad2d,
    ConstantPad3d,
    CosineSimilarity,
    Fold,
    Hardshrink,
    Hardswish,
    Hardtanh,
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
    LocalResponseNorm,
    LogSigmoid,
    LPPool1d,
    LPPool2d,
    MaxPool3d,
    Mish,
    PairwiseDistance,
    PixelShuffle,
    PixelUnshuffle,
    PReLU,
    ReflectionPad1d,
    ReflectionPad2d,
    ReflectionPad3d,
    ReLU6,
    ReplicationPad1d,
    ReplicationPad2d,
    ReplicationPad3d,
    RReLU,
    Softmin,
    Softshrink,
    Softsign,
    Tanhshrink,
    Threshold,
    Unfold,
    ZeroPad1d,
    ZeroPad2d,
    ZeroPad3d,
)
from burnpy.nn.linear import Embedding, Linear
from burnpy.nn.loss_modules import (
    BCELoss,
    BCEWithLogitsLoss,
    CosineEmbeddingLoss,
    CrossEntropyLoss,
    CTCLoss,
    GaussianNLLLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MarginRankingLoss,
    MSELoss,
    NLLLoss,
    PoissonNLLLoss,
    SmoothL1Loss,
    TripletMarginLoss,
)
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
from burnpy.nn.rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
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
# torch.nn's further layers and the loss modules (issue 16).
__all__ += [
    "AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AvgPool3d", "BCELoss",
    "BCEWithLogitsLoss", "CELU", "CTCLoss", "CircularPad1d", "CircularPad2d", "CircularPad3d",
    "ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "CosineEmbeddingLoss", "CosineSimilarity",
    "CrossEntropyLoss", "ELU", "Fold", "GLU", "GaussianNLLLoss", "Hardshrink", "Hardswish",
    "Hardtanh", "HuberLoss", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "KLDivLoss",
    "L1Loss", "LPPool1d", "LPPool2d", "LocalResponseNorm", "LogSigmoid", "MSELoss",
    "MarginRankingLoss", "MaxPool3d", "Mish", "NLLLoss", "PReLU", "PairwiseDistance",
    "PixelShuffle", "PixelUnshuffle", "PoissonNLLLoss", "RReLU", "ReLU6", "ReflectionPad1d",
    "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
    "ReplicationPad3d", "SELU", "SmoothL1Loss", "Softmin", "Softshrink", "Softsign", "Tanhshrink",
    "Threshold", "TripletMarginLoss", "Unfold", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d",
]
# Recurrent layers and torch.nn.utils (issue 29).
__all__ += ["GRU", "LSTM", "RNN", "GRUCell", "LSTMCell", "RNNBase", "RNNCell", "RNNCellBase",
            "utils"]
