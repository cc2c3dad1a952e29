"""The Transformer family and ``MultiheadAttention`` against torch with torch's weights loaded
strictly: outputs, input gradients and every parameter gradient in float64 (forward in
float32 too), every mask kind (bool and float, 2-d and per head, key padding, causal hints
and detected causal masks), both layouts, pre- and post-norm, unbatched inputs."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import torch

import burnpy.nn as nn
from burnpy import Tensor
from burnpy.backend.errors import ShapeError
from tests.nn.test_nn_layers import AD, F64, _close, check_layer

RNG = np.random.default_rng(29)
E, H = 8, 2


def _masked_call(masks: dict[str, np.ndarray], **kwargs: Any) -> Any:
    """A ``check_layer`` call passing ``masks`` (numpy) as tensors of either library."""
    def call(layer: Any, xs: list[Any]) -> Any:
        to = (torch.from_numpy if isinstance(layer, torch.nn.Module)
              else (lambda a: Tensor.from_data(a, backend=AD)))
        return layer(*xs, **{k: to(v) for k, v in masks.items()}, **kwargs)
    return call


def _padding(batch: int | None, length: int, kind: str) -> np.ndarray:
    """Key padding: the last key of every sample (and the last two of the first) masked."""
    pad = np.zeros((length,) if batch is None else (batch, length), dtype=bool)
    pad[..., -1] = True
    if batch:
        pad[0, -2] = True
    return pad if kind == "bool" else np.where(pad, -np.inf, 0.0)


def _attn_mask(shape: tuple[int, ...], kind: str) -> np.ndarray:
    """A mask blocking some keys but never a whole row (torch's weights would be NaN)."""
    blocked = RNG.random(shape) < 0.3
    blocked[..., 0] = False
    if kind == "bool":
        return blocked
    return np.where(blocked, -np.inf, RNG.standard_normal(shape))


def _causal(n: int) -> np.ndarray:
    return np.triu(np.full((n, n), -np.inf), 1)


# ---- MultiheadAttention ---------------------------------------------------------------------
LAYOUTS = [{}, {"bias": False}, {"kdim": 5, "vdim": 3}, {"add_bias_kv": True},
           {"add_zero_attn": True}, {"add_bias_kv": True, "add_zero_attn": True, "kdim": 4},
           {"bias": False, "add_bias_kv": True, "vdim": 6}]


@pytest.mark.parametrize("kwargs", LAYOUTS, ids=str)
@pytest.mark.parametrize("need_weights", [True, False])
def test_multihead_attention_loads_torch_s_state_in_every_layout(kwargs: dict[str, Any],
                                                                need_weights: bool) -> None:
    ours = nn.MultiheadAttention(E, H, **kwargs, **F64)
    ref = torch.nn.MultiheadAttention(E, H, **kwargs).double()
    assert list(ours.state_dict()) == list(ref.state_dict())
    kdim, vdim = kwargs.get("kdim", E), kwargs.get("vdim", E)
    q, k, v = (RNG.standard_normal(shape) for shape in ((4, 3, E), (6, 3, kdim), (6, 3, vdim)))
    masks = {"key_padding_mask": _padding(3, 6, "bool"),
             "attn_mask": _attn_mask((3 * H, 4, 6), "float")}
    check_layer(ours, ref, q, k, v, call=_masked_call(masks, need_weights=need_weights))
    if need_weights:
        for average in (True, False):
            call = _masked_call(masks, average_attn_weights=average)
            _, weights = call(ours, [Tensor.from_data(a, backend=AD) for a in (q, k, v)])
            _, ref_weights = call(ref, [torch.from_numpy(a) for a in (q, k, v)])
            _close(weights, ref_weights, "weights")


MASKS = ["attn bool", "attn float", "attn per head bool", "padding bool", "padding float",
         "both bool", "both mixed", "causal hint", "causal hint with padding"]


def _mha_masks(name: str, batch: int, lq: int, lk: int) -> tuple[dict[str, np.ndarray], bool]:
    if name.startswith("causal"):
        masks = {"attn_mask": _causal(lq)}
        if "padding" in name:
            masks["key_padding_mask"] = _padding(batch, lk, "bool")
        return masks, True
    masks = {}
    kind = "float" if name.endswith("float") or name.endswith("mixed") else "bool"
    if name.startswith("attn per head"):
        masks["attn_mask"] = _attn_mask((batch * H, lq, lk), kind)
    elif name.startswith(("attn", "both")):
        masks["attn_mask"] = _attn_mask((lq, lk), kind)
    if name.startswith(("padding", "both")):
        masks["key_padding_mask"] = _padding(batch, lk, "bool" if "mixed" in name else kind)
    return masks, False


@pytest.mark.parametrize("mask", MASKS)
@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("batch_first", [False, True])
def test_multihead_attention_masks(mask: str, need_weights: bool, batch_first: bool) -> None:
    ours = nn.MultiheadAttention(E, H, batch_first=batch_first, **F64)
    ref = torch.nn.MultiheadAttention(E, H, batch_first=batch_first).double()
    masks, causal = _mha_masks(mask, 3, 5, 5)
    x = RNG.standard_normal((3, 5, E) if batch_first else (5, 3, E))
    check_layer(ours, ref, x, call=lambda layer, xs: _masked_call(
        masks, need_weights=need_weights, is_causal=causal)(layer, [xs[0]] * 3))


def test_multihead_attention_unbatched_per_head_mask() -> None:
    ours, ref = nn.MultiheadAttention(E, H, **F64), torch.nn.MultiheadAttention(E, H).double()
    masks = {"attn_mask": _attn_mask((H, 4, 6), "bool"), "key_padding_mask": _padding(None, 6,
                                                                                      "bool")}
    q, kv = RNG.standard_normal((4, E)), RNG.standard_normal((6, E))
    check_layer(ours, ref, q, kv, kv, call=_masked_call(masks))


def test_multihead_attention_mask_shape_errors_name_the_shapes() -> None:
    ours = nn.MultiheadAttention(E, H, **F64)
    x = Tensor.from_data(RNG.standard_normal((5, 3, E)), backend=AD)
    with pytest.raises(ShapeError, match=r"attn_mask must be \(5, 5\) or \(6, 5, 5\), got "):
        ours(x, x, x, attn_mask=Tensor.zeros((4, 5), backend=AD, dtype="bool"))
    with pytest.raises(ShapeError, match=r"key_padding_mask must be \(3, 5\), got \(5, 3\)"):
        ours(x, x, x, key_padding_mask=Tensor.zeros((5, 3), backend=AD, dtype="bool"))


# ---- layers and stacks ----------------------------------------------------------------------
def _layout(x: np.ndarray, batch_first: bool) -> np.ndarray:
    """``x [seq, batch, E]`` in the layer's layout."""
    return x.swapaxes(0, 1).copy() if batch_first else x


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("masks", ["none", "bool", "float", "causal"])
def test_decoder_layer(norm_first: bool, batch_first: bool, masks: str) -> None:
    args = (E, H, 16, 0.0, "gelu", 1e-5, batch_first, norm_first)
    ours = nn.TransformerDecoderLayer(*args, **F64)
    ref = torch.nn.TransformerDecoderLayer(*args).double()
    tgt, memory = RNG.standard_normal((4, 3, E)), RNG.standard_normal((6, 3, E))
    given: dict[str, np.ndarray] = {}
    kwargs: dict[str, Any] = {}
    if masks in ("bool", "float"):
        given = {"tgt_mask": _attn_mask((4, 4), masks), "memory_mask": _attn_mask((4, 6), masks),
                 "tgt_key_padding_mask": _padding(3, 4, masks),
                 "memory_key_padding_mask": _padding(3, 6, masks)}
    elif masks == "causal":
        given, kwargs = {"tgt_mask": _causal(4)}, {"tgt_is_causal": True}
    check_layer(ours, ref, _layout(tgt, batch_first), _layout(memory, batch_first),
                call=_masked_call(given, **kwargs))


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_and_decoder_layers_unbatched(norm_first: bool) -> None:
    args = (E, H, 16, 0.0, "relu", 1e-5, False, norm_first)
    enc, ref_enc = nn.TransformerEncoderLayer(*args, **F64), \
        torch.nn.TransformerEncoderLayer(*args).double()
    check_layer(enc, ref_enc, RNG.standard_normal((5, E)),
                call=_masked_call({"src_key_padding_mask": _padding(None, 5, "bool")}))
    dec, ref_dec = nn.TransformerDecoderLayer(*args, **F64), \
        torch.nn.TransformerDecoderLayer(*args).double()
    check_layer(dec, ref_dec, RNG.standard_normal((4, E)), RNG.standard_normal((5, E)),
                call=_masked_call({"tgt_mask": _causal(4)}))


@pytest.mark.parametrize("batch_first", [False, True])
def test_encoder_stack_with_norm_detects_the_causal_mask(batch_first: bool) -> None:
    layer = nn.TransformerEncoderLayer(E, H, 16, 0.0, batch_first=batch_first, **F64)
    ours = nn.TransformerEncoder(layer, 3, nn.LayerNorm(E, **F64), enable_nested_tensor=False)
    ref_layer = torch.nn.TransformerEncoderLayer(E, H, 16, 0.0, batch_first=batch_first)
    ref = torch.nn.TransformerEncoder(ref_layer, 3, torch.nn.LayerNorm(E),
                                      enable_nested_tensor=False).double()
    assert list(ours.state_dict()) == list(ref.state_dict())
    assert ours.layers[0] is not ours.layers[1]  # deep copies, as torch's
    x = _layout(RNG.standard_normal((5, 2, E)), batch_first)
    for mask in (_causal(5), _causal(5) == -np.inf, _attn_mask((5, 5), "float")):
        masks = {"mask": mask, "src_key_padding_mask": _padding(2, 5, "bool")}
        check_layer(ours, ref, x, call=_masked_call(masks))


def _pair(**kwargs: Any) -> tuple[nn.Transformer, torch.nn.Transformer]:
    ours = nn.Transformer(**kwargs, **F64)
    ref = torch.nn.Transformer(**kwargs).double()
    return ours, ref


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
def test_transformer_seq2seq_with_every_mask(norm_first: bool, batch_first: bool) -> None:
    ours, ref = _pair(d_model=E, nhead=H, num_encoder_layers=2, num_decoder_layers=2,
                      dim_feedforward=16, dropout=0.0, batch_first=batch_first,
                      norm_first=norm_first)
    assert list(ours.state_dict()) == list(ref.state_dict())
    src, tgt = RNG.standard_normal((6, 3, E)), RNG.standard_normal((4, 3, E))
    masks = {"src_mask": _attn_mask((6, 6), "bool"),
             "tgt_mask": torch.nn.Transformer.generate_square_subsequent_mask(
                 4, dtype=torch.float64).numpy(),
             "memory_mask": _attn_mask((4, 6), "bool"),
             "src_key_padding_mask": _padding(3, 6, "bool"),
             "tgt_key_padding_mask": _padding(3, 4, "bool"),
             "memory_key_padding_mask": _padding(3, 6, "bool")}
    check_layer(ours, ref, _layout(src, batch_first), _layout(tgt, batch_first),
                call=_masked_call(masks))
    check_layer(ours, ref, _layout(src, batch_first), _layout(tgt, batch_first),
                call=_masked_call({"tgt_mask": masks["tgt_mask"]}, tgt_is_causal=True))


def test_transformer_unbatched_and_float32() -> None:
    ours, ref = _pair(d_model=E, nhead=H, num_encoder_layers=1, num_decoder_layers=2,
                      dim_feedforward=16, activation="gelu")
    ours.eval()
    ref.eval()
    check_layer(ours, ref, RNG.standard_normal((5, E)), RNG.standard_normal((3, E)))
    ref.float()
    ours.float()
    src, tgt = RNG.standard_normal((5, 2, E)), RNG.standard_normal((3, 2, E))
    mask = nn.Transformer.generate_square_subsequent_mask(3, backend=AD)
    out = ours(*(Tensor.from_data(a.astype(np.float32), backend=AD) for a in (src, tgt)),
               tgt_mask=mask)
    want = ref(*(torch.from_numpy(a.astype(np.float32)) for a in (src, tgt)),
               tgt_mask=torch.nn.Transformer.generate_square_subsequent_mask(3))
    assert out.dtype.name == "float32"
    np.testing.assert_allclose(out.to_numpy(), want.detach().numpy(), rtol=1e-4, atol=1e-5)


def test_transformer_defaults_custom_parts_and_init() -> None:
    ours = nn.Transformer(d_model=16, nhead=4, dim_feedforward=32, **F64)
    ref = torch.nn.Transformer(d_model=16, nhead=4, dim_feedforward=32)
    assert list(ours.state_dict()) == list(ref.state_dict())  # 6 + 6 layers, both norms
    assert ours.batch_first is False and ours.encoder.layers[0].dropout.p == 0.1
    w = ours.encoder.layers[0].linear1.weight.to_numpy()  # Xavier-uniform, [32, 16]
    bound = math.sqrt(6 / (16 + 32))
    assert np.abs(w).max() <= bound and abs(w.std() - bound / math.sqrt(3)) < 0.2 * bound
    encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 4, 32, **F64), 1)
    custom = nn.Transformer(16, 4, custom_encoder=encoder, num_decoder_layers=1,
                            dim_feedforward=32, **F64)
    assert custom.encoder is encoder and len(custom.decoder.layers) == 1
    relu = nn.TransformerEncoderLayer(16, 4, activation=Tensor.relu, **F64)
    assert relu.activation is Tensor.relu


def test_generate_square_subsequent_mask_is_torch_s() -> None:
    ours = nn.Transformer.generate_square_subsequent_mask(5)
    assert ours.dtype.name == "float32"
    np.testing.assert_array_equal(ours.to_numpy(),
                                  torch.nn.Transformer.generate_square_subsequent_mask(5))


def test_transformer_shape_errors_name_both_inputs() -> None:
    ours = nn.Transformer(E, H, 1, 1, 16, **F64)
    src = Tensor.from_data(RNG.standard_normal((5, 3, E)), backend=AD)
    tgt = Tensor.from_data(RNG.standard_normal((4, 2, E)), backend=AD)
    with pytest.raises(ShapeError, match=r"Transformer: .* got src \(5, 3, 8\), tgt \(4, 2, 8\)"):
        ours(src, tgt)


@pytest.mark.parametrize("need_weights", [True, False])
def test_attention_dropout_is_on_in_training_only(need_weights: bool) -> None:
    ours = nn.MultiheadAttention(E, H, dropout=1.0, **F64)  # every weight dropped in training
    bias = Tensor.from_data(RNG.standard_normal(E), backend=AD)
    ours.load_state_dict({"out_proj.bias": bias}, strict=False)
    x = Tensor.from_data(RNG.standard_normal((4, 2, E)), backend=AD)
    out, _ = ours(x, x, x, need_weights=need_weights)
    np.testing.assert_allclose(out.to_numpy(), np.broadcast_to(bias.to_numpy(), (4, 2, E)))
    ours.eval()
    out, _ = ours(x, x, x, need_weights=need_weights)
    assert not np.allclose(out.to_numpy(), np.broadcast_to(bias.to_numpy(), (4, 2, E)))
