"""``TransformerEncoderLayer``: self-attention and a feed-forward block (torch's layout)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from burnpy.backend.device import Device
from burnpy.backend.dtype import DTypeLike
from burnpy.backend.errors import InvalidArgumentError
from burnpy.nn import init
from burnpy.nn.attention import MultiHeadAttention
from burnpy.nn.dropout import Dropout
from burnpy.nn.linear import Linear
from burnpy.nn.module import Module
from burnpy.nn.norm import LayerNorm
from burnpy.tensor import Tensor

if TYPE_CHECKING:
    from burnpy.backend.base import Backend

_ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {
    "relu": Tensor.relu,
    "gelu": Tensor.gelu,
}


class TransformerEncoderLayer(Module):
    """torch.nn.TransformerEncoderLayer: ``[seq, batch, d_model]`` (torch's default layout),
    ``[batch, seq, d_model]`` with ``batch_first=True``, or unbatched ``[seq, d_model]``.

    ``norm_first`` applies LayerNorm before each block (pre-norm) instead of after it.
    Sub-modules are named as torch's (``self_attn``, ``linear1``, ``norm1``...).
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: str | Callable[[Tensor], Tensor] = "relu",
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, *,
                 backend: type[Backend] | None = None, device: Device | None = None,
                 dtype: DTypeLike | None = None) -> None:
        if isinstance(activation, str):
            if activation not in _ACTIVATIONS:
                raise InvalidArgumentError(f"TransformerEncoderLayer: activation must be one of "
                                           f"{sorted(_ACTIVATIONS)} or a callable, got "
                                           f"{activation!r}")
            activation = _ACTIVATIONS[activation]
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
        self.activation = activation

    def forward(self, src: Tensor, src_mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None, is_causal: bool = False) -> Tensor:
        """``src`` in the layer's layout to the same shape; masks as MultiHeadAttention's."""
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
