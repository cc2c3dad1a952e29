"""Activation modules (thin wrappers of the Tensor activations) and shape helpers."""

from __future__ import annotations

import warnings

from burnpy.backend.ops.activation_ops import GeluApproximate
from burnpy.nn.module import Module
from burnpy.tensor import Tensor


class ReLU(Module):
    """Rectified linear unit: ``max(x, 0)``."""

    def forward(self, x: Tensor) -> Tensor:
        """max(x, 0) elementwise; any shape."""
        return x.relu()


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

    def forward(self, x: Tensor) -> Tensor:
        """x * sigmoid(x) elementwise; any shape."""
        return x.silu()


class LeakyReLU(Module):
    """``x`` for x >= 0, ``negative_slope * x`` below."""

    def __init__(self, negative_slope: float = 0.01) -> None:
        self.negative_slope = negative_slope

    def forward(self, x: Tensor) -> Tensor:
        """x where x >= 0, else ``negative_slope * x``; any shape."""
        return x.leaky_relu(self.negative_slope)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}"


class Softplus(Module):
    """A smooth ReLU: ``log(1 + exp(beta * x)) / beta``."""

    def __init__(self, beta: float = 1.0) -> None:
        self.beta = beta

    def forward(self, x: Tensor) -> Tensor:
        """log(1 + exp(beta * x)) / beta elementwise; any shape."""
        return x.softplus(self.beta)


class Hardsigmoid(Module):
    """clamp(x / 6 + 1/2, 0, 1)."""

    def forward(self, x: Tensor) -> Tensor:
        """``x`` of any shape, activated elementwise."""
        return x.hard_sigmoid(1 / 6, 0.5)


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


class LogSoftmax(Softmax):
    """Log-softmax along ``dim`` (implicit without one, as Softmax), for NLL losses."""

    def forward(self, x: Tensor) -> Tensor:
        """log(softmax(x)) along ``dim``, computed stably; any shape."""
        return x.log_softmax(self._dim(x))


class Identity(Module):
    """Returns its input: a placeholder layer."""

    def forward(self, x: Tensor) -> Tensor:
        """``x`` itself."""
        return x


class Flatten(Module):
    """Merge dims ``start_dim..end_dim`` (default: all but the batch dim)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x: Tensor) -> Tensor:
        """``x`` with dims ``start_dim..end_dim`` merged into one."""
        return x.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"
