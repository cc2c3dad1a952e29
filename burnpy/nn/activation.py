"""Activation modules with torch.nn's names and arguments, each a thin wrapper of its
Tensor or ``burnpy.nn.functional`` activation."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

from burnpy.backend.device import Device
from burnpy.backend.dtype import DTypeLike
from burnpy.backend.errors import ShapeError, describe
from burnpy.backend.ops.activation_ops import GeluApproximate
from burnpy.nn import functional as F
from burnpy.nn.init import constant as _constant  # PReLU's ``init`` argument shadows ``init``
from burnpy.nn.module import Module
from burnpy.tensor import Tensor

if TYPE_CHECKING:
    from burnpy.backend.base import Backend


class ReLU(Module):
    """Rectified linear unit: ``max(x, 0)``."""

    def __init__(self, inplace: bool = False) -> None:
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        """max(x, 0) elementwise; any shape."""
        return F.relu(x, self.inplace)


class GELU(Module):
    """x * Phi(x); ``approximate="tanh"`` for the tanh form."""

    def __init__(self, approximate: GeluApproximate = "none") -> None:
        self.approximate = approximate

    def forward(self, x: Tensor) -> Tensor:
        """``x`` of any shape, activated elementwise."""
        return x.gelu(self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Sigmoid(Module):
    """The logistic function ``1 / (1 + exp(-x))``."""

    def forward(self, x: Tensor) -> Tensor:
        """1 / (1 + exp(-x)) elementwise; any shape."""
        return x.sigmoid()


class Tanh(Module):
    """The hyperbolic tangent."""

    def forward(self, x: Tensor) -> Tensor:
        """tanh(x) elementwise; any shape."""
        return x.tanh()


class SiLU(Module):
    """Sigmoid-weighted linear unit (swish): ``x * sigmoid(x)``."""

    def __init__(self, inplace: bool = False) -> None:
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        """x * sigmoid(x) elementwise; any shape."""
        return F.silu(x, self.inplace)


class LeakyReLU(Module):
    """``x`` for x >= 0, ``negative_slope * x`` below."""

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False) -> None:
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, x: Tensor) -> Tensor:
        """x where x >= 0, else ``negative_slope * x``; any shape."""
        return F.leaky_relu(x, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}"


class Softplus(Module):
    """A smooth ReLU: ``log(1 + exp(beta * x)) / beta``."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        self.beta, self.threshold = beta, threshold

    def forward(self, x: Tensor) -> Tensor:
        """log(1 + exp(beta * x)) / beta elementwise, ``x`` itself where ``beta * x >
        threshold``; any shape."""
        return F.softplus(x, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Hardsigmoid(Module):
    """clamp(x / 6 + 1/2, 0, 1)."""

    def __init__(self, inplace: bool = False) -> None:
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        """``x`` of any shape, activated elementwise."""
        return F.hardsigmoid(x, self.inplace)


class Softmax(Module):
    """Softmax along ``dim``; without one, torch's deprecated implicit choice (dim 0 for 0-,
    1- and 3-d inputs, else dim 1), with torch's warning."""

    def __init__(self, dim: int | None = None) -> None:
        self.dim = dim

    def _dim(self, x: Tensor) -> int:
        if self.dim is not None:
            return self.dim
        warnings.warn(f"Implicit dimension choice for {type(self).__name__} has been deprecated."
                      " Change the call to include dim=X as an argument.", stacklevel=3)
        return 0 if x.ndim in (0, 1, 3) else 1

    def forward(self, x: Tensor) -> Tensor:
        """Probabilities along ``dim`` (summing to 1); any shape."""
        return x.softmax(self._dim(x))

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmax2d(Module):
    """Softmax over the channels of ``[n, c, h, w]`` (or ``[c, h, w]``) at each position."""

    def forward(self, x: Tensor) -> Tensor:
        """Probabilities over dim -3 (the channels); same shape."""
        if x.ndim not in (3, 4):
            raise ShapeError(f"Softmax2d: expected a 3-d or 4-d input, got "
                             f"{describe(x.shape)}")
        return x.softmax(-3)


class LogSoftmax(Softmax):
    """Log-softmax along ``dim`` (implicit without one, as Softmax), for NLL losses."""

    def forward(self, x: Tensor) -> Tensor:
        """log(softmax(x)) along ``dim``, computed stably; any shape."""
        return x.log_softmax(self._dim(x))


class ReLU6(Module):
    """min(max(x, 0), 6)."""

    def __init__(self, inplace: bool = False) -> None:
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        """``x`` of any shape, clamped to [0, 6]."""
        return F.relu6(x, self.inplace)


class ELU(Module):
    """x above 0, ``alpha * (exp(x) - 1)`` below."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        self.alpha, self.inplace = alpha, inplace

    def forward(self, x: Tensor) -> Tensor:
        """``x`` of any shape, activated elementwise."""
        return F.elu(x, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}"


class CELU(ELU):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""

    def forward(self, x: Tensor) -> Tensor:
        """``x`` of any shape, activated elementwise."""
        return F.celu(x, self.alpha, self.inplace)


class SELU(Module):
    """The self-normalizing ``scale * elu(x, alpha)``."""

    def __init__(self, inplace: bool = False) -> None:
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        """``x`` of any shape, activated elementwise."""
        return F.selu(x, self.inplace)


class Mish(Module):
    """x * tanh(softplus(x))."""

    def __init__(self, inplace: bool = False) -> None:
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        """``x`` of any shape, activated elementwise."""
        return F.mish(x, self.inplace)


class Hardswish(Module):
    """x * clamp(x / 6 + 1/2, 0, 1)."""

    def __init__(self, inplace: bool = False) -> None:
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        """``x`` of any shape, activated elementwise."""
        return F.hardswish(x, self.inplace)


class Hardtanh(Module):
    """clamp(x, min_val, max_val)."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0,
                 inplace: bool = False) -> None:
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, x: Tensor) -> Tensor:
        """``x`` of any shape, clamped."""
        return F.hardtanh(x, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}"


class Hardshrink(Module):
    """x where |x| > lambd, else 0."""

    def __init__(self, lambd: float = 0.5) -> None:
        self.lambd = lambd

    def forward(self, x: Tensor) -> Tensor:
        """``x`` of any shape, small values zeroed."""
        return F.hardshrink(x, self.lambd)

    def extra_repr(self) -> str:
        return f"lambd={self.lambd}"


class Softshrink(Hardshrink):
    """x shrunk toward 0 by ``lambd`` (0 within it)."""

    def forward(self, x: Tensor) -> Tensor:
        """``x`` of any shape, shrunk elementwise."""
        return F.softshrink(x, self.lambd)


class Tanhshrink(Module):
    """x - tanh(x)."""

    def forward(self, x: Tensor) -> Tensor:
        """``x`` of any shape, activated elementwise."""
        return F.tanhshrink(x)


class Softsign(Module):
    """x / (1 + |x|)."""

    def forward(self, x: Tensor) -> Tensor:
        """``x`` of any shape, activated elementwise."""
        return F.softsign(x)


class Threshold(Module):
    """x where x > threshold, else ``value``."""

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, x: Tensor) -> Tensor:
        """``x`` of any shape, thresholded elementwise."""
        return F.threshold(x, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}"


class GLU(Module):
    """Gated linear unit: first half of ``dim`` times the sigmoid of the second."""

    def __init__(self, dim: int = -1) -> None:
        self.dim = dim

    def forward(self, x: Tensor) -> Tensor:
        """``x`` with ``dim`` halved."""
        return F.glu(x, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmin(Module):
    """softmax(-x) along ``dim``."""

    def __init__(self, dim: int | None = None) -> None:
        self.dim = dim

    def forward(self, x: Tensor) -> Tensor:
        """Probabilities along ``dim`` favouring small values; same shape."""
        return F.softmin(x, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSigmoid(Module):
    """log(sigmoid(x)), computed stably."""

    def forward(self, x: Tensor) -> Tensor:
        """``x`` of any shape, activated elementwise."""
        return x.log_sigmoid()


class PReLU(Module):
    """Leaky ReLU with a learned negative slope, shared or one per channel (dim 1)."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, *,
                 backend: type[Backend] | None = None, device: Device | None = None,
                 dtype: DTypeLike | None = None) -> None:
        self.num_parameters = num_parameters
        self.weight = _constant((num_parameters,), init, backend=backend, device=device,
                               dtype=dtype)

    def forward(self, x: Tensor) -> Tensor:
        """``x [batch, channels, *]`` (or any shape with one shared slope) activated."""
        return F.prelu(x, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class RReLU(Module):
    """Randomized leaky ReLU: random slopes in [lower, upper) while training, their mean
    in eval."""

    def __init__(self, lower: float = 1.0 / 8.0, upper: float = 1.0 / 3.0,
                 inplace: bool = False) -> None:
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, x: Tensor) -> Tensor:
        """``x`` of any shape, activated elementwise."""
        return F.rrelu(x, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}"
