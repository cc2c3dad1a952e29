"""Fusion(CpuBackend)'s own behaviour: one kernel per chain, plans replayed, dead
intermediates never written, dropped handles freed, errors naming the user's op, and the
CPU fuser's kernels against NumPy for each vocabulary op."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import burnpy as bp
from burnpy import Autodiff, ForwardAD, Fusion, Tensor
from burnpy.fusion import FusionTensor
from burnpy.fusion.fuser import composites_calling
from burnpy_cpu import CpuBackend
from burnpy_cpu.fuser import FUSER, NUMPY_FASTER, CpuFuser

F = Fusion(CpuBackend)


@pytest.fixture(autouse=True)
def fresh_stats() -> Iterator[None]:
    """Compile any group (the inputs here are small), every op included (none left to
    NumPy), and count from zero."""
    before = FUSER.min_elements, FUSER.declined, FUSER.own_ops
    FUSER.min_elements, FUSER.declined, FUSER.own_ops = 0, frozenset(), frozenset()
    F.flush()
    F._accepted.clear()
    F.stats.reset()
    yield
    FUSER.min_elements, FUSER.declined, FUSER.own_ops = before
    F._accepted.clear()


def chain(x: Tensor) -> Tensor:
    """Ten elementwise ops."""
    y = x * 1.5 + 0.5
    y = y * y - x
    y = y.abs() * 0.25 + x
    y = y.clamp(0.0, 2.0)
    return (y - 0.5) * x


def test_the_class_is_cached_and_named() -> None:
    assert Fusion(CpuBackend) is F and bp.Fusion is Fusion
    assert F.name() == "fusion<cpu>"
    assert Autodiff(F).name() == "autodiff<fusion<cpu>>"


def test_a_ten_op_chain_is_one_kernel_and_matches_numpy() -> None:
    data = np.linspace(-2, 2, 64, dtype=np.float32)
    out = chain(Tensor.from_data(data, backend=F))
    assert isinstance(out.primitive, FusionTensor) and out.primitive.node is not None
    assert F.stats.kernels == 0  # nothing ran yet: the values are not needed
    np.testing.assert_allclose(out.to_numpy(), chain(Tensor.from_data(data)).to_numpy(),
                               rtol=1e-6)
    assert (F.stats.kernels, F.stats.fallback_ops) == (1, 0)


def test_the_same_chain_again_compiles_nothing() -> None:
    x = Tensor.from_data(np.arange(32, dtype=np.float32), backend=F)
    chain(x).to_numpy()
    compiled = F.stats.compiles
    for _ in range(3):
        chain(x * 1.0).to_numpy()
    assert F.stats.compiles == compiled + 1  # only the new (x * 1.0) prefix made a new group
    chain(x * 1.0).to_numpy()
    assert F.stats.compiles == compiled + 1 and F.stats.cache_hits == 3


def test_a_kernel_called_again_takes_each_calls_scalars() -> None:
    """A kernel keeps its last call's scalar conversions while the very same objects come
    again (a compiled replay's constants); any other object is converted anew, ``-0.0`` after
    ``0.0`` among them (equal, but not the same sign)."""
    data = np.linspace(0.5, 2, 64, dtype=np.float32)
    x = Tensor.from_data(data, backend=F)
    compiles = F.stats.compiles
    for s in (0.0, -0.0, 0.0, 3.5, 3.5, -0.0, 1e-3):
        got = ((x * s) * 2.0).to_numpy()
        want = (data * np.float32(s)) * np.float32(2.0)
        np.testing.assert_array_equal(got, want)
        assert np.array_equal(np.signbit(got), np.signbit(want))
    assert F.stats.compiles <= compiles + 1  # one kernel, called with each scalar


def mlp_step(w: Tensor, x: Tensor) -> Tensor:
    h = (x @ w).gelu()
    loss = ((h - 1.0) * (h - 1.0)).mean()
    grads = loss.backward()
    g = w.grad(grads)
    assert g is not None
    return g


def test_a_second_identical_training_step_compiles_nothing() -> None:
    ad = Autodiff(F)
    rng = np.random.default_rng(0)
    w = Tensor.from_data(rng.normal(size=(8, 16)).astype(np.float32), backend=ad).require_grad()
    x = Tensor.from_data(rng.normal(size=(4, 8)).astype(np.float32), backend=ad)
    first = mlp_step(w, x).to_numpy()
    compiles = F.stats.compiles
    assert compiles > 0
    second = mlp_step(w, x).to_numpy()
    assert F.stats.compiles == compiles
    np.testing.assert_array_equal(first, second)
    w_cpu = Tensor.from_data(w.inner().to_numpy(), backend=Autodiff(CpuBackend)).require_grad()
    x_cpu = Tensor.from_data(x.inner().to_numpy(), backend=Autodiff(CpuBackend))
    np.testing.assert_allclose(first, mlp_step(w_cpu, x_cpu).to_numpy(), rtol=1e-5, atol=1e-7)


def test_intermediates_without_a_handle_are_never_written() -> None:
    F.clear_plans()
    x = Tensor.from_data(np.arange(16, dtype=np.float32), backend=F)
    kept = x.exp()
    out = (kept * 2.0 + 1.0).sum()
    out.item()
    (group,) = F._plans
    assert group.outputs == (0,)  # exp is kept alive: written; the mul and add are not
    assert group.reduction is not None and group.reduction.name == "sum"


def test_a_dropped_pending_handle_is_never_computed() -> None:
    x = Tensor.from_data(np.arange(16, dtype=np.float32), backend=F)
    y = x.exp() * 3.0
    del y
    gc.collect()
    F.flush()
    assert F.stats.kernels == 0 and F.stats.fallback_ops == 0


def test_a_flush_lets_dropped_and_computed_handles_go_without_the_cyclic_gc() -> None:
    """A node holds its handle until the flush (the user's references tell whether it is
    needed); the flush lets go of both kinds, computed or not, with no cycle left for the
    garbage collector."""
    x = Tensor.from_data(np.arange(16, dtype=np.float32), backend=F)
    gc.collect()
    gc.disable()
    try:
        F.stats.reset()
        dropped, kept = x.exp() * 3.0, x.sin() + 1.0
        handles = [weakref.ref(t.primitive) for t in (dropped, kept)]
        del dropped
        F.flush()
        assert F.stats.kernels == 1 and handles[0]() is None  # never computed, and gone
        want = np.sin(np.arange(16, dtype=np.float32)) + np.float32(1.0)
        np.testing.assert_allclose(kept.to_numpy(), want, rtol=1e-6, atol=1e-6)
        del kept
        assert handles[1]() is None
    finally:
        gc.enable()


def test_a_dropped_handle_frees_its_buffer() -> None:
    x = Tensor.from_data(np.arange(4096, dtype=np.float32), backend=F)
    y = (x * 2.0).exp()
    y.to_numpy()
    buffer = weakref.ref(y.primitive.value)
    del y
    gc.collect()
    assert buffer() is None


class StrictSqrt(CpuBackend):
    """A backend without a fuser whose sqrt refuses negative values."""

    @classmethod
    def fuser(cls) -> Any:
        return None

    @staticmethod
    def float_sqrt(tensor: Any) -> Any:
        if (tensor < 0).any():
            raise bp.InvalidArgumentError("float_sqrt: negative values")
        return np.sqrt(tensor)


def test_a_backend_without_a_fuser_runs_every_op_eagerly() -> None:
    g = Fusion(StrictSqrt)
    x = Tensor.from_data(np.arange(8, dtype=np.float32), backend=g)
    np.testing.assert_allclose(chain(x).to_numpy(), chain(Tensor.from_data(
        np.arange(8, dtype=np.float32))).to_numpy())
    assert g.stats.kernels == 0 and g.stats.eager_ops >= 10


def test_an_error_at_flush_names_the_users_op() -> None:
    x = Tensor.from_data(np.array([4.0, -1.0], dtype=np.float32), backend=F)
    y = (x * 2.0).sqrt()  # fused: NaN, as CpuBackend gives
    assert np.isnan(y.to_numpy()[1])
    # a kernel that raises: the group reruns op by op, and B's error carries the op's name
    g = Fusion(StrictSqrt)
    g._fuser[:] = [FUSER]
    g._accepted.clear()
    z = (Tensor.from_data(np.array([4.0, -1.0], dtype=np.float32), backend=g) * 2.0).sqrt()
    with pytest.raises(bp.InvalidArgumentError) as info:
        original = FUSER.compile

        def failing(group: Any) -> Any:
            kernel = original(group)
            assert kernel is not None

            def broken(inputs: Any, scalars: Any) -> Any:
                raise RuntimeError("kernel failed")

            return broken

        FUSER.compile = failing  # type: ignore[method-assign]
        try:
            z.to_numpy()
        finally:
            del FUSER.compile
    assert any("float_sqrt" in note for note in info.value.__notes__)


def test_shape_errors_are_raised_where_the_op_is_called() -> None:
    a = Tensor.from_data(np.zeros((2, 3), np.float32), backend=F)
    b = Tensor.from_data(np.zeros((4,), np.float32), backend=F)
    with pytest.raises(bp.ShapeError):
        a + b


def test_decorators_stack_over_fusion() -> None:
    data = np.linspace(-1, 1, 6).reshape(2, 3)
    for stacked in (Autodiff(Autodiff(F)), ForwardAD(F)):
        x = Tensor.from_data(data, backend=stacked)
        assert np.allclose((x.sin() * x).to_numpy(), np.sin(data) * data)
    x = Tensor.from_data(data, backend=Autodiff(Autodiff(F))).require_grad()
    (g,) = bp.func.grad(lambda t: (t.sin() * t).sum())(Tensor.from_data(data, backend=F)),
    assert np.allclose(g.to_numpy(), np.cos(data) * data + np.sin(data))


UNARY = ["neg", "abs", "exp", "log", "log1p", "sqrt", "sin", "cos", "tan", "sinh", "cosh",
         "tanh", "asin", "acos", "atan", "asinh", "acosh", "atanh", "erf", "round", "floor",
         "ceil", "trunc", "sign", "sigmoid", "relu", "gelu", "silu"]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_every_unary_op_in_a_kernel_matches_cpu(dtype: type) -> None:
    data = np.linspace(-3, 3, 257).astype(dtype)
    fused = Tensor.from_data(data, backend=F)
    eager = Tensor.from_data(data)
    for op in UNARY:
        got = getattr(fused * 0.5, op)() + 1.0
        want = getattr(eager * 0.5, op)() + 1.0
        np.testing.assert_allclose(got.to_numpy(), want.to_numpy(), rtol=1e-5, atol=1e-6,
                                   err_msg=op)
    assert F.stats.fallback_ops == 0


def test_ops_numpy_computes_faster_run_eagerly_and_cut_the_group() -> None:
    FUSER.declined = NUMPY_FASTER
    F._accepted.clear()
    data = np.linspace(-2, 2, 64)  # float64: float32 groups fuse tanh (vector_math)
    x = Tensor.from_data(data, backend=F)
    got = ((x * 2.0 + 1.0).tanh() * 3.0 - 1.0).to_numpy()
    np.testing.assert_allclose(got, np.tanh(data * 2 + 1) * 3 - 1, rtol=1e-12)
    # mul+add in a kernel | tanh on NumPy (with from_data and into_data: 3 eager ops) | mul+sub
    assert (F.stats.kernels, F.stats.fallback_ops, F.stats.eager_ops) == (2, 0, 3)


def test_composites_the_fuser_owns_run_as_the_inner_backends_op() -> None:
    data = np.linspace(-3, 3, 64, dtype=np.float32)
    want = Tensor.from_data(data).gelu().to_numpy()
    FUSER.own_ops = frozenset({"gelu"})  # the fixture restores it
    got = Tensor.from_data(data, backend=F).gelu().to_numpy()
    np.testing.assert_array_equal(got, want)
    assert F.stats.kernels == 0 and F.stats.eager_ops == 3  # from_data, gelu, into_data
    FUSER.own_ops = frozenset()
    Tensor.from_data(data, backend=F).gelu().to_numpy()
    assert F.stats.kernels == 1


def test_composites_calling_declined_ops_are_the_cpu_fusers_own() -> None:
    """A composite whose composition needs an op the fuser leaves to NumPy (sigmoid's exp and
    log1p) runs as CpuBackend's one pass, bit for bit; one of fusable ops alone stays composed
    (it fuses with its neighbours); nothing is the fuser's own when it declines nothing."""
    derived = composites_calling(CpuBackend, NUMPY_FASTER)
    assert {"sigmoid", "silu", "softplus", "log_sigmoid", "log_sigmoid_backward"} <= derived
    assert not derived & {"relu", "relu_backward", "sigmoid_backward", "leaky_relu",
                          "hard_sigmoid", "float_square", "float_recip"}
    assert composites_calling(CpuBackend, frozenset()) == frozenset()
    FUSER.min_elements, FUSER.declined = 0, NUMPY_FASTER  # the fixture restores them
    FUSER.own_ops = CpuFuser().own_ops
    data = np.linspace(-30, 30, 4096, dtype=np.float32)
    for name in ("sigmoid", "silu"):
        want = getattr(Tensor.from_data(data), name)().to_numpy()
        F.stats.reset()
        got = getattr(Tensor.from_data(data, backend=F), name)().to_numpy()
        np.testing.assert_array_equal(got, want)
        assert F.stats.kernels == 0 and F.stats.eager_ops == 3  # from_data, the op, into_data


def test_binary_comparison_where_cast_and_reductions_in_kernels() -> None:
    rng = np.random.default_rng(1)
    a_np = rng.normal(size=(5, 7)).astype(np.float32)
    b_np = rng.normal(size=(1, 7)).astype(np.float32)
    for backend in (F, CpuBackend):
        a = Tensor.from_data(a_np, backend=backend)
        b = Tensor.from_data(b_np, backend=backend)
        results = [
            (a - b) / (b.abs() + 1.0) % 0.7,
            ((a > b) & (a < 1.0)).float() * a,
            (a * 2.0).sum(1), (a + b).mean(0), (a - b).amax(1), (a * b).amin(0),
            (a * 3.0).sum(), (a.exp() * 0.1).prod(1), (a + 1.0).int().float() * 2,
            a.mask_fill(a > 0, 0.5) * 2.0, a.pow(2.0) + b.atan2(a),
        ]
        if backend is F:
            fused = [r.to_numpy() for r in results]
        else:
            for got, want in zip(fused, results, strict=True):
                np.testing.assert_allclose(got, want.to_numpy(), rtol=1e-5, atol=1e-6)
    assert F.stats.kernels >= 8
