"""``CpuBackend`` and ``CudaBackend`` share one list of array op families (``ArrayOps``), and
no native op is shadowed by the protocol's provided default: the protocol must come after
every family in the method resolution order (two families derive from protocol classes, and
listing the families by hand once put those protocol classes ahead of later families)."""

from __future__ import annotations

import pytest

from burnpy.backend.base import Backend
from burnpy_cpu import CpuBackend
from burnpy_cpu.array_ops import ArrayOps
from burnpy_cuda import CudaBackend

PROTOCOL = {c for c in Backend.__mro__ if c is not object}


@pytest.mark.parametrize("backend", [CpuBackend, CudaBackend], ids=lambda b: b.__name__)
def test_every_native_op_wins_over_the_protocol_default(backend: type[Backend]) -> None:
    assert issubclass(backend, ArrayOps)
    native = [c for c in backend.__mro__ if c not in PROTOCOL and c is not object]
    for family in native:
        for name in vars(family):
            if name.startswith("__"):
                continue
            owner = next(c for c in backend.__mro__ if name in vars(c))
            assert owner not in PROTOCOL, (
                f"{backend.__name__}.{name}: the protocol's {owner.__name__} shadows "
                f"{family.__name__}'s own")


def test_the_protocol_comes_after_every_family() -> None:
    mro = CpuBackend.__mro__
    first_protocol = min(mro.index(c) for c in PROTOCOL)
    assert all(mro.index(c) < first_protocol for c in ArrayOps.__bases__ if c not in PROTOCOL)
