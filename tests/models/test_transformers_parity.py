"""burnpy.models against transformers itself: tiny random-weight checkpoints written with
``save_pretrained`` at test time, loaded by ``bp.models.from_pretrained``, outputs and
gradients compared with transformers' (1e-5 relative in float32, 1e-10 in float64) and greedy
``generate`` token for token."""

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
from burnpy.nn.module import StateDictError
from burnpy.tensor import Tensor
from burnpy_cpu import CpuBackend

AD = Autodiff(CpuBackend)

CONFIGS: dict[str, tuple[type[Any], dict[str, Any]]] = {
    "gpt2_tied": (tf.GPT2LMHeadModel, dict(
        model_type="gpt2", vocab_size=61, n_positions=40, n_embd=16, n_layer=2, n_head=4)),
    "gpt2_untied": (tf.GPT2LMHeadModel, dict(
        model_type="gpt2", vocab_size=53, n_positions=40, n_embd=24, n_layer=3, n_head=3,
        n_inner=40, activation_function="gelu", scale_attn_by_inverse_layer_idx=True,
        layer_norm_epsilon=1e-4, tie_word_embeddings=False)),
    "llama_gqa_tied": (tf.LlamaForCausalLM, dict(
        model_type="llama", vocab_size=61, hidden_size=16, intermediate_size=24,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        tie_word_embeddings=True, max_position_embeddings=64)),
    "llama3_bias_untied": (tf.LlamaForCausalLM, dict(
        model_type="llama", vocab_size=53, hidden_size=24, intermediate_size=32,
        num_hidden_layers=2, num_attention_heads=3, num_key_value_heads=3, head_dim=8,
        attention_bias=True, mlp_bias=True, tie_word_embeddings=False,
        max_position_embeddings=64, pad_token_id=0,
        rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                         "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                         "original_max_position_embeddings": 16})),
    "llama_base": (tf.LlamaModel, dict(
        model_type="llama", vocab_size=40, hidden_size=16, intermediate_size=20,
        num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1)),
}
GPT2 = {"gpt2_tied", "gpt2_untied"}


def _config(name: str) -> Any:
    cls, fields = CONFIGS[name]
    fields = dict(fields)
    config_cls = tf.GPT2Config if fields.pop("model_type") == "gpt2" else tf.LlamaConfig
    return cls, config_cls(**fields)


def _write(name: str, path: Path, dtype: torch.dtype = torch.float32,
           max_shard_size: str | None = None) -> Any:
    """A seeded random-weight transformers model saved to ``path``; returns it in float32."""
    cls, config = _config(name)
    torch.manual_seed(sum(map(ord, name)))
    model = cls(config).eval()
    with torch.no_grad():  # visible norms and biases, not ones and zeros
        for p in model.parameters():
            p.add_(0.1 * torch.randn_like(p))
    kwargs = {} if max_shard_size is None else {"max_shard_size": max_shard_size}
    model.to(dtype).save_pretrained(path, **kwargs)
    return cls.from_pretrained(path, dtype=torch.float32).eval()


def _float64_oracle(model: Any) -> Any:
    """transformers' model in float64 throughout: its RMSNorm and RoPE compute in float32
    whatever the dtype (precision choices for half types), so a 1e-10 comparison needs them
    in the model's dtype, as burnpy computes them."""
    model = model.double()
    for m in model.modules():
        if isinstance(m, tf.models.llama.modeling_llama.LlamaRMSNorm):
            m.forward = lambda x, m=m: m.weight * (
                x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + m.variance_epsilon))
        if isinstance(m, tf.models.llama.modeling_llama.LlamaRotaryEmbedding):
            def rope(x: torch.Tensor, position_ids: torch.Tensor, m: Any = m) -> Any:
                inv = torch.from_numpy(bpm.llama.rope_inv_freq(
                    bpm.LlamaConfig.from_dict(m.config.to_dict()), bpm.llama.DType.float64))
                freqs = position_ids[..., None].double() * inv
                emb = torch.cat((freqs, freqs), -1)
                return emb.cos(), emb.sin()
            m.forward = rope
    return model


def _ids(vocab: int) -> tuple[np.ndarray, np.ndarray]:
    """A left-padded batch of two prompts of 7 positions (the second has 3 pads)."""
    rng = np.random.default_rng(0)
    ids = rng.integers(1, vocab, size=(2, 7))
    mask = np.ones_like(ids)
    mask[1, :3] = 0
    return ids, mask


def _close(actual: Tensor, expected: torch.Tensor, rtol: float, where: str) -> None:
    a = actual.into_data().array.astype(np.float64)
    e = expected.detach().double().numpy()
    assert a.shape == e.shape, where
    err = np.abs(a - e).max() / max(np.abs(e).max(), 1e-30)
    assert err <= rtol, f"{where}: relative error {err:.3g} > {rtol}"


def _compare_outputs(ours: Any, theirs: Any, mask: np.ndarray, rtol: float) -> None:
    valid = mask.astype(bool)  # padded positions carry no meaning in either
    got = ours.logits if hasattr(ours, "logits") else ours.last_hidden_state
    want = theirs.logits if hasattr(theirs, "logits") else theirs.last_hidden_state
    _close(got[Tensor.from_data(valid, backend=got.backend)], want[torch.from_numpy(valid)],
           rtol, "output")
    assert len(ours.hidden_states) == len(theirs.hidden_states)
    for i, (h, g) in enumerate(zip(ours.hidden_states, theirs.hidden_states, strict=True)):
        _close(h[Tensor.from_data(valid, backend=h.backend)], g[torch.from_numpy(valid)], rtol,
               f"hidden state {i}")


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_outputs_match_transformers_in_float32_with_padding(name: str, tmp_path: Path) -> None:
    hf = _write(name, tmp_path)
    model = bpm.from_pretrained(tmp_path, backend=CpuBackend)
    assert type(model).__name__ == type(hf).__name__
    ids, mask = _ids(hf.config.vocab_size)
    with torch.no_grad():
        theirs = hf(torch.from_numpy(ids), attention_mask=torch.from_numpy(mask),
                    output_hidden_states=True)
    ours = model(Tensor.from_data(ids, backend=CpuBackend),
                 attention_mask=Tensor.from_data(mask, backend=CpuBackend),
                 output_hidden_states=True)
    _compare_outputs(ours, theirs, mask, 1e-5)
    full = np.ones_like(mask)  # and without a mask: the causal fast path
    with torch.no_grad():
        theirs = hf(torch.from_numpy(ids), output_hidden_states=True)
    _compare_outputs(model(Tensor.from_data(ids, backend=CpuBackend), output_hidden_states=True),
                     theirs, full, 1e-5)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_float64_outputs_and_gradients_match_transformers(name: str, tmp_path: Path) -> None:
    hf = _float64_oracle(_write(name, tmp_path))
    model = bpm.from_pretrained(tmp_path, backend=AD, dtype="float64")
    ids, mask = _ids(hf.config.vocab_size)
    theirs = hf(torch.from_numpy(ids), attention_mask=torch.from_numpy(mask),
                output_hidden_states=True)
    ours = model(Tensor.from_data(ids, backend=AD),
                 attention_mask=Tensor.from_data(mask, backend=AD), output_hidden_states=True)
    _compare_outputs(ours, theirs, mask, 1e-10)
    out_t = theirs.logits if hasattr(theirs, "logits") else theirs.last_hidden_state
    out_b = ours.logits if hasattr(ours, "logits") else ours.last_hidden_state
    weights = np.random.default_rng(1).standard_normal(out_t.shape) * mask[..., None]
    (out_t * torch.from_numpy(weights)).sum().backward()
    grads = (out_b * Tensor.from_data(weights, backend=AD)).sum().backward()
    torch_params = dict(hf.named_parameters())
    ours_params = dict(model.named_parameters())
    assert set(ours_params) == set(torch_params)
    for key, p in ours_params.items():
        _close(p.grad(grads), torch_params[key].grad, 1e-10, f"gradient of {key}")


@pytest.mark.parametrize("name", ["gpt2_untied", "llama_gqa_tied"])
def test_bfloat16_sharded_checkpoint(name: str, tmp_path: Path) -> None:
    hf = _write(name, tmp_path, dtype=torch.bfloat16, max_shard_size="4KB")
    assert (tmp_path / "model.safetensors.index.json").exists()
    assert len(json.loads((tmp_path / "model.safetensors.index.json").read_text())
               ["weight_map"]) > 1
    model = bpm.from_pretrained(tmp_path, backend=CpuBackend)
    ids, mask = _ids(hf.config.vocab_size)
    with torch.no_grad():
        theirs = hf(torch.from_numpy(ids), attention_mask=torch.from_numpy(mask),
                    output_hidden_states=True)
    ours = model(Tensor.from_data(ids, backend=CpuBackend),
                 attention_mask=Tensor.from_data(mask, backend=CpuBackend),
                 output_hidden_states=True)
    _compare_outputs(ours, theirs, mask, 1e-5)


@pytest.mark.parametrize("name", ["gpt2_tied", "llama3_bias_untied", "llama_gqa_tied"])
def test_greedy_generate_matches_transformers(name: str, tmp_path: Path) -> None:
    hf = _write(name, tmp_path)
    ids, mask = _ids(hf.config.vocab_size)
    kw = {"attention_mask": mask, "max_new_tokens": 9, "do_sample": False, "pad_token_id": 0}
    with torch.no_grad():
        want = hf.generate(torch.from_numpy(ids), **{
            **kw, "attention_mask": torch.from_numpy(mask)}).numpy()
    plain = bpm.from_pretrained(tmp_path, backend=CpuBackend)
    got = plain.generate(Tensor.from_data(ids, backend=CpuBackend), **kw)
    np.testing.assert_array_equal(got.into_data().array, want)
    # a stop token one row reaches early: that row is padded, the other continues
    eos = int(want[0, ids.shape[1] + 2])
    with torch.no_grad():
        want = hf.generate(torch.from_numpy(ids), eos_token_id=eos, **{
            **kw, "attention_mask": torch.from_numpy(mask)}).numpy()
    trained = bpm.from_pretrained(tmp_path, backend=AD)  # generates on its inner backend
    got = trained.generate(Tensor.from_data(ids, backend=AD), eos_token_id=eos, **kw)
    np.testing.assert_array_equal(got.into_data().array, want)


def test_missing_and_unexpected_keys_are_reported(tmp_path: Path) -> None:
    _write("llama_gqa_tied", tmp_path)
    from safetensors.torch import load_file, save_file
    state = load_file(tmp_path / "model.safetensors")
    state.pop("model.norm.weight")
    state["model.extra.weight"] = torch.zeros(2)
    save_file(state, tmp_path / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(StateDictError, match=r"missing model\.norm\.weight.*unexpected "
                                             r"model\.extra\.weight"):
        bpm.from_pretrained(tmp_path, backend=CpuBackend)
    model = bpm.from_pretrained(tmp_path, backend=CpuBackend, strict=False)
    assert model.loading_info == (["model.norm.weight"], ["model.extra.weight"])


def test_a_missing_weight_is_initialized(tmp_path: Path) -> None:
    """The model is built without initializing its weights; one the file lacks (strict=False)
    gets the architecture's initialization: Linear's U(-1/sqrt(in), 1/sqrt(in))."""
    _write("llama_gqa_tied", tmp_path)
    from safetensors.torch import load_file, save_file
    state = load_file(tmp_path / "model.safetensors")
    state.pop("model.layers.0.mlp.up_proj.weight")
    save_file(state, tmp_path / "model.safetensors", metadata={"format": "pt"})
    model = bpm.LlamaForCausalLM.from_pretrained(tmp_path, backend=CpuBackend, strict=False)
    assert model.loading_info == (["model.layers.0.mlp.up_proj.weight"], [])
    w = model.model.layers[0].mlp.up_proj.weight.into_data().array
    assert w.shape == (24, 16) and np.abs(w).max() <= 0.25 and w.std() > 0.05


@pytest.mark.parametrize(("change", "field"), [
    ({"model_type": "mamba"}, "model_type"),
    ({"hidden_act": "gelu_10"}, "hidden_act"),
    ({"rope_parameters": {"rope_type": "yarn", "rope_theta": 1e4, "factor": 2.0}},
     "rope_parameters.rope_type"),
    ({"rope_parameters": {"rope_type": "llama3", "rope_theta": 1e4, "factor": 2.0}},
     "rope_parameters.low_freq_factor"),
    ({"num_hidden_layers": "2"}, "num_hidden_layers"),
])
def test_unsupported_config_is_refused_naming_the_field(change: dict[str, Any], field: str,
                                                       tmp_path: Path) -> None:
    _write("llama_base", tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, **change}))
    with pytest.raises(bpm.ConfigError, match=f"config field {field}"):
        bpm.from_pretrained(tmp_path, backend=CpuBackend)


def test_load_state_dict_assign_takes_the_tensor_without_copying() -> None:
    import burnpy.nn as nn
    layer = nn.Linear(3, 2, backend=CpuBackend)
    weight = Tensor.from_data(np.arange(6.0).reshape(2, 3), backend=CpuBackend, dtype="float32")
    layer.load_state_dict({"weight": weight, "bias": np.zeros(2)})
    assert not np.shares_memory(layer.weight.primitive, weight.primitive)  # torch's copy
    layer.load_state_dict({"weight": weight, "bias": np.zeros(2)}, assign=True)
    assert layer.weight.primitive is weight.primitive
    trained = nn.Linear(3, 2, backend=AD)
    trained.load_state_dict({"weight": weight, "bias": np.zeros(2)}, assign=True)
    assert trained.weight.is_require_grad()  # moved to the module's backend, trainable
    np.testing.assert_array_equal(trained.weight.into_data().array, weight.into_data().array)
    with pytest.raises(StateDictError, match="'weight' has shape"):
        layer.load_state_dict({"weight": weight.t(), "bias": np.zeros(2)}, assign=True)


def test_truncated_safetensors_file_is_a_record_error(tmp_path: Path) -> None:
    from burnpy.backend.errors import RecordError
    from burnpy.record import map_safetensors
    _write("llama_base", tmp_path)
    path = tmp_path / "model.safetensors"
    assert map_safetensors(path)["norm.weight"].array.base is not None  # a view of the map
    path.write_bytes(path.read_bytes()[:-64])
    with pytest.raises(RecordError, match="do not fit"):
        map_safetensors(path)


def test_sampling_with_top_k_one_is_greedy_and_base_model_loads_from_a_head_checkpoint(
        tmp_path: Path) -> None:
    hf = _write("llama3_bias_untied", tmp_path)
    model = bpm.from_pretrained(tmp_path, backend=CpuBackend)
    assert isinstance(model, bpm.LlamaForCausalLM)
    ids, mask = _ids(hf.config.vocab_size)
    greedy = model.generate(ids, 6, attention_mask=mask).into_data().array
    sampled = model.generate(ids, 6, do_sample=True, temperature=0.7, top_k=1, top_p=0.9,
                             attention_mask=mask).into_data().array
    np.testing.assert_array_equal(sampled, greedy)
    base = bpm.LlamaModel.from_pretrained(tmp_path, backend=CpuBackend, strict=False)
    assert base.loading_info == ([], ["lm_head.weight"])  # the checkpoint's prefix is dropped
    with torch.no_grad():
        want = hf.model(torch.from_numpy(ids)).last_hidden_state
    _close(base(Tensor.from_data(ids, backend=CpuBackend)).last_hidden_state, want, 1e-5,
           "LlamaModel from a LlamaForCausalLM checkpoint")
