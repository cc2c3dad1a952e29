"""``python -m burnpy.onnx``: the summary of a model (inputs with symbolic dims, outputs, op
counts, support at the model's opset, subgraphs included) and ``--check`` against
onnxruntime (its exit statuses: 0 ok, 1 mismatch, 2 cannot run)."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from burnpy.onnx import __main__ as cli

pytest.importorskip("onnxruntime")


def _mlp(path: Path, *, external: bool = False) -> Path:
    """x[batch, 4] -> Relu(x @ W + b) -> Softmax, with an If (Identity and Neg branches)."""
    rng = np.random.default_rng(0)
    weights = [numpy_helper.from_array(rng.standard_normal((4, 3)).astype(np.float32), "W"),
               numpy_helper.from_array(rng.standard_normal(3).astype(np.float32), "b")]
    then_branch = helper.make_graph(
        [helper.make_node("Identity", ["r"], ["t"])], "then", [],
        [helper.make_tensor_value_info("t", TensorProto.FLOAT, None)])
    else_branch = helper.make_graph(
        [helper.make_node("Neg", ["r"], ["e"])], "else", [],
        [helper.make_tensor_value_info("e", TensorProto.FLOAT, None)])
    nodes = [helper.make_node("MatMul", ["x", "W"], ["m"]),
             helper.make_node("Add", ["m", "b"], ["a"]),
             helper.make_node("Relu", ["a"], ["r"]),
             helper.make_node("If", ["flag"], ["s"], then_branch=then_branch,
                              else_branch=else_branch),
             helper.make_node("Softmax", ["s"], ["y"], axis=-1),
             helper.make_node("Shape", ["y"], ["shape"])]
    graph = helper.make_graph(
        nodes, "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4]),
         helper.make_tensor_value_info("flag", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3]),
         helper.make_tensor_value_info("shape", TensorProto.INT64, [2])], weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, str(path), save_as_external_data=external, size_threshold=0,
              location=f"{path.stem}.data")
    return path


def _run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    status = cli.main(list(argv), out)
    return status, out.getvalue()


def test_summary_lists_inputs_outputs_and_op_support(tmp_path: Path) -> None:
    status, text = _run(str(_mlp(tmp_path / "mlp.onnx")))
    assert status == 0
    assert re.search(r"^  x     float32\[batch, 4\]$", text, re.M), text
    assert re.search(r"^  flag  bool\[\]$", text, re.M), text
    assert re.search(r"^  shape  int64\[2\]$", text, re.M), text
    assert "opsets: ai.onnx 17" in text
    assert "initializers: 2 (60 bytes)" in text  # 12 + 3 float32
    assert "ops: 8 nodes, 8 op types" in text  # the If's branches are counted
    assert re.search(r"^  Neg +1  yes \(since 6\)$", text, re.M), text
    assert re.search(r"^  Softmax +1  yes \(since 13\)$", text, re.M), text
    assert "burnpy supports 8 of 8 op types" in text


def test_unsupported_op_and_attribute_are_named_and_check_refuses(tmp_path: Path) -> None:
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"]),
         helper.make_node("Frobnicate", ["r"], ["f"], domain="com.example"),
         helper.make_node("Relu", ["f"], ["y"], alpha=0.5)],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.example", 1)])
    path = tmp_path / "odd.onnx"
    onnx.save(model, str(path))
    status, text = _run(str(path))
    assert status == 0
    assert re.search(r"^  Relu +2  no \(attribute 'alpha' is not supported\)$", text, re.M)
    assert re.search(r"^  com.example.Frobnicate +1  no$", text, re.M), text
    assert "burnpy supports 0 of 2 op types: missing Relu, com.example.Frobnicate" in text
    status, text = _run(str(path), "--check")
    assert status == cli.CANNOT_RUN and "cannot run the model" in text


def test_check_matches_onnxruntime_and_dim_sets_symbolic_sizes(tmp_path: Path) -> None:
    status, text = _run(str(_mlp(tmp_path / "mlp.onnx")), "--check", "--dim", "batch=5")
    assert status == 0, text
    assert "check inputs (seed 0): x float32[5, 4], flag bool[]" in text
    assert re.search(r"^  y: float32\[5, 3\]  max abs diff \S+  max rel diff \S+  ok$", text,
                     re.M), text
    assert re.search(r"^  shape: int64\[2\]  max abs diff 0  max rel diff 0  ok$", text,
                     re.M), text


def test_check_reads_external_data(tmp_path: Path) -> None:
    path = _mlp(tmp_path / "ext.onnx", external=True)
    assert (tmp_path / "ext.data").stat().st_size == 60
    status, text = _run(str(path), "--check")
    assert status == 0, text
    assert "initializers: 2 (60 bytes, 2 in external data)" in text


def test_check_reports_a_mismatch_with_its_differences(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    real = cli.run_burnpy

    def off_by_a_bit(path: Path, feeds: dict[str, np.ndarray],
                     backend: str | None) -> list[np.ndarray]:
        outs = real(path, feeds, backend)
        outs[0] = outs[0] + np.float32(2e-3) * np.abs(outs[0]) + np.float32(1e-4)
        return outs

    monkeypatch.setattr(cli, "run_burnpy", off_by_a_bit)
    status, text = _run(str(_mlp(tmp_path / "mlp.onnx")), "--check")
    assert status == cli.MISMATCH, text
    line = next(s for s in text.splitlines() if s.startswith("  y:"))
    assert line.endswith("MISMATCH")
    gap = float(re.search(r"max abs diff (\S+)", line).group(1))  # type: ignore[union-attr]
    assert 1e-4 < gap < 3e-3


def test_differences_against_numpy() -> None:
    expected = np.array([1.0, -2.0, 0.0, np.nan, np.inf], np.float32)
    got = np.array([1.0005, -2.0, 1e-6, np.nan, np.inf], np.float32)
    gap, relative, match = cli.differences(got, expected)
    assert gap == pytest.approx(5e-4, rel=1e-3) and relative == pytest.approx(5e-4, rel=1e-3)
    assert match
    assert not cli.differences(got + 0.01, expected)[2]
    assert not cli.differences(got.astype(np.float64), expected)[2]  # dtype differs
    assert not cli.differences(got[:4], expected[:4].reshape(2, 2))[2]  # shape differs


def test_module_runs_as_a_command(tmp_path: Path) -> None:
    path = _mlp(tmp_path / "mlp.onnx")
    done = subprocess.run([sys.executable, "-m", "burnpy.onnx", str(path), "--check"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "burnpy supports 8 of 8 op types" in done.stdout
    bad = subprocess.run([sys.executable, "-m", "burnpy.onnx", str(path), "--dim", "batch"],
                         capture_output=True, text=True, timeout=120, check=False)
    assert bad.returncode == 2 and "--dim wants NAME=SIZE" in bad.stderr
