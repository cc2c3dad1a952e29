"""torch.nn.utils's ``parameters_to_vector`` and ``vector_to_parameters``."""

from __future__ import annotations

from collections.abc import Iterable

from burnpy.autodiff.modes import no_grad
from burnpy.backend.errors import InvalidArgumentError, ShapeError, describe
from burnpy.tensor import Tensor


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """Every parameter flattened and concatenated, in order, into one 1-d tensor (tracked: a
    loss of it differentiates to the parameters, as torch's)."""
    params = list(parameters)
    if not params:
        raise InvalidArgumentError("parameters_to_vector: no parameters given")
    return Tensor.cat([p.reshape(-1) for p in params])


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Write consecutive slices of the 1-d ``vec`` into ``parameters``, in place (each stays
    the same object, so a module and an optimizer holding it see the new values)."""
    params = list(parameters)
    needed = sum(p.numel() for p in params)
    if vec.ndim != 1 or vec.shape[0] != needed:
        raise ShapeError(f"vector_to_parameters: vec must be 1-d with {needed} elements (the "
                         f"parameters' total), got {describe(vec.shape)}")
    start = 0
    with no_grad():
        for p in params:
            n = p.numel()
            p.copy_(vec[start:start + n].reshape(p.shape))
            start += n
