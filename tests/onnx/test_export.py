"""``bp.onnx.export``: the digits CNN, the GPT example, a linalg function and the ``bp.models``
architectures written as ONNX, checked by ``onnx.checker`` (full check), run by onnxruntime
against burnpy's own outputs (1e-5 relative, float32) and NumPy's for the linalg, loaded back
with ``bp.onnx.load``, and run at other batch and sequence sizes with dynamic axes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest

import burnpy as bp
import burnpy.linalg as la
import burnpy.onnx
from burnpy import models, nn
from burnpy.examples.digits import DigitsCNN
from burnpy.examples.gpt_model import GPT, GPTConfig
from burnpy.nn import functional as F
from burnpy.onnx import OnnxExportError
from burnpy.onnx.export import TRANSLATIONS, Sym
from burnpy_cpu import CpuBackend

ort = pytest.importorskip("onnxruntime")

B = CpuBackend
RTOL = 1e-5


def _ids(batch: int, seq: int, seed: int = 0) -> bp.Tensor:
    data = np.random.default_rng(seed).integers(1, 50, (batch, seq)).astype(np.int64)
    return bp.Tensor.from_numpy(data, backend=B)


def _floats(shape: tuple[int, ...], seed: int = 0) -> bp.Tensor:
    data = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return bp.Tensor.from_numpy(data, backend=B)


def _outputs(result: Any) -> list[np.ndarray]:
    """burnpy's result as arrays, in the order export writes them."""
    if isinstance(result, bp.Tensor):
        return [result.to_numpy()]
    if isinstance(result, tuple | list):
        return [a for r in result for a in _outputs(r)]
    return [getattr(result, f).to_numpy() for f in vars(result)
            if isinstance(getattr(result, f), bp.Tensor)]


def _run(model: onnx.ModelProto, args: tuple[bp.Tensor, ...]) -> list[np.ndarray]:
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    feeds = {i.name: a.to_numpy() for i, a in zip(session.get_inputs(), args, strict=True)}
    return list(session.run(None, feeds))


def _close(got: list[np.ndarray], expected: list[np.ndarray]) -> None:
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g.shape == e.shape and g.dtype == e.dtype
        np.testing.assert_allclose(g, e, rtol=RTOL, atol=RTOL * float(np.abs(e).max()))


def _tiny_gpt2() -> nn.Module:
    return models.GPT2LMHeadModel(models.GPT2Config(vocab_size=50, n_positions=16, n_embd=8,
                                                    n_layer=2, n_head=2), backend=B)


def _tiny_llama() -> nn.Module:
    return models.LlamaForCausalLM(models.LlamaConfig(
        vocab_size=50, hidden_size=8, intermediate_size=16, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=16), backend=B)


def _tiny_bert() -> nn.Module:
    return models.BertModel(models.BertConfig(
        vocab_size=50, hidden_size=8, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=16, max_position_embeddings=16), backend=B)


def _gpt() -> nn.Module:
    return GPT(GPTConfig(vocab_size=50, block_size=16, n_layer=2, n_head=2, n_embd=8), backend=B)


def _bert_inputs(batch: int, seq: int) -> tuple[bp.Tensor, bp.Tensor]:
    mask = np.ones((batch, seq), np.int64)
    mask[0, seq - 1] = 0  # a padded position: the attention mask matters
    return _ids(batch, seq, batch * seq), bp.Tensor.from_numpy(mask, backend=B)


def test_digits_cnn_exports_with_named_parameters(tmp_path: Path) -> None:
    model = DigitsCNN(backend=B)
    x = _floats((3, 1, 8, 8))
    path = tmp_path / "digits.onnx"
    proto = bp.onnx.export(model, (x,), path, input_names=["images"],
                           output_names=["logits"])
    written = onnx.load(str(path))
    onnx.checker.check_model(written, full_check=True)
    assert [i.name for i in written.graph.input] == ["images"]
    assert [o.name for o in written.graph.output] == ["logits"]
    initializers = {i.name for i in written.graph.initializer}
    assert {"conv1.weight", "conv1.bias", "bn1.running_mean", "fc2.weight"} <= initializers
    assert {"Conv", "MaxPool", "Relu", "MatMul"} <= {n.op_type for n in written.graph.node}
    assert model.training  # put back as it was: export records in eval mode
    _close(_run(proto, (x,)), [model.eval()(x).to_numpy()])


def test_digits_cnn_with_a_dynamic_batch() -> None:
    model = DigitsCNN(backend=B).eval()
    proto = bp.onnx.export(model, (_floats((2, 1, 8, 8)),), None, input_names=["images"],
                           dynamic_axes={"images": {0: "batch"}})
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    assert proto.graph.output[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    for batch in (1, 5, 9):
        x = _floats((batch, 1, 8, 8), batch)
        _close(_run(proto, (x,)), [model(x).to_numpy()])


CASES: dict[str, tuple[Callable[[], nn.Module], Callable[[int, int], tuple[bp.Tensor, ...]],
                       list[str]]] = {
    "gpt_example": (_gpt, lambda b, t: (_ids(b, t, b * t),), ["input_ids"]),
    "gpt2": (_tiny_gpt2, lambda b, t: (_ids(b, t, b * t),), ["input_ids"]),
    "llama": (_tiny_llama, lambda b, t: (_ids(b, t, b * t),), ["input_ids"]),
    "bert": (_tiny_bert, _bert_inputs, ["input_ids", "attention_mask"]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_language_models_export_and_run_at_other_sizes(case: str) -> None:
    build, inputs, names = CASES[case]
    model = build().eval()
    axes = {name: {0: "batch", 1: "seq"} for name in names}
    proto = bp.onnx.export(model, inputs(2, 5), None, input_names=names, dynamic_axes=axes)
    onnx.checker.check_model(proto, full_check=True)
    for batch, seq in ((2, 5), (3, 7), (1, 3), (4, 2)):
        args = inputs(batch, seq)
        _close(_run(proto, args), _outputs(model(*args)))


@pytest.mark.parametrize("case", list(CASES))
def test_round_trip_through_bp_onnx_load(case: str) -> None:
    build, inputs, _ = CASES[case]
    model = build().eval()
    args = inputs(2, 6)
    loaded = bp.onnx.load(bp.onnx.export(model, args, None), backend=B)
    result = loaded(*args)
    _close(_outputs(result), _outputs(model(*args)))


def test_output_names_follow_the_models_fields() -> None:
    model = _tiny_bert().eval()
    proto = bp.onnx.export(model, _bert_inputs(2, 4), None)
    assert [o.name for o in proto.graph.output] == ["last_hidden_state", "pooler_output"]


def _linalg(a: bp.Tensor, b: bp.Tensor) -> tuple[bp.Tensor, bp.Tensor, bp.Tensor]:
    return la.solve(a, b), la.inv(a), la.det(a)


def test_a_linalg_function_exports_and_matches_numpy() -> None:
    rng = np.random.default_rng(1)
    a_np = (rng.standard_normal((2, 4, 4)) + 4 * np.eye(4)).astype(np.float32)
    b_np = rng.standard_normal((2, 4, 3)).astype(np.float32)
    a, b = (bp.Tensor.from_numpy(v, backend=B) for v in (a_np, b_np))
    proto = bp.onnx.export(_linalg, (a, b), None, input_names=["a", "b"])
    assert "Det" in {n.op_type for n in proto.graph.node}
    got = _run(proto, (a, b))
    _close(got, _outputs(_linalg(a, b)))
    a64, b64 = a_np.astype(np.float64), b_np.astype(np.float64)
    expected = [np.linalg.solve(a64, b64), np.linalg.inv(a64), np.linalg.det(a64)]
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


def test_a_product_of_dynamic_dims_is_derived() -> None:
    """``reshape(x, (b * t, c))`` with both b and t dynamic: the target is solved as
    ``1 * b * t + 0`` and computed from the input's shape."""
    linear = nn.Linear(4, 3, backend=B)

    def flat(x: bp.Tensor) -> bp.Tensor:
        b, t, c = x.shape
        return linear(x.reshape(b * t, c)).reshape(b, t, 3)[:, 1:]

    proto = bp.onnx.export(flat, (_floats((2, 5, 4)),), None, input_names=["x"],
                           dynamic_axes={"x": {0: "b", 1: "t"}})
    for shape in ((3, 7, 4), (1, 2, 4)):
        x = _floats(shape, shape[0])
        _close(_run(proto, (x,)), [flat(x).to_numpy()])


def test_a_model_on_autodiff_exports_and_is_left_as_it_was() -> None:
    ad = bp.Autodiff(B)
    model = nn.Sequential(nn.Linear(4, 8, backend=ad), nn.SiLU(), nn.Linear(8, 2, backend=ad))
    x = bp.Tensor.from_numpy(np.ones((3, 4), np.float32), backend=ad)
    proto = bp.onnx.export(model, x, None)
    assert all(p.backend is ad and p.requires_grad for p in model.parameters())
    _close(_run(proto, (x,)), [model(x).to_numpy()])


def test_an_untranslated_op_names_the_op_and_the_model() -> None:
    def inverse_erf(x: bp.Tensor) -> bp.Tensor:
        return x.tanh().erfinv()

    with pytest.raises(OnnxExportError, match=r"inverse_erf: node 1 float_erfinv "
                                              r"\(float32\[2, 3\]\).*no ONNX translation"):
        bp.onnx.export(inverse_erf, (_floats((2, 3)),), None)


def test_values_not_derivable_from_the_dynamic_dims_are_errors() -> None:
    def host_mask(x: bp.Tensor) -> bp.Tensor:
        return x + bp.Tensor.from_numpy(np.ones(x.shape, np.float32), backend=x.backend)

    with pytest.raises(OnnxExportError, match="changes with the dynamic dims"):
        bp.onnx.export(host_mask, (_floats((2, 3)),), None, input_names=["x"],
                       dynamic_axes={"x": [0]})

    def squared(x: bp.Tensor) -> bp.Tensor:
        return x.reshape(-1)[: x.shape[0] ** 2]

    with pytest.raises(OnnxExportError, match="not scale \\* product"):
        bp.onnx.export(squared, (_floats((4, 5)),), None, input_names=["x"],
                       dynamic_axes={"x": {0: "n"}})

    def mean_by_hand(x: bp.Tensor) -> bp.Tensor:
        return x.sum(0) * (1.0 / x.shape[0])

    with pytest.raises(OnnxExportError, match=r"mean_by_hand, node \d+ \(float_mul_scalar\): "
                                              "argument 0.25 changes with the dynamic dims"):
        bp.onnx.export(mean_by_hand, (_floats((4, 2)),), None, input_names=["x"],
                       dynamic_axes={"x": {0: "n"}})

    def branches(x: bp.Tensor) -> bp.Tensor:
        return x.exp() if x.shape[0] > 3 else x.sin()

    with pytest.raises(OnnxExportError, match="records other ops"):
        bp.onnx.export(branches, (_floats((4, 2)),), None, input_names=["x"],
                       dynamic_axes={"x": {0: "n"}})


def test_bad_arguments_are_errors() -> None:
    x = _floats((2, 3))
    with pytest.raises(OnnxExportError, match="opset_version 9"):
        bp.onnx.export(lambda t: t.exp(), x, None, opset_version=9)
    with pytest.raises(OnnxExportError, match="2 input_names for 1 inputs"):
        bp.onnx.export(lambda t: t.exp(), x, None, input_names=["a", "b"])
    with pytest.raises(OnnxExportError, match="must be a tensor"):
        bp.onnx.export(lambda t: t, [np.ones(2)], None)
    with pytest.raises(OnnxExportError, match="not an input"):
        bp.onnx.export(lambda t: t.exp(), x, None, dynamic_axes={"nope": [0]})
    with pytest.raises(OnnxExportError, match="has size 1 in the example; give it 2"):
        bp.onnx.export(lambda t: t.exp(), _floats((1, 3)), None, dynamic_axes={"input_0": [0]})
    with pytest.raises(OnnxExportError, match="is 2 and 3"):
        bp.onnx.export(lambda a, b: a + b.sum(), (x, _floats((3, 3))), None,
                       input_names=["a", "b"], dynamic_axes={"a": {0: "n"}, "b": {0: "n"}})


def test_every_translation_names_a_protocol_op() -> None:
    from burnpy.backend.base import Backend

    assert all(hasattr(Backend, name) for name in TRANSLATIONS)
    assert Sym(2, ("b", "t"), 1) == Sym(2, ("b", "t"), 1)


def _many_ops(x: bp.Tensor, idx: bp.Tensor) -> tuple[bp.Tensor, ...]:
    """Activations, elementwise math, pools, reductions, indexing and layout in one run."""
    a = F.softmax(x, -1) + F.log_softmax(x, 1) + F.leaky_relu(x, 0.1) + F.sigmoid(x) * F.silu(x)
    a = a.clamp(-2.0, 3.0) + x.abs().sqrt() - x.sin() * x.cos() + x.exp() / 10 + x.tanh() ** 2
    pooled = F.adaptive_avg_pool2d(a, (2, 1)) + F.adaptive_avg_pool2d(a, 1)
    sums = a.sum(1, keepdim=True) + a.mean(2, keepdim=True) + a.amax(-1, keepdim=True)
    picked = a.index_select(3, idx) + a.gather(3, idx.reshape(1, 1, 1, -1).expand(2, 3, 4, 3))
    joined = bp.cat([a, bp.where(a > 0.5, a, sums)], 1).repeat(1, 1, 1, 2)
    return (F.avg_pool2d(a, 2), pooled, sums, a.argmax(-1), a.cumsum(3), a.permute(0, 2, 3, 1),
            picked, joined, a.sum())


def test_the_translations_of_many_ops_match_burnpy() -> None:
    x = _floats((2, 3, 4, 6), 3)
    idx = bp.Tensor.from_numpy(np.array([0, 5, 2], np.int64), backend=B)
    proto = bp.onnx.export(_many_ops, (x, idx), None, input_names=["x", "idx"])
    used = {i for n in proto.graph.node for i in n.input}
    assert all(i.name in used for i in proto.graph.initializer)  # dead checks not written
    _close(_run(proto, (x, idx)), _outputs(_many_ops(x, idx)))


def test_a_model_on_fusion_over_autodiff_exports() -> None:
    backend = bp.Autodiff(bp.Fusion(B))
    model = nn.Sequential(nn.Linear(4, 8, backend=backend), nn.GELU(),
                          nn.Linear(8, 2, backend=backend))
    x = bp.Tensor.from_data(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4),
                            backend=backend)
    proto = bp.onnx.export(model, x, None)
    assert all(p.backend is backend for p in model.parameters())
    _close(_run(proto, (x,)), [model(x).to_numpy()])
