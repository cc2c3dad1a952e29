"""Weight initializers with torch.nn.init's formulas.

Two spellings: functions returning fresh tensors (``xavier_uniform(shape, ...)``, with the
usual ``backend``/``device``/``dtype`` keywords), and torch's in-place ones
(``xavier_uniform_(tensor, ...)``, same names and signatures as ``torch.nn.init``) that fill a
tensor and keep it the same object, a trainable leaf, so tied weights stay tied. Both sample
from the backend's seeded generator. Fans follow torch: for a weight ``[out, in, *kernel]``,
``fan_in = in * prod(kernel)`` and ``fan_out = out * prod(kernel)``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Literal, TypedDict

import numpy as np

from burnpy.autodiff.modes import no_grad
from burnpy.backend.device import Device
from burnpy.backend.distribution import Distribution
from burnpy.backend.dtype import DTypeLike
from burnpy.backend.errors import InvalidArgumentError, KindError, ShapeError, describe
from burnpy.tensor import Tensor

if TYPE_CHECKING:
    from burnpy.backend.base import Backend

FanMode = Literal["fan_in", "fan_out"]

_SKIPPED: ContextVar[bool] = ContextVar("init_skipped", default=False)


@contextmanager
def no_init_weights() -> Iterator[None]:
    """Inside, the sampling initializers leave values unset (``uniform``/``normal`` give
    ``Tensor.empty``, the in-place ones leave the tensor as it is), as transformers'
    ``no_init_weights``: a model whose every weight is loaded next never samples or touches
    memory it is about to replace."""
    token = _SKIPPED.set(True)
    try:
        yield
    finally:
        _SKIPPED.reset(token)


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
    if _SKIPPED.get():
        return Tensor.empty(tuple(shape), backend=backend, device=device, dtype=dtype)
    if high == low:
        return constant(shape, low, backend=backend, device=device, dtype=dtype)
    return Tensor.random(tuple(shape), Distribution.uniform(low, high), backend=backend,
                         device=device, dtype=dtype)


def normal(shape: Sequence[int], mean: float = 0.0, std: float = 1.0, *,
           backend: type[Backend] | None = None, device: Device | None = None,
           dtype: DTypeLike | None = None) -> Tensor:
    """Samples of N(mean, std^2)."""
    if _SKIPPED.get():
        return Tensor.empty(tuple(shape), backend=backend, device=device, dtype=dtype)
    return Tensor.random(tuple(shape), Distribution.normal(mean, std), backend=backend,
                         device=device, dtype=dtype)


def constant(shape: Sequence[int], value: float, *, backend: type[Backend] | None = None,
             device: Device | None = None, dtype: DTypeLike | None = None) -> Tensor:
    """A tensor of ``shape`` filled with ``value``."""
    return Tensor.full(tuple(shape), float(value), backend=backend, device=device, dtype=dtype)


def zeros(shape: Sequence[int], *, backend: type[Backend] | None = None,
          device: Device | None = None, dtype: DTypeLike | None = None) -> Tensor:
    """A tensor of zeros."""
    return Tensor.zeros(tuple(shape), backend=backend, device=device, dtype=dtype)


def ones(shape: Sequence[int], *, backend: type[Backend] | None = None,
         device: Device | None = None, dtype: DTypeLike | None = None) -> Tensor:
    """A tensor of ones."""
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


# ---- in place, with torch.nn.init's names and signatures ----------------------------------------
def _fill(tensor: Tensor, value: Tensor) -> Tensor:
    """Make ``tensor`` hold ``value`` in place, under ``no_grad`` as torch's initialisers do:
    the object and, for a parameter, its leaf identity stay (tied weights stay tied, its
    gradient keeps its key), and a graph that saved the old value refuses its backward."""
    if _SKIPPED.get():
        return tensor
    with no_grad():
        return tensor.copy_(value)


def _float_target(op: str, tensor: Tensor) -> Placement:
    """The placement of ``tensor``, which must be a float tensor to be filled by ``op``."""
    if tensor.kind != "float":
        raise KindError(f"{op}: fills float tensors, got a {tensor.kind} tensor of shape "
                        f"{describe(tensor.shape)} and dtype {tensor.dtype!r} on "
                        f"{tensor.device}")
    return Placement(backend=tensor.backend, device=tensor.device, dtype=tensor.dtype)


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    """(fan_in, fan_out) of a weight tensor (torch's private helper of the same name)."""
    return calculate_fans(tensor.shape)


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0) -> Tensor:
    """Fill ``tensor`` in place with samples of U(a, b); returns it."""
    where = _float_target("uniform_", tensor)
    return _fill(tensor, uniform(tensor.shape, a, b, **where))


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0) -> Tensor:
    """Fill ``tensor`` in place with samples of N(mean, std^2); returns it."""
    where = _float_target("normal_", tensor)
    return _fill(tensor, normal(tensor.shape, mean, std, **where))


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0,
                  b: float = 2.0) -> Tensor:
    """Fill ``tensor`` in place with N(mean, std^2) truncated to [a, b] (absolute bounds, as
    torch's); returns it. Samples outside are drawn again until none is left (efficient
    while [a, b] holds a fair share of the mass, as torch's default of 2 std does)."""
    op = "trunc_normal_"
    where = _float_target(op, tensor)
    if not a < b or std <= 0:
        raise InvalidArgumentError(f"{op}: need a < b and std > 0, got a={a}, b={b}, std={std} "
                                   f"(tensor of shape {describe(tensor.shape)}, "
                                   f"{tensor.dtype!r})")
    if _SKIPPED.get():  # normal() gives unset values: nothing to truncate, the tensor stays
        return tensor
    value = normal(tensor.shape, mean, std, **where).detach()
    outside = (value < a) | (value > b)
    while bool(outside.any()):
        value = value.mask_where(outside, normal(tensor.shape, mean, std, **where).detach())
        outside = (value < a) | (value > b)
    return _fill(tensor, value)


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill ``tensor`` in place with ``val``; returns it."""
    if tensor.kind not in ("float", "int", "bool"):
        raise KindError(f"constant_: cannot fill a {tensor.kind} tensor of dtype "
                        f"{tensor.dtype!r}")
    return _fill(tensor, Tensor.full(tensor.shape, val, backend=tensor.backend,
                                     device=tensor.device, dtype=tensor.dtype))


def zeros_(tensor: Tensor) -> Tensor:
    """Fill ``tensor`` in place with zeros; returns it."""
    return constant_(tensor, 0)


def ones_(tensor: Tensor) -> Tensor:
    """Fill ``tensor`` in place with ones; returns it."""
    return constant_(tensor, 1)


def eye_(tensor: Tensor) -> Tensor:
    """Fill the 2-d ``tensor`` in place with the identity (ones on the diagonal); returns it."""
    if tensor.ndim != 2:
        raise ShapeError(f"eye_: only 2-d tensors are supported, got shape "
                         f"{describe(tensor.shape)}")
    n, m = tensor.shape
    return _fill(tensor, Tensor.eye(n, m, backend=tensor.backend, device=tensor.device,
                                    dtype=tensor.dtype))


def xavier_uniform_(tensor: Tensor, gain: float = 1.0) -> Tensor:
    """Fill ``tensor`` in place with U(-b, b), b = gain * sqrt(6 / (fan_in + fan_out))."""
    where = _float_target("xavier_uniform_", tensor)
    return _fill(tensor, xavier_uniform(tensor.shape, gain, **where))


def xavier_normal_(tensor: Tensor, gain: float = 1.0) -> Tensor:
    """Fill ``tensor`` in place with N(0, std^2), std = gain * sqrt(2 / (fan_in + fan_out))."""
    where = _float_target("xavier_normal_", tensor)
    return _fill(tensor, xavier_normal(tensor.shape, gain, **where))


def kaiming_uniform_(tensor: Tensor, a: float = 0.0, mode: FanMode = "fan_in",
                     nonlinearity: str = "leaky_relu") -> Tensor:
    """Fill ``tensor`` in place with U(-b, b), b = gain * sqrt(3 / fan) (He et al.)."""
    where = _float_target("kaiming_uniform_", tensor)
    return _fill(tensor, kaiming_uniform(tensor.shape, a, mode, nonlinearity, **where))


def kaiming_normal_(tensor: Tensor, a: float = 0.0, mode: FanMode = "fan_in",
                    nonlinearity: str = "leaky_relu") -> Tensor:
    """Fill ``tensor`` in place with N(0, std^2), std = gain / sqrt(fan) (He et al.)."""
    where = _float_target("kaiming_normal_", tensor)
    return _fill(tensor, kaiming_normal(tensor.shape, a, mode, nonlinearity, **where))


def orthogonal_(tensor: Tensor, gain: float = 1.0) -> Tensor:
    """Fill ``tensor`` (2 or more dims, trailing ones flattened) in place with a (semi-)
    orthogonal matrix times ``gain`` (Saxe et al.): the Q of a QR decomposition of normal
    samples from the backend's generator, with the signs of R's diagonal (torch's method;
    the decomposition runs on the host in float64)."""
    where = _float_target("orthogonal_", tensor)
    if tensor.ndim < 2:
        raise ShapeError(f"orthogonal_: need a tensor with at least 2 dims, got shape "
                         f"{describe(tensor.shape)}")
    rows = tensor.shape[0]
    cols = tensor.numel() // rows if rows else 0
    flat = normal((rows, cols), **where).to_numpy().astype(np.float64)
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    value = Tensor.from_data((q * gain).reshape(tensor.shape), backend=tensor.backend,
                             device=tensor.device, dtype=tensor.dtype)
    return _fill(tensor, value)
