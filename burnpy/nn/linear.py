"""``Linear`` and ``Bilinear`` (torch's shapes, defaults and initialization), ``LazyLinear``
and the placeholder ``Identity``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from burnpy.backend.device import Device
from burnpy.backend.dtype import DTypeLike
from burnpy.backend.errors import ShapeError, describe
from burnpy.nn import functional as F
from burnpy.nn import init
from burnpy.nn.lazy import LazyModuleMixin, state_dim
from burnpy.nn.module import Module
from burnpy.tensor import Tensor

if TYPE_CHECKING:
    from burnpy.backend.base import Backend


class Linear(Module):
    """``y = x @ weight.T + bias`` with ``weight [out_features, in_features]``.

    Initialized as torch: weight and bias uniform in +-1/sqrt(in_features).
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, *,
                 backend: type[Backend] | None = None, device: Device | None = None,
                 dtype: DTypeLike | None = None) -> None:
        self.in_features, self.out_features = in_features, out_features
        kw = init.Placement(backend=backend, device=device, dtype=dtype)
        self.weight = init.fan_in_uniform((out_features, in_features), in_features, **kw)
        self.bias = init.fan_in_uniform((out_features,), in_features, **kw) if bias else None

    def forward(self, input: Tensor) -> Tensor:
        """``[..., in_features] -> [..., out_features]`` (``input=`` by name, as torch's)."""
        shape = input.shape
        if not shape or shape[-1] != self.in_features:
            raise ShapeError(f"Linear(in_features={self.in_features}): the input's last dim "
                             f"must be {self.in_features}, got shape {describe(shape)}")
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class LazyLinear(LazyModuleMixin, Linear):
    """A ``Linear`` whose ``in_features`` is its first input's last dim; it then becomes a
    ``Linear`` (see ``burnpy.nn.lazy``)."""

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, *,
                 backend: type[Backend] | None = None, device: Device | None = None,
                 dtype: DTypeLike | None = None) -> None:
        self._start_lazy(out_features, bias, backend=backend, device=device, dtype=dtype)

    def _input_features(self, input: Tensor) -> int:
        if not input.shape:
            raise ShapeError(f"LazyLinear(out_features={self.out_features}): the input needs "
                             f"a last dim to infer in_features from, got shape "
                             f"{describe(input.shape)}")
        return input.shape[-1]

    def _features_in_state(self, state: Mapping[str, Any], prefix: str) -> int | None:
        return state_dim(state, prefix + "weight", 1)


class Bilinear(Module):
    """``y = x1^T A x2 + b`` with ``weight [out_features, in1_features, in2_features]``.

    Initialized as torch: weight and bias uniform in +-1/sqrt(in1_features).
    """

    def __init__(self, in1_features: int, in2_features: int, out_features: int,
                 bias: bool = True, *, backend: type[Backend] | None = None,
                 device: Device | None = None, dtype: DTypeLike | None = None) -> None:
        self.in1_features, self.in2_features = in1_features, in2_features
        self.out_features = out_features
        kw = init.Placement(backend=backend, device=device, dtype=dtype)
        self.weight = init.fan_in_uniform((out_features, in1_features, in2_features),
                                          in1_features, **kw)
        self.bias = (init.fan_in_uniform((out_features,), in1_features, **kw) if bias
                     else None)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        """``[..., in1_features]`` and ``[..., in2_features]`` -> ``[..., out_features]``."""
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class Identity(Module):
    """Returns its input: a placeholder layer."""

    def forward(self, input: Tensor) -> Tensor:
        """``input`` itself."""
        return input
