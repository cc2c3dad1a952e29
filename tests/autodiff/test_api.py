"""The Autodiff backend's API: the decorator class, Burn's AutodiffBackend methods through the
Tensor layer, the Gradients container, and the gradient rules' special cases (ties, zeros,
boundaries, broadcasting, second order)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import burnpy as bp
from burnpy import Tensor
from burnpy.autodiff import (
    Autodiff,
    AutodiffBackend,
    AutodiffTensor,
    BalancedCheckpointing,
    Gradients,
    NoCheckpointing,
)
from burnpy.backend.base import Backend
from burnpy.backend.errors import (
    AutodiffError,
    BackendMismatchError,
    InvalidArgumentError,
    KindError,
)
from burnpy.testing.rules import composed_ops, differentiable_ops, missing_rules
from burnpy_cpu import CpuBackend

AD = Autodiff(CpuBackend)
STRATEGIES = [NoCheckpointing, BalancedCheckpointing]


def leaf(values: object, backend: type = AD) -> Tensor:
    return Tensor.from_data(np.asarray(values, dtype=np.float64), backend=backend).require_grad()


def const(values: object, backend: type = AD) -> Tensor:
    return Tensor.from_data(np.asarray(values, dtype=np.float64), backend=backend)


def grad_of(t: Tensor, grads: Gradients) -> np.ndarray:
    g = t.grad(grads)
    assert g is not None
    assert g.backend is CpuBackend
    return g.to_numpy()


# ---- the decorator class ------------------------------------------------------------------------
def test_one_cached_class_per_backend_and_strategy() -> None:
    assert Autodiff(CpuBackend) is Autodiff[CpuBackend, NoCheckpointing]
    assert Autodiff(CpuBackend) is Autodiff[CpuBackend] is Autodiff(CpuBackend, NoCheckpointing)
    balanced = Autodiff[CpuBackend, BalancedCheckpointing]
    assert balanced is Autodiff(CpuBackend, BalancedCheckpointing) and balanced is not AD
    assert issubclass(AD, AutodiffBackend) and issubclass(balanced, AutodiffBackend)
    assert AD.checkpointing is NoCheckpointing and balanced.checkpointing is BalancedCheckpointing


def test_decorator_delegates_to_the_inner_backend() -> None:
    assert AD.InnerBackend is CpuBackend
    assert AD.name() == "autodiff<cpu>"
    assert Autodiff(CpuBackend, BalancedCheckpointing).name() == "autodiff<cpu, balanced>"
    assert Autodiff(AD).name() == "autodiff<autodiff<cpu>>"
    assert AD.ad_enabled() and not CpuBackend.ad_enabled()
    assert AD.devices() == CpuBackend.devices()
    assert AD.default_device() == CpuBackend.default_device()
    assert AD.Device is CpuBackend.Device
    assert AD.float_dtype is CpuBackend.float_dtype and AD.int_dtype is CpuBackend.int_dtype
    assert AD.multi_device is CpuBackend.multi_device
    assert AD.supports_dtype(AD.default_device(), bp.bfloat16)
    assert AD.FloatTensorPrimitive is AutodiffTensor
    AD.seed(AD.default_device(), 3)
    a = Tensor.randn(4, backend=AD).to_numpy()
    CpuBackend.seed(CpuBackend.default_device(), 3)
    np.testing.assert_array_equal(a, Tensor.randn(4, backend=CpuBackend).to_numpy())


def test_autodiff_rejects_what_is_not_a_backend_or_a_strategy() -> None:
    with pytest.raises(InvalidArgumentError, match="backend class"):
        Autodiff(42)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="checkpoint strategy"):
        Autodiff[CpuBackend, CpuBackend]


def test_every_differentiable_protocol_op_is_recorded_or_composed() -> None:
    """Each float/module/activation op has a rule here, or is a provided composition that
    runs on the Autodiff backend and records its parts: never a required op left bare."""
    assert differentiable_ops() and composed_ops(AD)
    assert missing_rules(AD) == [], "required ops need an autodiff rule"


def test_a_decorator_without_rules_misses_every_required_op_and_composes_the_rest() -> None:
    class NoRules(Backend, abstract=True):
        """A decorator that defines no rule at all."""

    assert "float_add" in missing_rules(NoRules) and "float_sort" not in missing_rules(NoRules)
    assert composed_ops(NoRules) == differentiable_ops()


# ---- primitives and kinds -----------------------------------------------------------------------
def test_float_primitive_exposes_shape_and_dtype_and_other_kinds_are_inner() -> None:
    x = Tensor.from_data(np.ones((2, 3), dtype=np.float32), backend=AD)
    assert isinstance(x.primitive, AutodiffTensor)
    assert x.primitive.shape == (2, 3) and x.primitive.dtype == np.float32
    mask = x > 0.5
    idx = x.argmax(1)
    assert type(mask.primitive) is np.ndarray and mask.kind == "bool"
    assert type(idx.primitive) is np.ndarray and idx.kind == "int"
    back = idx.float()
    assert isinstance(back.primitive, AutodiffTensor) and back.primitive.node is None
    assert (x.sort_with_indices(1)[1].primitive.dtype == np.int64)


def test_untracked_tensors_record_nothing() -> None:
    x = const([[1.0, 2.0], [3.0, 4.0]])
    y = ((x @ x).exp() * 2.0).sum(0).softmax(0)
    assert y.primitive.node is None and not y.requires_grad
    assert (x * leaf([1.0, 1.0])).primitive.node is not None


def test_inner_and_from_inner_round_trip_every_kind() -> None:
    x = leaf([[1.0, -2.0]])
    inner = x.inner()
    assert inner.backend is CpuBackend and inner.kind == "float"
    assert inner.primitive is x.primitive.primitive
    lifted = Tensor.from_inner(inner, backend=AD)
    assert lifted.backend is AD and not lifted.requires_grad
    np.testing.assert_array_equal(lifted.to_numpy(), x.to_numpy())
    for t in (x.int(), x > 0.0):
        down = t.inner()
        assert down.backend is CpuBackend and down.kind == t.kind
        assert down.primitive is t.primitive
        up = Tensor.from_inner(down, backend=AD)
        assert up.backend is AD and up.kind == t.kind and up.primitive is t.primitive
    assert AD.q_inner(inner.primitive) is inner.primitive
    assert AD.q_from_inner(inner.primitive) is inner.primitive


def test_mixing_the_inner_backend_and_the_decorator_raises() -> None:
    a = const([1.0, 2.0])
    b = Tensor.from_data(np.array([1.0, 2.0]), backend=CpuBackend)
    with pytest.raises(BackendMismatchError):
        a + b
    with pytest.raises(BackendMismatchError):
        b * a
    with pytest.raises(BackendMismatchError):
        a + const([1.0, 2.0], Autodiff(CpuBackend, BalancedCheckpointing))


# ---- backward and the Gradients container -------------------------------------------------------
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_gradient_accumulates_when_a_tensor_feeds_several_ops(strategy: type) -> None:
    b = Autodiff(CpuBackend, strategy)
    x = leaf([1.0, 2.0, 3.0], b)
    y = (x * x + x.exp() + 3.0 * x).sum()
    xs = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(grad_of(x, y.backward()), 2 * xs + np.exp(xs) + 3.0,
                               rtol=1e-15)


@pytest.mark.parametrize(("dtype", "torch_dtype"), [(bp.float16, torch.float16),
                                                   (bp.bfloat16, torch.bfloat16)], ids=str)
def test_16_bit_gradients_accumulate_as_torch(dtype: bp.DType, torch_dtype: torch.dtype) -> None:
    """A 16-bit tensor whose chunks (as attention's q, k, v) and whole feed several ops gets
    the sum of their gradients rounded once, as torch's: each element has one inexact sum
    (the chunks' zero-padded gradients add exactly), so the results are equal whatever the
    order. Gradients span 1e-7 (float16 subnormals) to 4e4 (sums that overflow float16)."""
    rng = np.random.default_rng(0)
    scale = 10.0 ** rng.integers(-7, 5, (2, 6, 50))
    w32 = (rng.standard_normal((2, 6, 50)) * scale).astype(np.float32)
    w32[..., 0] = 4e4
    tw = torch.from_numpy(w32).to(torch_dtype)
    tx = torch.from_numpy(rng.standard_normal((2, 6, 50)).astype(np.float32)).to(torch_dtype)
    w, x = (Tensor.from_data(t.view(torch.int16).numpy().view(dtype.numpy), backend=AD)
            for t in (tw, tx))
    x = x.require_grad()
    tx.requires_grad_()
    loss = (x * w).sum()
    for i, part in enumerate(x.chunk(3, dim=1)):
        loss = loss + (part * w[:, 2 * i:2 * i + 2]).sum()
    tloss = (tx * tw).sum()
    for i, tpart in enumerate(tx.chunk(3, dim=1)):
        tloss = tloss + (tpart * tw[:, 2 * i:2 * i + 2]).sum()
    tloss.backward()
    assert tx.grad is not None
    ours = grad_of(x, loss.backward())
    assert ours.dtype == dtype.numpy
    np.testing.assert_array_equal(ours.astype(np.float32), tx.grad.float().numpy())
    assert np.isinf(ours[..., 0].astype(np.float32)).all() == (dtype is bp.float16)


def test_untracked_and_unreached_inputs_have_no_gradient() -> None:
    x, unused = leaf([1.0, 2.0]), leaf([5.0])
    c = const([3.0, 4.0])
    grads = (x * c).sum().backward()
    assert c.grad(grads) is None and unused.grad(grads) is None
    assert c not in grads and unused not in grads and x in grads
    np.testing.assert_array_equal(grad_of(x, grads), [3.0, 4.0])


def test_non_scalar_output_seeds_ones_and_grad_output_seeds_it() -> None:
    x = leaf([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(grad_of(x, (x * 2.0).backward()), np.full((2, 2), 2.0))
    seed = Tensor.from_data(np.array([[1.0, 0.0], [2.0, -1.0]]), backend=CpuBackend)
    np.testing.assert_array_equal(grad_of(x, (x * 3.0).backward(seed)),
                                  [[3.0, 0.0], [6.0, -3.0]])


def test_grad_replace_overwrites_and_grad_remove_removes() -> None:
    x, w = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    grads = (x * w).sum().backward()
    x.grad_replace(grads, Tensor.from_data(np.array([9.0, 8.0]), backend=CpuBackend))
    np.testing.assert_array_equal(grad_of(x, grads), [9.0, 8.0])
    removed = w.grad_remove(grads)
    assert removed is not None
    np.testing.assert_array_equal(removed.to_numpy(), [1.0, 2.0])
    assert w.grad(grads) is None and w.grad_remove(grads) is None and len(grads) == 1
    w.grad_replace(grads, removed * 2.0)
    np.testing.assert_array_equal(grad_of(w, grads), [2.0, 4.0])
    with pytest.raises(AutodiffError, match="not tracked"):
        const([1.0, 1.0]).grad_replace(grads, removed)


def test_gradients_container() -> None:
    x, w = leaf([1.0, 2.0]), leaf([[3.0], [4.0]])
    grads = (x @ w).sum().backward()
    assert len(grads) == 2 and x in grads and w in grads and x.primitive in grads
    keys = {Gradients.key_of(x), Gradients.key_of(w)}
    assert None not in keys and len(keys) == 2
    pairs = dict(iter(grads))
    assert set(pairs) == keys == set(grads.keys()) == set(grads.to_dict())
    np.testing.assert_array_equal(grads.to_dict()[Gradients.key_of(x)], [3.0, 4.0])
    np.testing.assert_array_equal(grads[w], [[1.0], [2.0]])
    assert all(type(v) is np.ndarray for v in grads.values())
    assert Gradients.key_of(const([1.0])) is None
    with pytest.raises(KeyError):
        grads[leaf([1.0])]
    assert "Gradients(2 tensors" in repr(grads)


def test_retain_grad_keeps_an_intermediate_gradient() -> None:
    x = leaf([1.0, 2.0])
    h = x * 3.0
    h.retain_grad()
    other = x + 1.0
    y = (h * h + other).sum()
    grads = y.backward()
    np.testing.assert_array_equal(grad_of(h, grads), [6.0, 12.0])
    np.testing.assert_array_equal(grad_of(x, grads), [19.0, 37.0])
    assert other.grad(grads) is None
    with pytest.raises(AutodiffError, match="does not require grad"):
        const([1.0]).retain_grad()


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_second_backward_needs_retain_graph(strategy: type) -> None:
    b = Autodiff(CpuBackend, strategy)
    x = leaf([0.5, 1.5], b)
    y = (x.tanh() * x).sum()
    first = grad_of(x, y.backward(retain_graph=True))
    np.testing.assert_array_equal(grad_of(x, y.backward()), first)
    with pytest.raises(AutodiffError, match=r"already consumed.*retain_graph=True"):
        y.backward()
    z = (x * 2.0).sum()
    z.backward()
    with pytest.raises(AutodiffError, match="already consumed"):
        (z * 2.0).backward()


def test_backward_of_an_untracked_tensor_raises() -> None:
    with pytest.raises(AutodiffError, match="does not require grad"):
        const([1.0]).sum().backward()
    with pytest.raises(AutodiffError, match="does not track gradients"):
        Tensor.from_data([1.0]).backward()


def test_require_grad_on_a_non_leaf_raises() -> None:
    x = leaf([1.0, 2.0])
    y = x * 2.0
    with pytest.raises(AutodiffError, match="Can't convert a non leaf tensor into a tracked"):
        y.require_grad()
    with pytest.raises(AutodiffError, match="non leaf"):
        y.require_grad(False)
    assert x.require_grad() is x and x.requires_grad
    x.require_grad(False)
    assert not x.requires_grad
    with pytest.raises(KindError):
        Tensor.arange(3, backend=AD).require_grad()


def test_detach_cuts_the_graph() -> None:
    x = leaf([2.0, 3.0])
    d = x.detach()
    assert not d.requires_grad and x.requires_grad
    assert d.primitive.primitive is x.primitive.primitive
    grads = (d * x).sum().backward()
    np.testing.assert_array_equal(grad_of(x, grads), [2.0, 3.0])
    assert d.detach().primitive is d.primitive


# ---- special cases of the rules, against torch --------------------------------------------------
def _weights(t: object) -> object:
    """Uneven output weights in ``t``'s library and backend."""
    w = np.array([1.0, -2.0, 3.0, 0.5])
    if isinstance(t, torch.Tensor):
        return torch.from_numpy(w)
    return const(w, t.backend)  # type: ignore[attr-defined]


def _torch_grad(fn: object, values: np.ndarray) -> np.ndarray:
    t = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    fn(t).sum().backward()  # type: ignore[operator]
    return t.grad.numpy()  # type: ignore[union-attr]


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize(("name", "fn", "values"), [
    ("max_ties_share", lambda t: t.max(), [[1.0, 3.0, 3.0], [3.0, 0.0, 2.0]]),
    ("min_ties_share", lambda t: t.min() * 2.0, [[1.0, -3.0], [-3.0, -3.0]]),
    ("max_dim_ties_to_index", lambda t: t.max(1).values, [[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]]),
    ("prod_one_zero", lambda t: t.prod(), [[1.5, 0.0], [2.0, -3.0]]),
    ("prod_two_zeros", lambda t: t.prod(), [[1.5, 0.0], [0.0, -3.0]]),
    ("prod_dim_zeros", lambda t: t.prod(1), [[0.0, 2.0, 3.0], [0.0, 0.0, 4.0], [1.0, 2.0, 5.0]]),
    ("cumprod_zeros", lambda t: t.cumprod(1) * _weights(t),
     [[2.0, 0.0, 3.0, 0.0], [0.0, 1.5, 2.0, -1.0], [1.0, 2.0, 3.0, 4.0]]),
    ("clamp_boundaries", lambda t: t.clamp(-1.0, 1.0), [-1.0, -0.5, 1.0, 1.5, -2.0]),
    ("clamp_min_boundary", lambda t: t.clamp(min=0.0), [0.0, -0.5, 1.0]),
    ("relu_at_zero", lambda t: t.relu(), [0.0, -1.0, 2.0]),
    ("abs_at_zero", lambda t: t.abs(), [0.0, -1.0, 2.0]),
    ("sign_round_floor", lambda t: t.sign() + t.round() + t.floor() + t.ceil() + t.trunc(),
     [0.4, -1.6, 2.5]),
    ("pow_zero_base", lambda t: t ** 2.0, [0.0, 1.0, -2.0]),
])
def test_rule_special_cases_match_torch(strategy: type, name: str, fn: object,
                                        values: list) -> None:
    arr = np.array(values)
    x = leaf(arr, Autodiff(CpuBackend, strategy))
    ours = grad_of(x, fn(x).sum().backward())  # type: ignore[operator]
    np.testing.assert_allclose(ours, _torch_grad(fn, arr), rtol=1e-14, atol=0, err_msg=name)


def test_broadcast_inputs_receive_unbroadcast_gradients() -> None:
    a = leaf(np.ones((3, 1)))
    b = leaf(np.arange(4.0))
    s = leaf(2.0)
    grads = (a * b + s).sum().backward()
    assert a.grad(grads).shape == (3, 1) and b.grad(grads).shape == (4,)
    np.testing.assert_array_equal(grad_of(a, grads), np.full((3, 1), 6.0))
    np.testing.assert_array_equal(grad_of(b, grads), np.full(4, 3.0))
    assert grad_of(s, grads).shape == () and float(grad_of(s, grads)) == 12.0
    m = leaf(np.ones((1, 2, 3)))
    n = leaf(np.ones((4, 3, 2)))
    grads = (m @ n).sum().backward()
    np.testing.assert_array_equal(grad_of(m, grads), np.full((1, 2, 3), 8.0))


def test_second_derivatives_through_nested_autodiff() -> None:
    outer = Autodiff(AD)
    values = np.array([0.5, -1.0, 2.0])
    x_inner = leaf(values)
    x = Tensor.from_inner(x_inner, backend=outer).require_grad()
    y = ((x * x * x).sin() + x.softmax(0) * x.max()).sum()
    first = x.grad(y.backward())
    assert first is not None and first.backend is AD and first.requires_grad
    second = grad_of(x_inner, first.sum().backward())
    t = torch.tensor(values, requires_grad=True)
    (g,) = torch.autograd.grad(((t ** 3).sin() + t.softmax(0) * t.max()).sum(), t,
                               create_graph=True)
    np.testing.assert_allclose(first.to_numpy(), g.detach().numpy(), rtol=1e-13)
    np.testing.assert_allclose(second, torch.autograd.grad(g.sum(), t)[0].numpy(), rtol=1e-12)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_ten_thousand_op_chain_has_no_recursion_limit(strategy: type) -> None:
    """tanh saves its output, so balanced checkpointing recomputes the whole chain."""
    x = leaf([0.5, -0.2], Autodiff(CpuBackend, strategy))
    y = x
    for _ in range(5_000):
        y = (y.tanh() + y) * 0.5
    value, slope = np.array([0.5, -0.2]), np.ones(2)
    for _ in range(5_000):
        t = np.tanh(value)
        slope *= (2.0 - t * t) * 0.5
        value = (t + value) * 0.5
    np.testing.assert_allclose(grad_of(x, y.sum().backward()), slope, rtol=1e-9)


def test_quantized_primitives_are_the_inner_backends_and_untracked() -> None:
    x = leaf(np.linspace(-1.0, 1.0, 64).reshape(2, 32))
    q = x.quantize(bp.QuantScheme.int8(block_size=32))
    assert q.backend is AD and q.kind == "quantized"
    assert AD.q_inner(q.primitive) is q.primitive
    back = q.dequantize()
    assert isinstance(back.primitive, AutodiffTensor) and not back.requires_grad
    np.testing.assert_allclose(back.to_numpy(), x.to_numpy(), atol=1e-2)
    inner = q.inner()
    assert inner.backend is CpuBackend
    np.testing.assert_array_equal(inner.dequantize().to_numpy(), back.to_numpy())


def test_cast_and_device_transfer_pass_gradients_back() -> None:
    x = Tensor.from_data(np.array([1.0, 2.0], dtype=np.float32), backend=AD).require_grad()
    y = x.double().to(AD.default_device()) * 3.0
    assert y.dtype is bp.float64
    g = x.grad(y.sum().backward())
    assert g is not None and g.dtype is bp.float32
    np.testing.assert_array_equal(g.to_numpy(), [3.0, 3.0])
