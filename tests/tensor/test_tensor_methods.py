"""Every Tensor method is a real, documented definition in burnpy/tensor: what an IDE, help()
and pdoc show, and what go-to-definition reaches (issue 14: none may be generated at run time)."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from burnpy import Backend, Tensor
from burnpy.tensor.arithmetic import BINARY_SPECS
from burnpy.tensor.grad_method import GradMethod

# ``burnpy.tensor`` as an attribute is the ``tensor()`` shorthand; the package is imported by name.
TENSOR_DIR = Path(str(importlib.import_module("burnpy.tensor").__file__)).resolve().parent


def _own_functions() -> dict[str, Callable[..., Any]]:
    """Tensor's methods, static methods and property getters, by name (object's excluded)."""
    out: dict[str, Callable[..., Any]] = {}
    for name in dir(Tensor):
        if not any(name in vars(k) for k in Tensor.__mro__ if k is not object):
            continue
        attr = inspect.getattr_static(Tensor, name)
        if isinstance(attr, staticmethod | classmethod):
            attr = attr.__func__
        elif isinstance(attr, property):
            attr = attr.fget
        elif isinstance(attr, GradMethod):  # ``grad``: a method guarded against w.grad.numpy()
            attr = attr.__wrapped__
        if inspect.isfunction(attr):
            out[name] = attr
    return out


METHODS = _own_functions()
PUBLIC = sorted(n for n in METHODS if not n.startswith("_") or n.endswith("__"))


def test_the_walk_finds_the_api() -> None:
    for name in ("add", "__add__", "__radd__", "exp", "relu", "sum", "reshape", "backward",
                 "shape", "T", "float", "slice", "from_data", "__getitem__"):
        assert name in METHODS


@pytest.mark.parametrize("name", PUBLIC)
def test_method_is_defined_in_the_tensor_class_body(name: str) -> None:
    fn = METHODS[name]
    assert fn.__qualname__.startswith("Tensor."), fn.__qualname__
    assert "<locals>" not in fn.__qualname__
    source = inspect.getsourcefile(fn)
    assert source is not None and Path(source).resolve().parent == TENSOR_DIR


@pytest.mark.parametrize("name", PUBLIC)
def test_method_has_a_docstring(name: str) -> None:
    doc = METHODS[name].__doc__  # not inspect.getdoc: it falls back to object's docstrings
    assert doc and doc.strip(), f"Tensor.{name} has no docstring"


@pytest.mark.parametrize("name", PUBLIC)
def test_method_has_a_real_typed_signature(name: str) -> None:
    sig = inspect.signature(METHODS[name])
    params = [p for p in sig.parameters.values() if p.name != "self"]
    kinds = [p.kind for p in params]
    assert kinds != [inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD], (
        f"Tensor.{name}{sig} takes only *args/**kwargs")
    for p in params:
        assert p.annotation is not inspect.Parameter.empty, f"Tensor.{name}: {p.name} untyped"
    assert sig.return_annotation is not inspect.Signature.empty, f"Tensor.{name}: no return type"


def test_autodiff_methods_name_gradients() -> None:
    assert inspect.signature(Tensor.backward).return_annotation == "Gradients"
    for name in ("grad", "grad_remove", "grad_replace"):
        assert inspect.signature(METHODS[name]).parameters["grads"].annotation == "Gradients"


@pytest.mark.parametrize("spec", BINARY_SPECS, ids=lambda s: s.name)
def test_operator_tables_name_backend_ops(spec: Any) -> None:
    """The operator table dispatches by op name: every name must be an op of the protocol."""
    names = [spec.float_op, spec.float_scalar, spec.int_op, spec.int_scalar, spec.bool_op]
    for op in filter(None, names):
        assert callable(getattr(Backend, op, None)), f"{spec.name}: Backend has no {op}"
