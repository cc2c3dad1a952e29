"""torch's Transformer family: ``TransformerEncoderLayer``, ``TransformerDecoderLayer``, their
stacks ``TransformerEncoder`` and ``TransformerDecoder`` and the whole ``Transformer``, with
torch's sub-module names (``self_attn``, ``multihead_attn``, ``linear1``, ``norm1``...,
``layers.0``..., ``encoder.norm``), layouts and masks."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import TYPE_CHECKING

from burnpy.backend.device import Device
from burnpy.backend.dtype import DTypeLike
from burnpy.backend.errors import InvalidArgumentError, KindError, ShapeError, describe
from burnpy.nn import init
from burnpy.nn.attention import MultiHeadAttention
from burnpy.nn.container import ModuleList
from burnpy.nn.dropout import Dropout
from burnpy.nn.linear import Linear
from burnpy.nn.module import Module
from burnpy.nn.norm import LayerNorm
from burnpy.tensor import Tensor

if TYPE_CHECKING:
    from burnpy.backend.base import Backend

Activation = Callable[[Tensor], Tensor]

_ACTIVATIONS: dict[str, Activation] = {
    "relu": Tensor.relu,
    "gelu": Tensor.gelu,
}


def _activation(owner: str, activation: str | Activation) -> Activation:
    """``activation`` as a callable: torch's names ``"relu"``/``"gelu"`` or the callable."""
    if isinstance(activation, str):
        if activation not in _ACTIVATIONS:
            raise InvalidArgumentError(f"{owner}: activation must be one of "
                                       f"{sorted(_ACTIVATIONS)} or a callable, got "
                                       f"{activation!r}")
        return _ACTIVATIONS[activation]
    if not callable(activation):
        raise KindError(f"{owner}: activation must be a string or a callable, got "
                        f"{type(activation).__name__}")
    return activation


class TransformerEncoderLayer(Module):
    """torch.nn.TransformerEncoderLayer: ``[seq, batch, d_model]`` (torch's default layout),
    ``[batch, seq, d_model]`` with ``batch_first=True``, or unbatched ``[seq, d_model]``.

    ``norm_first`` applies LayerNorm before each block (pre-norm) instead of after it.
    Sub-modules are named as torch's (``self_attn``, ``linear1``, ``norm1``...).
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: str | Activation = "relu",
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: Device | None = None,
                 dtype: DTypeLike | None = None, *,
                 backend: type[Backend] | None = None) -> None:
        self.activation = _activation("TransformerEncoderLayer", activation)
        kw = init.Placement(backend=backend, device=device, dtype=dtype)
        self.self_attn = MultiHeadAttention(d_model, nhead, dropout, bias,
                                            batch_first=batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)

    def forward(self, src: Tensor, src_mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None, is_causal: bool = False) -> Tensor:
        """``src`` in the layer's layout to the same shape; masks as MultiHeadAttention's
        (``is_causal``: ``src_mask`` is the causal mask, or stands for it when absent)."""
        x = src
        if self.norm_first:
            x = x + self._attention(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._feed_forward(self.norm2(x))
        x = self.norm1(x + self._attention(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._feed_forward(x))

    def _attention(self, x: Tensor, mask: Tensor | None, key_padding_mask: Tensor | None,
                   is_causal: bool) -> Tensor:
        out, _ = self.self_attn(x, x, x, key_padding_mask=key_padding_mask, need_weights=False,
                                attn_mask=mask, is_causal=is_causal)
        return self.dropout1(out)

    def _feed_forward(self, x: Tensor) -> Tensor:
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerDecoderLayer(Module):
    """torch.nn.TransformerDecoderLayer: self-attention over ``tgt``, attention to
    ``memory`` (the encoder's output), a feed-forward block; layouts as the encoder
    layer's, sub-modules named as torch's (``self_attn``, ``multihead_attn``, ``norm3``...)."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: str | Activation = "relu",
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: Device | None = None,
                 dtype: DTypeLike | None = None, *,
                 backend: type[Backend] | None = None) -> None:
        self.activation = _activation("TransformerDecoderLayer", activation)
        kw = init.Placement(backend=backend, device=device, dtype=dtype)
        self.self_attn = MultiHeadAttention(d_model, nhead, dropout, bias,
                                            batch_first=batch_first, **kw)
        self.multihead_attn = MultiHeadAttention(d_model, nhead, dropout, bias,
                                                 batch_first=batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, layer_norm_eps, bias=bias, **kw)
        self.norm3 = LayerNorm(d_model, layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None, tgt_is_causal: bool = False,
                memory_is_causal: bool = False) -> Tensor:
        """``tgt`` attending to itself and to ``memory``, to ``tgt``'s shape; the masks as
        MultiHeadAttention's (``*_is_causal``: the mask is the causal one)."""
        x = tgt
        if self.norm_first:
            x = x + self._self_block(self.norm1(x), tgt_mask, tgt_key_padding_mask,
                                     tgt_is_causal)
            x = x + self._memory_block(self.norm2(x), memory, memory_mask,
                                       memory_key_padding_mask, memory_is_causal)
            return x + self._feed_forward(self.norm3(x))
        x = self.norm1(x + self._self_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
        x = self.norm2(x + self._memory_block(x, memory, memory_mask, memory_key_padding_mask,
                                              memory_is_causal))
        return self.norm3(x + self._feed_forward(x))

    def _self_block(self, x: Tensor, mask: Tensor | None, key_padding_mask: Tensor | None,
                    is_causal: bool) -> Tensor:
        out, _ = self.self_attn(x, x, x, key_padding_mask=key_padding_mask, need_weights=False,
                                attn_mask=mask, is_causal=is_causal)
        return self.dropout1(out)

    def _memory_block(self, x: Tensor, memory: Tensor, mask: Tensor | None,
                      key_padding_mask: Tensor | None, is_causal: bool) -> Tensor:
        out, _ = self.multihead_attn(x, memory, memory, key_padding_mask=key_padding_mask,
                                     need_weights=False, attn_mask=mask, is_causal=is_causal)
        return self.dropout2(out)

    def _feed_forward(self, x: Tensor) -> Tensor:
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))


def _clones(layer: Module, num_layers: int, owner: str) -> ModuleList:
    """``num_layers`` independent deep copies of ``layer`` (torch's ``_get_clones``)."""
    if not isinstance(layer, Module):
        raise KindError(f"{owner}: expected a layer Module, got {type(layer).__name__}")
    if num_layers < 0:
        raise InvalidArgumentError(f"{owner}: num_layers must be >= 0, got {num_layers}")
    return ModuleList([copy.deepcopy(layer) for _ in range(num_layers)])


def _seq_len(x: Tensor, batch_first: bool) -> int:
    """The sequence length of a layer input (batched or not)."""
    return x.shape[1] if batch_first and x.ndim == 3 else x.shape[0]


def _is_causal_mask(mask: Tensor | None, is_causal: bool | None, size: int) -> bool:
    """torch's ``_detect_is_causal_mask``: ``is_causal`` when given; otherwise whether
    ``mask`` is the ``[size, size]`` causal mask (float -inf/0 or bool True above the
    diagonal), which then runs as causal attention without being read."""
    if is_causal is not None:
        return is_causal
    if mask is None or mask.shape != (size, size):
        return False
    causal = Transformer.generate_square_subsequent_mask(size, mask.device, mask.dtype
                                                         if mask.kind == "float" else None,
                                                         backend=mask.backend)
    expected = causal if mask.kind == "float" else causal == float("-inf")
    return bool((mask == expected).all())


def _first_batch_first(layers: ModuleList) -> bool:
    first = layers[0] if len(layers) else None
    attn = getattr(first, "self_attn", None)
    return bool(getattr(attn, "batch_first", False))


class TransformerEncoder(Module):
    """torch.nn.TransformerEncoder: ``num_layers`` deep copies of ``encoder_layer`` (as
    ``layers.0``...), then ``norm`` when given. ``enable_nested_tensor`` and ``mask_check``
    (torch's fast path for padded batches in inference) are accepted and change nothing:
    burnpy computes padded positions as torch's regular path does."""

    def __init__(self, encoder_layer: Module, num_layers: int, norm: Module | None = None,
                 enable_nested_tensor: bool = True, mask_check: bool = True) -> None:
        self.layers = _clones(encoder_layer, num_layers, "TransformerEncoder")
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check

    def forward(self, src: Tensor, mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None,
                is_causal: bool | None = None) -> Tensor:
        """``src`` through every layer, then ``norm``. ``is_causal=None`` detects whether
        ``mask`` is the causal mask (torch's)."""
        causal = _is_causal_mask(mask, is_causal,
                                 _seq_len(src, _first_batch_first(self.layers)))
        out = src
        for layer in self.layers:
            out = layer(out, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                        is_causal=causal)
        return out if self.norm is None else self.norm(out)


class TransformerDecoder(Module):
    """torch.nn.TransformerDecoder: ``num_layers`` deep copies of ``decoder_layer`` (as
    ``layers.0``...), then ``norm`` when given."""

    def __init__(self, decoder_layer: Module, num_layers: int,
                 norm: Module | None = None) -> None:
        self.layers = _clones(decoder_layer, num_layers, "TransformerDecoder")
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None,
                tgt_is_causal: bool | None = None, memory_is_causal: bool = False) -> Tensor:
        """``tgt`` through every layer (each attending to ``memory``), then ``norm``.
        ``tgt_is_causal=None`` detects whether ``tgt_mask`` is the causal mask (torch's)."""
        causal = _is_causal_mask(tgt_mask, tgt_is_causal,
                                 _seq_len(tgt, _first_batch_first(self.layers)))
        out = tgt
        for layer in self.layers:
            out = layer(out, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                        tgt_key_padding_mask=tgt_key_padding_mask,
                        memory_key_padding_mask=memory_key_padding_mask,
                        tgt_is_causal=causal, memory_is_causal=memory_is_causal)
        return out if self.norm is None else self.norm(out)


class Transformer(Module):
    """torch.nn.Transformer: an encoder over ``src`` and a decoder over ``tgt`` attending to
    the encoder's output, with torch's defaults (``d_model=512``, ``nhead=8``, 6 + 6 layers,
    ``[seq, batch, d_model]`` unless ``batch_first``), sub-modules (``encoder.layers.0``...,
    ``encoder.norm``, ``decoder.norm``) and initialisation (Xavier-uniform for every
    parameter of two or more dims)."""

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: str | Activation = "relu",
                 custom_encoder: Module | None = None, custom_decoder: Module | None = None,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: Device | None = None,
                 dtype: DTypeLike | None = None, *,
                 backend: type[Backend] | None = None) -> None:
        kw = init.Placement(backend=backend, device=device, dtype=dtype)
        layer = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                 batch_first, norm_first, bias)
        self.encoder: Module = custom_encoder if custom_encoder is not None else \
            TransformerEncoder(TransformerEncoderLayer(*layer, **kw), num_encoder_layers,
                               LayerNorm(d_model, layer_norm_eps, bias=bias, **kw))
        self.decoder: Module = custom_decoder if custom_decoder is not None else \
            TransformerDecoder(TransformerDecoderLayer(*layer, **kw), num_decoder_layers,
                               LayerNorm(d_model, layer_norm_eps, bias=bias, **kw))
        for slot in self.slots():
            if slot.is_param and slot.tensor.ndim > 1:
                init.xavier_uniform_(slot.tensor)
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first

    def forward(self, src: Tensor, tgt: Tensor, src_mask: Tensor | None = None,
                tgt_mask: Tensor | None = None, memory_mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None,
                src_is_causal: bool | None = None, tgt_is_causal: bool | None = None,
                memory_is_causal: bool = False) -> Tensor:
        """The decoder's output for ``tgt`` given the encoded ``src`` (``[T, batch,
        d_model]``, batch first with ``batch_first``, or unbatched); masks as the encoder's
        and decoder's."""
        batch = 0 if self.batch_first else 1
        if (src.ndim != tgt.ndim or src.ndim not in (2, 3)
                or (src.ndim == 3 and src.shape[batch] != tgt.shape[batch])
                or src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model):
            layout = "[batch, seq, d_model]" if self.batch_first else "[seq, batch, d_model]"
            raise ShapeError(f"Transformer: src and tgt must both be {layout} (or unbatched "
                             f"[seq, d_model]) with the same batch and d_model={self.d_model}, "
                             f"got src {describe(src.shape)}, tgt {describe(tgt.shape)}")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device: Device | None = None,
                                        dtype: DTypeLike | None = None, *,
                                        backend: type[Backend] | None = None) -> Tensor:
        """torch's causal mask ``[sz, sz]``: ``-inf`` above the diagonal (the positions a
        query may not see), 0 elsewhere; float32 unless ``dtype``."""
        zeros = Tensor.zeros((sz, sz), backend=backend, device=device,
                             dtype="float32" if dtype is None else dtype)
        rows = Tensor.arange(sz, backend=zeros.backend, device=zeros.device).reshape(sz, 1)
        cols = Tensor.arange(sz, backend=zeros.backend, device=zeros.device).reshape(1, sz)
        return zeros.mask_fill(cols > rows, float("-inf"))

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, nhead={self.nhead}, batch_first={self.batch_first}"
