"""The interpreter's bookkeeping in ``OnnxModule``: intermediates are dropped after their last
reader (peak memory stays that of a few values, not of the whole graph), a value an ``If``
branch reads from the enclosing scope lives until the ``If`` has run, and Constant nodes'
outputs, kept across calls, give the same results call after call (and under Autodiff)."""

from __future__ import annotations

import tracemalloc

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import burnpy as bp
from burnpy.onnx import load
from burnpy_cpu import CpuBackend


def _model(nodes: list[onnx.NodeProto], inputs: dict[str, int], outputs: list[str],
           initializers: dict[str, np.ndarray] | None = None) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(n, code, None) for n, code in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
        [numpy_helper.from_array(v, k) for k, v in (initializers or {}).items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_intermediates_are_freed_after_their_last_reader() -> None:
    steps = 24
    nodes = [helper.make_node("Add" if i % 2 else "Mul", [f"h{i}", "c"], [f"h{i + 1}"])
             for i in range(steps)]
    module = load(_model(nodes, {"h0": TensorProto.FLOAT}, [f"h{steps}"],
                         {"c": np.array(1.0001, np.float32)}), backend=CpuBackend)
    x = np.random.default_rng(0).standard_normal(256 * 1024).astype(np.float32)  # 1 MB
    module(bp.tensor(x))  # the first call prepares the nodes
    tracemalloc.start()
    try:
        got = module(bp.tensor(x)).to_numpy()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    expected = x.copy()
    for i in range(steps):
        expected = expected + np.float32(1.0001) if i % 2 else expected * np.float32(1.0001)
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    assert peak < 6 * x.nbytes, peak  # all 24 intermediates held would be 24 MB


def test_a_branch_reads_an_outer_value_after_its_last_explicit_reader() -> None:
    # "a" is read by the Relu before the If and, by name, inside both branches.
    branch = {
        name: helper.make_graph([helper.make_node(op, ["a", "r"], [f"{name}_out"])], name, [],
                                [helper.make_tensor_value_info(f"{name}_out",
                                                               TensorProto.FLOAT, None)])
        for name, op in (("then", "Add"), ("else", "Sub"))}
    nodes = [helper.make_node("Neg", ["x"], ["a"]),
             helper.make_node("Relu", ["a"], ["r"]),
             helper.make_node("If", ["flag"], ["y"], then_branch=branch["then"],
                              else_branch=branch["else"])]
    module = load(_model(nodes, {"x": TensorProto.FLOAT, "flag": TensorProto.BOOL}, ["y"]),
                  backend=CpuBackend)
    x = np.array([-2.0, 0.5, 3.0], np.float32)
    a = -x
    for flag, expected in ((True, a + np.maximum(a, 0)), (False, a - np.maximum(a, 0))):
        got = module(bp.tensor(x), bp.tensor(np.array(flag))).to_numpy()
        np.testing.assert_array_equal(got, expected)


def test_kept_constants_give_the_same_results_and_gradients_each_call() -> None:
    scale = helper.make_tensor("scale", TensorProto.FLOAT, [3], [0.5, -1.0, 2.0])
    nodes = [helper.make_node("Constant", [], ["s"], value=scale),
             helper.make_node("Mul", ["x", "s"], ["m"]),
             helper.make_node("MatMul", ["m", "w"], ["y"])]
    w = np.random.default_rng(1).standard_normal((3, 2)).astype(np.float32)
    backend = bp.Autodiff(CpuBackend)
    module = load(_model(nodes, {"x": TensorProto.FLOAT}, ["y"], {"w": w}), backend=backend)
    x = np.array([[1.0, 2.0, 3.0]], np.float32)
    s = np.array([0.5, -1.0, 2.0], np.float32)
    for _ in range(3):
        out = module(bp.tensor(x, backend=backend))
        np.testing.assert_allclose(out.to_numpy(), (x * s) @ w, rtol=1e-6)
        grad = getattr(module, module.parameter_names["w"]).grad(out.sum().backward())
        assert grad is not None
        np.testing.assert_allclose(grad.to_numpy(), np.repeat((x * s).T, 2, axis=1),
                                   rtol=1e-6)
