"""Seeding and reading tangents on Tensors (``torch.autograd.forward_ad``'s names).

``make_dual(x, v)`` lifts a float tensor of backend B, with the tangent ``v`` (also on B),
onto ``ForwardAD(B)``; every op on the result carries the directional derivative along;
``unpack_dual(y)`` splits a tensor of ``ForwardAD(B)`` back into B's primal and tangent.
The functions see Tensors only through their attributes and class, so this layer stays
below ``burnpy.tensor``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from burnpy.autodiff.forward.backend import ForwardAD
from burnpy.backend.errors import (
    BackendMismatchError,
    DeviceMismatchError,
    DTypeError,
    KindError,
    ShapeError,
    describe,
)

if TYPE_CHECKING:
    from burnpy.tensor import Tensor


class UnpackedDual(NamedTuple):
    """``unpack_dual``'s result: the primal and the tangent (None when it is zero)."""

    primal: Tensor
    tangent: Tensor | None


def make_dual(primal: Tensor, tangent: Tensor | None = None) -> Tensor:
    """``primal`` (a float tensor of backend B) on ``ForwardAD(B)`` with ``tangent`` (a float
    tensor of B of the same shape, dtype and device; None for a zero tangent)."""
    _check_float("make_dual", "primal", primal)
    backend = primal.backend
    fad = ForwardAD(backend)
    if tangent is None:
        return primal.__class__(fad, fad.from_inner(primal.primitive), "float")
    _check_float("make_dual", "tangent", tangent)
    if tangent.backend is not backend:
        raise BackendMismatchError(
            f"make_dual: the tangent is on {tangent.backend.name()}, the primal on "
            f"{backend.name()}; both must be on the backend ForwardAD wraps")
    if tangent.shape != primal.shape:
        raise ShapeError(f"make_dual: the tangent's shape {describe(tangent.shape)} differs "
                         f"from the primal's {describe(primal.shape)}")
    if tangent.dtype is not primal.dtype:
        raise DTypeError(f"make_dual: the tangent's dtype {tangent.dtype!r} differs from the "
                         f"primal's {primal.dtype!r}; cast it first")
    if backend.multi_device and tangent.device != primal.device:
        raise DeviceMismatchError(f"make_dual: the tangent is on {tangent.device}, the primal "
                                  f"on {primal.device}")
    return primal.__class__(fad, fad.make_dual(primal.primitive, tangent.primitive), "float")


def unpack_dual(tensor: Tensor) -> UnpackedDual:
    """``(primal, tangent)`` of a tensor of ``ForwardAD(B)``, both tensors of B; the tangent
    is None when it is zero (untangented inputs, piecewise-constant ops, non-float kinds)."""
    backend = tensor.backend
    if not getattr(backend, "is_forward_ad", False):
        raise BackendMismatchError(
            f"unpack_dual: the tensor is on {backend.name()}, not on a ForwardAD backend; "
            "make_dual(x, v) puts a tensor there")
    primal = tensor.inner()
    if tensor.kind != "float" or tensor.primitive.tangent is None:
        return UnpackedDual(primal, None)
    inner = primal.backend  # the backend ForwardAD wraps
    return UnpackedDual(primal, tensor.__class__(inner, tensor.primitive.tangent, "float"))


def _check_float(op: str, what: str, tensor: Tensor) -> None:
    kind = getattr(tensor, "kind", None)
    if kind is None:
        raise KindError(f"{op}: the {what} must be a burnpy Tensor, got "
                        f"{type(tensor).__name__}")
    if kind != "float":
        raise KindError(f"{op}: the {what} must be a float tensor, got {kind} "
                        f"({tensor.dtype!r}); cast it with .float() or .double()")
