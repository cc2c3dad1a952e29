"""Quantized tensors on CpuBackend: round-trip bounds, packing, native ops, q_matmul, errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import burnpy as bp
from burnpy import Tensor
from burnpy.quantization import QuantParam, QuantScheme
from burnpy_cpu import CpuBackend

RNG = np.random.default_rng(3)

MIN_MAX_SCHEMES = [
    QuantScheme.int8(),
    QuantScheme.int8(full_range=True),
    QuantScheme.int8(32),
    QuantScheme.int8(16, full_range=True, param=QuantParam.F16),
    QuantScheme.int8(32, param=QuantParam.BF16),
    QuantScheme.int8(16, two_level=True, param=QuantParam.F16),
    QuantScheme.int4(None),
    QuantScheme.int4(32),
    QuantScheme.int4(16, full_range=True),
    QuantScheme.int4(32, two_level=True, param=QuantParam.BF16),
]


def _x(*shape: int, dtype: str = "float32") -> Tensor:
    return Tensor.from_data(RNG.standard_normal(shape).astype(dtype))


def _effective_scales(q: Tensor) -> np.ndarray:
    data = q.into_data()
    quant = data.quant
    assert quant is not None
    scales = quant.scales.astype(np.float64)
    if quant.tensor_scale is not None:
        scales = scales * float(quant.tensor_scale)
    bs = quant.scheme.level.block_size
    return np.repeat(scales, bs, axis=-1) if bs else np.broadcast_to(scales, q.shape)


@pytest.mark.parametrize("scheme", MIN_MAX_SCHEMES, ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_round_trip_error_is_at_most_half_a_scale(scheme: QuantScheme, dtype: str) -> None:
    x = _x(6, 64, dtype=dtype) * 3.0
    q = x.quantize(scheme)
    assert q.kind == "quantized" and q.dtype is scheme.dtype and q.shape == x.shape
    back = q.dequantize()
    assert back.dtype is x.dtype
    err = np.abs(back.to_numpy().astype(np.float64) - x.to_numpy().astype(np.float64))
    bound = 0.5 * _effective_scales(q) * (1 + 1e-5)
    assert (err <= bound).all(), float((err / bound).max())
    values = q.to_numpy()
    assert values.min() >= scheme.value.qmin and values.max() <= scheme.value.qmax


#: Every scheme with shapes whose last dim its blocks divide (0-d and odd ones per tensor).
DEQUANTIZE_CASES = [(scheme, shape) for scheme in MIN_MAX_SCHEMES
                    for shape in [(), (5,), (3, 64), (2, 2, 32)]
                    if scheme.level.block_size is None or (shape and shape[-1] % 32 == 0)]


@pytest.mark.parametrize(("scheme", "shape"), DEQUANTIZE_CASES, ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dequantize_scales_a_fresh_array_and_leaves_the_tensor_as_it_was(
        scheme: QuantScheme, shape: tuple[int, ...], dtype: str) -> None:
    """Dequantize scales the widened integers in place: the result is values times effective
    scales in the tensor's float dtype, and the quantized values and scales are untouched (a
    second call gives the same floats)."""
    q = _x(*shape, dtype=dtype).quantize(scheme)
    before = q.into_data()
    first = q.dequantize().to_numpy()
    assert first.dtype == np.dtype(dtype) and first.shape == shape
    want = before.array.astype(np.float64) * _effective_scales(q)
    np.testing.assert_allclose(first, want, rtol=1e-6, atol=0)
    np.testing.assert_array_equal(q.dequantize().to_numpy(), first)
    after = q.into_data()
    assert after.quant is not None and before.quant is not None
    np.testing.assert_array_equal(after.array, before.array)
    np.testing.assert_array_equal(after.quant.scales, before.quant.scales)


def test_ternary_uses_abs_mean_scale_and_three_levels() -> None:
    x = _x(4, 32)
    q = x.quantize(QuantScheme.ternary())
    assert set(np.unique(q.to_numpy())) <= {-1, 0, 1}
    scale = float(q.into_data().quant.scales)
    assert scale == pytest.approx(float(np.abs(x.to_numpy()).mean()), rel=1e-6)


@pytest.mark.parametrize(("scheme", "bits"), [(QuantScheme.int4(8), 4),
                                              (QuantScheme.ternary(), 2)], ids=["q4", "q2"])
def test_packing_is_bit_exact(scheme: QuantScheme, bits: int) -> None:
    per_word = 32 // bits
    qmin, qmax = scheme.value.qmin, scheme.value.qmax
    values = RNG.integers(qmin, qmax + 1, size=(3, 40)).astype(np.int8)
    x = Tensor.from_data(values.astype(np.float32))
    q = x.quantize(scheme, scales=Tensor.ones(() if scheme.level.block_size is None else
                                              (3, 40 // scheme.level.block_size)))
    words = q.primitive.data
    assert words.dtype == np.uint32 and words.shape == (-(-values.size // per_word),)
    flat = np.concatenate([values.reshape(-1), np.zeros(-values.size % per_word, np.int8)])
    fields = (flat.astype(np.int64) & ((1 << bits) - 1)).reshape(-1, per_word)
    expected = (fields << (np.arange(per_word) * bits)).sum(axis=1).astype(np.uint32)
    np.testing.assert_array_equal(words, expected)
    np.testing.assert_array_equal(q.to_numpy(), values)
    if bits == 4:
        literal = Tensor.from_data([[1.0, -1.0, 7.0, -8.0, 0.0, 2.0, -2.0, 3.0]]).quantize(
            QuantScheme.int4(None, full_range=True), scales=Tensor.from_data(1.0))
        assert int(literal.primitive.data[0]) == 0x3E20_87F1  # nibbles 3,E,2,0,8,7,F,1


@pytest.mark.filterwarnings("ignore:torch.quantize_per_tensor:UserWarning")
def test_per_tensor_int8_matches_torch_quantize_per_tensor() -> None:
    x = _x(5, 7)
    scale = float(np.abs(x.to_numpy()).max() / 127)
    ours = x.quantize(QuantScheme.int8(), scales=Tensor.from_data(np.float32(scale)))
    ref = torch.quantize_per_tensor(torch.from_numpy(x.to_numpy()), scale, 0, torch.qint8)
    np.testing.assert_array_equal(ours.to_numpy(), ref.int_repr().numpy())


@pytest.mark.filterwarnings("ignore:torch.quantize_per_tensor:UserWarning")
def test_per_row_blocks_match_torch_quantize_per_channel() -> None:
    x = _x(4, 16)
    ours = x.quantize(QuantScheme.int8(16))
    scales = ours.into_data().quant.scales.reshape(-1).astype(np.float64)
    ref = torch.quantize_per_channel(torch.from_numpy(x.to_numpy()), torch.from_numpy(scales),
                                     torch.zeros(4, dtype=torch.long), 0, torch.qint8)
    np.testing.assert_array_equal(ours.to_numpy(), ref.int_repr().numpy())


@pytest.mark.parametrize("scheme", [QuantScheme.int8(), QuantScheme.int8(32),
                                    QuantScheme.int4(32), QuantScheme.int4(None)], ids=str)
def test_q_matmul_equals_dequantized_matmul(scheme: QuantScheme) -> None:
    a = _x(2, 5, 64).quantize(scheme)
    w = _x(2, 7, 64).quantize(scheme)
    ours = a @ w.mT
    ref = a.dequantize().to_numpy().astype(np.float64) @ \
        np.swapaxes(w.dequantize().to_numpy().astype(np.float64), -1, -2)
    np.testing.assert_allclose(ours.to_numpy(), ref, rtol=1e-5, atol=1e-4)
    # Float lhs: quantized on the fly with the weight's scheme, close to the float product.
    x = _x(3, 64)
    w2 = _x(8, 64)
    approx = (x @ w2.quantize(scheme).T).to_numpy()
    exact = x.to_numpy() @ w2.to_numpy().T
    tol = 0.06 if scheme.value.bits == 8 else 0.5
    assert np.abs(approx - exact).max() / np.abs(exact).max() < tol


def test_q_matmul_accumulates_integers_exactly() -> None:
    values = RNG.integers(-127, 128, size=(3, 2048)).astype(np.float32)
    w_values = RNG.integers(-127, 128, size=(2048, 4)).astype(np.float32)
    one = Tensor.from_data(np.float32(1.0))
    a = Tensor.from_data(values).quantize(QuantScheme.int8(), scales=one)
    w = Tensor.from_data(w_values.T.copy()).quantize(QuantScheme.int8(), scales=one).T
    expected = values.astype(np.int64) @ w_values.astype(np.int64)
    np.testing.assert_array_equal((a @ w).to_numpy().astype(np.int64), expected)


NATIVE_OPS = [
    ("reshape", lambda t: t.reshape(3, 2, 64)),
    ("permute", lambda t: t.permute(1, 0)),
    ("swap_dims", lambda t: t.swap_dims(0, 1)),
    ("flip", lambda t: t.flip(0, 1)),
    ("slice_rows", lambda t: t[1:5]),
    ("slice_blocks", lambda t: t[:, 32:64]),
    ("slice_steps", lambda t: t[::2, 3:50:3]),
    ("index_select", lambda t: t.index_select(0, [4, 0, 2])),
    ("index_select_cols", lambda t: t.index_select(1, [5, 1])),
    ("gather", lambda t: t.gather(1, Tensor.from_data([[0, 3]] * 6))),
    ("expand", lambda t: t[:1].expand(3, 6, 64)),
    ("repeat_dim", lambda t: t.repeat_dim(0, 2)),
    ("cat", lambda t: bp.cat([t, t[::-1]], 1)),
]


@pytest.mark.parametrize(("name", "op"), NATIVE_OPS, ids=[n for n, _ in NATIVE_OPS])
@pytest.mark.parametrize("scheme", [QuantScheme.int8(), QuantScheme.int8(32),
                                    QuantScheme.int4(32)], ids=str)
def test_layout_and_selection_ops_keep_quantized_values(name: str, op, scheme: QuantScheme) -> None:
    q = _x(6, 64).quantize(scheme)
    out = op(q)
    assert out.kind == "quantized"
    ref = op(q.dequantize()).to_numpy()
    err = np.abs(out.dequantize().to_numpy() - ref).max()
    # Block-aligned ops are exact on the integer data; misaligned ones requantize (half a scale).
    assert err <= 0.5 * float(np.abs(ref).max()) / scheme.value.qmax + 1e-6, (name, err)


def test_arithmetic_returns_float_unless_propagation_is_asked() -> None:
    x = _x(4, 32)
    q = x.quantize(QuantScheme.int8())
    assert (q * 2.0).kind == "float"
    np.testing.assert_allclose((q + x).to_numpy(), (q.dequantize() + x).to_numpy())
    qp = x.quantize(QuantScheme.int8().with_propagation())
    assert (qp * 2.0).kind == "quantized"


def test_into_data_round_trip_and_repr() -> None:
    q = _x(4, 32).quantize(QuantScheme.int4(16, two_level=True))
    data = q.into_data()
    again = Tensor.from_data(data)
    assert again.into_data() == data
    np.testing.assert_array_equal(again.dequantize().to_numpy(), q.dequantize().to_numpy())
    assert "q4s" in repr(q) and "qint4" in repr(q)


def test_memory_is_4x_and_8x_smaller() -> None:
    w = _x(256, 256)
    f32_bytes = w.numel() * 4
    assert f32_bytes / w.quantize(QuantScheme.int8()).primitive.nbytes == pytest.approx(4, rel=0.01)
    q4 = w.quantize(QuantScheme.int4(128, param=QuantParam.F16))
    assert f32_bytes / q4.primitive.nbytes >= 8 * 0.95


class _NoInt4(CpuBackend):
    """A backend that cannot store int4 (to check the unsupported-scheme error)."""

    @classmethod
    def supports_dtype(cls, device: bp.Device, dtype: bp.DType) -> bool:
        return dtype is not bp.DType.qint4


@pytest.mark.parametrize(("call", "error", "match"), [
    (lambda: Tensor.from_data([1.0, float("inf")]).quantize(QuantScheme.int8()),
     bp.InvalidArgumentError, r"quantize: .*contains NaN or inf"),
    (lambda: _x(2, 30).quantize(QuantScheme.int8(32)), bp.ShapeError,
     r"quantize: block size 32 does not divide the last dim of shape \(2, 30\)"),
    (lambda: Tensor.zeros((2, 32), backend=_NoInt4).quantize(QuantScheme.int4(32)),
     bp.UnsupportedDTypeError, r"quantize: backend .* does not support .*q4s"),
    (lambda: bp.cat([_x(2, 32).quantize(QuantScheme.int8()),
                     _x(2, 32).quantize(QuantScheme.int4(32))]), bp.DTypeError,
     r"cat: mixes quantization schemes"),
    (lambda: _x(2, 32).quantize(QuantScheme.int8(32), scales=Tensor.ones((2,))),
     bp.ShapeError, r"quantize: scales must be a float tensor of shape \(2, 1\)"),
    (lambda: Tensor.arange(4).quantize(QuantScheme.int8()), bp.KindError,
     r"quantize: expects a float tensor"),
    (lambda: _x(2, 2).dequantize(), bp.KindError, r"dequantize: expects a quantized tensor"),
])
def test_bad_input(call, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        call()


def test_quantized_module_weights_infer_and_round_trip_through_records(tmp_path) -> None:
    from burnpy.nn import Linear

    layer = Linear(64, 8)
    x = _x(3, 64)
    ref = layer(x).to_numpy()
    layer.quantize_weights(QuantScheme.int4(32))
    assert layer.weight.kind == "quantized" and layer.bias.kind == "float"
    out = layer(x)
    np.testing.assert_allclose(out.to_numpy(), ref, atol=0.25)
    path = layer.save(tmp_path / "q.safetensors")
    again = Linear(64, 8).quantize_weights(QuantScheme.int4(32)).load(path)
    assert again.weight.into_data() == layer.weight.into_data()
    np.testing.assert_array_equal(again(x).to_numpy(), out.to_numpy())
    with pytest.raises(bp.RecordError, match=r"'weight' is bp.qint4 in the state but bp.float32"):
        Linear(64, 8).load(path)
