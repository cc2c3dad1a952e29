"""Fixtures shared by the Fusion tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from burnpy import Fusion
from burnpy_cpu import CpuBackend
from burnpy_cpu.fuser import FUSER


@pytest.fixture
def cpu_kernels_from_eight() -> Iterator[None]:
    """``Fusion(CpuBackend)`` records tensors of 8 elements and more (and leaves zeros that
    large unwritten), from a flushed stream and zeroed counters."""
    fused = Fusion(CpuBackend)
    before = FUSER.min_elements, FUSER.unwritten_elements
    FUSER.min_elements = FUSER.unwritten_elements = 8
    fused.flush()
    fused.stats.reset()
    yield
    FUSER.min_elements, FUSER.unwritten_elements = before
