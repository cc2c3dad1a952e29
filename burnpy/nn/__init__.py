"""Neural-network building blocks: ``Module`` and its layers, one module per topic (the
topics of ``burnpy.nn.functional``: activation, attention, conv, distance, dropout, embedding,
layout, linear, loss, norm, padding, pool, vision; plus container, rnn and transformer),
initializers (``init``), ``utils`` and ``functional`` (torch's signatures)."""

from burnpy.nn import functional, init, utils
from burnpy.nn.activation import (
    CELU,
    ELU,
    GELU,
    GLU,
    SELU,
    Hardshrink,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    LeakyReLU,
    LogSigmoid,
    LogSoftmax,
    Mish,
    PReLU,
    ReLU,
    ReLU6,
    RReLU,
    Sigmoid,
    SiLU,
    Softmax,
    Softmin,
    Softplus,
    Softshrink,
    Softsign,
    Tanh,
    Tanhshrink,
    Threshold,
)
from burnpy.nn.attention import (
    MultiHeadAttention,
    MultiheadAttention,
)
from burnpy.nn.container import (
    ModuleDict,
    ModuleList,
    ParameterDict,
    ParameterList,
    Sequential,
)
from burnpy.nn.conv import (
    Conv1d,
    Conv2d,
    Conv3d,
    ConvTranspose1d,
    ConvTranspose2d,
    ConvTranspose3d,
)
from burnpy.nn.distance import (
    CosineSimilarity,
    PairwiseDistance,
)
from burnpy.nn.dropout import (
    AlphaDropout,
    Dropout,
    Dropout1d,
    Dropout2d,
    Dropout3d,
    FeatureAlphaDropout,
)
from burnpy.nn.embedding import (
    Embedding,
    EmbeddingBag,
)
from burnpy.nn.layout import (
    Flatten,
    Fold,
    Unfold,
)
from burnpy.nn.linear import (
    Bilinear,
    Identity,
    Linear,
)
from burnpy.nn.loss import (
    AdaptiveLogSoftmaxWithLoss,
    BCELoss,
    BCEWithLogitsLoss,
    CosineEmbeddingLoss,
    CrossEntropyLoss,
    CTCLoss,
    GaussianNLLLoss,
    HingeEmbeddingLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    LinearCrossEntropyLoss,
    MarginRankingLoss,
    MSELoss,
    MultiLabelMarginLoss,
    MultiLabelSoftMarginLoss,
    MultiMarginLoss,
    NLLLoss,
    PoissonNLLLoss,
    SmoothL1Loss,
    SoftMarginLoss,
    TripletMarginLoss,
    TripletMarginWithDistanceLoss,
)
from burnpy.nn.module import (
    IncompatibleKeys,
    Module,
    Parameter,
    ParamSlot,
    StateDictError,
    rename_keys,
)
from burnpy.nn.norm import (
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    GroupNorm,
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
    LayerNorm,
    LocalResponseNorm,
    RMSNorm,
    SyncBatchNorm,
)
from burnpy.nn.padding import (
    CircularPad1d,
    CircularPad2d,
    CircularPad3d,
    ConstantPad1d,
    ConstantPad2d,
    ConstantPad3d,
    ReflectionPad1d,
    ReflectionPad2d,
    ReflectionPad3d,
    ReplicationPad1d,
    ReplicationPad2d,
    ReplicationPad3d,
    ZeroPad1d,
    ZeroPad2d,
    ZeroPad3d,
)
from burnpy.nn.pool import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AdaptiveAvgPool3d,
    AdaptiveMaxPool1d,
    AdaptiveMaxPool2d,
    AvgPool1d,
    AvgPool2d,
    AvgPool3d,
    LPPool1d,
    LPPool2d,
    MaxPool1d,
    MaxPool2d,
    MaxPool3d,
)
from burnpy.nn.rnn import (
    GRU,
    LSTM,
    RNN,
    GRUCell,
    LSTMCell,
    RNNBase,
    RNNCell,
    RNNCellBase,
)
from burnpy.nn.transformer import (
    TransformerEncoderLayer,
)
from burnpy.nn.vision import (
    PixelShuffle,
    PixelUnshuffle,
)

__all__ = [
    "AlphaDropout", "Dropout1d", "Dropout2d", "Dropout3d", "FeatureAlphaDropout",
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d", "AvgPool1d", "AvgPool2d", "AvgPool3d", "BCELoss", "BCEWithLogitsLoss",
    "BatchNorm1d", "BatchNorm2d", "CELU", "CTCLoss", "CircularPad1d", "CircularPad2d",
    "BatchNorm3d", "SyncBatchNorm",
    "CircularPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "Conv1d", "Conv2d",
    "Conv3d", "ConvTranspose3d",
    "ConvTranspose1d", "ConvTranspose2d", "CosineEmbeddingLoss", "CosineSimilarity",
    "CrossEntropyLoss", "Dropout", "ELU", "Embedding", "Flatten", "Fold", "GELU", "GLU", "GRU",
    "GRUCell", "GaussianNLLLoss", "GroupNorm", "Hardshrink", "Hardsigmoid", "Hardswish",
    "Hardtanh", "HuberLoss", "Identity", "IncompatibleKeys", "InstanceNorm1d", "InstanceNorm2d",
    "InstanceNorm3d", "KLDivLoss", "L1Loss", "LPPool1d", "LPPool2d", "LSTM",
    "LSTMCell", "LayerNorm", "LeakyReLU", "Linear", "LocalResponseNorm", "LogSigmoid",
    "LogSoftmax", "MSELoss", "MarginRankingLoss", "MaxPool1d", "MaxPool2d", "MaxPool3d", "Mish",
    "ModuleDict", "ModuleList", "Parameter", "ParameterDict", "ParameterList",
    "Module", "MultiHeadAttention", "MultiheadAttention", "NLLLoss", "PReLU", "PairwiseDistance",
    "ParamSlot", "PixelShuffle", "PixelUnshuffle", "PoissonNLLLoss", "RMSNorm", "RNN", "RNNBase",
    "RNNCell", "RNNCellBase", "RReLU", "ReLU", "ReLU6", "ReflectionPad1d", "ReflectionPad2d",
    "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "SELU",
    "Sequential", "SiLU", "Sigmoid", "SmoothL1Loss", "Softmax", "Softmin", "Softplus",
    "Softshrink", "Softsign", "StateDictError", "Tanh", "Tanhshrink", "Threshold",
    "TransformerEncoderLayer", "TripletMarginLoss", "Unfold", "ZeroPad1d", "ZeroPad2d",
    "ZeroPad3d", "functional", "init", "rename_keys", "utils",
    "AdaptiveLogSoftmaxWithLoss", "HingeEmbeddingLoss", "LinearCrossEntropyLoss",
    "MultiLabelMarginLoss", "MultiLabelSoftMarginLoss", "MultiMarginLoss", "SoftMarginLoss",
    "TripletMarginWithDistanceLoss",
    "Bilinear", "EmbeddingBag",
]
