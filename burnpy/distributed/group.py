"""The process group: one per process, started by ``mpiexec -n N`` and joined by
``init_process_group``.

MPI (mpi4py) carries every collective of every backend; the ``"nccl"`` backend adds an NCCL
communicator (through CuPy) for tensors living on a CUDA device, its unique id shared over MPI.
Collectives run on a duplicate of ``COMM_WORLD``, failure notices on another (``failure.py``),
so a notice never matches a collective's message.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from burnpy.backend.errors import InvalidArgumentError
from burnpy.distributed.errors import DistributedError

if TYPE_CHECKING:
    from mpi4py import MPI

    from burnpy.distributed.nccl import NcclCommunicator

#: Seconds a collective may wait for the other ranks before raising ``DistributedError``
#: (``BURNPY_DIST_TIMEOUT`` overrides it; ``init_process_group(timeout=...)`` too).
DEFAULT_TIMEOUT = 600.0
BACKENDS = ("mpi", "nccl")


@dataclass
class ProcessGroup:
    """The world of ranks this process belongs to."""

    backend: str
    comm: MPI.Intracomm
    control: MPI.Intracomm
    rank: int
    size: int
    timeout: float
    nccl: NcclCommunicator | None = None


class _State:
    """The process's group (None until ``init_process_group``)."""

    group: ProcessGroup | None = None


STATE = _State()


def require_mpi() -> None:
    """Raise a ``DistributedError`` saying how to install mpi4py when it is missing."""
    try:
        import mpi4py  # noqa: F401
    except ImportError as exc:
        raise DistributedError("burnpy.distributed needs mpi4py and an MPI library: pip install "
                               "'burnpy[distributed]'") from exc


def init_process_group(backend: str = "mpi", timeout: float | None = None) -> ProcessGroup:
    """Join the ranks started by ``mpiexec``: ``backend`` is ``"mpi"`` (any burnpy backend) or
    ``"nccl"`` (CUDA tensors through NCCL, the rest through MPI).

    ``timeout`` bounds every wait on the other ranks (default ``BURNPY_DIST_TIMEOUT`` or 600 s):
    past it, or as soon as another rank fails, a collective raises ``DistributedError``.
    Calling it again returns the group already joined.
    """
    if backend not in BACKENDS:
        raise InvalidArgumentError(f"init_process_group: backend must be one of {BACKENDS}, "
                                   f"got {backend!r}")
    if STATE.group is not None:
        if STATE.group.backend != backend:
            raise DistributedError(f"init_process_group: already initialized with backend "
                                   f"{STATE.group.backend!r}; destroy_process_group() first")
        return STATE.group
    require_mpi()
    from mpi4py import MPI

    from burnpy.distributed import failure

    if timeout is None:
        timeout = float(os.environ.get("BURNPY_DIST_TIMEOUT", DEFAULT_TIMEOUT))
    if timeout <= 0:
        raise InvalidArgumentError(f"init_process_group: timeout must be > 0, got {timeout}")
    world = MPI.COMM_WORLD
    world.Set_errhandler(MPI.ERRORS_RETURN)  # errors come back as exceptions, never abort
    comm, control = world.Dup(), world.Dup()
    group = ProcessGroup(backend, comm, control, comm.Get_rank(), comm.Get_size(),
                         float(timeout))
    STATE.group = group
    failure.install(group)
    if backend == "nccl":
        from burnpy.distributed.nccl import NcclCommunicator

        group.nccl = NcclCommunicator(group)
    return group


def current_group(op: str) -> ProcessGroup:
    """The joined group, or a ``DistributedError`` naming ``op`` when there is none."""
    group = STATE.group
    if group is None:
        raise DistributedError(f"{op}: no process group; call "
                               "burnpy.distributed.init_process_group() first")
    return group


def is_initialized() -> bool:
    """Whether this process has joined a process group."""
    return STATE.group is not None


def get_rank() -> int:
    """This process's rank, 0 to ``get_world_size() - 1`` (0 without a group)."""
    return 0 if STATE.group is None else STATE.group.rank


def get_world_size() -> int:
    """The number of ranks (1 without a group)."""
    return 1 if STATE.group is None else STATE.group.size


def barrier() -> None:
    """Wait until every rank reaches this call (bounded by the group's timeout)."""
    from burnpy.distributed import failure

    group = current_group("barrier")
    failure.wait(group, [group.comm.Ibarrier()], "barrier")


def destroy_process_group() -> None:
    """Leave the group: free its communicators (MPI itself ends when the process does)."""
    from burnpy.distributed import failure

    group = STATE.group
    if group is None:
        return
    if group.nccl is not None:
        group.nccl.close()
    failure.uninstall()
    group.comm.Free()
    group.control.Free()
    STATE.group = None
