"""Pieces the decoder architectures share: transformers' activations by config name and the
attention mask of a causal decoder (causality, cached positions, padding)."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from burnpy.backend.errors import ShapeError
from burnpy.models.modeling import ConfigError
from burnpy.nn import functional as F
from burnpy.tensor import Tensor

#: transformers' ``ACT2FN`` names this code honours, each as burnpy computes it.
ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {
    "gelu": F.gelu,
    "gelu_new": lambda x: F.gelu(x, approximate="tanh"),
    "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "relu": F.relu,
    "silu": F.silu,
    "swish": F.silu,
    "tanh": Tensor.tanh,
}


def activation(owner: str, field: str, name: str) -> Callable[[Tensor], Tensor]:
    """The activation config field ``field`` names; ``ConfigError`` for one not in the table."""
    fn = ACTIVATIONS.get(name)
    if fn is None:
        raise ConfigError(f"{owner}: config field {field} is {name!r}, which burnpy does not "
                          f"implement (supported: {sorted(ACTIVATIONS)})")
    return fn


class AttentionMask(NamedTuple):
    """What every layer's attention receives: a bool mask ``[batch, 1, seq, past + seq]`` (True
    where a query may attend), or None with ``is_causal`` for the plain causal case."""

    mask: Tensor | None
    is_causal: bool


def causal_mask(owner: str, like: Tensor, seq: int, past: int,
                attention_mask: Tensor | None) -> AttentionMask:
    """The mask of ``seq`` new queries after ``past`` cached positions: each query sees the
    keys up to its own position and, with ``attention_mask [batch, past + seq]`` (1 for a real
    token, 0 for padding), no padded key."""
    total = past + seq
    if attention_mask is None and (past == 0 or seq == 1):
        return AttentionMask(None, past == 0 and seq > 1)
    b, dev = like.backend, like.device
    queries = Tensor.arange(past, total, backend=b, device=dev).reshape(seq, 1)
    allowed = Tensor.arange(0, total, backend=b, device=dev).reshape(1, total) <= queries
    if attention_mask is None:
        return AttentionMask(allowed.reshape(1, 1, seq, total), False)
    keys = key_padding_mask(owner, attention_mask, like, total, "past + seq")
    return AttentionMask(allowed.reshape(1, 1, seq, total) & keys, False)


def key_padding_mask(owner: str, attention_mask: Tensor, like: Tensor, total: int,
                     keys: str = "seq") -> Tensor:
    """transformers' 0/1 ``attention_mask [batch, total]`` as a bool ``[batch, 1, 1, total]``
    mask, True where a key may be attended to, on ``like``'s backend and device (``like``: the
    hidden states ``[batch, ...]``); ``ShapeError`` names ``owner`` and the expected shape
    (``keys``: how the message names the key length)."""
    batch = like.shape[0]
    if attention_mask.shape != (batch, total):
        raise ShapeError(f"{owner}: attention_mask must be [batch, {keys}] = "
                         f"[{batch}, {total}], got {list(attention_mask.shape)}")
    if attention_mask.backend is not like.backend or attention_mask.device != like.device:
        attention_mask = attention_mask.to_backend(like.backend, like.device)
    return (attention_mask != 0).reshape(batch, 1, 1, total)
