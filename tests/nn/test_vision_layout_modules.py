"""Resampling, channel shuffling, ``Softmax2d`` and ``Unflatten`` against torch.nn with
gradients in float64 and outputs in float32."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import burnpy.nn as nn
from burnpy import Tensor
from burnpy.backend.errors import BurnpyError
from tests.nn.test_conv_norm_pool_modules import forward_f32
from tests.nn.test_nn_layers import check_layer

RNG = np.random.default_rng(2929)


@pytest.mark.parametrize(("ours", "theirs", "shape"), [
    (nn.Upsample(scale_factor=2), torch.nn.Upsample(scale_factor=2), (2, 3, 4, 5)),
    (nn.Upsample(size=(7, 3, 5), mode="trilinear"), torch.nn.Upsample(size=(7, 3, 5),
                                                                      mode="trilinear"),
     (1, 2, 3, 4, 2)),
    (nn.Upsample(scale_factor=1.5, mode="bicubic", align_corners=True),
     torch.nn.Upsample(scale_factor=1.5, mode="bicubic", align_corners=True), (2, 3, 4, 5)),
    (nn.Upsample(size=9, mode="linear"), torch.nn.Upsample(size=9, mode="linear"), (2, 3, 5)),
    (nn.UpsamplingNearest2d(size=(7, 9)), torch.nn.UpsamplingNearest2d(size=(7, 9)),
     (2, 3, 4, 5)),
    (nn.UpsamplingBilinear2d(scale_factor=2), torch.nn.UpsamplingBilinear2d(scale_factor=2),
     (2, 3, 4, 5)),
    (nn.ChannelShuffle(3), torch.nn.ChannelShuffle(3), (2, 6, 4, 3)),
    (nn.ChannelShuffle(2), torch.nn.ChannelShuffle(2), (2, 4, 5)),
    (nn.Softmax2d(), torch.nn.Softmax2d(), (2, 3, 4, 5)),
    (nn.Softmax2d(), torch.nn.Softmax2d(), (3, 4, 5)),
    (nn.Unflatten(1, (2, 3)), torch.nn.Unflatten(1, (2, 3)), (4, 6, 5)),
    (nn.Unflatten(-1, (5, -1)), torch.nn.Unflatten(-1, (5, -1)), (4, 10)),
])
def test_layers_match_torch(ours: nn.Module, theirs: torch.nn.Module,
                            shape: tuple[int, ...]) -> None:
    x = RNG.standard_normal(shape)
    check_layer(ours, theirs, x)
    forward_f32(ours, theirs, x)
    assert repr(ours) == repr(theirs)


def test_bad_inputs_name_the_op() -> None:
    with pytest.raises(BurnpyError, match="channel_shuffle"):
        nn.ChannelShuffle(4)(Tensor.zeros((2, 6, 3)))
    with pytest.raises(BurnpyError, match="channel_shuffle"):
        nn.ChannelShuffle(2)(Tensor.zeros((2, 6)))
    with pytest.raises(BurnpyError, match="Softmax2d: expected a 3-d or 4-d"):
        nn.Softmax2d()(Tensor.zeros((2, 6)))
