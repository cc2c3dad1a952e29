"""Vision layers: ``PixelShuffle`` and its inverse ``PixelUnshuffle``, ``ChannelShuffle``,
and the resampling ``Upsample``, ``UpsamplingNearest2d`` and ``UpsamplingBilinear2d``."""

from __future__ import annotations

from collections.abc import Sequence

from burnpy.nn import functional as F
from burnpy.nn.functional import IntOrTuple
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


class ChannelShuffle(Module):
    """Interleaves ``groups`` groups of channels of ``[n, c, *]`` (ShuffleNet)."""

    def __init__(self, groups: int) -> None:
        self.groups = groups

    def forward(self, x: Tensor) -> Tensor:
        """``[n, c, *]`` with its channel groups interleaved; same shape."""
        return F.channel_shuffle(x, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"


class Upsample(Module):
    """Resizes ``[n, c, *spatial]`` to ``size`` or by ``scale_factor`` (``F.interpolate``'s
    modes: nearest, linear, bilinear, bicubic, trilinear)."""

    def __init__(self, size: IntOrTuple | None = None,
                 scale_factor: float | Sequence[float] | None = None, mode: str = "nearest",
                 align_corners: bool | None = None,
                 recompute_scale_factor: bool | None = None) -> None:
        self.size, self.mode, self.align_corners = size, mode, align_corners
        self.scale_factor = (None if scale_factor is None else float(scale_factor)
                             if isinstance(scale_factor, int | float)
                             else tuple(float(f) for f in scale_factor))
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, x: Tensor) -> Tensor:
        """``x`` resized over its spatial dims."""
        return F.interpolate(x, self.size, self.scale_factor, self.mode, self.align_corners,
                             self.recompute_scale_factor)

    def extra_repr(self) -> str:
        what = (f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None
                else f"size={self.size!r}")
        return f"{what}, mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """Nearest-neighbour upsampling of ``[n, c, h, w]`` (``Upsample(mode="nearest")``)."""

    def __init__(self, size: IntOrTuple | None = None,
                 scale_factor: float | Sequence[float] | None = None) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Bilinear upsampling of ``[n, c, h, w]`` with aligned corners (torch's)."""

    def __init__(self, size: IntOrTuple | None = None,
                 scale_factor: float | Sequence[float] | None = None) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)
