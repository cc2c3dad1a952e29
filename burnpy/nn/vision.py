"""Vision layers: ``PixelShuffle`` and its inverse ``PixelUnshuffle``."""

from __future__ import annotations

from burnpy.nn import functional as F
from burnpy.nn.module import Module
from burnpy.tensor import Tensor


class PixelShuffle(Module):
    """``[*, c * r^2, h, w]`` to ``[*, c, h * r, w * r]``."""

    def __init__(self, upscale_factor: int) -> None:
        self.upscale_factor = upscale_factor

    def forward(self, x: Tensor) -> Tensor:
        """Channels rearranged into an ``upscale_factor`` times larger plane."""
        return F.pixel_shuffle(x, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """``[*, c, h * r, w * r]`` to ``[*, c * r^2, h, w]``."""

    def __init__(self, downscale_factor: int) -> None:
        self.downscale_factor = downscale_factor

    def forward(self, x: Tensor) -> Tensor:
        """The plane folded into ``downscale_factor^2`` times more channels."""
        return F.pixel_unshuffle(x, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"
