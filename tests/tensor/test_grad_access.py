"""``w.grad`` is Burn's method ``w.grad(grads)``; torch's habit of reading it as a tensor
(``w.grad.numpy()``) raises a ``GradAccessError`` that shows the call (issue 15)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import burnpy as bp
from burnpy import Autodiff, Tensor
from burnpy.tensor.grad_method import BoundGrad, GradMethod
from burnpy_cpu import CpuBackend

AD = Autodiff(CpuBackend)


def _leaf_and_grads() -> tuple[Tensor, bp.Gradients]:
    w = Tensor.from_data([[1.0, -2.0, 3.0]], backend=AD, dtype="float64").require_grad()
    return w, (w * w).sum().backward()


def test_grad_is_called_as_before() -> None:
    w, grads = _leaf_and_grads()
    g = w.grad(grads)
    assert g is not None and g.backend is CpuBackend
    assert g.tolist() == [[2.0, -4.0, 6.0]]
    unbound = Tensor.grad(w, grads)
    assert unbound is not None and unbound.tolist() == [[2.0, -4.0, 6.0]]
    other = Tensor.from_data([1.0], backend=AD).require_grad()
    assert other.grad(grads) is None


USES: dict[str, Callable[[Any], Any]] = {
    "numpy": lambda g: g.numpy(),
    "shape": lambda g: g.shape,
    "zero_": lambda g: g.zero_(),
    "data": lambda g: g.data,
    "mul": lambda g: g * 0.1,
    "rmul": lambda g: 0.1 * g,
    "sub": lambda g: 1.0 - g,
    "div": lambda g: g / 2.0,
    "neg": lambda g: -g,
    "bool": lambda g: bool(g),
    "float": lambda g: float(g),
    "index": lambda g: g[0],
    "iter": lambda g: list(g),
    "len": lambda g: len(g),
    "asarray": lambda g: np.asarray(g),
}


@pytest.mark.parametrize("use", USES.values(), ids=USES.keys())
def test_grad_as_a_value_raises_showing_the_call(use: Callable[[Any], Any]) -> None:
    w, _ = _leaf_and_grads()
    with pytest.raises(bp.GradAccessError, match=r"call w\.grad\(grads\) with the Gradients that "
                       r"loss\.backward\(\) returned") as info:
        use(w.grad)
    assert isinstance(info.value, bp.BurnpyError)
    assert "w is float (1, 3) bp.float64 on autodiff<cpu>" in str(info.value)


def test_the_error_names_the_attribute() -> None:
    w, _ = _leaf_and_grads()
    with pytest.raises(bp.GradAccessError, match=r"^w\.grad\.numpy: w\.grad is a method"):
        w.grad.numpy()


def test_probes_see_a_missing_attribute_and_repr_names_the_call() -> None:
    w, _ = _leaf_and_grads()
    assert not hasattr(w.grad, "numpy")  # GradAccessError is an AttributeError
    assert getattr(w.grad, "shape", None) is None
    assert "call w.grad(grads)" in repr(w.grad)
    assert callable(w.grad) and isinstance(w.grad, BoundGrad)


def test_grad_keeps_its_documented_typed_signature() -> None:
    descriptor = inspect.getattr_static(Tensor, "grad")
    assert isinstance(descriptor, GradMethod)
    sig = inspect.signature(descriptor.__wrapped__)
    assert list(sig.parameters) == ["self", "grads"]
    assert sig.return_annotation == "Tensor | None"
    assert Tensor.grad.__doc__ is not None and "GradAccessError" in Tensor.grad.__doc__
