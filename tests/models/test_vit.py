"""burnpy's ViT against transformers itself: tiny random-weight checkpoints written with
``save_pretrained`` at test time (float32 and bfloat16 files), loaded with
``from_pretrained``; hidden states, pooled output, logits and loss compared at 1e-5 relative in
float32 and 1e-10 in float64, every parameter's gradient against torch autograd at 1e-10, and
the float32 forward on WebGPU (its CPU software adapter) at 1e-4."""

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
from burnpy.backend.errors import ShapeError
from burnpy.models.modeling import ConfigError, read_weights
from burnpy.models.vit import ViTForImageClassification, ViTModel
from burnpy.tensor import Tensor
from burnpy_cpu import CpuBackend
from tests.models.test_transformers_parity import _close

AD = Autodiff(CpuBackend)

CONFIGS: dict[str, tuple[type[Any], type[Any], dict[str, Any]]] = {
    "classifier": (tf.ViTForImageClassification, ViTForImageClassification, dict(
        hidden_size=16, num_hidden_layers=2, num_attention_heads=4, intermediate_size=24,
        image_size=8, patch_size=4, num_labels=3)),
    "base_rectangular": (tf.ViTModel, ViTModel, dict(
        hidden_size=12, num_hidden_layers=3, num_attention_heads=3, intermediate_size=20,
        image_size=[8, 12], patch_size=[4, 3], num_channels=2, qkv_bias=False,
        hidden_act="gelu_new", layer_norm_eps=1e-6, pooler_output_size=10, pooler_act="relu")),
    "regression": (tf.ViTForImageClassification, ViTForImageClassification, dict(
        hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16,
        image_size=6, patch_size=2, num_channels=1, num_labels=1)),
}


def _write(name: str, path: Path, dtype: torch.dtype = torch.float32) -> Any:
    """A seeded random-weight transformers model saved to ``path``; returns it in float32."""
    hf_cls, _, fields = CONFIGS[name]
    torch.manual_seed(sum(map(ord, name)))
    model = hf_cls(tf.ViTConfig(**fields)).eval()
    with torch.no_grad():  # visible norms and biases, not ones and zeros
        for p in model.parameters():
            p.add_(0.1 * torch.randn_like(p))
    model.to(dtype).save_pretrained(path)
    return hf_cls.from_pretrained(path, dtype=torch.float32, attn_implementation="sdpa").eval()


def _inputs(config: Any, batch: int = 2, size: tuple[int, int] | None = None) -> np.ndarray:
    h, w = size or (tuple(config.image_size) if isinstance(config.image_size, list)
                    else (config.image_size,) * 2)
    return np.random.default_rng(0).standard_normal(
        (batch, config.num_channels, h, w)).astype(np.float32)


def _labels(name: str) -> np.ndarray | None:
    """Class indices for a classifier, regression targets for one label, None for a base."""
    num_labels = CONFIGS[name][2].get("num_labels")
    rng = np.random.default_rng(1)
    if num_labels is None:
        return None
    if num_labels == 1:
        return rng.standard_normal(2).astype(np.float32)
    return rng.integers(0, num_labels, size=2)


def _compare(ours: Any, theirs: Any, rtol: float) -> None:
    if hasattr(theirs, "logits"):
        _close(ours.logits, theirs.logits, rtol, "logits")
        if theirs.loss is not None:
            _close(ours.loss, theirs.loss, rtol, "loss")
    else:
        _close(ours.last_hidden_state, theirs.last_hidden_state, rtol, "last_hidden_state")
        _close(ours.pooler_output, theirs.pooler_output, rtol, "pooler_output")
    assert len(ours.hidden_states) == len(theirs.hidden_states)
    for i, (h, g) in enumerate(zip(ours.hidden_states, theirs.hidden_states, strict=True)):
        _close(h, g, rtol, f"hidden state {i}")


def _run(hf: Any, model: Any, backend: Any, x: np.ndarray, labels: np.ndarray | None,
         **kw: Any) -> tuple[Any, Any]:
    tx = torch.from_numpy(x).to(next(hf.parameters()).dtype)
    extra = {} if labels is None else {"labels": torch.from_numpy(labels)}
    theirs = hf(tx, output_hidden_states=True, **extra, **kw)
    extra_b = {} if labels is None else {"labels": Tensor.from_data(labels, backend=backend)}
    ours = model(Tensor.from_data(x, backend=backend), output_hidden_states=True, **extra_b,
                 **kw)
    return ours, theirs


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_float32_outputs_match_transformers(name: str, tmp_path: Path) -> None:
    hf = _write(name, tmp_path)
    model = bpm.from_pretrained(tmp_path, backend=CpuBackend)  # the class config.json names
    assert type(model) is CONFIGS[name][1]
    with torch.no_grad():
        ours, theirs = _run(hf, model, CpuBackend, _inputs(hf.config), _labels(name))
    _compare(ours, theirs, 1e-5)


def _match_by_value(ours: dict[str, Tensor], theirs: dict[str, torch.Tensor]) -> dict[str, str]:
    """Our parameter name for each of transformers' (its module names differ from the saved
    ones): random values pair them one to one."""
    pairs: dict[str, str] = {}
    for key, p in theirs.items():
        want = p.detach().numpy()
        hits = [k for k, t in ours.items() if t.shape == tuple(want.shape)
                and np.array_equal(t.into_data().array, want)]
        assert len(hits) == 1, f"{key}: {hits}"
        pairs[key] = hits[0]
    assert sorted(pairs.values()) == sorted(ours)
    return pairs


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_float64_outputs_and_gradients_match_transformers(name: str, tmp_path: Path) -> None:
    hf = _write(name, tmp_path).double()
    model = CONFIGS[name][1].from_pretrained(tmp_path, backend=AD, dtype="float64")
    labels = _labels(name)
    x = _inputs(hf.config).astype(np.float64)
    ours, theirs = _run(hf, model, AD, x, labels)
    _compare(ours, theirs, 1e-10)
    if getattr(theirs, "loss", None) is not None:
        loss_t, loss_b = theirs.loss, ours.loss
    else:
        w = np.random.default_rng(2).standard_normal(theirs.last_hidden_state.shape)
        v = np.random.default_rng(3).standard_normal(theirs.pooler_output.shape)
        loss_t = (theirs.last_hidden_state * torch.from_numpy(w)).sum() + (
            theirs.pooler_output * torch.from_numpy(v)).sum()
        loss_b = (ours.last_hidden_state * Tensor.from_data(w, backend=AD)).sum() + (
            ours.pooler_output * Tensor.from_data(v, backend=AD)).sum()
    loss_t.backward()
    grads = loss_b.backward()
    ours_params = dict(model.named_parameters())
    theirs_params = dict(hf.named_parameters())
    _close_gradients({ours_key: (ours_params[ours_key].grad(grads), theirs_params[key].grad)
                      for key, ours_key in _match_by_value(ours_params, theirs_params).items()})


def _close_gradients(pairs: dict[str, tuple[Tensor | None, torch.Tensor | None]]) -> None:
    """Every gradient within 1e-10 of the largest one: the key biases' gradients are zero
    (softmax ignores a shift shared by all keys), so each holds only rounding."""
    scale = max(float(t.abs().max()) for _, t in pairs.values() if t is not None)
    for name, (ours, theirs) in pairs.items():
        assert ours is not None and theirs is not None, name
        err = np.abs(ours.into_data().array - theirs.numpy()).max() / scale
        assert err <= 1e-10, f"gradient of {name}: error {err:.3g} of the largest gradient"


def test_problem_types_give_transformers_losses(tmp_path: Path) -> None:
    _write("classifier", tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    rng = np.random.default_rng(4)
    cases = {
        "single_label_classification": np.array([2, 0]),
        "multi_label_classification": (rng.random((2, 3)) > 0.5).astype(np.float32),
        "regression": rng.standard_normal((2, 3)).astype(np.float32),
    }
    x = _inputs(tf.ViTConfig(**CONFIGS["classifier"][2]))
    for problem, labels in cases.items():
        (tmp_path / "config.json").write_text(json.dumps({**config, "problem_type": problem}))
        hf = tf.ViTForImageClassification.from_pretrained(tmp_path).eval()
        model = ViTForImageClassification.from_pretrained(tmp_path, backend=CpuBackend)
        assert model.config.problem_type == problem
        with torch.no_grad():
            want = hf(torch.from_numpy(x), labels=torch.from_numpy(labels)).loss
        got = model(Tensor.from_data(x, backend=CpuBackend),
                    labels=Tensor.from_data(labels, backend=CpuBackend)).loss
        assert got is not None
        _close(got, want, 1e-5, problem)
    (tmp_path / "config.json").write_text(json.dumps({**config, "problem_type": None}))
    model = ViTForImageClassification.from_pretrained(tmp_path, backend=CpuBackend)
    with pytest.raises(ShapeError, match="labels must be shaped like the logits"):
        model(Tensor.from_data(x, backend=CpuBackend),  # float labels: multi-label
              labels=Tensor.from_data(np.zeros(2, np.float32), backend=CpuBackend))


def test_interpolated_position_encoding_matches_transformers(tmp_path: Path) -> None:
    hf = _write("classifier", tmp_path)
    model = ViTForImageClassification.from_pretrained(tmp_path, backend=CpuBackend)
    for size in ((12, 16), (8, 8)):
        x = _inputs(hf.config, size=size)
        with torch.no_grad():
            ours, theirs = _run(hf, model, CpuBackend, x, None, interpolate_pos_encoding=True)
        _compare(ours, theirs, 1e-5)
    with pytest.raises(ShapeError, match=r"image is 12x16.*image_size is 8x8"):
        model(Tensor.from_data(_inputs(hf.config, size=(12, 16)), backend=CpuBackend))
    with pytest.raises(ShapeError, match=r"pixel_values must be \[batch, 3"):
        model(Tensor.from_data(np.zeros((1, 2, 8, 8), np.float32), backend=CpuBackend))


def test_bfloat16_checkpoint_and_base_model_from_a_classifier(tmp_path: Path) -> None:
    hf = _write("classifier", tmp_path, dtype=torch.bfloat16)
    model = ViTForImageClassification.from_pretrained(tmp_path, backend=CpuBackend)
    assert dict(model.named_parameters())["classifier.weight"].dtype.name == "float32"
    x = _inputs(hf.config)
    with torch.no_grad():
        ours, theirs = _run(hf, model, CpuBackend, x, None)
    _compare(ours, theirs, 1e-5)
    base = ViTModel.from_pretrained(tmp_path, backend=CpuBackend, strict=False)
    assert base.loading_info == (["pooler.dense.weight", "pooler.dense.bias"],
                                 ["classifier.bias", "classifier.weight"])
    got = ViTModel(base.config, backend=CpuBackend, add_pooling_layer=False)
    assert got.load_checkpoint(read_weights(tmp_path), strict=False) == (
        [], ["classifier.bias", "classifier.weight"])
    with torch.no_grad():
        want = hf.vit(torch.from_numpy(x)).last_hidden_state
    _close(got.eval()(Tensor.from_data(x, backend=CpuBackend)).last_hidden_state, want, 1e-5,
           "ViTModel without its pooler")


def test_wgpu_float32_forward_matches_transformers(tmp_path: Path) -> None:
    from burnpy_wgpu import WgpuBackend
    hf = _write("base_rectangular", tmp_path)
    model = ViTModel.from_pretrained(tmp_path, backend=WgpuBackend)
    with torch.no_grad():
        ours, theirs = _run(hf, model, WgpuBackend, _inputs(hf.config), None)
    _compare(ours, theirs, 1e-4)


@pytest.mark.parametrize(("change", "field"), [
    ({"hidden_act": "gelu_10"}, "hidden_act"),
    ({"pooler_act": "mish"}, "pooler_act"),
    ({"problem_type": "ranking"}, "problem_type"),
    ({"patch_size": [4, 4, 4]}, "patch_size"),
    ({"num_attention_heads": 5}, "hidden_size"),
    ({"num_labels": 5}, "num_labels"),
])
def test_unsupported_config_is_refused_naming_the_field(change: dict[str, Any], field: str,
                                                       tmp_path: Path) -> None:
    _write("base_rectangular", tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, "id2label": {"0": "a"},
                                                      **change}))
    with pytest.raises(ConfigError, match=f"config field {field}"):
        ViTModel.from_pretrained(tmp_path, backend=CpuBackend)
