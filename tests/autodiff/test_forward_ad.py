"""The ForwardAD decorator: every differentiable op's tangent rule against ``torch.func.jvp``
(and its second order through ``ForwardAD(ForwardAD(B))`` and under ``Autodiff`` as an HVP),
the forward suite on the decorated backend, and the decorator's API: the cached class,
delegation, ``DualTensor``, ``make_dual`` / ``unpack_dual``, broadcasting and promotion of
tangents, the untangented path and the deferred matmul primal."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import burnpy as bp
from burnpy import Tensor
from burnpy.autodiff import Autodiff, ForwardAD, make_dual, unpack_dual
from burnpy.autodiff.dual_tensor import DeferredDualTensor
from burnpy.autodiff.forward import DualTensor, ForwardADBackend
from burnpy.backend.errors import (
    BackendMismatchError,
    DTypeError,
    InvalidArgumentError,
    KindError,
    ShapeError,
)
from burnpy.testing import CASES, OpCase, parametrize_cases, run_case
from burnpy.testing.jvp_check import (
    parametrize_jvp_cases,
    run_forward_over_forward_case,
    run_hvp_case,
    run_jvp_case,
)
from burnpy.testing.rules import composed_ops, differentiable_ops, missing_rules
from burnpy_cpu import CpuBackend

FAD = ForwardAD(CpuBackend)


def f64(values: object, backend: type = CpuBackend) -> Tensor:
    return Tensor.from_data(np.asarray(values, dtype=np.float64), backend=backend)


def dual(values: object, tangent: object) -> Tensor:
    return make_dual(f64(values), f64(tangent))


def parts(t: Tensor) -> tuple[np.ndarray, np.ndarray | None]:
    primal, tangent = unpack_dual(t)
    return primal.to_numpy(), None if tangent is None else tangent.to_numpy()


# ---- every op against torch ----------------------------------------------------------------------
@pytest.mark.parametrize("case", parametrize_jvp_cases())
def test_tangents_match_torch_func_jvp(case: OpCase) -> None:
    run_jvp_case(case, CpuBackend, seed=0)


@pytest.mark.parametrize("case", parametrize_jvp_cases())
def test_second_order_tangents_through_nested_forward_ad(case: OpCase) -> None:
    run_forward_over_forward_case(case, CpuBackend, seed=0)


@pytest.mark.parametrize("case", parametrize_jvp_cases())
def test_forward_over_reverse_hvp_matches_torch_double_backward(case: OpCase) -> None:
    run_hvp_case(case, CpuBackend, seed=0)


#: The forward suite's dtypes run here: float64 and the int and bool cases; the narrower
#: floats take the same code paths (the primal is the inner backend's own op).
FORWARD_SUITE_DTYPES = ("float64", "int64", "bool")


@pytest.mark.parametrize(("case", "dtype"), [
    p for p in parametrize_cases(FAD, CASES) if p.values[1] in FORWARD_SUITE_DTYPES])
def test_decorated_backend_passes_the_forward_suite(case: OpCase, dtype: str) -> None:
    run_case(case, FAD, dtype, seed=0)


# ---- the decorator class ------------------------------------------------------------------------
def test_one_cached_class_per_backend() -> None:
    assert ForwardAD(CpuBackend) is ForwardAD[CpuBackend] is FAD
    assert issubclass(FAD, ForwardADBackend)
    assert ForwardAD(FAD) is ForwardAD[FAD] and ForwardAD(FAD) is not FAD
    assert repr(ForwardAD) == "ForwardAD" and FAD.__name__ == "ForwardAD[CpuBackend]"


def test_decorator_delegates_to_the_inner_backend() -> None:
    assert FAD.InnerBackend is CpuBackend and FAD.is_forward_ad
    assert FAD.name() == "forward_ad<cpu>"
    assert Autodiff(FAD).name() == "autodiff<forward_ad<cpu>>"
    assert not FAD.ad_enabled() and Autodiff(FAD).ad_enabled()
    assert FAD.devices() == CpuBackend.devices()
    assert FAD.default_device() == CpuBackend.default_device()
    assert FAD.Device is CpuBackend.Device and FAD.multi_device is CpuBackend.multi_device
    assert FAD.float_dtype is CpuBackend.float_dtype and FAD.int_dtype is CpuBackend.int_dtype
    assert FAD.trusted_binary_ops is CpuBackend.trusted_binary_ops
    assert FAD.FloatTensorPrimitive is DualTensor
    assert FAD.IntTensorPrimitive is CpuBackend.IntTensorPrimitive
    assert FAD.int_add is CpuBackend.int_add and FAD.bool_and is CpuBackend.bool_and
    assert FAD.q_reshape == CpuBackend.q_reshape
    FAD.seed(FAD.default_device(), 5)
    a = Tensor.randn(4, backend=FAD).to_numpy()
    CpuBackend.seed(CpuBackend.default_device(), 5)
    np.testing.assert_array_equal(a, Tensor.randn(4, backend=CpuBackend).to_numpy())


def test_forward_ad_rejects_what_is_not_a_backend() -> None:
    with pytest.raises(InvalidArgumentError, match="backend class"):
        ForwardAD(42)  # type: ignore[arg-type]


def test_every_differentiable_protocol_op_has_a_tangent_rule_or_is_composed() -> None:
    """Each float/module/activation op has a rule here, or is a provided composition that
    runs on the ForwardAD backend (and so carries tangents through its parts): never a
    required op left bare."""
    assert differentiable_ops() and composed_ops(FAD)
    assert missing_rules(FAD) == [], "required ops need a tangent rule"


def test_dual_tensor_is_slotted_and_copies_shape_and_dtype() -> None:
    primal = np.zeros((2, 3), dtype=np.float32)
    d = DualTensor(primal)
    assert d.shape == (2, 3) and d.dtype == np.float32 and d.tangent is None
    assert not hasattr(d, "__dict__")
    assert "no tangent" in repr(d) and "with tangent" in repr(DualTensor(primal, primal))


# ---- seeding and reading tangents ---------------------------------------------------------------
def test_make_dual_and_unpack_dual_round_trip() -> None:
    x = dual([1.0, 2.0, 3.0], [1.0, 0.0, -1.0])
    assert x.backend is FAD and x.kind == "float" and x.dtype is bp.float64
    y = (x * x).sin()
    primal, tangent = parts(y)
    np.testing.assert_allclose(primal, np.sin([1.0, 4.0, 9.0]), rtol=1e-15)
    np.testing.assert_allclose(tangent, np.cos([1.0, 4.0, 9.0]) * [2.0, 0.0, -6.0], rtol=1e-15)
    p, t = unpack_dual(y)
    assert p.backend is CpuBackend and t is not None and t.backend is CpuBackend


def test_untangented_tensors_carry_no_tangent() -> None:
    x = Tensor.from_inner(f64([[1.0, -2.0], [3.0, 4.0]]), backend=FAD)
    y = ((x @ x).exp() + 1.0).sum(1)
    assert y.primitive.tangent is None and unpack_dual(y).tangent is None
    assert make_dual(f64([1.0])).primitive.tangent is None


def test_make_dual_and_unpack_dual_check_their_arguments() -> None:
    x = f64([1.0, 2.0])
    with pytest.raises(KindError, match="float tensor"):
        make_dual(Tensor.arange(3), None)
    with pytest.raises(KindError, match="burnpy Tensor"):
        make_dual(np.zeros(2))  # type: ignore[arg-type]
    with pytest.raises(ShapeError, match=r"shape \(3,\) differs"):
        make_dual(x, f64([1.0, 2.0, 3.0]))
    with pytest.raises(DTypeError, match="dtype"):
        make_dual(x, x.float())
    with pytest.raises(BackendMismatchError, match="tangent is on"):
        make_dual(x, Tensor.from_inner(x, backend=FAD))
    with pytest.raises(BackendMismatchError, match="not on a ForwardAD backend"):
        unpack_dual(x)
    with pytest.raises(ShapeError):
        FAD.make_dual(np.zeros(2), np.zeros(3))
    with pytest.raises(DTypeError):
        FAD.make_dual(np.zeros(2), np.zeros(2, dtype=np.float32))


def test_custom_op_interface_reads_and_builds_primitives() -> None:
    p, t = np.array([1.0, 2.0]), np.array([0.5, 0.5])
    d = FAD.make_dual(p, t)
    assert FAD.dual_parts(d) == (p, t)
    assert FAD.dual_parts(FAD.from_inner(p)) == (p, None)
    assert FAD.inner(d) is p


def test_other_kinds_have_no_tangent() -> None:
    x = dual([0.5, 1.5, 2.5], [1.0, 1.0, 1.0])
    idx = x.argmax(0)
    assert idx.kind == "int" and idx.backend is FAD
    primal, tangent = unpack_dual(x > 1.0)
    assert primal.kind == "bool" and tangent is None
    assert parts(x.floor())[1] is None and parts(x.sign())[1] is None
    assert parts(x.long().float())[1] is None


def test_detach_drops_the_tangent() -> None:
    x = dual([1.0, 2.0], [1.0, 1.0])
    assert parts(x.detach())[1] is None
    np.testing.assert_allclose(parts(x.detach() * x)[1], [1.0, 2.0])


# ---- broadcasting and promotion ------------------------------------------------------------------
def test_a_lone_tangent_broadcasts_to_the_output_shape() -> None:
    col = dual([[1.0], [2.0]], [[1.0], [10.0]])
    row = Tensor.from_inner(f64([[0.0, 1.0, 2.0]]), backend=FAD)
    for out, expected in ((col + row, [[1.0] * 3, [10.0] * 3]), (row - col, [[-1.0] * 3,
                                                                          [-10.0] * 3]),
                          (col * row, [[0.0, 1.0, 2.0], [0.0, 10.0, 20.0]])):
        assert out.shape == (2, 3)
        np.testing.assert_allclose(parts(out)[1], expected)
    mask = Tensor.from_data(np.array([[True, False, True]]), backend=FAD)
    where = bp.where(mask, col, row)
    np.testing.assert_allclose(parts(where)[1], [[1.0, 0.0, 1.0], [10.0, 0.0, 10.0]])


def test_a_narrower_tangent_is_promoted_with_the_output() -> None:
    x = make_dual(Tensor.from_data(np.ones(3, dtype=np.float32)),
                  Tensor.from_data(np.full(3, 0.5, dtype=np.float32)))
    y = Tensor.from_inner(f64([1.0, 2.0, 3.0]), backend=FAD)
    out = x + y
    assert out.dtype is bp.float64 and out.primitive.tangent.dtype == np.float64
    np.testing.assert_allclose(parts(out)[1], [0.5, 0.5, 0.5])


# ---- composition ---------------------------------------------------------------------------------
def test_forward_over_forward_gives_second_derivatives() -> None:
    """x^3 with both tangents 1: outer tangent of the inner tangent is 6x."""
    inner = dual([1.0, 2.0], [1.0, 1.0])
    outer_tangent = Tensor.from_inner(f64([1.0, 1.0]), backend=FAD)
    y = make_dual(inner, outer_tangent) ** 3
    first, outer = unpack_dual(y)
    assert first.backend is FAD
    np.testing.assert_allclose(parts(first), ([1.0, 8.0], [3.0, 12.0]))
    np.testing.assert_allclose(parts(outer), ([3.0, 12.0], [6.0, 12.0]))


def test_forward_over_reverse_and_reverse_over_forward_hvps_agree() -> None:
    x0, v0 = np.array([0.3, -1.2, 2.0]), np.array([1.0, 0.5, -2.0])

    def f(x: Tensor) -> Tensor:
        return (x.sin() * x.exp()).sum() + (x * x).prod()

    ad_fad = Autodiff(FAD)
    x = Tensor.from_inner(dual(x0, v0), backend=ad_fad).require_grad()
    fwd_over_rev = parts(x.grad(f(x).backward()))[1]

    leaf = f64(x0, Autodiff(CpuBackend)).require_grad()
    jvp_value = unpack_dual(f(make_dual(leaf, f64(v0, Autodiff(CpuBackend))))).tangent
    rev_over_fwd = leaf.grad(jvp_value.backward()).to_numpy()
    np.testing.assert_allclose(fwd_over_rev, rev_over_fwd, rtol=1e-13)


# ---- the deferred matmul primal ------------------------------------------------------------------
def test_a_tangented_matmul_defers_its_primal_until_read() -> None:
    a = dual([[1.0, 2.0], [3.0, 4.0]], [[1.0, 0.0], [0.0, 1.0]])
    b = Tensor.from_inner(f64([[0.5, -1.0], [2.0, 1.0]]), backend=FAD)
    out = (a @ b).primitive
    assert isinstance(out, DeferredDualTensor) and out._value is None
    assert out.shape == (2, 2) and out.dtype == np.float64
    np.testing.assert_allclose(out.tangent, [[0.5, -1.0], [2.0, 1.0]])
    np.testing.assert_allclose(out.primal, [[4.5, 1.0], [9.5, 1.0]])
    assert out._compute is None and out.primal is out.primal
    assert not isinstance((b @ b).primitive, DeferredDualTensor)


def test_a_deferred_primal_read_from_many_threads_is_computed_once() -> None:
    calls: list[int] = []

    def compute() -> np.ndarray:
        calls.append(1)
        return np.ones(3)

    d = DeferredDualTensor(compute, (3,), np.dtype(np.float64), None)
    seen: list[np.ndarray] = []
    threads = [threading.Thread(target=lambda: seen.append(d.primal)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(seen) == 8 and all(s is seen[0] for s in seen) and len(calls) >= 1


def test_matmul_of_mismatched_operands_fails_at_once() -> None:
    a = FAD.make_dual(np.ones((2, 3)), np.ones((2, 3)))
    b = FAD.from_inner(np.ones((2, 3)))
    with pytest.raises(ValueError):
        FAD.float_matmul(a, b)


# ---- quantized tensors ---------------------------------------------------------------------------
def test_quantized_values_carry_no_tangent() -> None:
    x = dual([[0.5, -1.0, 2.0, 0.25]], [[1.0, 1.0, 1.0, 1.0]])
    q = x.quantize(bp.QuantScheme.int8())
    assert q.kind == "quantized" and q.primitive.__class__ is CpuBackend.QuantizedTensorPrimitive
    back = q.dequantize()
    assert back.backend is FAD and unpack_dual(back).tangent is None
    np.testing.assert_allclose(back.to_numpy(), [[0.5, -1.0, 2.0, 0.25]], atol=0.02)
