"""Layout layers: ``Flatten`` and ``Unflatten``, and im2col / col2im as ``Unfold`` / ``Fold``."""

from __future__ import annotations

from collections.abc import Sequence

from burnpy.nn import functional as F
from burnpy.nn.functional import IntOrTuple
from burnpy.nn.module import Module
from burnpy.tensor import Tensor


class Flatten(Module):
    """Merge dims ``start_dim..end_dim`` (default: all but the batch dim)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x: Tensor) -> Tensor:
        """``x`` with dims ``start_dim..end_dim`` merged into one."""
        return x.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unfold(Module):
    """im2col: sliding blocks of ``[n, c, h, w]`` as columns ``[n, c * kh * kw, blocks]``."""

    def __init__(self, kernel_size: IntOrTuple, dilation: IntOrTuple = 1,
                 padding: IntOrTuple = 0, stride: IntOrTuple = 1) -> None:
        self.kernel_size, self.dilation = kernel_size, dilation
        self.padding, self.stride = padding, stride

    def forward(self, x: Tensor) -> Tensor:
        """The blocks of ``x`` as columns."""
        return F.unfold(x, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")


class Fold(Module):
    """col2im: columns ``[n, c * kh * kw, blocks]`` summed back into ``[n, c, *output]``."""

    def __init__(self, output_size: IntOrTuple, kernel_size: IntOrTuple,
                 dilation: IntOrTuple = 1, padding: IntOrTuple = 0,
                 stride: IntOrTuple = 1) -> None:
        self.output_size, self.kernel_size, self.dilation = output_size, kernel_size, dilation
        self.padding, self.stride = padding, stride

    def forward(self, x: Tensor) -> Tensor:
        """The columns of ``x`` folded into an image (overlaps summed)."""
        return F.fold(x, self.output_size, self.kernel_size, self.dilation, self.padding,
                      self.stride)

    def extra_repr(self) -> str:
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
                f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}")


class Unflatten(Module):
    """Splits dim ``dim`` into ``unflattened_size`` (the inverse of ``Flatten``)."""

    def __init__(self, dim: int, unflattened_size: Sequence[int]) -> None:
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, x: Tensor) -> Tensor:
        """``x`` with dim ``dim`` unflattened (one size may be -1)."""
        return x.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
