"""``Capture(B)`` records protocol op calls; ``Graph.replay`` runs them again on B, bitwise
equal to eager execution, for inference (MLP, conv net, GPT) and for a training step's
forward and backward under ``Autodiff(Capture(B))``; the MLP's numbers are checked against
torch as well."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest
import torch

import burnpy as bp
from burnpy import nn
from burnpy.backend.errors import InvalidArgumentError
from burnpy.capture import CONSTANT, INPUT, NODE, Capture, CaptureBackend, Graph
from burnpy.examples.digits import DigitsCNN
from burnpy.examples.gpt_model import GPT, GPTConfig
from burnpy_cpu import CpuBackend

C = Capture(CpuBackend)
A = bp.Autodiff(C)


def _floats(shape: tuple[int, ...], seed: int, backend: Any = C) -> bp.Tensor:
    data = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return bp.Tensor.from_numpy(data, backend=backend)


def _ints(shape: tuple[int, ...], high: int, seed: int, backend: Any = C) -> bp.Tensor:
    data = np.random.default_rng(seed).integers(0, high, shape).astype(np.int64)
    return bp.Tensor.from_numpy(data, backend=backend)


def _record(module: nn.Module, *inputs: bp.Tensor) -> tuple[Graph, bp.Tensor]:
    with C.recording([x.primitive for x in inputs]) as graph:
        out = module(*inputs)
        C.set_outputs(graph, [out.primitive])
    return graph, out


def _mlp(backend: Any) -> nn.Module:
    return nn.Sequential(nn.Linear(6, 16, backend=backend), nn.GELU(),
                         nn.Linear(16, 16, backend=backend), nn.Tanh(),
                         nn.Linear(16, 3, backend=backend))


def test_the_class_is_cached_and_keeps_b_primitives() -> None:
    assert Capture(CpuBackend) is C and Capture[CpuBackend] is C
    assert issubclass(C, CaptureBackend) and C.FloatTensorPrimitive is np.ndarray
    assert C.name() == "capture<cpu>" and A.name() == "autodiff<capture<cpu>>"
    with pytest.raises(InvalidArgumentError, match="Capture: expected a backend class"):
        Capture(int)  # type: ignore[arg-type]


def test_mlp_replays_bitwise_and_matches_torch() -> None:
    model = _mlp(C)
    x = _floats((5, 6), 0)
    graph, out = _record(model, x)
    assert [n.op for n in graph.nodes] == ["linear", "gelu", "linear", "float_tanh", "linear"]
    assert [graph.values[i].kind for i in graph.inputs] == [INPUT]
    assert len(graph.constants()) == 6  # three weights and three biases
    assert all(graph.values[i].kind == NODE for n in graph.nodes for i in n.outputs)
    assert graph.values[graph.outputs[0]].desc == ((5, 3), bp.float32)
    (replayed,) = graph.replay([x.primitive])
    assert np.array_equal(replayed, out.primitive)

    # new inputs of the same shape: bitwise eager, and torch's numbers
    x2 = _floats((5, 6), 1)
    (again,) = graph.replay([x2.primitive])
    assert np.array_equal(again, model(x2).primitive)
    torch_model = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.GELU(),
                                      torch.nn.Linear(16, 16), torch.nn.Tanh(),
                                      torch.nn.Linear(16, 3))
    torch_model.load_state_dict({k: torch.from_numpy(v.to_numpy().copy())
                                 for k, v in model.state_dict().items()})
    expected = torch_model(torch.from_numpy(x2.to_numpy().copy())).detach().numpy()
    np.testing.assert_allclose(again, expected, rtol=1e-5, atol=1e-6)


def test_conv_net_replays_bitwise() -> None:
    model = DigitsCNN(backend=C).eval()
    x = _floats((3, 1, 8, 8), 2)
    graph, out = _record(model, x)
    ops = {n.op for n in graph.nodes}
    assert {"conv", "max_pool", "linear", "relu"} <= ops
    assert np.array_equal(graph.replay([x.primitive])[0], out.primitive)
    x2 = _floats((3, 1, 8, 8), 3)
    assert np.array_equal(graph.replay([x2.primitive])[0], model(x2).primitive)


def test_gpt_replays_bitwise() -> None:
    model = GPT(GPTConfig(vocab_size=13, block_size=8, n_layer=2, n_head=2, n_embd=8),
                backend=C)
    idx = _ints((2, 6), 13, 4)
    graph, out = _record(model, idx)
    assert {"embedding", "layer_norm", "attention", "linear"} <= {
        n.op for n in graph.nodes}
    assert np.array_equal(graph.replay([idx.primitive])[0], out.primitive)
    idx2 = _ints((2, 6), 13, 5)
    assert np.array_equal(graph.replay([idx2.primitive])[0], model(idx2).primitive)


def _training_step(model: nn.Module, loss_of: Any, *inputs: bp.Tensor
                   ) -> tuple[Graph, list[np.ndarray]]:
    """Record ``loss_of(*inputs)`` and its backward; outputs: the loss and each gradient."""
    params = model.parameters()
    with C.recording([A.inner(x.primitive) if x.kind == "float" else x.primitive
                      for x in inputs]) as graph:
        loss = loss_of(*inputs)
        grads = loss.backward()
        outputs = [A.inner(loss.primitive)]
        for p in params:
            g = p.grad(grads)
            assert g is not None
            outputs.append(g.primitive)
        C.set_outputs(graph, outputs)
    return graph, outputs


def test_autodiff_over_capture_records_a_training_step() -> None:
    model = GPT(GPTConfig(vocab_size=11, block_size=8, n_layer=1, n_head=2, n_embd=8),
                backend=A)
    idx, targets = _ints((2, 5), 11, 6, A), _ints((2, 5), 11, 7, A)
    graph, eager = _training_step(model, model.loss, idx, targets)
    ops = [n.op for n in graph.nodes]
    assert "cross_entropy" in ops and "cross_entropy_backward" in ops
    assert "attention_backward" in ops and "layer_norm_backward" in ops
    assert ops.index("cross_entropy") < ops.index("cross_entropy_backward")
    replayed = graph.replay([idx.primitive, targets.primitive])
    assert len(replayed) == len(eager) == len(model.parameters()) + 1
    for r, e in zip(replayed, eager, strict=True):
        assert np.array_equal(r, e)
    # other tokens: the replayed gradients are the eager step's on them, bit for bit
    idx2, targets2 = _ints((2, 5), 11, 8, A), _ints((2, 5), 11, 9, A)
    _, eager2 = _training_step(model, model.loss, idx2, targets2)
    for r, e in zip(graph.replay([idx2.primitive, targets2.primitive]), eager2, strict=True):
        assert np.array_equal(r, e)


def test_replayed_mlp_gradients_match_torch() -> None:
    model = _mlp(A)
    x, y = _floats((4, 6), 10, A), _floats((4, 3), 11, A)

    def loss_of(x: bp.Tensor, y: bp.Tensor) -> bp.Tensor:
        return ((model(x) - y) ** 2).mean()

    graph, eager = _training_step(model, loss_of, x, y)
    replayed = graph.replay([A.inner(x.primitive), A.inner(y.primitive)])
    for r, e in zip(replayed, eager, strict=True):
        assert np.array_equal(r, e)
    torch_model = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.GELU(),
                                      torch.nn.Linear(16, 16), torch.nn.Tanh(),
                                      torch.nn.Linear(16, 3))
    torch_model.load_state_dict({k: torch.from_numpy(v.to_numpy().copy())
                                 for k, v in model.state_dict().items()})
    tx, ty = (torch.from_numpy(t.to_numpy().copy()) for t in (x, y))
    loss = ((torch_model(tx) - ty) ** 2).mean()
    loss.backward()
    np.testing.assert_allclose(replayed[0], loss.item(), rtol=1e-6)
    for r, p in zip(replayed[1:], torch_model.parameters(), strict=True):
        assert p.grad is not None
        np.testing.assert_allclose(r, p.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_values_are_inputs_constants_or_node_outputs() -> None:
    x = _floats((2, 3), 12)
    w = _floats((3, 3), 13)
    with C.recording([x.primitive]) as graph:
        host = bp.Tensor.from_numpy(np.ones((2, 3), np.float32), backend=C)
        y = (x @ w + host).sum()
        float(y.item())
        C.set_outputs(graph, [y.primitive])
    kinds = [v.kind for v in graph.values]
    assert kinds[0] == INPUT
    assert kinds.count(CONSTANT) == 2  # w (met first when read) and the host data
    constants = graph.constants()
    assert any(c.data is w.primitive for c in constants)
    assert graph.host_reads and graph.host_reads[-1][1] == graph.outputs[0]
    np.testing.assert_allclose(graph.replay([x.primitive])[0],
                               (x.to_numpy() @ w.to_numpy() + 1).sum(), rtol=1e-6)
    assert "float_matmul" in repr(graph) and repr(graph.nodes[0]).startswith("%")


def test_nothing_is_recorded_outside_the_block_or_from_another_thread() -> None:
    x = _floats((2, 2), 14)
    before = x + x
    with C.recording([x.primitive]) as graph:
        worker = threading.Thread(target=lambda: x * x)
        worker.start()
        worker.join()
        y = x - before
        C.set_outputs(graph, [y.primitive])
    _ = x * 3.0
    assert [n.op for n in graph.nodes] == ["float_sub"]
    assert C._state.recording is None


def test_bad_uses_are_clear_errors() -> None:
    x = _floats((2, 2), 15)
    with (C.recording([x.primitive]) as graph,
          pytest.raises(InvalidArgumentError, match="already active"), C.recording()):
        pass
    with pytest.raises(InvalidArgumentError, match="inside the graph's recording"):
        C.set_outputs(graph, [x.primitive])
    with pytest.raises(InvalidArgumentError, match="takes 1 input"):
        graph.replay([])
    with pytest.raises(InvalidArgumentError, match="primitives, got int"), C.recording([3]):
        pass


def test_record_runs_a_function_of_primitives() -> None:
    x = _floats((3,), 16)
    graph, result = C.record(lambda p: C.float_exp(C.float_neg(p)), x.primitive)
    assert [n.op for n in graph.nodes] == ["float_neg", "float_exp"]
    np.testing.assert_allclose(result, np.exp(-x.to_numpy()), rtol=1e-6)
    assert np.array_equal(graph.replay([x.primitive])[0], result)
