"""Activations with torch.nn.functional's signatures: the ones the backend has an op for
(relu, gelu, sigmoid, softmax...) call it; the others are compositions of Tensor ops, so they
differentiate in both modes on every backend."""

from __future__ import annotations

from burnpy.backend.distribution import Distribution
from burnpy.backend.dtype import DTypeLike
from burnpy.backend.errors import InvalidArgumentError, ShapeError, describe
from burnpy.backend.ops.activation_ops import GeluApproximate
from burnpy.nn.functional._common import _inplace
from burnpy.tensor import Tensor
from burnpy.tensor.autocast_hook import autocast_op


def relu(x: Tensor, inplace: bool = False) -> Tensor:
    """max(x, 0) elementwise, any shape."""
    return _inplace(x, Tensor.relu, inplace)


def gelu(x: Tensor, approximate: GeluApproximate = "none") -> Tensor:
    """x * Phi(x) elementwise (``approximate="tanh"``: the tanh approximation), any shape."""
    return x.gelu(approximate)


def sigmoid(x: Tensor) -> Tensor:
    """1 / (1 + exp(-x)) elementwise, any shape."""
    return x.sigmoid()


def log_sigmoid(x: Tensor) -> Tensor:
    """log(sigmoid(x)) elementwise, computed without overflow for large |x|."""
    return x.log_sigmoid()


logsigmoid = log_sigmoid


def silu(x: Tensor, inplace: bool = False) -> Tensor:
    """x * sigmoid(x) elementwise (swish), any shape."""
    return _inplace(x, Tensor.silu, inplace)


def tanh(x: Tensor) -> Tensor:
    """The hyperbolic tangent elementwise, any shape."""
    return x.tanh()


def softplus(x: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta * x)) / beta elementwise, any shape; ``x`` itself where
    ``beta * x > threshold`` (torch's linear region)."""
    out = x.softplus(beta)
    return out.mask_where((x * beta) > threshold, x)


def leaky_relu(x: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """x where x >= 0, else ``negative_slope * x``; any shape."""
    return _inplace(x, lambda t: t.leaky_relu(negative_slope), inplace)


def hardsigmoid(x: Tensor, inplace: bool = False) -> Tensor:
    """clamp(x / 6 + 1/2, 0, 1) (torch's hardsigmoid)."""
    return _inplace(x, lambda t: t.hard_sigmoid(1 / 6, 0.5), inplace)


def softmax(x: Tensor, dim: int, *, dtype: DTypeLike | None = None) -> Tensor:
    """exp(x) normalized to sum 1 along ``dim`` (max-subtracted for stability; in ``dtype``
    when given: the input is cast first)."""
    return x.softmax(dim, dtype)


def log_softmax(x: Tensor, dim: int, *, dtype: DTypeLike | None = None) -> Tensor:
    """log(softmax(x, dim)), computed stably along ``dim`` (in ``dtype`` when given: the
    input is cast first)."""
    return x.log_softmax(dim, dtype)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """min(max(x, 0), 6) elementwise."""
    return _inplace(input, lambda t: t.clamp(0.0, 6.0), inplace)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x for x > 0, ``alpha * (exp(x) - 1)`` below (no overflow: exp sees only x <= 0)."""
    return _inplace(input, lambda t: t.clamp(min=0.0) + t.clamp(max=0.0).expm1() * alpha,
                    inplace)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """``scale * elu(x, alpha)`` with the self-normalizing constants of Klambauer et al."""
    return _inplace(input, lambda t: elu(t, _SELU_ALPHA) * _SELU_SCALE, inplace)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    if alpha == 0:
        raise InvalidArgumentError("celu: alpha must not be 0")
    return _inplace(input, lambda t: t.clamp(min=0.0)
                    + (t.clamp(max=0.0) * (1.0 / alpha)).expm1() * alpha, inplace)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * tanh(softplus(x))."""
    return _inplace(input, lambda t: t * t.softplus().tanh(), inplace)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * clamp(x / 6 + 1/2, 0, 1) (MobileNetV3's hard swish)."""
    return _inplace(input, lambda t: t * t.hard_sigmoid(1 / 6, 0.5), inplace)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0,
             inplace: bool = False) -> Tensor:
    """clamp(x, min_val, max_val)."""
    if min_val > max_val:
        raise InvalidArgumentError(f"hardtanh: min_val {min_val} exceeds max_val {max_val}")
    return _inplace(input, lambda t: t.clamp(min_val, max_val), inplace)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x where |x| > lambd, else 0."""
    return input.mask_fill(input.abs() <= lambd, 0.0)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x - lambd above lambd, x + lambd below -lambd, 0 between."""
    if lambd < 0:
        raise InvalidArgumentError(f"softshrink: lambd must be >= 0, got {lambd}")
    return input - input.clamp(-lambd, lambd)


def tanhshrink(input: Tensor) -> Tensor:
    """x - tanh(x)."""
    return input - input.tanh()


def softsign(input: Tensor) -> Tensor:
    """x / (1 + |x|)."""
    return input / (input.abs() + 1.0)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """x where x > threshold, else ``value``."""
    return _inplace(input, lambda t: t.mask_fill(t <= threshold, value), inplace)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """Gated linear unit: the first half of ``dim`` times the sigmoid of the second half."""
    if input.ndim == 0 or input.shape[dim] % 2:
        raise ShapeError(f"glu: dim {dim} of input {describe(input.shape)} must have an even "
                         f"size")
    a, b = input.chunk(2, dim)
    return a * b.sigmoid()


def _implicit_dim(ndim: int) -> int:
    """torch's legacy softmax dim when none is given."""
    return 0 if ndim in (0, 1, 3) else 1


def softmin(input: Tensor, dim: int | None = None) -> Tensor:
    """softmax(-x) along ``dim``."""
    return (-input).softmax(_implicit_dim(input.ndim) if dim is None else dim)


def _channel_param(op: str, input: Tensor, weight: Tensor) -> Tensor:
    """A per-channel ``[C]`` (or shared ``[1]`` or 0-d) parameter shaped to broadcast along
    dim 1."""
    channels = input.shape[1] if input.ndim >= 2 else 1
    if weight.ndim > 1 or weight.numel() not in (1, channels):
        raise ShapeError(f"{op}: weight must be 0-d or 1-d with 1 or {channels} elements for "
                         f"input {describe(input.shape)}, got {describe(weight.shape)}")
    if weight.numel() == 1:
        return weight.reshape(())
    return weight.reshape((1, weight.shape[0]) + (1,) * (input.ndim - 2))


@autocast_op("prelu")
def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """x for x >= 0, ``weight * x`` below, with a learned slope per channel (dim 1)."""
    slope = _channel_param("prelu", input, weight)
    return input.clamp(min=0.0) + input.clamp(max=0.0) * slope


def rrelu(input: Tensor, lower: float = 1.0 / 8.0, upper: float = 1.0 / 3.0,
          training: bool = False, inplace: bool = False) -> Tensor:
    """Randomized leaky ReLU: in training each negative element gets a slope drawn uniformly
    from [lower, upper) (the backend's seeded generator); in eval the slope (lower+upper)/2."""
    if not 0 <= lower <= upper:
        raise InvalidArgumentError(f"rrelu: need 0 <= lower <= upper, got {lower}, {upper}")
    if not training or lower == upper:
        return _inplace(input, lambda t: t.leaky_relu((lower + upper) / 2), inplace)
    slope = Tensor.random(input.shape, Distribution.uniform(lower, upper),
                          backend=input.backend, device=input.device, dtype=input.dtype)
    return _inplace(input, lambda t: t.clamp(min=0.0) + t.clamp(max=0.0) * slope, inplace)
