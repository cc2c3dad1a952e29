"""``nn.Sequential`` indexed, sliced and edited as torch's (issue 27.6): the same layers, the
same state-dict keys and the same outputs after every edit, and clear errors where torch
raises."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from itertools import pairwise
from typing import Any

import numpy as np
import pytest
import torch

from burnpy import Tensor, nn
from burnpy.backend.errors import IndexOutOfBoundsError, KindError


def _pair(*sizes: int) -> tuple[nn.Sequential, torch.nn.Sequential]:
    """Linear(a, b), Tanh, Linear(b, c)... with torch's layers' weights copied into ours."""
    ours: list[nn.Module] = []
    theirs: list[torch.nn.Module] = []
    for i, (a, b) in enumerate(pairwise(sizes)):
        t = torch.nn.Linear(a, b).double()
        o = nn.Linear(a, b, dtype="float64")
        o.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})
        ours.append(o)
        theirs.append(t)
        if i < len(sizes) - 2:
            ours.append(nn.Tanh())
            theirs.append(torch.nn.Tanh())
    return nn.Sequential(*ours), torch.nn.Sequential(*theirs)


def _same(ours: nn.Module, theirs: torch.nn.Module, width: int | None = None) -> None:
    """Equal state dicts (keys in order, values) and, given the input width, equal outputs."""
    mine, torchs = ours.state_dict(), theirs.state_dict()
    assert list(mine) == list(torchs)
    for key, value in torchs.items():
        np.testing.assert_array_equal(mine[key].to_numpy(), value.detach().numpy())
    if width is not None:
        x = np.random.default_rng(0).standard_normal((2, width))
        np.testing.assert_allclose(ours(Tensor.from_data(x)).to_numpy(),
                                   theirs(torch.from_numpy(x)).detach().numpy(), rtol=1e-12)


SLICES = [slice(None, -1), slice(1, None), slice(None, None, 2), slice(-2, None),
          slice(None, None, -1), slice(5, 9), slice(0, 1)]


@pytest.mark.parametrize("key", SLICES, ids=str)
def test_slices_keep_the_layers_and_their_names(key: slice) -> None:
    ours, theirs = _pair(3, 4, 4, 2)
    part, tpart = ours[key], theirs[key]
    assert isinstance(part, nn.Sequential)
    assert len(part) == len(tpart)
    assert [type(m).__name__ for m in part] == [type(m).__name__ for m in tpart]
    assert all(a is b for a, b in zip(part, ours[key], strict=True))  # the same modules
    _same(part, tpart)


def test_the_issue_slice_runs_the_layers_before_the_last() -> None:
    ours, theirs = _pair(3, 4, 4, 2)
    _same(ours[:-1], theirs[:-1], width=3)
    _same(ours[:-2], theirs[:-2], width=3)


@pytest.mark.parametrize("index", [0, 2, -1, -5])
def test_int_indices_give_the_layer(index: int) -> None:
    ours, theirs = _pair(3, 4, 4, 2)
    assert type(ours[index]).__name__ == type(theirs[index]).__name__
    assert ours[index] is list(ours)[index]


Edit = Callable[[Any, Any, Callable[[int, int], Any]], Any]
EDITS: dict[str, Edit] = {
    "del int": lambda s, lib, lin: s.__delitem__(1),
    "del negative": lambda s, lib, lin: s.__delitem__(-1),
    "del slice": lambda s, lib, lin: s.__delitem__(slice(0, 2)),
    "del step": lambda s, lib, lin: s.__delitem__(slice(None, None, 2)),
    "pop": lambda s, lib, lin: s.pop(1),
    "pop first": lambda s, lib, lin: s.pop(0),
    "insert": lambda s, lib, lin: s.insert(1, lin(4, 4)),
    "insert negative": lambda s, lib, lin: s.insert(-1, lin(4, 4)),
    "insert at end": lambda s, lib, lin: s.insert(len(s), lin(2, 2)),
    "append": lambda s, lib, lin: s.append(lin(2, 5)),
    "extend": lambda s, lib, lin: s.extend([lin(2, 5), lin(5, 1)]),
    "setitem": lambda s, lib, lin: s.__setitem__(0, lin(3, 4)),
    "setitem negative": lambda s, lib, lin: s.__setitem__(-1, lin(4, 6)),
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_edits_give_torch_s_layers_and_keys(edit: str) -> None:
    ours, theirs = _pair(3, 4, 4, 2)
    rng = np.random.default_rng(1)

    def pair_linear(a: int, b: int) -> tuple[nn.Linear, torch.nn.Linear]:
        t = torch.nn.Linear(a, b).double()
        with torch.no_grad():
            t.weight.copy_(torch.from_numpy(rng.standard_normal((b, a))))
        o = nn.Linear(a, b, dtype="float64")
        o.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})
        return o, t

    made: list[tuple[nn.Linear, torch.nn.Linear]] = []

    def ours_linear(a: int, b: int) -> nn.Linear:
        made.append(pair_linear(a, b))
        return made[-1][0]

    def theirs_linear(a: int, b: int) -> torch.nn.Linear:
        return made.pop(0)[1]

    got = EDITS[edit](ours, nn, ours_linear)
    want = EDITS[edit](theirs, torch.nn, theirs_linear)
    assert len(ours) == len(theirs)
    assert [type(m).__name__ for m in ours] == [type(m).__name__ for m in theirs]
    assert (got is ours) == (want is theirs)
    _same(ours, theirs)


def test_named_layers_from_a_mapping_as_torch() -> None:
    t = torch.nn.Sequential(OrderedDict(fc=torch.nn.Linear(2, 3).double(),
                                        act=torch.nn.ReLU()))
    o = nn.Sequential(OrderedDict(fc=nn.Linear(2, 3, dtype="float64"), act=nn.ReLU()))
    o.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})
    _same(o, t, width=2)
    _same(o[1:], t[1:])
    assert list(dict(o.named_children())) == ["fc", "act"]


def test_bad_indices_raise_clear_errors() -> None:
    ours, _ = _pair(3, 4, 2)
    with pytest.raises(IndexOutOfBoundsError, match="Sequential: index 3 out of range for 3"):
        ours[3]
    with pytest.raises(IndexOutOfBoundsError, match="index -4 out of range"):
        del ours[-4]
    with pytest.raises(IndexOutOfBoundsError, match=r"Sequential\.insert: index 5 out of range"):
        ours.insert(5, nn.ReLU())
    with pytest.raises(KindError, match="indices must be ints or slices, got str"):
        ours["a"]  # type: ignore[call-overload]
    with pytest.raises(KindError, match="expected a Module, got int"):
        ours[0] = 3  # type: ignore[assignment]
    with pytest.raises(KindError, match="expected a Module, got list"):
        nn.Sequential([nn.ReLU()])  # type: ignore[arg-type]
    assert len(ours) == 3
