"""The ``Lazy*`` modules against torch's in float64: the first call infers the feature count
and turns the module into its regular class; with torch's materialised weights copied in, the
forward, the input gradient, the parameter gradients and the updated buffers are torch's.
Loading a state dict into an uninitialised lazy module materialises it, as torch's."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import burnpy as bp
import burnpy.nn as nn
import burnpy.optim as optim
from burnpy import BurnpyError, Tensor
from burnpy.autodiff import Autodiff
from burnpy_cpu import CpuBackend

AD = Autodiff(CpuBackend)

#: (lazy class name, constructor args, input shape, regular class name)
CASES: list[tuple[str, tuple[Any, ...], dict[str, Any], tuple[int, ...], str]] = [
    ("LazyLinear", (3,), {}, (4, 2, 5), "Linear"),
    ("LazyLinear", (3, False), {}, (5,), "Linear"),
    ("LazyConv1d", (4, 3), {}, (2, 3, 8), "Conv1d"),
    ("LazyConv2d", (4, 3), {"padding": 1, "groups": 2}, (2, 4, 5, 5), "Conv2d"),
    ("LazyConv2d", (2, 3), {"padding_mode": "reflect", "padding": 1}, (3, 5, 5), "Conv2d"),
    ("LazyConv3d", (2, 2), {"bias": False}, (1, 3, 4, 4, 4), "Conv3d"),
    ("LazyConvTranspose1d", (4, 3), {"stride": 2}, (2, 3, 5), "ConvTranspose1d"),
    ("LazyConvTranspose2d", (4, 3), {"groups": 2, "output_padding": 1, "stride": 2},
     (2, 4, 4, 4), "ConvTranspose2d"),
    ("LazyConvTranspose3d", (2, 2), {}, (1, 3, 3, 3, 3), "ConvTranspose3d"),
    ("LazyBatchNorm1d", (), {}, (4, 3, 5), "BatchNorm1d"),
    ("LazyBatchNorm1d", (), {"affine": False, "momentum": None}, (6, 3), "BatchNorm1d"),
    ("LazyBatchNorm2d", (), {"bias": False}, (3, 2, 4, 4), "BatchNorm2d"),
    ("LazyBatchNorm3d", (), {}, (2, 2, 3, 3, 3), "BatchNorm3d"),
    ("LazyInstanceNorm1d", (), {}, (2, 3, 6), "InstanceNorm1d"),
    ("LazyInstanceNorm2d", (), {"affine": False}, (2, 3, 4, 4), "InstanceNorm2d"),
    ("LazyInstanceNorm3d", (), {"track_running_stats": False}, (2, 2, 3, 3, 3),
     "InstanceNorm3d"),
]
RNG = np.random.default_rng(5)


def _torch_state(m: torch.nn.Module) -> dict[str, np.ndarray]:
    return {k: v.detach().numpy().copy() for k, v in m.state_dict().items()}


def _grad(t: Tensor, grads: Any) -> np.ndarray:
    g = t.grad(grads)
    assert g is not None
    return g.to_numpy()


def _compare(ours: nn.Module, theirs: torch.nn.Module, x: np.ndarray) -> None:
    """Forward, input and parameter gradients and buffers after one call, against torch."""
    theirs.zero_grad()
    tx = torch.tensor(x, requires_grad=True)
    ty = theirs(tx)
    g = RNG.standard_normal(tuple(ty.shape))
    (ty * torch.tensor(g)).sum().backward()
    bx = Tensor.from_data(x, backend=AD).require_grad()
    by = ours(bx)
    np.testing.assert_allclose(by.to_numpy(), ty.detach().numpy(), rtol=1e-10, atol=1e-12)
    grads = (by * Tensor.from_data(g, backend=AD)).sum().backward()
    assert tx.grad is not None
    np.testing.assert_allclose(_grad(bx, grads), tx.grad.numpy(), rtol=1e-9,
                               atol=1e-12)
    theirs_params = dict(theirs.named_parameters())
    assert [n for n, _ in ours.named_parameters()] == list(theirs_params)
    for name, p in ours.named_parameters():
        ref = theirs_params[name].grad
        assert ref is not None
        np.testing.assert_allclose(_grad(p, grads), ref.numpy(), rtol=1e-9,
                                   atol=1e-12)
    for name, b in ours.named_buffers():
        np.testing.assert_allclose(b.to_numpy(), dict(theirs.named_buffers())[name].numpy(),
                                   rtol=1e-12)


@pytest.mark.parametrize(("lazy", "args", "kwargs", "shape", "regular"), CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_first_call_materialises_as_torchs(lazy: str, args: tuple[Any, ...],
                                           kwargs: dict[str, Any], shape: tuple[int, ...],
                                           regular: str) -> None:
    x = RNG.standard_normal(shape)
    theirs = getattr(torch.nn, lazy)(*args, **kwargs, dtype=torch.float64)
    ours = getattr(nn, lazy)(*args, **kwargs, backend=AD)
    assert ours.has_uninitialized_params() and theirs.has_uninitialized_params()
    theirs(torch.tensor(x))
    ours.double()  # reaches the placeholders: the materialised tensors are float64
    ours(Tensor.from_data(x, backend=AD))
    assert type(ours) is getattr(nn, regular) and type(theirs) is getattr(torch.nn, regular)
    want = _torch_state(theirs)
    assert {k: v.shape for k, v in ours.state_dict().items()} == {
        k: v.shape for k, v in want.items()}
    assert all(t.dtype is bp.float64 for t in ours.state_dict().values()
               if t.dtype.is_float)
    assert all(p.is_require_grad() for p in ours.parameters())
    # torch's materialised weights in, then one training call and one in eval
    ours.load_state_dict(want)
    theirs.load_state_dict({k: torch.tensor(v) for k, v in want.items()})
    _compare(ours, theirs, RNG.standard_normal(shape))
    ours.eval()
    theirs.eval()
    _compare(ours, theirs, RNG.standard_normal(shape))


@pytest.mark.parametrize(("lazy", "args", "kwargs", "shape", "regular"), CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_loading_torchs_state_materialises_an_uninitialised_lazy_module(
        lazy: str, args: tuple[Any, ...], kwargs: dict[str, Any], shape: tuple[int, ...],
        regular: str) -> None:
    x = RNG.standard_normal(shape)
    reference = getattr(torch.nn, lazy)(*args, **kwargs, dtype=torch.float64)
    reference(torch.tensor(x))
    ours = getattr(nn, lazy)(*args, **kwargs, backend=AD, dtype="float64")
    ours.load_state_dict(_torch_state(reference))  # strict: every name, shapes now match
    assert type(ours) is getattr(nn, lazy)  # becomes the regular class at its first call
    # (torch's lazy instance norms keep num_features=0 after such a load and then refuse
    # their input: the materialised reference is the oracle)
    _compare(ours, reference, x)
    assert type(ours) is getattr(nn, regular)


def test_an_optimizer_built_after_the_first_call_trains_it_as_torchs() -> None:
    x, target = RNG.standard_normal((6, 4)), RNG.standard_normal((6, 2))
    theirs = torch.nn.Sequential(torch.nn.LazyLinear(3), torch.nn.Tanh(),
                                 torch.nn.LazyLinear(2)).double()
    theirs(torch.tensor(x))
    ours = nn.Sequential(nn.LazyLinear(3, backend=AD), nn.Tanh(),
                         nn.LazyLinear(2, backend=AD)).double()
    ours(Tensor.from_data(x, backend=AD))
    ours.load_state_dict(_torch_state(theirs))
    t_opt = torch.optim.SGD(theirs.parameters(), lr=0.1, momentum=0.9)
    b_opt = optim.SGD(ours.parameters(), lr=0.1, momentum=0.9)
    assert [p.shape for p in ours.parameters()] == [tuple(p.shape)
                                                    for p in theirs.parameters()]
    for _ in range(3):
        t_opt.zero_grad()
        ((theirs(torch.tensor(x)) - torch.tensor(target)) ** 2).mean().backward()
        t_opt.step()
        loss = ((ours(Tensor.from_data(x, backend=AD))
                 - Tensor.from_data(target, backend=AD)) ** 2).mean()
        b_opt.step(ours, loss.backward())
    for (name, p), tp in zip(ours.state_dict().items(), theirs.state_dict().values(),
                             strict=True):
        np.testing.assert_allclose(p.to_numpy(), tp.numpy(), rtol=1e-10, err_msg=name)


def test_lazy_modules_before_their_first_call() -> None:
    m = nn.LazyConv2d(4, 3, backend=AD)
    assert repr(m) == "LazyConv2d(0, 4, kernel_size=(3, 3), stride=(1, 1))" == repr(
        torch.nn.LazyConv2d(4, 3))
    assert isinstance(m.weight, nn.UninitializedParameter) and m.weight.is_require_grad()
    assert list(m.state_dict()) == ["weight", "bias"]
    bn = nn.LazyBatchNorm1d()
    assert isinstance(bn.running_mean, nn.UninitializedBuffer)
    assert [n for n, _ in bn.named_buffers()] == ["running_mean", "running_var",
                                                  "num_batches_tracked"]
    with pytest.raises(BurnpyError, match=r"LazyConv2d\(out_channels=4\).*4-d input"):
        m(Tensor.zeros((2, 3)))
    with pytest.raises(BurnpyError, match="LazyBatchNorm1d: expected a 2-d or 3-d input"):
        bn(Tensor.zeros((2, 3, 4, 4)))
    assert type(m) is nn.LazyConv2d and m.has_uninitialized_params()  # a refusal keeps it lazy
    frozen = nn.LazyLinear(2, backend=AD)
    frozen.requires_grad_(False)
    frozen(Tensor.zeros((1, 3), backend=AD))
    assert not frozen.weight.is_require_grad()


def test_unbatched_inputs_infer_the_channel_dim() -> None:
    x = RNG.standard_normal((3, 6))
    ours = nn.LazyInstanceNorm1d(dtype="float64")
    ours(Tensor.from_data(x))
    assert ours.num_features == 3
    theirs = torch.nn.InstanceNorm1d(3, affine=True, track_running_stats=True).double()
    ours.load_state_dict(_torch_state(theirs))
    np.testing.assert_allclose(ours(Tensor.from_data(x)).to_numpy(),
                               theirs(torch.tensor(x)).detach().numpy(), rtol=1e-12)
    conv = nn.LazyConv1d(2, 3)
    conv(Tensor.zeros((4, 7)))
    assert conv.in_channels == 4
