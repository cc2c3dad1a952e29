"""optim.swa_utils against torch.optim.swa_utils, step by step in float64: AveragedModel's SWA
and EMA averages, SWALR's rates, update_bn's running statistics, state dicts both ways."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from torch.optim import swa_utils as torch_swa

import burnpy as bp
import burnpy.nn as nn
import burnpy.nn.functional as F
from burnpy import Tensor, optim
from burnpy.autodiff import Autodiff
from burnpy.optim import swa_utils
from burnpy_cpu import CpuBackend

AD = Autodiff(CpuBackend)
DATA = [(np.random.default_rng(i).standard_normal((8, 4)),
         np.random.default_rng(50 + i).standard_normal((8, 3))) for i in range(6)]


def _pair() -> tuple[nn.Sequential, torch.nn.Sequential]:
    """A small model with a batch norm in both frameworks, torch's weights in burnpy's."""
    torch.manual_seed(0)
    ref = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.BatchNorm1d(6), torch.nn.Tanh(),
                              torch.nn.Linear(6, 3)).double()
    ours = nn.Sequential(nn.Linear(4, 6, backend=AD, dtype=bp.float64),
                         nn.BatchNorm1d(6, backend=AD, dtype=bp.float64), nn.Tanh(),
                         nn.Linear(6, 3, backend=AD, dtype=bp.float64))
    ours.load_state_dict({k: v.numpy() for k, v in ref.state_dict().items()})
    return ours, ref


def _train_step(ours: nn.Module, opt: optim.Optimizer, ref: torch.nn.Module,
                ref_opt: torch.optim.Optimizer, x: np.ndarray, y: np.ndarray) -> None:
    loss = F.mse_loss(ours(Tensor.from_data(x, backend=AD)), Tensor.from_data(y, backend=AD))
    opt.step(ours, loss.backward())
    ref_opt.zero_grad()
    torch.nn.functional.mse_loss(ref(torch.from_numpy(x)), torch.from_numpy(y)).backward()
    ref_opt.step()


def _assert_state_equal(ours: nn.Module, ref: torch.nn.Module) -> None:
    """Every entry of the two state dicts (parameters, buffers, counts) agrees."""
    mine, theirs = ours.state_dict(), ref.state_dict()
    assert sorted(mine) == sorted(theirs)
    for key, value in theirs.items():
        np.testing.assert_allclose(mine[key].to_numpy(), value.numpy(), rtol=1e-10, atol=1e-12,
                                   err_msg=key)
        assert str(mine[key].dtype).split(".")[-1] == str(value.dtype).split(".")[-1], key


#: (name, burnpy's averaging, torch's) with ``m`` either ``swa_utils`` module.
AVERAGES: list[tuple[str, Callable[[Any], dict[str, Any]], Callable[[Any], dict[str, Any]]]] = [
    ("swa", lambda m: {}, lambda m: {}),
    ("swa_avg_fn", lambda m: {"avg_fn": m.get_swa_avg_fn()},
     lambda m: {"avg_fn": m.get_swa_avg_fn()}),
    # torch's multi form weighs by 1 / (num_averaged + 1) of a long tensor, a float32 number
    # (1e-8 off), and refuses int buffers (addcdiv's integer division): its CPU default, the
    # per-tensor form above, is the oracle of the equal-weight average.
    ("swa_multi_avg_fn", lambda m: {"multi_avg_fn": m.get_swa_multi_avg_fn()},
     lambda m: {"avg_fn": m.get_swa_avg_fn()}),
    ("ema_multi_avg_fn", lambda m: {"multi_avg_fn": m.get_ema_multi_avg_fn(0.8)},
     lambda m: {"multi_avg_fn": m.get_ema_multi_avg_fn(0.8)}),
    ("ema_avg_fn", lambda m: {"avg_fn": m.get_ema_avg_fn(0.7)},
     lambda m: {"avg_fn": m.get_ema_avg_fn(0.7)}),
]


@pytest.mark.parametrize("use_buffers", [False, True])
@pytest.mark.parametrize(("name", "kwargs", "torch_kwargs"), AVERAGES,
                         ids=[n for n, _, _ in AVERAGES])
def test_averages_match_torch_step_by_step(name: str, kwargs: Callable[[Any], dict[str, Any]],
                                           torch_kwargs: Callable[[Any], dict[str, Any]],
                                           use_buffers: bool) -> None:
    ours, ref = _pair()
    avg = swa_utils.AveragedModel(ours, use_buffers=use_buffers, **kwargs(swa_utils))
    ref_avg = torch_swa.AveragedModel(ref, use_buffers=use_buffers, **torch_kwargs(torch_swa))
    opt = optim.SGD(ours.parameters(), lr=0.1, momentum=0.9)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    for x, y in DATA:
        _train_step(ours, opt, ref, ref_opt, x, y)
        avg.update_parameters(ours)
        ref_avg.update_parameters(ref)
        _assert_state_equal(avg, ref_avg)
    assert int(avg.n_averaged.item()) == len(DATA)
    # The average is not the model: the copy is its own, and it runs as torch's does.
    assert not np.allclose(avg.module[0].weight.to_numpy(), ours[0].weight.to_numpy())
    avg.eval()
    ref_avg.eval()
    x = DATA[0][0]
    np.testing.assert_allclose(avg(Tensor.from_data(x, backend=AD)).to_numpy(),
                               ref_avg(torch.from_numpy(x)).detach().numpy(), rtol=1e-10)


def test_a_torch_avg_fn_ports_unchanged() -> None:
    """torch's custom-average idiom (``num_averaged`` used as a number) runs as written."""
    def fn(avg: Any, cur: Any, num_averaged: Any) -> Any:
        return avg + (cur - avg) * 2.0 / (num_averaged + 2)

    ours, ref = _pair()
    avg, ref_avg = swa_utils.AveragedModel(ours, avg_fn=fn), torch_swa.AveragedModel(ref,
                                                                                      avg_fn=fn)
    opt = optim.SGD(ours.parameters(), lr=0.05, momentum=0.5)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.05, momentum=0.5)
    for x, y in DATA:
        _train_step(ours, opt, ref, ref_opt, x, y)
        avg.update_parameters(ours)
        ref_avg.update_parameters(ref)
    _assert_state_equal(avg, ref_avg)


def test_averaged_copy_keeps_its_tensors_and_stays_trainable() -> None:
    ours, _ = _pair()
    avg = swa_utils.AveragedModel(ours, multi_avg_fn=swa_utils.get_ema_multi_avg_fn(0.5))
    weight = avg.module[0].weight
    avg.update_parameters(ours)
    with bp.no_grad():
        ours[0].weight.add_(1.0)
    avg.update_parameters(ours)
    assert avg.module[0].weight is weight and weight.is_require_grad()
    np.testing.assert_allclose(weight.to_numpy(), ours[0].weight.to_numpy() - 0.5, rtol=1e-12)


def test_state_dict_round_trips_with_torch() -> None:
    ours, ref = _pair()
    avg = swa_utils.AveragedModel(ours, multi_avg_fn=swa_utils.get_ema_multi_avg_fn(0.9),
                                  use_buffers=True)
    opt = optim.SGD(ours.parameters(), lr=0.1)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    for x, y in DATA[:3]:
        _train_step(ours, opt, ref, ref_opt, x, y)
        avg.update_parameters(ours)
    # burnpy's into torch's, strictly: the same keys, shapes and dtypes.
    ref_avg = torch_swa.AveragedModel(ref, multi_avg_fn=torch_swa.get_ema_multi_avg_fn(0.9),
                                      use_buffers=True)
    ref_avg.load_state_dict({k: torch.from_numpy(v.to_numpy()) for k, v in
                             avg.state_dict().items()})
    _assert_state_equal(avg, ref_avg)
    # and back, into a fresh burnpy average that then continues as torch's does.
    again = swa_utils.AveragedModel(_pair()[0], multi_avg_fn=swa_utils.get_ema_multi_avg_fn(0.9),
                                    use_buffers=True)
    again.load_state_dict({k: v.numpy() for k, v in ref_avg.state_dict().items()})
    _train_step(ours, opt, ref, ref_opt, *DATA[3])
    again.update_parameters(ours)
    ref_avg.update_parameters(ref)
    _assert_state_equal(again, ref_avg)


def _torch_rates(build: Callable[[torch.optim.Optimizer], Any], steps: int = 20,
                 switch: int = 0) -> list[list[float]]:
    params = [torch.zeros(1, requires_grad=True), torch.zeros(1, requires_grad=True)]
    opt = torch.optim.SGD([{"params": [params[0]]}, {"params": [params[1]], "lr": 0.2}],
                          lr=0.5)
    first, swa = build(opt)
    rates = []
    for i in range(steps):
        rates.append([g["lr"] for g in opt.param_groups])
        opt.step()
        (swa if i >= switch else first).step()
    return rates


def _our_rates(build: Callable[[optim.Optimizer], Any], steps: int = 20,
               switch: int = 0) -> list[list[float]]:
    params = [Tensor.zeros(1, backend=AD), Tensor.zeros(1, backend=AD)]
    opt = optim.SGD([{"params": [params[0]]}, {"params": [params[1]], "lr": 0.2}], lr=0.5)
    first, swa = build(opt)
    rates = []
    for i in range(steps):
        rates.append([g["lr"] for g in opt.param_groups])
        (swa if i >= switch else first).step()
    assert swa.get_last_lr() == [g["lr"] for g in opt.param_groups]
    return rates


@pytest.mark.parametrize(("swa_lr", "epochs", "strategy", "switch"), [
    (0.05, 10, "cos", 0), (0.05, 5, "linear", 0), ([0.05, 0.01], 7, "cos", 0),
    (0.05, 0, "cos", 0), (1.0, 3, "linear", 0), (0.05, 5, "cos", 8), (0.02, 6, "linear", 8),
])
def test_swalr_rates_match_torch(swa_lr: Any, epochs: int, strategy: str, switch: int) -> None:
    """SWALR alone, and after a cosine schedule (torch's example: switch at ``switch``)."""
    def ours(opt: optim.Optimizer) -> tuple[Any, Any]:
        first = optim.CosineAnnealingLR(opt, T_max=12)
        return first, swa_utils.SWALR(opt, swa_lr, anneal_epochs=epochs,
                                      anneal_strategy=strategy)

    def theirs(opt: torch.optim.Optimizer) -> tuple[Any, Any]:
        first = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=12)
        return first, torch_swa.SWALR(opt, swa_lr, anneal_epochs=epochs,
                                      anneal_strategy=strategy)

    got, want = _our_rates(ours, switch=switch), _torch_rates(theirs, switch=switch)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("tuple_batches", [True, False])
def test_update_bn_matches_torch(tuple_batches: bool) -> None:
    ours, ref = _pair()
    for model in (ours, ref):
        model[1].momentum = 0.3
        model.eval()
    opt, ref_opt = optim.SGD(ours.parameters(), lr=0.1), torch.optim.SGD(ref.parameters(), lr=0.1)
    ours.train()
    ref.train()
    for x, y in DATA[:2]:  # running statistics that update_bn must forget
        _train_step(ours, opt, ref, ref_opt, x, y)
    ours.eval()
    ref.eval()
    batches = [(x * (1 + i), y) for i, (x, y) in enumerate(DATA)]
    loader = [(Tensor.from_data(x, backend=AD), Tensor.from_data(y, backend=AD))
              if tuple_batches else Tensor.from_data(x, backend=AD) for x, y in batches]
    ref_loader = [(torch.from_numpy(x), torch.from_numpy(y)) if tuple_batches
                  else torch.from_numpy(x) for x, y in batches]
    swa_utils.update_bn(loader, ours)
    torch_swa.update_bn(ref_loader, ref)
    _assert_state_equal(ours, ref)
    assert int(ours[1].num_batches_tracked.item()) == len(DATA)
    assert ours[1].momentum == 0.3 and not ours.training and not ours[1].training


def test_update_bn_through_an_averaged_model() -> None:
    """torch's recipe: ``update_bn(loader, swa_model)`` after averaging."""
    ours, ref = _pair()
    avg, ref_avg = swa_utils.AveragedModel(ours), torch_swa.AveragedModel(ref)
    opt, ref_opt = optim.SGD(ours.parameters(), lr=0.1), torch.optim.SGD(ref.parameters(), lr=0.1)
    for x, y in DATA[:4]:
        _train_step(ours, opt, ref, ref_opt, x, y)
        avg.update_parameters(ours)
        ref_avg.update_parameters(ref)
    swa_utils.update_bn([Tensor.from_data(x, backend=AD) for x, _ in DATA], avg)
    torch_swa.update_bn([torch.from_numpy(x) for x, _ in DATA], ref_avg)
    _assert_state_equal(avg, ref_avg)


def test_misuse_errors() -> None:
    ours, _ = _pair()
    with pytest.raises(bp.InvalidArgumentError, match="avg_fn or multi_avg_fn, not both"):
        swa_utils.AveragedModel(ours, avg_fn=swa_utils.get_swa_avg_fn(),
                                multi_avg_fn=swa_utils.get_swa_multi_avg_fn())
    with pytest.raises(bp.InvalidArgumentError, match=r"get_ema_multi_avg_fn: decay .* 1.5"):
        swa_utils.get_ema_multi_avg_fn(1.5)
    avg = swa_utils.AveragedModel(ours)
    other = nn.Sequential(nn.Linear(4, 5, backend=AD, dtype=bp.float64),
                          nn.BatchNorm1d(5, backend=AD, dtype=bp.float64), nn.Tanh(),
                          nn.Linear(5, 3, backend=AD, dtype=bp.float64))
    with pytest.raises(bp.InvalidArgumentError,
                       match=r"parameter 0 has shape \(5, 4\) in the model but \(6, 4\)"):
        avg.update_parameters(other)
    with pytest.raises(bp.InvalidArgumentError, match="2 parameters, the averaged copy 6"):
        avg.update_parameters(nn.Linear(4, 3, backend=AD, dtype=bp.float64))
    opt = optim.SGD(ours.parameters(), lr=0.1)
    with pytest.raises(bp.InvalidArgumentError, match="anneal_strategy"):
        swa_utils.SWALR(opt, 0.05, anneal_strategy="step")
    with pytest.raises(bp.InvalidArgumentError, match="anneal_epochs"):
        swa_utils.SWALR(opt, 0.05, anneal_epochs=-1)
    with pytest.raises(bp.InvalidArgumentError, match="takes an optimizer"):
        swa_utils.SWALR(0.1, 0.05)
