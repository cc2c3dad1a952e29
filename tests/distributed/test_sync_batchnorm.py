"""SyncBatchNorm on 2 ranks with unequal batches against one torch BatchNorm over the
concatenated batch: outputs, input gradients, summed parameter gradients, running stats."""

from __future__ import annotations

import numpy as np
import torch
from mpi_ranks import run_ranks


def test_sync_batchnorm_matches_batchnorm_over_the_whole_batch() -> None:
    run = run_ranks("sync_batchnorm.py")
    assert run.returncode == 0, run.stderr
    r0, r1 = run.results
    rng = np.random.default_rng(5)
    batches = [rng.standard_normal((5, 3, 4, 2)) for _ in range(3)]
    seeds = [rng.standard_normal((5, 3, 4, 2)) for _ in range(2)]
    ref = torch.nn.BatchNorm2d(3, momentum=0.2).double()
    with torch.no_grad():
        ref.weight.copy_(torch.tensor([0.5, 1.5, -1.0], dtype=torch.float64))
        ref.bias.copy_(torch.tensor([0.1, 0.0, 2.0], dtype=torch.float64))
    for step, (x, seed) in enumerate(zip(batches, seeds, strict=False)):
        ref.zero_grad()
        tx = torch.tensor(x, requires_grad=True)
        out = ref(tx)
        (out * torch.from_numpy(seed)).sum().backward()
        s0, s1 = r0["steps"][step], r1["steps"][step]
        for key, want in (("out", out.detach()), ("grad_x", tx.grad)):
            got = np.concatenate([s0[key], s1[key]])
            np.testing.assert_allclose(got, want.numpy(), rtol=1e-10, atol=1e-12, err_msg=key)
        for key, param in (("grad_weight", ref.weight), ("grad_bias", ref.bias)):
            assert param.grad is not None
            np.testing.assert_allclose(s0[key] + s1[key], param.grad.numpy(), rtol=1e-10,
                                       err_msg=key)
    ref.eval()
    want_eval = ref(torch.tensor(batches[2])).detach().numpy()
    np.testing.assert_allclose(np.concatenate([r0["eval"], r1["eval"]]), want_eval,
                               rtol=1e-10, atol=1e-12)
    for got in (r0, r1):
        np.testing.assert_allclose(got["running_mean"], ref.running_mean.numpy(), rtol=1e-12)
        np.testing.assert_allclose(got["running_var"], ref.running_var.numpy(), rtol=1e-12)
