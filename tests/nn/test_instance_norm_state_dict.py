"""``InstanceNorm1d/2d/3d(track_running_stats=True)`` against torch (issue 27.5): the same
state-dict keys (``num_batches_tracked`` included, which torch's InstanceNorm keeps but never
counts), strict loading both ways, and equal outputs and running statistics through training
steps and in eval; ``momentum=None`` freezes the statistics as torch's does."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from burnpy import Autodiff, Tensor, nn
from burnpy_cpu import CpuBackend

AD = Autodiff(CpuBackend)
SHAPES = {1: (2, 3, 5), 2: (2, 3, 4, 3), 3: (2, 3, 3, 2, 4)}


def _pair(rank: int, affine: bool, momentum: float | None) -> tuple[nn.Module, torch.nn.Module]:
    ours = getattr(nn, f"InstanceNorm{rank}d")(3, momentum=momentum, affine=affine,
                                               track_running_stats=True, backend=AD,
                                               dtype="float64")
    theirs = getattr(torch.nn, f"InstanceNorm{rank}d")(3, momentum=momentum, affine=affine,
                                                        track_running_stats=True).double()
    return ours, theirs


def _numpy(state: dict[str, object]) -> dict[str, np.ndarray]:
    return {k: np.asarray(v.to_numpy() if isinstance(v, Tensor) else v)  # type: ignore[attr-defined]
            for k, v in state.items()}


@pytest.mark.parametrize("rank", [1, 2, 3])
@pytest.mark.parametrize("affine", [True, False])
def test_state_dicts_round_trip_strictly_both_ways(rank: int, affine: bool) -> None:
    ours, theirs = _pair(rank, affine, 0.1)
    rng = np.random.default_rng(rank)
    with torch.no_grad():
        theirs.running_mean.copy_(torch.from_numpy(rng.standard_normal(3)))
        theirs.running_var.copy_(torch.from_numpy(rng.uniform(0.5, 2.0, 3)))
        theirs.num_batches_tracked.fill_(7)
        if affine:
            theirs.weight.copy_(torch.from_numpy(rng.standard_normal(3)))
            theirs.bias.copy_(torch.from_numpy(rng.standard_normal(3)))
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
    ours.load_state_dict(theirs.state_dict())  # strict by default
    got = _numpy(ours.state_dict())
    for key, value in theirs.state_dict().items():
        np.testing.assert_array_equal(got[key], value.numpy(), err_msg=key)
    assert got["num_batches_tracked"].dtype == np.int64

    back = getattr(torch.nn, f"InstanceNorm{rank}d")(3, affine=affine,
                                                      track_running_stats=True).double()
    back.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in got.items()}, strict=True)
    for key, value in theirs.state_dict().items():
        assert torch.equal(back.state_dict()[key], value), key


@pytest.mark.parametrize("rank", [1, 2, 3])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("momentum", [0.3, None])
def test_training_steps_and_eval_match_torch(rank: int, affine: bool,
                                             momentum: float | None) -> None:
    ours, theirs = _pair(rank, affine, momentum)
    ours.load_state_dict(theirs.state_dict())
    rng = np.random.default_rng(10 * rank + affine)
    for _ in range(3):
        x = rng.standard_normal(SHAPES[rank]) * 2.0 + 1.0
        y = ours(Tensor.from_data(x, backend=AD))
        ty = theirs(torch.from_numpy(x))
        np.testing.assert_allclose(y.to_numpy(), ty.detach().numpy(), rtol=1e-12, atol=1e-12)
    mine, torchs = _numpy(ours.state_dict()), theirs.state_dict()
    for key, value in torchs.items():
        np.testing.assert_allclose(mine[key], value.numpy(), rtol=1e-12, atol=1e-12,
                                   err_msg=key)
    assert int(mine["num_batches_tracked"]) == int(torchs["num_batches_tracked"]) == 0
    ours.eval()
    theirs.eval()
    x = rng.standard_normal(SHAPES[rank])
    np.testing.assert_allclose(ours(Tensor.from_data(x, backend=AD)).to_numpy(),
                               theirs(torch.from_numpy(x)).detach().numpy(), rtol=1e-12,
                               atol=1e-12)
    unbatched = x[0]
    np.testing.assert_allclose(ours(Tensor.from_data(unbatched, backend=AD)).to_numpy(),
                               theirs(torch.from_numpy(unbatched)).detach().numpy(),
                               rtol=1e-12, atol=1e-12)
