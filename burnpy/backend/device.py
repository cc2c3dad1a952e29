"""Devices: a backend names where its tensors live with a hashable ``Device`` value."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Device:
    """A place tensors live: ``type`` names the backend family ("cpu", "cuda", "wgpu"),
    ``index`` picks one of several such devices."""

    type: str
    index: int = 0

    def __eq__(self, other: object) -> bool:
        # Written out for speed: every op's device check compares a backend's one Device
        # object with itself, which the generated tuple comparison makes 5x slower.
        if self is other:
            return True
        if not isinstance(other, Device):
            return NotImplemented
        return self.type == other.type and self.index == other.index

    def __hash__(self) -> int:
        return hash(self.type) ^ self.index

    def __str__(self) -> str:
        return f"{self.type}:{self.index}"
