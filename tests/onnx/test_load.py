"""``bp.onnx.load``: models built with ``onnx.helper`` (parameters and buffers named after
the graph, external data, opset dispatch) and the errors an unsupported model raises."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import burnpy as bp
from burnpy.onnx import OnnxError, UnsupportedOnnxError, load
from burnpy.onnx.registry import lookup
from burnpy_cpu import CpuBackend


def _model(nodes: list[onnx.NodeProto], inputs: list[str], outputs: list[str],
           initializers: dict[str, np.ndarray] | None = None, opset: int = 17) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in inputs],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
        [numpy_helper.from_array(v, k) for k, v in (initializers or {}).items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _linear(rng: np.random.Generator) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    init: dict[str, np.ndarray] = {
        "layer.0/weight:0": rng.standard_normal((4, 3)).astype(np.float32),
        "bias": rng.standard_normal(3).astype(np.float32),
        "shape": np.array([-1, 3], dtype=np.int64)}
    nodes = [helper.make_node("MatMul", ["x", "layer.0/weight:0"], ["h"], name="mm"),
             helper.make_node("Add", ["h", "bias"], ["a"]),
             helper.make_node("Reshape", ["a", "shape"], ["y"])]
    return _model(nodes, ["x"], ["y"], init), init


def test_initializers_are_named_parameters_and_integer_ones_buffers() -> None:
    model, init = _linear(np.random.default_rng(0))
    module = load(model, backend=CpuBackend)
    assert module.parameter_names == {"layer.0/weight:0": "layer_0_weight_0", "bias": "bias",
                                      "shape": "shape"}
    assert sorted(name for name, _ in module.named_parameters()) == ["bias", "layer_0_weight_0"]
    assert [name for name, _ in module.named_buffers()] == ["shape"]
    x = np.random.default_rng(1).standard_normal((2, 4)).astype(np.float32)
    np.testing.assert_allclose(module(bp.tensor(x)).to_numpy(),
                               x @ init["layer.0/weight:0"] + init["bias"], rtol=1e-6)


def test_external_data_loads_from_the_model_folder_or_base_dir(tmp_path: Path) -> None:
    model, init = _linear(np.random.default_rng(0))
    path = tmp_path / "model.onnx"
    onnx.save_model(model, str(path), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="weights.bin", size_threshold=0)
    assert (tmp_path / "weights.bin").exists()
    x = np.ones((1, 4), np.float32)
    expected = x @ init["layer.0/weight:0"] + init["bias"]
    np.testing.assert_allclose(load(path)(bp.tensor(x)).to_numpy(), expected, rtol=1e-6)
    data = path.read_bytes()
    with pytest.raises(OnnxError, match="base_dir"):
        load(data)
    np.testing.assert_allclose(load(data, base_dir=tmp_path)(bp.tensor(x)).to_numpy(),
                               expected, rtol=1e-6)


def test_the_implementation_is_the_newest_not_above_the_models_opset() -> None:
    for opset, since in ((11, 1), (12, 1), (13, 13), (21, 13)):
        impl = lookup("", "Softmax", opset)
        assert impl is not None and impl.since == since
    assert lookup("", "LayerNormalization", 16) is None


def test_an_unknown_operator_names_the_node_op_and_opset() -> None:
    model = _model([helper.make_node("NoSuchOp", ["x"], ["y"], name="n1")], ["x"], ["y"])
    with pytest.raises(UnsupportedOnnxError, match=r"NoSuchOp node 'n1' \(opset 17\)"):
        load(model)(bp.tensor(np.ones(2, np.float32)))


def test_an_attribute_the_op_does_not_read_is_refused_not_ignored() -> None:
    node = helper.make_node("Relu", ["x"], ["y"], name="r", bogus=3)
    with pytest.raises(UnsupportedOnnxError, match=r"Relu node 'r' .*attribute 'bogus'"):
        load(_model([node], ["x"], ["y"]))(bp.tensor(np.ones(2, np.float32)))


def test_an_unsupported_attribute_value_names_the_attribute() -> None:
    node = helper.make_node("Gelu", ["x"], ["y"], name="g", approximate="erf2")
    with pytest.raises(UnsupportedOnnxError, match="attribute 'approximate'"):
        load(_model([node], ["x"], ["y"], opset=20))(bp.tensor(np.ones(2, np.float32)))


def test_inputs_are_checked() -> None:
    module = load(_model([helper.make_node("Add", ["a", "b"], ["y"])], ["a", "b"], ["y"]))
    assert module.input_names == ["a", "b"] and module.output_names == ["y"]
    with pytest.raises(OnnxError, match="takes 2 inputs"):
        module(bp.tensor(np.ones(2, np.float32)))


def test_several_outputs_come_back_as_a_tuple_in_graph_order() -> None:
    nodes = [helper.make_node("Neg", ["x"], ["n"]), helper.make_node("Abs", ["x"], ["a"])]
    x = np.array([-1.0, 2.0], np.float32)
    a, n = load(_model(nodes, ["x"], ["a", "n"]))(bp.tensor(x))
    np.testing.assert_array_equal(a.to_numpy(), np.abs(x))
    np.testing.assert_array_equal(n.to_numpy(), -x)
