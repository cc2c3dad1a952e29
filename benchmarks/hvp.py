"""Hessian-vector products in burnpy against torch.func, single-threaded, on one CPU core.

A 2-layer tanh MLP (784 -> 128 -> 10, the classic MNIST classifier: 101,770 parameters) with a
softmax cross-entropy loss, in float64, over a batch of 256 (where the large matrix products
dominate) and of 64 (where per-op overhead shows). Timed in alternating
rounds (each round runs every variant once, in a rotating order) and reported as medians:

- burnpy: one gradient (``func.grad``), one HVP forward-over-reverse (``func.hvp`` on
  ``Autodiff(ForwardAD(CpuBackend))``) and one HVP reverse-over-reverse (``mode="rev_over_rev"``
  on ``Autodiff(Autodiff(CpuBackend))``);
- torch.func: ``grad``, HVP as ``jvp(grad(f))`` and as ``vjp(grad(f))``.

The forward-over-reverse HVP never computes the weight gradients themselves (only their
tangents are read; ``ForwardAD`` defers a matmul's primal until something reads it).

Run: ``python benchmarks/hvp.py [--rounds N] [--batch N ...]``.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402 - the thread caps must be set before NumPy and torch load
import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.func as tf  # noqa: E402
import torch.nn.functional as TF  # noqa: E402

import burnpy.nn.functional as F  # noqa: E402
from burnpy import Tensor, func  # noqa: E402
from burnpy.nn.functional import cross_entropy  # noqa: E402

torch.set_num_threads(1)

SIZES = (784, 128, 10)
PARAMS = (0, 1, 2, 3)
WARMUP_ROUNDS = 3


def burnpy_loss(w1: Tensor, b1: Tensor, w2: Tensor, b2: Tensor, x: Tensor,
                target: Tensor) -> Tensor:
    """Mean softmax cross-entropy of the MLP's logits against one-hot targets."""
    return cross_entropy(F.linear(F.linear(x, w1, b1).tanh(), w2, b2), target)


def torch_loss(w1: torch.Tensor, b1: torch.Tensor, w2: torch.Tensor, b2: torch.Tensor,
               x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """The same loss in torch."""
    return TF.cross_entropy(TF.linear(TF.linear(x, w1, b1).tanh(), w2, b2), target)


def run(batch: int, rounds: int) -> None:
    """Check that the four HVPs agree, time every variant and print medians and ratios."""
    rng = np.random.default_rng(0)
    d_in, d_hidden, d_out = SIZES
    shapes = [(d_hidden, d_in), (d_hidden,), (d_out, d_hidden), (d_out,)]
    params = [rng.standard_normal(s) / np.sqrt(s[-1]) for s in shapes]
    directions = [rng.standard_normal(s) for s in shapes]
    x = rng.standard_normal((batch, d_in))
    target = np.eye(d_out)[rng.integers(0, d_out, batch)]
    count = sum(p.size for p in params)

    ours = [Tensor.from_data(a) for a in (*params, x, target)]
    ours_tangents = (*(Tensor.from_data(v) for v in directions), None, None)
    theirs = [torch.from_numpy(a) for a in (*params, x, target)]
    theirs_v = tuple(torch.from_numpy(v) for v in directions)

    def torch_grad_of_params(*p: torch.Tensor) -> Any:
        return tf.grad(torch_loss, argnums=PARAMS)(*p, *theirs[4:])

    variants: dict[str, Callable[[], Any]] = {
        "burnpy grad": lambda: func.grad(burnpy_loss, argnums=PARAMS)(*ours),
        "burnpy hvp fwd-over-rev": lambda: func.hvp(burnpy_loss, ours, ours_tangents,
                                                    argnums=PARAMS, mode="fwd_over_rev"),
        "burnpy hvp rev-over-rev": lambda: func.hvp(burnpy_loss, ours, ours_tangents,
                                                    argnums=PARAMS, mode="rev_over_rev"),
        "torch grad": lambda: tf.grad(torch_loss, argnums=PARAMS)(*theirs),
        "torch hvp jvp(grad)": lambda: tf.jvp(torch_grad_of_params, tuple(theirs[:4]),
                                              theirs_v)[1],
        "torch hvp vjp(grad)": lambda: tf.vjp(torch_grad_of_params, *theirs[:4])[1](theirs_v),
    }

    # The four HVPs must agree before any of them is timed.
    reference = [t.numpy() for t in variants["torch hvp jvp(grad)"]()]
    for name in ("burnpy hvp fwd-over-rev", "burnpy hvp rev-over-rev", "torch hvp vjp(grad)"):
        got = [np.asarray(t) for t in variants[name]()]
        err = max(float(np.abs(g - r).max() / np.abs(r).max()) for g, r in zip(
            got, reference, strict=True))
        if err > 1e-10:
            raise SystemExit(f"{name} disagrees with torch's jvp(grad(f)): relative error {err}")

    names = list(variants)
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds + WARMUP_ROUNDS):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            start = time.perf_counter()
            variants[name]()
            elapsed = time.perf_counter() - start
            if r >= WARMUP_ROUNDS:
                times[name].append(elapsed)
    median = {name: statistics.median(ts) for name, ts in times.items()}

    print(f"MLP {' -> '.join(map(str, SIZES))} (tanh), softmax cross-entropy, batch {batch}: "
          f"{count:,} parameters, float64, 1 thread, {rounds} rounds")
    for name in names:
        print(f"  {name:<26} {median[name] * 1e3:8.2f} ms (median)")
    best_ours = min(median["burnpy hvp fwd-over-rev"], median["burnpy hvp rev-over-rev"])
    best_theirs = min(median["torch hvp jvp(grad)"], median["torch hvp vjp(grad)"])
    print(f"  burnpy best HVP / burnpy gradient: {best_ours / median['burnpy grad']:.2f} "
          "(target <= 2.5)")
    print(f"  burnpy best HVP / torch best HVP:  {best_ours / best_theirs:.2f} (target <= 1.0)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--batch", type=int, nargs="+", default=[256, 64],
                        help="batch sizes: 256 is bound by matrix products, 64 more by "
                             "per-op overhead")
    opts = parser.parse_args()
    print(f"numpy {np.__version__}, torch {torch.__version__}")
    for batch in opts.batch:
        run(batch, opts.rounds)


if __name__ == "__main__":
    main()
