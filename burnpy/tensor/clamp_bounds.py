"""``clamp`` with tensor bounds (torch's ``clamp(min=Tensor, max=Tensor)``), as a composition of
``mask_where``: differentiable in both modes on every backend, the gradient routed as torch's.

torch's rule: the input gets the gradient where ``min <= x <= max`` (ties included); ``min``
where ``x < min`` and ``min < max``; ``max`` where ``x > max`` or ``max < min`` (so ``max``
wins when the bounds cross). Where ``min == max`` and ``x < min`` nothing gets it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from burnpy.backend.errors import DTypeError
from burnpy.tensor._core import FLOAT

if TYPE_CHECKING:
    from burnpy.tensor.tensor import Tensor


def clamp_tensor_bounds(x: Tensor, lo: Tensor | float | None, hi: Tensor | float | None) -> Tensor:
    """``min(max(x, lo), hi)`` broadcast over ``x``, ``lo`` and ``hi`` (a None bound is absent,
    a number is a constant bound)."""
    from burnpy.tensor.tensor import Tensor

    def bound(value: Tensor | float) -> Tensor:
        if isinstance(value, Tensor):
            if value.kind is x.kind:
                return value
            if x.kind is FLOAT:  # torch promotes an int bound to the float tensor's dtype
                return value.cast(x.dtype)
            raise DTypeError(f"clamp: a {value.kind} bound ({value.dtype!r}) for a {x.kind} "
                             f"tensor ({x.dtype!r}); use .float() first")
        return Tensor.full((), value, backend=x.backend, device=x.device, dtype=x.dtype)

    low = None if lo is None else bound(lo)
    high = None if hi is None else bound(hi)
    out = x
    if low is not None:
        below = x < low
        if high is None:
            out = out.mask_where(below, low)
        else:
            out = out.mask_where(below & (low < high), low)
            out = out.mask_where(below & (low == high), low.detach())
    if high is not None:
        above = x > high if low is None else (x > high) | (high < low)
        out = out.mask_where(above, high)
    return out
