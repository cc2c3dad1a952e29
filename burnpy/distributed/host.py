"""Tensors as host buffers for MPI, and back.

A tensor of a decorator backend (``Autodiff(B)``...) is communicated as its plain innermost
tensor and lifted back, untracked. On a backend whose primitives are NumPy arrays (the CPU)
MPI reads and writes them in place; any other backend (WebGPU, CUDA under MPI) is staged
through the host with ``into_data`` / ``from_data``. MPI has no 16-bit floats: float16 and
bfloat16 travel as float32.
"""

from __future__ import annotations

import numpy as np

from burnpy.tensor import Tensor
from burnpy.tensor._core import new


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
    return Tensor.from_data(array, backend=like.backend, device=like.device, dtype=like.dtype)
