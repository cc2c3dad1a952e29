"""GPU memory: storage buffers recycled by size class, returned when their tensors die.

A ``Slab`` is one GPU buffer; a ``BufferHandle`` is shared by a tensor and all its views and
gives the slab back to the pool when the last of them is garbage-collected. Slabs freed while
a batch of recorded commands is still unsubmitted may be read by those commands: they can be
reused as kernel outputs at once (commands run in recording order), but not as targets of
``queue.write_buffer`` (which runs before the batch) until the batch is submitted.

The pool keeps every slab it made reachable (``slabs``), so a handle collected as part of a
reference cycle never takes its GPU buffer down with it: the buffer's own finalizer would
release it before the handle's could recycle it.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

_UIDS = itertools.count(1)
_MIN_BYTES = 16
#: Uploads of at most this many bytes keep a host copy of them (``Slab.host``).
HOST_COPY_BYTES = 1 << 16


class Slab:
    """One GPU buffer of ``size`` bytes, with a unique id for bind-group caching.

    ``host`` is a read-only copy of the bytes of a small upload (``HOST_COPY_BYTES``), kept
    until a kernel writes the buffer or the pool takes it back: reading such a tensor back
    (class labels that a loss checks every step, a mask) then needs no device round trip,
    which would wait for every queued kernel."""

    __slots__ = ("buffer", "host", "size", "uid")

    def __init__(self, buffer: Any, size: int) -> None:
        self.buffer = buffer
        self.size = size
        self.uid = next(_UIDS)
        self.host: np.ndarray | None = None


class BufferHandle:
    """Ownership of a slab by a tensor and its views; recycles the slab when collected."""

    __slots__ = ("__weakref__", "pool", "slab")

    def __init__(self, slab: Slab, pool: BufferPool) -> None:
        self.slab = slab
        self.pool = pool

    def __del__(self) -> None:
        pool = self.pool
        if pool is not None:
            pool.release(self.slab)


def size_class(nbytes: int) -> int:
    """The allocation size for ``nbytes``: powers of two up to 64 KiB, then quarter steps
    (at most 25% waste), always a multiple of 16."""
    n = max(nbytes, _MIN_BYTES)
    if n <= 1 << 16:
        return 1 << (n - 1).bit_length()
    step = 1 << ((n - 1).bit_length() - 3)
    return -(-n // step) * step


class BufferPool:
    """Free slabs by size class; ``cap_bytes`` bounds the memory kept free."""

    def __init__(self, device: Any, usage: int, cap_bytes: int) -> None:
        self.device = device
        self.usage = usage
        self.cap_bytes = cap_bytes
        self.free: dict[int, list[Slab]] = {}
        self.pending: dict[int, list[Slab]] = {}
        self.slabs: dict[int, Slab] = {}
        self.free_bytes = 0
        self.batch_open = False
        self.allocated = 0
        self.reused = 0
        self.trimmed = 0

    def acquire(self, nbytes: int, for_upload: bool = False) -> Slab:
        """A slab of at least ``nbytes``: recycled when one of its size class is free, the
        most recently freed first (its bind groups are likely cached)."""
        size = size_class(nbytes)
        if not for_upload:
            bucket = self.pending.get(size)
            if bucket:
                self.reused += 1
                return bucket.pop()
        bucket = self.free.get(size)
        if bucket:
            self.free_bytes -= size
            self.reused += 1
            return bucket.pop()
        self.allocated += 1
        slab = Slab(self.device.create_buffer(size=size, usage=self.usage), size)
        self.slabs[slab.uid] = slab
        return slab

    def release(self, slab: Slab) -> None:
        """Take a slab back (called when its last tensor dies)."""
        slab.host = None
        if self.batch_open:
            self.pending.setdefault(slab.size, []).append(slab)
        else:
            self.free.setdefault(slab.size, []).append(slab)
            self.free_bytes += slab.size

    def batch_submitted(self) -> bool:
        """Make slabs freed during the submitted batch fully reusable; trim to the cap.
        Returns True when slabs were destroyed (cached bind groups may name them)."""
        self.batch_open = False
        for size, slabs in self.pending.items():
            if slabs:
                self.free.setdefault(size, []).extend(slabs)
                self.free_bytes += size * len(slabs)
                slabs.clear()
        if self.free_bytes <= self.cap_bytes:
            return False
        for size in sorted(self.free, reverse=True):
            bucket = self.free[size]
            while bucket and self.free_bytes > self.cap_bytes // 2:
                slab = bucket.pop()
                del self.slabs[slab.uid]
                slab.buffer.destroy()
                self.free_bytes -= size
                self.trimmed += 1
        return True
