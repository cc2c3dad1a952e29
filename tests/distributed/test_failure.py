"""A rank that raises or dies makes the others end within a bounded time, never hang."""

from __future__ import annotations

from mpi_ranks import run_ranks


def test_a_raising_rank_makes_the_others_raise_distributed_error() -> None:
    run = run_ranks("failing.py", "raise", "60", timeout=30)
    assert run.returncode != 0
    assert "rank 1 failed: ValueError: rank 1 gives up" in run.results[0]
    assert "[rank 1]" in run.stderr and "[rank 0]" in run.stderr
    assert run.seconds < 20  # far below the 60 s timeout: the notice, not the deadline


def test_a_dead_rank_ends_the_others() -> None:
    # mpiexec's default: it kills the remaining ranks at once.
    run = run_ranks("failing.py", "exit", "60", timeout=30)
    assert run.returncode != 0 and run.seconds < 20
    # Without that clean-up the survivors' deadline fires: DistributedError, no hang.
    run = run_ranks("failing.py", "exit", "2", timeout=30,
                    launcher_args=("-disable-auto-cleanup",))
    assert run.returncode != 0
    assert "waited 2 s for the other ranks" in run.results[0]
