"""Convolution layers: ``Conv1d``, ``Conv2d``, ``ConvTranspose1d``, ``ConvTranspose2d``.

Weights ``[out, in / groups, *kernel]`` (transposed: ``[in, out / groups, *kernel]``), all
initialized as torch's layers: uniform in +-1/sqrt(fan_in).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from burnpy.backend.device import Device
from burnpy.backend.dtype import DTypeLike
from burnpy.backend.errors import InvalidArgumentError, ShapeError, describe
from burnpy.nn import functional as F
from burnpy.nn import init
from burnpy.nn.module import Module
from burnpy.tensor import Tensor

if TYPE_CHECKING:
    from burnpy.backend.base import Backend

IntOrTuple = int | tuple[int, ...]


def _ntuple(name: str, value: IntOrTuple, n: int) -> tuple[int, ...]:
    out = (value,) * n if isinstance(value, int) else tuple(value)
    if len(out) != n:
        raise InvalidArgumentError(f"{name} must be an int or {n} ints, got {value!r}")
    return out


class _ConvNd(Module):
    """Shared configuration and checks of the convolution layers."""

    _n: int = 2
    _transposed: bool = False

    def __init__(self, in_channels: int, out_channels: int, kernel_size: IntOrTuple,
                 stride: IntOrTuple, padding: IntOrTuple, dilation: IntOrTuple, groups: int,
                 bias: bool, backend: type[Backend] | None, device: Device | None,
                 dtype: DTypeLike | None, output_padding: IntOrTuple = 0) -> None:
        name = type(self).__name__
        if groups < 1 or in_channels % groups or out_channels % groups:
            raise InvalidArgumentError(f"{name}: in_channels={in_channels} and out_channels="
                                       f"{out_channels} must be divisible by groups={groups}")
        n = self._n
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = _ntuple(f"{name}: kernel_size", kernel_size, n)
        self.stride = _ntuple(f"{name}: stride", stride, n)
        self.padding = _ntuple(f"{name}: padding", padding, n)
        self.dilation = _ntuple(f"{name}: dilation", dilation, n)
        self.output_padding = _ntuple(f"{name}: output_padding", output_padding, n)
        self.groups = groups
        if self._transposed:
            shape = (in_channels, out_channels // groups) + self.kernel_size
        else:
            shape = (out_channels, in_channels // groups) + self.kernel_size
        fan_in = shape[1] * math.prod(self.kernel_size)
        kw = init.Placement(backend=backend, device=device, dtype=dtype)
        self.weight = init.fan_in_uniform(shape, fan_in, **kw)
        self.bias = init.fan_in_uniform((out_channels,), fan_in, **kw) if bias else None

    def _check(self, x: Tensor) -> None:
        if x.ndim != self._n + 2 or x.shape[1] != self.in_channels:
            raise ShapeError(f"{type(self).__name__}(in_channels={self.in_channels}): expected "
                             f"input [batch, {self.in_channels}, {self._n} spatial dim(s)], got "
                             f"{describe(x.shape)}")

    def extra_repr(self) -> str:
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if any(self.padding):
            s += f", padding={self.padding}"
        if any(d != 1 for d in self.dilation):
            s += f", dilation={self.dilation}"
        if any(self.output_padding):
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        return s + ("" if self.bias is not None else ", bias=False")


class _Conv(_ConvNd):
    _fn: Callable[..., Tensor]

    def __init__(self, in_channels: int, out_channels: int, kernel_size: IntOrTuple,
                 stride: IntOrTuple = 1, padding: IntOrTuple = 0, dilation: IntOrTuple = 1,
                 groups: int = 1, bias: bool = True, *, backend: type[Backend] | None = None,
                 device: Device | None = None, dtype: DTypeLike | None = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, backend, device, dtype)

    def forward(self, x: Tensor) -> Tensor:
        self._check(x)
        return type(self)._fn(x, self.weight, self.bias, self.stride, self.padding,
                              self.dilation, self.groups)


class Conv1d(_Conv):
    """1-d convolution over ``[batch, in_channels, length]``."""

    _n = 1
    _fn = staticmethod(F.conv1d)


class Conv2d(_Conv):
    """2-d convolution over ``[batch, in_channels, height, width]``."""

    _n = 2
    _fn = staticmethod(F.conv2d)


class _ConvTranspose(_ConvNd):
    _transposed = True
    _fn: Callable[..., Tensor]

    def __init__(self, in_channels: int, out_channels: int, kernel_size: IntOrTuple,
                 stride: IntOrTuple = 1, padding: IntOrTuple = 0,
                 output_padding: IntOrTuple = 0, groups: int = 1, bias: bool = True,
                 dilation: IntOrTuple = 1, *, backend: type[Backend] | None = None,
                 device: Device | None = None, dtype: DTypeLike | None = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, backend, device, dtype, output_padding)

    def forward(self, x: Tensor) -> Tensor:
        self._check(x)
        return type(self)._fn(x, self.weight, self.bias, self.stride, self.padding,
                              self.output_padding, self.groups, self.dilation)


class ConvTranspose1d(_ConvTranspose):
    """1-d transposed convolution (torch's argument order)."""

    _n = 1
    _fn = staticmethod(F.conv_transpose1d)


class ConvTranspose2d(_ConvTranspose):
    """2-d transposed convolution (torch's argument order)."""

    _n = 2
    _fn = staticmethod(F.conv_transpose2d)
