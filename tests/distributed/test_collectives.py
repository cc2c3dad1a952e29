"""Every collective and reduce op against NumPy, for every dtype, on 2 ranks."""

from __future__ import annotations

import numpy as np
from mpi_ranks import run_ranks

from burnpy.distributed.host import ReceiveBuffers


def test_collectives_match_numpy() -> None:
    run = run_ranks("collectives.py")
    assert run.returncode == 0, run.stderr
    r0, r1 = run.results
    for dtype, got0 in r0.items():
        if not dtype.startswith(("float", "int", "uint", "bfloat", "bool")):
            continue
        got1 = r1[dtype]
        a, b = got0["input"], got1["input"]
        numpy_ops = {"sum": a + b, "mean": (a + b) / 2, "max": np.maximum(a, b),
                     "min": np.minimum(a, b)}
        if dtype == "bool":
            numpy_ops = {"sum": np.logical_or(a, b), "max": np.logical_or(a, b),
                         "min": np.logical_and(a, b)}
        for op, expected in numpy_ops.items():
            if op not in got0["all_reduce"]:
                assert dtype.startswith(("int", "uint")) and op == "mean"
                continue
            for got in (got0, got1):
                np.testing.assert_array_equal(got["all_reduce"][op], expected, err_msg=dtype + op)
        for got in (got0, got1):
            np.testing.assert_array_equal(got["broadcast"], b)
            np.testing.assert_array_equal(got["all_gather"][0], a)
            np.testing.assert_array_equal(got["all_gather"][1], b)
            assert got["dtypes"], dtype
        if dtype != "bool":
            np.testing.assert_array_equal(got0["reduce_scatter"], (a + b)[:2])
            np.testing.assert_array_equal(got1["reduce_scatter"], (a + b)[2:])
    for rank, got in enumerate((r0, r1)):
        w = np.arange(3.0) + rank
        np.testing.assert_array_equal(got["grad_sum"], 2 * w * 2)
        # max over ranks is rank 1's w everywhere: rank 1 gets both ranks' gradients.
        np.testing.assert_array_equal(got["grad_max"], np.full(3, 2.0 * rank))
    for got in (r0, r1):
        np.testing.assert_array_equal(got["kept"][0], np.full(5, 3.0))
        np.testing.assert_array_equal(got["kept"][1], np.full(5, 20.0))


def test_receive_buffers_are_recycled_only_when_free() -> None:
    buffers = ReceiveBuffers(capacity=2)
    f32 = np.dtype(np.float32)
    held = buffers.take((4,), f32)
    view = held[1:]
    del held
    again = buffers.take((4,), f32)  # a view still refers to the first buffer
    assert not np.shares_memory(again, view)
    first_id = id(again)
    del again
    assert id(buffers.take((4,), f32)) == first_id  # free: handed out again
    buffers.take((2,), f32)
    buffers.take((3,), f32)  # capacity 2: the (4,) buffer is dropped
    assert len(buffers.buffers) == 2 and ((4,), f32.str) not in buffers.buffers
    kept = buffers.take((3,), f32)
    buffers.forget(kept)
    assert ((3,), f32.str) not in buffers.buffers
