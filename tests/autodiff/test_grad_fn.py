"""``GradFn`` and ``apply_grad_fn``: the node-step protocol of custom ops."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import pytest
import torch

import burnpy as bp
from burnpy import Tensor
from burnpy.autodiff import (
    Autodiff,
    BalancedCheckpointing,
    ForwardAD,
    GradFn,
    NoCheckpointing,
    apply_grad_fn,
    make_dual,
    unpack_dual,
)
from burnpy.backend.errors import AutodiffError
from burnpy_cpu import CpuBackend

AD = Autodiff(CpuBackend)
A = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
B = np.array([[1.0, 2.0, -0.5], [-1.5, 0.5, 3.0]])


def leaf(values: np.ndarray, backend: type = AD) -> Tensor:
    return Tensor.from_data(values.copy(), backend=backend).require_grad()


class MulBackward(GradFn):
    """``a * b``: the gradients are written with Tensor ops, so they differentiate again."""

    __slots__ = ()

    def backward(self, grad_output: Any) -> tuple[Tensor, Tensor]:
        a, b = self.saved_tensors
        return grad_output * b, grad_output * a


def mul(a: Tensor, b: Tensor) -> Tensor:
    """The op: its value on the inner backend, then one recorded node."""
    return apply_grad_fn(MulBackward((a, b), (a, b)), a.inner() * b.inner())


@pytest.mark.parametrize("strategy", [NoCheckpointing, BalancedCheckpointing])
def test_a_recorded_grad_fn_matches_torch(strategy: type) -> None:
    backend = Autodiff(CpuBackend, strategy)
    a, b = leaf(A, backend), leaf(B, backend)
    out = mul(a.exp(), b)
    assert out.backend is backend and out.requires_grad
    grads = (out * out).sum().backward()
    ta, tb = torch.tensor(A, requires_grad=True), torch.tensor(B, requires_grad=True)
    want = torch.autograd.grad(((ta.exp() * tb) ** 2).sum(), (ta, tb))
    np.testing.assert_allclose(out.to_numpy(), np.exp(A) * B, rtol=1e-15)
    np.testing.assert_allclose(a.grad(grads).to_numpy(), want[0].numpy(), rtol=1e-13)
    np.testing.assert_allclose(b.grad(grads).to_numpy(), want[1].numpy(), rtol=1e-13)


def test_protocol_attributes() -> None:
    a, b = leaf(A), Tensor.from_data(B, backend=AD)
    grad_fn = MulBackward((a, b, 3.0), (a, b))
    assert grad_fn.name == "MulBackward"
    assert grad_fn.inputs == (a.primitive.node, None, None)
    assert [t.backend for t in grad_fn.saved_tensors] == [CpuBackend, CpuBackend]
    np.testing.assert_array_equal(grad_fn.saved_tensors[0].to_numpy(), A)
    out = apply_grad_fn(MulBackward((a, b), (a, b)), a.inner() * b.inner())
    assert out.primitive.node.op.name == "MulBackward"
    assert out.primitive.node.parents == (a.primitive.node, None)


def test_untracked_inputs_record_nothing_and_plain_backends_pass_outputs_through() -> None:
    a = Tensor.from_data(A, backend=AD)
    out = apply_grad_fn(MulBackward((a, a), (a, a)), a.inner() * a.inner())
    assert out.backend is AD and not out.requires_grad
    plain = Tensor.from_data(A)
    value = plain * plain
    assert apply_grad_fn(MulBackward((plain, plain), (plain, plain)), value) is value


class SplitBackward(GradFn):
    """``(x[:, :1], x[:, 1:])``: two outputs; backward gets one gradient per output."""

    __slots__ = ()
    received: ClassVar[list[Any]] = []

    @property
    def name(self) -> str:
        return "split_columns"

    def backward(self, grad_output: Any) -> Tensor:
        SplitBackward.received.append(grad_output)
        left, right = grad_output
        shape = (left if left is not None else right).shape[:1]
        zeros_left = Tensor.zeros((shape[0], 1), backend=CpuBackend, dtype="float64")
        zeros_right = Tensor.zeros((shape[0], 2), backend=CpuBackend, dtype="float64")
        return bp.cat([zeros_left if left is None else left,
                           zeros_right if right is None else right], 1)


def split(x: Tensor) -> tuple[Tensor, Tensor]:
    inner = x.inner()
    return apply_grad_fn(SplitBackward((x,)), (inner[:, :1], inner[:, 1:]))


@pytest.mark.parametrize("strategy", [NoCheckpointing, BalancedCheckpointing])
def test_a_multi_output_node_gets_one_gradient_per_output(strategy: type) -> None:
    backend = Autodiff(CpuBackend, strategy)
    SplitBackward.received = []
    x = leaf(A, backend)
    left, right = split(x)
    assert left.primitive.node.parents[0].op.name == "split_columns"
    grads = ((left * 2.0).sum() + (right * right).sum() + (left * left).sum()).backward()
    assert len(SplitBackward.received) == 1  # one call for all the outputs
    want = np.concatenate([2.0 + 2 * A[:, :1], 2 * A[:, 1:]], 1)
    np.testing.assert_allclose(x.grad(grads).to_numpy(), want)
    SplitBackward.received = []
    _, right = split(x)
    grads = right.sum().backward()
    (left_grad, right_grad), = SplitBackward.received
    assert left_grad is None and right_grad is not None
    np.testing.assert_array_equal(x.grad(grads).to_numpy(), [[0, 1, 1], [0, 1, 1]])


def test_misuse_raises() -> None:
    a = leaf(A)
    grad_fn = MulBackward((a, a), (a, a))
    apply_grad_fn(grad_fn, a.inner() * a.inner())
    with pytest.raises(AutodiffError, match=r"MulBackward: this GradFn was already applied"):
        apply_grad_fn(grad_fn, a.inner())
    with pytest.raises(AutodiffError, match=r"output 0 is int; expected a tensor of cpu"):
        apply_grad_fn(MulBackward((a,), ()), 3)  # type: ignore[arg-type]
    dual = make_dual(Tensor.from_data(A), Tensor.from_data(B))
    with pytest.raises(AutodiffError, match=r"a GradFn records a reverse-mode node"):
        apply_grad_fn(MulBackward((dual,), ()), dual.inner())

    class WrongCount(GradFn):
        def backward(self, grad_output: Any) -> tuple[Tensor]:
            return (grad_output,)

    out = apply_grad_fn(WrongCount((a, a)), a.inner())
    with pytest.raises(AutodiffError, match=r"WrongCount.backward returned 1 gradient\(s\), "
                                            "expected 2"):
        out.sum().backward()


def test_second_order_through_a_grad_fn_matches_torch() -> None:
    outer = Autodiff(AD)
    a_in, b_in = leaf(A), leaf(B)
    a = Tensor.from_inner(a_in, backend=outer).require_grad()
    b = Tensor.from_inner(b_in, backend=outer).require_grad()
    out = mul(a.sin(), b * b)
    grads = (out * a).sum().backward()
    ga = a.grad(grads)
    assert ga is not None and ga.backend is AD and ga.requires_grad
    second = (ga * ga).sum().backward()
    ta, tb = torch.tensor(A, requires_grad=True), torch.tensor(B, requires_grad=True)
    (tga,) = torch.autograd.grad((ta.sin() * tb * tb * ta).sum(), ta, create_graph=True)
    want = torch.autograd.grad((tga * tga).sum(), (ta, tb))
    np.testing.assert_allclose(ga.to_numpy(), tga.detach().numpy(), rtol=1e-13)
    np.testing.assert_allclose(a_in.grad(second).to_numpy(), want[0].numpy(), rtol=1e-12)
    np.testing.assert_allclose(b_in.grad(second).to_numpy(), want[1].numpy(), rtol=1e-12)


def test_once_differentiable_grad_fn_raises_when_differentiated_again() -> None:
    class OnceMulBackward(MulBackward):
        __slots__ = ()
        once_differentiable = True

    outer = Autodiff(AD)
    a_in = leaf(A)
    a = Tensor.from_inner(a_in, backend=outer).require_grad()
    out = apply_grad_fn(OnceMulBackward((a, a), (a, a)), a.inner() * a.inner())
    ga = a.grad(out.sum().backward())
    np.testing.assert_allclose(ga.to_numpy(), 2 * A)
    with pytest.raises(AutodiffError, match=r"OnceMulBackward.backward cannot be differentiated "
                                            "again: it is marked once_differentiable"):
        ga.sum().backward()


def test_backward_with_tangents_on_a_forward_ad_inner_backend() -> None:
    """Forward-over-reverse: the node is recorded on ``Autodiff(ForwardAD(Cpu))``, so its saved
    tensors carry the inputs' tangents, and the gradient's tangent is a Hessian-vector
    product term."""
    outer = Autodiff(ForwardAD(CpuBackend))
    v_a, v_b = np.full_like(A, 0.5), np.linspace(-1, 1, 6).reshape(2, 3)
    a = Tensor.from_inner(make_dual(Tensor.from_data(A), Tensor.from_data(v_a)),
                          backend=outer).require_grad()
    b = Tensor.from_inner(make_dual(Tensor.from_data(B), Tensor.from_data(v_b)),
                          backend=outer).require_grad()
    grad_fn = MulBackward((a, b), (a, b))
    apply_grad_fn(grad_fn, a.inner() * b.inner())
    g, g_tangent = Tensor.from_data(np.ones_like(A)), Tensor.from_data(B)
    (ga, ta), (gb, tb) = grad_fn.backward_with_tangents(g, g_tangent)
    # d(g * b)/de along (a + e v_a, b + e v_b, g + e g_tangent) = g_tangent * b + g * v_b
    np.testing.assert_allclose(ga.to_numpy(), B)
    np.testing.assert_allclose(ta.to_numpy(), B * B + v_b)
    np.testing.assert_allclose(gb.to_numpy(), A)
    np.testing.assert_allclose(tb.to_numpy(), B * A + v_a)
    assert ga.backend is CpuBackend and ta.backend is CpuBackend
    (_, none_tangent), _ = MulBackward((a, b), (a, b)).backward_with_tangents(g, None)
    assert none_tangent is not None  # b's tangent still flows
    # The same through the graph: the gradient of ``sum(a * b)`` carries the HVP tangent.
    a2 = Tensor.from_inner(make_dual(Tensor.from_data(A), Tensor.from_data(v_a)),
                           backend=outer).require_grad()
    grads = mul(a2, a2 * 3.0).sum().backward()
    np.testing.assert_allclose(unpack_dual(a2.grad(grads)).tangent.to_numpy(), 6.0 * v_a)


def test_backward_with_tangents_needs_tangent_carrying_saved_tensors() -> None:
    a = leaf(A)
    grad_fn = MulBackward((a, a), (a, a))
    with pytest.raises(AutodiffError, match=r"MulBackward: backward_with_tangents needs the node "
                                            r"recorded on Autodiff\(ForwardAD\(B\)\)"):
        grad_fn.backward_with_tangents(Tensor.from_data(A), None)
