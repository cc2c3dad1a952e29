"""torch.nn.utils's gradient clipping (on the ``Gradients`` that ``backward()`` returns) and
parameters as one vector, against torch in float64."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import burnpy.nn as nn
from burnpy import BurnpyError, Tensor
from burnpy.autodiff import Autodiff
from burnpy.nn.utils import (
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
    parameters_to_vector,
    vector_to_parameters,
)
from burnpy_cpu import CpuBackend

AD = Autodiff(CpuBackend)
RNG = np.random.default_rng(3)


def _pair() -> tuple[nn.Module, torch.nn.Module, object]:
    """The same two-layer model in burnpy and torch, after one backward of the same loss."""
    theirs = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(), torch.nn.Linear(3, 2))
    theirs.double()
    ours = nn.Sequential(nn.Linear(4, 3, backend=AD, dtype="float64"), nn.Tanh(),
                         nn.Linear(3, 2, backend=AD, dtype="float64"))
    ours.load_state_dict({k: v.detach().numpy().copy() for k, v in theirs.state_dict().items()})
    x = np.random.default_rng(3).standard_normal((5, 4)) * 3  # the same data in any test order
    grads = ours(Tensor.from_data(x, backend=AD)).square().sum().backward()
    theirs(torch.tensor(x)).square().sum().backward()
    return ours, theirs, grads


def _same_grads(ours: nn.Module, theirs: torch.nn.Module, grads: object) -> None:
    for p, tp in zip(ours.parameters(), theirs.parameters(), strict=True):
        assert tp.grad is not None
        # float64 through matmul and tanh: a few ulps apart (NumPy's and torch's sums differ)
        np.testing.assert_allclose(p.grad(grads).to_numpy(), tp.grad.numpy(), rtol=1e-10,
                                   atol=1e-15)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, math.inf])
@pytest.mark.parametrize("max_norm", [0.5, 1e6])
def test_clip_grad_norm_matches_torch(norm_type: float, max_norm: float) -> None:
    ours, theirs, grads = _pair()
    norm = clip_grad_norm_(ours.parameters(), max_norm, norm_type, grads=grads)
    ref = torch.nn.utils.clip_grad_norm_(theirs.parameters(), max_norm, norm_type)
    np.testing.assert_allclose(norm.item(), ref.item(), rtol=1e-12)
    _same_grads(ours, theirs, grads)


def test_clip_grad_value_and_the_split_clipping_match_torch() -> None:
    ours, theirs, grads = _pair()
    clip_grad_value_(ours.parameters(), 0.3, grads=grads)
    torch.nn.utils.clip_grad_value_(theirs.parameters(), 0.3)
    _same_grads(ours, theirs, grads)
    ours, theirs, grads = _pair()
    params = ours.parameters()
    norm = get_total_norm([p.grad(grads) for p in params], 1.0)
    ref = torch.nn.utils.get_total_norm([p.grad for p in theirs.parameters()], 1.0)
    np.testing.assert_allclose(norm.item(), ref.item(), rtol=1e-12)
    clip_grads_with_norm_(params[1], 0.2, norm, grads=grads)  # one tensor, as torch takes
    torch.nn.utils.clip_grads_with_norm_(list(theirs.parameters())[1], 0.2, ref)
    _same_grads(ours, theirs, grads)


def test_clipping_needs_the_gradients_and_finite_norms() -> None:
    ours, _, grads = _pair()
    with pytest.raises(BurnpyError, match=r"grads=grads"):
        clip_grad_norm_(ours.parameters(), 1.0)
    with pytest.raises(BurnpyError, match="does not track gradients"):
        clip_grad_value_([Tensor.ones((2,))], 1.0, grads=grads)
    bad = Tensor.from_data(np.array([1.0, math.inf]))
    with pytest.raises(BurnpyError, match="non-finite"):
        get_total_norm(bad, error_if_nonfinite=True)
    assert math.isinf(get_total_norm(bad).item())


def test_parameters_to_vector_and_back_match_torch() -> None:
    ours, theirs, _ = _pair()
    vec = parameters_to_vector(ours.parameters())
    ref = torch.nn.utils.parameters_to_vector(theirs.parameters())
    np.testing.assert_allclose(vec.to_numpy(), ref.detach().numpy(), rtol=0)
    grads = (vec * Tensor.from_data(np.arange(vec.shape[0]) * 1.0, backend=AD)).sum().backward()
    first = ours.parameters()[0]
    np.testing.assert_allclose(first.grad(grads).to_numpy().ravel(), np.arange(first.numel()))
    new = RNG.standard_normal(vec.shape[0])
    vector_to_parameters(Tensor.from_data(new, backend=AD), ours.parameters())
    torch.nn.utils.vector_to_parameters(torch.tensor(new), theirs.parameters())
    assert ours.parameters()[0] is first  # written in place, as torch's
    for p, tp in zip(ours.parameters(), theirs.parameters(), strict=True):
        np.testing.assert_allclose(p.to_numpy(), tp.detach().numpy(), rtol=0)
    with pytest.raises(BurnpyError, match=f"{vec.shape[0]} elements"):
        vector_to_parameters(Tensor.from_data(new[:-1], backend=AD), ours.parameters())
