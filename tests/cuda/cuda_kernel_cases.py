"""Data shared by the fused-kernel tests: inputs with edge values, and the Adam settings."""

from __future__ import annotations

from typing import Any

import numpy as np

KERNEL_DTYPES = ("float16", "float32", "float64")

ADAM_CONFIGS: list[dict[str, Any]] = [
    dict(weight_decay=0.0), dict(weight_decay=0.1), dict(weight_decay=0.1, decoupled=True),
    dict(amsgrad=True), dict(weight_decay=0.05, decoupled=True, amsgrad=True)]


def edge_values(dtype: str, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    """Random values of ``shape`` whose first ones are edge cases: NaN, +-inf, +-0, huge,
    tiny and tail magnitudes."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) * 3.0
    big = float(np.finfo(dtype).max) / 4
    edges = [np.nan, np.inf, -np.inf, 0.0, -0.0, big, -big, 1e-30, -1e-30, 30.0, -30.0,
             90.0, -90.0, 12.0, -12.0][:x.size]
    x.reshape(-1)[:len(edges)] = edges
    with np.errstate(over="ignore"):
        return x.astype(dtype)


def row_cases(dtype: str, c: int = 37) -> np.ndarray:
    """``[8, c]`` logits: random rows, a row with a NaN, rows with +inf or -inf, an all -inf
    row, a row of large magnitudes and one of identical values (for short rows, the edge
    cells wrap around)."""
    x = edge_values(dtype, (8, c))
    x[0] = np.random.default_rng(5).standard_normal(c) * 5
    x[1, 3 % c] = np.nan
    x[2, 7 % c] = np.inf
    x[3, :] = -np.inf
    x[4, 5 % c] = -np.inf
    x[5] = x[5] * (100 if dtype == "float16" else 1e4)
    x[6] = 2.0
    return x


def layer_norm_cases(dtype: str, c: int = 37) -> tuple[np.ndarray, ...]:
    """``row_cases`` (NaN and infinite rows become NaN rows; the constant row normalizes to 0)
    with the last row shifted to a mean 300 times its spread, which a one-pass variance
    would lose; and a weight, bias ``[c]`` and gradient ``[8, c]`` of random values."""
    x = row_cases(dtype, c)
    x[7] = 1000.0 + np.random.default_rng(6).standard_normal(c) * 3
    rng = np.random.default_rng(7)
    weight = (rng.standard_normal(c) + 1.0).astype(dtype)
    bias = rng.standard_normal(c).astype(dtype)
    grad = (rng.standard_normal((8, c)) * 2).astype(dtype)
    return x, weight, bias, grad


def adam_run(dtype: str, seed: int = 4, n: int = 257) -> tuple[np.ndarray, list[np.ndarray]]:
    """A parameter and three steps' gradients (growing tenfold each step, so float16's
    squares overflow by the third), both with non-finite values and zeros."""
    rng = np.random.default_rng(seed)
    param = (rng.standard_normal(n) * 2).astype(dtype)
    param[:4] = [np.nan, np.inf, 0.0, -0.0]
    grads = []
    for step in (1, 2, 3):
        grad = (rng.standard_normal(n) * 10.0**step).astype(dtype)
        grad[4:7] = [np.nan, -np.inf, 0.0]
        grads.append(grad)
    return param, grads
