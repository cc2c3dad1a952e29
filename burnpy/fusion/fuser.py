"""The fuser interface: how a backend compiles the groups ``Fusion(B)`` hands it.

How a backend declares its fuser
--------------------------------
A backend class ``B`` may define a classmethod ``fuser(cls) -> Fuser | None``. ``Fusion(B)``
calls it once, on the first op it could fuse (so a fuser may import its compiler lazily:
numba, nvrtc, a GPU device). A backend without the method, or whose method returns None, still
works under ``Fusion``: every op then runs eagerly on ``B``.

What a fuser receives
---------------------
``accepts(op, dtypes)`` is asked once per (vocabulary op, operand dtypes) pair when ``Fusion``
records an op; ``op`` is a key of ``burnpy.ir.ELEMENTWISE`` or ``burnpy.ir.REDUCTIONS``,
``dtypes`` the operands' element types in vocabulary order (a runtime scalar counts with the
dtype it is converted to) followed by the result's (so a ``cast`` shows its target). An op it
refuses runs eagerly on ``B`` and cuts the group there.

``compile(group)`` receives a ``burnpy.ir.FusedGroup`` (see ``burnpy.ir.fused``): the group's
broadcast ``shape``; its input tensors (shape and dtype, each broadcastable to ``shape`` by
NumPy's rules); the dtypes of its runtime scalars; the elementwise ops, each reading inputs,
scalars and earlier locals and producing one local of ``shape``; which locals must be written
(``outputs``; the others must never reach memory); and the optional ``Reduction`` closing it.
Groups have at least two ops. A fuser may also have an int attribute ``min_elements``: an op
whose loop (its result, or a reduction's input) has fewer elements then runs eagerly on ``B``
at once, without being recorded (a kernel would not pay; recording and flushing would cost more
than the op); and an int ``unwritten_elements``: zeros of at least that many elements stay
unwritten until read (pieces written over them are concatenated once; ``min_elements``
when absent). And a frozenset ``own_ops``: composites of ``burnpy.ir.ELEMENTWISE_COMPOSITES``
(``gelu``...) that ``B`` computes better itself (one kernel of its own): ``Fusion`` calls
``B``'s op for them instead of recording the protocol default's pieces. ``Fusion`` caches
the result by the group (equal structure, same kernel), so ``compile`` runs once per distinct
group.

Optional, for a fuser that does more (the WGSL fuser does all of it)
--------------------------------------------------------------------
``lazy_ops``: protocol ops of ``burnpy.fusion.lazy.LAZY_OPS`` (views, matmul) that ``Fusion``
records and runs with B's own op at the flush, so they do not flush the stream. ``composed_ops``:
composites of ``FUSABLE_COMPOSITIONS`` that B overrides but whose protocol default ``Fusion``
should record, to fuse its pieces with their neighbours. ``max_buffers``: how many tensors one
kernel may read and write; a larger group is run in halves. ``compile_batch(groups)``: one
kernel for independent groups (of one or more ops), called with all their inputs and scalars
in order and returning all their outputs in order. ``compile_matmul(group, operand)``: one
kernel computing a product and ``group``, which reads it as input ``operand``, as its epilogue,
called as ``kernel([lhs, rhs, *other inputs], scalars)``. Each may return None to decline.
``write_pieces(shape, dtype, dim, blocks)``: B's primitive of ``shape`` and ``dtype`` (B's
form) holding ``blocks`` (``(start, primitive)`` pairs along ``dim``, sorted, disjoint, each
spanning every other dim) and zeros elsewhere, laid out row-major whatever the blocks'
layouts: an unwritten tensor is then written in one pass, where B's concatenation of
swapped pieces keeps their layout and a reshape after it copies again.

What a fuser returns
--------------------
A ``FusedKernel``: ``kernel(inputs, scalars)`` takes ``B``'s primitives for the inputs (in
order, with the described shapes and dtypes, in any memory layout B's primitives may have) and
the scalars (Python numbers, in order), and returns a tuple of fresh ``B`` primitives: one per
``outputs`` entry, then the reduction's result. Or ``compile`` returns None to decline the
group (too small to pay, a layout it does not handle): ``Fusion`` then runs that group's ops
one by one on ``B``, as it also does when a kernel raises (so an error names the user's op).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeAlias

from burnpy.backend.base import Backend
from burnpy.backend.dtype import DType
from burnpy.backend.ops._marker import is_provided
from burnpy.ir.fused import ELEMENTWISE_COMPOSITES, FUSABLE, FusedGroup

#: ``kernel(inputs, scalars) -> outputs``: B's primitives in, fresh B primitives out.
FusedKernel: TypeAlias = Callable[[Sequence[Any], Sequence[float | int | bool]], tuple[Any, ...]]


class Fuser(Protocol):
    """A backend's compiler of fused groups (see the module docstring for the contract)."""

    def accepts(self, op: str, dtypes: tuple[DType, ...]) -> bool:
        """Whether vocabulary op ``op`` can be computed for ``dtypes`` (operands', then the
        result's)."""
        ...

    def compile(self, group: FusedGroup) -> FusedKernel | None:
        """One kernel computing ``group``, or None to run its ops one by one on B."""
        ...


def backend_fuser(backend: type) -> Fuser | None:
    """``backend``'s fuser, from its ``fuser()`` classmethod, or None when it declares none."""
    declare: Callable[[], Fuser | None] | None = getattr(backend, "fuser", None)
    return None if declare is None else declare()


class _Spy:
    """Stands in for a backend class while a protocol default runs: each op is the backend's
    own, and the name of each op called is noted in ``called``."""

    def __init__(self, backend: type[Backend], called: set[str]) -> None:
        self._backend, self._called = backend, called

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._backend, name)
        if not callable(found) or (name not in FUSABLE and name not in ELEMENTWISE_COMPOSITES):
            return found
        called = self._called

        def op(*args: Any, **kwargs: Any) -> Any:
            called.add(name)
            return found(*args, **kwargs)

        return op


def _called_by_default(backend: type[Backend], name: str, sample: Any) -> set[str]:
    """The fusable ops and composites that the protocol default of composite ``name`` calls,
    run once on ``sample`` (its other arguments: their defaults, else 0.5)."""
    default = inspect.getattr_static(Backend, name).__func__
    parameters = list(inspect.signature(default).parameters.values())[1:]
    args = [sample if "Primitive" in str(p.annotation) else
            0.5 if p.default is p.empty else p.default for p in parameters]
    called: set[str] = set()
    default(_Spy(backend, called), *args)
    return called


def composites_calling(backend: type[Backend], declined: frozenset[str]) -> frozenset[str]:
    """The composites of ``ELEMENTWISE_COMPOSITES`` that ``backend`` overrides and whose
    protocol default calls a vocabulary op in ``declined``, or such a composite: a fuser that
    declines those ops gains nothing by recording the default (its pieces would run one by one
    on B, where B's own op is one pass), so it lists them in ``own_ops``."""
    overridden = [name for name in sorted(ELEMENTWISE_COMPOSITES)
                  if not is_provided(inspect.getattr_static(backend, name))]
    sample = backend.float_add_scalar(
        backend.float_zeros((2,), backend.default_device(), DType.float32), 0.5)
    calls = {name: _called_by_default(backend, name, sample) for name in overridden}
    own = {name for name, called in calls.items()
           if any(op in FUSABLE and FUSABLE[op].op in declined for op in called)}
    grown = True
    while grown:  # a composite calling one of B's own (silu calls sigmoid) is B's own too
        more = {name for name, called in calls.items() if called & own} - own
        own |= more
        grown = bool(more)
    return frozenset(own)
