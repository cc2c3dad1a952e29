"""Functional neural-network ops with PyTorch's signatures (``import burnpy.nn.functional as F``),
one module per topic, every name re-exported here:

- ``activation``: relu, gelu, softmax, elu, hardswish, prelu... (torch's activations)
- ``attention``: scaled_dot_product_attention
- ``conv``: conv1d/2d/3d, conv_transpose1d/2d/3d
- ``distance``: cosine_similarity, pairwise_distance
- ``dropout``: dropout, dropout1d/2d/3d, alpha_dropout, feature_alpha_dropout
- ``layout``: unfold (im2col), fold (col2im)
- ``linear``: linear (a quantized weight too)
- ``loss``: cross_entropy, nll_loss, mse_loss, ctc_loss... (torch's losses)
- ``norm``: batch_norm, layer_norm, group_norm, instance_norm, rms_norm, normalize...
- ``padding``: pad
- ``pool``: avg, max, adaptive, power-average and fractional max pools, 1-d to 3-d; max_unpool
- ``sparse``: embedding, one_hot
- ``vision``: interpolate, affine_grid, grid_sample, pixel_shuffle, pixel_unshuffle,
  channel_shuffle

Activations are ``[batch, channels, *spatial]``; conv weights ``[out, in / groups, *kernel]``;
transposed-conv weights ``[in, out / groups, *kernel]``; linear weights ``[out, in]``.
"""

from burnpy.nn.functional._common import IntOrTuple
from burnpy.nn.functional.activation import (
    celu,
    elu,
    gelu,
    glu,
    hardshrink,
    hardsigmoid,
    hardswish,
    hardtanh,
    leaky_relu,
    log_sigmoid,
    log_softmax,
    logsigmoid,
    mish,
    prelu,
    relu,
    relu6,
    rrelu,
    selu,
    sigmoid,
    silu,
    softmax,
    softmin,
    softplus,
    softshrink,
    softsign,
    tanh,
    tanhshrink,
    threshold,
)
from burnpy.nn.functional.attention import (
    attention,
    scaled_dot_product_attention,
)
from burnpy.nn.functional.conv import (
    conv1d,
    conv2d,
    conv3d,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
)
from burnpy.nn.functional.distance import (
    cosine_similarity,
    pairwise_distance,
)
from burnpy.nn.functional.dropout import (
    alpha_dropout,
    dropout,
    dropout1d,
    dropout2d,
    dropout3d,
    feature_alpha_dropout,
)
from burnpy.nn.functional.layout import (
    fold,
    unfold,
)
from burnpy.nn.functional.linear import (
    bilinear,
    linear,
)
from burnpy.nn.functional.loss import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cosine_embedding_loss,
    cross_entropy,
    ctc_loss,
    gaussian_nll_loss,
    hinge_embedding_loss,
    huber_loss,
    kl_div,
    l1_loss,
    linear_cross_entropy,
    margin_ranking_loss,
    mse_loss,
    multi_margin_loss,
    multilabel_margin_loss,
    multilabel_soft_margin_loss,
    nll_loss,
    poisson_nll_loss,
    smooth_l1_loss,
    soft_margin_loss,
    triplet_margin_loss,
    triplet_margin_with_distance_loss,
)
from burnpy.nn.functional.norm import (
    batch_norm,
    batch_norm_train,
    group_norm,
    instance_norm,
    layer_norm,
    local_response_norm,
    normalize,
    rms_norm,
    running_averages,
)
from burnpy.nn.functional.padding import (
    pad,
)
from burnpy.nn.functional.pool import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_avg_pool3d,
    adaptive_max_pool1d,
    adaptive_max_pool2d,
    adaptive_max_pool3d,
    avg_pool1d,
    avg_pool2d,
    avg_pool3d,
    fractional_max_pool2d,
    fractional_max_pool3d,
    lp_pool1d,
    lp_pool2d,
    lp_pool3d,
    max_pool1d,
    max_pool2d,
    max_pool3d,
    max_unpool1d,
    max_unpool2d,
    max_unpool3d,
)
from burnpy.nn.functional.sparse import (
    embedding,
    embedding_bag,
    one_hot,
)
from burnpy.nn.functional.vision import (
    affine_grid,
    channel_shuffle,
    grid_sample,
    interpolate,
    pixel_shuffle,
    pixel_unshuffle,
)

__all__ = [
    "channel_shuffle",
    "adaptive_max_pool3d", "fractional_max_pool2d", "fractional_max_pool3d", "lp_pool3d",
    "max_unpool1d", "max_unpool2d", "max_unpool3d",
    "alpha_dropout", "dropout1d", "dropout2d", "dropout3d", "feature_alpha_dropout",
    "IntOrTuple", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
    "adaptive_max_pool1d", "adaptive_max_pool2d", "affine_grid", "attention", "avg_pool1d",
    "avg_pool2d", "avg_pool3d", "batch_norm", "batch_norm_train", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "celu", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
    "conv_transpose2d", "conv_transpose3d", "cosine_embedding_loss", "cosine_similarity",
    "cross_entropy", "ctc_loss", "dropout", "elu", "embedding", "fold", "gaussian_nll_loss",
    "gelu", "glu", "grid_sample", "group_norm", "hardshrink", "hardsigmoid", "hardswish",
    "hardtanh", "huber_loss", "instance_norm", "interpolate", "kl_div", "l1_loss", "layer_norm",
    "leaky_relu", "linear", "local_response_norm", "log_sigmoid", "log_softmax", "logsigmoid",
    "lp_pool1d", "lp_pool2d", "margin_ranking_loss", "max_pool1d", "max_pool2d", "max_pool3d",
    "mish", "mse_loss", "nll_loss", "normalize", "one_hot", "pad", "pairwise_distance",
    "pixel_shuffle", "pixel_unshuffle", "poisson_nll_loss", "prelu", "relu", "relu6", "rms_norm",
    "running_averages", "rrelu", "scaled_dot_product_attention", "selu", "sigmoid", "silu",
    "smooth_l1_loss", "softmax", "softmin", "softplus", "softshrink", "softsign", "tanh",
    "tanhshrink", "threshold",
    "triplet_margin_loss", "unfold",
    "hinge_embedding_loss", "linear_cross_entropy", "multi_margin_loss",
    "multilabel_margin_loss", "multilabel_soft_margin_loss", "soft_margin_loss",
    "triplet_margin_with_distance_loss",
    "bilinear", "embedding_bag",
]
