"""Module: parameter discovery, buffers, state dicts, moving between backends, valid()."""

from __future__ import annotations

import numpy as np
import pytest

import burnpy as bp
import burnpy.nn as nn
from burnpy import Tensor
from burnpy.autodiff import Autodiff
from burnpy_cpu import CpuBackend

AD = Autodiff(CpuBackend)


class Block(nn.Module):
    def __init__(self, backend: type | None = None) -> None:
        self.heads = [nn.Linear(3, 3, backend=backend), nn.Linear(3, 2, backend=backend)]
        self.extra = {"scale": nn.Linear(2, 2, bias=False, backend=backend)}
        self.gain = Tensor.ones((2,), backend=backend)
        self.register_buffer("steps", Tensor.zeros((), dtype=bp.int64, backend=backend))
        self.register_buffer("avg", Tensor.zeros((2,), backend=backend))
        self.label = "not a tensor"
        self._cache = Tensor.zeros((5,), backend=backend)

    def forward(self, x: Tensor) -> Tensor:
        for head in self.heads:
            x = head(x)
        return self.extra["scale"](x) * self.gain


def test_discovery_names_and_kinds() -> None:
    block = Block()
    assert [n for n, _ in block.named_parameters()] == [
        "heads.0.weight", "heads.0.bias", "heads.1.weight", "heads.1.bias",
        "extra.scale.weight", "gain"]
    assert [n for n, _ in block.named_buffers()] == ["steps", "avg"]
    assert list(block.state_dict()) == [n for n, _ in block.named_parameters()] + [
        "steps", "avg"]
    assert block.num_params() == 12 + 8 + 4 + 2
    assert [n for n, _ in block.named_modules()] == ["", "heads.0", "heads.1", "extra.scale"]
    assert block.backend is CpuBackend


def test_tied_weights_are_one_parameter_and_stay_tied() -> None:
    enc, dec = nn.Linear(4, 4), nn.Linear(4, 4)
    dec.weight = enc.weight
    model = nn.Sequential(enc, dec)
    names = [n for n, _ in model.named_parameters()]
    assert names == ["0.weight", "0.bias", "1.bias"]
    model.to(dtype=bp.float64)
    assert model[0].weight is model[1].weight and model[0].weight.dtype is bp.float64


def test_autodiff_parameters_are_tracked_on_assignment_buffers_are_not() -> None:
    block = Block(backend=AD)
    assert all(p.is_require_grad() for p in block.parameters())
    assert not block.avg.is_require_grad()
    lin = nn.Linear(2, 2, backend=AD)
    lin.weight = Tensor.from_data(np.eye(2, dtype=np.float32), backend=AD)
    assert lin.weight.is_require_grad()
    with pytest.raises(bp.BurnpyError, match="does not track"):
        nn.Linear(2, 2).require_grad()


def test_to_backend_and_valid() -> None:
    block = Block()
    x = Tensor.from_data(np.ones((2, 3), dtype=np.float32))
    expected = block(x).to_numpy()
    assert block.to(AD) is block and block.backend is AD
    assert all(p.is_require_grad() for p in block.parameters())
    inference = block.valid()
    assert inference is not block and inference.backend is CpuBackend
    assert not inference.training and block.training
    assert block.backend is AD
    np.testing.assert_array_equal(inference(x).to_numpy(), expected)
    assert inference.heads[0] is not block.heads[0]
    assert inference.extra["scale"].weight.backend is CpuBackend
    with pytest.raises(bp.BackendMismatchError, match="not a decorator backend"):
        inference.valid()


def test_train_eval_modes_reach_children() -> None:
    model = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.5), nn.Sequential(nn.BatchNorm1d(2)))
    model.eval()
    assert all(not m.training for m in model.modules())
    model.train()
    assert all(m.training for m in model.modules())


def test_load_state_dict_checks_names_shapes_dtypes() -> None:
    lin = nn.Linear(3, 2)
    state = {k: v.to_numpy() * 0 + 1 for k, v in lin.state_dict().items()}
    lin.load_state_dict(state)
    assert float(lin.weight.sum()) == 6.0 and lin.weight.dtype is bp.float32
    with pytest.raises(nn.StateDictError, match="missing bias"):
        nn.Linear(3, 2).load_state_dict({"weight": state["weight"]})
    with pytest.raises(nn.StateDictError, match="unexpected extra"):
        nn.Linear(3, 2).load_state_dict({**state, "extra": state["bias"]})
    nn.Linear(3, 2).load_state_dict({"weight": state["weight"]}, strict=False)
    with pytest.raises(nn.StateDictError, match="'weight' has shape \\(2, 3\\) in the state "
                                                "but \\(2, 4\\)"):
        nn.Linear(4, 2).load_state_dict(state)
    with pytest.raises(nn.StateDictError, match=r"missing bias; unexpected b .*rename_keys"):
        nn.Linear(3, 2).load_state_dict({"weight": state["weight"], "b": state["bias"]})


def test_load_state_dict_keeps_tracking_on_autodiff() -> None:
    lin = nn.Linear(3, 2, backend=AD)
    lin.load_state_dict(nn.Linear(3, 2).state_dict())
    assert lin.weight.backend is AD and lin.weight.is_require_grad()


def test_repr_and_forward_required() -> None:
    text = repr(nn.Sequential(nn.Linear(2, 3), nn.ReLU()))
    assert "(0): Linear(in_features=2, out_features=3, bias=True)" in text
    with pytest.raises(bp.BurnpyError, match="does not define forward"):
        nn.Module()(1)


def test_initializers() -> None:
    w = nn.init.kaiming_uniform((64, 32, 3, 3), a=0.0, nonlinearity="relu")
    bound = np.sqrt(2.0) * np.sqrt(3.0 / (32 * 9))
    assert np.abs(w.to_numpy()).max() <= bound and np.abs(w.to_numpy()).max() > 0.95 * bound
    n = nn.init.kaiming_normal((400, 300), mode="fan_out").to_numpy()
    assert abs(n.std() - np.sqrt(2 / (1 + 0.0)) / np.sqrt(400)) < 0.003
    x = nn.init.xavier_normal((300, 200), gain=2.0).to_numpy()
    assert abs(x.std() - 2.0 * np.sqrt(2 / 500)) < 0.003
    assert np.abs(nn.init.xavier_uniform((10, 20)).to_numpy()).max() <= np.sqrt(6 / 30)
    assert nn.init.zeros((2,)).tolist() == [0, 0] and nn.init.ones((1,)).tolist() == [1]
    assert nn.init.constant((2,), 3.5, dtype=bp.float64).tolist() == [3.5, 3.5]
    assert nn.init.uniform((3,), 2.0, 2.0).tolist() == [2.0] * 3
    assert nn.init.calculate_gain("tanh") == 5 / 3
    with pytest.raises(bp.InvalidArgumentError, match="unknown nonlinearity"):
        nn.init.calculate_gain("swish")
    with pytest.raises(bp.ShapeError, match="at least 2 dims"):
        nn.init.xavier_uniform((3,))


def test_a_tied_weight_is_in_the_state_dict_under_each_name_and_saved_once(tmp_path) -> None:
    import torch

    class Tied(nn.Module):
        def __init__(self) -> None:
            self.emb = nn.Embedding(5, 3)
            self.out = nn.Linear(3, 5, bias=False)
            self.out.weight = self.emb.weight

    model = Tied()
    state = model.state_dict()
    assert list(state) == ["emb.weight", "out.weight"]
    assert state["emb.weight"] is state["out.weight"]

    twin = torch.nn.Module()
    twin.emb, twin.out = torch.nn.Embedding(5, 3), torch.nn.Linear(3, 5, bias=False)
    twin.out.weight = twin.emb.weight
    assert list(twin.state_dict()) == list(state)
    twin.load_state_dict({k: torch.from_numpy(v.to_numpy()) for k, v in state.items()})
    np.testing.assert_array_equal(twin.out.weight.detach().numpy(), state["out.weight"].to_numpy())

    path = model.save(tmp_path / "tied.safetensors")
    from safetensors.numpy import load_file

    assert list(load_file(str(path))) == ["emb.weight"]
    again = Tied().load(path)
    np.testing.assert_array_equal(again.out.weight.to_numpy(), state["emb.weight"].to_numpy())
    assert again.out.weight is again.emb.weight
