"""Weight-only quantized linear (``q_linear``): float activations times an int8 weight agree
with dequantize-then-matmul, on the compiled kernel's path and the fallback, with gradients
reaching the input; greedy GPT generation with int8 weights follows float32's."""

from __future__ import annotations

import numpy as np
import pytest

import burnpy.nn.functional as F
from burnpy import Tensor
from burnpy.autodiff import Autodiff
from burnpy.backend.errors import DTypeError, IndexOutOfBoundsError, KindError, ShapeError
from burnpy.examples.gpt import generate
from burnpy.examples.gpt_model import GPT, GPTConfig
from burnpy.quantization import QuantScheme
from burnpy_cpu import CpuBackend
from burnpy_cpu.array_ops.q_ops import Int8LinearPlan

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


def _dequantized_reference(x: np.ndarray, w: Tensor, bias: np.ndarray | None) -> np.ndarray:
    """``x @ dequantize(w).T + bias`` in float64: what the int8 kernel must agree with."""
    out = x.astype(np.float64) @ w.dequantize().to_numpy().astype(np.float64).T
    return out if bias is None else out + bias


KERNEL_SCHEMES = [QuantScheme.int8(), QuantScheme.int8(full_range=True), QuantScheme.int8(8),
                  QuantScheme.int8(3), QuantScheme.int8(16, two_level=True)]
#: Every scheme with widths its blocks divide; the odd width 3 where they do (blocks of 3, or
#: none).
KERNEL_CASES = [(scheme, n, k) for scheme in KERNEL_SCHEMES
                for n, k in [(1, 48), (7, 48), (65, 96), (33, 144), (5, 3)]
                if scheme.level.block_size is None or k % scheme.level.block_size == 0]


@pytest.mark.parametrize(("scheme", "n", "k"), KERNEL_CASES, ids=str)
@pytest.mark.parametrize("with_bias", [True, False], ids=["bias", "no-bias"])
def test_the_int8_kernel_matches_the_dequantized_weight(scheme: QuantScheme, n: int, k: int,
                                                       with_bias: bool) -> None:
    """Per tensor and per block (blocks of 3 to 16, one level and two), odd row counts and
    widths, with and without a bias: the kernel's float32 sums equal the float64 product with
    the dequantized weight to float32 rounding."""
    w = Tensor.from_data(_data((n, k), 5)).quantize(scheme)
    assert w.primitive.block_axis in (None, 1)
    bias = _data((n,), 6) if with_bias else None
    for lead in [(), (1,), (1, 1), (4,), (2, 8)]:
        x = _data((*lead, k), 7)
        out = F.linear(Tensor.from_data(x), w, None if bias is None else Tensor.from_data(bias))
        assert out.shape == (*lead, n) and out.dtype == Tensor.from_data(x).dtype
        np.testing.assert_allclose(out.to_numpy(), _dequantized_reference(x, w, bias),
                                   rtol=1e-5, atol=1e-5)
    assert isinstance(w.primitive.linear_plan, Int8LinearPlan)  # the kernel ran, no fallback


def test_the_int8_kernel_takes_strided_inputs_and_empty_batches() -> None:
    """A transposed (non-contiguous) input is copied for the kernel, a strided bias is read
    in place, a batch of no rows gives an empty result, and a float64 input takes the float
    path."""
    w = Tensor.from_data(_data((24, 32), 8)).quantize(QuantScheme.int8())
    every_other = Tensor.from_data(_data((48,), 9))[::2]
    assert not every_other.primitive.flags.c_contiguous
    bias = every_other.to_numpy()
    strided = _data((32, 3), 10).T
    assert not strided.flags.c_contiguous
    out = F.linear(Tensor.from_data(strided), w, every_other)
    np.testing.assert_allclose(out.to_numpy(), _dequantized_reference(strided, w, bias),
                               rtol=1e-5, atol=1e-5)
    assert F.linear(Tensor.from_data(np.zeros((0, 32), np.float32)), w).shape == (0, 24)
    x64 = _data((2, 32), 11).astype(np.float64)
    out64 = F.linear(Tensor.from_data(x64), w)
    assert out64.dtype == Tensor.from_data(x64).dtype
    np.testing.assert_allclose(out64.to_numpy(), _dequantized_reference(x64, w, None),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("bias", "error"), [
    (np.zeros(24, np.float64), DTypeError), (np.zeros(24, np.int64), KindError),
    (np.zeros(23, np.float32), ShapeError)], ids=["float64", "int", "short"])
def test_a_bias_that_does_not_fit_is_refused(bias: np.ndarray, error: type[Exception]) -> None:
    w = Tensor.from_data(_data((24, 32), 8)).quantize(QuantScheme.int8())
    with pytest.raises(error):
        F.linear(Tensor.from_data(_data((1, 32), 9)), w, Tensor.from_data(bias))


def test_a_weight_keeps_one_kernel_plan() -> None:
    """The weight-side work (checks, scales per row) is done on the first product and reused:
    the second product does not redo it."""
    w = Tensor.from_data(_data((16, 32), 12)).quantize(QuantScheme.int8())
    x = Tensor.from_data(_data((1, 32), 13))
    assert w.primitive.linear_plan is None
    first = F.linear(x, w).to_numpy()
    plan = w.primitive.linear_plan
    assert isinstance(plan, Int8LinearPlan)
    np.testing.assert_array_equal(plan.scales, np.full((16, 1), w.primitive.scales, np.float32))
    np.testing.assert_array_equal(F.linear(x, w).to_numpy(), first)
    assert w.primitive.linear_plan is plan


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
