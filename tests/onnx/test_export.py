"""``bp.onnx.export``: the digits CNN, the GPT example, a linalg function and every ``bp.models``
architecture (GPT-2, Llama, BERT and its heads, ViT, ResNet) written as ONNX, checked by
``onnx.checker`` (full check), run by onnxruntime against burnpy's own outputs (1e-5 relative,
float32) and NumPy's for the linalg, loaded back with ``bp.onnx.load``, and run at other batch
and sequence sizes with dynamic axes; then the translations of the protocol ops users commonly
reach (sorting, scans, scatters, transposed convolutions, pools, resizes, integer and
elementwise math, Cholesky), each compared with burnpy."""

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
from burnpy.tensor._core import FLOAT, INT, new
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


def _tiny_gpt2_base() -> nn.Module:
    return models.GPT2Model(models.GPT2Config(vocab_size=50, n_positions=16, n_embd=8,
                                              n_layer=2, n_head=2), backend=B)


def _tiny_llama_base() -> nn.Module:
    return models.LlamaModel(models.LlamaConfig(
        vocab_size=50, hidden_size=8, intermediate_size=16, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=16), backend=B)


_BERT: dict[str, Any] = dict(
    vocab_size=50, hidden_size=8, num_hidden_layers=2, num_attention_heads=2,
    intermediate_size=16, max_position_embeddings=16, num_labels=3)


def _ids_of(b: int, t: int) -> tuple[bp.Tensor, ...]:
    return (_ids(b, t, b * t),)


CASES: dict[str, tuple[Callable[[], nn.Module], Callable[[int, int], tuple[bp.Tensor, ...]],
                       list[str]]] = {
    "gpt_example": (_gpt, _ids_of, ["input_ids"]),
    "gpt2": (_tiny_gpt2, _ids_of, ["input_ids"]),
    "gpt2_base": (_tiny_gpt2_base, _ids_of, ["input_ids"]),
    "llama": (_tiny_llama, _ids_of, ["input_ids"]),
    "llama_base": (_tiny_llama_base, _ids_of, ["input_ids"]),
    "bert": (_tiny_bert, _bert_inputs, ["input_ids", "attention_mask"]),
    "bert_masked_lm": (lambda: models.BertForMaskedLM(models.BertConfig(**_BERT), backend=B),
                       _bert_inputs, ["input_ids", "attention_mask"]),
    "bert_classifier": (lambda: models.BertForSequenceClassification(
        models.BertConfig(**_BERT), backend=B), _bert_inputs, ["input_ids", "attention_mask"]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_language_models_export_and_run_at_other_sizes(case: str) -> None:
    build, inputs, names = CASES[case]
    model = build().eval()
    axes = {name: {0: "batch", 1: "seq"} for name in names}
    proto = bp.onnx.export(model, inputs(2, 5), None, input_names=names, dynamic_axes=axes)
    onnx.checker.check_model(proto, full_check=True)
    assert not _unused_initializers(proto)
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


def _with_statistics(model: nn.Module) -> nn.Module:
    """``model`` with random BatchNorm running statistics (not 0 and 1), so the eval-mode
    normalization is visible in the outputs."""
    rng = np.random.default_rng(5)
    state = {name: rng.normal(0.0, 0.2, t.shape) if name.endswith("running_mean") else
             rng.uniform(0.5, 1.5, t.shape) for name, t in model.named_buffers()
             if name.endswith(("running_mean", "running_var"))}
    model.load_state_dict({k: v.astype(np.float32) for k, v in state.items()}, strict=False)
    return model


_VIT: dict[str, Any] = dict(
    hidden_size=16, num_hidden_layers=2, num_attention_heads=4, intermediate_size=24,
    image_size=8, patch_size=4, num_labels=3)
_RESNET_BASIC: dict[str, Any] = dict(
    embedding_size=8, hidden_sizes=[8, 16], depths=[1, 2], layer_type="basic", num_labels=3)
_RESNET_BOTTLENECK: dict[str, Any] = dict(
    num_channels=2, embedding_size=8, hidden_sizes=[16, 32], depths=[2, 1],
    layer_type="bottleneck", hidden_act="gelu", downsample_in_first_stage=True,
    downsample_in_bottleneck=True)

#: Each vision model, built, and its images' ``(channels, height, width)``.
VISION: dict[str, tuple[Callable[[], nn.Module], tuple[int, int, int]]] = {
    "vit": (lambda: models.ViTModel(models.ViTConfig(**_VIT), backend=B), (3, 8, 8)),
    "vit_classifier": (lambda: models.ViTForImageClassification(models.ViTConfig(**_VIT),
                                                                backend=B), (3, 8, 8)),
    "resnet_bottleneck": (lambda: _with_statistics(models.ResNetModel(
        models.ResNetConfig(**_RESNET_BOTTLENECK), backend=B)), (2, 32, 32)),
    "resnet_classifier": (lambda: _with_statistics(models.ResNetForImageClassification(
        models.ResNetConfig(**_RESNET_BASIC), backend=B)), (3, 32, 32)),
}


def _unused_initializers(proto: onnx.ModelProto) -> list[str]:
    used = {i for n in proto.graph.node for i in n.input}
    return [i.name for i in proto.graph.initializer if i.name not in used]


@pytest.mark.parametrize("case", list(VISION))
def test_vision_models_export_with_a_dynamic_batch_and_load_back(case: str) -> None:
    build, (channels, height, width) = VISION[case]
    model = build().eval()
    images = _floats((2, channels, height, width))
    proto = bp.onnx.export(model, (images,), None, input_names=["pixel_values"],
                           dynamic_axes={"pixel_values": {0: "batch"}})
    onnx.checker.check_model(proto, full_check=True)
    assert not _unused_initializers(proto)
    assert all(o.type.tensor_type.shape.dim[0].dim_param == "batch" for o in proto.graph.output)
    for batch in (2, 3, 5):
        x = _floats((batch, channels, height, width), batch)
        _close(_run(proto, (x,)), _outputs(model(x)))
    x = _floats((3, channels, height, width), 7)
    _close(_outputs(bp.onnx.load(proto, backend=B)(x)), _outputs(model(x)))


def test_vit_with_interpolated_position_embeddings_exports() -> None:
    """Images larger than the config's: the position embeddings are resized (bicubic) inside
    the recorded run, so the export at that image size matches burnpy's."""
    model = models.ViTModel(models.ViTConfig(**_VIT), backend=B).eval()

    def larger(pixel_values: bp.Tensor) -> Any:
        return model(pixel_values, interpolate_pos_encoding=True)

    proto = bp.onnx.export(larger, (_floats((2, 3, 12, 12)),), None,
                           input_names=["pixel_values"],
                           dynamic_axes={"pixel_values": {0: "batch"}})
    for batch in (2, 4):
        x = _floats((batch, 3, 12, 12), batch)
        _close(_run(proto, (x,)), _outputs(larger(x)))


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


def _translated(fn: Callable[..., Any], args: tuple[bp.Tensor, ...],
                dynamic_axes: dict[str, dict[int, str]] | None = None) -> onnx.ModelProto:
    """``fn`` exported (every initializer read), run by onnxruntime and compared with
    burnpy's outputs."""
    names = [f"input_{i}" for i in range(len(args))]
    proto = bp.onnx.export(fn, args, None, input_names=names, dynamic_axes=dynamic_axes)
    assert not _unused_initializers(proto)
    _close(_run(proto, args), _outputs(fn(*args)))
    return proto


def _protocol(x: bp.Tensor, op: str, *params: Any) -> tuple[bp.Tensor, ...]:
    """A protocol op called directly on ``x``'s backend (the ops a Tensor method reaches
    only through another), its results as tensors of their kinds."""
    out = getattr(x.backend, op)(x.primitive, *params)
    outs = out if isinstance(out, tuple) else (out,)
    return tuple(new(x.backend, p, FLOAT if np.dtype(p.dtype).kind == "f" else INT)
                 for p in outs)


def _sorting_and_scans(x: bp.Tensor, ties: bp.Tensor, ints: bp.Tensor) -> tuple[Any, ...]:
    """Sorts (stable, both directions, ints too), top-k, running products and extremes (the
    index where each was reached, ties included), products and the compositions over them."""
    return (x.sort(-1), ties.sort(0, descending=True), ties.sort(1), x.argsort(1), x.topk(2, 1),
            x.topk(2, 0, largest=False), ints.sort(1, descending=True), ints.argsort(0),
            _protocol(x, "float_topk_with_indices", 3, 1, False),
            _protocol(x, "float_sort", 0, True), _protocol(x, "float_argsort", 1, False),
            _protocol(ints, "int_argsort", 1, True),
            _protocol(ties, "float_cummax", 1), _protocol(ties, "float_cummin", 0),
            x.cumprod(1), ints.cumprod(0), ties.cummax(1), ties.cummin(0), ints.cummax(1),
            ints.cummin(1), x.prod(1), x.prod(), ints.prod(0), x.logcumsumexp(1),
            x.kthvalue(2, 1), x.median(1))


def test_sorting_scans_and_products_match_burnpy() -> None:
    rng = np.random.default_rng(11)
    x = _floats((4, 5), 11)
    ties = bp.Tensor.from_numpy(rng.integers(-2, 3, (4, 5)).astype(np.float32), backend=B)
    ints = bp.Tensor.from_numpy(rng.integers(-3, 4, (4, 5)).astype(np.int64), backend=B)
    proto = _translated(_sorting_and_scans, (x, ties, ints))
    assert {"TopK", "ReduceProd", "ArgMax", "ArgMin"} <= {n.op_type for n in proto.graph.node}


def test_sorts_scans_and_windows_follow_dynamic_dims() -> None:
    """The sorted length, the running-op masks and the number of windows are read from the
    input's shape at run time."""
    def sized(x: bp.Tensor) -> tuple[Any, ...]:
        return (x.sort(1), x.cumprod(1), x.cummax(0), x.unfold(1, 3, 1), x.flip(0, 1),
                x.topk(2, 1))

    proto = bp.onnx.export(sized, (_floats((4, 7)),), None, input_names=["x"],
                           dynamic_axes={"x": {0: "n", 1: "m"}})
    for shape in ((5, 9), (2, 3)):
        x = _floats(shape, shape[1])
        _close(_run(proto, (x,)), _outputs(sized(x)))


def _indexing(x: bp.Tensor, idx: bp.Tensor, ints: bp.Tensor) -> tuple[Any, ...]:
    """Scatters (assigning, summing, reducing), index_add/index_copy/index_fill, flips and
    sliding windows of every kind."""
    rows = idx[0, :2] % 4
    return (x.scatter(1, idx, x * 2), x.scatter_add(1, idx, x * 2), ints.scatter(0, idx % 4, ints),
            ints.scatter_add(1, idx, ints), x.scatter_reduce(1, idx, x * 2, "amax"),
            x.index_add(0, rows, x[:2]), x.index_copy(0, idx[0, 2:4] % 4, x[1:3]),
            ints.index_add(1, idx[1, :3], ints[:, :3]), x.index_fill(1, idx[0, :2], 3.0),
            x.flip(0, 1), (x > 0).flip(1), ints.flip(0), x.unfold(1, 2, 1), ints.unfold(0, 3, 1),
            (x > 0).unfold(1, 3, 2))


def test_scatter_index_flip_and_unfold_match_burnpy() -> None:
    rng = np.random.default_rng(12)
    idx = bp.Tensor.from_numpy(rng.integers(0, 5, (4, 5)).astype(np.int64), backend=B)
    ints = bp.Tensor.from_numpy(rng.integers(-9, 9, (4, 5)).astype(np.int64), backend=B)
    _translated(_indexing, (_floats((4, 5), 12), idx, ints))


_W1 = _floats((3, 2, 3), 21)          # conv_transpose1d: [in, out, k]
_W2 = _floats((3, 2, 3, 3), 22)       # conv_transpose2d, and with groups=3: out 6
_W3 = _floats((2, 2, 3, 3, 3), 23)    # conv_transpose3d
_C1 = _floats((4, 3, 3), 24)          # conv1d
_C3 = _floats((3, 2, 2, 2, 2), 25)    # conv3d
_CG = _floats((3, 1, 3, 3), 26)       # depthwise conv2d
_BIAS = _floats((2,), 27)


def _nn_ops(x3: bp.Tensor, x4: bp.Tensor, x5: bp.Tensor) -> tuple[Any, ...]:
    """Transposed and plain convolutions in 1, 2 and 3 dims (strides, padding, output
    padding, groups, dilation, "same"), every pool, paddings, resizes, training batch norm
    and the activations built from softplus."""
    return (F.conv_transpose1d(x3, _W1, _BIAS, stride=2, padding=1),
            F.conv_transpose2d(x4, _W2, stride=2, padding=1, output_padding=1),
            F.conv_transpose2d(x4, _W2, groups=3, stride=2, dilation=2),
            F.conv_transpose3d(x5, _W3, _BIAS, stride=(1, 2, 1)),
            F.conv1d(x3, _C1, padding=1, stride=2), F.conv3d(x5, _C3),
            F.conv2d(x4, _CG, padding="same", groups=3, dilation=2),
            F.max_pool1d(x3, 3, 2, 1), F.max_pool3d(x5, 2), F.avg_pool1d(x3, 3, 2, 1),
            F.avg_pool3d(x5, 2), F.lp_pool2d(x4, 2.0, 2), F.adaptive_avg_pool1d(x3, 3),
            F.adaptive_avg_pool2d(x4, (4, 5)), F.adaptive_avg_pool3d(x5, (3, 2, 1)),
            F.adaptive_max_pool2d(x4, 3), F.pad(x4, (1, 2, 2, 1), mode="reflect"),
            F.pad(x4, (1, 2, 2, 1), mode="replicate"), F.pad(x3, (1, 2), mode="circular"),
            F.pad(x3, (1, 2), value=0.5), F.interpolate(x4, scale_factor=2, mode="nearest"),
            F.interpolate(x4, size=(9, 4), mode="nearest"),
            F.interpolate(x4, size=(9, 5), mode="bilinear"),
            F.interpolate(x4, size=(4, 11), mode="bilinear", align_corners=True),
            F.interpolate(x4, size=(9, 5), mode="bicubic"),
            F.batch_norm(x4, None, None, None, None, training=True),
            F.softplus(x4), F.softplus(x4, beta=2.0), F.logsigmoid(x4), F.hardsigmoid(x4))


def test_convolutions_pools_and_resizes_match_burnpy() -> None:
    proto = _translated(_nn_ops, (_floats((2, 3, 8), 31), _floats((2, 3, 6, 6), 32),
                                  _floats((1, 2, 4, 4, 4), 33)))
    assert {"ConvTranspose", "Resize", "Softplus"} <= {n.op_type for n in proto.graph.node}


def test_training_batch_norm_statistics_match_burnpy() -> None:
    """The protocol's training-mode ``batch_norm``: ``y`` and the batch's mean and biased
    variance, over ``[n, c, l]`` and ``[n, c, h, w]``."""
    weight, bias = _floats((3,), 41), _floats((3,), 42)

    def normalized(x: bp.Tensor) -> tuple[bp.Tensor, ...]:
        return tuple(new(x.backend, p, FLOAT) for p in x.backend.batch_norm(
            x.primitive, weight.primitive, bias.primitive, 1e-5))

    _translated(normalized, (_floats((4, 3, 5), 43),))
    _translated(normalized, (_floats((4, 3, 2, 5), 44),))


def _math(x: bp.Tensor, small: bp.Tensor, special: bp.Tensor) -> tuple[Any, ...]:
    """The elementwise math ONNX composes: accurate log1p/expm1 near zero, atan2 in every
    quadrant and on the axes, remainders with the divisor's sign, clamps, comparisons."""
    y = x.flip(0)
    zeros = x * 0.0
    return (x.trunc(), small.log1p(), small.expm1(), x.abs().log1p(), x.expm1(), x.erfc(),
            x.atan2(y), x.atan2(zeros), zeros.atan2(x), x.hypot(y), x.logaddexp(y),
            x.logaddexp2(y), x.asinh(), (x.abs() + 1).acosh(), (x * 0.4).tanh().atanh(),
            x.remainder(0.7), x.remainder(-0.7), x.remainder(y.abs() + 0.5), x.clamp(min=0.1),
            x.clamp(max=-0.1), x != y, (x > 0) != (y > 0), x.any(1), (x > 0).all(), (x > 0).any(0),
            x.all(), special.isnan(), special.isinf())


def test_elementwise_math_matches_burnpy() -> None:
    rng = np.random.default_rng(13)
    small = bp.Tensor.from_numpy((rng.standard_normal((4, 5)) * 1e-6).astype(np.float32),
                                 backend=B)
    special = bp.Tensor.from_numpy(np.array([np.nan, np.inf, -np.inf, 0.0, 1.5], np.float32),
                                   backend=B)
    x = _floats((4, 5), 13)
    proto = _translated(_math, (x, small, special))
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    got = session.run(None, {"input_0": x.to_numpy(), "input_1": small.to_numpy(),
                             "input_2": special.to_numpy()})
    s64 = small.to_numpy().astype(np.float64)  # log1p and expm1 keep relative accuracy
    np.testing.assert_allclose(got[1], np.log1p(s64), rtol=1e-6)
    np.testing.assert_allclose(got[2], np.expm1(s64), rtol=1e-6)


def _int_math(a: bp.Tensor, b: bp.Tensor) -> tuple[Any, ...]:
    """Floor division and Python's remainder with negative operands, powers, products,
    bitwise ops and shifts (arithmetic right shifts of negatives), clamps, truth."""
    shift = b.abs() % 4
    return (a // b, a // 3, a // -3, a % b, a % 3, a % -3, a ** 2, a @ b.T, a & b, a | b, a ^ b,
            ~a, a << shift, a >> shift, a.clamp(-2, 3), a.any(1), a.all(), a != b)


def test_int_math_matches_burnpy() -> None:
    rng = np.random.default_rng(14)
    a = bp.Tensor.from_numpy(rng.integers(-20, 20, (4, 5)).astype(np.int64), backend=B)
    divisor = rng.integers(1, 6, (4, 5)) * rng.choice([-1, 1], (4, 5))
    b = bp.Tensor.from_numpy(divisor.astype(np.int64), backend=B)
    _translated(_int_math, (a, b))


def test_cholesky_is_unrolled_and_matches_numpy() -> None:
    rng = np.random.default_rng(15)
    m = rng.standard_normal((2, 5, 5))
    spd = (m @ m.transpose(0, 2, 1) + 5 * np.eye(5)).astype(np.float32)
    a = bp.Tensor.from_numpy(spd, backend=B)

    def factors(a: bp.Tensor) -> tuple[bp.Tensor, bp.Tensor]:
        return la.cholesky(a), la.cholesky(a, upper=True)

    proto = bp.onnx.export(factors, (a,), None, input_names=["a"],
                           dynamic_axes={"a": {0: "batch"}})
    for batch in (2, 3):
        x = bp.Tensor.from_numpy(np.concatenate([spd, spd])[:batch], backend=B)
        got = _run(proto, (x,))
        _close(got, _outputs(factors(x)))
        lower = np.linalg.cholesky(x.to_numpy().astype(np.float64))
        np.testing.assert_allclose(got[0], lower, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got[1], lower.transpose(0, 2, 1), rtol=1e-5, atol=1e-6)


def _wrappers_and_indices(x3: bp.Tensor, x4: bp.Tensor, ints: bp.Tensor) -> tuple[Any, ...]:
    """The protocol's per-rank pool wrappers (plain ints for 1-d) and max pools with their
    indices (torch's, within each ``[n, c]`` plane), called directly, and through ``F``."""
    return (_protocol(x4, "max_pool2d_with_indices", [2, 2], [2, 2], [1, 0], [1, 1], False),
            _protocol(x3, "max_pool1d_with_indices", 3, 2, 1, 1, False),
            _protocol(x4, "max_pool2d", [3, 2], [1, 2], [1, 1], [1, 1], True),
            _protocol(x3, "max_pool1d", 3, 1, 0, 2, False),
            _protocol(x4, "avg_pool2d", [3, 3], [2, 1], [1, 1], False, True),
            _protocol(x3, "avg_pool1d", 3, 2, 1, True, False),
            _protocol(x4, "adaptive_avg_pool2d", [4, 3]), _protocol(x3, "adaptive_avg_pool1d", 5),
            _protocol(ints, "int_sort", 1, True), F.max_pool2d(x4, 3, 2, 1, return_indices=True))


def test_pool_wrappers_and_max_pool_indices_match_burnpy() -> None:
    ints = bp.Tensor.from_numpy(np.random.default_rng(16).integers(-5, 5, (4, 5)), backend=B)
    _translated(_wrappers_and_indices, (_floats((2, 3, 8), 51), _floats((2, 3, 6, 6), 52),
                                        ints.long()))


def _assigned(x: bp.Tensor, ints: bp.Tensor) -> tuple[bp.Tensor, ...]:
    """Slice assignments: strided regions, a whole row, trailing dims written whole."""
    y, z, w, i = x.clone(), x.clone(), x.clone(), ints.clone()
    y[1:3, ::2] = x[:2, :3] * 10
    z[2] = 5.0
    w[:, 1:4] = 0.0
    i[::3, 1:] = ints[:2, :4] * -1
    return y, z, w, i


def test_slice_assignment_matches_burnpy_and_follows_dynamic_dims() -> None:
    ints = bp.Tensor.from_numpy(np.arange(20).reshape(4, 5), backend=B).long()
    proto = _translated(_assigned, (_floats((4, 5), 61), ints))
    assert "ScatterND" in {n.op_type for n in proto.graph.node}

    def columns(x: bp.Tensor) -> tuple[bp.Tensor, bp.Tensor]:
        w, y = x.clone(), x.clone()
        w[:, 1:4] = 0.0
        y[:, ::2] = x[:, :3] * 10
        return w, y

    proto = bp.onnx.export(columns, (_floats((4, 5)),), None, input_names=["x"],
                           dynamic_axes={"x": {0: "n"}})
    for n in (6, 2):
        x = _floats((n, 5), n)
        _close(_run(proto, (x,)), _outputs(columns(x)))


_LSTM = nn.LSTM(3, 4, num_layers=2, batch_first=True, bidirectional=True, backend=B).eval()
_GRU = nn.GRU(3, 4, backend=B).eval()


def test_recurrent_layers_export_with_dynamic_sizes() -> None:
    """A two-layer bidirectional LSTM (ONNX's ``LSTM`` node) with dynamic batch and time; a
    GRU (composed step by step, so its length is fixed) with a dynamic batch."""
    proto = _translated(_LSTM, (_floats((2, 5, 3), 71),),
                        dynamic_axes={"input_0": {0: "batch", 1: "time"}})
    assert "LSTM" in {n.op_type for n in proto.graph.node}
    for shape in ((3, 7, 3), (4, 2, 3)):
        x = _floats(shape, shape[1])
        _close(_run(proto, (x,)), _outputs(_LSTM(x)))
    proto = _translated(_GRU, (_floats((5, 2, 3), 72),), dynamic_axes={"input_0": {1: "batch"}})
    for batch in (3, 6):
        x = _floats((5, batch, 3), batch)
        _close(_run(proto, (x,)), _outputs(_GRU(x)))
