"""The stream under ``Fusion(WgpuBackend)``: views and matmuls recorded lazily (right values and
gradients, no early flush), ops joining open groups across a matmul, independent groups
batched into one dispatch, oversize groups split, errors naming the user's op, and the
dispatch count of a GELU MLP training step against ``Autodiff(WgpuBackend)``."""

from __future__ import annotations

import numpy as np
import pytest

from burnpy import Tensor, nn, optim
from burnpy.autodiff import Autodiff
from burnpy.backend.base import Backend
from burnpy.backend.dtype import DType
from burnpy.fusion import Fusion
from burnpy.nn import functional as fn
from burnpy.testing import backends_available
from burnpy_wgpu import WgpuBackend
from burnpy_wgpu.runtime import runtime_for

if WgpuBackend not in backends_available():
    pytest.skip("no WebGPU adapter here", allow_module_level=True)

W = WgpuBackend
F = Fusion(WgpuBackend)
DEV = W.default_device()
RT = runtime_for(DEV)


def _data(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _dispatches(run: object) -> int:
    F.sync(DEV)
    before = RT.stats["dispatches"]
    run()  # type: ignore[operator]
    return RT.stats["dispatches"] - before


def test_views_of_pending_values_stay_pending_and_fuse() -> None:
    x = _data(4, 6, 8)
    xt = Tensor.from_data(x, backend=F)
    F.sync(DEV)
    before = RT.stats["dispatches"]
    a = xt * 2.0
    flat = a.reshape(24, 8)  # recorded: ``a`` is not computed alone
    b = (a + 1.0).exp()  # joins ``a``'s group after the reshape
    c = (flat.permute(1, 0).reshape(8, 4, 6).swap_dims(0, 2) - 1.0) * 0.5
    assert flat.primitive.node is not None and c.primitive.node is not None  # nothing ran
    np.testing.assert_allclose(b.to_numpy(), np.exp(x * 2 + 1), rtol=1e-5)
    want = ((x * 2).reshape(24, 8).T.reshape(8, 4, 6).swapaxes(0, 2) - 1) * 0.5
    np.testing.assert_allclose(c.to_numpy(), want, rtol=1e-5, atol=1e-6)
    # a's group with b, then c's group reading the views of a strided (no copy, no flush)
    assert RT.stats["dispatches"] - before == 2


def test_a_reshape_to_the_same_shape_is_the_handle_itself() -> None:
    xt = Tensor.from_data(_data(3, 5), backend=F) * 3.0
    assert F.float_reshape(xt.primitive, (3, 5)) is xt.primitive


def test_invalid_views_and_matmuls_raise_at_the_call() -> None:
    xt = Tensor.from_data(_data(3, 5), backend=F) * 3.0
    with pytest.raises(ValueError):
        xt.reshape(4, 4)
    with pytest.raises(ValueError):
        xt @ xt


def _model_loss(backend: type[Backend], x: np.ndarray, w: np.ndarray,
                b: np.ndarray) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    xt = Tensor.from_data(x, backend=backend).require_grad()
    wt = Tensor.from_data(w, backend=backend).require_grad()
    bt = Tensor.from_data(b, backend=backend).require_grad()
    h = fn.gelu((xt.reshape(6, 8) @ wt + bt).reshape(2, 3, 5))
    loss = (h.permute(2, 0, 1).swap_dims(1, 2) * h.permute(2, 1, 0)).sum()
    return loss, xt, wt, bt


def test_lazy_views_and_matmul_give_the_unfused_gradients() -> None:
    x, w, b = _data(2, 3, 8, seed=1), _data(8, 5, seed=2), _data(5, seed=3)
    results = []
    for backend in (Autodiff(W), Autodiff(F)):
        loss, *leaves = _model_loss(backend, x, w, b)
        grads = loss.backward()
        results.append([loss.to_numpy(), *[t.grad(grads).to_numpy() for t in leaves]])
    for got, want in zip(results[1], results[0], strict=True):
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)


def test_a_sum_after_a_matmul_joins_the_group_the_matmul_reads() -> None:
    g = Tensor.from_data(_data(64, 32), backend=F)
    w = Tensor.from_data(_data(32, 16), backend=F)
    h = Tensor.from_data(_data(64, 32, seed=4), backend=F)
    F.sync(DEV)

    def run() -> None:
        grad = (g * h).tanh()  # pending
        back = grad @ w  # recorded: does not compute grad alone
        bias = grad.sum(dim=0)  # joins grad's group as its closing reduction
        np.testing.assert_allclose(bias.to_numpy(), np.tanh(g.to_numpy() * h.to_numpy()).sum(
            0), rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(back.to_numpy(), np.tanh(g.to_numpy() * h.to_numpy())
                                   @ w.to_numpy(), rtol=1e-4, atol=1e-4)

    assert _dispatches(run) == 2  # the group (with the sum) and the matmul


def test_independent_groups_share_one_dispatch() -> None:
    xs = [Tensor.from_data(_data(*s, seed=i), backend=F)
          for i, s in enumerate([(7, 9), (33,), (4, 5, 6)])]
    F.sync(DEV)
    F.stats.reset()

    def run() -> None:
        outs = [(x * 1.5).exp() - x for x in xs] + [(xs[0] + 2.0).sum(dim=1)]
        F.sync(DEV)
        for out, x in zip(outs, xs, strict=False):
            v = x.to_numpy()
            np.testing.assert_allclose(out.to_numpy(), np.exp(v * 1.5) - v, rtol=1e-5,
                                       atol=1e-6)
        np.testing.assert_allclose(outs[3].to_numpy(), (xs[0].to_numpy() + 2).sum(1),
                                   rtol=1e-5)

    assert _dispatches(run) == 1
    assert F.stats.kernels == 1 and F.stats.fallback_ops == 0


def test_a_group_binding_more_buffers_than_the_adapter_allows_is_split() -> None:
    limit = F.fuser().max_buffers  # type: ignore[union-attr]
    xs = [Tensor.from_data(_data(16, seed=i), backend=F) for i in range(limit + 4)]
    F.sync(DEV)
    F.stats.reset()  # count this test's ops alone, whatever ran before it in this worker
    total = xs[0] * 1.0
    for x in xs[1:]:
        total = total + x
    got = total.to_numpy()
    np.testing.assert_allclose(got, np.sum([x.to_numpy() for x in xs], axis=0), rtol=1e-5)
    assert F.stats.fallback_ops == 0


class _Failing(WgpuBackend):
    """WgpuBackend whose matmul fails when it runs (at the stream's flush, under Fusion)."""

    @staticmethod
    def float_matmul(lhs: object, rhs: object) -> object:
        raise RuntimeError("matmul kernel failed")


def test_an_error_in_a_recorded_op_names_the_users_op() -> None:
    backend = Fusion(_Failing)
    a = Tensor.from_data(_data(4, 3), backend=backend) * 2.0
    b = Tensor.from_data(_data(3, 5), backend=backend)
    out = a @ b  # recorded: nothing fails yet
    with pytest.raises(RuntimeError, match="matmul kernel failed") as info:
        out.to_numpy()
    assert any("float_matmul" in note and "[4, 3], [3, 5]" in note
               for note in getattr(info.value, "__notes__", []))


class _MLP(nn.Module):
    def __init__(self, backend: type[Backend]) -> None:
        super().__init__()
        self.l1 = nn.Linear(16, 64, backend=backend)
        self.l2 = nn.Linear(64, 64, backend=backend)
        self.l3 = nn.Linear(64, 10, backend=backend)

    def forward(self, x: Tensor) -> Tensor:
        return self.l3(fn.gelu(self.l2(fn.gelu(self.l1(x)))))


def _mlp_step(backend: type[Backend]) -> tuple[object, nn.Module]:
    rng = np.random.default_rng(0)
    backend.seed(DEV, 0)
    model = _MLP(backend)
    opt = optim.Adam(lr=1e-3)
    x = Tensor.from_data(rng.standard_normal((32, 16)).astype(np.float32), backend=backend)
    y = Tensor.from_data(rng.integers(0, 10, 32).astype(np.int32), backend=backend)

    def step() -> float:
        loss = fn.cross_entropy(model(x), y)
        opt.step(model, loss.backward(), 1e-3)
        return loss.item()
    return step, model


def test_a_gelu_mlp_step_takes_a_third_of_the_dispatches_and_gives_the_same_losses() -> None:
    plain, _ = _mlp_step(Autodiff(W))
    fused, _ = _mlp_step(Autodiff(F))
    losses = [(plain(), fused()) for _ in range(3)]  # warm-up steps, then counted ones
    for want, got in losses:
        assert got == pytest.approx(want, rel=1e-4, abs=1e-5)
    n_plain, n_fused = _dispatches(plain), _dispatches(fused)
    assert 3 * n_fused <= n_plain, (n_plain, n_fused)
    F.stats.reset()
    fused()
    assert F.stats.compiles == 0


def test_a_repeated_fused_step_binds_the_same_buffers_each_time() -> None:
    """The pool hands out its oldest free buffer, so a step that repeats gets the same buffers
    at each step and creates no bind group once warm (the most recently freed one first, the
    optimizer's outputs wandered over their size class: a few new bind groups every step)."""
    fused, _ = _mlp_step(Autodiff(F))
    F.sync(DEV)
    # free slabs other tests left in the pool would be handed out first (oldest first) and
    # delay the steady state by as many steps as they take to cycle through: start from none
    cap, RT.pool.cap_bytes = RT.pool.cap_bytes, 0
    RT.pool.batch_submitted()  # trims every free slab
    RT.pool.cap_bytes = cap
    RT._bind_groups.clear()  # room for the steps' groups: a full cache is cleared (a miss)
    misses = []
    for _ in range(10):
        before = RT.stats["bind_group_misses"]
        fused()
        misses.append(RT.stats["bind_group_misses"] - before)
    assert misses[-4:] == [0, 0, 0, 0], misses


@pytest.mark.parametrize("dtype", ["float32", pytest.param("float16", marks=pytest.mark.skipif(
    not W.supports_dtype(DEV, DType.float16), reason="this WebGPU adapter lacks shader-f16"))])
@pytest.mark.parametrize(("lhs_shape", "rhs_shape", "bias_shape"), [
    ((37, 19), (19, 45), (45,)), ((3, 20, 9), (1, 9, 70), (20, 1)), ((2, 1), (1, 3), ())])
def test_an_epilogue_fused_matmul_matches_the_unfused_one(
        dtype: str, lhs_shape: tuple[int, ...], rhs_shape: tuple[int, ...],
        bias_shape: tuple[int, ...]) -> None:
    a, b = _data(*lhs_shape, seed=5).astype(dtype), _data(*rhs_shape, seed=6).astype(dtype)
    c = _data(*bias_shape, seed=7).astype(dtype) if bias_shape else np.float32(0.5)

    def chain(backend: type[Backend]) -> tuple[Tensor, Tensor]:
        at, bt = Tensor.from_data(a, backend=backend), Tensor.from_data(b, backend=backend)
        ct = Tensor.from_data(np.asarray(c), backend=backend)
        y = fn.gelu(at @ bt + ct)
        return y, (y * 2.0).tanh()

    F.sync(DEV)
    F.stats.reset()
    before = RT.stats["dispatches"]
    fused = chain(F)
    F.sync(DEV)
    assert RT.stats["dispatches"] - before == 1 and F.stats.kernels == 1  # one kernel in all
    plain = chain(W)
    tol = 1e-5 if dtype == "float32" else 2e-3
    for got, want in zip(fused, plain, strict=True):
        np.testing.assert_allclose(got.to_numpy().astype(np.float64),
                                   want.to_numpy().astype(np.float64), rtol=tol, atol=tol)


def test_a_matmul_whose_result_is_kept_is_not_fused() -> None:
    a, b = _data(8, 5), _data(5, 6)
    at, bt = Tensor.from_data(a, backend=F), Tensor.from_data(b, backend=F)
    F.sync(DEV)
    before = RT.stats["dispatches"]
    product = at @ bt
    out = (product + 1.0).exp()
    np.testing.assert_allclose(out.to_numpy(), np.exp(a @ b + 1), rtol=1e-5)
    np.testing.assert_allclose(product.to_numpy(), a @ b, rtol=1e-5, atol=1e-6)
    assert RT.stats["dispatches"] - before == 2


def test_an_adam_update_runs_in_its_weight_gradients_matmul_kernel() -> None:
    """A lone parameter's Adam update keeps the parameter's shape (no flat view in between), so
    the weight gradient's product runs the update as its epilogue: one dispatch, and the same
    weights as without Fusion."""
    x = _data(32, 16, seed=3)

    def train(backend: type[Backend]) -> list[np.ndarray]:
        backend.seed(DEV, 0)
        model = nn.Linear(16, 8, backend=backend)
        opt = optim.Adam(lr=1e-2)
        xt = Tensor.from_data(x, backend=backend)
        for _ in range(3):
            opt.step(model, ((model(xt) - 0.5) ** 2).mean().backward())
        return [model.weight.to_numpy(), model.bias.to_numpy()]

    keys: list[str] = []
    original = RT.dispatch

    def record(kernel: object, *args: object) -> None:
        keys.append(str(kernel.key[0]))  # type: ignore[attr-defined]
        original(kernel, *args)  # type: ignore[arg-type]

    RT.dispatch = record  # type: ignore[method-assign]
    try:
        fused = train(Autodiff(F))
        F.sync(DEV)
    finally:
        RT.dispatch = original  # type: ignore[method-assign]
    assert sum(k.startswith("matmul") and k.endswith("_epilogue") for k in keys) >= 3, keys
    for got, want in zip(fused, train(Autodiff(W)), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
