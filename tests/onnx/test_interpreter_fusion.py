"""The interpreter's fusions, seen in a Capture recording's ops: an Add that alone reads a
MatMul's product runs the pair as one linear op where the addend is a bias along the product's
columns (as the two ops otherwise), and the exporters' five-node erf GELU as one GELU op (only
with its exact constants, its intermediates read by nobody else). Results are checked in
float64 against NumPy and torch."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper

import burnpy as bp
from burnpy.capture import Capture
from burnpy.onnx import load
from burnpy.tensor import Tensor
from burnpy_cpu import CpuBackend


def _model(a_shape: list[int], b_shape: list[int], c_shape: list[int], bias_first: bool,
           product_out: bool) -> bytes:
    """``y = MatMul(a, b) + c`` (``c + product`` if ``bias_first``), the product also a
    graph output when ``product_out`` (then it is not fused)."""
    add_inputs = ["c", "p"] if bias_first else ["p", "c"]
    outputs = [helper.make_tensor_value_info("y", TensorProto.DOUBLE, ["y0"])]
    if product_out:
        outputs.append(helper.make_tensor_value_info("p", TensorProto.DOUBLE, ["p0"]))
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["a", "b"], ["p"]),
         helper.make_node("Add", add_inputs, ["y"])], "g",
        [helper.make_tensor_value_info(n, TensorProto.DOUBLE, s)
         for n, s in (("a", a_shape), ("b", b_shape), ("c", c_shape))], outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    return model.SerializeToString()


@pytest.mark.parametrize(("a_shape", "b_shape", "c_shape", "linear"), [
    ([2, 3, 5], [5, 4], [4], True),          # a stack times a matrix plus a bias
    ([3, 5], [5, 4], [4], True),             # a matrix times a matrix plus a bias
    ([2, 3, 5], [5, 4], [3, 4], False),      # the addend is no bias
    ([2, 3, 5], [2, 5, 4], [4], False),      # a batched product
    ([5], [5, 4], [4], False),               # a vector times a matrix
])
@pytest.mark.parametrize("bias_first", [False, True])
@pytest.mark.parametrize("product_out", [False, True])
def test_matmul_then_add_equals_numpy(a_shape: list[int], b_shape: list[int],
                                      c_shape: list[int], linear: bool, bias_first: bool,
                                      product_out: bool) -> None:
    backend = Capture(CpuBackend)
    module = load(_model(a_shape, b_shape, c_shape, bias_first, product_out), backend=backend)
    assert (1 if not product_out else 0) == len(module._interpreter().fused)
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(s) for s in (a_shape, b_shape, c_shape))
    with backend.recording() as graph:
        out = module(*(bp.tensor(v, backend=backend) for v in (a, b, c)))
    assert any(node.op == "linear" for node in graph.nodes) == (linear and not product_out)
    results = list(out) if isinstance(out, tuple) else [out]
    assert all(isinstance(r, Tensor) for r in results)
    np.testing.assert_allclose(results[0].to_numpy(), a @ b + c, rtol=1e-13, atol=1e-13)
    if product_out:
        np.testing.assert_allclose(results[1].to_numpy(), a @ b, rtol=1e-13, atol=1e-13)


def _gelu_model(half: float, x_read_elsewhere: bool) -> bytes:
    """The exporters' erf GELU ``a * (erf(a / sqrt(2)) + 1) * half``, the intermediate
    ``erf`` also a graph output when ``x_read_elsewhere`` (then not fused)."""
    def constant(name: str, value: float) -> onnx.NodeProto:
        return helper.make_node("Constant", [], [name], value=helper.make_tensor(
            name, TensorProto.DOUBLE, [], [value]))

    nodes = [constant("root2", 2.0 ** 0.5), constant("one", 1.0), constant("half", half),
             helper.make_node("Div", ["a", "root2"], ["d"]),
             helper.make_node("Erf", ["d"], ["e"]),
             helper.make_node("Add", ["one", "e"], ["s"]),
             helper.make_node("Mul", ["a", "s"], ["m"]),
             helper.make_node("Mul", ["m", "half"], ["y"])]
    outputs = [helper.make_tensor_value_info("y", TensorProto.DOUBLE, ["n"])]
    if x_read_elsewhere:
        outputs.append(helper.make_tensor_value_info("e", TensorProto.DOUBLE, ["n"]))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(
        "a", TensorProto.DOUBLE, ["n"])], outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    return model.SerializeToString()


@pytest.mark.parametrize(("half", "erf_out", "fused"), [
    (0.5, False, True), (0.6, False, False), (0.5, True, False)])
def test_the_erf_gelu_chain_runs_as_one_gelu_op(half: float, erf_out: bool,
                                                fused: bool) -> None:
    backend = Capture(CpuBackend)
    module = load(_gelu_model(half, erf_out), backend=backend)
    x = np.linspace(-6.0, 6.0, 101)
    with backend.recording() as graph:
        out = module(bp.tensor(x, backend=backend))
    assert any(node.op == "gelu" for node in graph.nodes) == fused
    y = (out[0] if isinstance(out, tuple) else out)
    assert isinstance(y, Tensor)
    expected = torch.nn.functional.gelu(torch.from_numpy(x)).numpy() * (half / 0.5)
    np.testing.assert_allclose(y.to_numpy(), expected, rtol=1e-12, atol=1e-14)
