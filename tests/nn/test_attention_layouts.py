"""``MultiheadAttention`` and ``TransformerEncoderLayer`` take torch's ``batch_first=False``
default, its ``(L, N, E)`` layout, unbatched inputs and torch's positional order: outputs,
weights and every gradient equal torch's (float64, copied weights)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import burnpy.nn as nn
from burnpy import Tensor
from tests.nn.test_nn_layers import AD, F64, _close, check_layer

RNG = np.random.default_rng(5)


def _call(masks: dict[str, np.ndarray], **kwargs: Any) -> Any:
    def call(layer: Any, xs: list[Any]) -> Any:
        to = (torch.from_numpy if isinstance(layer, torch.nn.Module)
              else (lambda a: Tensor.from_data(a, backend=AD)))
        return layer(*xs, **{k: to(v) for k, v in masks.items()}, **kwargs)
    return call


def _padding(shape: tuple[int, ...]) -> np.ndarray:
    pad = np.zeros(shape, dtype=bool)
    pad[..., -1] = True
    return pad


@pytest.mark.parametrize("average", [True, False])
def test_multihead_attention_defaults_to_seq_batch_embed(average: bool) -> None:
    ours, ref = nn.MultiheadAttention(8, 2, **F64), torch.nn.MultiheadAttention(8, 2).double()
    assert ours.batch_first is False
    q, k, v = RNG.standard_normal((4, 3, 8)), RNG.standard_normal((6, 3, 8)), \
        RNG.standard_normal((6, 3, 8))
    masks = {"key_padding_mask": _padding((3, 6)),
             "attn_mask": RNG.standard_normal((3 * 2, 4, 6))}
    call = _call(masks, average_attn_weights=average)
    check_layer(ours, ref, q, k, v, call=call)
    _, weights = call(ours, [Tensor.from_data(a, backend=AD) for a in (q, k, v)])
    _, ref_weights = call(ref, [torch.from_numpy(a) for a in (q, k, v)])
    _close(weights, ref_weights, "weights")
    x = RNG.standard_normal((5, 2, 8))  # self-attention through the packed projection
    check_layer(ours, ref, x, call=lambda layer, xs: layer(xs[0], xs[0], xs[0]))


def test_multihead_attention_kdim_vdim_in_torch_layout() -> None:
    ours = nn.MultiheadAttention(6, 3, kdim=4, vdim=5, **F64)
    ref = torch.nn.MultiheadAttention(6, 3, kdim=4, vdim=5).double()
    check_layer(ours, ref, RNG.standard_normal((3, 2, 6)), RNG.standard_normal((7, 2, 4)),
                RNG.standard_normal((7, 2, 5)))


@pytest.mark.parametrize("batch_first", [False, True])
def test_multihead_attention_unbatched(batch_first: bool) -> None:
    ours = nn.MultiheadAttention(8, 2, batch_first=batch_first, **F64)
    ref = torch.nn.MultiheadAttention(8, 2, batch_first=batch_first).double()
    q, k, v = RNG.standard_normal((4, 8)), RNG.standard_normal((6, 8)), \
        RNG.standard_normal((6, 8))
    masks = {"key_padding_mask": _padding((6,)), "attn_mask": RNG.standard_normal((2, 4, 6))}
    check_layer(ours, ref, q, k, v, call=_call(masks))
    for average in (True, False):
        call = _call(masks, average_attn_weights=average)
        out, weights = call(ours, [Tensor.from_data(a, backend=AD) for a in (q, k, v)])
        ref_out, ref_weights = call(ref, [torch.from_numpy(a) for a in (q, k, v)])
        _close(out, ref_out, "output")
        _close(weights, ref_weights, "weights")


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_encoder_layer_defaults_to_seq_batch_embed(norm_first: bool) -> None:
    ours = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, norm_first=norm_first, **F64)
    ref = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, norm_first=norm_first).double()
    pad = _padding((3, 5))
    check_layer(ours, ref, RNG.standard_normal((5, 3, 8)),
                call=_call({"src_key_padding_mask": pad}))
    check_layer(ours, ref, RNG.standard_normal((5, 8)),  # unbatched
                call=_call({"src_key_padding_mask": pad[0]}))


def test_positional_arguments_follow_torch_order() -> None:
    """torch's 7th positional argument of TransformerEncoderLayer is ``batch_first`` (not
    ``norm_first``); MultiheadAttention's are torch's, ``add_bias_kv`` and ``add_zero_attn``
    before ``kdim`` and ``vdim``."""
    ours = nn.TransformerEncoderLayer(8, 2, 16, 0.0, "relu", 1e-5, True, **F64)
    ref = torch.nn.TransformerEncoderLayer(8, 2, 16, 0.0, "relu", 1e-5, True).double()
    assert ours.self_attn.batch_first and not ours.norm_first
    check_layer(ours, ref, RNG.standard_normal((2, 5, 8)))
    mha = nn.MultiheadAttention(6, 3, 0.0, True, True, True, 4, 5, True, **F64)
    ref_mha = torch.nn.MultiheadAttention(6, 3, 0.0, True, True, True, 4, 5, True).double()
    q, k, v = (RNG.standard_normal((2, 3, n)) for n in (6, 4, 5))
    check_layer(mha, ref_mha, q, k, v)
