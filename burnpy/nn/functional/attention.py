"""``scaled_dot_product_attention`` with torch's signature: one backend op, or composed of
Tensor ops where a float mask needs its gradient or weights are dropped."""

from __future__ import annotations

from burnpy.backend.errors import DTypeError, InvalidArgumentError, KindError, ShapeError, describe
from burnpy.nn.functional._common import _same
from burnpy.nn.functional.dropout import dropout
from burnpy.tensor import Tensor
from burnpy.tensor._core import BOOL, FLOAT, check_same_backend, new
from burnpy.tensor.autocast_hook import autocast_op
from burnpy.tensor.checks import broadcast_shapes


@autocast_op("scaled_dot_product_attention")
def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor,
                                 attn_mask: Tensor | None = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, *, scale: float | None = None,
                                 enable_gqa: bool = False) -> Tensor:
    """softmax(q k^T * scale + mask) v over ``[..., seq, dim]`` (torch's signature): a bool
    ``attn_mask`` is True where attention is allowed, a float one is added to the scores (and
    receives a gradient); both broadcast to ``[..., L, S]``. ``is_causal`` masks keys after
    each query (top-left aligned); ``enable_gqa`` repeats key/value heads (dim -3) to the
    query's. A row with every key masked gets zero weights, as torch's. ``dropout_p > 0``
    drops weights with the backend's seeded generator (as ``dropout``)."""
    op = "scaled_dot_product_attention"
    if query.kind is not FLOAT:
        raise KindError(f"{op}: query must be a float tensor, got {query.kind} "
                        f"({query.dtype!r})")
    _same(op, query, key, value)
    q_shape, k_shape, v_shape = query.shape, key.shape, value.shape
    if len(q_shape) < 2 or len(k_shape) < 2 or len(v_shape) < 2:
        raise ShapeError(f"{op}: query, key and value must be [..., seq, dim], got "
                         f"{describe(q_shape)}, {describe(k_shape)}, {describe(v_shape)}")
    if k_shape[-1] != q_shape[-1] or k_shape[-2] != v_shape[-2]:
        raise ShapeError(f"{op}: shapes q {describe(q_shape)}, k {describe(k_shape)}, "
                         f"v {describe(v_shape)} do not fit")
    if not 0.0 <= dropout_p <= 1.0:
        raise InvalidArgumentError(f"{op}: dropout_p must be in [0, 1], got {dropout_p}")
    if enable_gqa:
        key, value = _repeat_kv_heads(op, query, key), _repeat_kv_heads(op, query, value)
    batch = broadcast_shapes(op, broadcast_shapes(op, q_shape[:-2], key.shape[:-2]),
                             value.shape[:-2])
    if attn_mask is not None:
        _check_attention_mask(op, query, attn_mask, batch + (q_shape[-2], k_shape[-2]))
    if q_shape[:-2] != batch or key.shape[:-2] != batch or value.shape[:-2] != batch:
        query = query.expand(batch + query.shape[-2:])
        key = key.expand(batch + key.shape[-2:])
        value = value.expand(batch + value.shape[-2:])
    if dropout_p > 0.0 or (attn_mask is not None and attn_mask.kind is FLOAT):
        return _composed_attention(query, key, value, attn_mask, dropout_p, is_causal, scale)
    b = query.backend
    mask = None if attn_mask is None else attn_mask.primitive
    return new(b, b.attention(query.primitive, key.primitive, value.primitive, mask, scale,
                              is_causal), FLOAT)


attention = scaled_dot_product_attention


def _repeat_kv_heads(op: str, query: Tensor, kv: Tensor) -> Tensor:
    """``kv [..., Hkv, S, d]`` with each head repeated ``Hq / Hkv`` times along dim -3
    (torch's ``enable_gqa``)."""
    if query.ndim < 3 or kv.ndim < 3:
        raise ShapeError(f"{op}: enable_gqa needs [..., heads, seq, dim] tensors, got query "
                         f"{describe(query.shape)}, key/value {describe(kv.shape)}")
    heads, kv_heads = query.shape[-3], kv.shape[-3]
    if kv_heads == 0 or heads % kv_heads:
        raise ShapeError(f"{op}: enable_gqa needs the key/value heads ({kv_heads}) to divide "
                         f"the query heads ({heads})")
    return kv if heads == kv_heads else kv.repeat_interleave(heads // kv_heads, -3)


def _check_attention_mask(op: str, query: Tensor, mask: Tensor, scores: tuple[int, ...]) -> None:
    """A bool mask, or a float mask of the query's dtype, broadcastable to ``scores``."""
    check_same_backend(op, query, mask)
    if mask.kind is FLOAT:
        if mask.dtype is not query.dtype:
            raise DTypeError(f"{op}: a float attn_mask must have the query's dtype "
                             f"{query.dtype!r}, got {mask.dtype!r}")
    elif mask.kind is not BOOL:
        raise KindError(f"{op}: attn_mask must be bool (True = attend) or float (added), got "
                        f"{mask.kind} ({mask.dtype!r})")
    try:
        fits = broadcast_shapes(op, scores, mask.shape) == scores
    except ShapeError:
        fits = False
    if not fits:
        raise ShapeError(f"{op}: attn_mask {describe(mask.shape)} does not broadcast to the "
                         f"scores {describe(scores)}")


def _composed_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None,
                        dropout_p: float, is_causal: bool, scale: float | None) -> Tensor:
    """The attention composed of Tensor ops (a float mask then gets its gradient), dropping
    weights after the softmax (torch's); rows with every key at -inf get zero weights."""
    s = 1.0 / float(query.shape[-1]) ** 0.5 if scale is None else scale
    scores = query.matmul(key.swap_dims(-2, -1)) * s
    lq, lk = query.shape[-2], key.shape[-2]
    if is_causal:
        rows = Tensor.arange(lq, backend=query.backend, device=query.device).reshape(lq, 1)
        cols = Tensor.arange(lk, backend=query.backend, device=query.device).reshape(1, lk)
        scores = scores.mask_fill(cols > rows, float("-inf"))
    if attn_mask is not None:
        scores = (scores + attn_mask if attn_mask.kind is FLOAT
                  else scores.mask_fill(~attn_mask, float("-inf")))
    dead = scores.amax(-1, keepdim=True) == float("-inf")
    weights = scores.mask_fill(dead, 0.0).softmax(-1).mask_fill(dead, 0.0)
    return dropout(weights, dropout_p).matmul(value)
