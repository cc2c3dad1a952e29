"""CpuBackend's caching allocator (``burnpy_cpu.memory``): an array is handed out again only
once nothing holds it, never while a view of it lives, across threads too; the ops that write
into it give NumPy's results."""

from __future__ import annotations

import operator
import threading

import numpy as np
import pytest

from burnpy.backend.errors import BurnpyError
from burnpy_cpu import CpuBackend, memory
from burnpy_cpu.memory import BufferPool

SHAPE = (1024, 1024)  # 4 MiB of float32: the pool's minimum


def test_freed_array_is_reused_and_live_ones_are_not() -> None:
    pool = BufferPool(1 << 30)
    a = pool.empty(SHAPE, np.float32)
    b = pool.empty(SHAPE, np.float32)
    assert a.shape == SHAPE and a.dtype == np.float32 and a.flags.c_contiguous
    assert not np.shares_memory(a, b) and pool.holds(a) and pool.holds(b)
    first = id(a)  # the identity only: holding a would keep it busy
    del a
    c = pool.empty(SHAPE, np.float32)
    assert id(c) == first  # a was free: handed out again
    assert pool.held_bytes() == 2 * SHAPE[0] * SHAPE[1] * 4
    assert pool.empty((SHAPE[1] // 2, SHAPE[0] * 2), np.float32).shape == (512, 2048)


def test_a_view_keeps_its_array_busy() -> None:
    pool = BufferPool(1 << 30)
    a = pool.empty(SHAPE, np.float32)
    view = a.T[3:, ::2][5:].view(np.int32)  # views of views still point at the array
    a[...] = 7.0
    first = id(a)
    del a
    b = pool.empty(SHAPE, np.float32)
    b[...] = -1.0
    assert id(b) != first and not np.shares_memory(view, b)
    np.testing.assert_array_equal(view.view(np.float32), 7.0)
    exported = b.data  # a buffer export holds it too
    second = id(b)
    del b
    assert id(pool.empty(SHAPE, np.float32)) not in (first, second)
    del exported, view


def test_read_only_or_reshaped_arrays_are_not_handed_out() -> None:
    pool = BufferPool(1 << 30)
    a = pool.empty(SHAPE, np.float32)
    a.flags.writeable = False
    first = id(a)
    del a
    b = pool.empty(SHAPE, np.float32)
    assert id(b) != first and b.flags.writeable


def test_small_requests_and_bounds_fall_back_to_numpy() -> None:
    pool = BufferPool(SHAPE[0] * SHAPE[1] * 4 + 4096, arrays_per_key=2)
    small = pool.empty((4, 4), np.float64)
    assert not pool.holds(small) and pool.held_bytes() == 0
    a = pool.empty(SHAPE, np.float32)
    over = pool.empty(SHAPE, np.float32)  # the capacity holds one: plain NumPy
    assert pool.holds(a) and not pool.holds(over)
    off = BufferPool(0)
    assert not off.holds(off.empty(SHAPE, np.float32)) and off.held_bytes() == 0


def test_capacity_drops_free_arrays_of_other_shapes() -> None:
    wide = (SHAPE[0], SHAPE[1] + 64)
    pool = BufferPool(wide[0] * wide[1] * 4 + 4096)
    a = pool.empty(SHAPE, np.float32)
    del a
    wider = pool.empty(wide, np.float32)  # another shape, over the capacity: a is dropped
    assert pool.holds(wider) and pool.held_bytes() == wide[0] * wide[1] * 4
    pool.release_free()
    assert pool.held_bytes() > 0  # wider is alive
    del wider
    pool.release_free()
    assert pool.held_bytes() == 0


def test_threads_never_share_a_live_array() -> None:
    errors: list[str] = []
    barrier = threading.Barrier(4)
    def work(k: int) -> None:
        barrier.wait()
        mine = memory.pool()  # each thread has its own
        for i in range(20):
            a = memory.empty(SHAPE, np.float32)
            a.fill(k * 1000 + i)
            b = memory.empty(SHAPE, np.float64)
            b.fill(-k)
            if not (mine.holds(a) and np.all(a == k * 1000 + i) and np.all(b == -k)):
                errors.append(f"thread {k} step {i}: its array was overwritten")
        # at most two of each were alive at once (the next drawn before the last died)
        if mine.held_bytes() > 2 * (a.nbytes + b.nbytes):
            errors.append(f"thread {k} holds {mine.held_bytes()} bytes")

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_an_array_dropped_in_another_thread_is_reused_by_its_own() -> None:
    shape = (1025, 1025)  # no other test's shape
    box = [memory.empty(shape, np.float32)]
    first = id(box[0])
    dropper = threading.Thread(target=box.clear)
    dropper.start()
    dropper.join()
    assert id(memory.empty(shape, np.float32)) == first


def test_pooled_ops_match_numpy() -> None:
    add = memory.binary(np.add, operator.add)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 512, 512), dtype=np.float32)  # 4 MiB
    w = rng.standard_normal((512, 640), dtype=np.float32)
    y = rng.standard_normal((4, 512, 512), dtype=np.float32)
    for _ in range(3):  # later rounds run on reused blocks
        np.testing.assert_array_equal(memory.matmul(x, w), x @ w)
        np.testing.assert_array_equal(memory.matmul(x, x.swapaxes(-1, -2)),
                                      x @ x.swapaxes(-1, -2))
        added = add(x, y)
        np.testing.assert_array_equal(added, x + y)
        assert memory.pool().holds(added) and memory.pool().holds(memory.matmul(x, w))
        np.testing.assert_array_equal(add(x, 2.0), x + 2.0)  # a scalar: the operator
        np.testing.assert_array_equal(add(x, y[0]), x + y[0])  # broadcast: the operator
        joined = CpuBackend.float_cat([x, y, x], 1)
        np.testing.assert_array_equal(joined, np.concatenate([x, y, x], 1))
    np.testing.assert_array_equal(memory.matmul(x[0, 0], w), x[0, 0] @ w)  # a vector: plain
    assert memory.matmul(x.astype(np.float64), w).dtype == np.float64  # mixed: promoted


def test_bad_capacity_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(memory.CACHE_BYTES_ENV, "lots")
    with pytest.raises(BurnpyError, match="BURNPY_CPU_CACHE_BYTES"):
        memory._capacity_from_env()
    monkeypatch.setenv(memory.CACHE_BYTES_ENV, "0")
    assert memory._capacity_from_env() == 0


def test_cat_of_consecutive_pieces_is_their_memory() -> None:
    flat = memory.empty((1 << 20,), np.float32)  # an op's result, on the pool's memory
    flat[...] = np.arange(flat.size)
    pieces = [flat[0:300].reshape(30, 10).reshape(-1), flat[300:310], flat[310:]]
    joined = CpuBackend.float_cat(pieces, 0)
    np.testing.assert_array_equal(joined, np.concatenate(pieces))
    assert np.shares_memory(joined, flat)
    partial = CpuBackend.float_cat(pieces[1:], 0)  # a tail of the array: a view too
    np.testing.assert_array_equal(partial, flat[300:])
    for other in ([pieces[1], pieces[0]],  # out of order
                  [flat[0:10], flat[11:20]],  # a gap
                  [flat[0:10], np.arange(10, dtype=np.float32)],  # another array
                  [flat[0:20:2], flat[20:30]],  # strided
                  [flat[0:10], flat[10:20].astype(np.float64)]):  # another dtype
        got = CpuBackend.float_cat(other, 0)
        np.testing.assert_array_equal(got, np.concatenate(other))
        assert not np.shares_memory(got, flat)
    users = np.arange(20, dtype=np.float32)  # not the pool's: tensors may share and write it
    assert not np.shares_memory(CpuBackend.float_cat([users[:10], users[10:]], 0), users)
