"""Parameters keep their identity, as torch's: one optimizer over parameters of several
modules keeps one state per parameter (not per dotted name); an optimizer built before
``load_state_dict``, ``to``, ``copy_`` or a ``no_grad`` write keeps its parameters; a
parameter the step cannot find is an error naming it; state dicts resume by position; and
``load_state_dict`` copies the caller's values. Every run is compared with torch's."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import burnpy as bp
import burnpy.nn as nn
import burnpy.nn.functional as F
from burnpy import Tensor, optim, record
from burnpy.autodiff import Autodiff
from burnpy.backend.data import TensorData
from burnpy_cpu import CpuBackend

AD = Autodiff(CpuBackend)
STEPS = [(np.random.default_rng(i).standard_normal((5, 4)),
          np.random.default_rng(40 + i).standard_normal((5, 3))) for i in range(6)]


class Half(nn.Module):
    """An encoder or a decoder: both name their layer ``fc``."""

    def __init__(self, n_out: int, dtype: bp.DType = bp.float64) -> None:
        self.fc = nn.Linear(4, n_out, backend=AD, dtype=dtype)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc(x).tanh()


class TorchHalf(torch.nn.Module):
    def __init__(self, n_out: int) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(4, n_out).double()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.fc(x))


def _weights(m: torch.nn.Module) -> dict[str, np.ndarray]:
    return {k: v.detach().numpy().copy() for k, v in m.state_dict().items()}


def _pairs(hidden: int) -> tuple[Half, Half, TorchHalf, TorchHalf]:
    """Encoder and decoder, burnpy's and torch's, with the same weights (torch's seed)."""
    torch.manual_seed(hidden)
    t_enc, t_dec = TorchHalf(hidden), TorchHalf(3)
    t_dec.fc = torch.nn.Linear(hidden, 3).double()
    enc, dec = Half(hidden), Half(3)
    dec.fc = nn.Linear(hidden, 3, backend=AD, dtype=bp.float64)
    enc.load_state_dict(_weights(t_enc))
    dec.load_state_dict(_weights(t_dec))
    return enc, dec, t_enc, t_dec


def _grads(enc: Half, dec: Half, x: np.ndarray, y: np.ndarray) -> bp.Gradients:
    out = dec(enc(Tensor.from_data(x, backend=AD)))
    return F.mse_loss(out, Tensor.from_data(y, backend=AD)).backward()


def _torch_step(t_enc: TorchHalf, t_dec: TorchHalf, opt: torch.optim.Optimizer,
                x: np.ndarray, y: np.ndarray) -> None:
    opt.zero_grad()
    torch.nn.functional.mse_loss(t_dec(t_enc(torch.from_numpy(x))),
                                 torch.from_numpy(y)).backward()
    opt.step()


def _assert_same(ours: nn.Module, theirs: torch.nn.Module, tol: float = 1e-12) -> None:
    want = _weights(theirs)
    got = {k: v.to_numpy() for k, v in ours.state_dict().items()}
    assert list(got) == list(want)
    for name, value in want.items():
        np.testing.assert_allclose(got[name], value, rtol=tol, atol=tol, err_msg=name)


# ---- one optimizer, two modules with the same dotted names --------------------------------------
@pytest.mark.parametrize("hidden", [3, 4], ids=["other-shapes", "equal-shapes"])
@pytest.mark.parametrize("style", ["burn", "torch"])
def test_one_adam_over_two_modules_matches_torch(hidden: int, style: str) -> None:
    """``enc.fc.weight`` and ``dec.fc.weight`` keep a state each: Burn's ``Adam()`` stepping
    both modules, and torch's ``Adam(list(enc.parameters()) + list(dec.parameters()))``."""
    enc, dec, t_enc, t_dec = _pairs(hidden)
    opt = (optim.Adam(lr=0.05) if style == "burn" else
           optim.Adam(list(enc.parameters()) + list(dec.parameters()), lr=0.05))
    ref = torch.optim.Adam(list(t_enc.parameters()) + list(t_dec.parameters()), lr=0.05)
    for x, y in STEPS[:3]:
        grads = _grads(enc, dec, x, y)
        opt.step(enc, grads)
        opt.step(dec, grads)
        _torch_step(t_enc, t_dec, ref, x, y)
    _assert_same(enc, t_enc, 1e-6)
    _assert_same(dec, t_dec, 1e-6)
    assert len(opt.state) == 4 and set(opt.steps.values()) == {3}


# ---- the optimizer first, then the parameters' values change ------------------------------------
def _load(m: Half, t: TorchHalf) -> None:
    state = {"fc.weight": np.full((4, 4), 0.1), "fc.bias": np.linspace(-1, 1, 4)}
    m.load_state_dict(state)
    t.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})


def _copy(m: Half, t: TorchHalf) -> None:
    value = np.arange(16.0).reshape(4, 4) / 20
    with bp.no_grad():
        m.fc.weight.copy_(Tensor.from_data(value, backend=AD))
    with torch.no_grad():
        t.fc.weight.copy_(torch.from_numpy(value))


def _write(m: Half, t: TorchHalf) -> None:
    with bp.no_grad():
        m.fc.weight.mul_(-2.0)
        m.fc.bias[1:] = 0.5
    with torch.no_grad():
        t.fc.weight.mul_(-2.0)
        t.fc.bias[1:] = 0.5


CHANGES: dict[str, Callable[[Half, TorchHalf], None]] = {
    "load_state_dict": _load, "copy_": _copy, "no_grad write": _write}


@pytest.mark.parametrize("change", ["load_state_dict", "to(dtype)", "copy_", "no_grad write"])
def test_optimizer_built_before_the_values_change_keeps_its_parameters(change: str) -> None:
    """torch's order: build the optimizer, then load pretrained weights, cast the model or
    write the parameters, then step; the optimizer still holds the module's parameters."""
    torch.manual_seed(1)
    t_enc, t_dec = TorchHalf(4), TorchHalf(3)
    dtype = bp.float32 if change == "to(dtype)" else bp.float64
    enc, dec = Half(4, dtype), Half(3)
    for m, t in ((enc, t_enc), (dec, t_dec)):
        m.load_state_dict(_weights(t))
    if change == "to(dtype)":
        t_enc.float()
    opt = optim.Adam(list(enc.parameters()) + list(dec.parameters()), lr=0.05)
    ref = torch.optim.Adam(list(t_enc.parameters()) + list(t_dec.parameters()), lr=0.05)
    if change == "to(dtype)":
        enc.to(dtype=bp.float64)
        t_enc.double()
    else:
        CHANGES[change](enc, t_enc)
    for x, y in STEPS[:3]:
        grads = _grads(enc, dec, x, y)
        opt.step(enc, grads)
        opt.step(dec, grads)
        _torch_step(t_enc, t_dec, ref, x, y)
    _assert_same(enc, t_enc)
    _assert_same(dec, t_dec)


# ---- a parameter the step cannot find -----------------------------------------------------------
def test_a_parameter_gone_from_its_module_is_named() -> None:
    """A layer assigned over one the optimizer steps: torch would silently stop training the
    new one (and keep the old one's state); burnpy names the parameter. Without ``params``
    (Burn's), the model is the truth: the new layer starts with fresh state."""
    enc, dec, _, _ = _pairs(4)
    opt = optim.Adam(enc.parameters(), lr=0.05)
    burn = optim.Adam(lr=0.05)
    grads = _grads(enc, dec, *STEPS[0])
    opt.step(enc, grads)
    burn.step(dec, grads)
    old = dec.fc.weight
    enc.fc = nn.Linear(4, 4, backend=AD, dtype=bp.float64)
    dec.fc = nn.Linear(4, 3, backend=AD, dtype=bp.float64)
    grads = _grads(enc, dec, *STEPS[1])
    with pytest.raises(bp.InvalidArgumentError, match=r"parameter 'fc\.weight' \(shape \(4, 4\), "
                       r"bp\.float64\) was in Half at an earlier step but is not now"):
        opt.step(enc, grads)
    burn.step(dec, grads)
    assert old not in burn.steps and burn.steps[dec.fc.weight] == 1
    assert len(burn.param_groups[0]["params"]) == 2
    with pytest.raises(bp.InvalidArgumentError, match=r"none of the optimizer's parameters is "
                       r"in Half: param_groups\[0\] holds a tensor of shape \(4, 4\)"):
        optim.SGD(enc.parameters(), lr=0.1).step(dec, grads)


# ---- save and resume ----------------------------------------------------------------------------
@pytest.mark.parametrize("style", ["burn", "torch"])
def test_resume_into_fresh_modules_matches_torch(tmp_path: Path, style: str) -> None:
    """Three steps, records of both modules and the optimizer, then fresh objects (as in a new
    process): the optimizer is built first, the weights and its state loaded after (torch's
    order), and three more steps equal torch's resumed run."""

    def make(enc: Half, dec: Half) -> optim.Optimizer:
        if style == "burn":
            return optim.AdamW(lr=0.05, weight_decay=0.1, amsgrad=True)
        return optim.AdamW([{"params": enc.parameters()}, {"params": dec.parameters(),
                                                           "lr": 0.02}],
                           lr=0.05, weight_decay=0.1, amsgrad=True)

    def make_torch(t_enc: TorchHalf, t_dec: TorchHalf) -> torch.optim.Optimizer:
        groups: list[dict[str, Any]] = [{"params": list(t_enc.parameters())},
                                        {"params": list(t_dec.parameters())}]
        if style == "burn":
            groups = [{"params": groups[0]["params"] + groups[1]["params"]}]
        else:
            groups[1]["lr"] = 0.02
        return torch.optim.AdamW(groups, lr=0.05, weight_decay=0.1, amsgrad=True)

    enc, dec, t_enc, t_dec = _pairs(4)
    opt, ref = make(enc, dec), make_torch(t_enc, t_dec)
    for x, y in STEPS[:3]:
        grads = _grads(enc, dec, x, y)
        opt.step(enc, grads)
        opt.step(dec, grads)
        _torch_step(t_enc, t_dec, ref, x, y)
    record.save(enc, tmp_path / "enc.safetensors")
    record.save(dec, tmp_path / "dec.safetensors")
    record.save(opt, tmp_path / "opt.safetensors")
    saved = (t_enc.state_dict(), t_dec.state_dict(), ref.state_dict())

    enc, dec, _, _ = _pairs(4)  # fresh modules (other weights until loaded)
    opt = make(enc, dec)
    record.load(enc, tmp_path / "enc.safetensors")
    record.load(dec, tmp_path / "dec.safetensors")
    record.load(opt, tmp_path / "opt.safetensors")
    torch.manual_seed(7)
    t_enc, t_dec = TorchHalf(4), TorchHalf(3)
    ref = make_torch(t_enc, t_dec)
    t_enc.load_state_dict(saved[0])
    t_dec.load_state_dict(saved[1])
    ref.load_state_dict(saved[2])
    for x, y in STEPS[3:]:
        grads = _grads(enc, dec, x, y)
        opt.step(enc, grads)
        opt.step(dec, grads)
        _torch_step(t_enc, t_dec, ref, x, y)
    _assert_same(enc, t_enc)
    _assert_same(dec, t_dec)


def test_state_dict_sizes_must_match_as_torch() -> None:
    enc, dec, _, _ = _pairs(4)
    saved = optim.SGD(list(enc.parameters()) + list(dec.parameters())).state_dict()
    assert saved["param_groups"][0]["params"] == [0, 1, 2, 3]
    with pytest.raises(optim.OptimizerStateError, match=r"param_groups\[0\] of the state has 4 "
                       r"parameter\(s\), this SGD's has 2"):
        optim.SGD(enc.parameters()).load_state_dict(saved)


# ---- load_state_dict copies ---------------------------------------------------------------------
def test_load_state_dict_does_not_follow_the_callers_memory() -> None:
    """From a live ``torch_model.state_dict()``: torch's optimizer then writes its tensors in
    place, and the burnpy module keeps the values it loaded; so with a NumPy array or a
    ``TensorData`` the caller writes afterwards."""
    torch.manual_seed(2)
    ref = torch.nn.Linear(4, 3).double()
    ours = nn.Linear(4, 3, backend=AD, dtype=bp.float64)
    ours.load_state_dict(ref.state_dict())
    want = _weights(ref)
    opt = torch.optim.SGD(ref.parameters(), lr=0.5)
    ref(torch.ones(2, 4, dtype=torch.float64)).sum().backward()
    opt.step()
    assert not np.array_equal(ref.weight.detach().numpy(), want["weight"])
    for name, value in want.items():
        np.testing.assert_array_equal(ours.state_dict()[name].to_numpy(), value, err_msg=name)

    weight, bias = np.ones((3, 4)), np.ones(3)
    ours.load_state_dict({"weight": weight, "bias": TensorData(bias)})
    weight[:] = 7.0
    bias[:] = 7.0
    np.testing.assert_array_equal(ours.weight.to_numpy(), np.ones((3, 4)))
    np.testing.assert_array_equal(ours.bias.to_numpy(), np.ones(3))
