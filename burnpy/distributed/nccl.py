"""NCCL through CuPy (``cupy.cuda.nccl``) for tensors on a CUDA device.

Rank 0 makes the NCCL unique id and MPI broadcasts it; each rank then uses the GPU of its
index among the ranks of its machine. Collectives are enqueued on the current CuPy stream;
the wait polls a CUDA event against the group's deadline (and failure notices over MPI), and
aborts the NCCL communicator on timeout, so a dead peer never hangs a rank. Dtypes NCCL lacks
(int16, bool) go through MPI instead.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from burnpy.distributed import failure
from burnpy.distributed.errors import DistributedError
from burnpy.tensor import Tensor
from burnpy.tensor._core import new

if TYPE_CHECKING:
    from burnpy.distributed.group import ProcessGroup

#: NCCL's dtype and reduce-op names in ``cupy.cuda.nccl``.
_DTYPES = {"float64": "NCCL_FLOAT64", "float32": "NCCL_FLOAT32", "float16": "NCCL_FLOAT16",
           "bfloat16": "NCCL_BFLOAT16", "int64": "NCCL_INT64", "int32": "NCCL_INT32",
           "int8": "NCCL_INT8", "uint8": "NCCL_UINT8"}
_OPS = {"sum": "NCCL_SUM", "mean": "NCCL_SUM", "max": "NCCL_MAX", "min": "NCCL_MIN"}


def _cupy() -> tuple[Any, Any]:
    """(cupy, cupy.cuda.nccl), or a ``DistributedError`` saying what is missing."""
    try:
        import cupy
        from cupy.cuda import nccl
    except ImportError as exc:
        raise DistributedError(f"backend='nccl' needs CuPy built with NCCL ({exc}); install "
                               "burnpy[cuda], or use backend='mpi'") from None
    if not nccl.available:
        raise DistributedError("backend='nccl': this CuPy has no NCCL; pip install nvidia-nccl-cu12"
                               " or use backend='mpi'")
    return cupy, nccl


class NcclCommunicator:
    """One NCCL communicator over every rank of ``group``, on this rank's local GPU."""

    def __init__(self, group: ProcessGroup) -> None:
        from mpi4py import MPI

        self.cupy, self.nccl = _cupy()
        self.group = group
        local = group.comm.Split_type(MPI.COMM_TYPE_SHARED)
        local_rank = local.Get_rank()
        local.Free()
        count = int(self.cupy.cuda.runtime.getDeviceCount())
        if count == 0:
            raise DistributedError("backend='nccl': no CUDA GPU on this machine")
        self.cupy.cuda.Device(local_rank % count).use()
        uid = self.nccl.get_unique_id() if group.rank == 0 else None
        uid = group.comm.bcast(uid, root=0)
        self.comm = self.nccl.NcclCommunicator(group.size, uid, group.rank)

    def handles(self, t: Tensor) -> bool:
        """Whether ``t`` (plain) lives on a CUDA device in a dtype NCCL carries."""
        p = t.primitive
        return isinstance(p, self.cupy.ndarray) and p.dtype.name in _DTYPES \
            and hasattr(self.nccl, _DTYPES[p.dtype.name])

    def _dtype(self, array: Any) -> int:
        return int(getattr(self.nccl, _DTYPES[array.dtype.name]))

    def _wait(self, what: str) -> None:
        """Wait for the stream's NCCL work, bounded by the group's timeout."""
        stream = self.cupy.cuda.get_current_stream()
        event = self.cupy.cuda.Event(disable_timing=True)
        event.record(stream)
        deadline = time.monotonic() + self.group.timeout
        while not event.done:
            failure.check_notices(self.group, what)
            if time.monotonic() > deadline:
                self.comm.abort()
                failure.FAILURE.failed = True
                raise DistributedError(f"{what} (NCCL): rank {self.group.rank} waited "
                                       f"{self.group.timeout:g} s for the other ranks")
            time.sleep(1e-4)

    def all_reduce(self, t: Tensor, op: str) -> Tensor:
        """``t`` reduced with ``op`` over every rank."""
        x = self.cupy.ascontiguousarray(t.primitive)
        out = self.cupy.empty_like(x)
        stream = self.cupy.cuda.get_current_stream().ptr
        self.comm.allReduce(x.data.ptr, out.data.ptr, x.size, self._dtype(x),
                            getattr(self.nccl, _OPS[op]), stream)
        self._wait("all_reduce")
        if op == "mean":
            out /= self.group.size
        return new(t.backend, out, t.kind)

    def broadcast(self, t: Tensor, src: int) -> Tensor:
        """Rank ``src``'s ``t`` on every rank."""
        x = self.cupy.ascontiguousarray(t.primitive)
        out = x.copy() if self.group.rank == src else self.cupy.empty_like(x)
        self.comm.broadcast(out.data.ptr, out.data.ptr, x.size, self._dtype(x), src,
                            self.cupy.cuda.get_current_stream().ptr)
        self._wait("broadcast")
        return new(t.backend, out, t.kind)

    def all_gather(self, t: Tensor) -> list[Tensor]:
        """Every rank's ``t``, in rank order."""
        x = self.cupy.ascontiguousarray(t.primitive)
        out = self.cupy.empty((self.group.size, *x.shape), dtype=x.dtype)
        self.comm.allGather(x.data.ptr, out.data.ptr, x.size, self._dtype(x),
                            self.cupy.cuda.get_current_stream().ptr)
        self._wait("all_gather")
        return [new(t.backend, out[r], t.kind) for r in range(self.group.size)]

    def reduce_scatter(self, t: Tensor, op: str) -> Tensor:
        """Chunk ``rank`` (along dim 0) of ``t`` reduced over every rank."""
        x = self.cupy.ascontiguousarray(t.primitive)
        out = self.cupy.empty((x.shape[0] // self.group.size, *x.shape[1:]), dtype=x.dtype)
        self.comm.reduceScatter(x.data.ptr, out.data.ptr, out.size, self._dtype(x),
                                getattr(self.nccl, _OPS[op]),
                                self.cupy.cuda.get_current_stream().ptr)
        self._wait("reduce_scatter")
        if op == "mean":
            out /= self.group.size
        return new(t.backend, out, t.kind)

    def close(self) -> None:
        """Free the NCCL communicator."""
        self.comm.destroy()
