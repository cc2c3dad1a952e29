"""Pooling layers over ``[batch, channels, *spatial]`` with torch's defaults: average, max,
adaptive, power-average and fractional max, 1-d to 3-d, and max unpooling."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from burnpy.backend.errors import InvalidArgumentError
from burnpy.nn import functional as F
from burnpy.nn.functional import IntOrTuple
from burnpy.nn.module import Module
from burnpy.tensor import Tensor


class MaxPool1d(Module):
    """Max over sliding windows (stride defaults to the kernel size)."""

    def __init__(self, kernel_size: IntOrTuple, stride: IntOrTuple | None = None,
                 padding: IntOrTuple = 0, dilation: IntOrTuple = 1,
                 return_indices: bool = False, ceil_mode: bool = False) -> None:
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.dilation, self.ceil_mode = dilation, ceil_mode
        self.return_indices = return_indices

    def forward(self, x: Tensor) -> Any:
        """``[batch, channels, length]`` -> the windows' maxima (and their flat indices with
        ``return_indices``, torch's)."""
        return F.max_pool1d(x, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride or self.kernel_size}, "
                f"padding={self.padding}")


class MaxPool2d(MaxPool1d):
    """2-d max pool."""

    def forward(self, x: Tensor) -> Any:
        """``[batch, channels, h, w]`` -> the windows' maxima (and indices, as MaxPool1d)."""
        return F.max_pool2d(x, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class AvgPool1d(Module):
    """Mean over sliding windows (torch's defaults: padding counted in the mean)."""

    def __init__(self, kernel_size: IntOrTuple, stride: IntOrTuple | None = None,
                 padding: IntOrTuple = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True) -> None:
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad

    def forward(self, x: Tensor) -> Tensor:
        """``[batch, channels, length]`` -> the windows' means."""
        return F.avg_pool1d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride or self.kernel_size}, "
                f"padding={self.padding}")


class AvgPool2d(AvgPool1d):
    """2-d average pool; ``divisor_override`` divides each window's sum instead."""

    def __init__(self, kernel_size: IntOrTuple, stride: IntOrTuple | None = None,
                 padding: IntOrTuple = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override: int | None = None) -> None:
        super().__init__(kernel_size, stride, padding, ceil_mode, count_include_pad)
        self.divisor_override = divisor_override

    def forward(self, x: Tensor) -> Tensor:
        """``[batch, channels, h, w]`` -> the windows' means."""
        return F.avg_pool2d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)


class AdaptiveAvgPool1d(Module):
    """Average pool to a fixed output size, whatever the input size."""

    def __init__(self, output_size: IntOrTuple) -> None:
        self.output_size = output_size

    def forward(self, x: Tensor) -> Tensor:
        """``[batch, channels, length]`` -> ``[batch, channels, output_size]``."""
        return F.adaptive_avg_pool1d(x, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool2d(AdaptiveAvgPool1d):
    """2-d adaptive average pool."""

    def forward(self, x: Tensor) -> Tensor:
        """``[batch, channels, h, w]`` -> ``[batch, channels, *output_size]``."""
        return F.adaptive_avg_pool2d(x, self.output_size)


class AvgPool3d(Module):
    """3-d average pool (stride defaults to the kernel size)."""

    def __init__(self, kernel_size: IntOrTuple, stride: IntOrTuple | None = None,
                 padding: IntOrTuple = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override: int | None = None) -> None:
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad
        self.divisor_override = divisor_override

    def forward(self, x: Tensor) -> Tensor:
        """``[batch, channels, d, h, w]`` -> the windows' means."""
        return F.avg_pool3d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxPool3d(Module):
    """3-d max pool (stride defaults to the kernel size)."""

    def __init__(self, kernel_size: IntOrTuple, stride: IntOrTuple | None = None,
                 padding: IntOrTuple = 0, dilation: IntOrTuple = 1,
                 return_indices: bool = False, ceil_mode: bool = False) -> None:
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.dilation, self.return_indices, self.ceil_mode = dilation, return_indices, ceil_mode

    def forward(self, x: Tensor) -> Any:
        """``[batch, channels, d, h, w]`` -> the windows' maxima (and their indices)."""
        return F.max_pool3d(x, self.kernel_size, self.stride, self.padding, self.dilation,
                            self.ceil_mode, self.return_indices)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AdaptiveAvgPool3d(Module):
    """Average pool to a fixed output size (None keeps a dim)."""

    def __init__(self, output_size: int | Sequence[int | None] | None) -> None:
        self.output_size = output_size

    def forward(self, x: Tensor) -> Tensor:
        """``[batch, channels, d, h, w]`` -> ``[batch, channels, *output_size]``."""
        return F.adaptive_avg_pool3d(x, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool1d(Module):
    """Max pool to a fixed output length."""

    def __init__(self, output_size: IntOrTuple, return_indices: bool = False) -> None:
        self.output_size, self.return_indices = output_size, return_indices

    def forward(self, x: Tensor) -> Any:
        """``[batch, channels, l]`` -> ``[batch, channels, output_size]`` (and indices)."""
        return F.adaptive_max_pool1d(x, self.output_size, self.return_indices)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool2d(AdaptiveMaxPool1d):
    """Max pool to a fixed output height and width."""

    def forward(self, x: Tensor) -> Any:
        """``[batch, channels, h, w]`` -> ``[batch, channels, *output_size]`` (and indices)."""
        return F.adaptive_max_pool2d(x, self.output_size, self.return_indices)


class AdaptiveMaxPool3d(AdaptiveMaxPool1d):
    """Max pool to a fixed output depth, height and width (None keeps a dim)."""

    def forward(self, x: Tensor) -> Any:
        """``[batch, channels, d, h, w]`` -> ``[batch, channels, *output_size]`` (and
        indices)."""
        return F.adaptive_max_pool3d(x, self.output_size, self.return_indices)


class LPPool1d(Module):
    """Power-average pool: ``(sum of x^p over each window) ^ (1/p)``."""

    def __init__(self, norm_type: float, kernel_size: IntOrTuple,
                 stride: IntOrTuple | None = None, ceil_mode: bool = False) -> None:
        self.norm_type, self.kernel_size = norm_type, kernel_size
        self.stride, self.ceil_mode = stride, ceil_mode

    def forward(self, x: Tensor) -> Tensor:
        """``[batch, channels, l]`` -> the windows' p-norms."""
        kernel = self.kernel_size if isinstance(self.kernel_size, int) else self.kernel_size[0]
        stride = self.stride if self.stride is None or isinstance(self.stride, int) else (
            self.stride[0])
        return F.lp_pool1d(x, self.norm_type, kernel, stride, self.ceil_mode)

    def extra_repr(self) -> str:
        return f"norm_type={self.norm_type}, kernel_size={self.kernel_size}"


class LPPool2d(LPPool1d):
    """2-d power-average pool."""

    def forward(self, x: Tensor) -> Tensor:
        """``[batch, channels, h, w]`` -> the windows' p-norms."""
        return F.lp_pool2d(x, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)


class LPPool3d(LPPool1d):
    """3-d power-average pool."""

    def forward(self, x: Tensor) -> Tensor:
        """``[batch, channels, d, h, w]`` -> the windows' p-norms."""
        return F.lp_pool3d(x, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)


class _FractionalMaxPool(Module):
    """Fractional max pooling's settings: a kernel and either an output size or a ratio."""

    _n = 2
    _random_samples: Tensor | None  # a buffer: in the state dict when given, as torch's

    def __init__(self, kernel_size: IntOrTuple, output_size: IntOrTuple | None = None,
                 output_ratio: float | Sequence[float] | None = None,
                 return_indices: bool = False, _random_samples: Tensor | None = None) -> None:
        name = type(self).__name__
        if (output_size is None) == (output_ratio is None):
            raise InvalidArgumentError(f"{name}: give exactly one of output_size and "
                                       f"output_ratio")
        if output_ratio is not None:
            ratios = ((output_ratio,) * self._n if isinstance(output_ratio, int | float)
                      else tuple(output_ratio))
            if not all(0.0 < r < 1.0 for r in ratios):
                raise InvalidArgumentError(f"{name}: output_ratio must be in (0, 1), got "
                                           f"{output_ratio!r}")
            output_ratio = ratios
        self.kernel_size, self.output_size, self.output_ratio = (kernel_size, output_size,
                                                                 output_ratio)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)  # torch's state-dict entry

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, output_size={self.output_size}, "
                f"output_ratio={self.output_ratio}")


class FractionalMaxPool2d(_FractionalMaxPool):
    """Max over pseudo-randomly placed windows of ``[batch, channels, h, w]`` (Graham's
    fractional max pooling); ``_random_samples [n, c, 2]`` fixes the placement."""

    def forward(self, x: Tensor) -> Any:
        """``[batch, channels, h, w]`` (or unbatched) -> the pooled maxima (and indices)."""
        return F.fractional_max_pool2d(x, self.kernel_size, self.output_size,
                                       self.output_ratio, self.return_indices,
                                       self._random_samples)


class FractionalMaxPool3d(_FractionalMaxPool):
    """Fractional max pooling of ``[batch, channels, d, h, w]``; ``_random_samples
    [n, c, 3]`` fixes the placement."""

    _n = 3

    def forward(self, x: Tensor) -> Any:
        """``[batch, channels, d, h, w]`` (or unbatched) -> the pooled maxima (and
        indices)."""
        return F.fractional_max_pool3d(x, self.kernel_size, self.output_size,
                                       self.output_ratio, self.return_indices,
                                       self._random_samples)


class MaxUnpool1d(Module):
    """The inverse of ``MaxPool1d``: values back at their max indices, zeros elsewhere."""

    def __init__(self, kernel_size: IntOrTuple, stride: IntOrTuple | None = None,
                 padding: IntOrTuple = 0) -> None:
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding

    def forward(self, x: Tensor, indices: Tensor,
                output_size: Sequence[int] | None = None) -> Tensor:
        """``[batch, channels, l]`` and MaxPool1d's indices -> the unpooled signal."""
        return F.max_unpool1d(x, indices, self.kernel_size, self.stride, self.padding,
                              output_size)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride or self.kernel_size}, "
                f"padding={self.padding}")


class MaxUnpool2d(MaxUnpool1d):
    """The inverse of ``MaxPool2d``."""

    def forward(self, x: Tensor, indices: Tensor,
                output_size: Sequence[int] | None = None) -> Tensor:
        """``[batch, channels, h, w]`` and MaxPool2d's indices -> the unpooled planes."""
        return F.max_unpool2d(x, indices, self.kernel_size, self.stride, self.padding,
                              output_size)


class MaxUnpool3d(MaxUnpool1d):
    """The inverse of ``MaxPool3d``."""

    def forward(self, x: Tensor, indices: Tensor,
                output_size: Sequence[int] | None = None) -> Tensor:
        """``[batch, channels, d, h, w]`` and MaxPool3d's indices -> the unpooled volumes."""
        return F.max_unpool3d(x, indices, self.kernel_size, self.stride, self.padding,
                              output_size)
