"""Quantized tensors on the GPU, held to the quantization suite's bounds and to ``CpuBackend``
(which that suite checks against torch): ``quantize`` for every scheme gives the CPU's scales
and values within half a scale of the input, the native layout and selection ops stay within
half a scale of the op on the dequantized values (exact where block-aligned, requantized where
not), and ``q_matmul`` / weight-only ``q_linear`` equal the dequantized products. Skipped,
with the reason, where CuPy sees no GPU."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import burnpy as bp
import burnpy.nn.functional as F
from burnpy import Tensor
from burnpy.quantization import QuantParam, QuantScheme
from burnpy.testing.conformance import supported
from burnpy_cpu import CpuBackend
from burnpy_cuda import CudaBackend, cuda_available, unavailable_reason
from tests.quantization.test_quantization import MIN_MAX_SCHEMES

pytestmark = pytest.mark.skipif(not cuda_available(), reason=f"needs CuPy and a CUDA GPU: "
                                f"{unavailable_reason()}")

#: The quantization suite's min-max schemes and the ternary one.
SCHEMES = [*MIN_MAX_SCHEMES, QuantScheme.ternary()]


def _values(*shape: int, seed: int = 0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * 3).astype(np.float32)


def _pair(values: np.ndarray, scheme: QuantScheme) -> tuple[Tensor, Tensor]:
    """``values`` quantized with ``scheme`` on the GPU and on the CPU."""
    return (Tensor.from_data(values, backend=CudaBackend).quantize(scheme),
            Tensor.from_data(values, backend=CpuBackend).quantize(scheme))


def _effective_scales(q: Tensor) -> np.ndarray:
    """Each element's scale (block scales repeated, times the tensor scale if two-level)."""
    quant = q.into_data().quant
    assert quant is not None
    scales = quant.scales.astype(np.float64)
    if quant.tensor_scale is not None:
        scales = scales * float(quant.tensor_scale)
    size = quant.scheme.level.block_size
    return np.repeat(scales, size, axis=-1) if size else np.broadcast_to(scales, q.shape)


@pytest.mark.parametrize("scheme", SCHEMES, ids=str)
def test_quantize_gives_the_cpu_scales_within_half_a_scale(scheme: QuantScheme) -> None:
    scale_dtype = {QuantParam.F16: "float16", QuantParam.BF16: "bfloat16"}.get(scheme.param)
    if scale_dtype is not None and not supported(CudaBackend, scale_dtype):
        pytest.skip(f"the scheme asks for {scale_dtype} scales, which "
                    f"{CudaBackend.__name__} does not store")
    values = _values(6, 64)
    gpu, cpu = _pair(values, scheme)
    # Scales stored as float16/bfloat16 may round a last bit apart from the CPU's.
    rtol = 1e-6 if scheme.param is QuantParam.F32 else 1e-2
    np.testing.assert_allclose(_effective_scales(gpu), _effective_scales(cpu), rtol=rtol)
    ints = gpu.to_numpy()
    assert ints.min() >= scheme.value.qmin and ints.max() <= scheme.value.qmax
    if scheme is not SCHEMES[-1]:  # ternary's abs-mean scale clips by design
        err = np.abs(gpu.dequantize().to_numpy().astype(np.float64) - values)
        assert (err <= 0.5 * _effective_scales(gpu) * (1 + 1e-5)).all()


NATIVE_OPS: list[tuple[str, Callable[[Tensor], Tensor]]] = [
    ("reshape", lambda t: t.reshape(3, 2, 64)),
    ("permute", lambda t: t.permute(1, 0)),
    ("flip", lambda t: t.flip(0, 1)),
    ("slice_blocks", lambda t: t[:, 32:64]),
    ("slice_steps", lambda t: t[::2, 3:50:3]),
    ("index_select", lambda t: t.index_select(0, [4, 0, 2])),
    ("expand", lambda t: t[:1].expand(3, 6, 64)),
    ("cat", lambda t: bp.cat([t, t[::-1]], 1)),
]


@pytest.mark.parametrize(("name", "op"), NATIVE_OPS, ids=[n for n, _ in NATIVE_OPS])
@pytest.mark.parametrize("scheme", [QuantScheme.int8(), QuantScheme.int8(32),
                                    QuantScheme.int4(32)], ids=str)
def test_layout_and_selection_ops_match_the_cpu(name: str, op: Callable[[Tensor], Tensor],
                                                scheme: QuantScheme) -> None:
    gpu, _ = _pair(_values(6, 64, seed=1), scheme)
    out = op(gpu)
    assert out.kind == "quantized", name
    ref = op(gpu.dequantize()).to_numpy()
    err = np.abs(out.dequantize().to_numpy() - ref).max()
    assert err <= 0.5 * float(np.abs(ref).max()) / scheme.value.qmax + 1e-6, (name, err)


@pytest.mark.parametrize("scheme", [QuantScheme.int8(), QuantScheme.int8(32),
                                    QuantScheme.int4(32)], ids=str)
def test_q_matmul_and_q_linear_equal_the_dequantized_products(scheme: QuantScheme) -> None:
    a, _ = _pair(_values(2, 5, 64, seed=2), scheme)
    w, _ = _pair(_values(2, 7, 64, seed=3), scheme)
    want = a.dequantize().to_numpy().astype(np.float64) @ np.swapaxes(
        w.dequantize().to_numpy().astype(np.float64), -1, -2)
    np.testing.assert_allclose((a @ w.mT).to_numpy(), want, rtol=1e-5, atol=1e-4)

    x = Tensor.from_data(_values(3, 64, seed=4), backend=CudaBackend)
    weight, _ = _pair(_values(8, 64, seed=5), scheme)
    bias = Tensor.from_data(_values(8, seed=6), backend=CudaBackend)
    want = (x.to_numpy().astype(np.float64) @ weight.dequantize().to_numpy().T.astype(np.float64)
            + bias.to_numpy())
    np.testing.assert_allclose(F.linear(x, weight, bias).to_numpy(), want, rtol=1e-4, atol=1e-4)


def test_q_matmul_accumulates_integers_exactly() -> None:
    rng = np.random.default_rng(7)
    values = rng.integers(-127, 128, size=(3, 2048)).astype(np.float32)
    w_values = rng.integers(-127, 128, size=(4, 2048)).astype(np.float32)
    one = Tensor.from_data(np.float32(1.0), backend=CudaBackend)
    a = Tensor.from_data(values, backend=CudaBackend).quantize(QuantScheme.int8(), scales=one)
    w = Tensor.from_data(w_values, backend=CudaBackend).quantize(QuantScheme.int8(), scales=one)
    want = values.astype(np.int64) @ w_values.T.astype(np.int64)
    np.testing.assert_array_equal((a @ w.T).to_numpy().astype(np.int64), want)
