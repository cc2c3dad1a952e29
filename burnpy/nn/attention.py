"""``MultiHeadAttention``: torch.nn.MultiheadAttention's semantics, torch's ``(L, N, E)``
layout by default (``batch_first=True`` for ``(N, L, E)``), unbatched ``(L, E)`` inputs too.

Parameters are named as torch's (``in_proj_weight``, ``in_proj_bias``, ``out_proj``; with
``kdim``/``vdim`` different from ``embed_dim``: ``q_proj_weight``, ``k_proj_weight``,
``v_proj_weight``; ``bias_k``, ``bias_v`` with ``add_bias_kv``), so a torch state dict loads
as it is. Without ``need_weights`` the heads run through ``F.scaled_dot_product_attention``
(the backend's fused attention op when the masks are bool or causal).
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
    where attention is **not** allowed; a float mask is added to the scores. ``add_bias_kv``
    appends the learned ``bias_k``/``bias_v`` as one more key and value, ``add_zero_attn`` a
    zero one (the masks get an allowed column for each).
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False,
                 kdim: int | None = None, vdim: int | None = None, batch_first: bool = False,
                 device: Device | None = None, dtype: DTypeLike | None = None, *,
                 backend: type[Backend] | None = None) -> None:
        if embed_dim <= 0 or num_heads < 1 or embed_dim % num_heads:
            raise InvalidArgumentError(f"MultiHeadAttention: embed_dim={embed_dim} must be "
                                       f"positive and divisible by num_heads={num_heads}")
        self.embed_dim, self.num_heads, self.dropout = embed_dim, num_heads, dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        self.kdim = embed_dim if kdim is None else kdim
        self.vdim = embed_dim if vdim is None else vdim
        self.add_zero_attn = add_zero_attn
        kw = init.Placement(backend=backend, device=device, dtype=dtype)
        if self.kdim == embed_dim and self.vdim == embed_dim:
            self.in_proj_weight = init.xavier_uniform((3 * embed_dim, embed_dim), **kw)
        else:
            self.q_proj_weight = init.xavier_uniform((embed_dim, embed_dim), **kw)
            self.k_proj_weight = init.xavier_uniform((embed_dim, self.kdim), **kw)
            self.v_proj_weight = init.xavier_uniform((embed_dim, self.vdim), **kw)
        self.in_proj_bias = init.zeros((3 * embed_dim,), **kw) if bias else None
        self.bias_k = init.xavier_normal((1, 1, embed_dim), **kw) if add_bias_kv else None
        self.bias_v = init.xavier_normal((1, 1, embed_dim), **kw) if add_bias_kv else None
        self.out_proj = Linear(embed_dim, embed_dim, bias, **kw)  # after the tensors, as torch's
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
        if key is value:
            kv = F.linear(key, w[e:], None if b is None else b[e:]).chunk(2, dim=-1)
            return (F.linear(query, w[:e], bq), *kv)
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
        ``is_causal`` is torch's hint that ``attn_mask`` is the causal mask (then, without
        weights or a padding mask, the causal attention runs without reading it); without
        ``attn_mask`` it masks future positions itself.
        """
        self._check(query, key, value)
        same = query is key and key is value
        unbatched = query.ndim == 2
        if unbatched:
            query, key, value = query.unsqueeze(0), key.unsqueeze(0), value.unsqueeze(0)
            if key_padding_mask is not None and key_padding_mask.ndim == 1:
                key_padding_mask = key_padding_mask.unsqueeze(0)
            if attn_mask is not None and attn_mask.ndim == 3:
                attn_mask = attn_mask.unsqueeze(0)
        elif not self.batch_first:
            query, key, value = query.swap_dims(0, 1), key.swap_dims(0, 1), value.swap_dims(0, 1)
        n, tgt, _ = query.shape
        h, d = self.num_heads, self.head_dim
        q, k, v = self._project(query, key, value, same)
        attn_mask, key_padding_mask = self._shaped_masks(attn_mask, key_padding_mask, n, tgt,
                                                         key.shape[1], unbatched)
        if self.bias_k is not None and self.bias_v is not None:
            k = Tensor.cat([k, self.bias_k.expand(n, 1, self.embed_dim)], 1)
            v = Tensor.cat([v, self.bias_v.expand(n, 1, self.embed_dim)], 1)
            attn_mask, key_padding_mask = _allow_one_more(attn_mask), \
                _allow_one_more(key_padding_mask)
        src = k.shape[1]
        q = q.reshape(n, tgt, h, d).swap_dims(1, 2)
        k = k.reshape(n, src, h, d).swap_dims(1, 2)
        v = v.reshape(n, src, h, d).swap_dims(1, 2)
        if self.add_zero_attn:
            k, v = _zero_key(k), _zero_key(v)
            attn_mask, key_padding_mask = _allow_one_more(attn_mask), \
                _allow_one_more(key_padding_mask)
        p = self.dropout if self.training else 0.0
        causal = is_causal and key_padding_mask is None and (attn_mask is None or not need_weights)
        mask = None if causal else _merged(attn_mask, key_padding_mask, query, is_causal)
        if need_weights:
            scores = (q * (1.0 / math.sqrt(d))) @ k.swap_dims(-2, -1)
            if causal:
                scores = scores.mask_fill(_causal(tgt, k.shape[2], query), float("-inf"))
            elif mask is not None:
                scores = (scores + mask if mask.kind == "float"
                          else scores.mask_fill(~mask, float("-inf")))
            weights: Tensor | None = F.dropout(scores.softmax(-1), p, self.training)
            assert weights is not None
            out = weights @ v
        else:
            out = F.scaled_dot_product_attention(q, k, v, mask, p, causal)
            weights = None
        out = self.out_proj(out.swap_dims(1, 2).reshape(n, tgt, self.embed_dim))
        if unbatched:
            out = out[0]
        elif not self.batch_first:
            out = out.swap_dims(0, 1)
        if weights is None:
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

    def _shaped_masks(self, attn_mask: Tensor | None, key_padding_mask: Tensor | None, n: int,
                      tgt: int, src: int, unbatched: bool) -> tuple[Tensor | None, Tensor | None]:
        """The masks checked and shaped to broadcast over ``[n, heads, tgt, src]`` scores:
        ``attn_mask`` as ``[1 or n, 1 or heads, tgt, src]``, ``key_padding_mask`` as ``[n, 1,
        1, src]``; each still True (or -inf) where attention is not allowed."""
        h = self.num_heads
        if attn_mask is not None:
            _check_kind(attn_mask, "attn_mask")
            if attn_mask.shape == (tgt, src):
                attn_mask = attn_mask.reshape(1, 1, tgt, src)
            elif attn_mask.shape == (n * h, tgt, src) or (unbatched
                                                         and attn_mask.shape == (1, h, tgt, src)):
                attn_mask = attn_mask.reshape(n, h, tgt, src)
            else:
                heads = f"({h}, {tgt}, {src})" if unbatched else f"({n * h}, {tgt}, {src})"
                raise ShapeError(f"MultiHeadAttention: attn_mask must be ({tgt}, {src}) or "
                                 f"{heads}, got {describe(attn_mask.shape)}")
        if key_padding_mask is not None:
            _check_kind(key_padding_mask, "key_padding_mask")
            if key_padding_mask.shape != (n, src):
                want = f"({src},)" if unbatched else f"({n}, {src})"
                raise ShapeError(f"MultiHeadAttention: key_padding_mask must be {want}, got "
                                 f"{describe(key_padding_mask.shape[int(unbatched):])}")
            key_padding_mask = key_padding_mask.reshape(n, 1, 1, src)
        return attn_mask, key_padding_mask

    def extra_repr(self) -> str:
        return (f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, "
                f"dropout={self.dropout}, batch_first={self.batch_first}")


MultiheadAttention = MultiHeadAttention


def _check_kind(mask: Tensor, name: str) -> None:
    if mask.kind not in ("bool", "float"):
        raise DTypeError(f"MultiHeadAttention: {name} must be a bool or float tensor, got "
                         f"{mask.kind} ({mask.dtype!r})")


def _allow_one_more(mask: Tensor | None) -> Tensor | None:
    """``mask`` with one more key column, allowed (False, or 0.0), as torch's ``pad``."""
    if mask is None:
        return None
    extra = Tensor.zeros((*mask.shape[:-1], 1), backend=mask.backend, device=mask.device,
                         dtype=mask.dtype)
    return Tensor.cat([mask, extra], -1)


def _zero_key(x: Tensor) -> Tensor:
    """``[n, heads, S, d]`` with a zero key (or value) appended (torch's ``add_zero_attn``)."""
    n, h, _, d = x.shape
    return Tensor.cat([x, Tensor.zeros((n, h, 1, d), backend=x.backend, device=x.device,
                                       dtype=x.dtype)], 2)


def _causal(tgt: int, src: int, like: Tensor) -> Tensor:
    """``[tgt, src]``, True above the diagonal (the future a causal query may not see)."""
    rows = Tensor.arange(tgt, backend=like.backend, device=like.device).reshape(tgt, 1)
    cols = Tensor.arange(src, backend=like.backend, device=like.device).reshape(1, src)
    return cols > rows


def _merged(attn_mask: Tensor | None, key_padding_mask: Tensor | None, like: Tensor,
            is_causal: bool) -> Tensor | None:
    """One mask for ``scaled_dot_product_attention`` (its meaning: a bool mask is True where
    attention **is** allowed, a float one is added): bool when every mask given is, else
    additive in the query's dtype."""
    if attn_mask is None and is_causal:
        src = key_padding_mask.shape[-1] if key_padding_mask is not None else 0
        attn_mask = _causal(like.shape[1], src, like)
    masks = [m for m in (attn_mask, key_padding_mask) if m is not None]
    if not masks:
        return None
    if all(m.kind == "bool" for m in masks):
        blocked = masks[0] if len(masks) == 1 else masks[0] | masks[1]
        return ~blocked
    out = None
    for m in masks:
        add = _additive(m, like)
        out = add if out is None else out + add
    return out


def _additive(mask: Tensor, like: Tensor) -> Tensor:
    """A float mask as it is (in ``like``'s dtype); a bool mask as 0 where allowed and -inf
    where True."""
    if mask.kind == "bool":
        zeros = Tensor.zeros(mask.shape, backend=like.backend, device=like.device,
                             dtype=like.dtype)
        return zeros.mask_fill(mask, float("-inf"))
    return mask if mask.dtype is like.dtype else mask.cast(like.dtype)
