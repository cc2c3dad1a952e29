"""Optimizers against torch.optim: 20 steps from identical weights and data, float64."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import burnpy as bp
import burnpy.nn as nn
import burnpy.nn.functional as F
from burnpy import Tensor, optim
from burnpy.autodiff import Autodiff
from burnpy_cpu import CpuBackend

AD = Autodiff(CpuBackend)
DATA = [(np.random.default_rng(i).standard_normal((8, 4)),
         np.random.default_rng(100 + i).standard_normal((8, 3))) for i in range(20)]


class MLP(nn.Module):
    def __init__(self) -> None:
        self.fc1 = nn.Linear(4, 6, backend=AD, dtype=bp.float64)
        self.fc2 = nn.Linear(6, 3, backend=AD, dtype=bp.float64)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc2(self.fc1(x).tanh())


def _pair() -> tuple[MLP, torch.nn.Module]:
    torch.manual_seed(0)
    ref = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Tanh(),
                              torch.nn.Linear(6, 3)).double()
    ours = MLP()
    state = ref.state_dict()
    ours.load_state_dict({k.replace("0.", "fc1.").replace("2.", "fc2."): v.numpy()
                          for k, v in state.items()})
    return ours, ref


def _step_ours(model: MLP, opt: optim.Optimizer, x: np.ndarray, y: np.ndarray,
               lr: float | None = None) -> None:
    loss = F.mse_loss(model(Tensor.from_data(x, backend=AD)), Tensor.from_data(y, backend=AD))
    opt.step(model, loss.backward(), lr)


def _step_torch(model: torch.nn.Module, opt: torch.optim.Optimizer, x: np.ndarray,
                y: np.ndarray) -> None:
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(torch.from_numpy(x)), torch.from_numpy(y)).backward()
    opt.step()


def _assert_same(ours: MLP, ref: torch.nn.Module, rtol: float = 1e-6) -> None:
    pairs = [(ours.fc1.weight, ref[0].weight), (ours.fc1.bias, ref[0].bias),
             (ours.fc2.weight, ref[2].weight), (ours.fc2.bias, ref[2].bias)]
    for a, b in pairs:
        np.testing.assert_allclose(a.to_numpy(), b.detach().numpy(), rtol=rtol, atol=1e-12)


CASES: list[tuple[Callable[[], optim.Optimizer], Callable[[Any], torch.optim.Optimizer]]] = [
    (lambda: optim.SGD(lr=0.1),
     lambda p: torch.optim.SGD(p, lr=0.1)),
    (lambda: optim.SGD(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01),
     lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01)),
    (lambda: optim.SGD(lr=0.05, momentum=0.8, dampening=0.3),
     lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.8, dampening=0.3)),
    (lambda: optim.Adam(lr=0.01),
     lambda p: torch.optim.Adam(p, lr=0.01)),
    (lambda: optim.Adam(lr=0.02, betas=(0.8, 0.99), weight_decay=0.1, amsgrad=True),
     lambda p: torch.optim.Adam(p, lr=0.02, betas=(0.8, 0.99), weight_decay=0.1, amsgrad=True)),
    (lambda: optim.AdamW(lr=0.01, weight_decay=0.1),
     lambda p: torch.optim.AdamW(p, lr=0.01, weight_decay=0.1)),
    (lambda: optim.RMSprop(lr=0.01),
     lambda p: torch.optim.RMSprop(p, lr=0.01)),
    (lambda: optim.RMSprop(lr=0.005, alpha=0.9, weight_decay=0.05, momentum=0.5, centered=True),
     lambda p: torch.optim.RMSprop(p, lr=0.005, alpha=0.9, weight_decay=0.05, momentum=0.5,
                                   centered=True)),
]


@pytest.mark.parametrize(("make", "make_torch"), CASES)
def test_twenty_steps_match_torch(make: Callable[[], optim.Optimizer],
                                  make_torch: Callable[[Any], torch.optim.Optimizer]) -> None:
    ours, ref = _pair()
    opt, ref_opt = make(), make_torch(ref.parameters())
    for x, y in DATA:
        _step_ours(ours, opt, x, y)
        _step_torch(ref, ref_opt, x, y)
    _assert_same(ours, ref)


@pytest.mark.parametrize("set_to_none", [True, False])
def test_zero_grad_ports_a_torch_loop_unchanged(set_to_none: bool) -> None:
    """``opt.zero_grad()`` before each backward, as torch's loops do: accepted (burnpy never
    accumulates gradients on parameters), and the steps still match torch's."""
    ours, ref = _pair()
    opt = optim.SGD(ours.parameters(), lr=0.1, momentum=0.9)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    for x, y in DATA[:5]:
        opt.zero_grad(set_to_none=set_to_none)
        _step_ours(ours, opt, x, y)
        ref_opt.zero_grad(set_to_none=set_to_none)
        torch.nn.functional.mse_loss(ref(torch.from_numpy(x)), torch.from_numpy(y)).backward()
        ref_opt.step()
    _assert_same(ours, ref, rtol=1e-12)


def test_step_keeps_the_module_and_builds_no_graph() -> None:
    """The step writes each parameter in place (torch's: the same objects), as a new leaf."""
    ours, _ = _pair()
    fc1, weight = ours.fc1, ours.fc1.weight
    values = weight.to_numpy()
    _step_ours(ours, optim.SGD(lr=0.1), *DATA[0])
    assert ours.fc1 is fc1 and ours.fc1.weight is weight
    assert not np.array_equal(weight.to_numpy(), values)
    assert weight.is_require_grad() and weight.backend is AD
    assert weight.primitive.node is not None and weight.primitive.node.op is None  # a leaf
    state = optim.Adam().state
    assert state == {}


def test_scheduled_lr_matches_torch_scheduler() -> None:
    ours, ref = _pair()
    opt, ref_opt = optim.SGD(lr=0.1, momentum=0.9), torch.optim.SGD(ref.parameters(), lr=0.1,
                                                                    momentum=0.9)
    sched = optim.warmup_cosine(0.1, 5, 20)
    ref_sched = torch.optim.lr_scheduler.SequentialLR(ref_opt, [
        torch.optim.lr_scheduler.LinearLR(ref_opt, 0.01, 1.0, 5),
        torch.optim.lr_scheduler.CosineAnnealingLR(ref_opt, 15)], [5])
    for x, y in DATA:
        _step_ours(ours, opt, x, y, lr=sched.step())
        _step_torch(ref, ref_opt, x, y)
        ref_sched.step()
    _assert_same(ours, ref)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf")])
def test_clip_grad_norm_matches_torch(norm_type: float) -> None:
    ours, ref = _pair()
    x, y = DATA[3]
    grads = F.mse_loss(ours(Tensor.from_data(x, backend=AD)),
                       Tensor.from_data(y, backend=AD)).backward()
    torch.nn.functional.mse_loss(ref(torch.from_numpy(x)), torch.from_numpy(y)).backward()
    norm = optim.clip_grad_norm(ours, grads, 0.05, norm_type)
    ref_norm = torch.nn.utils.clip_grad_norm_(ref.parameters(), 0.05, norm_type)
    assert float(norm) == pytest.approx(float(ref_norm), rel=1e-12)
    ours_grads = [p.grad(grads).to_numpy() for p in ours.parameters()]
    for g, p in zip(ours_grads, ref.parameters(), strict=True):
        np.testing.assert_allclose(g, p.grad.numpy(), rtol=1e-12, atol=1e-15)


def test_clip_grad_value_and_clipping_optimizer_match_torch() -> None:
    ours, ref = _pair()
    x, y = DATA[4]
    grads = F.mse_loss(ours(Tensor.from_data(x, backend=AD)),
                       Tensor.from_data(y, backend=AD)).backward()
    torch.nn.functional.mse_loss(ref(torch.from_numpy(x)), torch.from_numpy(y)).backward()
    optim.clip_grad_value(ours, grads, 0.01)
    torch.nn.utils.clip_grad_value_(ref.parameters(), 0.01)
    for p, q in zip(ours.parameters(), ref.parameters(), strict=True):
        np.testing.assert_allclose(p.grad(grads).to_numpy(), q.grad.numpy(), rtol=1e-12,
                                   atol=1e-15)

    ours, ref = _pair()
    opt = optim.Adam(lr=0.01, grad_clipping=optim.GradientClipping.norm(0.1))
    ref_opt = torch.optim.Adam(ref.parameters(), lr=0.01)
    for x, y in DATA[:10]:
        _step_ours(ours, opt, x, y)
        ref_opt.zero_grad()
        torch.nn.functional.mse_loss(ref(torch.from_numpy(x)), torch.from_numpy(y)).backward()
        torch.nn.utils.clip_grad_norm_(ref.parameters(), 0.1)
        ref_opt.step()
    _assert_same(ours, ref)


def test_state_dict_round_trip_continues_identically() -> None:
    straight, _ = _pair()
    split, _ = _pair()
    opt = optim.Adam(lr=0.01, amsgrad=True)
    for x, y in DATA:
        _step_ours(straight, opt, x, y)
    first = optim.Adam(lr=0.01, amsgrad=True)
    for x, y in DATA[:10]:
        _step_ours(split, first, x, y)
    second = optim.Adam(lr=0.01, amsgrad=True).load_state_dict(first.state_dict())
    assert second.state_dict()["steps"] == first.state_dict()["steps"]
    assert set(second.state_dict()["state"]["0"]) == {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"}
    for x, y in DATA[10:]:
        _step_ours(split, second, x, y)
    for a, b in zip(straight.parameters(), split.parameters(), strict=True):
        np.testing.assert_array_equal(a.to_numpy(), b.to_numpy())
    with pytest.raises(optim.OptimizerStateError, match="for Adam, not SGD"):
        optim.SGD().load_state_dict(first.state_dict())


def test_misuse_errors() -> None:
    with pytest.raises(bp.InvalidArgumentError, match="Nesterov"):
        optim.SGD(nesterov=True)
    with pytest.raises(bp.InvalidArgumentError, match="betas"):
        optim.Adam(betas=(1.0, 0.9))
    with pytest.raises(bp.InvalidArgumentError, match="max_norm"):
        optim.GradientClipping.norm(0.0)
    plain = nn.Linear(2, 2)
    with pytest.raises(bp.BurnpyError, match="does not track gradients"):
        optim.SGD().step(plain, None)
