"""Weight-only quantization of whole models (``burnpy.models.quantize``) and the storage and
kernels under it: int4 values held and saved packed two a byte, the CPU's compiled int8/int4
``q_linear`` against a NumPy dequantize-then-matmul oracle, tiny transformers checkpoints
whose quantized logits and greedy tokens equal transformers' own model given the same
dequantized weights, save/reload through record files, and the errors that name a layer."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import transformers as tf

import burnpy as bp
import burnpy.models as bpm
import burnpy.nn.functional as F
from burnpy import Tensor, nn
from burnpy.backend.data import TensorData, pack_bytes
from burnpy.backend.dtype import DType
from burnpy.backend.errors import (
    InvalidArgumentError,
    RecordError,
    ShapeError,
    UnsupportedDTypeError,
)
from burnpy.models.quantize import QuantizedLinear, load_quantized, quantize
from burnpy.quantization import QuantParam, QuantScheme
from burnpy_cpu import CpuBackend

RNG = np.random.default_rng(30)

# ---- packed int4 storage ---------------------------------------------------------------------


def _nibbles_oracle(values: np.ndarray) -> np.ndarray:
    """Two 4-bit two's-complement values a byte, the even-indexed one low: by arithmetic."""
    flat = [int(v) & 0xF for v in values.reshape(-1)]
    if len(flat) % 2:
        flat.append(0)
    return np.array([flat[i] | (flat[i + 1] << 4) for i in range(0, len(flat), 2)],
                    dtype=np.uint8)


def test_int4_data_holds_two_values_a_byte_and_unpacks_them() -> None:
    x = Tensor.from_data(RNG.standard_normal((3, 5)).astype(np.float32))
    q = x.quantize(QuantScheme.int4(None))
    data = q.into_data()
    values = data.array
    assert values.dtype == np.int8 and values.shape == (3, 5)
    assert values.min() >= -7 and values.max() <= 7
    np.testing.assert_array_equal(data.packed, _nibbles_oracle(values))
    assert data.shape == (3, 5)
    assert data.nbytes == 8 + 4  # ceil(15 / 2) bytes of values, one float32 scale
    again = TensorData(data.packed.copy(), data.dtype, data.quant, shape=(3, 5))
    assert again == data
    np.testing.assert_array_equal(Tensor.from_data(again).dequantize().to_numpy(),
                                  q.dequantize().to_numpy())


def test_ternary_packs_four_values_a_byte() -> None:
    values = np.array([-1, 0, 1, 1, -1, 0, 0], dtype=np.int8)
    fields = [int(v) & 3 for v in values] + [0]
    want = [fields[0] | fields[1] << 2 | fields[2] << 4 | fields[3] << 6,
            fields[4] | fields[5] << 2 | fields[6] << 4 | fields[7] << 6]
    np.testing.assert_array_equal(pack_bytes(values, 2), want)
    x = Tensor.from_data(RNG.standard_normal((4, 9)).astype(np.float32))
    data = x.quantize(QuantScheme.ternary()).into_data()
    assert data.packed.shape == (9,) and data.nbytes == 9 + 4


def test_packed_bytes_of_the_wrong_length_are_refused() -> None:
    data = Tensor.from_data(np.ones((2, 4), np.float32)).quantize(QuantScheme.int4(4)).into_data()
    with pytest.raises(bp.BurnpyError, match=r"packed bytes of shape \[2, 5\]"):
        TensorData(data.packed, data.dtype, data.quant, shape=(2, 5))


def test_int4_linear_file_is_packed_and_reloads_bit_identical(tmp_path: Path) -> None:
    sizes = {}
    for label, scheme in {"int8": QuantScheme.int8(32), "int4": QuantScheme.int4(32)}.items():
        layer = nn.Linear(1024, 1024, bias=False, backend=CpuBackend)
        layer.quantize_weights(scheme)
        path = layer.save(tmp_path / f"{label}.bpr")
        sizes[label] = os.path.getsize(path)
        data = layer.weight.into_data()
        # values: 1 byte (int8) or half a byte (int4) each; scales: 1024 * 32 float32
        assert data.nbytes == 1024 * 1024 * (1 if label == "int8" else 0.5) + 1024 * 32 * 4
        fresh = nn.Linear(1024, 1024, bias=False, backend=CpuBackend)
        fresh.quantize_weights(scheme).load(path)
        np.testing.assert_array_equal(fresh.weight.dequantize().to_numpy(),
                                      layer.weight.dequantize().to_numpy())
    assert 655_360 < sizes["int4"] < 665_000  # 0.66 MB: packed values and the block scales
    assert sizes["int8"] > 1_179_000


def test_a_file_written_before_packing_still_loads(tmp_path: Path) -> None:
    """Records written before int4 was packed hold one int8 a value and no logical shape."""
    import json
    import zlib

    import safetensors

    q = Tensor.from_data(RNG.standard_normal((4, 16)).astype(np.float32)).quantize(
        QuantScheme.int4(8))
    data = q.into_data()
    assert data.quant is not None
    arrays = {"w": np.ascontiguousarray(data.array), "w::scales": data.quant.scales}
    entries = {"w": {"kind": "quantized", "dtype": "qint4", "crc32": zlib.crc32(
                   arrays["w"].tobytes()), "scheme": data.quant.scheme.to_dict(),
                   "block_axis": 1, "float_dtype": "float32"},
               "w::scales": {"kind": "float", "dtype": "float32", "part_of": "w",
                             "crc32": zlib.crc32(arrays["w::scales"].tobytes())}}
    specs = {name: safetensors.TensorSpec(dtype=str(arr.dtype), shape=list(arr.shape),
                                          data_ptr=arr.ctypes.data, data_len=arr.nbytes)
             for name, arr in arrays.items()}
    meta = {"format": "burnpy-record", "version": "2", "kind": "module",
            "tensors": json.dumps(entries), "extra": "{}"}
    (tmp_path / "old.bpr").write_bytes(bytes(safetensors.serialize(specs, metadata=meta)))
    loaded = bp.record.read_record(tmp_path / "old.bpr").tensors["w"]
    assert loaded == data and loaded.nbytes == data.nbytes


# ---- the compiled weight-only kernels --------------------------------------------------------

KERNEL_SCHEMES = [QuantScheme.int8(), QuantScheme.int8(8), QuantScheme.int8(full_range=True),
                  QuantScheme.int4(None), QuantScheme.int4(2), QuantScheme.int4(8),
                  QuantScheme.int4(8, full_range=True),
                  QuantScheme.int4(8, two_level=True, param=QuantParam.F16)]


def _dequantized(q: Tensor) -> np.ndarray:
    """The weight ``[n, k]`` from its integer values and scales, in NumPy float64."""
    data = q.into_data()
    assert data.quant is not None
    scales = data.quant.scales.astype(np.float64)
    if data.quant.tensor_scale is not None:
        scales = scales * data.quant.tensor_scale.astype(np.float64)
    if data.quant.block_axis is not None:
        scales = np.repeat(scales, data.shape[1] // scales.shape[1], axis=1)
    return data.array.astype(np.float64) * scales


@pytest.mark.parametrize("scheme", KERNEL_SCHEMES, ids=str)
@pytest.mark.parametrize(("rows", "n", "k"), [(1, 1, 8), (1, 13, 40), (3, 7, 24), (16, 5, 64),
                                              (17, 3, 16), (2, 33, 136)])
@pytest.mark.parametrize("bias", [False, True])
def test_weight_only_kernel_equals_dequantize_then_matmul(scheme: QuantScheme, rows: int,
                                                          n: int, k: int, bias: bool) -> None:
    w = Tensor.from_data((RNG.standard_normal((n, k)) * 0.3).astype(np.float32)).quantize(scheme)
    x = RNG.standard_normal((rows, k)).astype(np.float32)
    b = RNG.standard_normal(n).astype(np.float32) if bias else None
    out = F.linear(Tensor.from_data(x), w, None if b is None else Tensor.from_data(b))
    deq = _dequantized(w)
    want = x.astype(np.float64) @ deq.T + (0.0 if b is None else b)
    bound = np.abs(x).astype(np.float64) @ np.abs(deq).T  # float32 rounding of the sums
    np.testing.assert_array_less(np.abs(out.to_numpy() - want), 1e-6 * bound + 1e-6)
    assert w.primitive.linear_plan  # the weight has a kernel plan (used up to 16 rows)


def test_a_batched_input_runs_the_kernel_on_its_flattened_rows() -> None:
    w = Tensor.from_data(RNG.standard_normal((9, 32)).astype(np.float32)).quantize(
        QuantScheme.int4(16))
    x = RNG.standard_normal((2, 3, 32)).astype(np.float32)
    out = F.linear(Tensor.from_data(x), w).to_numpy()
    assert out.shape == (2, 3, 9)
    np.testing.assert_allclose(out, x.astype(np.float64) @ _dequantized(w).T, rtol=1e-5,
                               atol=1e-5)


# ---- whole models against transformers -------------------------------------------------------

CHECKPOINTS: dict[str, tuple[type[Any], Any]] = {
    "gpt2": (tf.GPT2LMHeadModel, tf.GPT2Config(vocab_size=61, n_positions=40, n_embd=32,
                                                n_layer=2, n_head=4)),
    "llama": (tf.LlamaForCausalLM, tf.LlamaConfig(
        vocab_size=61, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
        attention_bias=True)),
}
SCHEMES = {"int8": QuantScheme.int8(), "int8_block": QuantScheme.int8(16),
           "int4": QuantScheme.int4(16)}


def _checkpoint(name: str, path: Path) -> Any:
    """A seeded random-weight transformers model saved to ``path``, returned in float32."""
    cls, config = CHECKPOINTS[name]
    torch.manual_seed(sum(map(ord, name)))
    model = cls(config).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.1 * torch.randn_like(p))
    model.save_pretrained(path)
    return model


def _with_dequantized_weights(hf: Any, model: Any) -> Any:
    """``hf`` given each quantized layer's dequantized weight (GPT-2's ``Conv1D`` stores it
    transposed; a tied head is untied, as ``quantize`` unties it)."""
    for name, module in model.named_modules():
        if isinstance(module, QuantizedLinear):
            target = hf.get_submodule(name)
            w = module.weight.dequantize().to_numpy()
            if isinstance(target, tf.pytorch_utils.Conv1D):
                w = w.T
            target.weight = torch.nn.Parameter(torch.from_numpy(np.ascontiguousarray(w)))
    return hf


def _ids(vocab: int) -> np.ndarray:
    return np.random.default_rng(1).integers(1, vocab, size=(2, 7))


@pytest.mark.parametrize("scheme", SCHEMES, ids=str)
@pytest.mark.parametrize("arch", CHECKPOINTS)
def test_quantized_model_is_transformers_with_the_dequantized_weights(
        arch: str, scheme: str, tmp_path: Path) -> None:
    hf = _checkpoint(arch, tmp_path)
    ids = _ids(hf.config.vocab_size)
    with torch.no_grad():
        float_logits = hf(torch.from_numpy(ids)).logits.numpy()
    model = quantize(bpm.from_pretrained(tmp_path, backend=CpuBackend), SCHEMES[scheme])
    assert isinstance(model, bpm.GenerationMixin)
    linears = [m for _, m in model.named_modules() if isinstance(m, QuantizedLinear)]
    assert len(linears) == (4 * 2 + 1 if arch == "gpt2" else 7 * 2 + 1)  # the head included
    assert model.lm_head.weight.dtype.is_quantized
    oracle = _with_dequantized_weights(hf, model)
    ids_t = Tensor.from_data(ids, backend=CpuBackend)
    logits = model(ids_t).logits.to_numpy()
    with torch.no_grad():
        want = oracle(torch.from_numpy(ids)).logits.numpy()
    # The quantized model computes exactly the dequantized-weight model: float32 rounding.
    np.testing.assert_allclose(logits, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
    # And stays near the float model: a weight moves by at most half a scale step, max|w|/254
    # per tensor in int8 and max|block|/14 in int4, so int4 logits move ~10x more.
    spread = float(float_logits.max() - float_logits.min())
    moved = float(np.abs(logits - float_logits).max())
    assert moved < (0.03 if scheme.startswith("int8") else 0.25) * spread, (moved, spread)
    kw: dict[str, Any] = {"max_new_tokens": 6, "do_sample": False, "pad_token_id": 0}
    with torch.no_grad():
        want_tokens = oracle.generate(torch.from_numpy(ids), **kw).numpy()
    got = model.generate(ids_t, **kw).to_numpy()
    np.testing.assert_array_equal(got, want_tokens)


@pytest.mark.parametrize("scheme", SCHEMES, ids=str)
def test_saved_quantized_model_reloads_with_identical_logits(scheme: str,
                                                             tmp_path: Path) -> None:
    _checkpoint("gpt2", tmp_path)
    model = quantize(bpm.from_pretrained(tmp_path, backend=CpuBackend), SCHEMES[scheme])
    ids = Tensor.from_data(_ids(61), backend=CpuBackend)
    path = model.save(tmp_path / "quantized.bpr")
    fresh = bpm.from_pretrained(tmp_path, backend=CpuBackend)
    reloaded = load_quantized(fresh, path)
    assert reloaded is fresh
    np.testing.assert_array_equal(reloaded(ids).logits.to_numpy(), model(ids).logits.to_numpy())
    # the same structure built by quantize then a plain load works too, as in torchao
    again = quantize(bpm.from_pretrained(tmp_path, backend=CpuBackend), SCHEMES[scheme])
    again.load(path)
    np.testing.assert_array_equal(again(ids).logits.to_numpy(), model(ids).logits.to_numpy())


def test_int4_model_file_is_about_a_quarter_of_int8s_weights(tmp_path: Path) -> None:
    sizes = {}
    for scheme in ("int8_block", "int4"):
        model = nn.Sequential(nn.Linear(256, 512), nn.Linear(512, 256))
        quantize(model, SCHEMES[scheme])
        sizes[scheme] = os.path.getsize(model.save(tmp_path / f"{scheme}.bpr"))
    weights = 2 * 256 * 512
    scales = weights // 16 * 4
    assert sizes["int8_block"] - sizes["int4"] == pytest.approx(weights / 2, rel=0.01)
    assert sizes["int4"] < weights / 2 + scales + 8_000  # + biases and the header


def test_an_autodiff_model_quantizes_and_its_valid_copy_runs_on_the_inner_backend() -> None:
    from burnpy.autodiff import Autodiff

    ad = Autodiff(CpuBackend)
    model = nn.Sequential(nn.LayerNorm(8, backend=ad), nn.Linear(8, 16, backend=ad))
    quantize(model, QuantScheme.int4(8))
    assert isinstance(model[1], QuantizedLinear)
    x = RNG.standard_normal((2, 8)).astype(np.float32)
    tracked = model(Tensor.from_data(x, backend=ad)).to_numpy()
    inference = model.valid()  # what generate() runs an Autodiff model as
    assert isinstance(inference, nn.Sequential) and isinstance(inference[1], QuantizedLinear)
    assert inference[1].weight.backend is CpuBackend
    # the same products, summed in another order (the tracked path dequantizes the weight)
    np.testing.assert_allclose(inference(Tensor.from_data(x)).to_numpy(), tracked, rtol=1e-5,
                               atol=1e-6)


# ---- errors ----------------------------------------------------------------------------------


def test_a_block_size_that_does_not_divide_in_features_names_the_layer() -> None:
    model = nn.Sequential(nn.Linear(64, 8), nn.Linear(8, 40))
    with pytest.raises(ShapeError, match=r"quantize: 1 \(Linear, weight \[out, in\] = \[40, 8\]"
                                         r".*block_size 16 does not divide in_features 8"):
        quantize(model, QuantScheme.int4(16))
    assert all(isinstance(m, nn.Linear) for m in model)  # nothing was replaced


def test_a_scheme_the_backend_cannot_store_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    # as CudaBackend, which stores no bfloat16
    monkeypatch.setattr(CpuBackend, "supports_dtype",
                        classmethod(lambda cls, device, dtype: dtype is not DType.bfloat16))
    model = nn.Sequential(nn.Linear(32, 8))
    with pytest.raises(UnsupportedDTypeError, match=r"quantize: 0 \(Linear, weight \[out, in\] "
                                                    r"= \[8, 32\].*bfloat16"):
        quantize(model, QuantScheme.int8(16, param=QuantParam.BF16))


def test_propagating_schemes_and_non_modules_are_refused() -> None:
    with pytest.raises(InvalidArgumentError, match="propagates"):
        quantize(nn.Sequential(nn.Linear(4, 4)), QuantScheme.int8().with_propagation())
    with pytest.raises(InvalidArgumentError, match="itself a Linear"):
        quantize(nn.Linear(4, 4), QuantScheme.int8())


def test_reloading_into_another_architecture_names_the_weight(tmp_path: Path) -> None:
    model = quantize(nn.Sequential(nn.Linear(16, 8)), QuantScheme.int8())
    path = model.save(tmp_path / "q.bpr")
    with pytest.raises(RecordError, match=r"'0.weight' quantized as \[8, 16\].*\[4, 16\]"):
        load_quantized(nn.Sequential(nn.Linear(16, 4)), path)


def _encoder_and_vision_models() -> dict[str, tuple[Any, np.ndarray]]:
    """Tiny BERT, ViT and ResNet classifiers built in memory, each with an input."""
    rng = np.random.default_rng(3)
    bert = bpm.BertForSequenceClassification(bpm.BertConfig(
        vocab_size=50, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, max_position_embeddings=16, num_labels=3), backend=CpuBackend)
    vit = bpm.ViTForImageClassification(bpm.ViTConfig(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
        image_size=8, patch_size=4, num_labels=3), backend=CpuBackend)
    resnet = bpm.ResNetForImageClassification(bpm.ResNetConfig(
        embedding_size=8, hidden_sizes=[16, 32], depths=[1, 1], layer_type="basic",
        num_labels=3), backend=CpuBackend)
    return {"bert": (bert, rng.integers(1, 50, size=(2, 7))),
            "vit": (vit, rng.standard_normal((2, 3, 8, 8)).astype(np.float32)),
            "resnet": (resnet, rng.standard_normal((2, 3, 32, 32)).astype(np.float32))}


@pytest.mark.parametrize("name", ["bert", "vit", "resnet"])
@pytest.mark.parametrize("scheme", ["int8", "int4"])
def test_every_architecture_quantizes_saves_and_reloads(name: str, scheme: str,
                                                        tmp_path: Path) -> None:
    """BERT, ViT and ResNet quantize in the one call as the causal LMs do: their logits are
    the float model's given the dequantized weights, and a saved file reloads them exactly."""
    model, x = _encoder_and_vision_models()[name]
    model.eval()
    twin, _ = _encoder_and_vision_models()[name]
    twin.eval()
    twin.load_state_dict(model.state_dict())
    quantize(model, SCHEMES[scheme])
    layers = {n: m for n, m in model.named_modules() if isinstance(m, QuantizedLinear)}
    assert layers  # every Linear, the classifier too
    twin.load_state_dict({f"{n}.weight": m.weight.dequantize().to_numpy()
                          for n, m in layers.items()}, strict=False)
    data = Tensor.from_data(x, backend=CpuBackend)
    got, want = model(data).logits.to_numpy(), twin(data).logits.to_numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
    path = model.save(tmp_path / f"{name}.bpr")
    fresh, _ = _encoder_and_vision_models()[name]
    reloaded = load_quantized(fresh.eval(), path)
    np.testing.assert_array_equal(reloaded(data).logits.to_numpy(), got)
