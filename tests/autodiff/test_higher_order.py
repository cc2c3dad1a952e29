"""Higher derivatives by nesting ``Autodiff``: built-in ops to third order, custom Functions
differentiated again, the errors of backwards that leave the graph, and PDE-style mixed
partial derivatives. Everything in float64, against torch or closed forms."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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
    once_differentiable,
    unpack_dual,
)
from burnpy.backend.errors import AutodiffError
from burnpy_cpu import CpuBackend

STRATEGIES = [NoCheckpointing, BalancedCheckpointing]
X = np.array([-1.3, -0.4, 0.2, 0.9, 1.7])


def tower(values: np.ndarray, depth: int, strategy: type = NoCheckpointing) -> list[Tensor]:
    """Leaves ``x_1`` on ``Autodiff(Cpu)`` ... ``x_depth`` on ``Autodiff^depth(Cpu)``, each
    the one below lifted and tracked again: ``x_k``'s gradient is a tensor of level k - 1."""
    backend = Autodiff(CpuBackend, strategy)
    xs = [Tensor.from_data(values.copy(), backend=backend).require_grad()]
    for _ in range(depth - 1):
        backend = Autodiff(backend, strategy)
        xs.append(Tensor.from_inner(xs[-1], backend=backend).require_grad())
    return xs


def nth_derivative(f: Callable[[Tensor], Tensor], values: np.ndarray, n: int,
                   strategy: type = NoCheckpointing) -> np.ndarray:
    """The n-th derivative of an elementwise ``f``, one backward per level."""
    xs = tower(values, n, strategy)
    g = f(xs[-1])
    for x in reversed(xs):
        g = x.grad(g.sum().backward())
        assert g is not None
    return g.to_numpy()


def torch_nth_derivative(f: Callable[[torch.Tensor], torch.Tensor], values: np.ndarray,
                         n: int) -> np.ndarray:
    x = torch.tensor(values, requires_grad=True)
    g = f(x)
    for _ in range(n):
        (g,) = torch.autograd.grad(g.sum(), x, create_graph=True)
    return g.detach().numpy()


ELEMENTWISE = {
    "sin": (lambda x: x.sin(), lambda x: x.sin()),
    "tanh": (lambda x: x.tanh(), lambda x: x.tanh()),
    "pow4": (lambda x: x ** 4, lambda x: x ** 4),
    "exp_times_x": (lambda x: x.exp() * x, lambda x: x.exp() * x),
    "sigmoid_of_square": (lambda x: (x * x).sigmoid(), lambda x: (x * x).sigmoid()),
}


# ---- built-in ops -------------------------------------------------------------------------------
@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_third_derivatives_of_builtin_ops_match_torch(name: str, strategy: type) -> None:
    ours, theirs = ELEMENTWISE[name]
    want = torch_nth_derivative(theirs, X, 3)
    np.testing.assert_allclose(nth_derivative(ours, X, 3, strategy), want, rtol=1e-11,
                               atol=1e-12)


def test_third_derivatives_match_closed_forms() -> None:
    np.testing.assert_allclose(nth_derivative(lambda x: x.sin(), X, 3), -np.cos(X), rtol=1e-13)
    np.testing.assert_allclose(nth_derivative(lambda x: x ** 4, X, 3), 24 * X, rtol=1e-13)
    np.testing.assert_allclose(nth_derivative(lambda x: x.exp() * x, X, 3),
                               np.exp(X) * (X + 3), rtol=1e-13)
    sech2 = 1 / np.cosh(X) ** 2
    np.testing.assert_allclose(nth_derivative(lambda x: x.tanh(), X, 3),
                               -2 * sech2 * (sech2 - 2 * np.tanh(X) ** 2), rtol=1e-12)


def test_third_derivative_of_a_softmax_entry_matches_torch() -> None:
    """``d^3 softmax(x)[0]`` contracted with two directions, one backward per level."""
    v, w = np.array([0.3, -1.0, 0.5, 2.0, -0.2]), np.array([1.0, 0.4, -0.7, 0.1, 0.6])
    x1, x2, x3 = tower(X, 3)
    g1 = x3.grad(x3.softmax(0)[0].backward())
    g2 = x2.grad((g1 * Tensor.from_data(v, backend=g1.backend)).sum().backward())
    g3 = x1.grad((g2 * Tensor.from_data(w, backend=g2.backend)).sum().backward())
    t = torch.tensor(X, requires_grad=True)
    (t1,) = torch.autograd.grad(t.softmax(0)[0], t, create_graph=True)
    (t2,) = torch.autograd.grad((t1 * torch.tensor(v)).sum(), t, create_graph=True)
    (t3,) = torch.autograd.grad((t2 * torch.tensor(w)).sum(), t)
    np.testing.assert_allclose(g3.to_numpy(), t3.numpy(), rtol=1e-11, atol=1e-14)


def test_hessian_by_nesting_matches_torch() -> None:
    w = np.array([[0.5, -1.0], [2.0, 0.3], [-0.7, 1.1], [0.2, 0.9], [1.4, -0.6]])

    def f(x: Any, weight: Any) -> Any:
        return (x.tanh() @ weight).exp().sum().log() + (x * x).sum().sqrt()

    x1, x2 = tower(X, 2)
    g = x2.grad(f(x2, Tensor.from_data(w, backend=x2.backend)).backward())
    rows = []
    for i in range(len(X)):
        grads = (g * Tensor.from_data(np.eye(len(X))[i], backend=g.backend)).sum().backward(
            retain_graph=True)
        rows.append(x1.grad(grads).to_numpy())
    want = torch.autograd.functional.hessian(lambda t: f(t, torch.tensor(w)), torch.tensor(X))
    np.testing.assert_allclose(np.stack(rows), want.numpy(), rtol=1e-12, atol=1e-14)


# ---- custom Functions, differentiated again ------------------------------------------------------
class Sin(Function):
    """``sin`` with Tensor-op backward and jvp, saving its input."""

    @staticmethod
    def forward(ctx: FunctionCtx, x: Tensor) -> Tensor:
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        return x.sin()

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> Tensor:
        (x,) = ctx.saved_tensors
        return grad * x.cos()

    @staticmethod
    def jvp(ctx: FunctionCtx, tangent: Tensor) -> Tensor:
        (x,) = ctx.saved_tensors
        return tangent * x.cos()


class Exp(Function):
    """``exp`` saving its output: higher derivatives go through the output's own node."""

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


class NumpyExp(Function):
    """``exp`` whose forward is NumPy (allowed: forward runs untracked) and whose backward is
    Tensor ops on the saved output."""

    @staticmethod
    def forward(ctx: FunctionCtx, x: Tensor) -> Tensor:
        y = Tensor.from_data(np.exp(x.to_numpy()), backend=x.backend)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> Tensor:
        (y,) = ctx.saved_tensors
        return grad * y


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_custom_functions_differentiate_to_third_order(strategy: type) -> None:
    np.testing.assert_allclose(nth_derivative(Sin.apply, X, 2, strategy), -np.sin(X),
                               rtol=1e-13)
    np.testing.assert_allclose(nth_derivative(Sin.apply, X, 3, strategy), -np.cos(X),
                               rtol=1e-13)
    for fn in (Exp.apply, NumpyExp.apply):
        np.testing.assert_allclose(nth_derivative(lambda x, f=fn: f(x) * x, X, 3, strategy),
                                   np.exp(X) * (X + 3), rtol=1e-13)


def test_hessian_vector_product_through_custom_and_builtin_ops_matches_torch() -> None:
    class TorchExp(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
            (y,) = ctx.saved_tensors
            return grad * y

    v = np.array([0.5, -0.3, 1.2, 0.7, -1.1])
    x1, x2 = tower(X, 2)
    y = (Exp.apply(Sin.apply(x2) * x2) * x2.tanh()).sum()
    g = x2.grad(y.backward())
    hvp = x1.grad((g * Tensor.from_data(v, backend=g.backend)).sum().backward())
    t = torch.tensor(X, requires_grad=True)
    (tg,) = torch.autograd.grad((TorchExp.apply(t.sin() * t) * t.tanh()).sum(), t,
                                create_graph=True)
    (t_hvp,) = torch.autograd.grad((tg * torch.tensor(v)).sum(), t)
    np.testing.assert_allclose(g.to_numpy(), tg.detach().numpy(), rtol=1e-13)
    np.testing.assert_allclose(hvp.to_numpy(), t_hvp.numpy(), rtol=1e-12)


def test_a_linear_custom_op_adds_nothing_to_second_derivatives() -> None:
    class Double(Function):
        @staticmethod
        def forward(ctx: FunctionCtx, x: Tensor) -> Tensor:
            return x * 2.0

        @staticmethod
        def backward(ctx: FunctionCtx, grad: Tensor) -> Tensor:
            return grad * 2.0

    np.testing.assert_allclose(nth_derivative(lambda x: Double.apply(x) * x, X, 2),
                               np.full_like(X, 4.0))


# ---- backwards that cannot be differentiated again -----------------------------------------------
class OnceSin(Sin):
    """``Sin`` with its correct Tensor-op backward declared differentiable once only."""

    @staticmethod
    @once_differentiable
    def backward(ctx: FunctionCtx, grad: Tensor) -> Tensor:
        (x,) = ctx.saved_tensors
        return grad * x.cos()


class NumpySin(Function):
    """``sin`` whose backward leaves the graph through NumPy."""

    @staticmethod
    def forward(ctx: FunctionCtx, x: Tensor) -> Tensor:
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> Tensor:
        (x,) = ctx.saved_tensors
        return Tensor.from_data(np.cos(x.to_numpy()) * grad.to_numpy(), backend=grad.backend)


class StashedSin(Function):
    """``sin`` whose forward keeps ``cos x`` in NumPy and whose backward multiplies the
    gradient by it: its result has history through ``grad`` but not through ``x``."""

    @staticmethod
    def forward(ctx: FunctionCtx, x: Tensor) -> Tensor:
        ctx.cos = np.cos(x.to_numpy())
        return x.sin()

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> Tensor:
        return grad * Tensor.from_data(ctx.cos, backend=grad.backend)


class DetachedSin(Function):
    """``sin`` whose backward cuts its result from ``grad`` with ``detach``."""

    @staticmethod
    def forward(ctx: FunctionCtx, x: Tensor) -> Tensor:
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> Tensor:
        (x,) = ctx.saved_tensors
        return (grad * x.cos()).detach()


@pytest.mark.parametrize(("function", "reason"), [
    (OnceSin, "it is marked once_differentiable"),
    (NumpySin, "it moved float values between the host and the graph"),
    (StashedSin, "it moved float values between the host and the graph"),
])
@pytest.mark.parametrize("extra", [False, True])
def test_a_backward_that_leaves_the_graph_raises_when_differentiated_again(
        function: type[Function], reason: str, extra: bool) -> None:
    """First derivatives stay right; the second raises, also when other terms would have hidden
    the custom op's missing part behind a result (never silent zeros)."""
    _, x2 = tower(X, 2)
    y = function.apply(x2) + (x2 ** 3 if extra else 0.0)
    g = x2.grad(y.sum().backward())
    np.testing.assert_allclose(g.to_numpy(), np.cos(X) + (3 * X ** 2 if extra else 0.0),
                               rtol=1e-14)
    with pytest.raises(AutodiffError, match=rf"{function.__name__}.backward cannot be "
                                            rf"differentiated again: {reason}"):
        g.sum().backward()


def test_a_gradient_without_history_from_one_with_history_raises() -> None:
    _, x2 = tower(X, 2)
    g = x2.grad((DetachedSin.apply(x2) * x2).sum().backward())  # grad_output is x: tracked
    np.testing.assert_allclose(g.to_numpy(), X * np.cos(X) + np.sin(X), rtol=1e-14)
    with pytest.raises(AutodiffError, match=r"DetachedSin.backward cannot be differentiated "
                                            "again: it returned a gradient without history"):
        g.sum().backward()


def test_forward_over_reverse_through_custom_functions() -> None:
    """On ``Autodiff(ForwardAD(Cpu))`` the gradient's tangent is a Hessian-vector product: a
    Tensor-op backward carries it, a once-differentiable one raises at once."""
    v = np.array([0.5, -0.3, 1.2, 0.7, -1.1])
    backend = Autodiff(ForwardAD(CpuBackend))

    def seeded() -> Tensor:
        dual = make_dual(Tensor.from_data(X.copy()), Tensor.from_data(v))
        return Tensor.from_inner(dual, backend=backend).require_grad()

    x = seeded()
    grad = x.grad((Exp.apply(Sin.apply(x)) * x).sum().backward())
    primal, tangent = unpack_dual(grad)
    e = np.exp(np.sin(X))
    np.testing.assert_allclose(primal.to_numpy(), e * np.cos(X) * X + e, rtol=1e-14)
    second = e * (np.cos(X) ** 2 * X - np.sin(X) * X + 2 * np.cos(X))
    np.testing.assert_allclose(tangent.to_numpy(), second * v, rtol=1e-13)
    x = seeded()
    y = OnceSin.apply(x).sum()
    with pytest.raises(AutodiffError, match=r"OnceSin.backward cannot be differentiated again: "
                                            r"it is marked once_differentiable"):
        y.backward()


def test_leaving_the_graph_is_fine_when_nothing_below_is_tracked() -> None:
    """Only first derivatives are asked for: no level below has history, so nothing raises."""
    for backend in (Autodiff(CpuBackend), Autodiff(Autodiff(CpuBackend))):
        x = Tensor.from_data(X.copy(), backend=backend).require_grad()
        for function in (OnceSin, NumpySin, StashedSin):
            g = x.grad((function.apply(x) * 2.0).sum().backward())
            np.testing.assert_allclose(g.to_numpy(), 2.0 * np.cos(X), rtol=1e-14)
            assert not g.requires_grad


# ---- PDE-style mixed partial derivatives --------------------------------------------------------
def u(x: Tensor, t: Tensor, sin: Callable[[Tensor], Tensor]) -> Tensor:
    """``u(x, t) = sin(x) exp(-t) + x^2 t`` at collocation points."""
    return sin(x) * (-t).exp() + x * x * t


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("sin", [lambda x: x.sin(), Sin.apply], ids=["builtin", "custom"])
def test_pde_partial_derivatives_by_nesting(sin: Callable[[Tensor], Tensor],
                                            strategy: type) -> None:
    xv, tv = np.array([-1.0, 0.3, 0.8, 2.1]), np.array([0.0, 0.5, 1.2, 2.0])
    _, x2, x3 = tower(xv, 3, strategy)
    t1, t2, t3 = tower(tv, 3, strategy)
    decay = np.exp(-tv)
    first = u(x3, t3, sin).sum().backward()
    u_x, u_t = x3.grad(first), t3.grad(first)
    np.testing.assert_allclose(u_x.to_numpy(), np.cos(xv) * decay + 2 * xv * tv, rtol=1e-14)
    np.testing.assert_allclose(u_t.to_numpy(), -np.sin(xv) * decay + xv ** 2, rtol=1e-14)
    second = u_x.sum().backward(retain_graph=True)
    u_xx, u_xt = x2.grad(second), t2.grad(second)
    np.testing.assert_allclose(u_xx.to_numpy(), -np.sin(xv) * decay + 2 * tv, rtol=1e-14)
    np.testing.assert_allclose(u_xt.to_numpy(), -np.cos(xv) * decay + 2 * xv, rtol=1e-14)
    from_t = u_t.sum().backward()
    np.testing.assert_allclose(x2.grad(from_t).to_numpy(), u_xt.to_numpy(), rtol=1e-14)
    np.testing.assert_allclose(t2.grad(from_t).to_numpy(), np.sin(xv) * decay, rtol=1e-14)
    u_xxt = t1.grad(u_xx.sum().backward())
    np.testing.assert_allclose(u_xxt.to_numpy(), np.sin(xv) * decay + 2.0, rtol=1e-14)
