"""``bp.compile`` of imported ONNX models: the ResNet-style CNN, the BERT-style encoder and the
GPT-style decoder of ``test_real_models`` (exported by torch with its shape arithmetic:
``Shape -> Gather -> Concat -> Reshape`` chains, a causal-mask buffer sliced by the sequence
length), loaded on ``Capture(CpuBackend)`` and ``Capture(Fusion(CpuBackend))``.

The interpreter folds the shape arithmetic on the host, so a recording reads no device value:
``fullgraph=True`` records one graph, later calls replay it (``cache_info``), and the replay
equals the eager import and onnxruntime. A second shape records a second graph.
"""

from __future__ import annotations

import copy

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper
from test_real_models import CASES, _as_float, _onnx, _outputs

import burnpy as bp
from burnpy.capture import Capture
from burnpy.fusion import Fusion
from burnpy.onnx import OnnxModule, load
from burnpy.tensor import Tensor
from burnpy_cpu import CpuBackend

ort = pytest.importorskip("onnxruntime")

MODELS = ["resnet", "bert", "gpt"]
BACKENDS = {"capture": Capture(CpuBackend), "capture_fusion": Capture(Fusion(CpuBackend))}


def _run(fn: object, inputs: list[np.ndarray], backend: type) -> list[np.ndarray]:
    assert callable(fn)
    return [o.to_numpy() for o in _outputs(fn(*[bp.tensor(a, backend=backend)
                                                for a in inputs]))]


@pytest.mark.parametrize("backend_name", sorted(BACKENDS))
@pytest.mark.parametrize("name", MODELS)
def test_a_compiled_import_replays_one_graph_equal_to_eager_and_onnxruntime(
        name: str, backend_name: str) -> None:
    backend = BACKENDS[backend_name]
    data = _onnx(name, torch.float32)
    module = load(data, backend=backend)
    assert isinstance(module, OnnxModule)
    eager = load(data, backend=CpuBackend)
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    compiled = bp.compile(module, fullgraph=True)
    rng = np.random.default_rng(2)
    shapes = [(2, 6), (3, 9)]
    for round_ in range(3):  # the first call of each shape records, the others replay
        for batch, seq in shapes:
            inputs = _as_float(CASES[name].inputs(rng, batch, seq), np.float32)
            expected = session.run(None, dict(zip(module.input_names, inputs, strict=True)))
            got = _run(compiled, inputs, backend)
            plain = _run(eager, inputs, CpuBackend)
            assert len(got) == len(expected) == len(plain)
            for out, ref, ours in zip(got, expected, plain, strict=True):
                assert out.dtype == np.float32 and out.shape == ref.shape
                scale = np.abs(ref).max()
                np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5 * scale)
                if backend_name == "capture":  # the replay runs eager's very ops
                    np.testing.assert_array_equal(out, ours)
                else:  # fused elementwise runs round once per kernel
                    np.testing.assert_allclose(out, ours, rtol=1e-5, atol=1e-6 * scale)
        info = compiled.cache_info()
        assert (info.recordings, info.replays, info.eager_signatures) == (
            len(shapes), round_ * len(shapes), 0)


def test_a_gather_index_out_of_range_raises_in_a_replay() -> None:
    """The bounds check of a token embedding's Gather stays in the compiled graph."""
    backend = BACKENDS["capture"]
    module = load(_onnx("bert", torch.float32), backend=backend)
    compiled = bp.compile(module, fullgraph=True)
    ids, mask = CASES["bert"].inputs(np.random.default_rng(3), 2, 6)
    for _ in range(2):
        compiled(bp.tensor(ids, backend=backend), bp.tensor(mask, backend=backend))
    assert compiled.cache_info().replays == 1
    ids[1, 2] = 10_000
    with pytest.raises(bp.BurnpyError, match="out of bounds"):
        compiled(bp.tensor(ids, backend=backend), bp.tensor(mask, backend=backend))


def _reshape_by_initializer() -> bytes:
    """A model reshaping ``x [2, 6]`` to the shape held by its int64 initializer ``shape``
    ([3, 4])."""
    graph = helper.make_graph(
        [helper.make_node("Reshape", ["x", "shape"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["rows", "cols"])],
        [numpy_helper.from_array(np.array([3, 4], np.int64), "shape")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    return model.SerializeToString()


def test_a_reassigned_integer_initializer_is_read_again_eagerly() -> None:
    """A shape-valued initializer is folded from its host copy while the module keeps its
    tensor; a new tensor assigned in its place is read again."""
    module = load(_reshape_by_initializer(), backend=CpuBackend)
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    out = module(bp.tensor(x))
    assert isinstance(out, Tensor) and out.shape == (3, 4)
    module.shape = bp.tensor(np.array([4, 3], np.int64))
    out = module(bp.tensor(x))
    assert isinstance(out, Tensor) and out.shape == (4, 3)
    np.testing.assert_array_equal(out.to_numpy(), x.reshape(4, 3))


@pytest.mark.parametrize("backend", BACKENDS.values(), ids=BACKENDS.keys())
def test_a_reassigned_integer_initializer_records_again_compiled(backend: type) -> None:
    """A compiled replay bakes in the shape folded from an integer initializer, so it keeps to
    that initializer's primitive: a new tensor assigned in its place (same shape, new
    values) is not replayed with the old reshape but read again."""
    module = load(_reshape_by_initializer(), backend=backend)
    compiled = bp.compile(module)
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    for _ in range(3):
        np.testing.assert_array_equal(compiled(bp.tensor(x, backend=backend)).to_numpy(),
                                      x.reshape(3, 4))
    assert compiled.cache_info().replays >= 1
    for shape in ([4, 3], [4, 3], [6, 2], [6, 2], [3, 4]):
        module.shape = bp.tensor(np.array(shape, np.int64), backend=backend)
        for _ in range(2):
            np.testing.assert_array_equal(
                compiled(bp.tensor(x, backend=backend)).to_numpy(), x.reshape(shape))


def test_a_copy_of_a_module_runs_with_an_interpreter_of_its_own() -> None:
    """The interpreter (its folds, uploads and caches) is kept beside the module, not among
    its attributes: a deep copy runs, builds its own and gives the original's outputs."""
    module = load(_onnx("gpt", torch.float32), backend=CpuBackend)
    inputs = _as_float(CASES["gpt"].inputs(np.random.default_rng(4), 2, 5), np.float32)
    before = _run(module, inputs, CpuBackend)
    twin = copy.deepcopy(module)
    assert twin._interpreter() is not module._interpreter()
    for ours, theirs in zip(_run(twin, inputs, CpuBackend), before, strict=True):
        np.testing.assert_array_equal(ours, theirs)
