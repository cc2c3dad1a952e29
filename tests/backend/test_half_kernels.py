"""float16 and bfloat16 on CpuBackend against torch's CPU kernels.

Casts are compared bitwise (every 16-bit pattern widened; random float32 bit patterns, ties
and overflow narrowed), NaN kept as a NaN. Ops compute in float32 and round once, as torch's
CPU kernels do: with inputs whose float32 results are exact (small dyadic values, so no
accumulation order matters), products, biased products and sums are bitwise torch's 16-bit
results, which a second rounding (the product rounded before the bias is added) would break.
On random inputs every kernel is within one unit in the last place of the 16-bit dtype of
torch's float32 kernel on the same values rounded once (plus float32 round-off relative to
the terms of a sum, where they cancel), and the forward kernels whose torch 16-bit version
also rounds once are within one ulp of that too. The others round inside: torch's 16-bit
cross entropy rounds the log-sum-exp to the 16-bit dtype, its float16 transposed convolution
rounds before adding the bias, and its layer norm and attention gradients round intermediate
products. gelu is checked against float64 math instead: torch's
(even in float64) computes ``1 + erf``, which cancels in the left tail.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from scipy.special import erfc

from burnpy.backend.dtype import DType
from burnpy.backend.ops.module_ops import ConvOptions, ConvTransposeOptions
from burnpy_cpu import CpuBackend as B
from burnpy_cpu.array_ops import _half_kernels

BF16 = DType.bfloat16.numpy
F16 = np.dtype(np.float16)
HALVES = [pytest.param(F16, torch.float16, id="float16"),
          pytest.param(BF16, torch.bfloat16, id="bfloat16")]
SIZES = [7, 300, 4099]  # below the compiled casts' threshold, above it, an odd length


def _torch_bits(x: np.ndarray, dtype: torch.dtype) -> np.ndarray:
    """torch's cast of float32 ``x`` to ``dtype``, as uint16 bits."""
    return torch.from_numpy(np.ascontiguousarray(x)).to(dtype).view(torch.int16).numpy() \
        .view(np.uint16)


def _assert_bits_equal(ours: np.ndarray, theirs: np.ndarray, dtype: np.dtype) -> None:
    """Equal 16-bit patterns, except that a NaN only has to be a NaN of the same sign."""
    ours, theirs = ours.view(np.uint16).ravel(), theirs.view(np.uint16).ravel()
    nan = np.isnan(theirs.view(dtype).astype(np.float32))
    np.testing.assert_array_equal(ours[~nan], theirs[~nan])
    assert np.isnan(ours[nan].view(dtype).astype(np.float32)).all()


# ---- casts ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("np_dtype", "torch_dtype"), HALVES)
def test_every_half_widens_exactly(np_dtype: np.dtype, torch_dtype: torch.dtype) -> None:
    bits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    ours = B.float_cast(bits.view(np_dtype), DType.float32)
    theirs = torch.from_numpy(bits.view(np.int16)).view(torch_dtype).float().numpy()
    nan = np.isnan(theirs)
    np.testing.assert_array_equal(ours.view(np.uint32)[~nan], theirs.view(np.uint32)[~nan])
    assert np.isnan(ours[nan]).all()
    np.testing.assert_array_equal(np.signbit(ours[nan]), np.signbit(theirs[nan]))


def _narrowing_inputs() -> np.ndarray:
    """float32 values of every class: random bit patterns (subnormals, NaNs and infinities
    included), exact ties of both halves' rounding, values at their overflow thresholds."""
    rng = np.random.default_rng(0)
    random_bits = rng.integers(0, 1 << 32, 200_000, dtype=np.uint64).astype(np.uint32)
    ties = np.array([1 + 2.0**-8, 1 + 3 * 2.0**-8, 1 + 2.0**-11, 1 + 3 * 2.0**-11, 65520.0,
                     65519.99, 2.0**-25, 3 * 2.0**-25, 2.0**-24, 2.0**-26], np.float32)
    edge = np.array([np.finfo(np.float32).max, np.inf, -np.inf, 0.0, -0.0, np.nan, -np.nan,
                     3.3895314e38, 3.3961776e38, 1e-45, -1e-45], np.float32)
    return np.concatenate([random_bits.view(np.float32), ties, -ties, edge])


@pytest.mark.parametrize(("np_dtype", "torch_dtype"), HALVES)
def test_float32_narrows_as_torch(np_dtype: np.dtype, torch_dtype: torch.dtype) -> None:
    x = _narrowing_inputs()
    ours = B.float_cast(x, DType.of(np_dtype))
    assert ours.dtype == np_dtype and ours.shape == x.shape
    _assert_bits_equal(ours, _torch_bits(x, torch_dtype), np_dtype)


@pytest.mark.parametrize("size", SIZES)
def test_half_to_half_and_layouts(size: int) -> None:
    """bfloat16 <-> float16 (through float32, exact on the way in: one rounding), and inputs
    that are transposed, strided or 0-d keep their values and shapes."""
    rng = np.random.default_rng(size)
    x = (rng.standard_normal((size, 3)) * 300).astype(np.float32)
    for src, dst, torch_dst in ((BF16, F16, torch.float16), (F16, BF16, torch.bfloat16)):
        half = x.astype(src)
        ours = B.float_cast(half, DType.of(dst))
        theirs = torch.from_numpy(half.astype(np.float32)).to(torch_dst)
        _assert_bits_equal(ours, theirs.view(torch.int16).numpy(), dst)
    for view in (x.T, x[::2], x[:, 1], np.asarray(x[0, 0])):
        for dst, torch_dst in ((BF16, torch.bfloat16), (F16, torch.float16)):
            ours = B.float_cast(view, DType.of(dst))
            assert ours.shape == view.shape
            _assert_bits_equal(ours, _torch_bits(view, torch_dst), dst)
            back = B.float_cast(ours, DType.float32)
            np.testing.assert_array_equal(back, ours.astype(np.float32))


def test_same_dtype_cast_returns_the_array() -> None:
    x = np.ones(400, BF16)
    assert B.float_cast(x, DType.bfloat16) is x
    assert _half_kernels.cast_array(x, BF16) is x


# ---- ops: bitwise where float32 is exact ---------------------------------------------------


def _dyadic(rng: np.random.Generator, shape: tuple[int, ...], np_dtype: np.dtype) -> np.ndarray:
    """Values k / 8 with |k| <= 15 ... exactly representable in both halves, whose products
    and sums of up to thousands of terms are exact in float32."""
    return (rng.integers(-15, 16, shape) / 8 + rng.integers(-3, 4, shape) / 512).astype(np_dtype)


def _t(a: np.ndarray, torch_dtype: torch.dtype) -> torch.Tensor:
    """The 16-bit array ``a`` as a torch tensor of ``torch_dtype`` (the same bits)."""
    return torch.from_numpy(np.ascontiguousarray(a).view(np.int16)).view(torch_dtype)


def _np(t: torch.Tensor, np_dtype: np.dtype) -> np.ndarray:
    """A torch tensor of a 16-bit dtype as a NumPy array of ``np_dtype`` (the same bits)."""
    return t.contiguous().view(torch.int16).numpy().view(np_dtype)


@pytest.mark.parametrize(("np_dtype", "torch_dtype"), HALVES)
def test_products_round_once(np_dtype: np.dtype, torch_dtype: torch.dtype) -> None:
    """matmul (plain, batched, transposed operand) and linear with bias: exact float32 sums,
    rounded once, are bitwise torch's. The bias of ``linear`` is large enough that adding
    it to a rounded product would round again."""
    rng = np.random.default_rng(1)
    a, b = _dyadic(rng, (40, 96), np_dtype), _dyadic(rng, (96, 24), np_dtype)
    batched_a, batched_b = _dyadic(rng, (3, 40, 96), np_dtype), _dyadic(rng, (3, 96, 24), np_dtype)
    pairs = [(a, b), (batched_a, batched_b), (a, np.ascontiguousarray(b.T).T)]
    for lhs, rhs in pairs:
        ours = B.float_matmul(lhs, rhs)
        assert ours.dtype == np_dtype
        theirs = _t(lhs, torch_dtype) @ _t(rhs, torch_dtype)
        np.testing.assert_array_equal(ours.view(np.uint16), _np(theirs, np_dtype).view(np.uint16))
    x, w = _dyadic(rng, (2, 20, 96), np_dtype), _dyadic(rng, (24, 96), np_dtype)
    bias = (rng.integers(-15, 16, 24) * 3.0 + 0.5).astype(np_dtype)
    ours = B.linear(x, w, bias)
    theirs = F.linear(_t(x, torch_dtype), _t(w, torch_dtype), _t(bias, torch_dtype))
    np.testing.assert_array_equal(ours.view(np.uint16), _np(theirs, np_dtype).view(np.uint16))
    twice = B.float_add(B.float_matmul(x.reshape(40, 96), w.T), bias).reshape(ours.shape)
    assert (twice != ours).any(), "the check would not see a second rounding"


@pytest.mark.parametrize(("np_dtype", "torch_dtype"), HALVES)
@pytest.mark.parametrize("size", SIZES)
def test_gradient_sums_round_once(size: int, np_dtype: np.dtype, torch_dtype: torch.dtype) -> None:
    """``add_gradients`` (backward's accumulation) adds 16-bit gradients bitwise as torch's
    add: random bit patterns (subnormals, NaNs, infinities, sums that overflow); float32 ones
    stay float32."""
    rng = np.random.default_rng(size)
    lhs, rhs = rng.integers(0, 1 << 16, (2, 3, size), dtype=np.uint32).astype(np.uint16) \
        .view(np_dtype)
    ours = B.add_gradients(lhs, rhs)
    assert ours.dtype == np_dtype and ours.shape == lhs.shape
    _assert_bits_equal(ours, _np(_t(lhs, torch_dtype) + _t(rhs, torch_dtype), np_dtype),
                       np_dtype)
    wide = B.add_gradients(lhs.astype(np.float32), rhs.astype(np.float32))
    assert wide.dtype == np.float32
    np.testing.assert_array_equal(wide, lhs.astype(np.float32) + rhs.astype(np.float32))


@pytest.mark.parametrize(("np_dtype", "torch_dtype"), HALVES)
def test_reductions_accumulate_in_float32(np_dtype: np.dtype, torch_dtype: torch.dtype) -> None:
    """A 16-bit accumulator loses the small terms of these sums; float32 keeps them all."""
    rng = np.random.default_rng(2)
    x = _dyadic(rng, (64, 300), np_dtype)
    tx = _t(x, torch_dtype)
    for ours, theirs in ((B.float_sum(x), tx.sum()), (B.float_sum_dim(x, 1), tx.sum(1, True)),
                         (B.float_sum_dim(x, 0), tx.sum(0, True)),
                         (B.float_cumsum(x, 1), tx.cumsum(1))):
        assert ours.dtype == np_dtype
        np.testing.assert_array_equal(ours.view(np.uint16), _np(theirs, np_dtype).view(np.uint16))


# ---- ops: within one unit in the last place -------------------------------------------------


def _ulp(values: np.ndarray, np_dtype: np.dtype) -> np.ndarray:
    """The spacing of ``np_dtype`` at each value's magnitude (float32)."""
    mag = np.abs(values.astype(np.float32)).astype(np_dtype)
    up = (mag.view(np.uint16) + np.uint16(1)).view(np_dtype)
    return up.astype(np.float32) - mag.astype(np.float32)


def _assert_within_ulp(ours: np.ndarray, theirs: torch.Tensor, np_dtype: np.dtype,
                       slack: np.ndarray | float = 0.0) -> None:
    """``ours`` (``np_dtype``) within one ulp of torch's value (the larger spacing of the two,
    for neighbours across a power of two), plus ``slack`` (float32 round-off of cancelling
    sums)."""
    assert ours.dtype == np_dtype, ours.dtype
    ref = _np(theirs, np_dtype).astype(np.float32)
    got = ours.astype(np.float32)
    assert got.shape == ref.shape
    bound = np.maximum(_ulp(ref, np_dtype), _ulp(got, np_dtype)) + slack
    err = np.abs(got - ref)
    assert (err <= bound).all(), f"max error {err.max()} over bound at {np.argmax(err - bound)}"


def _random(rng: np.random.Generator, shape: tuple[int, ...], np_dtype: np.dtype,
            scale: float = 1.0) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(np_dtype)


@pytest.mark.parametrize(("np_dtype", "torch_dtype"), HALVES)
def test_products_on_random_inputs(np_dtype: np.dtype, torch_dtype: torch.dtype) -> None:
    rng = np.random.default_rng(3)
    x, w, b = _random(rng, (4, 32, 64), np_dtype), _random(rng, (48, 64), np_dtype), \
        _random(rng, (48,), np_dtype)
    terms = np.abs(x.astype(np.float32)).reshape(-1, 64) @ np.abs(w.astype(np.float32)).T
    slack = 1e-6 * (terms.reshape(4, 32, 48) + np.abs(b.astype(np.float32)))
    _assert_within_ulp(B.linear(x, w, b),
                       F.linear(_t(x, torch_dtype), _t(w, torch_dtype), _t(b, torch_dtype)),
                       np_dtype, slack)
    wt = np.ascontiguousarray(w.T)
    _assert_within_ulp(B.float_matmul(x, wt), _t(x, torch_dtype) @ _t(wt, torch_dtype),
                       np_dtype, slack - 1e-6 * np.abs(b.astype(np.float32)))


Op = Callable[[list[np.ndarray]], np.ndarray]
TorchOp = Callable[[list[torch.Tensor]], torch.Tensor]

#: (name, input shapes, burnpy op, torch op, whether torch's 16-bit kernel rounds once).
CASES: list[tuple[str, list[tuple[int, ...]], Op, TorchOp, bool]] = [
    ("erf", [(16, 300)], lambda a: B.float_erf(a[0]), lambda t: torch.erf(t[0]), True),
    ("sigmoid", [(16, 300)], lambda a: B.sigmoid(a[0]), lambda t: torch.sigmoid(t[0]), True),
    ("silu", [(16, 300)], lambda a: B.silu(a[0]), lambda t: F.silu(t[0]), True),
    ("softmax", [(16, 300)], lambda a: B.softmax(a[0], 1), lambda t: torch.softmax(t[0], 1),
     True),
    ("log_softmax", [(16, 300)], lambda a: B.log_softmax(a[0], 1),
     lambda t: torch.log_softmax(t[0], 1), True),
    ("layer_norm", [(16, 300), (300,), (300,)],
     lambda a: B.layer_norm(a[0], 1, a[1], a[2], 1e-5),
     lambda t: F.layer_norm(t[0], (300,), t[1], t[2], 1e-5), True),
    ("mean_dim", [(16, 300)], lambda a: B.float_mean_dim(a[0], 1),
     lambda t: t[0].mean(1, keepdim=True), True),
    ("mul_scalar", [(16, 300)], lambda a: B.float_mul_scalar(a[0], 0.3),
     lambda t: t[0] * 0.3, True),
]


def _rounded(op: TorchOp, arrays: list[np.ndarray], torch_dtype: torch.dtype) -> torch.Tensor:
    """torch's float32 kernel on the 16-bit values of ``arrays``, rounded once to
    ``torch_dtype``: what a kernel computing in float32 gives."""
    return op([_t(a, torch_dtype).float() for a in arrays]).to(torch_dtype)


@pytest.mark.parametrize(("np_dtype", "torch_dtype"), HALVES)
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_kernels_within_one_ulp(case: tuple[str, list[tuple[int, ...]], Op, TorchOp, bool],
                                np_dtype: np.dtype, torch_dtype: torch.dtype) -> None:
    _, shapes, ours, theirs, torch_rounds_once = case
    rng = np.random.default_rng(4)
    arrays = [_random(rng, s, np_dtype, 2.0) for s in shapes]
    got = ours(arrays)
    _assert_within_ulp(got, _rounded(theirs, arrays, torch_dtype), np_dtype)
    if torch_rounds_once:
        _assert_within_ulp(got, theirs([_t(a, torch_dtype) for a in arrays]), np_dtype)


@pytest.mark.parametrize(("np_dtype", "torch_dtype"), HALVES)
def test_gelu_against_float64(np_dtype: np.dtype, torch_dtype: torch.dtype) -> None:
    """gelu (both forms) and its gradient over [-9, 9] within one ulp of float64 math (SciPy's
    erfc; torch's gelu, even in float64, computes 1 + erf(x / sqrt 2), which cancels to 0 in
    the left tail, where burnpy's stays accurate)."""
    x = np.linspace(-9, 9, 8001).astype(np_dtype)
    xd = x.astype(np.float64)
    cdf = 0.5 * erfc(-xd / np.sqrt(2))
    u = np.sqrt(2 / np.pi) * (xd + 0.044715 * xd**3)

    def half(values: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(values.astype(np.float32)).to(torch_dtype)

    _assert_within_ulp(B.gelu(x), half(xd * cdf), np_dtype)
    _assert_within_ulp(B.gelu(x, "tanh"), half(xd / (1 + np.exp(-2 * u))), np_dtype)
    g = np.ones_like(x)
    slope = cdf + xd * np.exp(-0.5 * xd * xd) / np.sqrt(2 * np.pi)
    _assert_within_ulp(B.gelu_backward(x, g), half(slope), np_dtype)


def _torch_grads(fn: Callable[..., torch.Tensor], arrays: list[np.ndarray],
                 torch_dtype: torch.dtype, grad: np.ndarray) -> list[torch.Tensor]:
    """torch's float32 gradients of ``fn`` at the 16-bit values of ``arrays`` given ``grad``,
    each rounded once to ``torch_dtype``."""
    inputs = [_t(a, torch_dtype).float().requires_grad_() for a in arrays]
    fn(*inputs).backward(_t(grad, torch_dtype).float())
    return [t.grad.to(torch_dtype) for t in inputs]  # type: ignore[union-attr]


@pytest.mark.parametrize(("np_dtype", "torch_dtype"), HALVES)
def test_backward_kernels_within_one_ulp(np_dtype: np.dtype, torch_dtype: torch.dtype) -> None:
    """Layer norm's and attention's gradients (float32 inside, one rounding each).
    Sums over many terms that cancel get float32 round-off relative to the terms."""
    rng = np.random.default_rng(5)
    x, g = _random(rng, (16, 300), np_dtype, 2.0), _random(rng, (16, 300), np_dtype)
    weight = _random(rng, (300,), np_dtype)
    ours = B.layer_norm_backward(x, 1, weight, g, 1e-5)
    theirs = _torch_grads(lambda a, w, b: F.layer_norm(a, (300,), w, b, 1e-5),
                          [x, weight, np.zeros(300, np_dtype)], torch_dtype, g)
    _assert_within_ulp(ours[0], theirs[0], np_dtype, 2e-6 * 300)
    for got, ref in zip(ours[1:], theirs[1:], strict=True):
        _assert_within_ulp(got, ref, np_dtype, 2e-6 * 16 * 4)

    q, k, v = (_random(rng, (2, 3, 40, 16), np_dtype) for _ in range(3))
    grad = _random(rng, (2, 3, 40, 16), np_dtype)
    _assert_within_ulp(B.attention(q, k, v, None, None, True), _rounded(
        lambda t: F.scaled_dot_product_attention(t[0], t[1], t[2], is_causal=True), [q, k, v],
        torch_dtype),
        np_dtype, 1e-5)
    ours = B.attention_backward(q, k, v, None, None, True, grad)
    theirs = _torch_grads(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=True),
                          [q, k, v], torch_dtype, grad)
    for got, ref in zip(ours, theirs, strict=True):
        _assert_within_ulp(got, ref, np_dtype, 1e-4)


@pytest.mark.parametrize(("np_dtype", "torch_dtype"), HALVES)
def test_cross_entropy_and_convolutions(np_dtype: np.dtype, torch_dtype: torch.dtype) -> None:
    rng = np.random.default_rng(6)
    logits = _random(rng, (64, 33), np_dtype, 3.0)
    target = rng.integers(0, 33, 64)
    target[5] = -100
    targets = torch.from_numpy(target)
    _assert_within_ulp(B.cross_entropy(logits, target, -100), _rounded(
        lambda t: F.cross_entropy(t[0], targets, reduction="none"), [logits], torch_dtype),
        np_dtype)
    grad = _random(rng, (64,), np_dtype)
    (theirs,) = _torch_grads(lambda t: F.cross_entropy(t, targets, reduction="none"),
                             [logits], torch_dtype, grad)
    _assert_within_ulp(B.cross_entropy_backward(logits, target, -100, grad), theirs, np_dtype)

    x, w, b = (_random(rng, (2, 6, 12, 12), np_dtype), _random(rng, (8, 6, 3, 3), np_dtype),
               _random(rng, (8,), np_dtype))
    ours = B.conv2d(x, w, b, ConvOptions((1, 1), (1, 1), (1, 1)))
    theirs = F.conv2d(_t(x, torch_dtype), _t(w, torch_dtype), _t(b, torch_dtype), padding=1)
    tx, tw, tb = (torch.from_numpy(np.abs(a.astype(np.float32))) for a in (x, w, b))
    terms = F.conv2d(tx, tw, tb, padding=1).numpy()
    _assert_within_ulp(ours, theirs, np_dtype, 1e-6 * terms)

    # torch's float16 transposed convolution rounds before adding the bias: its float32 one,
    # rounded once, is the oracle
    wt = _random(rng, (6, 8, 3, 3), np_dtype)  # [c_in, c_out, kh, kw]
    ours = B.conv_transpose2d(x, wt, b, ConvTransposeOptions((2, 2), (1, 1), (1, 1), (1, 1)))
    theirs = _rounded(lambda t: F.conv_transpose2d(t[0], t[1], t[2], stride=2, padding=1,
                                                   output_padding=1), [x, wt, b], torch_dtype)
    terms = F.conv_transpose2d(tx, torch.from_numpy(np.abs(wt.astype(np.float32))), tb,
                               stride=2, padding=1, output_padding=1).numpy()
    _assert_within_ulp(ours, theirs, np_dtype, 1e-6 * terms)
