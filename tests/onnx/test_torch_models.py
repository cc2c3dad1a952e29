"""Models built in torch, exported with ``torch.onnx.export`` (the TorchScript exporter,
which needs no extra package), loaded with ``bp.onnx.load``: outputs equal onnxruntime's,
and under ``Autodiff`` the gradients of every initializer equal torch's for the original
model, and one SGD step lands where torch's does."""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

import burnpy as bp
from burnpy import optim
from burnpy.onnx import OnnxModule, load
from burnpy_cpu import CpuBackend

ort = pytest.importorskip("onnxruntime")

torch.set_num_threads(1)


class SmallCNN(torch.nn.Module):
    """Conv, batch norm, pools, flatten, a linear head: the ops of a ResNet-style stem."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = torch.nn.BatchNorm2d(8)
        self.conv2 = torch.nn.Conv2d(8, 8, 3, stride=2, padding=1, bias=False)
        self.head = torch.nn.Linear(8, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.nn.functional.max_pool2d(torch.relu(self.bn1(self.conv1(x))), 2)
        y = torch.nn.functional.avg_pool2d(self.conv2(y), 2) + 0.5 * y[:, :, ::2, ::2]
        return self.head(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(y, 1), 1))


class SmallMLP(torch.nn.Module):
    """Linear, layer norm, GELU, a residual, softmax: a transformer block's elementwise ops."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(6, 16)
        self.norm = torch.nn.LayerNorm(16)
        self.fc2 = torch.nn.Linear(16, 16)
        self.out = torch.nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm(self.fc1(x))
        h = h + torch.nn.functional.gelu(self.fc2(h))
        return torch.softmax(self.out(torch.tanh(h)), dim=-1)


def _export(model: torch.nn.Module, example: torch.Tensor) -> bytes:
    with tempfile.TemporaryDirectory() as folder, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = Path(folder) / "model.onnx"
        torch.onnx.export(model, (example,), str(path), dynamo=False, opset_version=17,
                          do_constant_folding=False, input_names=["x"], output_names=["y"],
                          training=torch.onnx.TrainingMode.EVAL)
        return path.read_bytes()


CASES = {"cnn": (SmallCNN, (2, 3, 8, 8)), "mlp": (SmallMLP, (5, 6))}


def _build(name: str) -> tuple[torch.nn.Module, np.ndarray, bytes]:
    torch.manual_seed(0)
    model_cls, shape = CASES[name]
    model = model_cls().eval()
    for module in model.modules():
        if isinstance(module, torch.nn.BatchNorm2d):  # non-trivial running statistics
            assert module.running_mean is not None and module.running_var is not None
            module.running_mean.uniform_(-0.5, 0.5)
            module.running_var.uniform_(0.5, 1.5)
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    return model, x, _export(model, torch.from_numpy(x))


@pytest.mark.parametrize("name", sorted(CASES))
def test_outputs_equal_onnxruntime(name: str) -> None:
    _, x, data = _build(name)
    module = load(data, backend=CpuBackend)
    assert isinstance(module, OnnxModule) and module.input_names == ["x"]
    expected = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(
        None, {"x": x})[0]
    got = module(bp.tensor(x)).to_numpy()
    assert got.dtype == np.float32 and got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradients_and_one_sgd_step_equal_torchs(name: str) -> None:
    model, x, data = _build(name)
    backend = bp.Autodiff(CpuBackend)
    module = load(data, backend=backend)
    weights = np.random.default_rng(2).standard_normal(
        tuple(model(torch.from_numpy(x)).shape)).astype(np.float32)

    out = model(torch.from_numpy(x))
    (out * torch.from_numpy(weights)).sum().backward()
    loss = (module(bp.tensor(x, backend=backend)) * bp.tensor(weights, backend=backend)).sum()
    grads = loss.backward()

    torch_params = dict(model.named_parameters())
    compared = set()
    for graph_name, attr in module.parameter_names.items():
        if graph_name not in torch_params:
            continue
        grad, expected = getattr(module, attr).grad(grads), torch_params[graph_name].grad
        assert grad is not None and expected is not None, graph_name
        np.testing.assert_allclose(grad.to_numpy(), expected.numpy(),
                                   rtol=1e-4, atol=1e-5, err_msg=graph_name)
        compared.add(graph_name)
    assert compared == set(torch_params), sorted(set(torch_params) - compared)

    # One SGD step on both, then the same forward again.
    for graph_name, attr in module.parameter_names.items():
        if graph_name not in torch_params:  # torch's buffers (running statistics) stay
            getattr(module, attr).grad_remove(grads)
    optim.SGD(lr=0.1).step(module, grads)
    torch.optim.SGD(model.parameters(), lr=0.1).step()
    after = module(bp.tensor(x, backend=backend)).to_numpy()
    with torch.no_grad():
        np.testing.assert_allclose(after, model(torch.from_numpy(x)).numpy(), rtol=1e-4,
                                   atol=1e-5)
