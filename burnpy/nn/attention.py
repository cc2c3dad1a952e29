"""``MultiHeadAttention``: torch.nn.MultiheadAttention's semantics, torch's ``(L, N, E)``
layout by default (``batch_first=True`` for ``(N, L, E)``), unbatched ``(L, E)`` inputs too.

Parameters are named as torch's (``in_proj_weight``, ``in_proj_bias``, ``out_proj``; with
``kdim``/``vdim`` different from ``embed_dim``: ``q_proj_weight``, ``k_proj_weight``,
``v_proj_weight``), so a torch state dict loads as it is.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from burnpy.backend.device import Device
from burnpy.backend.dtype import DTypeLike
from burnpy.backend.errors import DTypeError, InvalidArgumentError, ShapeError, describe
from burnpy.nn import functional as F
from burnpy.nn import init
from burnpy.nn.linear import Linear
from burnpy.nn.module import Module
from burnpy.tensor import Tensor

if TYPE_CHECKING:
    from burnpy.backend.base import Backend


class MultiHeadAttention(Module):
    """Attention split into ``num_heads`` heads over ``[L, batch, embed_dim]`` inputs (torch's
    default layout), ``[batch, L, embed_dim]`` with ``batch_first=True``, or unbatched
    ``[L, embed_dim]``.

    Masks follow torch's MultiheadAttention: a bool ``attn_mask``/``key_padding_mask`` is True
    where attention is **not** allowed; a float mask is added to the scores.
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 *, kdim: int | None = None, vdim: int | None = None, batch_first: bool = False,
                 backend: type[Backend] | None = None, device: Device | None = None,
                 dtype: DTypeLike | None = None) -> None:
        if num_heads < 1 or embed_dim % num_heads:
            raise InvalidArgumentError(f"MultiHeadAttention: embed_dim={embed_dim} must be "
                                       f"divisible by num_heads={num_heads}")
        self.embed_dim, self.num_heads, self.dropout = embed_dim, num_heads, dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        self.kdim = embed_dim if kdim is None else kdim
        self.vdim = embed_dim if vdim is None else vdim
        kw = init.Placement(backend=backend, device=device, dtype=dtype)
        if self.kdim == embed_dim and self.vdim == embed_dim:
            self.in_proj_weight = init.xavier_uniform((3 * embed_dim, embed_dim), **kw)
        else:
            self.q_proj_weight = init.xavier_uniform((embed_dim, embed_dim), **kw)
            self.k_proj_weight = init.xavier_uniform((embed_dim, self.kdim), **kw)
            self.v_proj_weight = init.xavier_uniform((embed_dim, self.vdim), **kw)
        self.in_proj_bias = init.zeros((3 * embed_dim,), **kw) if bias else None
        self.out_proj = Linear(embed_dim, embed_dim, bias, **kw)
        if bias:
            self.out_proj.bias = init.zeros((embed_dim,), **kw)

    def _project(self, query: Tensor, key: Tensor, value: Tensor,
                 same: bool) -> tuple[Tensor, ...]:
        e = self.embed_dim
        b = self.in_proj_bias
        bq, bk, bv = (None, None, None) if b is None else (b[:e], b[e:2 * e], b[2 * e:])
        if self.kdim != e or self.vdim != e:
            return (F.linear(query, self.q_proj_weight, bq), F.linear(key, self.k_proj_weight, bk),
                    F.linear(value, self.v_proj_weight, bv))
        w = self.in_proj_weight
        if same:
            return tuple(F.linear(query, w, b).chunk(3, dim=-1))
        return (F.linear(query, w[:e], bq), F.linear(key, w[e:2 * e], bk),
                F.linear(value, w[2 * e:], bv))

    def forward(self, query: Tensor, key: Tensor, value: Tensor,
                key_padding_mask: Tensor | None = None, need_weights: bool = True,
                attn_mask: Tensor | None = None, average_attn_weights: bool = True,
                is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
        """``(output, weights)``: query ``[L, batch, embed_dim]``, key/value ``[S, batch,
        kdim/vdim]`` give output ``[L, batch, embed_dim]`` (batch first with ``batch_first``;
        no batch dim for unbatched inputs, then ``key_padding_mask`` is ``[S]``).

        ``weights`` is ``[batch, L, S]`` averaged over heads (``[batch, heads, L, S]`` with
        ``average_attn_weights=False``), or None when ``need_weights`` is False.
        ``is_causal`` without ``attn_mask`` masks future positions.
        """
        self._check(query, key, value)
        same = query is key and key is value
        unbatched = query.ndim == 2
        if unbatched:
            query, key, value = query.unsqueeze(0), key.unsqueeze(0), value.unsqueeze(0)
            if key_padding_mask is not None and key_padding_mask.ndim == 1:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        elif not self.batch_first:
            query, key, value = query.swap_dims(0, 1), key.swap_dims(0, 1), value.swap_dims(0, 1)
        n, tgt, _ = query.shape
        src = key.shape[1]
        h, d = self.num_heads, self.head_dim
        q, k, v = self._project(query, key, value, same)
        q = q.reshape(n, tgt, h, d).permute(0, 2, 1, 3) * (1.0 / math.sqrt(d))
        k = k.reshape(n, src, h, d).permute(0, 2, 3, 1)
        v = v.reshape(n, src, h, d).permute(0, 2, 1, 3)
        scores = q @ k
        bias = self._mask_bias(query, key_padding_mask, attn_mask, is_causal, n, tgt, src)
        if bias is not None:
            scores = scores + bias
        weights = F.dropout(scores.softmax(-1), self.dropout, self.training)
        out = (weights @ v).permute(0, 2, 1, 3).reshape(n, tgt, self.embed_dim)
        out = self.out_proj(out)
        if unbatched:
            out = out[0]
        elif not self.batch_first:
            out = out.swap_dims(0, 1)
        if not need_weights:
            return out, None
        weights = weights.mean(1) if average_attn_weights else weights
        return out, weights[0] if unbatched else weights

    def _check(self, query: Tensor, key: Tensor, value: Tensor) -> None:
        layout = "[batch, L, E]" if self.batch_first else "[L, batch, E]"
        batch = 0 if self.batch_first else 1
        if query.ndim not in (2, 3) or query.shape[-1] != self.embed_dim:
            raise ShapeError(f"MultiHeadAttention: query must be {layout} or unbatched [L, E] "
                             f"with E={self.embed_dim}, got {describe(query.shape)}")
        ok = (key.ndim == value.ndim == query.ndim and key.shape[-1] == self.kdim
              and value.shape[-1] == self.vdim and key.shape[:-1] == value.shape[:-1])
        if ok and query.ndim == 3:
            ok = key.shape[batch] == query.shape[batch]
        if not ok:
            raise ShapeError(f"MultiHeadAttention: key and value must be laid out as the query "
                             f"({layout}, or unbatched) with kdim={self.kdim}, vdim={self.vdim}, "
                             f"the same S and the query's batch, got query "
                             f"{describe(query.shape)}, key {describe(key.shape)}, value "
                             f"{describe(value.shape)}")

    def _mask_bias(self, like: Tensor, key_padding_mask: Tensor | None,
                   attn_mask: Tensor | None, is_causal: bool, n: int, tgt: int,
                   src: int) -> Tensor | None:
        """One additive mask ``[n or 1, heads or 1, tgt, src]`` from the masks given."""
        bias = None
        if attn_mask is None and is_causal:
            rows = Tensor.arange(tgt, backend=like.backend, device=like.device).reshape(tgt, 1)
            cols = Tensor.arange(src, backend=like.backend, device=like.device).reshape(1, src)
            attn_mask = cols > rows
        if attn_mask is not None:
            if attn_mask.shape == (tgt, src):
                shaped = attn_mask.reshape(1, 1, tgt, src)
            elif attn_mask.shape == (n * self.num_heads, tgt, src):
                shaped = attn_mask.reshape(n, self.num_heads, tgt, src)
            else:
                raise ShapeError(f"MultiHeadAttention: attn_mask must be ({tgt}, {src}) or "
                                 f"({n * self.num_heads}, {tgt}, {src}), got "
                                 f"{describe(attn_mask.shape)}")
            bias = _additive(shaped, like, "attn_mask")
        if key_padding_mask is not None:
            if key_padding_mask.shape != (n, src):
                raise ShapeError(f"MultiHeadAttention: key_padding_mask must be ({n}, {src}), "
                                 f"got {describe(key_padding_mask.shape)}")
            pad = _additive(key_padding_mask.reshape(n, 1, 1, src), like, "key_padding_mask")
            bias = pad if bias is None else bias + pad
        return bias

    def extra_repr(self) -> str:
        return (f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, "
                f"dropout={self.dropout}, batch_first={self.batch_first}")


MultiheadAttention = MultiHeadAttention


def _additive(mask: Tensor, like: Tensor, name: str) -> Tensor:
    """A float mask as it is; a bool mask as 0 where allowed and -inf where True."""
    if mask.kind == "bool":
        zeros = Tensor.zeros(mask.shape, backend=like.backend, device=like.device,
                             dtype=like.dtype)
        return zeros.mask_fill(mask, float("-inf"))
    if mask.kind != "float":
        raise DTypeError(f"MultiHeadAttention: {name} must be a bool or float tensor, got "
                         f"{mask.kind} ({mask.dtype!r})")
    return mask if mask.dtype is like.dtype else mask.cast(like.dtype)
