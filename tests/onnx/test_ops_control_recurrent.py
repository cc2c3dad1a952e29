"""burnpy.onnx's recurrent and control-flow ops beyond the node suite: torch-exported LSTM and
GRU against torch and onnxruntime, the attributes the suite leaves out (sequence_lens, clip,
activations with parameters, input_forget) against onnxruntime, and gradients through LSTM
and Loop under Autodiff against torch autograd."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import onnx
import onnxruntime as ort  # type: ignore[import-untyped]
import torch
from onnx import TensorProto, helper, numpy_helper

import burnpy as bp
from burnpy import Autodiff, Tensor
from burnpy.onnx import UnsupportedOnnxError
from burnpy_cpu import CpuBackend

AD = Autodiff(CpuBackend)
_F32, _F64, _I32, _I64 = TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.INT32, \
    TensorProto.INT64


def _ort(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    return [np.asarray(o) for o in session.run(None, feeds)]


def _ours(model: onnx.ModelProto, feeds: list[np.ndarray], backend: type = CpuBackend
          ) -> list[np.ndarray]:
    module = bp.onnx.load(model, backend=backend)
    out = module(*[Tensor.from_data(a, backend=backend) for a in feeds])
    outs = [out] if isinstance(out, Tensor) else list(out)
    return [o.to_numpy() for o in outs]


def _export(module: torch.nn.Module, x: torch.Tensor, names: list[str], path: Path
            ) -> onnx.ModelProto:
    """``module`` exported by torch's TorchScript-based exporter (offline, ``dynamo=False``)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, (x,), str(path), dynamo=False, input_names=["x"],
                          output_names=names, opset_version=17)
    return onnx.load(str(path))


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_torch_exported_recurrent_matches_torch_and_onnxruntime(kind: str,
                                                               tmp_path: Path) -> None:
    torch.manual_seed(0)
    module = getattr(torch.nn, kind)(3, 4, num_layers=2, bidirectional=True, batch_first=True)
    x = torch.randn(2, 5, 3)
    with torch.no_grad():
        expected = module(x)
    flat = [expected[0], *(expected[1] if kind == "LSTM" else (expected[1],))]
    names = ["y", "h", "c"][:len(flat)]
    model = _export(module, x, names, tmp_path / "model.onnx")
    assert kind in {n.op_type for n in model.graph.node}
    ours = _ours(model, [x.numpy()])
    theirs = _ort(model, {"x": x.numpy()})
    for got, ref, name in zip(ours, theirs, names, strict=True):
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6, err_msg=name)
    for got, ref, name in zip(ours, flat, names, strict=True):
        np.testing.assert_allclose(got, ref.numpy(), rtol=1e-5, atol=1e-6, err_msg=name)


def _recurrent_model(op: str, gates: int, direction: str, attrs: dict[str, Any],
                     seq: int, batch: int, size: int, hidden: int, *, layout: int = 0,
                     peepholes: bool = False, dtype: int = _F32) -> onnx.ModelProto:
    """A one-node RNN/GRU/LSTM model taking X, W, R, B, sequence_lens, initial_h (and
    initial_c, P for LSTM) as graph inputs."""
    dirs = 2 if direction == "bidirectional" else 1
    x_shape = [batch, seq, size] if layout else [seq, batch, size]
    h_shape = [batch, dirs, hidden] if layout else [dirs, batch, hidden]
    inputs = [helper.make_tensor_value_info("X", dtype, x_shape),
              helper.make_tensor_value_info("W", dtype, [dirs, gates * hidden, size]),
              helper.make_tensor_value_info("R", dtype, [dirs, gates * hidden, hidden]),
              helper.make_tensor_value_info("B", dtype, [dirs, 2 * gates * hidden]),
              helper.make_tensor_value_info("L", _I32, [batch]),
              helper.make_tensor_value_info("H0", dtype, h_shape)]
    names = ["X", "W", "R", "B", "L", "H0"]
    outputs = ["Y", "Y_h"]
    if op == "LSTM":
        inputs.append(helper.make_tensor_value_info("C0", dtype, h_shape))
        names.append("C0")
        outputs.append("Y_c")
        if peepholes:
            inputs.append(helper.make_tensor_value_info("P", dtype, [dirs, 3 * hidden]))
            names.append("P")
    node = helper.make_node(op, names, outputs, direction=direction, hidden_size=hidden,
                            layout=layout, **attrs)
    graph = helper.make_graph([node], op.lower(), inputs,
                              [helper.make_tensor_value_info(o, dtype, None) for o in outputs])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])


_RECURRENT_CASES: dict[str, tuple[str, int, str, dict[str, Any], int, bool]] = {
    "rnn_lens_bidirectional_leaky": ("RNN", 1, "bidirectional", {
        "activations": ["LeakyRelu", "Tanh"], "activation_alpha": [0.2]}, 0, False),
    "rnn_reverse_layout1_clip": ("RNN", 1, "reverse", {"clip": 0.7}, 1, False),
    "gru_lens_reverse_hardsigmoid": ("GRU", 3, "reverse", {
        "activations": ["HardSigmoid", "Tanh"], "activation_alpha": [0.3],
        "activation_beta": [0.4]}, 0, False),
    "gru_bidirectional_linear_before_reset_layout1": ("GRU", 3, "bidirectional", {
        "linear_before_reset": 1}, 1, False),
    "lstm_lens_bidirectional_peepholes": ("LSTM", 4, "bidirectional", {}, 0, True),
    "lstm_reverse_input_forget_clip": ("LSTM", 4, "reverse", {
        "input_forget": 1, "clip": 0.5}, 0, True),
    "lstm_layout1_scaled_tanh": ("LSTM", 4, "forward", {
        "activations": ["Sigmoid", "ScaledTanh", "Tanh"], "activation_alpha": [1.5],
        "activation_beta": [0.7]}, 1, False),
}


@pytest.mark.parametrize("name", sorted(_RECURRENT_CASES))
def test_recurrent_attributes_match_onnxruntime(name: str) -> None:
    op, gates, direction, attrs, layout, peep = _RECURRENT_CASES[name]
    seq, batch, size, hidden = 5, 3, 4, 3
    dirs = 2 if direction == "bidirectional" else 1
    model = _recurrent_model(op, gates, direction, attrs, seq, batch, size, hidden,
                             layout=layout, peepholes=peep)
    rng = np.random.default_rng(7)
    lens = np.array([5, 2, 4] if "lens" in name else [seq] * batch, dtype=np.int32)
    x_shape = (batch, seq, size) if layout else (seq, batch, size)
    h_shape = (batch, dirs, hidden) if layout else (dirs, batch, hidden)
    feeds: dict[str, np.ndarray] = {"X": rng.standard_normal(x_shape), "W": rng.standard_normal(
        (dirs, gates * hidden, size)) * 0.6, "R": rng.standard_normal(
        (dirs, gates * hidden, hidden)) * 0.6, "B": rng.standard_normal(
        (dirs, 2 * gates * hidden)) * 0.3, "L": lens, "H0": rng.standard_normal(h_shape)}
    if op == "LSTM":
        feeds["C0"] = rng.standard_normal(h_shape)
        if peep:
            feeds["P"] = rng.standard_normal((dirs, 3 * hidden)) * 0.5
    feeds = {k: v if v.dtype == np.int32 else v.astype(np.float32) for k, v in feeds.items()}
    ours = _ours(model, list(feeds.values()))
    if layout:  # onnxruntime runs time-major only: run that model, then swap the axes back
        time_major = _recurrent_model(op, gates, direction, attrs, seq, batch, size, hidden,
                                      peepholes=peep)
        swapped = {k: v.transpose(1, 0, 2) if k in ("X", "H0", "C0") else v
                   for k, v in feeds.items()}
        y, *states = _ort(time_major, swapped)
        theirs = [y.transpose(2, 0, 1, 3), *(s.transpose(1, 0, 2) for s in states)]
    else:
        theirs = _ort(model, feeds)
    for i, (got, ref) in enumerate(zip(ours, theirs, strict=True)):
        assert got.shape == ref.shape and got.dtype == ref.dtype, i
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6, err_msg=f"output {i}")


def _to_torch_gates(w: np.ndarray, hidden: int) -> np.ndarray:
    """ONNX's LSTM gate blocks (i, o, f, c) in torch's order (i, f, g, o)."""
    i, o, f, c = (w[k * hidden:(k + 1) * hidden] for k in range(4))
    return np.concatenate([i, f, c, o])


def _from_torch_gates(w: np.ndarray, hidden: int) -> np.ndarray:
    i, f, c, o = (w[k * hidden:(k + 1) * hidden] for k in range(4))
    return np.concatenate([i, o, f, c])


def test_lstm_gradients_under_autodiff_match_torch() -> None:
    seq, batch, size, hidden = 4, 2, 3, 5
    rng = np.random.default_rng(3)
    w = rng.standard_normal((1, 4 * hidden, size)) * 0.5
    r = rng.standard_normal((1, 4 * hidden, hidden)) * 0.5
    b = rng.standard_normal((1, 8 * hidden)) * 0.2
    x = rng.standard_normal((seq, batch, size))
    weights = rng.standard_normal((seq, 1, batch, hidden))
    node = helper.make_node("LSTM", ["X", "W", "R", "B"], ["Y"], hidden_size=hidden)
    graph = helper.make_graph(
        [node], "lstm", [helper.make_tensor_value_info("X", _F64, [seq, batch, size])],
        [helper.make_tensor_value_info("Y", _F64, None)],
        [numpy_helper.from_array(a, n) for a, n in ((w, "W"), (r, "R"), (b, "B"))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])

    module = bp.onnx.load(model, backend=AD)
    xs = Tensor.from_data(x, backend=AD).require_grad()
    y = module(xs)
    assert isinstance(y, Tensor)
    grads = (y * Tensor.from_data(weights, backend=AD)).sum().backward()

    lstm = torch.nn.LSTM(size, hidden).double()
    params = dict(lstm.named_parameters())
    with torch.no_grad():
        for name, value in (("weight_ih_l0", w[0]), ("weight_hh_l0", r[0]),
                            ("bias_ih_l0", b[0, :4 * hidden]), ("bias_hh_l0", b[0, 4 * hidden:])):
            params[name].copy_(torch.from_numpy(_to_torch_gates(value, hidden)))
    tx = torch.from_numpy(x).requires_grad_()
    ty, _ = lstm(tx)
    np.testing.assert_allclose(y.to_numpy()[:, 0], ty.detach().numpy(), rtol=1e-12)
    (ty * torch.from_numpy(weights[:, 0])).sum().backward()

    def grad_of(graph_name: str) -> np.ndarray:
        g = getattr(module, module.parameter_names[graph_name]).grad(grads)
        assert g is not None, graph_name
        return g.to_numpy()

    def torch_grad(name: str) -> np.ndarray:
        g = params[name].grad
        assert g is not None, name
        return _from_torch_gates(g.numpy(), hidden)

    gx = xs.grad(grads)
    assert gx is not None and tx.grad is not None
    np.testing.assert_allclose(gx.to_numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    gb = grad_of("B")[0]
    for ours, theirs in ((grad_of("W")[0], torch_grad("weight_ih_l0")),
                         (grad_of("R")[0], torch_grad("weight_hh_l0")),
                         (gb[:4 * hidden], torch_grad("bias_ih_l0")),
                         (gb[4 * hidden:], torch_grad("bias_hh_l0"))):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)


def _loop_model(trips: int) -> onnx.ModelProto:
    """``h <- tanh(h @ M) + x`` for ``trips`` iterations, M from the outer scope (an
    initializer), scanning out each h: the loop-carried value, the scan output and an
    outer-scope read in one body."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("MatMul", ["h_in", "M"], ["hm"]),
         helper.make_node("Tanh", ["hm"], ["t"]),
         helper.make_node("Add", ["t", "x"], ["h_out"]),
         helper.make_node("Identity", ["h_out"], ["scan"])],
        "body",
        [helper.make_tensor_value_info("i", _I64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_in", _F64, [2, 3])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_out", _F64, [2, 3]),
         helper.make_tensor_value_info("scan", _F64, [2, 3])])
    rng = np.random.default_rng(5)
    graph = helper.make_graph(
        [helper.make_node("Loop", ["trips", "", "h0"], ["h", "hs"], body=body)], "loop",
        [helper.make_tensor_value_info("h0", _F64, [2, 3]),
         helper.make_tensor_value_info("x", _F64, [2, 3])],
        [helper.make_tensor_value_info("h", _F64, None),
         helper.make_tensor_value_info("hs", _F64, None)],
        [numpy_helper.from_array(rng.standard_normal((3, 3)), "M"),
         numpy_helper.from_array(np.array(trips, dtype=np.int64), "trips")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)])


def test_loop_forward_and_gradients_match_onnxruntime_and_torch() -> None:
    model = _loop_model(4)
    rng = np.random.default_rng(6)
    h0, x = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    theirs = _ort(model, {"h0": h0, "x": x})
    ours = _ours(model, [h0, x])
    for got, ref in zip(ours, theirs, strict=True):
        assert got.shape == ref.shape
        np.testing.assert_allclose(got, ref, rtol=1e-12)

    module = bp.onnx.load(model, backend=AD)
    th0, tx = (Tensor.from_data(a, backend=AD).require_grad() for a in (h0, x))
    h, hs = module(th0, tx)
    weights = rng.standard_normal((4, 2, 3))
    grads = (h.sum() + (hs * Tensor.from_data(weights, backend=AD)).sum()).backward()
    m = torch.from_numpy(numpy_helper.to_array(model.graph.initializer[0]).copy())
    m.requires_grad_()
    t_h, t_x = (torch.from_numpy(a).requires_grad_() for a in (h0, x))
    cur, outs = t_h, []
    for _ in range(4):
        cur = torch.tanh(cur @ m) + t_x
        outs.append(cur)
    (cur.sum() + (torch.stack(outs) * torch.from_numpy(weights)).sum()).backward()
    for mine, leaf in ((th0, t_h), (tx, t_x),
                       (getattr(module, module.parameter_names["M"]), m)):
        g = mine.grad(grads)
        assert g is not None and leaf.grad is not None
        np.testing.assert_allclose(g.to_numpy(), leaf.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_loop_without_iterations_gives_declared_empty_scan_output() -> None:
    h0 = np.ones((2, 3))
    h, hs = _ours(_loop_model(0), [h0, h0])
    np.testing.assert_array_equal(h, h0)
    assert hs.shape == (0, 2, 3) and hs.dtype == np.float64


def test_scan_axes_and_directions_match_onnxruntime() -> None:
    """A Scan (opset 16) reading its first input along axis 1 in reverse, its second along
    axis 0, writing one output reversed along axis 1."""
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "a"], ["s1"]),
         helper.make_node("Mul", ["s1", "b"], ["s_out"]),
         helper.make_node("Sub", ["s_out", "a"], ["y1"]),
         helper.make_node("Identity", ["s_out"], ["y2"])],
        "body",
        [helper.make_tensor_value_info(n, _F32, [3]) for n in ("s_in", "a", "b")],
        [helper.make_tensor_value_info(n, _F32, [3]) for n in ("s_out", "y1", "y2")])
    node = helper.make_node("Scan", ["s0", "A", "B"], ["s", "Y1", "Y2"], body=body,
                            num_scan_inputs=2, scan_input_axes=[1, 0],
                            scan_input_directions=[1, 0], scan_output_axes=[-1, 0],
                            scan_output_directions=[1, 0])
    graph = helper.make_graph(
        [node], "scan",
        [helper.make_tensor_value_info("s0", _F32, [3]),
         helper.make_tensor_value_info("A", _F32, [3, 4]),
         helper.make_tensor_value_info("B", _F32, [4, 3])],
        [helper.make_tensor_value_info(n, _F32, None) for n in ("s", "Y1", "Y2")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)])
    rng = np.random.default_rng(8)
    feeds = {"s0": rng.standard_normal(3), "A": rng.standard_normal((3, 4)),
             "B": rng.standard_normal((4, 3))}
    feeds = {k: v.astype(np.float32) for k, v in feeds.items()}
    theirs = _ort(model, feeds)
    ours = _ours(model, list(feeds.values()))
    for got, ref in zip(ours, theirs, strict=True):
        assert got.shape == ref.shape
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


def test_if_branches_read_the_outer_scope() -> None:
    then = helper.make_graph([helper.make_node("Add", ["x", "y"], ["out"])], "then", [],
                             [helper.make_tensor_value_info("out", _F32, None)])
    other = helper.make_graph([helper.make_node("Mul", ["x", "y"], ["out2"])], "else", [],
                              [helper.make_tensor_value_info("out2", _F32, None)])
    graph = helper.make_graph(
        [helper.make_node("If", ["c"], ["z"], then_branch=then, else_branch=other)], "if",
        [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x", _F32, [2]),
         helper.make_tensor_value_info("y", _F32, [2])],
        [helper.make_tensor_value_info("z", _F32, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)])
    x, y = np.array([1.0, 2.0], np.float32), np.array([3.0, 5.0], np.float32)
    (z_then,) = _ours(model, [np.array(True), x, y])
    (z_else,) = _ours(model, [np.array(False), x, y])
    np.testing.assert_array_equal(z_then, x + y)
    np.testing.assert_array_equal(z_else, x * y)


def test_an_unknown_activation_is_unsupported_naming_the_node() -> None:
    model = _recurrent_model("RNN", 1, "forward", {"activations": ["Gelu"]}, 2, 1, 2, 2)
    feeds = [np.zeros((2, 1, 2), np.float32), np.zeros((1, 2, 2), np.float32),
             np.zeros((1, 2, 2), np.float32), np.zeros((1, 4), np.float32),
             np.array([2], np.int32), np.zeros((1, 1, 2), np.float32)]
    with pytest.raises(UnsupportedOnnxError, match=r"RNN node .*opset 14.*activations.*Gelu"):
        _ours(model, feeds)


def test_attention_gqa_with_float_mask_matches_torch_with_gradients() -> None:
    """4-d Attention with two KV heads for four query heads and a float mask, forward and
    gradients (Q, K, V and the mask) against torch's scaled_dot_product_attention."""
    rng = np.random.default_rng(9)
    q, k, v = (rng.standard_normal(s) for s in ((2, 4, 3, 8), (2, 2, 5, 8), (2, 2, 5, 6)))
    mask = rng.standard_normal((3, 5))
    node = helper.make_node("Attention", ["Q", "K", "V", "M"], ["Y"])
    graph = helper.make_graph(
        [node], "attention",
        [helper.make_tensor_value_info(n, _F64, list(a.shape))
         for n, a in (("Q", q), ("K", k), ("V", v), ("M", mask))],
        [helper.make_tensor_value_info("Y", _F64, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    module = bp.onnx.load(model, backend=AD)
    ours = [Tensor.from_data(a, backend=AD).require_grad() for a in (q, k, v, mask)]
    y = module(*ours)
    assert isinstance(y, Tensor)
    weights = rng.standard_normal((2, 4, 3, 6))
    grads = (y * Tensor.from_data(weights, backend=AD)).sum().backward()
    theirs = [torch.from_numpy(a).requires_grad_() for a in (q, k, v, mask)]
    ty = torch.nn.functional.scaled_dot_product_attention(
        theirs[0], theirs[1], theirs[2], attn_mask=theirs[3], enable_gqa=True)
    np.testing.assert_allclose(y.to_numpy(), ty.detach().numpy(), rtol=1e-12)
    (ty * torch.from_numpy(weights)).sum().backward()
    for mine, ref in zip(ours, theirs, strict=True):
        g = mine.grad(grads)
        assert g is not None and ref.grad is not None
        np.testing.assert_allclose(g.to_numpy(), ref.grad.numpy(), rtol=1e-10, atol=1e-12)
