"""Parametrizations (torch.nn.utils.parametrize, parametrizations.weight_norm and
spectral_norm) against torch in float64: torch's state-dict names both ways, the forward,
gradients reaching the originals, spectral norm's power iteration in train mode only."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import burnpy.nn as nn
from burnpy import BurnpyError, Tensor
from burnpy.autodiff import Autodiff
from burnpy.nn.utils import parametrizations, parametrize
from burnpy_cpu import CpuBackend

AD = Autodiff(CpuBackend)
RNG = np.random.default_rng(11)


def _state(m: torch.nn.Module) -> dict[str, np.ndarray]:
    return {k: v.detach().numpy().copy() for k, v in m.state_dict().items()}


def _plist(m: Any, name: str = "weight") -> Any:
    """``m.parametrizations[name]`` (an attribute the module's class does not declare)."""
    return m.parametrizations[name]


def _grad(t: Tensor, grads: Any) -> np.ndarray:
    g = t.grad(grads)
    assert g is not None
    return g.to_numpy()


def _step(ours: nn.Module, theirs: torch.nn.Module, x: np.ndarray) -> None:
    """One call of both, compared: output, input gradient, every parameter's gradient."""
    theirs.zero_grad()
    tx = torch.tensor(x, requires_grad=True)
    ty = theirs(tx)
    g = RNG.standard_normal(tuple(ty.shape))
    (ty * torch.tensor(g)).sum().backward()
    bx = Tensor.from_data(x, backend=AD).require_grad()
    by = ours(bx)
    np.testing.assert_allclose(by.to_numpy(), ty.detach().numpy(), rtol=1e-11, atol=1e-13)
    grads = (by * Tensor.from_data(g, backend=AD)).sum().backward()
    assert tx.grad is not None
    np.testing.assert_allclose(_grad(bx, grads), tx.grad.numpy(), rtol=1e-10, atol=1e-13)
    named = dict(theirs.named_parameters())
    assert [n for n, _ in ours.named_parameters()] == list(named)
    for name, p in ours.named_parameters():
        ref = named[name].grad
        assert ref is not None
        np.testing.assert_allclose(_grad(p, grads), ref.numpy(), rtol=1e-10, atol=1e-13,
                                   err_msg=name)
    for name, b in ours.named_buffers():
        np.testing.assert_allclose(b.to_numpy(), dict(theirs.named_buffers())[name].numpy(),
                                   rtol=1e-12, atol=1e-15, err_msg=name)


LAYERS: list[tuple[str, Callable[[Any], Any], tuple[int, ...]]] = [
    ("linear", lambda lib: lib.Linear(5, 4), (3, 5)),
    ("conv2d", lambda lib: lib.Conv2d(3, 4, 2), (2, 3, 4, 4)),
    ("conv_transpose2d", lambda lib: lib.ConvTranspose2d(3, 5, 2, groups=1), (2, 3, 3, 3)),
]


def _pair(make: Callable[[Any], Any]) -> tuple[Any, Any]:
    theirs = make(torch.nn).double()
    ours = make(nn).to(backend=AD).double()
    return ours, theirs


@pytest.mark.parametrize(("layer", "make", "shape"), LAYERS, ids=[c[0] for c in LAYERS])
def test_spectral_norm_matches_torch_in_train_and_eval(
        layer: str, make: Callable[[Any], Any], shape: tuple[int, ...]) -> None:
    ours, theirs = _pair(make)
    torch.nn.utils.parametrizations.spectral_norm(theirs)
    parametrizations.spectral_norm(ours)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert "parametrizations.weight.0._u" in ours.state_dict()
    assert type(ours).__name__ == type(theirs).__name__  # ParametrizedLinear...
    ours.load_state_dict(_state(theirs))  # strictly: seeds torch's _u and _v
    for _ in range(3):  # each train-mode call takes one power step on _u/_v, as torch's
        _step(ours, theirs, RNG.standard_normal(shape))
    ours.eval()
    theirs.eval()
    u = _plist(ours)[0]._u.to_numpy()
    _step(ours, theirs, RNG.standard_normal(shape))
    np.testing.assert_array_equal(_plist(ours)[0]._u.to_numpy(), u)
    back = make(torch.nn).double()
    torch.nn.utils.parametrizations.spectral_norm(back)
    back.load_state_dict({k: torch.tensor(v.to_numpy()) for k, v in
                          ours.state_dict().items()}, strict=True)
    back.eval()  # (a read in train mode would take a power step)
    np.testing.assert_allclose(back.weight.detach().numpy(), theirs.weight.detach().numpy(),
                               rtol=1e-12)


@pytest.mark.parametrize("dim", [0, 1, None, -2])
def test_weight_norm_matches_torch(dim: int | None) -> None:
    ours, theirs = _pair(lambda lib: lib.Conv1d(3, 4, 2))
    torch.nn.utils.parametrizations.weight_norm(theirs, dim=dim)  # type: ignore[arg-type]
    parametrizations.weight_norm(ours, dim=dim)
    assert {k: v.shape for k, v in ours.state_dict().items()} == {
        k: tuple(v.shape) for k, v in theirs.state_dict().items()}
    # the originals at registration are torch's (g the norms, v the weight)
    ours.load_state_dict({"bias": theirs.bias.detach().numpy(),
                          "parametrizations.weight.original1":
                          _plist(theirs).original1.detach().numpy(),
                          "parametrizations.weight.original0": np.zeros(
                              tuple(_plist(theirs).original0.shape))})
    ours.weight = Tensor.from_data(theirs.weight.detach().numpy(), backend=AD)  # right_inverse
    np.testing.assert_allclose(_plist(ours).original0.to_numpy(),
                               _plist(theirs).original0.detach().numpy(),
                               rtol=1e-12)
    ours.load_state_dict(_state(theirs))
    _step(ours, theirs, RNG.standard_normal((2, 3, 6)))
    back = torch.nn.Conv1d(3, 4, 2).double()
    torch.nn.utils.parametrizations.weight_norm(back, dim=dim)  # type: ignore[arg-type]
    back.load_state_dict({k: torch.tensor(v.to_numpy()) for k, v in
                          ours.state_dict().items()}, strict=True)


def test_weight_norm_loads_a_checkpoint_of_torchs_legacy_weight_norm() -> None:
    """torch's deprecated hook-based ``nn.utils.weight_norm`` saves ``weight_g``/``weight_v``;
    the parametrized module reads them as ``original0``/``original1`` (torch's compat hook),
    leaving the caller's dict as it was."""
    legacy = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(),
                                 torch.nn.Linear(4, 2)).double()
    torch.nn.utils.weight_norm(legacy[2], dim=1)
    state = _state(legacy)
    assert {"2.weight_g", "2.weight_v"} <= set(state)
    ours = nn.Sequential(nn.Linear(3, 4, backend=AD, dtype="float64"), nn.Tanh(),
                         nn.Linear(4, 2, backend=AD, dtype="float64"))
    parametrizations.weight_norm(ours[2], dim=1)
    ours.load_state_dict(state)
    assert "2.weight_g" in state
    x = RNG.standard_normal((5, 3))
    np.testing.assert_allclose(ours(Tensor.from_data(x, backend=AD)).to_numpy(),
                               legacy(torch.tensor(x)).detach().numpy(), rtol=1e-12)


class _Symmetric(nn.Module):
    def __init__(self) -> None:
        self.calls = 0

    def forward(self, x: Tensor) -> Tensor:
        self.calls += 1
        return x.triu() + x.triu(1).transpose(0, 1)


class _Scale(nn.Module):
    def __init__(self) -> None:
        self.factor = Tensor.full((), 2.0, backend=AD, dtype="float64")

    def forward(self, x: Tensor) -> Tensor:
        return x * self.factor

    def right_inverse(self, x: Tensor) -> Tensor:
        return x / self.factor


class _Transposed(nn.Module):
    def forward(self, x: Tensor) -> Tensor:
        return x.transpose(0, 1)


def test_register_chain_cache_assign_and_remove() -> None:
    lin = nn.Linear(3, 3, backend=AD, dtype="float64")
    w = lin.weight.to_numpy()
    sym = _Symmetric()
    parametrize.register_parametrization(lin, "weight", sym)
    assert parametrize.is_parametrized(lin) and parametrize.is_parametrized(lin, "weight")
    assert not parametrize.is_parametrized(lin, "bias")
    assert parametrize.type_before_parametrizations(lin) is nn.Linear
    want = np.triu(w) + np.triu(w, 1).T
    np.testing.assert_allclose(lin.weight.to_numpy(), want)
    parametrize.register_parametrization(lin, "weight", _Scale())  # chained after
    np.testing.assert_allclose(lin.weight.to_numpy(), 2 * want)
    assert [n for n, _ in lin.named_parameters()] == [
        "bias", "parametrizations.weight.original", "parametrizations.weight.1.factor"]
    before = sym.calls
    with parametrize.cached():
        first, second = lin.weight, lin.weight
    assert first is second
    assert sym.calls == before + 1
    with pytest.raises(BurnpyError, match="_Symmetric does not implement right_inverse"):
        lin.weight = Tensor.zeros((3, 3), backend=AD, dtype="float64")
    parametrize.remove_parametrizations(lin, "weight", leave_parametrized=False)
    assert type(lin) is nn.Linear and "parametrizations" not in vars(lin)
    np.testing.assert_allclose(lin.weight.to_numpy(), w)
    assert [n for n, _ in lin.named_parameters()] == ["bias", "weight"]
    assert lin.weight.is_require_grad()


def test_setter_and_remove_leave_parametrized_as_torchs() -> None:
    theirs = torch.nn.Linear(3, 3).double()
    ours = nn.Linear(3, 3, backend=AD, dtype="float64")
    ours.load_state_dict(_state(theirs))

    class TorchScale(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * 2.0

        def right_inverse(self, x: torch.Tensor) -> torch.Tensor:
            return x / 2.0

    torch.nn.utils.parametrize.register_parametrization(theirs, "weight", TorchScale())
    parametrize.register_parametrization(ours, "weight", _Scale())
    value = RNG.standard_normal((3, 3))
    with torch.no_grad():
        theirs.weight = torch.tensor(value)
    ours.weight = Tensor.from_data(value, backend=AD)
    np.testing.assert_allclose(_plist(ours).original.to_numpy(),
                               _plist(theirs).original.detach().numpy())
    original = _plist(ours).original
    torch.nn.utils.parametrize.remove_parametrizations(theirs, "weight")
    parametrize.remove_parametrizations(ours, "weight")
    assert ours.weight is original  # the same parameter object, holding the value
    np.testing.assert_allclose(ours.weight.to_numpy(), theirs.weight.detach().numpy())
    assert list(ours.state_dict()) == list(theirs.state_dict())


def test_refusals_name_the_module_and_the_tensor() -> None:
    lin = nn.Linear(3, 2, backend=AD)
    with pytest.raises(BurnpyError, match="no parameter or buffer named 'weights'"):
        parametrize.register_parametrization(lin, "weights", _Symmetric())
    with pytest.raises(BurnpyError, match=r"may not change.*shape unless unsafe=True"):
        parametrize.register_parametrization(lin, "weight", _Transposed())  # [2, 3] -> [3, 2]
    assert type(lin) is nn.Linear and "weight" in vars(lin)  # left as it was
    with pytest.raises(BurnpyError, match="has no parametrization on 'weight'"):
        parametrize.remove_parametrizations(lin, "weight")
    parametrizations.weight_norm(lin)
    with pytest.raises(BurnpyError, match="needs a parametrization of one original"):
        parametrize.remove_parametrizations(lin, "weight", leave_parametrized=False)
    with pytest.raises(BurnpyError, match="n_power_iterations must be positive"):
        parametrizations.spectral_norm(nn.Linear(2, 2), n_power_iterations=0)
    with pytest.raises(BurnpyError, match=r"use burnpy\.nn\.utils\.parametrizations\.weight_norm"):
        nn.utils.weight_norm  # noqa: B018 (torch's deprecated hook form)
