"""``burnpy.nn`` and ``burnpy.nn.functional`` are organised by topic and re-export every public
name of their topic modules explicitly, so ``F.x`` and ``nn.X`` find everything a topic
defines, and nothing is imported with ``*``."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import pytest

import burnpy.nn as nn
import burnpy.nn.functional as F

NN = Path(nn.__file__).parent
NN_TOPICS = ["activation", "attention", "container", "conv", "distance", "dropout", "embedding",
             "layout", "linear", "loss", "norm", "padding", "pool", "rnn", "transformer",
             "vision"]


def _public_definitions(path: Path) -> list[str]:
    """The public functions, classes and aliases a module defines at its top level."""
    names = []
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names += [t.id for t in node.targets if isinstance(t, ast.Name)]
    return [n for n in names if not n.startswith("_") and not n.isupper()]


@pytest.mark.parametrize("topic", [m.name for m in pkgutil.iter_modules(F.__path__)
                                   if not m.name.startswith("_")])
def test_functional_reexports_every_public_name_of_each_topic(topic: str) -> None:
    module = importlib.import_module(f"burnpy.nn.functional.{topic}")
    names = _public_definitions(NN / "functional" / f"{topic}.py")
    assert names
    for name in names:
        assert name in F.__all__, f"burnpy.nn.functional.{topic}.{name} is not re-exported"
        assert getattr(F, name) is getattr(module, name)


@pytest.mark.parametrize("topic", NN_TOPICS)
def test_nn_reexports_every_layer_of_each_topic(topic: str) -> None:
    module = importlib.import_module(f"burnpy.nn.{topic}")
    layers = [n for n in _public_definitions(NN / f"{topic}.py")
              if isinstance(getattr(module, n), type) and issubclass(getattr(module, n),
                                                                    nn.Module)
              and n != "ChannelNorm"]  # the base of the norms with running statistics
    assert layers
    for name in layers:
        assert getattr(nn, name) is getattr(module, name), f"nn.{name} is not {topic}'s"
        assert name in nn.__all__


def test_no_star_import_in_nn() -> None:
    for path in NN.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                assert all(a.name != "*" for a in node.names), f"star import in {path}"
