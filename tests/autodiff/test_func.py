"""``burnpy.func`` against ``torch.func`` in float64: grad, value_and_grad, vjp, jvp, hvp (both
modes, against torch's ``jvp(grad(f))``), jacrev, jacfwd and hessian, on a tanh MLP loss, a
softmax cross-entropy, a small conv net and functions of several arguments; composition of
the transforms; and the errors misuse gets."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
import torch.func as tf
import torch.nn.functional as TF

import burnpy.nn.functional as F
from burnpy import Tensor, func
from burnpy.autodiff import Autodiff, ForwardAD
from burnpy.backend.errors import (
    BackendMismatchError,
    InvalidArgumentError,
    KindError,
    ShapeError,
)
from burnpy.nn.functional import cross_entropy
from burnpy_cpu import CpuBackend

RTOL = 1e-10


# ---- the functions, in both frameworks -----------------------------------------------------------
def mlp_loss(w1: Any, b1: Any, w2: Any, x: Any, y: Any) -> Any:
    """Mean squared error of a tanh MLP (the spelling is shared by burnpy and torch)."""
    return ((((x @ w1.mT) + b1).tanh() @ w2.mT) - y).square().mean()


def ours_cross_entropy(logits: Tensor, target: Tensor) -> Tensor:
    return cross_entropy(logits, target)


def torch_cross_entropy(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return TF.cross_entropy(logits, target)


def ours_conv_net(w: Tensor, b: Tensor, v: Tensor, x: Tensor, target: Tensor) -> Tensor:
    h = F.avg_pool2d(F.conv2d(x, w, b, padding=1).tanh(), 2)
    return cross_entropy(F.linear(h.flatten(1), v), target)


def torch_conv_net(w: torch.Tensor, b: torch.Tensor, v: torch.Tensor, x: torch.Tensor,
                   target: torch.Tensor) -> torch.Tensor:
    h = TF.avg_pool2d(TF.conv2d(x, w, b, padding=1).tanh(), 2)
    return TF.cross_entropy(TF.linear(h.flatten(1), v), target)


def several(a: Any, b: Any, c: Any) -> Any:
    """A scalar function of three arguments mixing products, a matmul and a softmax."""
    return (a.sin() * b).sum() + (a @ c).softmax(-1).square().sum() + (b * b * b).mean()


def pair(a: Any, b: Any) -> tuple[Any, Any]:
    """A tuple-valued function of two arguments."""
    return a.exp() @ b, (a * 2.0).tanh()


RNG = np.random.default_rng(0)
MLP_ARGS = [RNG.standard_normal(s) for s in ((4, 3), (4,), (2, 4), (5, 3), (5, 2))]
CE_ARGS = [RNG.standard_normal((4, 3)), RNG.integers(0, 3, 4)]
CONV_ARGS = [RNG.standard_normal((2, 1, 3, 3)), RNG.standard_normal(2),
             RNG.standard_normal((3, 8)), RNG.standard_normal((2, 1, 4, 4)),
             RNG.integers(0, 3, 2)]
SEVERAL_ARGS = [RNG.standard_normal((2, 3)), RNG.standard_normal((2, 3)),
                RNG.standard_normal((3, 2))]
PAIR_ARGS = [RNG.standard_normal((2, 3)), RNG.standard_normal((3, 2))]

#: (name, burnpy function, torch function, arguments, differentiated positions)
SCALAR_FUNCTIONS = [
    ("tanh_mlp", mlp_loss, mlp_loss, MLP_ARGS, (0, 1, 2)),
    ("cross_entropy", ours_cross_entropy, torch_cross_entropy, CE_ARGS, (0,)),
    ("conv_net", ours_conv_net, torch_conv_net, CONV_ARGS, (0, 1, 2)),
    ("several_args", several, several, SEVERAL_ARGS, (0, 1, 2)),
]
SCALAR_IDS = [s[0] for s in SCALAR_FUNCTIONS]


def ours(arrays: list[np.ndarray]) -> list[Tensor]:
    return [Tensor.from_data(a) for a in arrays]


def theirs(arrays: list[np.ndarray]) -> list[torch.Tensor]:
    return [torch.from_numpy(np.array(a)) for a in arrays]


def close(got: Any, want: Any, rtol: float = RTOL) -> None:
    """Equal structure (tuples) and values, scaled by each block's largest magnitude."""
    if isinstance(want, tuple | list):
        assert isinstance(got, tuple) and len(got) == len(want), (got, want)
        for g, w in zip(got, want, strict=True):
            close(g, w, rtol)
        return
    assert isinstance(got, Tensor) and got.backend is CpuBackend, got
    w = want.detach().numpy()
    assert got.shape == tuple(w.shape)
    np.testing.assert_allclose(got.to_numpy(), w, rtol=rtol,
                               atol=rtol * max(float(np.abs(w).max(initial=0.0)), 1.0))


def directions(arrays: list[np.ndarray], positions: tuple[int, ...]) -> list[np.ndarray | None]:
    rng = np.random.default_rng(1)
    return [rng.standard_normal(a.shape) if i in positions else None
            for i, a in enumerate(arrays)]


# ---- reverse mode --------------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "f", "g", "args", "positions"), SCALAR_FUNCTIONS,
                         ids=SCALAR_IDS)
def test_grad_and_value_and_grad_match_torch(name: str, f: Callable[..., Any],
                                             g: Callable[..., Any], args: list[np.ndarray],
                                             positions: tuple[int, ...]) -> None:
    close(func.grad(f, argnums=positions)(*ours(args)),
          tf.grad(g, argnums=positions)(*theirs(args)))
    last = positions[-1]
    close(func.grad(f, argnums=last)(*ours(args)), tf.grad(g, argnums=last)(*theirs(args)))
    value, grads = func.value_and_grad(f, argnums=positions)(*ours(args))
    their_grads, their_value = tf.grad_and_value(g, argnums=positions)(*theirs(args))
    close(value, their_value)
    close(grads, their_grads)


def test_grad_of_a_layer_whose_bias_is_held_fixed() -> None:
    w, b, v, x, target = CONV_ARGS
    close(func.grad(ours_conv_net)(*ours(CONV_ARGS)),
          tf.grad(torch_conv_net)(*theirs([w, b, v, x, target])))


def test_grad_with_aux_returns_the_aux_unlifted() -> None:
    def f(a: Tensor, b: Tensor) -> tuple[Tensor, dict[str, Any]]:
        s = (a * b).sum()
        return s, {"s": s, "scaled": [a * 2.0, 3]}

    a, b = ours(PAIR_ARGS[0:1] + [PAIR_ARGS[0]])
    grads, aux = func.grad(f, argnums=(0, 1), has_aux=True)(a, b)
    close(grads, (torch.from_numpy(PAIR_ARGS[0]),) * 2)
    assert aux["s"].backend is CpuBackend and aux["scaled"][1] == 3
    np.testing.assert_allclose(aux["scaled"][0].to_numpy(), PAIR_ARGS[0] * 2.0)
    (value, aux2), grads2 = func.value_and_grad(f, has_aux=True)(a, b)
    np.testing.assert_allclose(value.item(), float(np.sum(PAIR_ARGS[0] ** 2)))
    close(grads2, torch.from_numpy(PAIR_ARGS[0]))
    assert aux2["s"].backend is CpuBackend


def test_vjp_matches_torch_for_single_and_tuple_outputs() -> None:
    a, b = ours(PAIR_ARGS)
    ta, tb = theirs(PAIR_ARGS)
    out, vjp_fn = func.vjp(pair, a, b)
    t_out, t_vjp_fn = tf.vjp(pair, ta, tb)
    close(out, t_out)
    rng = np.random.default_rng(2)
    cts = [rng.standard_normal(o.shape) for o in out]
    for _ in range(2):  # vjp_fn may be called again
        close(vjp_fn(tuple(ours(cts))), t_vjp_fn(tuple(theirs(cts))))
    out, vjp_fn = func.vjp(lambda x: x.sin() * 2.0, a)
    t_out, t_vjp_fn = tf.vjp(lambda x: x.sin() * 2.0, ta)
    close(out, t_out)
    close(vjp_fn(ours(cts[1:])[0]), t_vjp_fn(theirs(cts[1:])[0]))


def test_vjp_of_an_output_independent_of_the_inputs_is_zero() -> None:
    (a,) = ours(PAIR_ARGS[:1])
    out, vjp_fn = func.vjp(lambda x: x.zeros_like() + 1.0, a)
    (g,) = vjp_fn(Tensor.ones(out.shape, dtype="float64"))
    np.testing.assert_array_equal(g.to_numpy(), np.zeros(a.shape))


# ---- forward mode --------------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "f", "g", "args", "positions"), SCALAR_FUNCTIONS,
                         ids=SCALAR_IDS)
def test_jvp_matches_torch(name: str, f: Callable[..., Any], g: Callable[..., Any],
                           args: list[np.ndarray], positions: tuple[int, ...]) -> None:
    dirs = directions(args, positions)
    ours_tangents = [None if d is None else Tensor.from_data(d) for d in dirs]
    out, tangent = func.jvp(f, ours(args), ours_tangents)

    def g_of_moving(*moving: torch.Tensor) -> torch.Tensor:
        full = theirs(args)
        for i, m in zip(positions, moving, strict=True):
            full[i] = m
        return g(*full)

    t_out, t_tangent = tf.jvp(g_of_moving, tuple(theirs(args)[i] for i in positions),
                              tuple(torch.from_numpy(dirs[i]) for i in positions))
    close(out, t_out)
    close(tangent, t_tangent)


def test_jvp_of_tuple_outputs_and_aux() -> None:
    rng = np.random.default_rng(3)
    vs = [rng.standard_normal(a.shape) for a in PAIR_ARGS]
    out, tangent = func.jvp(pair, ours(PAIR_ARGS), ours(vs))
    t_out, t_tangent = tf.jvp(pair, tuple(theirs(PAIR_ARGS)), tuple(theirs(vs)))
    close(out, t_out)
    close(tangent, t_tangent)
    out, tangent, aux = func.jvp(lambda a: (a.exp(), a * 3.0), ours(PAIR_ARGS[:1]),
                                 ours(vs[:1]), has_aux=True)
    np.testing.assert_allclose(tangent.to_numpy(), np.exp(PAIR_ARGS[0]) * vs[0], rtol=1e-14)
    assert aux.backend is CpuBackend
    np.testing.assert_allclose(aux.to_numpy(), PAIR_ARGS[0] * 3.0)


def test_jvp_of_an_output_independent_of_the_tangents_is_zero() -> None:
    a, b = ours(PAIR_ARGS)
    out, tangent = func.jvp(lambda x, y: y.exp(), (a, b), (a.ones_like(), None))
    np.testing.assert_allclose(out.to_numpy(), np.exp(PAIR_ARGS[1]))
    np.testing.assert_array_equal(tangent.to_numpy(), np.zeros(b.shape))


# ---- Hessian-vector products ---------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["fwd_over_rev", "rev_over_rev"])
@pytest.mark.parametrize(("name", "f", "g", "args", "positions"), SCALAR_FUNCTIONS,
                         ids=SCALAR_IDS)
def test_hvp_matches_torch_jvp_of_grad(name: str, f: Callable[..., Any], g: Callable[..., Any],
                                       args: list[np.ndarray], positions: tuple[int, ...],
                                       mode: str) -> None:
    dirs = directions(args, positions)
    got = func.hvp(f, ours(args), [None if d is None else Tensor.from_data(d) for d in dirs],
                   argnums=positions, mode=mode)  # type: ignore[arg-type]

    def grad_of_moving(*moving: torch.Tensor) -> Any:
        full = theirs(args)
        for i, m in zip(positions, moving, strict=True):
            full[i] = m
        return tf.grad(g, argnums=positions)(*full)

    _, want = tf.jvp(grad_of_moving, tuple(theirs(args)[i] for i in positions),
                     tuple(torch.from_numpy(dirs[i]) for i in positions))
    close(got, want)


def test_hvp_with_a_subset_of_tangents_and_argnums_matches_torch() -> None:
    """argnums and the tangent-carrying primals differ: H[argnums, moving] @ v."""
    a, b, c = SEVERAL_ARGS
    v = np.random.default_rng(4).standard_normal(c.shape)
    want = tf.jvp(lambda z: tf.grad(several, argnums=(0, 1))(*theirs([a, b]), z),
                  (torch.from_numpy(c),), (torch.from_numpy(v),))[1]
    for mode in ("fwd_over_rev", "rev_over_rev"):
        got = func.hvp(several, ours(SEVERAL_ARGS), (None, None, Tensor.from_data(v)),
                       argnums=(0, 1), mode=mode)  # type: ignore[arg-type]
        close(got, want)
    zero = func.hvp(several, ours(SEVERAL_ARGS), (None, None, None), argnums=2,
                    mode="rev_over_rev")
    np.testing.assert_array_equal(zero.to_numpy(), np.zeros(c.shape))


def test_hvp_of_x_cubed_is_six_x_v() -> None:
    x, v = Tensor.from_data([1.0, -2.0, 0.5], dtype="float64"), Tensor.from_data(
        [1.0, 1.0, 2.0], dtype="float64")
    for mode in ("fwd_over_rev", "rev_over_rev"):
        got = func.hvp(lambda t: (t * t * t).sum(), (x,), (v,), mode=mode)  # type: ignore
        np.testing.assert_allclose(got.to_numpy(), [6.0, -12.0, 6.0])


# ---- Jacobians and Hessians ----------------------------------------------------------------------
@pytest.mark.parametrize("argnums", [0, 1, (0, 1)], ids=["arg0", "arg1", "both"])
def test_jacrev_and_jacfwd_match_torch_on_tuple_outputs(argnums: Any) -> None:
    want = tf.jacrev(pair, argnums=argnums)(*theirs(PAIR_ARGS))
    close(func.jacrev(pair, argnums=argnums)(*ours(PAIR_ARGS)), want)
    close(func.jacfwd(pair, argnums=argnums)(*ours(PAIR_ARGS)), want)
    close(func.jacobian(pair, argnums=argnums, mode="fwd")(*ours(PAIR_ARGS)), want)


def test_jacobian_of_a_single_output_and_with_aux() -> None:
    def f(a: Any) -> tuple[Any, Any]:
        return (a @ a.mT).log_softmax(-1), a.sum()

    (a,) = PAIR_ARGS[:1]
    want, t_aux = tf.jacrev(f, has_aux=True)(torch.from_numpy(a))
    for mode in ("rev", "fwd"):
        got, aux = func.jacobian(f, mode=mode, has_aux=True)(Tensor.from_data(a))
        close(got, want)
        close(aux, t_aux)


def test_jacobian_of_an_independent_output_is_zero() -> None:
    (a, b) = ours(PAIR_ARGS)
    for mode in ("rev", "fwd"):
        jac = func.jacobian(lambda x, y: y * 2.0, argnums=0, mode=mode)(a, b)
        assert jac.shape == b.shape + a.shape
        np.testing.assert_array_equal(jac.to_numpy(), 0.0)


@pytest.mark.parametrize(("name", "f", "g", "args", "positions"), SCALAR_FUNCTIONS,
                         ids=SCALAR_IDS)
def test_hessian_matches_torch(name: str, f: Callable[..., Any], g: Callable[..., Any],
                               args: list[np.ndarray], positions: tuple[int, ...]) -> None:
    argnums = positions if len(positions) > 1 else positions[0]
    close(func.hessian(f, argnums=argnums)(*ours(args)),
          tf.hessian(g, argnums=argnums)(*theirs(args)))


def test_hessian_by_every_composition_agrees() -> None:
    (a, b, c) = ours(SEVERAL_ARGS)
    want = tf.hessian(several)(*theirs(SEVERAL_ARGS))
    close(func.hessian(several)(a, b, c), want)
    close(func.jacrev(func.jacrev(several))(a, b, c), want)
    close(func.jacfwd(func.jacfwd(several))(a, b, c), want)
    close(func.jacrev(func.jacfwd(several))(a, b, c), want)


# ---- composition ---------------------------------------------------------------------------------
def test_transforms_nest() -> None:
    x = Tensor.from_data(np.array(0.7))
    third = func.grad(func.grad(func.grad(lambda t: t.sin() * t)))(x)
    t = 0.7
    np.testing.assert_allclose(third.item(), -3 * np.sin(t) - t * np.cos(t),
                               rtol=1e-14)
    (a,) = ours(PAIR_ARGS[:1])
    v = a.ones_like()
    hvp_by_jvp = func.jvp(func.grad(lambda z: z.exp().sum()), (a,), (v,))[1]
    _, vjp_fn = func.vjp(func.grad(lambda z: z.exp().sum()), a)
    np.testing.assert_allclose(hvp_by_jvp.to_numpy(), np.exp(PAIR_ARGS[0]), rtol=1e-14)
    np.testing.assert_allclose(vjp_fn(v)[0].to_numpy(), np.exp(PAIR_ARGS[0]), rtol=1e-14)


def test_arguments_may_live_on_a_decorated_backend() -> None:
    """A transform of tensors already on ForwardAD(B) or Autodiff(B) lifts them once more."""
    fad = ForwardAD(CpuBackend)
    x = Tensor.from_inner(Tensor.from_data(np.array([1.0, 2.0])), backend=fad)
    g = func.grad(lambda t: (t * t).sum())(x)
    assert g.backend is fad
    np.testing.assert_allclose(g.to_numpy(), [2.0, 4.0])
    ad = Autodiff(CpuBackend)
    y = Tensor.from_data(np.array([1.0, 2.0]), backend=ad).require_grad()
    gy = func.grad(lambda t: (t * t * t).sum())(y)
    assert gy.backend is ad and gy.requires_grad
    np.testing.assert_allclose(y.grad(gy.sum().backward()).to_numpy(), [6.0, 12.0])


# ---- misuse --------------------------------------------------------------------------------------
def test_misuse_raises_clear_errors() -> None:
    a, b = ours(PAIR_ARGS)
    square_sum = lambda t: (t * t).sum()  # noqa: E731
    with pytest.raises(ShapeError, match=r"scalar \(shape \(\)\).*vjp or jacobian"):
        func.grad(lambda t: t * 2.0)(a)
    with pytest.raises(InvalidArgumentError, match="argnums 2 is out of range"):
        func.grad(square_sum, argnums=2)(a, b)
    with pytest.raises(InvalidArgumentError, match="twice"):
        func.grad(square_sum, argnums=(0, -2))(a, b)
    with pytest.raises(InvalidArgumentError, match="at least one"):
        func.grad(square_sum, argnums=())(a)
    with pytest.raises(InvalidArgumentError, match="int or a tuple"):
        func.grad(square_sum, argnums=1.0)(a)  # type: ignore[arg-type]
    with pytest.raises(KindError, match="argument 0 is an int tensor"):
        func.grad(lambda t: t.float().sum())(Tensor.arange(3))
    with pytest.raises(InvalidArgumentError, match="argument 0 is a float"):
        func.grad(square_sum)(1.5)
    with pytest.raises(InvalidArgumentError, match="float Tensor"):
        func.grad(lambda t: 3.0)(a)
    with pytest.raises(InvalidArgumentError, match=r"pair \(output, aux\)"):
        func.grad(square_sum, has_aux=True)(a)
    with pytest.raises(InvalidArgumentError, match="Tensor or a tuple of Tensors"):
        func.vjp(lambda t: [1, 2], a)
    with pytest.raises(InvalidArgumentError, match="one tangent per primal"):
        func.jvp(square_sum, (a, b), (a,))
    with pytest.raises(InvalidArgumentError, match="tuples of Tensors"):
        func.jvp(square_sum, a, a)  # type: ignore[arg-type]
    with pytest.raises(ShapeError, match="tangent 0 has shape"):
        func.jvp(square_sum, (a,), (b,))
    with pytest.raises(InvalidArgumentError, match="mode must be"):
        func.hvp(square_sum, (a,), (a,), mode="fwd")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="mode must be"):
        func.jacobian(square_sum, mode="forward")  # type: ignore[arg-type]
    _, vjp_fn = func.vjp(lambda t: t * 2.0, a)
    with pytest.raises(ShapeError, match="cotangent 0 has shape"):
        vjp_fn(b)
    with pytest.raises(BackendMismatchError, match="argument 1 is on autodiff<cpu>"):
        func.grad(lambda t, u: (t * u).sum())(a, Tensor.from_inner(b, backend=Autodiff(
            CpuBackend)))


def test_a_closed_over_tensor_gets_a_hint_to_pass_it_as_an_argument() -> None:
    (a,) = ours(PAIR_ARGS[:1])
    with pytest.raises(BackendMismatchError, match="pass them to f as arguments") as info:
        func.hessian(lambda t: (t * a).sum())(a)
    assert str(info.value).count("inside burnpy.func") == 1
    grads = func.grad(lambda t, c: (t * c).sum())(a, a)  # passing it works
    np.testing.assert_allclose(grads.to_numpy(), PAIR_ARGS[0])
