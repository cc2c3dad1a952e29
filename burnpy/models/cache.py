"""The key/value cache of the decoder models' inference path (transformers' ``DynamicCache``)."""

from __future__ import annotations

from burnpy.tensor import Tensor


class DynamicCache:
    """Per-layer keys and values ``[batch, kv_heads, seen, head_dim]`` of the positions seen so
    far; each forward appends its own."""

    __slots__ = ("keys", "values")

    def __init__(self) -> None:
        self.keys: list[Tensor] = []
        self.values: list[Tensor] = []

    def update(self, key: Tensor, value: Tensor, layer_idx: int) -> tuple[Tensor, Tensor]:
        """Append ``key``/``value`` to layer ``layer_idx``'s and return that layer's whole keys
        and values."""
        if layer_idx == len(self.keys):
            self.keys.append(key)
            self.values.append(value)
        else:
            self.keys[layer_idx] = Tensor.cat([self.keys[layer_idx], key], 2)
            self.values[layer_idx] = Tensor.cat([self.values[layer_idx], value], 2)
        return self.keys[layer_idx], self.values[layer_idx]

    def get_seq_length(self, layer_idx: int = 0) -> int:
        """How many positions layer ``layer_idx`` holds (0 when empty)."""
        return self.keys[layer_idx].shape[2] if layer_idx < len(self.keys) else 0
