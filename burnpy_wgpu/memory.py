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

import heapq
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

    def __lt__(self, other: Slab) -> bool:
        """Older first: a pool's free slabs are heaps by age (``BufferPool.acquire``)."""
        return self.uid < other.uid


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
        oldest free one first. Which slabs are free then depends only on the work done, not
        on the order tensors died in: a training step that repeats gets the same buffers at
        each step, and its cached bind groups hit (taking the most recently freed slab, a
        Fusion step's optimizer outputs wandered over a size class and missed 3 a step)."""
        size = size_class(nbytes)
        if not for_upload:
            bucket = self.pending.get(size)
            if bucket:
                self.reused += 1
                return heapq.heappop(bucket)
        bucket = self.free.get(size)
        if bucket:
            self.free_bytes -= size
            self.reused += 1
            return heapq.heappop(bucket)
        self.allocated += 1
        slab = Slab(self.device.create_buffer(size=size, usage=self.usage), size)
        self.slabs[slab.uid] = slab
        return slab

    def release(self, slab: Slab) -> None:
        """Take a slab back (called when its last tensor dies)."""
        slab.host = None
        if self.batch_open:
            heapq.heappush(self.pending.setdefault(slab.size, []), slab)
        else:
            heapq.heappush(self.free.setdefault(slab.size, []), slab)
            self.free_bytes += slab.size

    def batch_submitted(self) -> bool:
        """Make slabs freed during the submitted batch fully reusable; trim to the cap.
        Returns True when slabs were destroyed (cached bind groups may name them)."""
        self.batch_open = False
        for size, slabs in self.pending.items():
            if slabs:
                bucket = self.free.setdefault(size, [])
                bucket.extend(slabs)
                heapq.heapify(bucket)
                self.free_bytes += size * len(slabs)
                slabs.clear()
        if self.free_bytes <= self.cap_bytes:
            return False
        for size in sorted(self.free, reverse=True):
            bucket = self.free[size]
            while bucket and self.free_bytes > self.cap_bytes // 2:
                slab = bucket.pop()  # a heap's last item: what remains is still a heap
                del self.slabs[slab.uid]
                slab.buffer.destroy()
                self.free_bytes -= size
                self.trimmed += 1
        return True
