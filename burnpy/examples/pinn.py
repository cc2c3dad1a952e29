"""A physics-informed network for the viscous Burgers' equation.

``python -m burnpy.examples.pinn`` fits an MLP ``u(x, t)`` to

    u_t + u u_x - (0.01 / pi) u_xx = 0,   x in [-1, 1], t in [0, 1],
    u(x, 0) = -sin(pi x),   u(-1, t) = u(1, t) = 0,

with no solution data: the loss is the equation's residual at random collocation points plus
the initial and boundary conditions. The input derivatives ``u_x``, ``u_t`` and ``u_xx`` come
from ``burnpy.func.jvp`` (nested for ``u_xx``) on ``ForwardAD(ForwardAD(Autodiff(X)))``, so the
residual stays differentiable with respect to the parameters, which train on ``Autodiff(X)``
with Adam. The result is compared with the exact Cole-Hopf solution (Gauss-Hermite
quadrature) and plotted. ``--help`` lists the options.
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

import burnpy.nn as nn
import burnpy.nn.functional as F
from burnpy.autodiff import Autodiff
from burnpy.backend.dtype import DType
from burnpy.examples.digits import BACKENDS, load_backend
from burnpy.func import jvp
from burnpy.fusion import Fusion
from burnpy.optim import Adam, CosineAnnealingLR
from burnpy.tensor import Tensor, cat

if TYPE_CHECKING:
    from burnpy.backend.base import Backend

NU = 0.01 / math.pi
DTYPES = {"float32": DType.float32, "float64": DType.float64}


class BurgersMLP(nn.Module):
    """``(x, t) -> u``: tanh hidden layers of ``width``, Xavier-normal weights, zero biases."""

    def __init__(self, width: int = 20, depth: int = 4, *, backend: type[Backend] | None = None,
                 dtype: DType = DType.float32) -> None:
        sizes = [2] + [width] * depth + [1]
        self.layers = [nn.Linear(a, b, backend=backend, dtype=dtype)
                       for a, b in itertools.pairwise(sizes)]
        for layer in self.layers:
            nn.init.xavier_normal_(layer.weight)
            assert layer.bias is not None, "Linear is built with a bias"
            nn.init.zeros_(layer.bias)

    def params(self) -> list[Tensor]:
        """``[weight0, bias0, weight1, bias1, ...]``, the arguments ``mlp`` takes."""
        out = []
        for layer in self.layers:
            assert layer.bias is not None, "Linear is built with a bias"
            out += [layer.weight, layer.bias]
        return out

    def forward(self, x: Tensor, t: Tensor) -> Tensor:
        """``x [n, 1]``, ``t [n, 1]`` -> ``u [n, 1]``."""
        return mlp(x, t, *self.params())


def mlp(x: Tensor, t: Tensor, *params: Tensor) -> Tensor:
    """The network as a function of its inputs and parameters (``[W0, b0, W1, b1, ...]``), so
    ``burnpy.func`` can lift them all onto its decorated backends. ``t`` is mapped to [-1, 1]
    like ``x``."""
    h = cat([x, t * 2.0 - 1.0], 1)
    for i in range(0, len(params), 2):
        h = F.linear(h, params[i], params[i + 1])
        if i + 2 < len(params):
            h = h.tanh()
    return h


def derivatives(x: Tensor, t: Tensor, params: Sequence[Tensor]
                ) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """``(u, u_x, u_t, u_xx)`` at each point, differentiable with respect to ``params``.

    Each output depends only on its own point, so a forward-mode pass with a ones tangent on
    ``x`` (or ``t``) gives every point's derivative at once: ``jvp`` for ``u_x`` and ``u_t``,
    and ``jvp`` of that ``jvp`` for ``u_xx``. The parameters ride along without tangents, so
    their tracking on an ``Autodiff`` backend survives for the training backward pass.
    """
    ones = x.ones_like()
    fixed = (None,) * len(params)

    def u_and_ux(x: Tensor, t: Tensor, ones: Tensor, *params: Tensor) -> tuple[Tensor, Tensor]:
        u, u_x = jvp(mlp, (x, t, *params), (ones, None, *fixed))
        return u, u_x

    (u, u_x), (_, u_xx) = jvp(u_and_ux, (x, t, ones, *params), (ones, None, None, *fixed))
    _, u_t = jvp(mlp, (x, t, *params), (None, ones, *fixed))
    return u, u_x, u_t, u_xx


def residual(x: Tensor, t: Tensor, params: Sequence[Tensor]) -> Tensor:
    """Burgers' residual ``u_t + u u_x - nu u_xx`` at each point."""
    u, u_x, u_t, u_xx = derivatives(x, t, params)
    return u_t + u * u_x - u_xx * NU


def residual_loss(x: Tensor, t: Tensor, params: Sequence[Tensor]) -> Tensor:
    """The mean squared residual: the physics part of the loss."""
    return residual(x, t, params).square().mean()


def pinn_loss(model: BurgersMLP, points: CollocationPoints) -> tuple[Tensor, Tensor, Tensor]:
    """``(residual, initial, boundary)`` mean squared losses of ``model`` at ``points``."""
    params = model.params()
    physics = residual_loss(points.x, points.t, params)
    initial = (mlp(points.x0, points.t0, *params) - points.u0).square().mean()
    boundary = mlp(points.xb, points.tb, *params).square().mean()
    return physics, initial, boundary


class CollocationPoints:
    """Interior points ``(x, t)``, initial points ``(x0, t0=0)`` with values ``u0`` and
    boundary points ``(xb=+-1, tb)``, each as ``[n, 1]`` tensors."""

    __slots__ = ("t", "t0", "tb", "u0", "x", "x0", "xb")

    def __init__(self, rng: np.random.Generator, interior: int, edge: int,
                 backend: type[Backend], dtype: DType) -> None:
        def tensor(values: np.ndarray) -> Tensor:
            return Tensor.from_data(values.reshape(-1, 1).astype(dtype.numpy), backend=backend)

        x0 = rng.uniform(-1.0, 1.0, edge)
        self.x = tensor(rng.uniform(-1.0, 1.0, interior))
        self.t = tensor(rng.uniform(0.0, 1.0, interior))
        self.x0, self.t0, self.u0 = tensor(x0), tensor(np.zeros(edge)), tensor(-np.sin(np.pi * x0))
        self.xb = tensor(np.where(np.arange(edge) % 2 == 0, -1.0, 1.0))
        self.tb = tensor(rng.uniform(0.0, 1.0, edge))


def cole_hopf(x: np.ndarray, t: np.ndarray, nodes: int = 200) -> np.ndarray:
    """The exact solution at points ``(x, t)`` (broadcast together), in float64.

    Cole-Hopf turns Burgers' equation into the heat equation, giving
    ``u = -E[sin(pi (x - s)) f(x - s)] / E[f(x - s)]`` with ``f(y) = exp(-cos(pi y) / (2 pi nu))``
    and ``s ~ N(0, 2 nu t)``: Gauss-Hermite quadrature with ``s = sqrt(4 nu t) z``. The exponents
    are shifted by their maximum before ``exp``, which cancels in the ratio.
    """
    z, w = np.polynomial.hermite.hermgauss(nodes)
    x, t = np.broadcast_arrays(np.asarray(x, np.float64), np.asarray(t, np.float64))
    y = x[..., None] - np.sqrt(4.0 * NU * t)[..., None] * z
    exponent = -np.cos(np.pi * y) / (2.0 * np.pi * NU)
    weights = w * np.exp(exponent - exponent.max(axis=-1, keepdims=True))
    return np.asarray(-(weights * np.sin(np.pi * y)).sum(-1) / weights.sum(-1))


def evaluate(model: BurgersMLP, x: np.ndarray, t: np.ndarray, backend: type[Backend],
             dtype: DType) -> np.ndarray:
    """The network's ``u`` on the grid ``x [nx] x t [nt]`` as ``[nt, nx]`` float64, computed on
    ``backend`` (a plain one: no tracking)."""
    xx, tt = np.meshgrid(x, t)
    params = [p.inner() if p.backend is not backend else p for p in model.params()]
    u = mlp(Tensor.from_data(xx.reshape(-1, 1).astype(dtype.numpy), backend=backend),
            Tensor.from_data(tt.reshape(-1, 1).astype(dtype.numpy), backend=backend), *params)
    return u.to_numpy().astype(np.float64).reshape(xx.shape)


def relative_l2(u: np.ndarray, reference: np.ndarray) -> float:
    """``||u - reference|| / ||reference||``."""
    return float(np.linalg.norm(u - reference) / np.linalg.norm(reference))


def save_plot(x: np.ndarray, t: np.ndarray, learned: np.ndarray, reference: np.ndarray,
              path: Path) -> Path | None:
    """The learned ``u(x, t)``, the Cole-Hopf reference and their absolute difference as three
    heat maps; None (and a note) when matplotlib (the ``plot`` extra) is missing."""
    try:
        import matplotlib
    except ImportError:
        print("no plot: matplotlib is missing (pip install 'burnpy[plot]')")
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4), constrained_layout=True)
    panels = [("PINN u(x, t)", learned, "RdBu_r"), ("Cole-Hopf reference", reference, "RdBu_r"),
              ("|PINN - reference|", np.abs(learned - reference), "viridis")]
    for ax, (title, values, cmap) in zip(axes, panels, strict=True):
        image = ax.pcolormesh(t, x, values.T, cmap=cmap, shading="auto")
        ax.set(title=title, xlabel="t", ylabel="x")
        fig.colorbar(image, ax=ax)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m burnpy.examples.pinn", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", choices=sorted(BACKENDS), default="cpu")
    p.add_argument("--dtype", choices=sorted(DTYPES), default="float32")
    p.add_argument("--steps", type=int, default=6000, help="Adam steps")
    p.add_argument("--points", type=int, default=2000,
                   help="interior collocation points (redrawn every step)")
    p.add_argument("--edge-points", type=int, default=200,
                   help="initial-condition points and boundary points (each)")
    p.add_argument("--width", type=int, default=20)
    p.add_argument("--depth", type=int, default=4, help="hidden layers")
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=Path("runs/pinn"), help="folder for the plot")
    p.add_argument("--short", action="store_true", help="a few steps on few points (for tests)")
    p.add_argument("--fusion", action="store_true",
                   help="run on Fusion(backend): elementwise chains fused into compiled kernels")
    args = p.parse_args(argv)
    if args.short:
        args.steps, args.points, args.edge_points = 5, 64, 16
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    began = time.perf_counter()
    inner = load_backend(args.backend)
    if args.fusion:
        inner = Fusion(inner)
    backend = Autodiff(inner)
    dtype = DTYPES[args.dtype]
    inner.seed(inner.default_device(), args.seed)
    rng = np.random.default_rng(args.seed)
    model = BurgersMLP(args.width, args.depth, backend=backend, dtype=dtype)
    print(f"pinn: Burgers' equation, nu = 0.01/pi; {args.depth}x{args.width} tanh MLP "
          f"({model.num_params()} parameters), {args.points} collocation points, backend "
          f"{backend.name()}, {args.dtype}")

    x = np.linspace(-1.0, 1.0, 201)
    t = np.linspace(0.0, 1.0, 101)
    reference = cole_hopf(x[None, :], t[:, None])
    untrained = relative_l2(evaluate(model, x, t, inner, dtype), reference)
    print(f"untrained relative L2 error: {untrained:.4f}")

    optimizer = Adam(lr=args.lr)
    schedule = CosineAnnealingLR(args.lr, args.steps, eta_min=args.lr / 30)
    every = max(1, args.steps // 10)
    for step in range(1, args.steps + 1):
        points = CollocationPoints(rng, args.points, args.edge_points, backend, dtype)
        physics, initial, boundary = pinn_loss(model, points)
        loss = physics + initial + boundary
        optimizer.step(model, loss.backward(), lr=schedule.step())
        if step % every == 0 or step == args.steps:
            print(f"step {step:5d}  loss {loss.item():.3e}  (residual {physics.item():.3e}, "
                  f"initial {initial.item():.3e}, boundary {boundary.item():.3e})")

    learned = evaluate(model, x, t, inner, dtype)
    error = relative_l2(learned, reference)
    print(f"relative L2 error vs the Cole-Hopf solution: {error:.4f} (untrained {untrained:.4f})")
    plot = save_plot(x, t, learned, reference, args.out / "burgers.png")
    if plot is not None:
        print(f"plot: {plot}")
    print(f"done in {time.perf_counter() - began:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
