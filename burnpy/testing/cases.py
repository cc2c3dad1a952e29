"""The op-case table of the conformance suite: one ``OpCase`` per op and input pattern.

A case applies the same function to burnpy Tensors and to torch tensors (torch's spelling is
burnpy's for most ops; ``torch_fn`` covers the rest) on inputs drawn from ``args``. The forward
suite (``burnpy.testing.conformance``) compares values for every dtype of the case; the
gradient suite compares gradients under ``Autodiff`` for cases with ``grad=True``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Arg:
    """How to draw one input: a float, int or bool array of ``shape``.

    Floats are uniform in [low, high); ints uniform in [low, high); bools are True with
    probability 0.5. ``contiguous=False`` makes the input a transposed view (non-contiguous)
    of the same logical shape. ``requires_grad`` marks float inputs the gradient suite checks.
    ``distinct=True`` draws pairwise-distinct values (a shuffled even grid over [low, high) for
    floats, a shuffled ``low, low+1, ...`` for ints), so sorts and arg-reductions have no ties
    even after rounding to 16-bit floats. ``unique_dim`` draws ints that never repeat along
    that dim (scatter targets); it needs ``shape[unique_dim] <= high - low``. ``plant`` puts
    these exact values (zeros, NaN, inf) at distinct random positions.
    """

    shape: tuple[int, ...]
    kind: str = "float"
    low: float = -2.0
    high: float = 2.0
    contiguous: bool = True
    requires_grad: bool = True
    distinct: bool = False
    unique_dim: int | None = None
    plant: tuple[float, ...] = ()

    def draw(self, rng: np.random.Generator, dtype: np.dtype[Any]) -> np.ndarray:
        """A NumPy array for this argument (floats in ``dtype``, ints as int64: the runners
        hand them to the backend in its int dtype)."""
        shape, n = self.shape, math.prod(self.shape)
        if self.kind == "float":
            if self.distinct:
                grid = self.low + (rng.permutation(n) + 0.5) * ((self.high - self.low) / n)
                values = grid.reshape(shape)
            else:
                values = rng.uniform(self.low, self.high, size=shape)
            if self.plant:
                flat = values.reshape(-1)
                flat[rng.choice(n, size=len(self.plant), replace=False)] = self.plant
            arr = values.astype(dtype)
        elif self.kind == "int":
            lo, hi = int(self.low), int(self.high)
            if self.distinct:
                arr = (rng.permutation(n) + lo).reshape(shape)
            elif self.unique_dim is not None:
                d = self.unique_dim
                wide = (*shape[:d], hi - lo, *shape[d + 1:])
                order = np.argsort(rng.random(wide), axis=d)
                arr = np.take(order, np.arange(shape[d]), axis=d) + lo
            else:
                arr = rng.integers(lo, hi, size=shape, dtype=np.int64)
            arr = arr.astype(np.int64)
        else:
            arr = rng.random(size=shape) < 0.5
        arr = np.asarray(arr)
        return arr if self.contiguous or arr.ndim < 2 else np.ascontiguousarray(arr.T).T


def F(*shape: int, low: float = -2.0, high: float = 2.0, contiguous: bool = True,  # noqa: N802
      requires_grad: bool = True, distinct: bool = False, plant: tuple[float, ...] = ()) -> Arg:
    """A float argument."""
    return Arg(tuple(shape), "float", low, high, contiguous, requires_grad, distinct,
               plant=plant)


def I(*shape: int, low: int = 0, high: int = 3, distinct: bool = False,  # noqa: N802, E743
      unique_dim: int | None = None) -> Arg:
    """An int argument (indices by default: [0, 3))."""
    return Arg(tuple(shape), "int", low, high, True, False, distinct, unique_dim)


def B(*shape: int, contiguous: bool = True) -> Arg:  # noqa: N802
    """A bool argument."""
    return Arg(tuple(shape), "bool", 0, 1, contiguous, False)


FLOAT_DTYPES = ("float64", "float32", "float16", "bfloat16")


@dataclass(frozen=True)
class OpCase:
    """One op on one input pattern, checked against torch.

    ``fn`` is called with burnpy Tensors (and must use only the Tensor API / functional API);
    ``torch_fn`` with torch tensors (defaults to ``fn`` when the spellings agree). Both may
    return a tensor or a tuple of tensors. ``dtypes`` lists the float dtypes to run (int and
    bool args keep their kinds); a case whose args are all int (or all bool) lists
    ``("int64",)`` (or ``("bool",)``). Int args reach the backend in its int dtype
    (``Backend.int_dtype``: int32 on WebGPU), and so must any int tensor the case builds
    itself (``x.int()``, not ``x.long()``). ``asks_dtypes`` names the dtypes the case asks
    for on purpose (``.double()``, ``.long()``, ``to(bfloat16)``, ``float_power``'s float64):
    a backend refusing one of those skips the case; any other ``UnsupportedDTypeError`` is a
    failure. ``grad`` says whether the op is differentiable in its float args.
    ``rtol``/``atol`` loosen the per-dtype tolerances (the larger one wins) for an op that
    needs it.
    """

    name: str
    fn: Callable[..., Any]
    args: Sequence[Arg]
    torch_fn: Callable[..., Any] | None = None
    dtypes: Sequence[str] = ("float64", "float32")
    asks_dtypes: Sequence[str] = ()
    grad: bool = True
    rtol: float | None = None
    atol: float | None = None
    #: Outputs are sums of many products (convolutions): values that cancel to near zero
    #: are compared relative to the output's largest magnitude, not their own.
    accumulates: bool = False
    tags: frozenset[str] = field(default_factory=frozenset)


#: The table every suite iterates. Filled by ``burnpy.testing.op_cases``'s topic modules.
CASES: list[OpCase] = []


def case(name: str, fn: Callable[..., Any], *args: Arg, **kwargs: Any) -> OpCase:
    """Declare and register a case."""
    c = OpCase(name, fn, args, **kwargs)
    if any(existing.name == name for existing in CASES):
        raise ValueError(f"duplicate conformance case name {name!r}")
    CASES.append(c)
    return c
