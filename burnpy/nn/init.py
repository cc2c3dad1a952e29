"""Weight initializers with torch.nn.init's formulas, returning fresh tensors.

Each takes the ``shape`` to fill and the usual ``backend``/``device``/``dtype`` keywords and
samples from the backend's seeded generator. Fans follow torch: for a weight
``[out, in, *kernel]``, ``fan_in = in * prod(kernel)`` and ``fan_out = out * prod(kernel)``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, TypedDict

from burnpy.backend.device import Device
from burnpy.backend.distribution import Distribution
from burnpy.backend.dtype import DTypeLike
from burnpy.backend.errors import InvalidArgumentError, ShapeError, describe
from burnpy.tensor import Tensor

if TYPE_CHECKING:
    from burnpy.backend.base import Backend

FanMode = Literal["fan_in", "fan_out"]


class Placement(TypedDict):
    """The ``backend``/``device``/``dtype`` keywords of the initializers and layers, as one
    value a layer passes on to its parameters and sub-layers (``**placement``)."""

    backend: type[Backend] | None
    device: Device | None
    dtype: DTypeLike | None


def calculate_fans(shape: Sequence[int]) -> tuple[int, int]:
    """(fan_in, fan_out) of a weight of ``shape`` (at least 2-d)."""
    if len(shape) < 2:
        raise ShapeError(f"calculate_fans: need a weight with at least 2 dims, got "
                         f"{describe(tuple(shape))}")
    receptive = math.prod(shape[2:])
    return shape[1] * receptive, shape[0] * receptive


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for a nonlinearity (torch.nn.init.calculate_gain)."""
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d", "sigmoid")
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise InvalidArgumentError(f"calculate_gain: unknown nonlinearity {nonlinearity!r}")


def uniform(shape: Sequence[int], low: float = 0.0, high: float = 1.0, *,
            backend: type[Backend] | None = None, device: Device | None = None,
            dtype: DTypeLike | None = None) -> Tensor:
    """Samples of U(low, high); ``low == high`` gives a constant."""
    if high == low:
        return constant(shape, low, backend=backend, device=device, dtype=dtype)
    return Tensor.random(tuple(shape), Distribution.uniform(low, high), backend=backend,
                         device=device, dtype=dtype)


def normal(shape: Sequence[int], mean: float = 0.0, std: float = 1.0, *,
           backend: type[Backend] | None = None, device: Device | None = None,
           dtype: DTypeLike | None = None) -> Tensor:
    """Samples of N(mean, std^2)."""
    return Tensor.random(tuple(shape), Distribution.normal(mean, std), backend=backend,
                         device=device, dtype=dtype)


def constant(shape: Sequence[int], value: float, *, backend: type[Backend] | None = None,
             device: Device | None = None, dtype: DTypeLike | None = None) -> Tensor:
    return Tensor.full(tuple(shape), float(value), backend=backend, device=device, dtype=dtype)


def zeros(shape: Sequence[int], *, backend: type[Backend] | None = None,
          device: Device | None = None, dtype: DTypeLike | None = None) -> Tensor:
    return Tensor.zeros(tuple(shape), backend=backend, device=device, dtype=dtype)


def ones(shape: Sequence[int], *, backend: type[Backend] | None = None,
         device: Device | None = None, dtype: DTypeLike | None = None) -> Tensor:
    return Tensor.ones(tuple(shape), backend=backend, device=device, dtype=dtype)


def _kaiming_std(shape: Sequence[int], a: float, mode: FanMode, nonlinearity: str) -> float:
    if mode not in ("fan_in", "fan_out"):
        raise InvalidArgumentError(f"kaiming: mode must be 'fan_in' or 'fan_out', got {mode!r}")
    fan_in, fan_out = calculate_fans(shape)
    fan = fan_in if mode == "fan_in" else fan_out
    if fan == 0:
        raise ShapeError(f"kaiming: cannot initialize a weight with zero {mode} "
                         f"(shape {describe(tuple(shape))})")
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform(shape: Sequence[int], a: float = 0.0, mode: FanMode = "fan_in",
                    nonlinearity: str = "leaky_relu", *, backend: type[Backend] | None = None,
                    device: Device | None = None, dtype: DTypeLike | None = None) -> Tensor:
    """U(-b, b) with b = gain * sqrt(3 / fan) (He et al.)."""
    bound = math.sqrt(3.0) * _kaiming_std(shape, a, mode, nonlinearity)
    return uniform(shape, -bound, bound, backend=backend, device=device, dtype=dtype)


def kaiming_normal(shape: Sequence[int], a: float = 0.0, mode: FanMode = "fan_in",
                   nonlinearity: str = "leaky_relu", *, backend: type[Backend] | None = None,
                   device: Device | None = None, dtype: DTypeLike | None = None) -> Tensor:
    """N(0, std^2) with std = gain / sqrt(fan) (He et al.)."""
    return normal(shape, 0.0, _kaiming_std(shape, a, mode, nonlinearity), backend=backend,
                  device=device, dtype=dtype)


def xavier_uniform(shape: Sequence[int], gain: float = 1.0, *,
                   backend: type[Backend] | None = None, device: Device | None = None,
                   dtype: DTypeLike | None = None) -> Tensor:
    """U(-b, b) with b = gain * sqrt(6 / (fan_in + fan_out)) (Glorot and Bengio)."""
    fan_in, fan_out = calculate_fans(shape)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform(shape, -bound, bound, backend=backend, device=device, dtype=dtype)


def xavier_normal(shape: Sequence[int], gain: float = 1.0, *,
                  backend: type[Backend] | None = None, device: Device | None = None,
                  dtype: DTypeLike | None = None) -> Tensor:
    """N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = calculate_fans(shape)
    std = gain * math.sqrt(2.0 / (fan_in + fan_out))
    return normal(shape, 0.0, std, backend=backend, device=device, dtype=dtype)


def fan_in_uniform(shape: Sequence[int], fan_in: int, *, backend: type[Backend] | None = None,
                   device: Device | None = None, dtype: DTypeLike | None = None) -> Tensor:
    """U(-1/sqrt(fan_in), 1/sqrt(fan_in)): torch's default for Linear/Conv weights and biases.

    (For weights it equals ``kaiming_uniform(a=sqrt(5))``.)
    """
    bound = 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
    return uniform(shape, -bound, bound, backend=backend, device=device, dtype=dtype)
