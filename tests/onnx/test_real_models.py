"""Real models round-tripped: a ResNet-style CNN, a BERT-style encoder and a GPT-style decoder
(both with attention masks) and a bidirectional two-layer LSTM, built in torch, exported with
``torch.onnx.export`` (the TorchScript exporter, opset 17, dynamic batch and sequence axes)
and loaded with ``bp.onnx.load``.

- float32 outputs equal onnxruntime's at two batch sizes (and two sequence lengths);
- exported in float64 and run under ``Autodiff(CpuBackend)``, the gradient of every
  initializer that is a torch parameter equals torch's for the original model, and a few SGD
  (momentum) and Adam steps land on torch's parameters. Float64 makes the comparison tight
  (1e-9 relative): the two frameworks sum in different orders, and only round-off may differ.
"""

from __future__ import annotations

import math
import tempfile
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import burnpy as bp
from burnpy import optim
from burnpy.onnx import OnnxModule, load
from burnpy.tensor import Tensor
from burnpy_cpu import CpuBackend

ort = pytest.importorskip("onnxruntime")

torch.set_num_threads(1)

VOCAB, MAX_LEN = 50, 16


class BasicBlock(torch.nn.Module):
    """ResNet's basic block: two 3x3 convs with batch norm, a 1x1 projection when it strides."""

    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(cout)
        self.conv2 = torch.nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(cout)
        self.down: torch.nn.Module | None = None
        if stride != 1 or cin != cout:
            self.down = torch.nn.Sequential(torch.nn.Conv2d(cin, cout, 1, stride, bias=False),
                                            torch.nn.BatchNorm2d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
        return F.relu(y + (x if self.down is None else self.down(x)))


class ResNet(torch.nn.Module):
    """A stem (conv, batch norm, max pool), two basic blocks, global pooling, a linear head."""

    def __init__(self, width: int = 8, classes: int = 10) -> None:
        super().__init__()
        self.stem = torch.nn.Conv2d(3, width, 3, 1, 1, bias=False)
        self.bn = torch.nn.BatchNorm2d(width)
        self.layer1 = BasicBlock(width, width, 1)
        self.layer2 = BasicBlock(width, 2 * width, 2)
        self.fc = torch.nn.Linear(2 * width, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.max_pool2d(F.relu(self.bn(self.stem(x))), 3, 2, 1)
        x = self.layer2(self.layer1(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class SelfAttention(torch.nn.Module):
    """Multi-head attention from one fused QKV projection, with an additive mask."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.out = torch.nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2)
                   for z in self.qkv(x).split(d, dim=-1))
        scores = q @ k.transpose(-2, -1) / math.sqrt(d // self.heads) + bias
        return self.out((scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, d))


class TransformerLayer(torch.nn.Module):
    """Attention and a GELU MLP, post-norm (BERT, erf GELU) or pre-norm (GPT, tanh GELU)."""

    def __init__(self, dim: int, heads: int, pre_norm: bool) -> None:
        super().__init__()
        self.pre_norm = pre_norm
        self.attn = SelfAttention(dim, heads)
        self.ln1 = torch.nn.LayerNorm(dim)
        self.ln2 = torch.nn.LayerNorm(dim)
        self.fc1 = torch.nn.Linear(dim, 4 * dim)
        self.fc2 = torch.nn.Linear(4 * dim, dim)

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        if self.pre_norm:
            x = x + self.attn(self.ln1(x), bias)
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))
        x = self.ln1(x + self.attn(x, bias))
        return self.ln2(x + self.fc2(F.gelu(self.fc1(x))))


class Bert(torch.nn.Module):
    """Token, position and type embeddings, post-norm layers under a padding mask, a pooler
    and a classifier: returns the hidden states and the logits."""

    def __init__(self, dim: int = 16, heads: int = 2, layers: int = 2, classes: int = 3) -> None:
        super().__init__()
        self.tok = torch.nn.Embedding(VOCAB, dim)
        self.pos = torch.nn.Embedding(MAX_LEN, dim)
        self.typ = torch.nn.Embedding(2, dim)
        self.ln = torch.nn.LayerNorm(dim)
        self.layers = torch.nn.ModuleList(TransformerLayer(dim, heads, False)
                                          for _ in range(layers))
        self.pool = torch.nn.Linear(dim, dim)
        self.cls = torch.nn.Linear(dim, classes)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        positions = torch.arange(ids.shape[1]).unsqueeze(0)
        x = self.ln(self.tok(ids) + self.pos(positions) + self.typ(torch.zeros_like(ids)))
        bias = (1.0 - mask[:, None, None, :].to(x.dtype)) * -10000.0
        for layer in self.layers:
            x = layer(x, bias)
        return x, self.cls(torch.tanh(self.pool(x[:, 0])))


class GPT(torch.nn.Module):
    """Token and position embeddings, pre-norm layers under a causal mask and a padding mask
    (the dtype's lowest value where attention is not allowed), logits from the tied
    embedding."""

    causal: torch.Tensor

    def __init__(self, dim: int = 16, heads: int = 2, layers: int = 2) -> None:
        super().__init__()
        self.tok = torch.nn.Embedding(VOCAB, dim)
        self.pos = torch.nn.Embedding(MAX_LEN, dim)
        self.layers = torch.nn.ModuleList(TransformerLayer(dim, heads, True)
                                          for _ in range(layers))
        self.ln = torch.nn.LayerNorm(dim)
        self.register_buffer("causal", torch.tril(torch.ones(MAX_LEN, MAX_LEN, dtype=torch.bool)),
                             persistent=False)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        t = ids.shape[1]
        x = self.tok(ids) + self.pos(torch.arange(t))
        allowed = self.causal[:t, :t][None, None] & mask[:, None, None, :].bool()
        bias = torch.zeros(allowed.shape, dtype=x.dtype).masked_fill(
            ~allowed, torch.finfo(x.dtype).min)
        for layer in self.layers:
            x = layer(x, bias)
        return self.ln(x) @ self.tok.weight.t()


class LSTMTagger(torch.nn.Module):
    """A two-layer bidirectional LSTM (ONNX's LSTM op) and a per-step linear head."""

    def __init__(self, features: int = 5, hidden: int = 8, out: int = 3) -> None:
        super().__init__()
        self.lstm = torch.nn.LSTM(features, hidden, num_layers=2, batch_first=True,
                                  bidirectional=True)
        self.head = torch.nn.Linear(2 * hidden, out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.lstm(x)[0])


@dataclass(frozen=True)
class Case:
    """A model, how to make its inputs for a batch size and sequence length, and the names
    and dynamic axes it is exported with."""

    build: Callable[[], torch.nn.Module]
    inputs: Callable[[np.random.Generator, int, int], list[np.ndarray]]
    input_names: tuple[str, ...]
    dynamic: dict[str, dict[int, str]]


def _tokens(rng: np.random.Generator, batch: int, seq: int) -> list[np.ndarray]:
    """Token ids and a right-padded attention mask (row 0 full, the others shorter)."""
    ids = rng.integers(0, VOCAB, (batch, seq)).astype(np.int64)
    mask = np.ones((batch, seq), np.int64)
    for row in range(1, batch):
        mask[row, max(1, seq - 2 * row):] = 0
    return [ids, mask]


_TOKENS_AXES = {"ids": {0: "batch", 1: "seq"}, "mask": {0: "batch", 1: "seq"}}
CASES = {
    "resnet": Case(ResNet, lambda rng, b, s: [rng.standard_normal((b, 3, s, s))],
                   ("x",), {"x": {0: "batch", 2: "height", 3: "width"}}),
    "bert": Case(Bert, _tokens, ("ids", "mask"), _TOKENS_AXES),
    "gpt": Case(GPT, _tokens, ("ids", "mask"), _TOKENS_AXES),
    "lstm": Case(LSTMTagger, lambda rng, b, s: [rng.standard_normal((b, s, 5))],
                 ("x",), {"x": {0: "batch", 1: "seq"}}),
}


@cache
def _model(name: str) -> torch.nn.Module:
    """The case's model in eval mode, its normalization layers' parameters and statistics
    randomized: their defaults (ones, zeros) would make the exporter merge equal initializers
    into one, and the normalization trivial."""
    torch.manual_seed(0)
    model = CASES[name].build().eval()
    with torch.no_grad():
        for layer in model.modules():
            if isinstance(layer, torch.nn.BatchNorm2d | torch.nn.LayerNorm):
                layer.weight.uniform_(0.5, 1.5)
                layer.bias.uniform_(-0.5, 0.5)
            if isinstance(layer, torch.nn.BatchNorm2d):
                assert layer.running_mean is not None and layer.running_var is not None
                layer.running_mean.uniform_(-0.5, 0.5)
                layer.running_var.uniform_(0.5, 1.5)
    return model


def _cast(model: torch.nn.Module, dtype: torch.dtype) -> torch.nn.Module:
    """A copy of ``model`` with its float tensors in ``dtype``."""
    copy = type(model)()
    copy.load_state_dict(model.state_dict())
    return copy.to(dtype).eval()


@cache
def _onnx(name: str, dtype: torch.dtype) -> bytes:
    """The case's model exported at ``dtype`` with dynamic axes (constants not folded, so
    every initializer is a torch parameter or buffer, under its name)."""
    case = CASES[name]
    model = _cast(_model(name), dtype)
    example = [_torch(a, dtype) for a in case.inputs(np.random.default_rng(0), 2, 6)]
    with tempfile.TemporaryDirectory() as folder, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = Path(folder) / f"{name}.onnx"
        torch.onnx.export(model, tuple(example), path, dynamo=False, opset_version=17,
                          do_constant_folding=False, input_names=list(case.input_names),
                          dynamic_axes=case.dynamic, training=torch.onnx.TrainingMode.EVAL)
        return path.read_bytes()


def _torch(array: np.ndarray, dtype: torch.dtype) -> torch.Tensor:
    tensor = torch.from_numpy(array)
    return tensor.to(dtype) if tensor.is_floating_point() else tensor


def _as_float(arrays: list[np.ndarray], dtype: type[np.floating]) -> list[np.ndarray]:
    return [a.astype(dtype) if a.dtype.kind == "f" else a for a in arrays]


def _outputs(result: Tensor | tuple[Tensor | None, ...]) -> list[Tensor]:
    outs = list(result) if isinstance(result, tuple) else [result]
    assert all(o is not None for o in outs)
    return outs  # type: ignore[return-value]


@pytest.mark.parametrize("name", sorted(CASES))
def test_float32_outputs_equal_onnxruntime_at_two_batch_sizes(name: str) -> None:
    data = _onnx(name, torch.float32)
    module = load(data, backend=CpuBackend)
    assert isinstance(module, OnnxModule)
    assert module.input_names == list(CASES[name].input_names)
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(1)
    for batch, seq in ((2, 6), (3, 9)):
        inputs = _as_float(CASES[name].inputs(rng, batch, seq), np.float32)
        expected = session.run(None, dict(zip(module.input_names, inputs, strict=True)))
        got = _outputs(module(*[bp.tensor(a) for a in inputs]))
        assert len(got) == len(expected)
        for out, ref in zip(got, expected, strict=True):
            value = out.to_numpy()
            assert value.dtype == np.float32 and value.shape == ref.shape
            # 1e-5 relative to each output's scale: near-zero elements are sums whose
            # round-off is that of their largest terms, not of their own size.
            np.testing.assert_allclose(value, ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())


def _loss_torch(outs: list[torch.Tensor], targets: list[np.ndarray]) -> torch.Tensor:
    return sum((((o - torch.from_numpy(t)) ** 2).mean() for o, t in zip(outs, targets,
                                                                           strict=True)),
               torch.zeros((), dtype=torch.float64))


def _loss_burnpy(outs: list[Tensor], targets: list[np.ndarray], backend: type) -> Tensor:
    total = None
    for out, target in zip(outs, targets, strict=True):
        term = ((out - bp.tensor(target, backend=backend)) ** 2).mean()
        total = term if total is None else total + term
    assert total is not None
    return total


def _float64_pair(name: str) -> tuple[torch.nn.Module, OnnxModule, dict[str, str], type]:
    """The float64 torch model, its ONNX import under ``Autodiff(CpuBackend)`` and, for each
    torch parameter, the attribute of the initializer holding it."""
    model = _cast(_model(name), torch.float64)
    backend = bp.Autodiff(CpuBackend)
    module = load(_onnx(name, torch.float64), backend=backend)
    params = dict(model.named_parameters())
    mapping = {key: module.parameter_names[key] for key in params
               if key in module.parameter_names}
    assert set(mapping) == set(params), sorted(set(params) - set(mapping))
    return model, module, mapping, backend


def _step_data(name: str, step: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Inputs and regression targets (float64) for fine-tuning step ``step``."""
    rng = np.random.default_rng(10 + step)
    inputs = _as_float(CASES[name].inputs(rng, 3, 7), np.float64)
    with torch.no_grad():
        outs = _model(name)(*[_torch(a, torch.float32) for a in inputs])
    shapes = [o.shape for o in (outs if isinstance(outs, tuple) else (outs,))]
    return inputs, [rng.standard_normal(tuple(s)) for s in shapes]


@pytest.mark.parametrize("name", sorted(CASES))
def test_float64_gradients_equal_torchs(name: str) -> None:
    model, module, mapping, backend = _float64_pair(name)
    inputs, targets = _step_data(name, 0)
    outs = model(*[_torch(a, torch.float64) for a in inputs])
    _loss_torch(list(outs) if isinstance(outs, tuple) else [outs], targets).backward()
    loss = _loss_burnpy(_outputs(module(*[bp.tensor(a, backend=backend) for a in inputs])),
                        targets, backend)
    grads = loss.backward()
    for key, param in model.named_parameters():
        grad = getattr(module, mapping[key]).grad(grads)
        assert grad is not None and param.grad is not None, key
        np.testing.assert_allclose(grad.to_numpy(), param.grad.numpy(), rtol=1e-9,
                                   atol=1e-12, err_msg=key)


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_float64_fine_tuning_steps_land_on_torchs(name: str, optimizer: str) -> None:
    model, module, mapping, backend = _float64_pair(name)
    torch_params = dict(model.named_parameters())
    names = [mapping[key] for key in torch_params]  # not batch norm's running statistics
    if optimizer == "sgd":
        ours: optim.Optimizer = optim.SGD(names, lr=0.05, momentum=0.9)
        theirs: torch.optim.Optimizer = torch.optim.SGD(model.parameters(), lr=0.05,
                                                        momentum=0.9)
    else:
        ours = optim.Adam(names, lr=1e-2)
        theirs = torch.optim.Adam(model.parameters(), lr=1e-2)
    for step in range(3):
        inputs, targets = _step_data(name, step)
        theirs.zero_grad()
        outs = model(*[_torch(a, torch.float64) for a in inputs])
        _loss_torch(list(outs) if isinstance(outs, tuple) else [outs], targets).backward()
        theirs.step()
        loss = _loss_burnpy(_outputs(module(*[bp.tensor(a, backend=backend) for a in inputs])),
                            targets, backend)
        ours.step(module, loss.backward())
    # Parameters are of order 0.1 to 1. Adam divides by each gradient's own size, so where
    # a gradient is near zero, its round-off (1e-16 of the terms it sums) is amplified into
    # the update (a few 1e-11 here, at lr 1e-2): 1e-9 absolute, 1e-9 of the parameters'
    # size, bounds it; SGD's steps land within 1e-12.
    for key, param in torch_params.items():
        np.testing.assert_allclose(getattr(module, mapping[key]).to_numpy(),
                                   param.detach().numpy(), rtol=1e-9, atol=1e-9, err_msg=key)
