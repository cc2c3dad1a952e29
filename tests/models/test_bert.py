"""burnpy's BERT against transformers' own: tiny random-weight checkpoints written with
``save_pretrained`` at test time, loaded by ``from_pretrained`` and compared on padded batches
with two token types (1e-5 relative in float32, 1e-10 in float64, gradients of every
parameter at 1e-10, WebGPU at 1e-4); refused configurations name their field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import transformers as tf

import burnpy.models as bpm
from burnpy.autodiff import Autodiff
from burnpy.models.bert import (
    BertConfig,
    BertForMaskedLM,
    BertForSequenceClassification,
    BertModel,
    BertPreTrainedModel,
)
from burnpy.models.modeling import ConfigError
from burnpy.nn.module import StateDictError
from burnpy.tensor import Tensor
from burnpy_cpu import CpuBackend

AD = Autodiff(CpuBackend)

CONFIGS: dict[str, dict[str, Any]] = {
    "gelu_tied": dict(vocab_size=61, hidden_size=16, num_hidden_layers=2,
                      num_attention_heads=4, intermediate_size=24, max_position_embeddings=40,
                      num_labels=3),
    "gelu_new_untied": dict(vocab_size=53, hidden_size=24, num_hidden_layers=3,
                            num_attention_heads=3, intermediate_size=40, hidden_act="gelu_new",
                            max_position_embeddings=32, type_vocab_size=3, layer_norm_eps=1e-5,
                            pad_token_id=1, tie_word_embeddings=False, num_labels=1),
    "relu_single_label": dict(vocab_size=47, hidden_size=12, num_hidden_layers=1,
                              num_attention_heads=2, intermediate_size=20, hidden_act="relu",
                              max_position_embeddings=24, num_labels=4,
                              problem_type="single_label_classification", classifier_dropout=0.3),
}
CLASSES: dict[type[Any], type[BertPreTrainedModel]] = {
    tf.BertModel: BertModel, tf.BertForMaskedLM: BertForMaskedLM,
    tf.BertForSequenceClassification: BertForSequenceClassification}


def _write(name: str, cls: type[Any], path: Path, dtype: torch.dtype = torch.float32,
           max_shard_size: str | None = None, **changes: Any) -> Any:
    """A seeded random-weight transformers model saved to ``path``; returns it in float32."""
    config = tf.BertConfig(**{**CONFIGS[name], **changes})
    torch.manual_seed(sum(map(ord, name + cls.__name__)))
    model = cls(config).eval()
    with torch.no_grad():  # visible norms and biases, not ones and zeros
        for p in model.parameters():
            p.add_(0.1 * torch.randn_like(p))
    kwargs = {} if max_shard_size is None else {"max_shard_size": max_shard_size}
    model.to(dtype).save_pretrained(path, **kwargs)
    return cls.from_pretrained(path, dtype=torch.float32).eval()


def _inputs(config: Any) -> dict[str, np.ndarray]:
    """A right-padded batch of three sequences of 9 tokens, two segments each."""
    rng = np.random.default_rng(0)
    ids = rng.integers(2, config.vocab_size, size=(3, 9))
    mask = np.ones_like(ids)
    mask[1, 6:] = 0
    mask[2, 3:] = 0
    ids[mask == 0] = config.pad_token_id
    types = np.zeros_like(ids)
    types[:, 4:] = 1
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


def _labels(model: Any, kind: str) -> np.ndarray:
    """Labels for ``model``'s head: masked-LM ids (-100 mostly), class indices, 0/1 targets
    or regression values."""
    rng = np.random.default_rng(2)
    if isinstance(model, tf.BertForMaskedLM):
        labels = rng.integers(0, model.config.vocab_size, size=(3, 9))
        labels[rng.random((3, 9)) < 0.6] = -100
        return labels
    n = model.config.num_labels
    if kind == "int":
        return rng.integers(0, n, size=(3,))
    return (rng.random((3, n)) < 0.5).astype(np.float64) if kind == "binary" else \
        rng.standard_normal((3, n))


def _run_theirs(model: Any, inputs: dict[str, np.ndarray], labels: np.ndarray | None,
                dtype: torch.dtype) -> Any:
    kw = {k: torch.from_numpy(v) for k, v in inputs.items()}
    if labels is not None:
        kw["labels"] = torch.from_numpy(labels if labels.dtype.kind == "i"
                                        else labels.astype(np.float64)).to(
            torch.long if labels.dtype.kind == "i" else dtype)
    return model(**kw, output_hidden_states=True)


def _run_ours(model: Any, inputs: dict[str, np.ndarray], labels: np.ndarray | None,
              backend: Any, dtype: str = "float32") -> Any:
    ints = backend.int_dtype  # int64 where the backend has it, int32 on WebGPU
    kw = {k: Tensor.from_data(v, backend=backend, dtype=ints) for k, v in inputs.items()}
    if labels is not None:
        kw["labels"] = Tensor.from_data(labels, backend=backend, dtype=ints) \
            if labels.dtype.kind == "i" \
            else Tensor.from_data(labels, backend=backend, dtype=dtype)
    return model(**kw, output_hidden_states=True)


def _close(actual: Tensor | None, expected: torch.Tensor | None, rtol: float, where: str,
           floor: float = 1e-30) -> None:
    """Relative error at most ``rtol``, relative to ``expected``'s largest value or ``floor``."""
    assert (actual is None) == (expected is None), where
    if actual is None or expected is None:
        return
    a = actual.into_data().array.astype(np.float64)
    e = expected.detach().double().numpy()
    assert a.shape == e.shape, f"{where}: shape {a.shape} != {e.shape}"
    err = np.abs(a - e).max() / max(np.abs(e).max(), floor)
    assert err <= rtol, f"{where}: relative error {err:.3g} > {rtol}"


def _compare(ours: Any, theirs: Any, rtol: float) -> None:
    for field in ("last_hidden_state", "pooler_output", "logits", "loss"):
        if hasattr(theirs, field):
            _close(getattr(ours, field), getattr(theirs, field), rtol, field)
    assert len(ours.hidden_states) == len(theirs.hidden_states)
    for i, (h, g) in enumerate(zip(ours.hidden_states, theirs.hidden_states, strict=True)):
        _close(h, g, rtol, f"hidden state {i}")


@pytest.mark.parametrize("hf_cls", list(CLASSES), ids=lambda c: c.__name__)
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_float32_outputs_match_transformers(name: str, hf_cls: type[Any], tmp_path: Path) -> None:
    hf = _write(name, hf_cls, tmp_path)
    model = CLASSES[hf_cls].from_pretrained(tmp_path, backend=CpuBackend)
    assert model.loading_info == ([], [])
    inputs = _inputs(hf.config)
    labels = None if hf_cls is tf.BertModel else _labels(hf, "int" if hf.config.num_labels > 1
                                                          else "float")
    with torch.no_grad():
        theirs = _run_theirs(hf, inputs, labels, torch.float32)
    _compare(_run_ours(model, inputs, labels, CpuBackend), theirs, 1e-5)
    plain = {"input_ids": inputs["input_ids"]}  # no mask, default token types
    with torch.no_grad():
        theirs = _run_theirs(hf, plain, None, torch.float32)
    _compare(_run_ours(model, plain, None, CpuBackend), theirs, 1e-5)


def test_explicit_positions_and_input_embeddings(tmp_path: Path) -> None:
    hf = _write("gelu_new_untied", tf.BertModel, tmp_path)
    model = BertModel.from_pretrained(tmp_path, backend=CpuBackend)
    inputs = _inputs(hf.config)
    positions = np.arange(3 * 9).reshape(3, 9) % 7 + 2
    with torch.no_grad():
        embeds = hf.embeddings.word_embeddings(torch.from_numpy(inputs["input_ids"]))
        theirs = hf(inputs_embeds=embeds, attention_mask=torch.from_numpy(inputs["attention_mask"]),
                    position_ids=torch.from_numpy(positions), output_hidden_states=True)
    ours = model(inputs_embeds=Tensor.from_data(embeds.numpy(), backend=CpuBackend),
                 attention_mask=Tensor.from_data(inputs["attention_mask"], backend=CpuBackend),
                 position_ids=Tensor.from_data(positions, backend=CpuBackend),
                 output_hidden_states=True)
    _compare(ours, theirs, 1e-5)


@pytest.mark.parametrize(("problem_type", "num_labels", "kind"), [
    (None, 1, "float"), (None, 3, "int"), (None, 3, "binary"), ("regression", 3, "float"),
    ("multi_label_classification", 2, "binary"), ("single_label_classification", 3, "int")])
def test_classifier_loss_of_each_problem_type(problem_type: str | None, num_labels: int,
                                              kind: str, tmp_path: Path) -> None:
    cls = tf.BertForSequenceClassification
    hf = _write("gelu_tied", cls, tmp_path, num_labels=num_labels, problem_type=problem_type)
    model = BertForSequenceClassification.from_pretrained(tmp_path, backend=CpuBackend)
    inputs, labels = _inputs(hf.config), _labels(hf, kind)
    with torch.no_grad():
        theirs = _run_theirs(hf, inputs, labels, torch.float32)
    ours = _run_ours(model, inputs, labels, CpuBackend)
    assert model.problem_type(Tensor.from_data(labels, backend=CpuBackend)) == \
        hf.config.problem_type  # transformers stores the type it inferred
    _compare(ours, theirs, 1e-5)


@pytest.mark.parametrize(("name", "hf_cls"), [
    ("gelu_tied", tf.BertForMaskedLM), ("gelu_new_untied", tf.BertForMaskedLM),
    ("gelu_new_untied", tf.BertForSequenceClassification),
    ("relu_single_label", tf.BertForSequenceClassification), ("gelu_tied", tf.BertModel)],
    ids=lambda x: x if isinstance(x, str) else x.__name__)
def test_float64_outputs_and_gradients_match_transformers(name: str, hf_cls: type[Any],
                                                          tmp_path: Path) -> None:
    hf = _write(name, hf_cls, tmp_path).double()
    model = CLASSES[hf_cls].from_pretrained(tmp_path, backend=AD, dtype="float64")
    inputs = _inputs(hf.config)
    labels = None if hf_cls is tf.BertModel else _labels(hf, "int" if hf.config.num_labels > 1
                                                          else "float")
    theirs = _run_theirs(hf, inputs, labels, torch.float64)
    ours = _run_ours(model, inputs, labels, AD, "float64")
    _compare(ours, theirs, 1e-10)
    if labels is None:  # the base model: a weighted sum of both outputs
        rng = np.random.default_rng(1)
        w_h = rng.standard_normal(theirs.last_hidden_state.shape)
        w_p = rng.standard_normal(theirs.pooler_output.shape)
        ((theirs.last_hidden_state * torch.from_numpy(w_h)).sum()
         + (theirs.pooler_output * torch.from_numpy(w_p)).sum()).backward()
        loss = (ours.last_hidden_state * Tensor.from_data(w_h, backend=AD)).sum() \
            + (ours.pooler_output * Tensor.from_data(w_p, backend=AD)).sum()
    else:
        theirs.loss.backward()
        loss = ours.loss
    grads = loss.backward()
    torch_params = dict(hf.named_parameters())
    ours_params = dict(model.named_parameters())
    assert set(ours_params) == set(torch_params)
    for key, p in ours_params.items():  # the key biases' gradients are 0 (softmax ignores a
        # shift along the keys) up to rounding: those compare at a gradient's usual scale
        _close(p.grad(grads), torch_params[key].grad, 1e-10, f"gradient of {key}", 1e-3)


def test_bfloat16_sharded_checkpoint(tmp_path: Path) -> None:
    hf = _write("gelu_new_untied", tf.BertForMaskedLM, tmp_path, dtype=torch.bfloat16,
                max_shard_size="4KB")
    index = json.loads((tmp_path / "model.safetensors.index.json").read_text())
    assert len(set(index["weight_map"].values())) > 1
    model = BertForMaskedLM.from_pretrained(tmp_path, backend=CpuBackend)
    inputs = _inputs(hf.config)
    with torch.no_grad():
        theirs = _run_theirs(hf, inputs, None, torch.float32)
    _compare(_run_ours(model, inputs, None, CpuBackend), theirs, 1e-5)


def test_wgpu_forward_matches_transformers(tmp_path: Path) -> None:
    from burnpy_wgpu import WgpuBackend
    hf = _write("gelu_tied", tf.BertForSequenceClassification, tmp_path)
    model = BertForSequenceClassification.from_pretrained(tmp_path, backend=WgpuBackend)
    inputs, labels = _inputs(hf.config), _labels(hf, "int")
    with torch.no_grad():
        theirs = _run_theirs(hf, inputs, labels, torch.float32)
    _compare(_run_ours(model, inputs, labels, WgpuBackend), theirs, 1e-4)


def test_legacy_names_are_read_and_missing_or_unexpected_keys_reported(tmp_path: Path) -> None:
    from safetensors.torch import load_file, save_file
    hf = _write("gelu_tied", tf.BertForMaskedLM, tmp_path)
    path = tmp_path / "model.safetensors"
    state = load_file(path)
    legacy = {k.replace("LayerNorm.weight", "LayerNorm.gamma")
              .replace("LayerNorm.bias", "LayerNorm.beta"): v for k, v in state.items()}
    legacy["bert.embeddings.position_ids"] = torch.arange(40)[None]  # an old saved buffer
    for key, shape in (("bert.pooler.dense.weight", (16, 16)), ("bert.pooler.dense.bias", (16,)),
                       ("cls.seq_relationship.weight", (2, 16)),
                       ("cls.seq_relationship.bias", (2,))):  # a pretraining checkpoint's
        legacy[key] = torch.zeros(shape)
    save_file(legacy, path, metadata={"format": "pt"})
    model = BertForMaskedLM.from_pretrained(tmp_path, backend=CpuBackend)
    inputs = _inputs(hf.config)
    with torch.no_grad():
        theirs = _run_theirs(hf, inputs, None, torch.float32)
    _compare(_run_ours(model, inputs, None, CpuBackend), theirs, 1e-5)
    base = BertModel.from_pretrained(tmp_path, backend=CpuBackend, strict=False)
    assert base.loading_info[0] == []  # the pretraining checkpoint's pooler is BertModel's
    assert {k.split(".")[0] for k in base.loading_info[1]} == {"cls"}
    _close(base(Tensor.from_data(inputs["input_ids"], backend=CpuBackend)).last_hidden_state,
           hf.bert(torch.from_numpy(inputs["input_ids"])).last_hidden_state, 1e-5,
           "BertModel from a BertForMaskedLM checkpoint")
    state.pop("cls.predictions.bias")
    state["cls.extra.weight"] = torch.zeros(2)
    save_file(state, path, metadata={"format": "pt"})
    with pytest.raises(StateDictError, match=r"missing cls\.predictions\.bias.*unexpected "
                                             r"cls\.extra\.weight"):
        BertForMaskedLM.from_pretrained(tmp_path, backend=CpuBackend)


@pytest.mark.parametrize(("change", "field"), [
    ({"hidden_act": "gelu_10"}, "hidden_act"),
    ({"position_embedding_type": "relative_key"}, "position_embedding_type"),
    ({"is_decoder": True}, "is_decoder"),
    ({"problem_type": "ranking"}, "problem_type"),
    ({"num_labels": 5}, "num_labels"),
    ({"hidden_size": 18}, "hidden_size"),
    ({"model_type": "roberta"}, "model_type"),
    ({"layer_norm_eps": "small"}, "layer_norm_eps"),
])
def test_unsupported_config_is_refused_naming_the_field(change: dict[str, Any], field: str,
                                                       tmp_path: Path) -> None:
    _write("gelu_tied", tf.BertForSequenceClassification, tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, **change}))
    with pytest.raises(ConfigError, match=f"config field {field}"):
        BertForSequenceClassification.from_pretrained(tmp_path, backend=CpuBackend)
    assert BertConfig().num_labels == 2  # and the defaults are transformers'


@pytest.mark.parametrize("hf_cls", [tf.BertModel, tf.BertForMaskedLM,
                                    tf.BertForSequenceClassification])
def test_from_pretrained_picks_the_saved_architecture(hf_cls: type[Any],
                                                      tmp_path: Path) -> None:
    """``bp.models.from_pretrained`` reads ``architectures`` from the config and builds that
    class, whose logits (or hidden states) are transformers'."""
    theirs = _write("gelu_tied", hf_cls, tmp_path)
    ours = bpm.from_pretrained(tmp_path, backend=CpuBackend)
    assert type(ours).__name__ == hf_cls.__name__
    inputs = _inputs(theirs.config)
    _compare(_run_ours(ours, inputs, None, CpuBackend),
             _run_theirs(theirs, inputs, None, torch.float32), 1e-5)
