"""What the topic modules share: dtype lists, domains, the binary-op shape patterns and
small helpers that serve burnpy and torch alike."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any, TypedDict

import burnpy as bp
from burnpy.testing.cases import FLOAT_DTYPES, F, case

FD = FLOAT_DTYPES
F64_32 = ("float64", "float32")
INT = ("int64",)
BOOL = ("bool",)
NAN, INF = float("nan"), float("inf")
Fn = Callable[..., Any]


_BINARY_PATTERNS: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {
    "": ((3, 4), (3, 4)),
    "_bcast_col_row": ((3, 1), (1, 4)),
    "_bcast_vec": ((2, 3, 4), (4,)),
    "_bcast_lead": ((4,), (2, 3, 4)),
    "_0d_nd": ((), (2, 3)),
    "_nd_0d": ((2, 3), ()),
    "_0d_0d": ((), ()),
    "_empty": ((0, 3), (0, 3)),
    "_empty_bcast": ((0, 3), (1, 3)),
}


def _binary(name: str, fn: Fn, lhs: tuple[float, float] = (-2.0, 2.0),
            rhs: tuple[float, float] = (-2.0, 2.0), *, torch_fn: Fn | None = None,
            grad: bool = True, dtypes: tuple[str, ...] = FD, patterns: bool = True) -> None:
    """Register ``name`` on the shape patterns, with operand domains ``lhs`` and ``rhs``."""
    kw: dict[str, Any] = {"torch_fn": torch_fn, "grad": grad, "dtypes": dtypes}
    chosen = _BINARY_PATTERNS if patterns else {"": _BINARY_PATTERNS[""]}
    for suffix, (sa, sb) in chosen.items():
        case(name + suffix, fn, F(*sa, low=lhs[0], high=lhs[1]),
             F(*sb, low=rhs[0], high=rhs[1]), **kw)
    case(name + "_noncontig", fn, F(3, 4, low=lhs[0], high=lhs[1], contiguous=False),
         F(3, 4, low=rhs[0], high=rhs[1]), **kw)
    case(name + "_noncontig_3d", fn, F(2, 3, 4, low=lhs[0], high=lhs[1]),
         F(2, 3, 4, low=rhs[0], high=rhs[1], contiguous=False), **kw)


POS = (0.5, 2.0)
NEG = (-2.0, -0.5)

def _method(name: str, *args: Any, **kwargs: Any) -> Fn:
    """``lambda x: x.name(*args, **kwargs)``, shared by burnpy and torch."""
    return lambda x: getattr(x, name)(*args, **kwargs)


def _ints(x: Any) -> Any:
    """``x`` as ints: the backend's int dtype for a burnpy tensor (int32 on WebGPU), torch's
    long for a torch one, so one lambda builds a case's int input on every backend."""
    return x.int() if isinstance(x, bp.Tensor) else x.long()

_CMP = {"eq": operator.eq, "ne": operator.ne, "gt": operator.gt, "ge": operator.ge,
        "lt": operator.lt, "le": operator.le}

class _IntRange(TypedDict):
    """The ``low``/``high`` keywords of an int argument, spread into ``I``."""

    low: int
    high: int


_IA: _IntRange = {"low": -9, "high": 10}
_DIVISOR: _IntRange = {"low": 1, "high": 5}
