"""CpuBackend's caching allocator: the large arrays its hot ops write reuse freed memory.

glibc maps every array of 32 MiB or more afresh (``mmap``) and unmaps it when freed, and below
that gives freed memory back by trimming the top of its heap: the next step's array is
page-faulted in again, 2.6-3.8 us per 4 KiB page on the machine measured against ~0.1 us of
arithmetic on the page (a 200 MB logits array: 50,000 faults, ~0.15 s, every step). A training
step allocates the same shapes step after step, so ``BufferPool`` keeps the large arrays the
hot ops write (matmul and linear outputs, attention, GELU, layer norm, cross entropy, Adam,
cat) and hands each out again, by shape and dtype, once
nothing holds it. Arrays under 4 MiB are left to glibc, whose heap reuses them warm: pooling
them too was measured 3-7% slower on the GPT example's step (16 ms), for the Python per
allocation and a larger cache footprint than glibc's most-recently-freed reuse.

Bounded: at most ``BURNPY_CPU_CACHE_BYTES`` bytes a thread (default 1 GiB; ``0`` turns it off),
64 arrays per shape and dtype, 4,096 shapes; beyond that arrays come from NumPy as usual.
``pool().release_free()`` gives the calling thread's free arrays back to the system (as
torch's ``empty_cache``).
"""

from __future__ import annotations

import math
import operator
import os
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

MIN_BYTES = 4 << 20
ARRAYS_PER_KEY = 64
MAX_KEYS = 4096
CACHE_BYTES_ENV = "BURNPY_CPU_CACHE_BYTES"
_SMALL: list[np.ndarray] = []  # the entry of every (shape, dtype) below MIN_BYTES: never filled


def _baseline_refcounts() -> tuple[int, int]:
    """The reference counts ``sys.getrefcount(arrays[i])`` and ``sys.getrefcount(
    arrays[i].base)`` read for a pooled array held only by its list (measured, since
    interpreters count the call's own reference differently)."""
    arrays = [np.empty(64, np.uint8)[8:].view(np.float32)]
    return sys.getrefcount(arrays[0]), sys.getrefcount(arrays[0].base)


class BufferPool:
    """Arrays kept by shape and dtype, handed out again once nothing else holds them.

    An array handed out is the pool's own object, a view of a byte buffer of its own at an
    offset that differs from array to array (arrays all starting at one offset in a page
    make a matmul or an elementwise loop hit the same cache sets: glibc maps every large
    buffer at 16 bytes past a page). NumPy points every view of the array at that buffer,
    so the array is free when neither it nor the buffer is referenced beyond the pool's own
    references, and a reuse costs a dictionary lookup instead of an allocation. One pool
    serves one thread (``pool()`` gives
    each its own), so no lock is taken: only the owning thread hands its arrays out, and a
    free array cannot gain a reference but through ``empty``. Any thread may drop them.
    """

    def __init__(self, capacity: int, min_bytes: int = MIN_BYTES,
                 arrays_per_key: int = ARRAYS_PER_KEY) -> None:
        self.capacity, self.min_bytes, self.arrays_per_key = capacity, min_bytes, arrays_per_key
        self._arrays: dict[tuple[Any, Any], list[np.ndarray]] = {}
        self._ids: set[int] = set()  # the arrays held (alive while held: ids are unique)
        self._held = 0
        self._free_count, self._free_base_count = _baseline_refcounts()
        self._allocated = 0  # arrays made: each starts its buffer at another offset

    def empty(self, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        """An uninitialised C-contiguous array of ``shape`` and ``dtype``: a free one of the
        pool's when it has at least ``min_bytes``, else a fresh ``np.empty``."""
        key = (shape, dtype)
        arrays = self._arrays.get(key)
        if arrays is None:
            arrays = self._register(shape, dtype)
        if arrays is _SMALL:
            return np.empty(shape, dtype)
        getrefcount, free, free_base = sys.getrefcount, self._free_count, self._free_base_count
        # newest use first: an array freed soon after it was handed out is still in cache
        for i in range(len(arrays) - 1, -1, -1):
            if getrefcount(arrays[i]) == free and getrefcount(arrays[i].base) == free_base:
                array = arrays[i]
                # a user may have made it read-only or reshaped it in place: not reused
                if array.flags.writeable and array.shape == shape:
                    if i != len(arrays) - 1:
                        arrays.append(arrays.pop(i))
                    return array
        return self._new(arrays, shape, dtype)

    def _register(self, shape: tuple[int, ...], dtype: Any) -> list[np.ndarray]:
        """The list for a new (shape, dtype), or ``_SMALL`` below ``min_bytes`` or with the
        cache off; beyond ``MAX_KEYS`` keys, those holding nothing in use are forgotten."""
        nbytes = math.prod(shape) * np.dtype(dtype).itemsize
        entry = _SMALL if nbytes < self.min_bytes or not self.capacity else []
        if len(self._arrays) >= MAX_KEYS:
            self._drop_free()
            for k in [k for k, v in self._arrays.items() if not v]:
                del self._arrays[k]
        return self._arrays.setdefault((shape, dtype), entry)

    def _new(self, arrays: list[np.ndarray], shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        """A new array, kept while the bounds allow (a plain ``np.empty`` beyond them)."""
        nbytes = math.prod(shape) * np.dtype(dtype).itemsize
        if len(arrays) >= self.arrays_per_key:
            return np.empty(shape, dtype)
        if self._held + nbytes > self.capacity:
            self._drop_free()
            if self._held + nbytes > self.capacity:
                return np.empty(shape, dtype)
        self._allocated += 1
        offset = self._allocated * 7 % 64 * 64  # cache lines apart, all over a page
        buffer = np.empty(nbytes + offset, np.uint8)
        array = buffer[offset:].view(dtype).reshape(shape)
        arrays.append(array)
        self._ids.update((id(array), id(buffer)))
        self._held += nbytes
        return array

    def _drop_free(self) -> None:
        """Forget every free array."""
        getrefcount, free, free_base = sys.getrefcount, self._free_count, self._free_base_count
        for arrays in self._arrays.values():
            if not arrays:
                continue
            kept = []
            for i in range(len(arrays)):
                if getrefcount(arrays[i]) == free and getrefcount(arrays[i].base) == free_base:
                    self._ids.difference_update((id(arrays[i]), id(arrays[i].base)))
                    self._held -= arrays[i].nbytes
                else:
                    kept.append(arrays[i])
            arrays[:] = kept

    def release_free(self) -> None:
        """Give the arrays nothing uses back to the system; arrays in use stay cached."""
        self._drop_free()

    def holds(self, array: np.ndarray) -> bool:
        """Whether ``array`` is one of the pool's arrays or their buffers: memory only
        CpuBackend's ops wrote, never a user's array that a tensor shares."""
        return id(array) in self._ids

    def held_bytes(self) -> int:
        """Bytes of the arrays held, in use or free."""
        return self._held

def _capacity_from_env() -> int:
    """``BURNPY_CPU_CACHE_BYTES`` as an int (default 1 GiB)."""
    text = os.environ.get(CACHE_BYTES_ENV, "")
    try:
        return max(int(text), 0) if text else 1 << 30
    except ValueError:
        from burnpy.backend.errors import BurnpyError
        raise BurnpyError(f"burnpy_cpu: {CACHE_BYTES_ENV}={text!r} is not a number of "
                          "bytes") from None


_CAPACITY = _capacity_from_env()
_local = threading.local()


def pool() -> BufferPool:
    """The calling thread's pool (created on its first use)."""
    try:
        return _local.pool
    except AttributeError:
        _local.pool = BufferPool(_CAPACITY)
        return _local.pool


def empty(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """An uninitialised array for an op to write its result into, from the thread's pool."""
    try:
        mine: BufferPool = _local.pool
    except AttributeError:
        mine = pool()
    return mine.empty(shape, dtype)


_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def matmul(lhs: Any, rhs: Any, fallback: Callable[[Any, Any], Any] = operator.matmul) -> Any:
    """``lhs @ rhs``, into a pooled array when both are NumPy stacks of float32 (or float64)
    matrices of one dtype; any other operands (CuPy's, vectors, mixed or 16-bit dtypes) by
    ``fallback``."""
    if (type(lhs) is np.ndarray and type(rhs) is np.ndarray and lhs.ndim >= 2
            and rhs.ndim >= 2 and lhs.dtype is rhs.dtype and lhs.dtype in _FLOATS
            and lhs.shape[-1] == rhs.shape[-2]):
        batch = (lhs.shape[:-2] if lhs.shape[:-2] == rhs.shape[:-2]
                 else np.broadcast_shapes(lhs.shape[:-2], rhs.shape[:-2]))
        out = empty((*batch, lhs.shape[-2], rhs.shape[-1]), lhs.dtype)
        return np.matmul(lhs, rhs, out=out)
    return fallback(lhs, rhs)


class BinaryOp(Protocol):
    """A float op's signature: ``(lhs, rhs) -> result``."""

    def __call__(self, lhs: Any, rhs: Any) -> Any: ...


def binary(ufunc: Any, fallback: Callable[[Any, Any], Any]) -> BinaryOp:
    """A binary op that runs ``ufunc`` into a pooled array when both operands are NumPy
    float arrays of one shape and dtype, of at least ``MIN_BYTES`` (a residual add, a
    gradient accumulated), else ``fallback`` (the operator: the cheapest call for the rest)."""

    def op(lhs: Any, rhs: Any) -> Any:
        if (type(lhs) is np.ndarray and type(rhs) is np.ndarray and lhs.nbytes >= MIN_BYTES
                and lhs.shape == rhs.shape and lhs.dtype is rhs.dtype and lhs.dtype in _FLOATS):
            return ufunc(lhs, rhs, out=empty(lhs.shape, lhs.dtype))
        return fallback(lhs, rhs)

    op.__name__ = op.__qualname__ = ufunc.__name__
    op.__doc__ = f"``{ufunc.__name__}(lhs, rhs)``; a large result on cached memory."
    return op


def concatenate(tensors: Sequence[np.ndarray], axis: int) -> np.ndarray:
    """``np.concatenate(tensors, axis)`` for NumPy arrays of one dtype: the memory they already
    cover when they are consecutive 1-d pieces of one array, in order (an optimizer's flat
    state, split into its parameters last step and joined again this step: no copy), else a
    copy on cached memory."""
    first = tensors[0]
    if first.ndim == 1:
        joined = _covered(tensors)
        if joined is not None:
            return joined
    shape = list(first.shape)
    shape[axis] = sum(t.shape[axis] for t in tensors)
    return np.concatenate(tensors, axis=axis, out=empty(tuple(shape), first.dtype))


def _covered(pieces: Sequence[np.ndarray]) -> np.ndarray | None:
    """The 1-d view of the memory ``pieces`` cover end to end, in order, within one of the
    pool's arrays (their common base), or None. Only the pool's: an op's result is never
    written again, while a user's array that tensors share may be, and a copy must not
    change with it."""
    base = pieces[0].base
    if type(base) is not np.ndarray or not pool().holds(base):
        return None
    for piece in pieces:
        if piece.base is not base or not piece.flags.c_contiguous:
            return None
    start = end = pieces[0].__array_interface__["data"][0]
    for piece in pieces:
        if piece.__array_interface__["data"][0] != end:
            return None
        end += piece.nbytes
    offset = start - base.__array_interface__["data"][0]
    dtype = pieces[0].dtype
    return np.ndarray(((end - start) // dtype.itemsize,), dtype, buffer=base, offset=offset)
