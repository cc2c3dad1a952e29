"""burnpy's ResNet against transformers itself: tiny random-weight basic and bottleneck
checkpoints (random BatchNorm statistics too) written with ``save_pretrained`` at test time,
in float32 and bfloat16; feature maps, pooled features, logits and loss compared at 1e-5
relative in float32 and 1e-10 in float64, every parameter's gradient against torch autograd
at 1e-10 in eval and in train mode (with the updated running statistics), and the float32
forward on WebGPU (its CPU software adapter) at 1e-4."""

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
from burnpy.models.modeling import ConfigError
from burnpy.models.resnet import ResNetForImageClassification, ResNetModel
from burnpy.tensor import Tensor
from burnpy_cpu import CpuBackend
from tests.models.test_transformers_parity import _close

AD = Autodiff(CpuBackend)

CONFIGS: dict[str, tuple[type[Any], type[Any], dict[str, Any]]] = {
    "basic_classifier": (tf.ResNetForImageClassification, ResNetForImageClassification, dict(
        embedding_size=8, hidden_sizes=[8, 16], depths=[1, 2], layer_type="basic",
        num_labels=3)),
    "bottleneck_base": (tf.ResNetModel, ResNetModel, dict(
        num_channels=2, embedding_size=8, hidden_sizes=[16, 32], depths=[2, 1],
        layer_type="bottleneck", hidden_act="gelu", downsample_in_first_stage=True,
        downsample_in_bottleneck=True)),
    "bottleneck_classifier": (tf.ResNetForImageClassification, ResNetForImageClassification,
                              dict(embedding_size=4, hidden_sizes=[8, 16, 24], depths=[1, 1, 1],
                                   num_labels=5)),
}


def _write(name: str, path: Path, dtype: torch.dtype = torch.float32) -> Any:
    """A seeded random-weight transformers model, with random BatchNorm statistics, saved to
    ``path``; returns it in float32."""
    hf_cls, _, fields = CONFIGS[name]
    torch.manual_seed(sum(map(ord, name)))
    model = hf_cls(tf.ResNetConfig(**fields)).eval()
    with torch.no_grad():  # visible norms, biases and statistics, not ones and zeros
        for p in model.parameters():
            p.add_(0.1 * torch.randn_like(p))
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                mean, var, count = m.running_mean, m.running_var, m.num_batches_tracked
                assert mean is not None and var is not None and count is not None
                mean.normal_(0.0, 0.2)
                var.uniform_(0.5, 1.5)
                count.fill_(7)
    model.to(dtype).save_pretrained(path)
    return hf_cls.from_pretrained(path, dtype=torch.float32).eval()


def _inputs(name: str, batch: int = 2) -> np.ndarray:
    channels = CONFIGS[name][2].get("num_channels", 3)
    return np.random.default_rng(0).standard_normal((batch, channels, 32, 32))


def _labels(name: str) -> np.ndarray | None:
    num_labels = CONFIGS[name][2].get("num_labels")
    return None if num_labels is None else np.random.default_rng(1).integers(0, num_labels, 2)


def _run(hf: Any, model: Any, backend: Any, name: str, dtype: Any) -> tuple[Any, Any]:
    x, labels = _inputs(name).astype(dtype), _labels(name)
    extra = {} if labels is None else {"labels": torch.from_numpy(labels)}
    theirs = hf(torch.from_numpy(x), output_hidden_states=True, **extra)
    extra_b = {} if labels is None else {  # int32: the int dtype every backend stores
        "labels": Tensor.from_data(labels.astype(np.int32), backend=backend)}
    ours = model(Tensor.from_data(x, backend=backend), output_hidden_states=True, **extra_b)
    return ours, theirs


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


def _loss(ours: Any, theirs: Any) -> tuple[Tensor, torch.Tensor]:
    """The classifier's loss, or a random weighting of a base model's outputs."""
    if hasattr(theirs, "loss"):
        return ours.loss, theirs.loss
    w = np.random.default_rng(2).standard_normal(theirs.last_hidden_state.shape)
    v = np.random.default_rng(3).standard_normal(theirs.pooler_output.shape)
    return ((ours.last_hidden_state * Tensor.from_data(w, backend=AD)).sum()
            + (ours.pooler_output * Tensor.from_data(v, backend=AD)).sum(),
            (theirs.last_hidden_state * torch.from_numpy(w)).sum()
            + (theirs.pooler_output * torch.from_numpy(v)).sum())


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_float32_outputs_match_transformers(name: str, tmp_path: Path) -> None:
    hf = _write(name, tmp_path)
    model = bpm.from_pretrained(tmp_path, backend=CpuBackend)  # the class config.json names
    assert type(model) is CONFIGS[name][1]
    assert sorted(model.state_dict()) == sorted(hf.state_dict())
    with torch.no_grad():
        ours, theirs = _run(hf, model, CpuBackend, name, np.float32)
    _compare(ours, theirs, 1e-5)


@pytest.mark.parametrize("train", [False, True], ids=["eval", "train"])
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_float64_outputs_gradients_and_statistics_match_transformers(
        name: str, train: bool, tmp_path: Path) -> None:
    hf = _write(name, tmp_path).double().train(train)
    model = CONFIGS[name][1].from_pretrained(tmp_path, backend=AD, dtype="float64").train(train)
    ours, theirs = _run(hf, model, AD, name, np.float64)
    _compare(ours, theirs, 1e-10)
    loss_b, loss_t = _loss(ours, theirs)
    loss_t.backward()
    grads = loss_b.backward()
    theirs_params = dict(hf.named_parameters())
    ours_params = dict(model.named_parameters())
    assert sorted(ours_params) == sorted(theirs_params)
    for key, p in ours_params.items():
        _close(p.grad(grads), theirs_params[key].grad, 1e-10, f"gradient of {key}")
    theirs_buffers = dict(hf.named_buffers())
    ours_buffers = dict(model.named_buffers())
    assert sorted(ours_buffers) == sorted(theirs_buffers)
    for key, b in ours_buffers.items():  # updated by the batch in train mode, kept in eval
        if key.endswith("num_batches_tracked"):
            assert int(b.item()) == int(theirs_buffers[key]) == 7 + train, key
        else:
            _close(b, theirs_buffers[key], 1e-10, key)


def test_bfloat16_checkpoint_and_base_model_from_a_classifier(tmp_path: Path) -> None:
    hf = _write("bottleneck_classifier", tmp_path, dtype=torch.bfloat16)
    model = ResNetForImageClassification.from_pretrained(tmp_path, backend=CpuBackend)
    with torch.no_grad():
        ours, theirs = _run(hf, model, CpuBackend, "bottleneck_classifier", np.float32)
    _compare(ours, theirs, 1e-5)
    base = ResNetModel.from_pretrained(tmp_path, backend=CpuBackend, strict=False)
    assert base.loading_info == ([], ["classifier.1.bias", "classifier.1.weight"])
    x = _inputs("bottleneck_classifier").astype(np.float32)
    with torch.no_grad():
        want = hf.resnet(torch.from_numpy(x)).pooler_output
    _close(base(Tensor.from_data(x, backend=CpuBackend)).pooler_output, want, 1e-5,
           "ResNetModel from a ResNetForImageClassification checkpoint")


def test_wgpu_float32_forward_matches_transformers(tmp_path: Path) -> None:
    from burnpy_wgpu import WgpuBackend
    hf = _write("basic_classifier", tmp_path)
    model = ResNetForImageClassification.from_pretrained(tmp_path, backend=WgpuBackend)
    with torch.no_grad():
        ours, theirs = _run(hf, model, WgpuBackend, "basic_classifier", np.float32)
    _compare(ours, theirs, 1e-4)


def test_pixel_values_with_the_wrong_channels_are_refused(tmp_path: Path) -> None:
    _write("basic_classifier", tmp_path)
    model = ResNetForImageClassification.from_pretrained(tmp_path, backend=CpuBackend)
    with pytest.raises(ShapeError, match=r"pixel_values must be \[batch, 3, height, width\], "
                                         r"got \[1, 2, 32, 32\]"):
        model(Tensor.from_data(np.zeros((1, 2, 32, 32), np.float32), backend=CpuBackend))


@pytest.mark.parametrize(("change", "field"), [
    ({"layer_type": "preactivation"}, "layer_type"),
    ({"hidden_act": "gelu_10"}, "hidden_act"),
    ({"depths": [1, 1, 1]}, "depths"),
    ({"hidden_sizes": [8, "16"]}, "hidden_sizes"),
    ({"downsample_in_bottleneck": 1}, "downsample_in_bottleneck"),
])
def test_unsupported_config_is_refused_naming_the_field(change: dict[str, Any], field: str,
                                                       tmp_path: Path) -> None:
    _write("basic_classifier", tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, **change}))
    with pytest.raises(ConfigError, match=f"config field {field}"):
        ResNetForImageClassification.from_pretrained(tmp_path, backend=CpuBackend)
