"""Dropout layers: ``Dropout`` (elementwise), ``Dropout1d/2d/3d`` (whole channels),
``AlphaDropout`` and ``FeatureAlphaDropout`` (for SELU networks); identity in eval."""

from __future__ import annotations

from burnpy.backend.errors import InvalidArgumentError
from burnpy.nn import functional as F
from burnpy.nn.module import Module
from burnpy.tensor import Tensor


class _DropoutNd(Module):
    """torch's ``p`` (checked) and ``inplace``, shown by ``extra_repr``."""

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        if not 0.0 <= p <= 1.0:
            raise InvalidArgumentError(f"{type(self).__name__}: p must be in [0, 1], got {p}")
        self.p, self.inplace = p, inplace

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Randomly zeroes elements with probability ``p`` while training (torch.nn.Dropout)."""

    def forward(self, x: Tensor) -> Tensor:
        """``x`` (any shape) with dropped elements zeroed and the rest scaled by ``1/(1-p)``;
        ``x`` itself in eval mode."""
        return F.dropout(x, self.p, self.training, self.inplace)


class Dropout1d(_DropoutNd):
    """Zeroes whole channels of ``[batch, channels, length]`` with probability ``p``."""

    def forward(self, x: Tensor) -> Tensor:
        """``[n, c, l]`` (or ``[c, l]``) with dropped channels zeroed, the rest scaled."""
        return F.dropout1d(x, self.p, self.training, self.inplace)


class Dropout2d(_DropoutNd):
    """Zeroes whole channels of ``[batch, channels, h, w]`` with probability ``p``."""

    def forward(self, x: Tensor) -> Tensor:
        """``[n, c, h, w]`` with dropped channels zeroed, the rest scaled."""
        return F.dropout2d(x, self.p, self.training, self.inplace)


class Dropout3d(_DropoutNd):
    """Zeroes whole channels of ``[batch, channels, d, h, w]`` with probability ``p``."""

    def forward(self, x: Tensor) -> Tensor:
        """``[n, c, d, h, w]`` (or ``[c, d, h, w]``) with dropped channels zeroed."""
        return F.dropout3d(x, self.p, self.training, self.inplace)


class AlphaDropout(_DropoutNd):
    """Dropout keeping a SELU network's mean and variance (torch.nn.AlphaDropout)."""

    def forward(self, x: Tensor) -> Tensor:
        """``x`` (any shape) alpha-dropped in training; ``x`` itself in eval."""
        return F.alpha_dropout(x, self.p, self.training, self.inplace)


class FeatureAlphaDropout(_DropoutNd):
    """Alpha dropout of whole channels of ``[batch, channels, *]``."""

    def forward(self, x: Tensor) -> Tensor:
        """``[n, c, *]`` with dropped channels at SELU's saturation, all affinely rescaled."""
        return F.feature_alpha_dropout(x, self.p, self.training, self.inplace)
