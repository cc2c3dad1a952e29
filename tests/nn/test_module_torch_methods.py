"""torch's Module and Tensor habits that port unchanged: ``requires_grad_`` and the
``requires_grad`` setter to freeze, ``apply`` for custom initialisation (children first),
``float``/``double``/``half``/``bfloat16`` casts in place, ``zero_grad``, ``Tensor.dim()``."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import burnpy as bp
import burnpy.nn as nn
from burnpy import Tensor
from burnpy.autodiff import Autodiff
from burnpy_cpu import CpuBackend

AD = Autodiff(CpuBackend)


def _pair() -> tuple[nn.Sequential, torch.nn.Sequential]:
    ours = nn.Sequential(nn.Linear(3, 4, backend=AD), nn.ReLU(), nn.Linear(4, 2, backend=AD))
    theirs = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    return ours, theirs


def test_requires_grad_freezes_and_unfreezes_like_torch() -> None:
    ours, theirs = _pair()
    assert ours.requires_grad_(False) is ours
    theirs.requires_grad_(False)
    assert [p.requires_grad for p in ours.parameters()] == \
        [p.requires_grad for p in theirs.parameters()] == [False] * 4
    ours[2].requires_grad_()
    theirs[2].requires_grad_()
    assert [p.requires_grad for p in ours.parameters()] == \
        [p.requires_grad for p in theirs.parameters()] == [False, False, True, True]
    x = Tensor.from_data(np.ones((2, 3), np.float32), backend=AD)
    grads = ours(x).sum().backward()
    assert ours[0].weight.grad(grads) is None and ours[2].weight.grad(grads) is not None


def test_the_requires_grad_setter_freezes_a_parameter() -> None:
    ours, _ = _pair()
    ours[0].weight.requires_grad = False
    assert not ours[0].weight.requires_grad and ours[0].bias.requires_grad
    ours[0].weight.requires_grad = True
    assert ours[0].weight.requires_grad


def test_apply_visits_children_first_as_torch() -> None:
    ours, theirs = _pair()
    seen: list[str] = []
    theirs_seen: list[str] = []
    assert ours.apply(lambda m: seen.append(type(m).__name__)) is ours
    theirs.apply(lambda m: theirs_seen.append(type(m).__name__))
    assert seen == theirs_seen == ["Linear", "ReLU", "Linear", "Sequential"]

    def init(m: object) -> None:
        if isinstance(m, nn.Linear):
            nn.init.constant_(m.weight, 0.5)

    ours.apply(init)
    np.testing.assert_array_equal(ours[2].weight.to_numpy(), np.full((2, 4), 0.5))


@pytest.mark.parametrize(("method", "dtype"), [("double", "float64"), ("half", "float16"),
                                                ("bfloat16", "bfloat16"), ("float", "float32")])
def test_casts_keep_each_parameter_object(method: str, dtype: str) -> None:
    ours, theirs = _pair()
    before = ours.parameters()
    assert getattr(ours, method)() is ours
    getattr(theirs, method)()
    assert all(a is b for a, b in zip(before, ours.parameters(), strict=True))
    assert {str(p.dtype) for p in ours.parameters()} == {f"bp.{dtype}"}
    assert {str(p.dtype) for p in theirs.parameters()} == {f"torch.{dtype}"}
    assert all(p.requires_grad for p in ours.parameters())


def test_zero_grad_is_accepted_and_dim_is_ndim() -> None:
    ours, _ = _pair()
    assert ours.zero_grad() is None
    assert Tensor.zeros((2, 3, 4)).dim() == torch.zeros(2, 3, 4).dim() == 3
    assert bp.tensor(1.0).dim() == 0
