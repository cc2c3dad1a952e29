"""Weight-only quantized linear (``q_linear``): float activations times an int8 weight agree
with dequantize-then-matmul, on the compiled kernel's path and the fallback, with gradients
reaching the input; greedy GPT generation with int8 weights follows float32's."""

from __future__ import annotations

import numpy as np
import pytest

import burnpy.nn.functional as F
from burnpy import Tensor
from burnpy.autodiff import Autodiff
from burnpy.backend.errors import IndexOutOfBoundsError
from burnpy.examples.gpt import generate
from burnpy.examples.gpt_model import GPT, GPTConfig
from burnpy.quantization import QuantScheme
from burnpy_cpu import CpuBackend

SCHEMES = [QuantScheme.int8(), QuantScheme.int8(32), QuantScheme.int4(32)]


def _data(shape: tuple[int, ...], seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("scheme", SCHEMES, ids=str)
@pytest.mark.parametrize("lead", [(1,), (3,), (2, 5), (40,)], ids=str)
def test_q_linear_equals_dequantized_matmul(scheme: QuantScheme, lead: tuple[int, ...]) -> None:
    """1 to 16 rows run the int8 kernel, 40 rows (and int4) the dequantizing fallback."""
    x = Tensor.from_data(_data((*lead, 96), 0))
    w = Tensor.from_data(_data((48, 96), 1)).quantize(scheme)
    bias = Tensor.from_data(_data((48,), 2))
    out = F.linear(x, w, bias)
    assert out.shape == (*lead, 48) and out.dtype == x.dtype
    expected = x.to_numpy() @ w.dequantize().to_numpy().T + bias.to_numpy()
    np.testing.assert_allclose(out.to_numpy(), expected, rtol=1e-5, atol=1e-5)


def test_the_int8_kernel_reads_the_integers_not_a_float_copy() -> None:
    """A per-tensor int8 product is the integer dot products times the one scale."""
    x = Tensor.from_data(np.array([[1.0, -2.0, 0.5, 4.0]], dtype=np.float32))
    w = Tensor.from_data(np.array([[127.0, -127.0, 0.0, 64.0],
                                   [1.0, 2.0, 3.0, 4.0]], dtype=np.float32) / 127.0)
    q = w.quantize(QuantScheme.int8())
    values = q.primitive.data.astype(np.float32)
    scale = float(q.primitive.scales)
    expected = (x.to_numpy() @ values.T) * scale
    np.testing.assert_allclose(F.linear(x, q).to_numpy(), expected, rtol=1e-6)


def test_q_linear_passes_gradients_to_the_input() -> None:
    ad = Autodiff(CpuBackend)
    x = Tensor.from_data(_data((2, 64), 3), backend=ad).require_grad()
    w = Tensor.from_data(_data((8, 64), 4)).quantize(QuantScheme.int8())
    out = F.linear(x, w)
    g = x.grad(out.sum().backward())
    assert g is not None
    np.testing.assert_allclose(g.to_numpy(), np.broadcast_to(
        w.dequantize().to_numpy().sum(axis=0), (2, 64)), rtol=1e-5)


def test_int8_weights_generate_the_float32_greedy_tokens() -> None:
    """The GPT example's model, weights int8 per tensor: greedy decoding through the KV cache
    mostly picks float32's tokens (random weights: near-ties may flip a few)."""
    config = GPTConfig(vocab_size=32, block_size=32, n_layer=2, n_head=2, n_embd=32)
    CpuBackend.seed(CpuBackend.default_device(), 0)
    dense = GPT(config, backend=CpuBackend)
    quant = GPT(config, backend=CpuBackend)
    quant.load_state_dict(dense.state_dict())
    quant.quantize_weights(QuantScheme.int8())
    assert quant.blocks[0].fc.weight.kind == "quantized"
    prompt = [1, 5, 9, 2]
    ours = generate(quant, prompt, 24, temperature=0.0)
    theirs = generate(dense, prompt, 24, temperature=0.0)
    assert ours[:4] == prompt and len(ours) == len(theirs)
    assert sum(a == b for a, b in zip(ours, theirs, strict=True)) >= 0.8 * len(ours)


@pytest.mark.parametrize("scheme", SCHEMES, ids=str)
def test_quantized_embedding_dequantizes_only_the_picked_rows(
        scheme: QuantScheme, monkeypatch: pytest.MonkeyPatch) -> None:
    """The rows equal the dequantized table's, and what gets dequantized is ``[rows, dim]``,
    not the whole ``[vocab, dim]`` table."""
    w = Tensor.from_data(_data((65, 64), 3)).quantize(scheme)
    idx = Tensor.from_data(np.array([[3, 1, 64], [0, 0, 5]]))
    want = F.embedding(idx, w.dequantize()).to_numpy()
    shapes: list[tuple[int, ...]] = []
    real = CpuBackend.dequantize.__func__

    def spy(cls: type[CpuBackend], tensor: object) -> object:
        out = real(cls, tensor)
        shapes.append(out.shape)
        return out

    monkeypatch.setattr(CpuBackend, "dequantize", classmethod(spy))
    got = F.embedding(idx, w)
    assert got.shape == (2, 3, 64) and shapes == [(6, 64)]
    np.testing.assert_array_equal(got.to_numpy(), want)
    with pytest.raises(IndexOutOfBoundsError, match="out of range"):
        F.embedding(Tensor.from_data(np.array([65])), w)
