"""Convolution layers: ``Conv1d/2d/3d`` and ``ConvTranspose1d/2d/3d``, and their lazy forms
(``LazyConv1d``..., ``in_channels`` from the first input).

Weights ``[out, in / groups, *kernel]`` (transposed: ``[in, out / groups, *kernel]``), all
initialized as torch's layers: uniform in +-1/sqrt(fan_in). Convolutions take torch's
``padding="same"|"valid"`` and ``padding_mode`` ("zeros", "reflect", "replicate",
"circular"); a non-zeros mode pads the input first (``F.pad``) and convolves unpadded.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from burnpy.backend.device import Device
from burnpy.backend.dtype import DTypeLike
from burnpy.backend.errors import InvalidArgumentError, ShapeError, describe
from burnpy.nn import functional as F
from burnpy.nn import init
from burnpy.nn.lazy import LazyModuleMixin, state_dim
from burnpy.nn.module import Module
from burnpy.tensor import Tensor

if TYPE_CHECKING:
    from burnpy.backend.base import Backend

IntOrTuple = int | tuple[int, ...]
PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _ntuple(name: str, value: IntOrTuple, n: int) -> tuple[int, ...]:
    out = (value,) * n if isinstance(value, int) else tuple(value)
    if len(out) != n:
        raise InvalidArgumentError(f"{name} must be an int or {n} ints, got {value!r}")
    return out


class _ConvNd(Module):
    """Shared configuration and checks of the convolution layers."""

    _n: int = 2
    _transposed: bool = False
    padding: tuple[int, ...] | str

    def __init__(self, in_channels: int, out_channels: int, kernel_size: IntOrTuple,
                 stride: IntOrTuple, padding: IntOrTuple | str, dilation: IntOrTuple,
                 groups: int, bias: bool, padding_mode: str, backend: type[Backend] | None,
                 device: Device | None, dtype: DTypeLike | None,
                 output_padding: IntOrTuple = 0) -> None:
        name = type(self).__name__
        if groups < 1 or in_channels % groups or out_channels % groups:
            raise InvalidArgumentError(f"{name}: in_channels={in_channels} and out_channels="
                                       f"{out_channels} must be divisible by groups={groups}")
        if padding_mode not in PADDING_MODES:
            raise InvalidArgumentError(f"{name}: padding_mode must be one of {PADDING_MODES}, "
                                       f"got {padding_mode!r}")
        if self._transposed and padding_mode != "zeros":
            raise InvalidArgumentError(f"{name}: only padding_mode='zeros' is supported (as "
                                       f"torch), got {padding_mode!r}")
        n = self._n
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = _ntuple(f"{name}: kernel_size", kernel_size, n)
        self.stride = _ntuple(f"{name}: stride", stride, n)
        self.dilation = _ntuple(f"{name}: dilation", dilation, n)
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise InvalidArgumentError(f"{name}: padding must be ints, 'valid' or 'same', "
                                           f"got {padding!r}")
            if padding == "same" and any(s != 1 for s in self.stride):
                raise InvalidArgumentError(f"{name}: padding='same' is not supported for "
                                           f"strided convolutions (stride {self.stride})")
            self.padding = padding
        else:
            self.padding = _ntuple(f"{name}: padding", padding, n)
        self.output_padding = _ntuple(f"{name}: output_padding", output_padding, n)
        self.groups, self.padding_mode = groups, padding_mode
        if self._transposed:
            shape = (in_channels, out_channels // groups) + self.kernel_size
        else:
            shape = (out_channels, in_channels // groups) + self.kernel_size
        fan_in = shape[1] * math.prod(self.kernel_size)
        kw = init.Placement(backend=backend, device=device, dtype=dtype)
        self.weight = init.fan_in_uniform(shape, fan_in, **kw)
        self.bias = init.fan_in_uniform((out_channels,), fan_in, **kw) if bias else None

    def _check(self, x: Tensor) -> None:
        if x.ndim not in (self._n + 1, self._n + 2) or x.shape[-self._n - 1] != self.in_channels:
            raise ShapeError(f"{type(self).__name__}(in_channels={self.in_channels}): expected "
                             f"input [batch, {self.in_channels}, {self._n} spatial dim(s)] (or "
                             f"unbatched [{self.in_channels}, ...]), got {describe(x.shape)}")

    def extra_repr(self) -> str:
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if isinstance(self.padding, str) or any(self.padding):
            s += f", padding={self.padding}"
        if any(d != 1 for d in self.dilation):
            s += f", dilation={self.dilation}"
        if any(self.output_padding):
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        return s + ("" if self.padding_mode == "zeros" else
                    f", padding_mode={self.padding_mode}")


class _Conv(_ConvNd):
    _fn: Callable[..., Tensor]

    def __init__(self, in_channels: int, out_channels: int, kernel_size: IntOrTuple,
                 stride: IntOrTuple = 1, padding: IntOrTuple | str = 0,
                 dilation: IntOrTuple = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", *, backend: type[Backend] | None = None,
                 device: Device | None = None, dtype: DTypeLike | None = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, backend, device, dtype)

    def _pad_widths(self) -> list[int]:
        """``F.pad``'s widths (last dim first) for a non-zeros ``padding_mode``: torch's
        ``_reversed_padding_repeated_twice`` ("same": the odd cell after)."""
        widths: list[int] = []
        for i in range(self._n):
            if isinstance(self.padding, str):
                total = self.dilation[i] * (self.kernel_size[i] - 1) if (
                    self.padding == "same") else 0
                widths = [total // 2, total - total // 2, *widths]
            else:
                widths = [self.padding[i], self.padding[i], *widths]
        return widths

    def forward(self, x: Tensor) -> Tensor:
        """``[batch, in_channels, *spatial]`` (or unbatched) convolved by the weight."""
        self._check(x)
        padding: IntOrTuple | str = self.padding
        if self.padding_mode != "zeros":
            x = F.pad(x, self._pad_widths(), mode=self.padding_mode)
            padding = 0
        return type(self)._fn(x, self.weight, self.bias, self.stride, padding, self.dilation,
                              self.groups)


class Conv1d(_Conv):
    """1-d convolution over ``[batch, in_channels, length]``."""

    _n = 1
    _fn = staticmethod(F.conv1d)


class Conv2d(_Conv):
    """2-d convolution over ``[batch, in_channels, height, width]``."""

    _n = 2
    _fn = staticmethod(F.conv2d)


class Conv3d(_Conv):
    """3-d convolution over ``[batch, in_channels, depth, height, width]``."""

    _n = 3
    _fn = staticmethod(F.conv3d)


class _ConvTranspose(_ConvNd):
    _transposed = True
    _fn: Callable[..., Tensor]
    padding: tuple[int, ...]

    def __init__(self, in_channels: int, out_channels: int, kernel_size: IntOrTuple,
                 stride: IntOrTuple = 1, padding: IntOrTuple = 0,
                 output_padding: IntOrTuple = 0, groups: int = 1, bias: bool = True,
                 dilation: IntOrTuple = 1, padding_mode: str = "zeros", *,
                 backend: type[Backend] | None = None, device: Device | None = None,
                 dtype: DTypeLike | None = None) -> None:
        if isinstance(padding, str):
            raise InvalidArgumentError(f"{type(self).__name__}: padding must be ints, got "
                                       f"{padding!r}")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, backend, device, dtype, output_padding)

    def _output_padding(self, x: Tensor, output_size: Sequence[int] | None) -> tuple[int, ...]:
        """torch's ``output_padding`` for a requested ``output_size`` (its trailing spatial
        sizes), which must lie within one stride of the smallest output."""
        if output_size is None:
            return self.output_padding
        n = self._n
        wanted = tuple(output_size)[-n:]
        if len(wanted) != n:
            raise ShapeError(f"{type(self).__name__}: output_size must end with {n} spatial "
                             f"sizes, got {tuple(output_size)!r}")
        out = []
        for i, size in enumerate(wanted):
            least = ((x.shape[x.ndim - n + i] - 1) * self.stride[i] - 2 * self.padding[i]
                     + self.dilation[i] * (self.kernel_size[i] - 1) + 1)
            if not least <= size < least + self.stride[i]:
                raise ShapeError(f"{type(self).__name__}: requested output_size {wanted} is "
                                 f"not reachable from input {describe(x.shape)}: dim {i} "
                                 f"must be in [{least}, {least + self.stride[i] - 1}]")
            out.append(size - least)
        return tuple(out)

    def forward(self, x: Tensor, output_size: Sequence[int] | None = None) -> Tensor:
        """``[batch, in_channels, *spatial]`` (or unbatched) upsampled by the transposed
        convolution; ``output_size`` picks the output padding that reaches that size."""
        self._check(x)
        return type(self)._fn(x, self.weight, self.bias, self.stride, self.padding,
                              self._output_padding(x, output_size), self.groups,
                              self.dilation)


class ConvTranspose1d(_ConvTranspose):
    """1-d transposed convolution (torch's argument order)."""

    _n = 1
    _fn = staticmethod(F.conv_transpose1d)


class ConvTranspose2d(_ConvTranspose):
    """2-d transposed convolution (torch's argument order)."""

    _n = 2
    _fn = staticmethod(F.conv_transpose2d)


class ConvTranspose3d(_ConvTranspose):
    """3-d transposed convolution (torch's argument order)."""

    _n = 3
    _fn = staticmethod(F.conv_transpose3d)


class _LazyConvNd(LazyModuleMixin):
    """Where a lazy convolution finds ``in_channels``: the input's channel dim, the weight's
    dim 1 times ``groups`` (transposed: dim 0)."""

    _n: int
    _transposed: bool
    groups: int
    out_channels: int

    def _input_features(self, input: Tensor) -> int:
        n = self._n
        if input.ndim not in (n + 1, n + 2):
            raise ShapeError(f"{type(self).__name__}(out_channels={self.out_channels}): "
                             f"expected a {n + 2}-d input (or an unbatched {n + 1}-d one) to "
                             f"infer in_channels from, got {describe(input.shape)}")
        return input.shape[-n - 1]

    def _features_in_state(self, state: Mapping[str, Any], prefix: str) -> int | None:
        if self._transposed:
            return state_dim(state, prefix + "weight", 0)
        per_group = state_dim(state, prefix + "weight", 1)
        return None if per_group is None else per_group * self.groups


class _LazyConv(_LazyConvNd):
    """A lazy convolution's arguments: torch's, without ``in_channels``."""

    def __init__(self, out_channels: int, kernel_size: IntOrTuple, stride: IntOrTuple = 1,
                 padding: IntOrTuple | str = 0, dilation: IntOrTuple = 1, groups: int = 1,
                 bias: bool = True, padding_mode: str = "zeros", *,
                 backend: type[Backend] | None = None, device: Device | None = None,
                 dtype: DTypeLike | None = None) -> None:
        self._start_lazy(out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, backend=backend, device=device, dtype=dtype)


class _LazyConvTranspose(_LazyConvNd):
    """A lazy transposed convolution's arguments: torch's, without ``in_channels``."""

    def __init__(self, out_channels: int, kernel_size: IntOrTuple, stride: IntOrTuple = 1,
                 padding: IntOrTuple = 0, output_padding: IntOrTuple = 0, groups: int = 1,
                 bias: bool = True, dilation: IntOrTuple = 1, padding_mode: str = "zeros", *,
                 backend: type[Backend] | None = None, device: Device | None = None,
                 dtype: DTypeLike | None = None) -> None:
        self._start_lazy(out_channels, kernel_size, stride, padding, output_padding, groups,
                         bias, dilation, padding_mode, backend=backend, device=device,
                         dtype=dtype)


class LazyConv1d(_LazyConv, Conv1d):
    """A ``Conv1d`` whose ``in_channels`` comes from its first input; it then becomes one."""

    cls_to_become = Conv1d


class LazyConv2d(_LazyConv, Conv2d):
    """A ``Conv2d`` whose ``in_channels`` comes from its first input; it then becomes one."""

    cls_to_become = Conv2d


class LazyConv3d(_LazyConv, Conv3d):
    """A ``Conv3d`` whose ``in_channels`` comes from its first input; it then becomes one."""

    cls_to_become = Conv3d


class LazyConvTranspose1d(_LazyConvTranspose, ConvTranspose1d):
    """A ``ConvTranspose1d`` whose ``in_channels`` comes from its first input; it then
    becomes one."""

    cls_to_become = ConvTranspose1d


class LazyConvTranspose2d(_LazyConvTranspose, ConvTranspose2d):
    """A ``ConvTranspose2d`` whose ``in_channels`` comes from its first input; it then
    becomes one."""

    cls_to_become = ConvTranspose2d


class LazyConvTranspose3d(_LazyConvTranspose, ConvTranspose3d):
    """A ``ConvTranspose3d`` whose ``in_channels`` comes from its first input; it then
    becomes one."""

    cls_to_become = ConvTranspose3d
