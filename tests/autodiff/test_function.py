"""``burnpy.autodiff.Function``: PyTorch-style custom ops, every ctx feature, against torch."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import pytest
import torch

from burnpy import Tensor
from burnpy.autodiff import (
    Autodiff,
    BalancedCheckpointing,
    ForwardAD,
    Function,
    FunctionCtx,
    NoCheckpointing,
    make_dual,
    unpack_dual,
)
from burnpy.backend.errors import AutodiffError, BackendMismatchError
from burnpy_cpu import CpuBackend

AD = Autodiff(CpuBackend)
STRATEGIES = [NoCheckpointing, BalancedCheckpointing]
VALUES = np.array([[0.3, -1.2, 2.0], [0.7, 1.5, -0.4]])


def leaf(values: Any = VALUES, backend: type = AD) -> Tensor:
    return Tensor.from_data(np.asarray(values, dtype=np.float64), backend=backend).require_grad()


def const(values: Any = VALUES, backend: type = AD) -> Tensor:
    return Tensor.from_data(np.asarray(values, dtype=np.float64), backend=backend)


def grad_np(t: Tensor, grads: Any) -> np.ndarray:
    g = t.grad(grads)
    assert g is not None
    return g.to_numpy()


class ScaledMul(Function):
    """``x * y * scale``: two tensors and a non-tensor argument."""

    @staticmethod
    def forward(ctx: FunctionCtx, x: Tensor, y: Tensor, scale: float) -> Tensor:
        ctx.save_for_backward(x, y)
        ctx.scale = scale
        return x * y * scale

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor | None, ...]:
        x, y = ctx.saved_tensors
        return grad * y * ctx.scale, grad * x * ctx.scale, None


# ---- forward and backward -----------------------------------------------------------------------
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_forward_and_backward_match_torch(strategy: type) -> None:
    backend = Autodiff(CpuBackend, strategy)
    x, y = leaf(backend=backend), leaf(VALUES[::-1] + 1.0, backend=backend)
    out = ScaledMul.apply(x, y, 2.5)
    assert out.backend is backend and out.requires_grad
    grads = (out.sin() * x).sum().backward()
    tx = torch.tensor(VALUES, requires_grad=True)
    ty = torch.tensor(VALUES[::-1] + 1.0, requires_grad=True)
    t_out = tx * ty * 2.5
    gx, gy = torch.autograd.grad((t_out.sin() * tx).sum(), (tx, ty))
    np.testing.assert_allclose(out.to_numpy(), t_out.detach().numpy(), rtol=1e-14)
    np.testing.assert_allclose(grad_np(x, grads), gx.numpy(), rtol=1e-13)
    np.testing.assert_allclose(grad_np(y, grads), gy.numpy(), rtol=1e-13)


def test_setup_context_style_and_vjp_alias() -> None:
    class Cube(Function):
        @staticmethod
        def forward(x: Tensor) -> Tensor:
            return x * x * x

        @staticmethod
        def setup_context(ctx: FunctionCtx, inputs: tuple[Any, ...], output: Tensor) -> None:
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def vjp(ctx: FunctionCtx, grad: Tensor) -> Tensor:
            (x,) = ctx.saved_tensors
            return grad * x * x * 3.0

    assert Cube.backward is Cube.vjp
    x = leaf()
    grads = Cube.apply(x).sum().backward()
    np.testing.assert_allclose(grad_np(x, grads), 3 * VALUES ** 2, rtol=1e-14)


def test_on_a_plain_backend_apply_just_runs_forward() -> None:
    x = const(backend=CpuBackend)
    out = ScaledMul.apply(x, x, 2.0)
    assert out.backend is CpuBackend
    np.testing.assert_allclose(out.to_numpy(), VALUES * VALUES * 2.0)


def test_forward_sees_untracked_inputs_on_the_innermost_backend() -> None:
    seen = []

    class Probe(Function):
        @staticmethod
        def forward(ctx: FunctionCtx, x: Tensor) -> Tensor:
            seen.append((x.backend, x.requires_grad))
            return x * 2.0

        @staticmethod
        def backward(ctx: FunctionCtx, grad: Tensor) -> Tensor:
            seen.append(grad.backend)
            return grad * 2.0

    outer = Autodiff(AD)
    x = Tensor.from_inner(leaf(), backend=outer).require_grad()
    out = Probe.apply(x)
    assert seen == [(CpuBackend, False)]
    assert out.primitive.node.op.name == "ProbeBackward"
    assert out.primitive.node.parents == (x.primitive.node,)
    out.sum().backward()
    assert seen[1] is AD  # the outer node's backward works on the inner backend


def test_ctx_attributes_are_shared_by_forward_and_backward() -> None:
    x, y = leaf(), leaf()
    grads = ScaledMul.apply(x, y, -3.0).sum().backward()
    np.testing.assert_allclose(grad_np(x, grads), VALUES * -3.0)


def test_keyword_arguments_pass_through_without_gradient() -> None:
    class Shift(Function):
        @staticmethod
        def forward(ctx: FunctionCtx, x: Tensor, *, offset: Tensor, power: int) -> Tensor:
            ctx.power = power
            ctx.save_for_backward(x)
            return x ** power + offset

        @staticmethod
        def backward(ctx: FunctionCtx, grad: Tensor) -> Tensor:
            (x,) = ctx.saved_tensors
            return grad * x ** (ctx.power - 1) * ctx.power

    x, offset = leaf(), leaf(np.ones((2, 3)))
    out = Shift.apply(x, offset=offset, power=3)
    grads = out.sum().backward()
    np.testing.assert_allclose(out.to_numpy(), VALUES ** 3 + 1.0)
    np.testing.assert_allclose(grad_np(x, grads), 3 * VALUES ** 2)
    assert offset.grad(grads) is None


# ---- needs_input_grad ---------------------------------------------------------------------------
def test_needs_input_grad_in_forward_and_backward() -> None:
    seen: list[tuple[bool, ...]] = []

    class Record(Function):
        @staticmethod
        def forward(ctx: FunctionCtx, x: Tensor, y: Tensor, k: int) -> Tensor:
            seen.append(ctx.needs_input_grad)
            return x + y * k

        @staticmethod
        def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor | None, ...]:
            seen.append(ctx.needs_input_grad)
            return grad, grad * 2.0 if ctx.needs_input_grad[1] else None, None

    x, y = leaf(), const()
    Record.apply(x, y, 2).sum().backward()
    assert seen == [(True, False, False), (True, False, False)]
    seen.clear()
    Record.apply(const(), leaf(), 2).sum().backward()
    assert seen == [(False, True, False), (False, True, False)]
    seen.clear()
    Record.apply(const(backend=CpuBackend), const(backend=CpuBackend), 2)
    assert seen == [(False, False, False)]


def test_needs_input_grad_is_per_level_in_backward_and_any_level_in_forward() -> None:
    seen: list[tuple[bool, ...]] = []

    class Record(Function):
        @staticmethod
        def forward(ctx: FunctionCtx, x: Tensor, y: Tensor) -> Tensor:
            seen.append(ctx.needs_input_grad)
            ctx.save_for_backward(x, y)
            return x * y

        @staticmethod
        def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, Tensor]:
            seen.append(ctx.needs_input_grad)
            x, y = ctx.saved_tensors
            return grad * y, grad * x

    outer = Autodiff(AD)
    x = Tensor.from_inner(leaf(), backend=outer).require_grad()  # tracked on both levels
    y = Tensor.from_inner(leaf(), backend=outer)  # tracked on the inner level only
    first = x.grad((Record.apply(x, y) * x).sum().backward())
    assert seen == [(True, True), (True, False)]
    first.sum().backward()  # through the inner level's node of the same call
    assert seen[2] == (True, True)


# ---- materialize_grads, several outputs, non-tensor outputs --------------------------------------
class SinCos(Function):
    """``(sin x, cos x, "label")``: two float outputs and a non-tensor one."""

    materialize: ClassVar[bool] = True
    received: ClassVar[list[Any]] = []

    @staticmethod
    def forward(ctx: FunctionCtx, x: Tensor) -> tuple[Tensor, Tensor, str]:
        ctx.set_materialize_grads(SinCos.materialize)
        ctx.save_for_backward(x)
        return x.sin(), x.cos(), "label"

    @staticmethod
    def backward(ctx: FunctionCtx, g_sin: Tensor | None, g_cos: Tensor | None,
                 g_label: None) -> Tensor:
        SinCos.received.append((g_sin, g_cos, g_label))
        (x,) = ctx.saved_tensors
        total = x.zeros_like()
        if g_sin is not None:
            total = total + g_sin * x.cos()
        if g_cos is not None:
            total = total - g_cos * x.sin()
        return total


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_several_outputs_and_a_non_tensor_output(strategy: type) -> None:
    backend = Autodiff(CpuBackend, strategy)
    SinCos.materialize, SinCos.received = True, []
    x = leaf(backend=backend)
    s, c, label = SinCos.apply(x)
    assert label == "label" and s.requires_grad and c.requires_grad
    grads = (s * 2.0 + c * c * 3.0).exp().sum().backward()
    tx = torch.tensor(VALUES, requires_grad=True)
    (want,) = torch.autograd.grad((tx.sin() * 2.0 + tx.cos() ** 2 * 3.0).exp().sum(), tx)
    np.testing.assert_allclose(grad_np(x, grads), want.numpy(), rtol=1e-13)
    assert len(SinCos.received) == 1 and SinCos.received[0][2] is None


def test_materialize_grads_true_passes_zeros_for_unused_outputs() -> None:
    SinCos.materialize, SinCos.received = True, []
    x = leaf()
    s, _, _ = SinCos.apply(x)
    grads = s.sum().backward()
    (_, g_cos, g_label), = SinCos.received
    assert g_cos is not None and g_cos.backend is CpuBackend
    np.testing.assert_array_equal(g_cos.to_numpy(), np.zeros((2, 3)))
    assert g_label is None
    np.testing.assert_allclose(grad_np(x, grads), np.cos(VALUES))


def test_materialize_grads_false_passes_none_for_unused_outputs() -> None:
    SinCos.materialize, SinCos.received = False, []
    x = leaf()
    _, c, _ = SinCos.apply(x)
    grads = c.sum().backward()
    (g_sin, g_cos, _), = SinCos.received
    assert g_sin is None and g_cos is not None
    np.testing.assert_allclose(grad_np(x, grads), -np.sin(VALUES))


# ---- mark_non_differentiable ---------------------------------------------------------------------
class SortValues(Function):
    """Sorted values (differentiable) and their ranks as floats (not differentiable)."""

    received: ClassVar[list[Any]] = []

    @staticmethod
    def forward(ctx: FunctionCtx, x: Tensor) -> tuple[Tensor, Tensor]:
        values, indices = x.sort_with_indices(1)
        ranks = indices.float().cast(x.dtype)
        ctx.mark_non_differentiable(ranks)
        ctx.save_for_backward(indices)
        return values, ranks

    @staticmethod
    def backward(ctx: FunctionCtx, g_values: Tensor, g_ranks: Tensor) -> Tensor:
        SortValues.received.append(g_ranks)
        (indices,) = ctx.saved_tensors
        return g_values.zeros_like().scatter(1, indices, g_values)


def test_mark_non_differentiable_output_has_no_gradient() -> None:
    SortValues.received = []
    x = leaf()
    values, ranks = SortValues.apply(x)
    assert values.requires_grad and not ranks.requires_grad
    with pytest.raises(AutodiffError, match=r"does not require grad"):
        ranks.sum().backward()
    weights = const(np.arange(6.0).reshape(2, 3))
    grads = (values * weights + ranks).sum().backward()
    order = np.argsort(VALUES, axis=1)
    want = np.zeros_like(VALUES)
    np.put_along_axis(want, order, np.arange(6.0).reshape(2, 3), axis=1)
    np.testing.assert_allclose(grad_np(x, grads), want)
    (g_ranks,) = SortValues.received
    np.testing.assert_array_equal(g_ranks.to_numpy(), np.zeros((2, 3)))


def test_mark_non_differentiable_takes_outputs_only() -> None:
    class Bad(Function):
        @staticmethod
        def forward(ctx: FunctionCtx, x: Tensor) -> Tensor:
            ctx.mark_non_differentiable(x)
            return x * 2.0

    with pytest.raises(AutodiffError, match=r"Bad: ctx.mark_non_differentiable takes outputs"):
        Bad.apply(leaf())


# ---- mark_dirty ---------------------------------------------------------------------------------
class AddRowInPlace(Function):
    """``x[0] += y`` in place, returning x (marked dirty)."""

    mark = True

    @staticmethod
    def forward(ctx: FunctionCtx, x: Tensor, y: Tensor) -> Tensor:
        x[0] = x[0] + y
        if AddRowInPlace.mark:
            ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, Tensor]:
        return grad, grad[0]


def test_mark_dirty_rebinds_the_callers_tensor_with_history() -> None:
    AddRowInPlace.mark = True
    w = leaf()
    x = w * 2.0
    y = leaf([1.0, 2.0, 3.0])
    old_node = x.primitive.node
    out = AddRowInPlace.apply(x, y)
    assert out is x
    want = VALUES * 2.0
    want[0] += [1.0, 2.0, 3.0]
    np.testing.assert_allclose(x.to_numpy(), want)
    assert x.primitive.node is not old_node
    assert x.primitive.node.parents == (old_node, y.primitive.node)
    grads = (x * x).sum().backward()
    np.testing.assert_allclose(grad_np(w, grads), 2.0 * 2.0 * want)
    np.testing.assert_allclose(grad_np(y, grads), 2.0 * want[0])


def test_mark_dirty_on_a_plain_backend_updates_the_callers_tensor() -> None:
    AddRowInPlace.mark = True
    x = const(backend=CpuBackend)
    assert AddRowInPlace.apply(x, const([1.0, 1.0, 1.0], backend=CpuBackend)) is x
    np.testing.assert_allclose(x.to_numpy()[0], VALUES[0] + 1.0)


def test_without_mark_dirty_the_callers_tensor_is_left_alone() -> None:
    AddRowInPlace.mark = False
    try:
        for backend in (CpuBackend, AD):
            x = const(backend=backend)
            out = AddRowInPlace.apply(x, const([1.0, 1.0, 1.0], backend=backend))
            assert out is not x
            np.testing.assert_array_equal(x.to_numpy(), VALUES)
            np.testing.assert_allclose(out.to_numpy()[0], VALUES[0] + 1.0)
    finally:
        AddRowInPlace.mark = True


def test_mark_dirty_refuses_a_leaf_that_requires_grad() -> None:
    AddRowInPlace.mark = True
    x = leaf()
    with pytest.raises(AutodiffError, match=r"AddRowInPlace: input 0 is marked dirty but is a "
                                            "leaf that requires grad"):
        AddRowInPlace.apply(x, leaf([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(x.to_numpy(), VALUES)


def test_mark_dirty_takes_returned_inputs_only() -> None:
    class NotReturned(Function):
        @staticmethod
        def forward(ctx: FunctionCtx, x: Tensor) -> Tensor:
            ctx.mark_dirty(x)
            return x * 1.0

    class NotAnInput(Function):
        @staticmethod
        def forward(ctx: FunctionCtx, x: Tensor) -> Tensor:
            y = x * 1.0
            ctx.mark_dirty(y)
            return y

    with pytest.raises(AutodiffError, match=r"NotReturned: an input marked dirty must be returned"):
        NotReturned.apply(const())
    with pytest.raises(AutodiffError, match=r"NotAnInput: ctx.mark_dirty takes inputs"):
        NotAnInput.apply(const())


# ---- gradients returned by backward --------------------------------------------------------------
def test_none_gradient_leaves_that_input_without_one() -> None:
    class OnlyFirst(Function):
        @staticmethod
        def forward(ctx: FunctionCtx, x: Tensor, y: Tensor) -> Tensor:
            return x + y

        @staticmethod
        def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, None]:
            return grad, None

    x, y = leaf(), leaf()
    grads = OnlyFirst.apply(x, y).sum().backward()
    assert y.grad(grads) is None
    grads = (OnlyFirst.apply(x, y) + y * 3.0).sum().backward()
    np.testing.assert_array_equal(grad_np(y, grads), np.full((2, 3), 3.0))


def test_a_gradient_of_the_broadcast_shape_is_reduced() -> None:
    class AddBias(Function):
        @staticmethod
        def forward(ctx: FunctionCtx, x: Tensor, b: Tensor) -> Tensor:
            return x + b

        @staticmethod
        def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, Tensor]:
            return grad, grad  # b's gradient keeps x's shape: the graph sums it down

    b = leaf([[1.0, 2.0, 3.0]])
    grads = (AddBias.apply(leaf(), b) * const()).sum().backward()
    np.testing.assert_allclose(grad_np(b, grads), VALUES.sum(0, keepdims=True))


def _raising(backward_result: Any, *args: Any) -> str:
    class Broken(Function):
        @staticmethod
        def forward(ctx: FunctionCtx, x: Tensor, *rest: Any) -> Tensor:
            return x * 2.0

        @staticmethod
        def backward(ctx: FunctionCtx, grad: Tensor) -> Any:
            return backward_result(grad)

    out = Broken.apply(leaf(), *args)
    with pytest.raises(AutodiffError) as info:
        out.sum().backward()
    return str(info.value)


def test_wrong_gradients_raise_errors_naming_the_function() -> None:
    assert "Broken.backward returned 1 gradient(s), expected 2" in _raising(
        lambda g: (g,), leaf())
    assert "Broken.backward returned Tensor; expected a tuple with one gradient (a Tensor or " \
           "None) per input, 2 in all" in _raising(lambda g: g, leaf())
    assert "Broken.backward returned 3 gradient(s), expected 2" in _raising(
        lambda g: (g, g, g), leaf())
    assert "Broken.backward returned a gradient for input 1, which is not a tensor" in _raising(
        lambda g: (g, g), 5)
    assert "Broken.backward: gradient 0 has shape (3, 2), expected (2, 3)" in _raising(
        lambda g: g.transpose(0, 1))
    assert "Broken.backward: gradient 0 has dtype bp.float32, expected bp.float64" in _raising(
        lambda g: g.float())
    assert "Broken.backward: gradient 0 is a ndarray, expected a burnpy Tensor" in _raising(
        lambda g: g.to_numpy())
    assert "gradient 0 is a tensor of autodiff<cpu>, expected one of cpu" in _raising(
        lambda g: Tensor.from_inner(g, backend=AD))
    assert "Broken.backward returned str; expected a tuple" in _raising(lambda g: "oops", 2)
    assert "returned a gradient for input 1, an int tensor, which has none" in _raising(
        lambda g: (g, g), Tensor.arange(6, backend=AD).reshape(2, 3))


def test_extra_trailing_none_gradients_are_accepted() -> None:
    class Loose(Function):
        @staticmethod
        def forward(ctx: FunctionCtx, x: Tensor) -> Tensor:
            return x * 2.0

        @staticmethod
        def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, None, None]:
            return grad * 2.0, None, None

    x = leaf()
    np.testing.assert_array_equal(grad_np(x, Loose.apply(x).sum().backward()), np.full((2, 3), 2.0))


def test_missing_backward_raises_when_differentiated() -> None:
    class ForwardOnly(Function):
        @staticmethod
        def forward(ctx: FunctionCtx, x: Tensor) -> Tensor:
            return x * 2.0

    out = ForwardOnly.apply(leaf())
    np.testing.assert_allclose(out.to_numpy(), VALUES * 2.0)
    with pytest.raises(AutodiffError, match=r"ForwardOnly defines no backward"):
        out.sum().backward()


def test_save_for_backward_takes_tensors_only() -> None:
    class SavesANumber(Function):
        @staticmethod
        def forward(ctx: FunctionCtx, x: Tensor) -> Tensor:
            ctx.save_for_backward(x, 3.0)
            return x

    with pytest.raises(AutodiffError, match=r"SavesANumber: ctx.save_for_backward takes tensors, "
                                            "got float at position 1"):
        SavesANumber.apply(leaf())


def test_forward_must_return_tensors_of_its_inputs_backend() -> None:
    class Elsewhere(Function):
        @staticmethod
        def forward(ctx: FunctionCtx, x: Tensor) -> Tensor:
            return Tensor.from_data(x.to_numpy(), backend=AD)

    with pytest.raises(AutodiffError, match=r"Elsewhere.forward returned output 0 on "
                                            "autodiff<cpu>; it runs on cpu"):
        Elsewhere.apply(leaf())


def test_arguments_on_different_backends_raise() -> None:
    with pytest.raises(BackendMismatchError, match=r"ScaledMul.apply: tensors on different"):
        ScaledMul.apply(leaf(), const(backend=CpuBackend), 1.0)


def test_retain_graph_runs_backward_twice_and_a_consumed_node_raises() -> None:
    x = leaf()
    out = ScaledMul.apply(x, x, 1.0).sum()
    first = grad_np(x, out.backward(retain_graph=True))
    np.testing.assert_allclose(grad_np(x, out.backward()), first)
    with pytest.raises(AutodiffError, match=r"already consumed"):
        out.backward()


# ---- forward mode: jvp and save_for_forward ------------------------------------------------------
class Exp(Function):
    """``exp``: the output is saved for backward and for jvp."""

    @staticmethod
    def forward(ctx: FunctionCtx, x: Tensor) -> Tensor:
        y = x.exp()
        ctx.save_for_backward(y)
        ctx.save_for_forward(y)
        return y

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> Tensor:
        (y,) = ctx.saved_tensors
        return grad * y

    @staticmethod
    def jvp(ctx: FunctionCtx, tangent: Tensor) -> Tensor:
        (y,) = ctx.saved_tensors
        return tangent * y


class _Dual:
    """The primitive of ``FakeForwardAD``: a primal and an optional tangent."""

    __slots__ = ("dtype", "primal", "shape", "tangent")

    def __init__(self, primal: Any, tangent: Any) -> None:
        self.primal, self.tangent = primal, tangent
        self.shape, self.dtype = primal.shape, primal.dtype


class FakeForwardAD:
    """Only the interface ``Function.apply`` relies on (``is_forward_ad``, ``InnerBackend``,
    ``dual_parts``, ``make_dual``)."""

    is_forward_ad = True
    InnerBackend = CpuBackend

    @staticmethod
    def name(device: Any = None) -> str:
        return "fake_forward<cpu>"

    @staticmethod
    def dual_parts(primitive: _Dual) -> tuple[Any, Any]:
        return primitive.primal, primitive.tangent

    @staticmethod
    def make_dual(primal: Any, tangent: Any = None) -> _Dual:
        return _Dual(primal, tangent)


def fake_dual(primal: np.ndarray, tangent: np.ndarray | None) -> Tensor:
    return Tensor(FakeForwardAD, _Dual(primal, tangent), "float")  # type: ignore[arg-type]


def test_jvp_through_the_forward_ad_interface() -> None:
    tangent = np.linspace(-1.0, 1.0, 6).reshape(2, 3)
    out = Exp.apply(fake_dual(VALUES.copy(), tangent))
    assert out.backend is FakeForwardAD
    np.testing.assert_allclose(out.primitive.primal, np.exp(VALUES))
    np.testing.assert_allclose(out.primitive.tangent, tangent * np.exp(VALUES))
    assert Exp.apply(fake_dual(VALUES.copy(), None)).primitive.tangent is None


def test_jvp_reads_what_save_for_forward_saved() -> None:
    class SavesForBackwardOnly(Function):
        @staticmethod
        def forward(ctx: FunctionCtx, x: Tensor) -> Tensor:
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def jvp(ctx: FunctionCtx, tangent: Tensor) -> Tensor:
            assert ctx.saved_tensors == ()
            return tangent

    SavesForBackwardOnly.apply(fake_dual(VALUES.copy(), np.ones((2, 3))))


def test_jvp_with_the_real_forward_ad_matches_torch() -> None:
    tangent = np.linspace(-1.0, 1.0, 6).reshape(2, 3)
    x = make_dual(const(backend=CpuBackend), const(tangent, backend=CpuBackend))
    out = ScaledMulWithJvp.apply(x, x.sin(), 1.5)
    assert out.backend is ForwardAD(CpuBackend)
    primal, got = unpack_dual(out)
    t_primal, want = torch.func.jvp(lambda v: v * v.sin() * 1.5, (torch.tensor(VALUES),),
                                    (torch.tensor(tangent),))
    np.testing.assert_allclose(primal.to_numpy(), t_primal.numpy(), rtol=1e-14)
    np.testing.assert_allclose(got.to_numpy(), want.numpy(), rtol=1e-13)


class ScaledMulWithJvp(ScaledMul):
    """``ScaledMul`` with a tangent rule; materialized zeros stand for missing tangents."""

    @staticmethod
    def forward(ctx: FunctionCtx, x: Tensor, y: Tensor, scale: float) -> Tensor:
        ctx.save_for_forward(x, y)
        ctx.scale = scale
        return x * y * scale

    @staticmethod
    def jvp(ctx: FunctionCtx, tx: Tensor, ty: Tensor, t_scale: None) -> Tensor:
        assert t_scale is None
        x, y = ctx.saved_tensors
        return (tx * y + x * ty) * ctx.scale


def test_missing_tangents_are_materialized_as_zeros() -> None:
    x = make_dual(const(backend=CpuBackend), const(np.ones((2, 3)), backend=CpuBackend))
    y = make_dual(const(backend=CpuBackend) + 1.0)  # no tangent
    _, got = unpack_dual(ScaledMulWithJvp.apply(x, y, 2.0))
    np.testing.assert_allclose(got.to_numpy(), (VALUES + 1.0) * 2.0)


def test_missing_jvp_and_wrong_tangents_raise() -> None:
    x = fake_dual(VALUES.copy(), np.ones((2, 3)))
    with pytest.raises(AutodiffError, match=r"ScaledMul defines no jvp, so it cannot carry the "
                                            "tangents of fake_forward<cpu>"):
        ScaledMul.apply(x, x, 1.0)

    class BadJvp(Exp):
        @staticmethod
        def jvp(ctx: FunctionCtx, tangent: Tensor) -> tuple[Tensor, Tensor]:
            return tangent, tangent

    with pytest.raises(AutodiffError, match=r"BadJvp.jvp returned 2 tangent\(s\), expected 1"):
        BadJvp.apply(x)

    class WrongShape(Exp):
        @staticmethod
        def jvp(ctx: FunctionCtx, tangent: Tensor) -> Tensor:
            return tangent.sum()

    with pytest.raises(AutodiffError, match=r"WrongShape.jvp: tangent 0 has shape"):
        WrongShape.apply(x)
