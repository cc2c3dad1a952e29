"""ONNX's transformer operators (opset 23 on): Attention, the preview FlexAttention (with its
modifier subgraphs), RotaryEmbedding, SwiGLU, the KV-cache write TensorScatter, and the
recurrent-state ops LinearAttention and CausalConvWithState (RMSNormalization and Swish live
with the other normalizations and activations, in ``nn`` and ``elementwise``).

All are written with burnpy's tensor ops, so they run on every backend and differentiate.
Attention follows the operator's definition step by step: Q and K each scaled by
``sqrt(scale)``, GQA by repeating each KV head, the soft cap before the additive bias (the
attention mask, the offset-aware causal frontier, the sliding window and the ``nonpad``
padding), and a fully masked query row giving zeros rather than NaN. The masks that depend
only on shapes (causal, window, padding) are built on the host; a float ``attn_mask`` is added
as a tensor, so it can be trained too.
"""

from __future__ import annotations

import math

import numpy as np
from onnx import GraphProto

import burnpy
import burnpy.nn.functional as F
from burnpy.backend.dtype import DType
from burnpy.onnx.attributes import Attributes
from burnpy.onnx.dtypes import burnpy_dtype
from burnpy.onnx.registry import OpContext, Outputs, onnx_op
from burnpy.tensor import Tensor

Inputs = list[Tensor | None]

_ATTENTION = ("is_causal", "kv_num_heads", "q_num_heads", "qk_matmul_output_mode", "scale",
              "softcap", "softmax_precision")


def _float_input(ctx: OpContext, inputs: Inputs, index: int) -> Tensor:
    x = ctx.arg(inputs, index)
    if x.kind != "float":
        ctx.unsupported(f"input {index} of dtype {x.dtype!r}")
    return x


def _split_heads(ctx: OpContext, x: Tensor, heads: int, what: str) -> Tensor:
    """``[batch, seq, heads * size]`` -> ``[batch, heads, seq, size]``."""
    if heads <= 0 or x.shape[2] % heads:
        ctx.error(f"{what} of shape {x.shape} does not split into {heads} heads")
    batch, seq, hidden = x.shape
    return x.reshape(batch, seq, heads, hidden // heads).permute(0, 2, 1, 3)


def _structural_bias(ctx: OpContext, q_len: int, kv_len: int, causal: bool,
                     window: tuple[int, int], offset: int | np.ndarray,
                     nonpad: np.ndarray | None, dtype: DType) -> Tensor | None:
    """The additive bias (0 or -inf) of the constraints known from shapes alone: the causal
    frontier ``j <= i + offset``, the window around ``p = i + offset`` and the keys past each
    batch entry's ``nonpad`` length. ``offset`` is one int or one per batch entry."""
    if not causal and window == (-1, -1) and nonpad is None:
        return None
    i = np.arange(q_len).reshape(q_len, 1)
    j = np.arange(kv_len).reshape(1, kv_len)
    per_batch = np.ndim(offset) > 0
    pos = i + (np.reshape(offset, (-1, 1, 1)) if per_batch else offset)
    allowed = np.ones(pos.shape[:-1] + (kv_len,), dtype=bool)
    if causal:
        allowed &= j <= pos
    left, right = window
    if left >= 0:
        allowed &= pos - j <= left
    if right >= 0:
        allowed &= j - pos <= right
    if allowed.ndim == 3:
        allowed = allowed.reshape(allowed.shape[0], 1, q_len, kv_len)
    if nonpad is not None:
        allowed = allowed & (j < nonpad.reshape(-1, 1)).reshape(-1, 1, 1, kv_len)
    bias = np.where(allowed, 0.0, -np.inf)
    return ctx.constant(bias).cast(dtype)


def _mask_bias(ctx: OpContext, mask: Tensor, kv_len: int, dtype: DType) -> Tensor:
    """``attn_mask`` as an additive bias (bool: True attends; float: added), padded along
    the keys to ``kv_len`` with masked positions."""
    if mask.kind == "bool":
        bias = Tensor.zeros(mask.shape, dtype=dtype, backend=ctx.backend, device=ctx.device)
        bias = bias.mask_fill(mask.logical_not(), -math.inf)
    elif mask.kind == "float":
        bias = mask.cast(dtype)
    else:
        ctx.unsupported(f"attn_mask of dtype {mask.dtype!r}")
    short = kv_len - bias.shape[-1]
    if short > 0:
        pad = Tensor.full((*bias.shape[:-1], short), -math.inf, dtype=dtype,
                          backend=ctx.backend, device=ctx.device)
        bias = burnpy.cat([bias, pad], dim=-1)
    return bias


@onnx_op("Attention", 23, attrs=_ATTENTION)
@onnx_op("Attention", 25, attrs=(*_ATTENTION, "left_window_size", "right_window_size"))
def _attention(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX Attention: scaled dot-product attention over 3-d (heads from the attributes) or
    4-d Q, K, V, with MHA/GQA/MQA heads, masks, KV cache, soft cap and the QK debug output."""
    q, k, v = (_float_input(ctx, inputs, i) for i in range(3))
    mask = ctx.optional(inputs, 3)
    past_k, past_v = ctx.optional(inputs, 4), ctx.optional(inputs, 5)
    nonpad_t = ctx.optional(inputs, 6)
    if (past_k is None) != (past_v is None):
        ctx.error("past_key and past_value must be given together")
    if nonpad_t is not None and past_k is not None:
        ctx.error("nonpad_kv_seqlen cannot be combined with past_key/past_value")
    three_d = q.ndim == 3
    if three_d and k.ndim == 3 and v.ndim == 3:
        q = _split_heads(ctx, q, attrs.int("q_num_heads", 0), "Q")
        k = _split_heads(ctx, k, attrs.int("kv_num_heads", 0), "K")
        v = _split_heads(ctx, v, attrs.int("kv_num_heads", 0), "V")
    elif not (q.ndim == k.ndim == v.ndim == 4):
        ctx.error(f"Q, K, V must all be 3-d or all 4-d, got shapes {q.shape}, {k.shape}, "
                  f"{v.shape}")
    batch, heads, q_len, head_size = q.shape
    if past_k is not None and past_v is not None:
        k = burnpy.cat([past_k, k], dim=2)
        v = burnpy.cat([past_v, v], dim=2)
    present_k, present_v = k, v
    kv_len, kv_heads = k.shape[2], k.shape[1]
    if heads != kv_heads:
        if heads % kv_heads:
            ctx.error(f"{heads} query heads are not a multiple of {kv_heads} KV heads")
        k = k.repeat_interleave(heads // kv_heads, dim=1)
        v = v.repeat_interleave(heads // kv_heads, dim=1)

    nonpad = None if nonpad_t is None else np.asarray(ctx.ints(nonpad_t))
    offset: int | np.ndarray = 0
    if past_k is not None:
        offset = past_k.shape[2]
    elif nonpad is not None:
        offset = nonpad - q_len
    window = (attrs.int("left_window_size", -1), attrs.int("right_window_size", -1))
    if min(window) < -1:
        ctx.error(f"window sizes {window} (each is -1 or nonnegative)")
    parts = [_structural_bias(ctx, q_len, kv_len, attrs.int("is_causal", 0) != 0, window,
                              offset, nonpad, q.dtype)]
    if mask is not None:
        parts.append(_mask_bias(ctx, mask, kv_len, q.dtype))
    bias = None
    for part in parts:
        if part is not None:
            bias = part if bias is None else bias + part

    root = math.sqrt(attrs.float("scale", 1.0 / math.sqrt(head_size)))
    scores = (q * root) @ (k * root).swap_dims(-1, -2)
    softcap = attrs.float("softcap", 0.0)
    if softcap > 0:
        scores = (scores / softcap).tanh() * softcap
    mode = attrs.int("qk_matmul_output_mode", 0)
    if mode not in (0, 1, 2, 3):
        ctx.error(f"qk_matmul_output_mode={mode} (expected 0 to 3)")
    qk_out = scores
    logits = scores if bias is None else scores + bias
    if mode == 2:
        qk_out = logits
    precision = attrs.int("softmax_precision", 0)
    if precision:
        logits = logits.cast(burnpy_dtype(precision, ctx.label))
    masked_rows = None
    if bias is not None:
        masked_rows = bias.amax(dim=-1, keepdim=True) == -math.inf
        logits = logits.mask_fill(masked_rows, 0.0)
    if logits.dtype in (burnpy.float16, burnpy.bfloat16):
        # The op's softmax runs at the logits' precision; burnpy's half softmax accumulates
        # in float32, so compose it to round where the definition does.
        exp = (logits - logits.amax(dim=-1, keepdim=True)).exp()
        probs = exp / exp.sum(dim=-1, keepdim=True)
    else:
        probs = logits.softmax(-1)
    if masked_rows is not None:
        probs = probs.mask_fill(masked_rows, 0.0)
    if mode == 3:
        qk_out = probs
    y = probs.cast(q.dtype) @ v
    if three_d:
        y = y.permute(0, 2, 1, 3).reshape(batch, q_len, heads * v.shape[-1])
    return [y, present_k, present_v, qk_out.cast(q.dtype)]


@onnx_op("RotaryEmbedding", 23, attrs=("interleaved", "num_heads", "rotary_embedding_dim"))
def _rotary_embedding(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX RotaryEmbedding: rotates the first ``rotary_embedding_dim`` features of each head
    by the cached cos/sin (picked by ``position_ids`` when given), halves or interleaved."""
    x = _float_input(ctx, inputs, 0)
    cos, sin = ctx.arg(inputs, 1), ctx.arg(inputs, 2)
    positions = ctx.optional(inputs, 3)
    shape = x.shape
    if x.ndim == 4:  # [batch, heads, seq, size] -> [batch, seq, heads, size]
        x = x.permute(0, 2, 1, 3)
    elif x.ndim == 3:
        heads = attrs.int("num_heads", 0)
        if heads <= 0 or shape[2] % heads:
            ctx.error(f"a 3-d input of shape {shape} needs num_heads dividing its last dim")
        x = x.reshape(shape[0], shape[1], heads, shape[2] // heads)
    else:
        ctx.error(f"input must be 3-d or 4-d, got shape {shape}")
    size = x.shape[3]
    dim = attrs.int("rotary_embedding_dim", 0) or size
    if dim % 2 or dim > size:
        ctx.error(f"rotary_embedding_dim {dim} must be even and at most the head size {size}")
    if positions is not None:
        cos = cos[positions.cast(ctx.backend.int_dtype)]
        sin = sin[positions.cast(ctx.backend.int_dtype)]
    if cos.shape[-1] != dim // 2 or sin.shape[-1] != dim // 2:
        ctx.error(f"cos/sin caches of shapes {cos.shape}, {sin.shape} do not end in "
                  f"rotary_embedding_dim / 2 = {dim // 2}")
    cos, sin = cos.unsqueeze(2).cast(x.dtype), sin.unsqueeze(2).cast(x.dtype)
    rotate, keep = x[..., :dim], x[..., dim:]
    interleaved = attrs.int("interleaved", 0) != 0
    if interleaved:
        pairs = rotate.reshape(*rotate.shape[:3], dim // 2, 2)
        x1, x2 = pairs[..., 0], pairs[..., 1]
    else:
        x1, x2 = rotate[..., :dim // 2], rotate[..., dim // 2:]
    real = cos * x1 - sin * x2
    imag = sin * x1 + cos * x2
    if interleaved:
        rotated = burnpy.stack([real, imag], dim=-1).reshape(rotate.shape)
    else:
        rotated = burnpy.cat([real, imag], dim=-1)
    out = burnpy.cat([rotated, keep], dim=-1) if dim < size else rotated
    return out.reshape(shape) if len(shape) == 3 else out.permute(0, 2, 1, 3)


@onnx_op("SwiGLU", 28, attrs=("alpha",))
def _swiglu(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX SwiGLU: ``swish(A, alpha) * B`` for A and B of one shape and dtype."""
    a, b = _float_input(ctx, inputs, 0), _float_input(ctx, inputs, 1)
    if a.shape != b.shape or a.dtype != b.dtype:
        ctx.error(f"A ({a.shape}, {a.dtype!r}) and B ({b.shape}, {b.dtype!r}) must match")
    alpha = attrs.float("alpha", 1.0)
    return a * (a * alpha).sigmoid() * b


@onnx_op("CausalConvWithState", 27, attrs=("activation",))
def _causal_conv_with_state(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX CausalConvWithState: a depthwise causal 1-d convolution of ``[batch, channels,
    length]`` continuing from ``past_state`` (the last ``k - 1`` inputs, zeros when absent),
    optionally followed by SiLU; also returns the new state."""
    x, w = _float_input(ctx, inputs, 0), _float_input(ctx, inputs, 1)
    bias, past = ctx.optional(inputs, 2), ctx.optional(inputs, 3)
    activation = attrs.string("activation", "none")
    if activation not in ("none", "silu", "swish"):
        ctx.unsupported(f"activation={activation!r}", "activation")
    if x.ndim != 3 or w.ndim != 3 or w.shape[:2] != (x.shape[1], 1):
        ctx.error(f"input {x.shape} and weight {w.shape} are not [batch, channels, length] "
                  "and [channels, 1, k]")
    batch, channels, _ = x.shape
    k = w.shape[2]
    if past is None:
        past = Tensor.zeros((batch, channels, k - 1), dtype=x.dtype, backend=ctx.backend,
                            device=ctx.device)
    elif past.shape != (batch, channels, k - 1):
        ctx.error(f"past_state has shape {past.shape}, expected {(batch, channels, k - 1)}")
    padded = burnpy.cat([past, x], dim=2)
    out = F.conv1d(padded, w, bias, groups=channels)
    if activation != "none":
        wide = out.float() if out.dtype != burnpy.float64 else out
        out = (wide * wide.sigmoid()).cast(x.dtype)
    return [out, padded[:, :, padded.shape[2] - (k - 1):]]


@onnx_op("LinearAttention", 27, attrs=("chunk_size", "kv_num_heads", "q_num_heads", "scale",
                                       "update_rule"))
def _linear_attention(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX LinearAttention: a recurrent ``[d_k, d_v]`` state per KV head, decayed by
    ``exp(decay)`` (gated rules), corrected by the delta rule with ``beta`` (delta rules),
    added ``k v^T`` each step and read by ``scale * q @ state``; computed in float32
    (float64 for float64 inputs) one step at a time. ``chunk_size`` is a tuning hint only."""
    q, k, v = (_float_input(ctx, inputs, i) for i in range(3))
    past, decay, beta = (ctx.optional(inputs, i) for i in (3, 4, 5))
    rule = attrs.string("update_rule", "gated_delta")
    if rule not in ("linear", "gated", "delta", "gated_delta"):
        ctx.unsupported(f"update_rule={rule!r}", "update_rule")
    gated, delta = rule in ("gated", "gated_delta"), rule in ("delta", "gated_delta")
    if gated != (decay is not None) or delta != (beta is not None):
        ctx.error(f"update_rule {rule!r} takes decay {'given' if gated else 'absent'} and "
                  f"beta {'given' if delta else 'absent'}")
    qh, kvh = attrs.int("q_num_heads", 0), attrs.int("kv_num_heads", 0)
    if qh <= 0 or kvh <= 0 or qh % kvh:
        ctx.error(f"q_num_heads {qh} must be a positive multiple of kv_num_heads {kvh}")
    if q.ndim != 3 or k.ndim != 3 or v.ndim != 3:
        ctx.error(f"query, key, value must be 3-d, got {q.shape}, {k.shape}, {v.shape}")
    work = burnpy.float64 if q.dtype == burnpy.float64 else burnpy.float32
    b, t, _ = q.shape
    q4, k4, v4 = (_split_heads(ctx, x, n, name).cast(work) for x, n, name in
                  ((q, qh, "query"), (k, kvh, "key"), (v, kvh, "value")))
    d_k, d_v = q4.shape[3], v4.shape[3]
    if decay is not None:
        if decay.ndim != 3 or decay.shape[-1] not in (kvh, kvh * d_k):
            ctx.error(f"decay of shape {decay.shape} must end in {kvh} or {kvh * d_k}")
        decay = (decay.reshape(b, t, kvh, 1).permute(0, 2, 1, 3) if decay.shape[-1] == kvh
                 else _split_heads(ctx, decay, kvh, "decay")).cast(work).exp()
    if beta is not None:
        if beta.ndim != 3 or beta.shape[-1] not in (kvh, 1):
            ctx.error(f"beta of shape {beta.shape} must end in {kvh} or 1")
        beta = beta.reshape(b, t, beta.shape[-1], 1).permute(0, 2, 1, 3).cast(work)
    if past is not None and past.shape != (b, kvh, d_k, d_v):
        ctx.error(f"past_state has shape {past.shape}, expected {(b, kvh, d_k, d_v)}")
    state = past.cast(work) if past is not None else Tensor.zeros(
        (b, kvh, d_k, d_v), dtype=work, backend=ctx.backend, device=ctx.device)
    scale = attrs.float("scale", 0.0) or 1.0 / math.sqrt(d_k)
    outs = []
    for i in range(t):
        k_t, v_t = k4[:, :, i, :], v4[:, :, i, :]
        if decay is not None:
            state = state * decay[:, :, i, :].unsqueeze(-1)
        if beta is not None:
            retrieved = (k_t.unsqueeze(-2) @ state).squeeze(-2)
            v_t = beta[:, :, i, :] * (v_t - retrieved)
        state = state + k_t.unsqueeze(-1) * v_t.unsqueeze(-2)
        read = state if qh == kvh else state.repeat_interleave(qh // kvh, dim=1)
        outs.append((q4[:, :, i, :].unsqueeze(-2) @ read).squeeze(-2) * scale)
    out = burnpy.stack(outs, dim=2).permute(0, 2, 1, 3).reshape(b, t, qh * d_v)
    return [out.cast(q.dtype), state.cast(past.dtype if past is not None else q.dtype)]


@onnx_op("FlexAttention", 1, attrs=("prob_mod", "scale", "score_mod", "softmax_precision"),
         domain="ai.onnx.preview")
def _flex_attention(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ai.onnx.preview FlexAttention: attention over 4-d Q, K, V (GQA by repeating KV heads)
    whose scores and probabilities pass through the optional ``score_mod`` and ``prob_mod``
    subgraphs, the softmax in ``softmax_precision`` (float32 unless the input is float64)."""
    q, k, v = (_float_input(ctx, inputs, i) for i in range(3))
    if not (q.ndim == k.ndim == v.ndim == 4):
        ctx.error(f"Q, K, V must be 4-d, got shapes {q.shape}, {k.shape}, {v.shape}")
    heads, kv_heads = q.shape[1], k.shape[1]
    if v.shape[1] != kv_heads or v.shape[2] != k.shape[2] or k.shape[3] != q.shape[3]:
        ctx.error(f"K {k.shape} and V {v.shape} do not fit Q {q.shape}")
    if heads != kv_heads:
        if heads % kv_heads:
            ctx.error(f"{heads} query heads are not a multiple of {kv_heads} KV heads")
        k = k.repeat_interleave(heads // kv_heads, dim=1)
        v = v.repeat_interleave(heads // kv_heads, dim=1)
    # The definition takes the square root in float32.
    root = float(np.sqrt(np.float32(attrs.float("scale", 1.0 / math.sqrt(q.shape[3])))))
    precision = attrs.int("softmax_precision", 0)
    work = burnpy_dtype(precision, ctx.label) if precision else (
        burnpy.float64 if q.dtype == burnpy.float64 else burnpy.float32)
    scores = ((q * root) @ (k * root).swap_dims(-1, -2)).cast(work)
    score_mod, prob_mod = attrs.graph("score_mod"), attrs.graph("prob_mod")
    if score_mod is not None:
        scores = _modifier(ctx, score_mod, scores)
    exp = (scores - scores.amax(dim=-1, keepdim=True)).exp()
    probs = exp / exp.sum(dim=-1, keepdim=True)
    if prob_mod is not None:
        probs = _modifier(ctx, prob_mod, probs)
    return (probs @ v.cast(work)).cast(v.dtype)


def _modifier(ctx: OpContext, graph: GraphProto, x: Tensor) -> Tensor:
    """Run a one-input, one-output modifier subgraph of FlexAttention on ``x``."""
    if len(graph.input) != 1 or len(graph.output) != 1:
        ctx.error(f"modifier {graph.name!r} must take and give one tensor")
    (out,) = ctx.run_subgraph(graph, [x])
    if out is None or out.shape != x.shape:
        ctx.error(f"modifier {graph.name!r} must give a tensor of shape {x.shape}")
    return out.cast(x.dtype)


@onnx_op("TensorScatter", 24, attrs=("axis", "mode"))
def _tensor_scatter(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX TensorScatter: writes ``update`` into a KV cache along ``axis`` from each batch
    entry's ``write_indices`` (0 when absent), wrapping around under ``mode="circular"``."""
    cache, update = ctx.arg(inputs, 0), ctx.arg(inputs, 1)
    indices = ctx.optional(inputs, 2)
    mode = attrs.string("mode", "linear")
    if mode not in ("linear", "circular"):
        ctx.unsupported(f"mode={mode!r}", "mode")
    axis = attrs.int("axis", -2)
    if not -cache.ndim < axis < cache.ndim or axis % cache.ndim == 0:
        ctx.error(f"axis {axis} must name a non-batch dim of a {cache.ndim}-d cache")
    axis %= cache.ndim
    if update.ndim != cache.ndim or update.dtype != cache.dtype or any(
            u != c for i, (u, c) in enumerate(zip(update.shape, cache.shape, strict=True))
            if i != axis) or update.shape[axis] > cache.shape[axis]:
        ctx.error(f"update {update.shape} ({update.dtype!r}) does not fit cache "
                  f"{cache.shape} ({cache.dtype!r}) along axis {axis}")
    batch, length, size = cache.shape[0], update.shape[axis], cache.shape[axis]
    starts = ctx.ints(indices) if indices is not None else [0] * batch
    if len(starts) != batch:
        ctx.error(f"write_indices has {len(starts)} values for batch {batch}")
    rows = []
    for b, start in enumerate(starts):
        where = [start + i for i in range(length)]
        if mode == "circular":
            where = [w % size for w in where]
        elif start < 0 or start + length > size:
            ctx.error(f"batch entry {b} writes positions {start}..{start + length - 1} "
                      f"outside the cache's {size}")
        rows.append(cache[b].index_copy(axis - 1, ctx.constant(where, "int64"), update[b]))
    return burnpy.stack(rows, dim=0)
