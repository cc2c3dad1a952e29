"""Tensors as host buffers for MPI, and back.

A tensor of a decorator backend (``Autodiff(B)``...) is communicated as its plain innermost
tensor and lifted back, untracked. On a backend whose primitives are NumPy arrays (the CPU)
MPI reads and writes them in place; any other backend (WebGPU, CUDA under MPI) is staged
through the host with ``into_data`` / ``from_data``. MPI has no 16-bit floats: float16 and
bfloat16 travel as float32.

Receive buffers are recycled (``ReceiveBuffers``): a fresh 64 MB array costs its page faults
on every call, a measurable share of an all-reduce's time.
"""

from __future__ import annotations

import sys
from collections import OrderedDict

import numpy as np

from burnpy.tensor import Tensor
from burnpy.tensor._core import new
from burnpy.tensor.creation import from_owned_data


def peel(t: Tensor) -> tuple[Tensor, list[type]]:
    """The plain innermost tensor of ``t`` (untracked) and the decorators to lift it back
    through, outermost first."""
    decorators: list[type] = []
    while getattr(t.backend, "InnerBackend", None) is not None:
        decorators.append(t.backend)
        t = t.inner()
    return t, decorators


def lift(t: Tensor, decorators: list[type]) -> Tensor:
    """``t`` lifted through ``decorators`` (as ``peel`` returned them): an untracked tensor."""
    for backend in reversed(decorators):
        t = Tensor.from_inner(t, backend=backend)
    return t


def wire_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype a host array travels as: float32 for the 16-bit floats MPI lacks."""
    if dtype.itemsize == 2 and (dtype.kind == "f" or dtype.name == "bfloat16"):
        return np.dtype(np.float32)
    return dtype


def to_host(t: Tensor) -> np.ndarray:
    """A C-contiguous host array of ``t``'s values (``t`` plain): the primitive itself when it
    is a NumPy array already, else a staged copy; 16-bit floats widened to float32."""
    p = t.primitive
    array = p if isinstance(p, np.ndarray) else t.into_data().array
    wire = wire_dtype(array.dtype)
    if wire != array.dtype:
        return array.astype(wire)
    return array if array.flags.c_contiguous else array.copy(order="C")  # keeps 0-d


def from_host(array: np.ndarray, like: Tensor) -> Tensor:
    """A plain tensor holding ``array``, with ``like``'s backend, device, kind and dtype: the
    array itself on a NumPy backend (no copy unless it was widened), else uploaded."""
    p = like.primitive
    if isinstance(p, np.ndarray):
        return new(like.backend, array if array.dtype == p.dtype else array.astype(p.dtype),
                   like.kind)
    return from_owned_data(array, backend=like.backend, device=like.device, dtype=like.dtype)


class ReceiveBuffers:
    """Host arrays that collectives receive into, kept for the next call of the same shape
    and dtype. A buffer is handed out again only once nothing else refers to it (its
    reference count shows the cache's alone): a tensor returned earlier may be its very
    array, or a view of it, on a NumPy backend. The ``capacity`` most recent shapes stay."""

    def __init__(self, capacity: int = 4) -> None:
        self.capacity = capacity
        self.buffers: OrderedDict[tuple[tuple[int, ...], str], np.ndarray] = OrderedDict()

    def take(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        """An uninitialised array of ``shape`` and ``dtype``, recycled when one is free."""
        key = (shape, dtype.str)
        buffer = self.buffers.get(key)
        # 3 references: the cache's, ``buffer`` and getrefcount's argument: no tensor holds it.
        if buffer is None or sys.getrefcount(buffer) > 3:
            buffer = np.empty(shape, dtype)
            self.buffers[key] = buffer
        self.buffers.move_to_end(key)
        while len(self.buffers) > self.capacity:
            self.buffers.popitem(last=False)
        return buffer

    def forget(self, buffer: np.ndarray) -> None:
        """Never hand ``buffer`` out again (a failed collective may still write into it)."""
        key = (buffer.shape, buffer.dtype.str)
        if self.buffers.get(key) is buffer:
            del self.buffers[key]


#: The process's receive buffers (collectives run on one thread).
RECEIVE = ReceiveBuffers()
