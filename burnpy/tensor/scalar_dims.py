"""torch's dim rule for 0-d tensors: a 0-d tensor takes ``dim=0`` and ``dim=-1`` as if it had
one dim of size 1, so ``sum(0)``, ``softmax(-1)``, ``gather(0, i)`` and the like work on it.

The ops that take a dim call ``as_vector`` on a 0-d input: it checks the dims, runs the op on
the tensor reshaped to ``(1,)`` and reshapes the result back, so values, dtypes and gradients
are those of the 1-element case.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from burnpy.backend.errors import IndexOutOfBoundsError

if TYPE_CHECKING:
    from burnpy.tensor.reduction import ValuesIndices
    from burnpy.tensor.tensor import Tensor


def check_scalar_dims(op: str, dim: int | Sequence[int]) -> None:
    """Raise unless every dim is 0 or -1, the dims a 0-d tensor has under torch's rule."""
    for d in (dim if isinstance(dim, Sequence) else (dim,)):
        if not isinstance(d, int) or isinstance(d, bool):
            raise IndexOutOfBoundsError(f"{op}: dim must be an int, got {d!r}")
        if d not in (0, -1):
            raise IndexOutOfBoundsError(f"{op}: dim {d} is out of range for a 0-d tensor "
                                        "(expected -1 <= dim <= 0)")


def as_vector(t: Tensor, op: str, dim: int | Sequence[int], fn: Callable[[Tensor], Tensor],
              shape: tuple[int, ...] = ()) -> Tensor:
    """``fn`` applied to the 0-d ``t`` seen as shape ``(1,)`` (its dims checked), the result
    reshaped to ``shape`` (0-d by default)."""
    check_scalar_dims(op, dim)
    return fn(t.reshape(1)).reshape(shape)


def pair_as_vector(t: Tensor, op: str, dim: int, fn: Callable[[Tensor], ValuesIndices],
                   shape: tuple[int, ...] = ()) -> ValuesIndices:
    """``as_vector`` for the ops that return ``(values, indices)``."""
    from burnpy.tensor.reduction import ValuesIndices

    check_scalar_dims(op, dim)
    out = fn(t.reshape(1))
    return ValuesIndices(out.values.reshape(shape), out.indices.reshape(shape))
