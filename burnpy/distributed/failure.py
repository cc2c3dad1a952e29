"""Failure handling: no rank ever hangs because another one failed.

- Every wait on other ranks polls its non-blocking requests (``Testall``) against a deadline
  (the group's timeout) and, between polls, the control communicator for failure notices.
- A rank whose Python program ends with an uncaught exception (``sys.excepthook``) sends a
  notice to every other rank, waits a bounded grace period for their acknowledgements, and
  leaves with ``os._exit(1)`` (``MPI_Finalize`` would wait for the failed peers forever).
  A rank receiving a notice raises ``DistributedError`` naming the peer and its error, and
  acknowledges the notice once it has printed it (or at exit).
- A rank that dies without a word (killed, ``os._exit``): MPICH's ``mpiexec`` kills the other
  ranks at once by default; with ``mpiexec -disable-auto-cleanup`` they see the deadline pass
  and raise ``DistributedError``.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING

from burnpy.distributed.errors import DistributedError

if TYPE_CHECKING:
    from mpi4py import MPI

    from burnpy.distributed.group import ProcessGroup

NOTICE_TAG, ACK_TAG = 1, 2
#: Polls between two looks for a failure notice, and spins before a wait starts sleeping.
_PROBE_EVERY, _SPINS = 32, 2000
#: The longest a failing rank waits for the others to acknowledge its notice.
MAX_GRACE = 10.0


class _Failure:
    """What this process knows of failures: whether one happened, the hook it replaced."""

    def __init__(self) -> None:
        self.failed = False
        self.previous_hook: Callable[[type[BaseException], BaseException,
                                      TracebackType | None], object] = sys.excepthook
        #: The failed rank to acknowledge once this one has reported the failure.
        self.acknowledge: int | None = None


FAILURE = _Failure()


def install(group: ProcessGroup) -> None:
    """Route uncaught exceptions through ``_excepthook`` and skip ``MPI_Finalize`` at exit
    after a failure (it would wait for the failed ranks)."""
    FAILURE.previous_hook = sys.excepthook
    sys.excepthook = _excepthook
    atexit.register(_exit_after_failure)


def uninstall() -> None:
    """Restore the exception hook ``install`` replaced."""
    sys.excepthook = FAILURE.previous_hook
    atexit.unregister(_exit_after_failure)


def wait(group: ProcessGroup, requests: Sequence[MPI.Request], what: str) -> None:
    """Complete ``requests`` or raise ``DistributedError``: on an MPI error, on a failure
    notice from another rank, or when the group's timeout passes."""
    from mpi4py import MPI

    deadline = time.monotonic() + group.timeout
    polls = 0
    while True:
        try:
            if MPI.Request.Testall(list(requests)):
                return
        except MPI.Exception as exc:
            FAILURE.failed = True
            raise DistributedError(f"{what}: MPI error on rank {group.rank}: "
                                   f"{exc.Get_error_string()}") from None
        polls += 1
        if polls % _PROBE_EVERY == 0:
            check_notices(group, what)
            if time.monotonic() > deadline:
                FAILURE.failed = True
                for request in requests:
                    _cancel(request)
                raise DistributedError(
                    f"{what}: rank {group.rank} waited {group.timeout:g} s for the other ranks; "
                    "one of them has died or stopped (the timeout is "
                    "init_process_group(timeout=...) or BURNPY_DIST_TIMEOUT)")
        if polls > _SPINS:
            time.sleep(1e-4 if polls < 10 * _SPINS else 1e-3)


def check_notices(group: ProcessGroup, what: str) -> None:
    """Raise ``DistributedError`` if another rank has announced its failure."""
    from mpi4py import MPI

    status = MPI.Status()
    if not group.control.Iprobe(MPI.ANY_SOURCE, NOTICE_TAG, status):
        return
    peer = status.Get_source()
    message = group.control.recv(source=peer, tag=NOTICE_TAG)
    FAILURE.failed = True
    FAILURE.acknowledge = peer
    raise DistributedError(f"{what}: rank {peer} failed: {message}", peer=peer)


def _cancel(request: MPI.Request) -> None:
    """Cancel ``request`` if MPI can (best effort: the group has failed anyway)."""
    with contextlib.suppress(Exception):
        request.Cancel()


def notify(group: ProcessGroup, message: str) -> None:
    """Tell every other rank that this one failed with ``message``; wait (bounded) for their
    acknowledgements, so they can report it before ``mpiexec`` ends them."""
    from mpi4py import MPI

    peers = [r for r in range(group.size) if r != group.rank]
    sends = [group.control.isend(message, dest=r, tag=NOTICE_TAG) for r in peers]
    acks = [group.control.irecv(source=r, tag=ACK_TAG) for r in peers]
    deadline = time.monotonic() + min(group.timeout, MAX_GRACE)
    while time.monotonic() < deadline:
        try:
            if MPI.Request.Testall(acks):
                break
        except MPI.Exception:
            break
        time.sleep(1e-3)
    del sends


def _excepthook(kind: type[BaseException], value: BaseException,
                tb: TracebackType | None) -> None:
    """Print the error with its rank, notify the other ranks (unless it came from one), exit."""
    from burnpy.distributed.group import STATE

    group = STATE.group
    if group is None:
        FAILURE.previous_hook(kind, value, tb)
        return
    text = "".join(traceback.format_exception(kind, value, tb))
    sys.stderr.write(f"[rank {group.rank}] {text}")
    sys.stderr.flush()
    sys.stdout.flush()
    FAILURE.failed = True
    if not (isinstance(value, DistributedError) and value.peer is not None):
        notify(group, f"{kind.__name__}: {value}")
    _acknowledge(group)
    os._exit(1)


def _acknowledge(group: ProcessGroup) -> None:
    """Tell the failed rank whose notice this one received that it may now exit."""
    if FAILURE.acknowledge is not None:
        group.control.send(group.rank, dest=FAILURE.acknowledge, tag=ACK_TAG)
        FAILURE.acknowledge = None


def _exit_after_failure() -> None:
    """At exit after a failure: leave without ``MPI_Finalize``, which would hang."""
    if FAILURE.failed:
        from burnpy.distributed.group import STATE

        if STATE.group is not None:
            _acknowledge(STATE.group)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)
