"""Parameter groups as torch's: per-group options, schedulers driving every group, records."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import burnpy as bp
import burnpy.nn as nn
import burnpy.nn.functional as F
from burnpy import Tensor, optim, record
from burnpy.autodiff import Autodiff
from burnpy.backend.errors import RecordError
from burnpy_cpu import CpuBackend

AD = Autodiff(CpuBackend)
DATA = [(np.random.default_rng(i).standard_normal((8, 4)),
         np.random.default_rng(100 + i).standard_normal((8, 2))) for i in range(8)]


class Net(nn.Module):
    def __init__(self) -> None:
        self.fc1 = nn.Linear(4, 5, backend=AD, dtype=bp.float64)
        self.norm = nn.LayerNorm(5, backend=AD, dtype=bp.float64)
        self.fc2 = nn.Linear(5, 2, backend=AD, dtype=bp.float64)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc2(self.norm(self.fc1(x)).tanh())


def _pair() -> tuple[Net, torch.nn.Sequential]:
    torch.manual_seed(0)
    ref = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.LayerNorm(5), torch.nn.Tanh(),
                              torch.nn.Linear(5, 2)).double()
    with torch.no_grad():
        ref[1].weight.uniform_(0.5, 1.5)
        ref[1].bias.uniform_(-0.5, 0.5)
    ours = Net()
    names = {"0.": "fc1.", "1.": "norm.", "3.": "fc2."}
    ours.load_state_dict(nn.rename_keys({k: v.numpy() for k, v in ref.state_dict().items()},
                                        names))
    return ours, ref


def _groups(model: Net) -> list[dict[str, object]]:
    """Weight decay on matrices (given as tensors), none on biases and norms (given by name)."""
    decay = [p for _, p in model.named_parameters() if p.ndim >= 2]
    no_decay = [n for n, p in model.named_parameters() if p.ndim < 2]
    return [{"params": decay, "weight_decay": 0.1, "lr": 0.03},
            {"params": no_decay, "weight_decay": 0.0}]


def _step(model: Net, opt: optim.Optimizer, sched: optim.LrScheduler, x: np.ndarray,
          y: np.ndarray) -> None:
    loss = F.mse_loss(model(Tensor.from_data(x, backend=AD)), Tensor.from_data(y, backend=AD))
    opt.step(model, loss.backward())
    sched.step()


def _torch_run() -> torch.nn.Sequential:
    _, ref = _pair()
    decay = [p for p in ref.parameters() if p.ndim >= 2]
    no_decay = [p for p in ref.parameters() if p.ndim < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1, "lr": 0.03},
                             {"params": no_decay, "weight_decay": 0.0}], lr=0.01)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    for x, y in DATA:
        opt.zero_grad()
        torch.nn.functional.mse_loss(ref(torch.from_numpy(x)), torch.from_numpy(y)).backward()
        opt.step()
        sched.step()
    return ref


def _assert_same(ours: Net, ref: torch.nn.Sequential) -> None:
    theirs = nn.rename_keys({k: v.detach().numpy() for k, v in ref.state_dict().items()},
                            {"0.": "fc1.", "1.": "norm.", "3.": "fc2."})
    for name, t in ours.state_dict().items():
        np.testing.assert_allclose(t.to_numpy(), theirs[name], rtol=1e-12, atol=1e-14,
                                   err_msg=name)


def test_adamw_two_groups_and_step_lr_match_torch() -> None:
    ours, _ = _pair()
    opt = optim.AdamW(_groups(ours), lr=0.01)
    sched = optim.StepLR(opt, step_size=2, gamma=0.5)
    lrs = []
    for x, y in DATA:
        lrs.append([g["lr"] for g in opt.param_groups])
        _step(ours, opt, sched, x, y)
    assert lrs[:5] == [[0.03, 0.01], [0.03, 0.01], [0.015, 0.005], [0.015, 0.005],
                       [0.0075, 0.0025]]
    # The groups hold the parameters themselves (the names were resolved at the first step).
    held = [[id(p) for p in g["params"]] for g in opt.param_groups]
    assert held == [[id(ours.fc1.weight), id(ours.fc2.weight)],
                    [id(p) for p in (ours.fc1.bias, ours.norm.weight, ours.norm.bias,
                                     ours.fc2.bias)]]
    _assert_same(ours, _torch_run())


def test_save_and_load_mid_training_continues_identically(tmp_path: Path) -> None:
    ours, _ = _pair()
    opt = optim.AdamW(_groups(ours), lr=0.01)
    sched = optim.StepLR(opt, step_size=2, gamma=0.5)
    for x, y in DATA[:3]:
        _step(ours, opt, sched, x, y)
    opt.param_groups[1]["eps"] = 1e-8  # a written option travels with the record too
    record.save(opt, tmp_path / "opt.safetensors")
    record.save(sched, tmp_path / "sched.safetensors")
    # A fresh optimizer with other options takes the saved ones; its parameters are its own
    # (torch's rule: the i-th saved parameter's state goes to its i-th parameter).
    again = optim.AdamW([{"params": g["params"]} for g in _groups(ours)], lr=0.5)
    record.load(again, tmp_path / "opt.safetensors")
    assert [g["weight_decay"] for g in again.param_groups] == [0.1, 0.0]
    other = optim.AdamW([{"params": ["fc1.weight"]}, {"params": ["fc2.bias"]}], lr=0.5)
    with pytest.raises(RecordError, match=r"param_groups\[0\] of the state has 2 parameter"):
        record.load(other, tmp_path / "opt.safetensors")
    resumed = record.load(optim.StepLR(again, step_size=2, gamma=0.5),
                          tmp_path / "sched.safetensors")
    assert [g["lr"] for g in again.param_groups] == [0.015, 0.005]
    for x, y in DATA[3:]:
        _step(ours, again, resumed, x, y)
    _assert_same(ours, _torch_run())


def test_groups_written_by_hand_drive_the_update() -> None:
    """``g["lr"] = ...`` is what the next step uses; a group with lr 0 leaves its
    parameters as they were; parameters in no group are not stepped (torch's rule)."""
    model, _ = _pair()
    before = {n: t.to_numpy() for n, t in model.state_dict().items()}
    opt = optim.SGD([{"params": ["fc1.weight", "fc1.bias"]}, {"params": ["fc2.weight"]}],
                    lr=0.1)
    opt.param_groups[1]["lr"] = 0.0
    x, y = DATA[0]
    loss = F.mse_loss(model(Tensor.from_data(x, backend=AD)), Tensor.from_data(y, backend=AD))
    grads = loss.backward()
    g1 = model.fc1.weight.grad(grads)
    assert g1 is not None
    opt.step(model, grads)
    np.testing.assert_allclose(model.fc1.weight.to_numpy(),
                               before["fc1.weight"] - 0.1 * g1.to_numpy(), rtol=1e-14)
    for name in ("fc2.weight", "fc2.bias", "norm.weight"):
        np.testing.assert_array_equal(model.state_dict()[name].to_numpy(), before[name])
    assert set(opt.steps) == {model.fc1.weight, model.fc1.bias, model.fc2.weight}


def test_burn_style_rate_scales_each_group() -> None:
    """``opt.step(model, grads, lr)`` with a rate from a Burn-style scheduler scales each
    group's rate by its share of the default rate."""
    model, _ = _pair()
    opt = optim.SGD([{"params": ["fc1.weight"], "lr": 0.2}, {"params": ["fc2.weight"]}],
                    lr=0.1)
    before = {n: t.to_numpy() for n, t in model.state_dict().items()}
    x, y = DATA[0]
    loss = F.mse_loss(model(Tensor.from_data(x, backend=AD)), Tensor.from_data(y, backend=AD))
    grads = loss.backward()
    g1, g2 = model.fc1.weight.grad(grads), model.fc2.weight.grad(grads)
    assert g1 is not None and g2 is not None
    opt.step(model, grads, lr=0.05)
    np.testing.assert_allclose(model.fc1.weight.to_numpy(),
                               before["fc1.weight"] - 0.1 * g1.to_numpy(), rtol=1e-14)
    np.testing.assert_allclose(model.fc2.weight.to_numpy(),
                               before["fc2.weight"] - 0.05 * g2.to_numpy(), rtol=1e-14)


def test_group_errors_name_the_problem() -> None:
    model, _ = _pair()
    with pytest.raises(bp.InvalidArgumentError, match="more than one group"):
        optim.Adam([{"params": ["fc1.weight"]}, {"params": ["fc1.weight"]}])
    with pytest.raises(bp.InvalidArgumentError, match=r"unknown option\(s\) \['momentum'\]"):
        optim.Adam([{"params": ["fc1.weight"], "momentum": 0.9}])
    with pytest.raises(bp.InvalidArgumentError, match="betas"):
        optim.Adam([{"params": ["fc1.weight"], "betas": (1.0, 0.9)}])
    with pytest.raises(bp.InvalidArgumentError, match=r"lr=0\.1"):
        optim.SGD(0.1)  # type: ignore[arg-type]
    stranger = Tensor.zeros((3, 3), backend=AD, dtype=bp.float64).require_grad()
    opt = optim.SGD([stranger], lr=0.1)
    x, y = DATA[0]
    loss = F.mse_loss(model(Tensor.from_data(x, backend=AD)), Tensor.from_data(y, backend=AD))
    with pytest.raises(bp.InvalidArgumentError, match=r"shape \(3, 3\) .* not a parameter"):
        opt.step(model, loss.backward())
    with pytest.raises(optim.OptimizerStateError, match="2 parameter group"):
        optim.SGD(["fc1.weight"]).load_state_dict(
            optim.SGD([{"params": ["a"]}, {"params": ["b"]}]).state_dict())
