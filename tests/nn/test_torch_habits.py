"""PyTorch habits on modules: ``to(dtype=...)`` keeps trainable leaves, ``load_state_dict``
returns torch's incompatible keys, casts, and loads ``safetensors.torch`` checkpoints."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
import safetensors.numpy
import safetensors.torch
import torch

import burnpy as bp
import burnpy.nn as nn
import burnpy.nn.functional as F
from burnpy import Tensor, optim, record
from burnpy.autodiff import Autodiff
from burnpy.backend.data import TensorData
from burnpy_cpu import CpuBackend

AD = Autodiff(CpuBackend)


# ---- Module.to ----------------------------------------------------------------------------------
def test_to_float64_gives_trainable_leaves_with_torch_gradients() -> None:
    m = nn.Linear(3, 2, backend=AD).to(dtype="float64")
    ref = torch.nn.Linear(3, 2).double()
    with torch.no_grad():
        ref.weight.copy_(torch.from_numpy(m.weight.to_numpy()))
        ref.bias.copy_(torch.from_numpy(m.bias.to_numpy()))
    x = np.random.default_rng(0).standard_normal((5, 3))
    for _ in range(2):  # a second backward works: no cast node is shared between passes
        grads = m(Tensor.from_data(x, backend=AD)).square().sum().backward()
        gw, gb = m.weight.grad(grads), m.bias.grad(grads)
        assert gw is not None and gb is not None and gw.dtype is bp.float64
        ref.zero_grad()
        ref(torch.from_numpy(x)).square().sum().backward()
        assert ref.weight.grad is not None and ref.bias.grad is not None
        np.testing.assert_allclose(gw.to_numpy(), ref.weight.grad.numpy(), rtol=1e-12)
        np.testing.assert_allclose(gb.to_numpy(), ref.bias.grad.numpy(), rtol=1e-12)
    opt = optim.SGD(lr=0.1)
    opt.step(m, grads)
    assert set(opt.steps) == {m.weight, m.bias}


def test_to_keeps_frozen_parameters_frozen_and_converts_buffers() -> None:
    bn = nn.BatchNorm1d(3, backend=AD)
    bn.weight.require_grad(False)
    bn.to(dtype=bp.float64)
    assert not bn.weight.is_require_grad() and bn.bias.is_require_grad()
    assert bn.running_mean.dtype is bp.float64 and not bn.running_mean.is_require_grad()
    assert bn.num_batches_tracked.dtype is bp.int64
    plain = nn.Linear(2, 2).to(backend=AD, dtype="float64")
    assert plain.weight.backend is AD and plain.weight.is_require_grad()


# ---- load_state_dict ----------------------------------------------------------------------------
def test_load_state_dict_returns_missing_and_unexpected_keys() -> None:
    lin = nn.Linear(3, 2)
    state = {k: v.to_numpy() for k, v in lin.state_dict().items()}
    result = nn.Linear(3, 2).load_state_dict(state)
    assert result == ([], []) and isinstance(result, nn.IncompatibleKeys)
    assert repr(result) == "<All keys matched successfully>"
    missing, unexpected = nn.Linear(3, 2).load_state_dict(
        {"weight": state["weight"], "extra": state["bias"]}, strict=False)
    assert (missing, unexpected) == (["bias"], ["extra"])
    with pytest.raises(nn.StateDictError, match="missing bias; unexpected extra"):
        nn.Linear(3, 2).load_state_dict({"weight": state["weight"], "extra": state["bias"]})


def test_load_state_dict_casts_a_bfloat16_state_into_a_float32_model() -> None:
    values = np.array([[0.5, -1.25, 3.0], [2.0, 0.1, -0.3]])
    bf16 = values.astype(ml_dtypes.bfloat16)
    lin = nn.Linear(3, 2, backend=AD)
    lin.load_state_dict({"weight": TensorData(bf16, bp.bfloat16),
                         "bias": TensorData(np.zeros(2, ml_dtypes.bfloat16), bp.bfloat16)})
    assert lin.weight.dtype is bp.float32 and lin.weight.is_require_grad()
    np.testing.assert_array_equal(lin.weight.to_numpy(), bf16.astype(np.float32))


def test_tied_weights_load_under_either_name() -> None:
    class Tied(nn.Module):
        def __init__(self) -> None:
            self.emb = nn.Embedding(5, 3)
            self.head = nn.Linear(3, 5, bias=False)
            self.head.weight = self.emb.weight

    w = np.arange(15, dtype=np.float32).reshape(5, 3)
    for key in ("emb.weight", "head.weight"):
        m = Tied()
        assert m.load_state_dict({key: w}) == ([], [])
        assert m.head.weight is m.emb.weight
        np.testing.assert_array_equal(m.head.weight.to_numpy(), w)
    both = Tied()  # torch's state dict lists a tied tensor under every name
    assert both.load_state_dict({"emb.weight": w, "head.weight": w}) == ([], [])


class _TorchNet(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(2, 4, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(4)
        self.fc = torch.nn.Linear(4 * 5 * 5, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.relu(self.bn(self.conv(x))).flatten(1))


class _Net(nn.Module):
    def __init__(self, dtype: bp.DType = bp.float32) -> None:
        self.conv = nn.Conv2d(2, 4, 3, padding=1, dtype=dtype)
        self.bn = nn.BatchNorm2d(4, dtype=dtype)
        self.fc = nn.Linear(4 * 5 * 5, 3, dtype=dtype)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc(F.relu(self.bn(self.conv(x))).flatten(1))


def _trained_torch_net() -> _TorchNet:
    torch.manual_seed(0)
    net = _TorchNet()
    net.train()
    with torch.no_grad():
        for _ in range(3):  # running statistics and num_batches_tracked move off their defaults
            net(torch.randn(6, 2, 5, 5) * 2 + 1)
    return net.eval()


def test_loads_a_safetensors_torch_checkpoint_with_torch_names(tmp_path: Path) -> None:
    net = _trained_torch_net()
    path = tmp_path / "net.safetensors"
    safetensors.torch.save_file(net.state_dict(), str(path))
    ours = _Net()
    assert ours.load_state_dict(safetensors.numpy.load_file(str(path))) == ([], [])
    assert int(ours.bn.num_batches_tracked.item()) == 3
    x = np.random.default_rng(1).standard_normal((4, 2, 5, 5)).astype(np.float32)
    want = net(torch.from_numpy(x)).detach().numpy()
    got = ours.eval()(Tensor.from_data(x)).to_numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_loads_a_bfloat16_checkpoint_with_renamed_keys(tmp_path: Path) -> None:
    net = _trained_torch_net()
    seq = torch.nn.Sequential(net)  # names become "0.conv.weight"...
    path = tmp_path / "bf16.safetensors"
    safetensors.torch.save_file({k: v.to(torch.bfloat16) if v.is_floating_point() else v
                                 for k, v in seq.state_dict().items()}, str(path))
    state = nn.rename_keys(record.read_safetensors(path), {"0.": ""})
    assert state["conv.weight"].dtype is bp.bfloat16
    ours = _Net()
    ours.load_state_dict(state)
    assert ours.conv.weight.dtype is bp.float32
    want = seq.state_dict()["0.conv.weight"].to(torch.bfloat16).float().numpy()
    np.testing.assert_array_equal(ours.conv.weight.to_numpy(), want)


def test_rename_keys_by_prefix_or_function() -> None:
    state = {"module.0.weight": 1, "module.0.bias": 2, "module.2.weight": 3, "step": 4}
    assert nn.rename_keys(state, {"module.0.": "fc1.", "module.2.": "fc2."}) == {
        "fc1.weight": 1, "fc1.bias": 2, "fc2.weight": 3, "step": 4}
    assert nn.rename_keys(state, lambda k: None if k == "step" else k.removeprefix("module.")) \
        == {"0.weight": 1, "0.bias": 2, "2.weight": 3}
    with pytest.raises(nn.StateDictError, match="two entries are renamed to 'w'"):
        nn.rename_keys({"a.w": 1, "b.w": 2}, lambda k: "w")
