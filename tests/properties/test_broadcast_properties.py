"""Property tests of binary ops over random mutually broadcastable shapes (0-d, size-1 and
empty dims included) and dtypes against torch, with both operands' gradients (un-broadcast)
on ``Autodiff(CpuBackend)`` against torch autograd."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from burnpy import Autodiff, Tensor
from burnpy_cpu import CpuBackend

AD = Autodiff(CpuBackend)
PAIRS = hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, min_side=0,
                                          max_side=4)
Op = Callable[[Any, Any], Any]
# Name: (op shared by both libraries, range of the right operand: positive for pow/div).
FLOAT_OPS: dict[str, tuple[Op, tuple[float, float]]] = {
    "add": (operator.add, (-2.0, 2.0)),
    "sub": (operator.sub, (-2.0, 2.0)),
    "mul": (operator.mul, (-2.0, 2.0)),
    "div": (operator.truediv, (0.5, 2.0)),
    "pow": (operator.pow, (-1.5, 1.5)),
    "maximum": (lambda a, b: a.maximum(b), (-2.0, 2.0)),
    "minimum": (lambda a, b: a.minimum(b), (-2.0, 2.0)),
    "atan2": (lambda a, b: a.atan2(b), (0.5, 2.0)),
    "hypot": (lambda a, b: a.hypot(b), (0.5, 2.0)),
}
COMPARISONS: dict[str, Op] = {"lt": operator.lt, "ge": operator.ge, "eq": operator.eq,
                              "ne": operator.ne}
INT_OPS: dict[str, Op] = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
                          "floor_div": operator.floordiv, "remainder": operator.mod}


def _draw(rng: np.random.Generator, shape: tuple[int, ...], low: float, high: float,
          dtype: str) -> np.ndarray:
    # Values on a grid of 1/8: ties (for maximum/minimum, comparisons) are likely.
    return np.asarray(np.round(rng.uniform(low, high, shape) * 8) / 8, dtype=dtype)


@pytest.mark.parametrize("name", FLOAT_OPS)
@given(shapes=PAIRS, dtypes=st.sampled_from([("float64", "float64"), ("float32", "float32"),
                                             ("float32", "float64")]),
       seed=st.integers(0, 2**16))
def test_float_binary_op_and_gradients_match_torch(name: str, shapes: Any,
                                                   dtypes: tuple[str, str], seed: int) -> None:
    op, (low, high) = FLOAT_OPS[name]
    rng = np.random.default_rng(seed)
    (sa, sb), out_shape = shapes.input_shapes, shapes.result_shape
    a = _draw(rng, sa, 0.25 if name == "pow" else -2.0, 2.0, dtypes[0])
    b = _draw(rng, sb, low, high, dtypes[1])
    ours = op(Tensor.from_data(a), Tensor.from_data(b))
    theirs = op(torch.from_numpy(a), torch.from_numpy(b))
    assert ours.shape == tuple(theirs.shape) == out_shape
    # burnpy's documented rule: two float dtypes meet at the wider. (torch differs for a 0-d
    # operand, which it treats as a scalar: float32[3] * float64[] is float32 there.)
    assert ours.dtype.value == str(np.promote_types(a.dtype, b.dtype))
    tol = 1e-6 if "float32" in dtypes else 1e-13
    np.testing.assert_allclose(ours.to_numpy(), theirs.numpy(), rtol=tol, atol=tol)

    if name in ("maximum", "minimum"):
        # torch splits the gradient of a tie in halves, burnpy gives it to one side (a
        # mask_where); ties are compared above, gradients away from them (off a's grid).
        b = np.asarray(b + 1 / 16, dtype=b.dtype)
    x = Tensor.from_data(a.astype("float64"), backend=AD).require_grad()
    y = Tensor.from_data(b.astype("float64"), backend=AD).require_grad()
    tx = torch.tensor(a.astype("float64"), requires_grad=True)
    ty = torch.tensor(b.astype("float64"), requires_grad=True)
    w = rng.standard_normal(out_shape)
    grads = (op(x, y) * Tensor.from_data(w, backend=AD)).sum().backward()
    (op(tx, ty) * torch.from_numpy(w)).sum().backward()
    for ours_t, theirs_t in ((x, tx), (y, ty)):
        g = ours_t.grad(grads)
        want = theirs_t.grad
        if want is None:  # an empty output: torch leaves the gradient unset
            assert g is None or not g.to_numpy().any()
            continue
        assert g is not None and g.shape == tuple(want.shape)
        np.testing.assert_allclose(g.to_numpy(), want.numpy(), rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("name", COMPARISONS)
@given(shapes=PAIRS, seed=st.integers(0, 2**16))
def test_comparisons_broadcast_as_torch(name: str, shapes: Any, seed: int) -> None:
    rng = np.random.default_rng(seed)
    a, b = (_draw(rng, s, -1.0, 1.0, "float32") for s in shapes.input_shapes)
    ours = COMPARISONS[name](Tensor.from_data(a), Tensor.from_data(b))
    theirs = COMPARISONS[name](torch.from_numpy(a), torch.from_numpy(b))
    assert ours.kind == "bool"
    np.testing.assert_array_equal(ours.to_numpy(), theirs.numpy())


@pytest.mark.parametrize("name", INT_OPS)
@given(shapes=PAIRS, scalar=st.integers(1, 5), seed=st.integers(0, 2**16))
def test_int_binary_op_matches_torch(name: str, shapes: Any, scalar: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    sa, sb = shapes.input_shapes
    a = np.asarray(rng.integers(-20, 20, sa))
    b = np.asarray(rng.integers(1, 7, sb) * rng.choice([-1, 1], sb))  # no zero divisors
    op = INT_OPS[name]
    ours = op(Tensor.from_data(a), Tensor.from_data(b))
    theirs = op(torch.from_numpy(a), torch.from_numpy(b))
    assert ours.dtype.value == "int64" and ours.shape == tuple(theirs.shape)
    np.testing.assert_array_equal(ours.to_numpy(), theirs.numpy())
    np.testing.assert_array_equal(op(Tensor.from_data(a), scalar).to_numpy(),
                                  op(torch.from_numpy(a), scalar).numpy())
