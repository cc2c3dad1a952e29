"""DistributedDataParallel on 2 ranks equals one process on the whole batch."""

from __future__ import annotations

import numpy as np
from mpi_ranks import run_ranks


def test_ddp_equals_one_process_and_overlaps_backward() -> None:
    run = run_ranks("ddp.py", "train", timeout=120)
    assert run.returncode == 0, run.stderr
    r0, r1 = run.results
    for model in ("mlp", "cnn"):
        reference = r0[model]["reference"]
        for got in (r0[model], r1[model]):
            assert got["ddp"].keys() == reference.keys()
            for name, value in reference.items():
                np.testing.assert_allclose(got["ddp"][name], value, rtol=0, atol=1e-10,
                                           err_msg=f"{model} {name}")
        # Overlap: the first bucket's all-reduce starts while later gradients are not final.
        events = r0[model]["events"]
        last_step = max(i for i, (e, _) in enumerate(events) if e == "finish")
        step = events[:last_step + 1]
        step = step[max(i for i, (e, _) in enumerate(step[:-1]) if e == "finish") + 1:]
        kinds = [e for e, _ in step]
        assert kinds[-1] == "finish" and kinds.count("start") == len(r0[model]["buckets"])
        last_ready = max(i for i, e in enumerate(kinds) if e == "ready")
        assert kinds.index("start") < last_ready, kinds


def test_mismatched_models_raise_on_every_rank() -> None:
    run = run_ranks("ddp.py", "mismatch")
    assert run.returncode == 0, run.stderr
    for message in run.results:
        assert "ranks hold different models" in message
        assert "'fc1.weight' is float32 [9, 5] on rank 1 but float32 [8, 5] on rank 0" in message


def test_unused_parameters_raise_on_every_rank_by_default() -> None:
    run = run_ranks("unused.py", "b-everywhere", "False")
    assert run.returncode == 0, run.stderr
    for message in run.results:
        assert "took no part in the loss" in message
        assert "'extra.weight' (no gradient on 2 of 2 ranks)" in message
        assert "find_unused_parameters=True" in message and "'b." not in message
    run = run_ranks("unused.py", "b-on-rank0", "False")
    assert run.returncode == 0, run.stderr
    for message in run.results:  # rank 1 alone skipped b: both ranks raise, none hangs
        assert "'b.weight' (no gradient on 1 of 2 ranks)" in message


def test_find_unused_parameters_averages_zeros_and_skips_the_unused() -> None:
    run = run_ranks("unused.py", "b-on-rank0", "True")
    assert run.returncode == 0, run.stderr
    r0, r1 = run.results
    for got in (r0, r1):
        # As torch's DDP: a rank without a gradient adds zeros to the average; a parameter no
        # rank used gets no gradient, so the optimizer leaves it as it was.
        assert set(got["averaged"]) == {"fc.weight", "fc.bias", "a.weight", "a.bias",
                                        "b.weight", "b.bias"}
        assert not got["extra_moved"]
        for name, value in got["averaged"].items():
            expected = (r0["local"][name] + r1["local"].get(name, 0.0)) / 2
            np.testing.assert_allclose(value, expected, rtol=0, atol=1e-12, err_msg=name)
    assert "b.weight" not in r1["local"]
