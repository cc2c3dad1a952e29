"""torch.optim's own database, run against burnpy: every ``optim_db`` entry's kwargs variants
(``optim_inputs_func``) step a small model 5 times from torch's weights, and every parameter
must equal torch's (float64); every entry's LR scheduler constructions (``scheduler_inputs``,
torch's lambdas run on burnpy's classes of the same names) drive 20 steps, and each group's
rate and every parameter must equal torch's (LBFGS's rates only: see the test).

Entries not compared exactly are listed in ``LISTED`` with the reason; ``python -m
tests.optim.test_optim_db`` prints the counts."""

from __future__ import annotations

import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

import numpy as np
import pytest
import torch
from torch.testing._internal.common_optimizers import optim_db

import burnpy as bp
import burnpy.nn as nn
import burnpy.nn.functional as F
from burnpy import Tensor, optim
from burnpy.autodiff import Autodiff
from burnpy.optim import lr_scheduler
from burnpy_cpu import CpuBackend

AD = Autodiff(CpuBackend)
RNG = np.random.default_rng(0)
DATA = [(RNG.standard_normal((32, 4)), RNG.standard_normal((32, 2))) for _ in range(20)]

#: (optimizer, variant description) -> why it is not compared to torch's digits. (Muon is:
#: torch casts the Newton-Schulz iteration to bfloat16, burnpy keeps the parameter's dtype,
#: so torch's own iteration runs with that cast lifted, see ``_torch_precision``.)
LISTED: dict[tuple[str, str], str] = {
    **{("SparseAdam", desc): "burnpy has no sparse gradients: building SparseAdam raises a "
       "clear error (checked)" for desc in ("default", "non-default lr", "Tensor lr",
                                           "maximize")},
}


def _variants() -> Iterator[tuple[Any, Any]]:
    for info in optim_db:
        for variant in info.optim_inputs_func(device="cpu"):
            yield info, variant


VARIANTS = list(_variants())
SCHEDULES = [(info, i) for info in optim_db for i in range(len(info.scheduler_inputs))]


class Net(nn.Module):
    def __init__(self, bias: bool, hidden: bool) -> None:
        self.fc1 = nn.Linear(4, 3 if hidden else 2, bias=bias, backend=AD, dtype=bp.float64)
        self.fc2 = (nn.Linear(3, 2, bias=bias, backend=AD, dtype=bp.float64) if hidden
                    else None)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc1(x) if self.fc2 is None else self.fc2(self.fc1(x).tanh())


def _models(name: str) -> tuple[Net, torch.nn.Module]:
    """burnpy's and torch's model with torch's weights: Linear, tanh, Linear; without biases
    for Muon (matrices only); for LBFGS one Linear (a convex least-squares problem with one
    minimum: on the two-layer model its 100 iterations walk a flat valley, where last-bit
    differences of torch's fused multiply-adds and dot products grow a hundredfold a step)."""
    bias, hidden = name != "Muon", name != "LBFGS"
    gen = torch.Generator().manual_seed(1)
    layers = ([torch.nn.Linear(4, 3, bias=bias), torch.nn.Tanh(),
               torch.nn.Linear(3, 2, bias=bias)] if hidden else [torch.nn.Linear(4, 2)])
    ref = torch.nn.Sequential(*layers).double()
    with torch.no_grad():
        for p in ref.parameters():
            p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float64))
    ours = Net(bias, hidden)
    ours.load_state_dict({k.replace("0.", "fc1.").replace("2.", "fc2."): v.numpy()
                          for k, v in ref.state_dict().items()})
    return ours, ref


def _float64(value: Any) -> Any:
    """A kwarg in float64 (optim_db's ``lr=torch.tensor(0.001)`` is float32, and torch's Muon
    multiplies it in float32)."""
    return value.double() if isinstance(value, torch.Tensor) else value


def _ours(value: Any) -> Any:
    """A torch kwarg as a burnpy user writes it (tensors as burnpy tensors)."""
    if isinstance(value, torch.Tensor):
        return bp.tensor(value.numpy())
    return value


@contextmanager
def _torch_precision() -> Iterator[None]:
    """torch in the parameters' float64 throughout: its scalar state (steps, NAdam's mu
    product) takes the default dtype, and Muon's ``grad.bfloat16()`` keeps the dtype."""
    before, threads = torch.get_default_dtype(), torch.get_num_threads()
    torch.set_default_dtype(torch.float64)
    torch.set_num_threads(1)  # tiny tensors: torch's thread pool only waits on busy cores
    try:
        with mock.patch.object(torch.Tensor, "bfloat16", torch.Tensor.clone):
            yield
    finally:
        torch.set_default_dtype(before)
        torch.set_num_threads(threads)


def _loss_ours(model: Net, step: int) -> Tensor:
    x, y = DATA[step]
    return F.mse_loss(model(Tensor.from_data(x, backend=AD)), Tensor.from_data(y, backend=AD))


def _loss_torch(model: torch.nn.Module, step: int) -> torch.Tensor:
    x, y = DATA[step]
    return torch.nn.functional.mse_loss(model(torch.from_numpy(x)), torch.from_numpy(y))


def _step_ours(model: Net, opt: optim.Optimizer, step: int) -> float:
    """One step; returns the loss before it (what ReduceLROnPlateau watches)."""
    losses: list[float] = []

    def closure() -> Tensor:
        loss = _loss_ours(model, step)
        losses.append(float(loss))
        return loss

    opt.step(model, closure=closure)
    return losses[0]


def _step_torch(model: torch.nn.Module, opt: torch.optim.Optimizer, step: int) -> float:
    losses: list[float] = []

    def closure() -> Any:  # torch's stubs say float; torch's optimizers return the tensor
        opt.zero_grad()
        loss = _loss_torch(model, step)
        loss.backward()
        losses.append(float(loss.detach()))
        return loss

    opt.step(closure)
    return losses[0]


def _assert_same(ours: Net, ref: torch.nn.Module) -> None:
    for (key, a), b in zip(ours.named_parameters(), ref.parameters(), strict=True):
        np.testing.assert_allclose(a.to_numpy(), b.detach().numpy(), rtol=1e-10, atol=1e-12,
                                   err_msg=key)


def _on_burnpy(make: Callable[..., Any]) -> Callable[..., Any]:
    """torch's scheduler lambda with its names (``StepLR``...) bound to burnpy's classes."""
    names = {n: getattr(lr_scheduler, n) for n in make.__code__.co_names
             if hasattr(lr_scheduler, n)}
    return types.FunctionType(make.__code__, {**make.__globals__, **names}, make.__name__,
                              make.__defaults__, make.__closure__)


@pytest.mark.parametrize(("info", "variant"), VARIANTS,
                         ids=[f"{i.name}-{v.desc}" for i, v in VARIANTS])
def test_optim_db_variant_matches_torch(info: Any, variant: Any) -> None:
    name = info.name
    torch_kwargs = {k: _float64(v) for k, v in variant.kwargs.items()}
    kwargs = {k: _ours(v) for k, v in torch_kwargs.items()}
    if name == "SparseAdam":
        with pytest.raises(bp.InvalidArgumentError, match="no sparse gradients"):
            optim.SparseAdam(**kwargs)
        return
    ours, ref = _models(name)
    with _torch_precision():
        ref_opt = info.optim_cls(ref.parameters(), **torch_kwargs)
        opt = getattr(optim, name)(list(ours.parameters()), **kwargs)
        for step in range(5):
            _step_torch(ref, ref_opt, step)
            _step_ours(ours, opt, step)
    _assert_same(ours, ref)


@pytest.mark.parametrize(("info", "index"), SCHEDULES,
                         ids=[f"{i.name}-{n}" for i, n in SCHEDULES])
def test_optim_db_schedulers_match_torch(info: Any, index: int) -> None:
    name = info.name
    if name == "SparseAdam":
        pytest.skip("SparseAdam is an error (see LISTED)")
    ours, ref = _models(name)
    makes = info.scheduler_inputs[index]
    with _torch_precision():
        ref_opt = info.optim_cls(ref.parameters())
        opt = getattr(optim, name)(list(ours.parameters()))
        ref_scheds = [make(ref_opt) for make in makes]
        scheds = [_on_burnpy(make)(opt) for make in makes]
        for step in range(20):
            ref_loss = _step_torch(ref, ref_opt, step)
            loss = _step_ours(ours, opt, step)
            for s, r in zip(scheds, ref_scheds, strict=True):
                if isinstance(r, torch.optim.lr_scheduler.ReduceLROnPlateau):
                    r.step(ref_loss)
                    s.step(loss)
                else:
                    r.step()
                    s.step()
            for g, h in zip(opt.param_groups, ref_opt.param_groups, strict=True):
                assert g["lr"] == pytest.approx(float(h["lr"]), rel=1e-12, abs=1e-15), step
    if name != "LBFGS":  # its 400 iterations over 20 batches grow last-bit differences
        _assert_same(ours, ref)  # (fused multiply-adds, dot order) fivefold a step



def counts() -> tuple[int, int, int]:
    """(clean, listed with a reason, total) over optim_db's variants."""
    listed = sum((info.name, v.desc) in LISTED for info, v in VARIANTS)
    return len(VARIANTS) - listed, listed, len(VARIANTS)


def test_listed_entries_exist() -> None:
    """Every listed entry is one of optim_db's (a stale entry must go)."""
    known = {(info.name, v.desc) for info, v in VARIANTS}
    assert set(LISTED) <= known


if __name__ == "__main__":
    clean, listed, total = counts()
    print(f"optim_db variants: {clean} clean, {listed} listed with a reason, {total} total; "
          f"{len(SCHEDULES)} scheduler constructions")
