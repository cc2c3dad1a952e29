"""Devices: a backend names where its tensors live with a hashable ``Device`` value."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Device:
    """A place tensors live: ``type`` names the backend family ("cpu", "cuda", "wgpu"),
    ``index`` picks one of several such devices."""

    type: str
    index: int = 0

    def __str__(self) -> str:
        return f"{self.type}:{self.index}"
