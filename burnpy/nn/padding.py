"""Padding layers with torch's names: constant, zero, reflection, replication and circular
padding of the last 1, 2 or 3 dims (``burnpy.nn.functional.pad``)."""

from __future__ import annotations

from burnpy.nn import functional as F
from burnpy.nn.functional import IntOrTuple
from burnpy.nn.module import Module
from burnpy.tensor import Tensor


class _Pad(Module):
    """Pads the trailing dims (torch's ``*PadNd`` layers)."""

    _mode = "constant"
    _dims = 1

    def __init__(self, padding: IntOrTuple, value: float = 0.0) -> None:
        self.padding = ((padding,) * (2 * self._dims) if isinstance(padding, int)
                        else tuple(padding))
        self.value = value

    def forward(self, x: Tensor) -> Tensor:
        """``x`` padded along its last dims."""
        return F.pad(x, self.padding, self._mode, self.value if self._mode == "constant"
                     else None)

    def extra_repr(self) -> str:
        return f"padding={self.padding}"


class ConstantPad1d(_Pad):
    """Pads the last dim with ``value``."""

    def forward(self, x: Tensor) -> Tensor:
        """``x`` padded along its last dim."""
        return super().forward(x)


class ConstantPad2d(ConstantPad1d):
    """Pads the last two dims with ``value``."""

    _dims = 2


class ConstantPad3d(ConstantPad1d):
    """Pads the last three dims with ``value``."""

    _dims = 3


class ZeroPad1d(ConstantPad1d):
    """Pads the last dim with zeros."""

    def __init__(self, padding: IntOrTuple) -> None:
        super().__init__(padding, 0.0)


class ZeroPad2d(ZeroPad1d):
    """Pads the last two dims with zeros."""

    _dims = 2


class ZeroPad3d(ZeroPad1d):
    """Pads the last three dims with zeros."""

    _dims = 3


class ReflectionPad1d(ZeroPad1d):
    """Pads the last dim by reflection (the edge is not repeated)."""

    _mode = "reflect"


class ReflectionPad2d(ReflectionPad1d):
    """Pads the last two dims by reflection."""

    _dims = 2


class ReflectionPad3d(ReflectionPad1d):
    """Pads the last three dims by reflection."""

    _dims = 3


class ReplicationPad1d(ZeroPad1d):
    """Pads the last dim by repeating the edge."""

    _mode = "replicate"


class ReplicationPad2d(ReplicationPad1d):
    """Pads the last two dims by repeating the edges."""

    _dims = 2


class ReplicationPad3d(ReplicationPad1d):
    """Pads the last three dims by repeating the edges."""

    _dims = 3


class CircularPad1d(ZeroPad1d):
    """Pads the last dim by wrapping around."""

    _mode = "circular"


class CircularPad2d(CircularPad1d):
    """Pads the last two dims by wrapping around."""

    _dims = 2


class CircularPad3d(CircularPad1d):
    """Pads the last three dims by wrapping around."""

    _dims = 3
