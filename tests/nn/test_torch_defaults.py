"""Every burnpy callable with a torch counterpart of the same name (modules, ``burnpy.nn.
functional``, optimizers, LR schedulers) has torch's default for every argument both have, and
no positional argument that torch reads as another one: a PyTorch habit never silently means
something else. Differences are allowed only where listed below, each with why it cannot give
a silently wrong result."""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as tf
import torch.optim.lr_scheduler as tls
import torch.optim.swa_utils as tswa

import burnpy.nn as nn
import burnpy.nn.functional as F
import burnpy.optim as optim
import burnpy.optim.lr_scheduler as ls
import burnpy.optim.swa_utils as swa
from burnpy import Tensor

EMPTY = inspect.Parameter.empty
POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)

#: (name, argument): a default that differs on purpose, and why it cannot be silently wrong.
DEFAULT_ALLOWED: dict[tuple[str, str], str] = {
    ("nn.TransformerEncoderLayer", "activation"):
        "'relu' names the function torch's default F.relu is",
    ("nn.TransformerDecoderLayer", "activation"):
        "'relu' names the function torch's default F.relu is",
    ("nn.Transformer", "activation"): "'relu' names the function torch's default F.relu is",
}

#: burnpy's spelling of torch's first, tensor argument (same position, same meaning).
SAME_MEANING = {("x", "input"), ("indices", "input"), ("a", "input")}


def _torch_doc_signature(fn: Any) -> dict[str, Any] | None:
    """Parameter defaults from a builtin's docstring head, ``name(a, b=1, *, c=None) ->``."""
    head = " ".join((fn.__doc__ or "").split("->")[0].split())
    try:
        call = ast.parse(head.replace("*,", "_star_marker,", 1), mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(call, ast.Call):
        return None
    out: dict[str, Any] = {}
    for arg in call.args:
        if isinstance(arg, ast.Name) and arg.id != "_star_marker":
            out[arg.id] = EMPTY
    for kw in call.keywords:
        try:
            out[kw.arg] = ast.literal_eval(kw.value)
        except ValueError:
            out[kw.arg] = ast.unparse(kw.value)
    return out


def _params(fn: Any) -> tuple[dict[str, Any], list[str]] | None:
    """``({name: default}, positional names)`` of a function or a class's ``__init__``."""
    target = fn.__init__ if inspect.isclass(fn) else fn
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError):
        doc = _torch_doc_signature(fn)
        return None if doc is None else (doc, list(doc))
    params = [p for p in sig.parameters.values() if p.name != "self"]
    return ({p.name: p.default for p in params if p.kind is not p.VAR_KEYWORD},
            [p.name for p in params if p.kind in POSITIONAL])


def _pairs() -> Iterator[tuple[str, Any, Any]]:
    spaces: list[tuple[str, ModuleType, ModuleType]] = [
        ("nn", nn, torch.nn), ("F", F, tf), ("optim", optim, torch.optim),
        ("lr_scheduler", ls, tls), ("swa_utils", swa, tswa)]
    for label, ours, theirs in spaces:
        for name in sorted(getattr(ours, "__all__", dir(ours))):
            mine, torch_fn = getattr(ours, name, None), getattr(theirs, name, None)
            if (name.startswith("_") or not callable(mine) or not callable(torch_fn)
                    or isinstance(mine, ModuleType) or name == "Tensor"):
                continue
            yield f"{label}.{name}", mine, torch_fn


def _same_value(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return float(a) == float(b)
    return bool(a == b) and type(a) is type(b)


def differences() -> list[str]:
    """Every shared argument whose default differs (where torch's has one) and every
    positional slot torch reads as another argument."""
    found = []
    for name, mine, theirs in _pairs():
        ours, torchs = _params(mine), _params(theirs)
        if ours is None or torchs is None:
            found.append(f"{name}: no signature to compare")
            continue
        (our_defaults, our_pos), (torch_defaults, torch_pos) = ours, torchs
        for arg, default in torch_defaults.items():
            if arg not in our_defaults or default is EMPTY:
                continue  # missing here: a TypeError; required in torch: ours is a superset
            if our_defaults[arg] is EMPTY:
                continue  # required here: omitting it is a TypeError, never silent
            if (name, arg) not in DEFAULT_ALLOWED and not _same_value(our_defaults[arg],
                                                                      default):
                found.append(f"{name}({arg}=...): burnpy {our_defaults[arg]!r}, "
                             f"torch {default!r}")
        for i, (a, b) in enumerate(zip(our_pos, torch_pos, strict=False)):
            if a != b and (a, b) not in SAME_MEANING:
                found.append(f"{name}: positional argument {i} is {a!r} here, {b!r} in torch")
                break
    return found


def test_every_shared_default_and_position_is_torchs() -> None:
    assert differences() == []


def test_the_comparison_finds_a_differing_default() -> None:
    """The audit itself can fail: a callable with torch's names but another default is found."""
    def softmax(input: Any, dim: int = -1) -> Any:
        """torch's name, another default."""
        return input

    def conv1d(input: Any, weight: Any, bias: Any = None, stride: int = 2) -> Any:
        """torch's builtin (signature from its docstring), another stride."""
        return input

    spaces: list[tuple[str, Callable[..., Any], Any]] = [
        ("F.softmax", softmax, tf.softmax), ("F.conv1d", conv1d, tf.conv1d)]
    for name, mine, theirs in spaces:
        ours, torchs = _params(mine), _params(theirs)
        assert ours is not None and torchs is not None
        shared = [a for a in ours[0] if a in torchs[0] and torchs[0][a] is not EMPTY]
        assert any(not _same_value(ours[0][a], torchs[0][a]) for a in shared), name


@pytest.mark.parametrize(("name", "arg"), sorted(DEFAULT_ALLOWED))
def test_allowed_differences_are_still_differences(name: str, arg: str) -> None:
    """An allow-list entry that no longer differs must go."""
    label, attr = name.split(".")
    space = {"nn": (nn, torch.nn), "F": (F, tf)}[label]
    ours, torchs = _params(getattr(space[0], attr)), _params(getattr(space[1], attr))
    assert ours is not None and torchs is not None
    assert not _same_value(ours[0][arg], torchs[0][arg])


def test_softmax_without_dim_takes_torchs_implicit_dim() -> None:
    x = torch.randn(2, 3, 4, dtype=torch.float64)
    for ours, theirs in ((nn.Softmax(), torch.nn.Softmax()),
                         (nn.LogSoftmax(), torch.nn.LogSoftmax())):
        with pytest.warns(UserWarning, match="Implicit dimension"):
            got = ours(Tensor.from_data(x.numpy())).to_numpy()
        with pytest.warns(UserWarning):
            want = theirs(x).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_max_pool_positional_return_indices_and_loss_legacy_slots() -> None:
    """torch's 5th positional MaxPool argument is return_indices, not ceil_mode; torch reads a
    loss module's first positional slots as its deprecated size_average/reduce (``MSELoss(
    "sum")`` is a mean there), so burnpy refuses them instead of summing."""
    x = torch.randn(1, 2, 7, dtype=torch.float64)
    values, indices = nn.MaxPool1d(2, 2, 0, 1, True)(Tensor.from_data(x.numpy()))
    ref_values, ref_indices = torch.nn.MaxPool1d(2, 2, 0, 1, True)(x)
    np.testing.assert_array_equal(values.to_numpy(), ref_values.numpy())
    np.testing.assert_array_equal(indices.to_numpy(), ref_indices.numpy())
    with pytest.raises(TypeError):
        nn.MSELoss("sum")  # type: ignore[misc]
    with pytest.raises(TypeError):
        F.cross_entropy(Tensor.zeros((2, 3)), Tensor.zeros((2,), dtype="int64"), None,
                        True)  # type: ignore[misc]
