# ruff: noqa: N803 - rules name the inner backend type ``B``, as Burn's generics do
"""Small helpers shared by every derivative rule: reverse rules, tangent rules and the table of
local partials. Each is written with the inner backend ``B``'s ops only, so a rule built from
them is itself differentiable when ``B`` is a decorator backend.
"""

from __future__ import annotations

from typing import Any

from burnpy.backend.dtype import DType, dtype_of_numpy


def dtype_of(x: Any) -> DType:
    """The burnpy DType of an inner primitive."""
    return dtype_of_numpy(x.dtype)


def zeros(B: Any, shape: tuple[int, ...], like: Any) -> Any:
    """Zeros of ``shape`` on ``like``'s device, in its dtype."""
    return B.float_zeros(shape, B.float_device(like), dtype_of(like))


def or_zeros(B: Any, tangent: Any, like: Any) -> Any:
    """``tangent``, or zeros like ``like`` (the primal) where it is None."""
    return zeros(B, like.shape, like) if tangent is None else tangent


def as_float(B: Any, mask: Any, like: Any) -> Any:
    """A bool mask as 0/1 floats of ``like``'s dtype."""
    return B.bool_into_float(mask, dtype_of(like))


def window(shape: tuple[int, ...], dim: int, start: int, stop: int) -> tuple[slice, ...]:
    """Slices taking ``start:stop`` of ``dim`` and every earlier dim whole."""
    return tuple(slice(0, n) for n in shape[:dim]) + (slice(start, stop),)


def fit(B: Any, tangent: Any, out: Any) -> Any:
    """``tangent`` broadcast to ``out``'s shape and cast to its dtype where one input alone
    carried a tangent of its own (smaller, or narrower before promotion) shape or dtype."""
    if tangent.dtype is not out.dtype and tangent.dtype != out.dtype:
        tangent = B.float_cast(tangent, dtype_of(out))
    if tangent.shape != out.shape:
        tangent = B.float_expand(tangent, out.shape)
    return tangent
