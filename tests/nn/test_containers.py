"""``ModuleList``, ``ModuleDict``, ``ParameterList``, ``ParameterDict`` and ``nn.Parameter`` as
torch's: the same state-dict keys, torch's state dicts loaded strictly, the same outputs and
parameter gradients, Adam stepping every item, and the list and dict edits giving torch's
items and keys."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from itertools import pairwise
from typing import Any

import numpy as np
import pytest
import torch

import burnpy.nn as nn
import burnpy.optim as optim
from burnpy import Tensor
from burnpy.autodiff import Autodiff
from burnpy.backend.errors import (
    BurnpyError,
    IndexOutOfBoundsError,
    InvalidArgumentError,
    KindError,
)
from burnpy.nn.container import MissingKeyError
from burnpy_cpu import CpuBackend

AD = Autodiff(CpuBackend)
F64: dict[str, Any] = {"backend": AD, "dtype": "float64"}
RNG = np.random.default_rng(29)


class Ours(nn.Module):
    """Every container at once, as a torch model file would write it."""

    def __init__(self) -> None:
        self.layers = nn.ModuleList([nn.Linear(3, 4, **F64), nn.Linear(4, 4, **F64)])
        self.heads = nn.ModuleDict({"cls": nn.Linear(4, 2, **F64), "reg": nn.Linear(4, 1, **F64)})
        self.scales = nn.ParameterList([nn.Parameter(Tensor.ones((4,), **F64))
                                        for _ in range(2)])
        self.extra = nn.ParameterDict({"shift": nn.Parameter(Tensor.zeros((2,), **F64)),
                                       "gain": nn.Parameter(Tensor.ones((1,), **F64))})

    def forward(self, x: Tensor) -> Tensor:
        for layer, scale in zip(self.layers, self.scales, strict=True):
            x = layer(x).tanh() * scale
        cls = self.heads["cls"](x) + self.extra["shift"]
        return cls.sum(-1) + self.heads["reg"](x)[..., 0] * self.extra["gain"]


class Theirs(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList([torch.nn.Linear(3, 4), torch.nn.Linear(4, 4)])
        self.heads = torch.nn.ModuleDict({"cls": torch.nn.Linear(4, 2),
                                          "reg": torch.nn.Linear(4, 1)})
        self.scales = torch.nn.ParameterList([torch.nn.Parameter(torch.rand(4))
                                              for _ in range(2)])
        self.extra = torch.nn.ParameterDict({"shift": torch.nn.Parameter(torch.rand(2)),
                                             "gain": torch.nn.Parameter(torch.rand(1))})

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer, scale in zip(self.layers, self.scales, strict=True):
            x = torch.tanh(layer(x)) * scale
        cls = self.heads["cls"](x) + self.extra["shift"]
        return cls.sum(-1) + self.heads["reg"](x)[..., 0] * self.extra["gain"]


def _pair() -> tuple[Ours, Theirs]:
    theirs = Theirs().double()
    ours = Ours()
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    return ours, theirs


def _same_state(ours: nn.Module, theirs: torch.nn.Module) -> None:
    mine, torchs = ours.state_dict(), theirs.state_dict()
    assert list(mine) == list(torchs)
    for key, value in torchs.items():
        np.testing.assert_allclose(mine[key].to_numpy(), value.detach().numpy(), rtol=1e-12,
                                   atol=1e-14, err_msg=key)


def test_state_dict_keys_are_torch_s_and_load_strictly() -> None:
    ours, theirs = _pair()
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    _same_state(ours, theirs)
    theirs.load_state_dict({k: torch.from_numpy(v.to_numpy())
                            for k, v in ours.state_dict().items()})  # and back, strictly


def test_forward_gradients_and_adam_steps_match_torch() -> None:
    ours, theirs = _pair()
    opt, topt = optim.Adam(ours.parameters(), lr=0.1), torch.optim.Adam(theirs.parameters(),
                                                                        lr=0.1)
    x = RNG.standard_normal((5, 3))
    for _ in range(3):
        out, ref = ours(Tensor.from_data(x, backend=AD)), theirs(torch.from_numpy(x))
        np.testing.assert_allclose(out.to_numpy(), ref.detach().numpy(), rtol=1e-12)
        grads = (out * out).sum().backward()
        topt.zero_grad()
        (ref * ref).sum().backward()
        tgrads = dict(theirs.named_parameters())
        for name, p in ours.named_parameters():
            g = p.grad(grads)
            assert g is not None, name
            tg = tgrads[name].grad
            assert tg is not None, name
            np.testing.assert_allclose(g.to_numpy(), tg.numpy(), rtol=1e-10,
                                       atol=1e-12, err_msg=name)
        opt.step(ours, grads)
        topt.step()
    _same_state(ours, theirs)  # every item of every container was stepped


def test_to_and_valid_reach_every_item() -> None:
    ours, _ = _pair()
    kept = ours.scales[0]
    ours.to(dtype="float32")
    assert {t.dtype.name for t in ours.state_dict().values()} == {"float32"}
    assert ours.scales[0] is kept  # the same objects, as torch's
    copy: Any = ours.valid()
    assert {t.backend for t in copy.state_dict().values()} == {CpuBackend}
    assert isinstance(copy.layers, nn.ModuleList) and len(copy.layers) == 2
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    np.testing.assert_allclose(copy(Tensor.from_data(x)).to_numpy(),
                               ours(Tensor.from_data(x, backend=AD)).to_numpy(), rtol=1e-6)


def _linears(lib: Any, *sizes: int) -> list[Any]:
    make = (lambda a, b: torch.nn.Linear(a, b).double()) if lib is torch.nn else \
        (lambda a, b: nn.Linear(a, b, **F64))
    return [make(a, b) for a, b in pairwise(sizes)]


def _width(linear: Any) -> int:
    return int(linear.in_features)


Edit = Callable[[Any, Any], Any]
LIST_EDITS: dict[str, Edit] = {
    "append": lambda s, new: s.append(new[0]),
    "extend": lambda s, new: s.extend(new),
    "iadd": lambda s, new: s.__iadd__(new),
    "add": lambda s, new: s + type(s)(new),
    "insert": lambda s, new: s.insert(1, new[0]),
    "insert at end": lambda s, new: s.insert(len(s), new[0]),
    "pop": lambda s, new: s.pop(1),
    "pop negative": lambda s, new: s.pop(-1),
    "del int": lambda s, new: s.__delitem__(0),
    "del slice": lambda s, new: s.__delitem__(slice(None, None, 2)),
    "setitem": lambda s, new: s.__setitem__(-1, new[0]),
    "slice": lambda s, new: s[1:],
    "reversed slice": lambda s, new: s[::-1],
}


@pytest.mark.parametrize("edit", sorted(LIST_EDITS))
def test_module_list_edits_give_torch_s_keys(edit: str) -> None:
    t_items, t_new = _linears(torch.nn, 2, 3, 4, 5), _linears(torch.nn, 6, 7, 8)
    theirs = torch.nn.ModuleList(t_items)
    ours = nn.ModuleList(_linears(nn, 2, 3, 4, 5))
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    new = _linears(nn, 6, 7, 8)
    for o, t in zip(new, t_new, strict=True):
        o.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})
    got, want = LIST_EDITS[edit](ours, new), LIST_EDITS[edit](theirs, t_new)
    if isinstance(want, torch.nn.Module):
        assert isinstance(got, nn.Module) and type(got).__name__ == type(want).__name__
        _same_state(got, want)
    _same_state(ours, theirs)
    assert [_width(m) for m in ours] == [_width(m) for m in theirs]


def test_module_list_has_no_forward_and_refuses_bad_items() -> None:
    layers = nn.ModuleList(_linears(nn, 2, 3))
    with pytest.raises(IndexOutOfBoundsError, match="ModuleList: index 1 out of range for 1"):
        layers[1]
    with pytest.raises(KindError, match="ModuleList: expected a Module, got Tensor"):
        layers.append(Tensor.zeros((2,)))  # type: ignore[arg-type]
    with pytest.raises(KindError, match="ModuleList \\+ list"):
        layers + [nn.ReLU()]
    with pytest.raises(BurnpyError, match="ModuleList does not define forward"):
        layers(Tensor.zeros((1, 2)))


DICT_EDITS: dict[str, Edit] = {
    "setitem new": lambda d, new: d.__setitem__("c", new[0]),
    "setitem existing keeps place": lambda d, new: d.__setitem__("a", new[0]),
    "del": lambda d, new: d.__delitem__("a"),
    "pop": lambda d, new: d.pop("b"),
    "update mapping": lambda d, new: d.update({"z": new[0], "a": new[1]}),
    "update pairs": lambda d, new: d.update([("y", new[1]), ("x", new[0])]),
    "clear": lambda d, new: d.clear(),
}


@pytest.mark.parametrize("edit", sorted(DICT_EDITS))
def test_module_dict_edits_give_torch_s_keys(edit: str) -> None:
    t_items, t_new = _linears(torch.nn, 2, 3, 4), _linears(torch.nn, 6, 7, 8)
    theirs = torch.nn.ModuleDict({"b": t_items[0], "a": t_items[1]})
    items = _linears(nn, 2, 3, 4)
    ours = nn.ModuleDict({"b": items[0], "a": items[1]})
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    new = _linears(nn, 6, 7, 8)
    for o, t in zip(new, t_new, strict=True):
        o.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})
    DICT_EDITS[edit](ours, new)
    DICT_EDITS[edit](theirs, t_new)
    _same_state(ours, theirs)
    assert list(ours) == list(theirs) == list(ours.keys())
    assert [k for k, _ in ours.items()] == list(theirs.keys())
    assert [_width(m) for m in ours.values()] == [_width(m) for m in theirs.values()]
    assert len(ours) == len(theirs) and ("a" in ours) == ("a" in theirs)


def test_module_dict_refuses_keys_torch_refuses() -> None:
    d = nn.ModuleDict()
    d.train()  # 'training' is now an instance attribute, still not a key
    for key in ("training", "keys", "a.b", ""):
        with pytest.raises(InvalidArgumentError, match=f"ModuleDict: key {key!r}"):
            d[key] = nn.ReLU()
    with pytest.raises(MissingKeyError, match="no key 'x'"):
        d["x"]
    with pytest.raises(KeyError):
        del d["x"]
    assert len(d) == 0 and d.training is True


def _tensors(lib: Any, n: int) -> list[Any]:
    arrays = [RNG.standard_normal((i + 1,)) for i in range(n)]
    if lib is torch:
        return [torch.nn.Parameter(torch.from_numpy(a)) for a in arrays]
    return [nn.Parameter(Tensor.from_data(a, backend=AD)) for a in arrays]


def test_parameter_list_as_torch_s() -> None:
    theirs = torch.nn.ParameterList(_tensors(torch, 3))
    ours = nn.ParameterList([Tensor.zeros((i + 1,), **F64) for i in range(3)])
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    lists: list[tuple[Any, Callable[[], Any]]] = [
        (ours, lambda: nn.Parameter(Tensor.ones((4,), **F64))),
        (theirs, lambda: torch.nn.Parameter(torch.ones(4, dtype=torch.float64)))]
    for lst, make in lists:
        lst.append(make())
        lst += [make()]
        lst[0] = make()
    _same_state(ours, theirs)
    _same_state(ours[1::2], theirs[1::2])
    assert [t.shape for t in ours] == [tuple(t.shape) for t in theirs]
    assert all(p.requires_grad for p in ours)  # plain tensors become tracked parameters


def test_parameter_dict_as_torch_s() -> None:
    keys = ["b", "a", "c"]  # a plain dict is added in sorted key order, as torch's
    theirs = torch.nn.ParameterDict(dict(zip(keys, _tensors(torch, 3), strict=True)))
    ours = nn.ParameterDict(dict(zip(keys, _tensors(nn, 3), strict=True)))
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    _same_state(ours, theirs)
    for d, lib in ((ours, nn), (theirs, torch)):
        new = _tensors(lib if lib is torch else nn, 2)
        d.update(OrderedDict([("z", new[0]), ("y", new[1])]))
        del d["a"]
        d.setdefault("y", new[0])
    np.testing.assert_array_equal(ours["z"].to_numpy(), ours.get("z").to_numpy())
    assert ours.get("nope") is None
    assert list(reversed(ours)) == list(reversed(theirs))
    assert list(ours.copy()) == list(theirs.copy())
    key, last = ours.popitem()
    tkey, tlast = theirs.popitem()
    assert key == tkey and last.shape == tuple(tlast.shape)
    assert list(ours | nn.ParameterDict({"q": Tensor.ones((1,), **F64)})) == ["b", "c", "z", "q"]
    assert list(ours) == list(theirs)


def test_parameter_is_a_tracked_leaf_and_frozen_stays_frozen() -> None:
    data = Tensor.from_data(np.arange(3.0), backend=AD)
    p = nn.Parameter(data)
    assert p.requires_grad and not data.requires_grad and isinstance(p, nn.Parameter)
    assert not isinstance(data, nn.Parameter)
    layer = nn.Linear(3, 1, **F64)
    assert isinstance(layer.weight, nn.Parameter)  # a module's tensor is a parameter
    layer.weight = nn.Parameter(Tensor.ones((1, 3), **F64), requires_grad=False)
    assert not layer.weight.requires_grad  # assigning did not track it again
    assert [n for n, _ in layer.named_parameters()] == ["weight", "bias"]  # still a parameter
    grads = layer(Tensor.ones((2, 3), **F64)).sum().backward()
    assert layer.bias is not None and layer.bias.grad(grads) is not None
    assert layer.weight.grad(grads) is None
    assert nn.Parameter().shape == (0,)
    with pytest.raises(KindError, match="Parameter: data must be a float Tensor, got an int"):
        nn.Parameter(Tensor.arange(3, backend=AD))


def test_sequential_repeats_and_concatenates_as_torch_s() -> None:
    theirs = torch.nn.Sequential(*_linears(torch.nn, 3, 3))
    ours = nn.Sequential(*_linears(nn, 3, 3))
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    pairs = [(ours * 3, theirs * 3), (2 * ours, 2 * theirs), (ours + ours, theirs + theirs)]
    for got, want in pairs:
        _same_state(got, want)
        assert all(m is ours[0] for m in got)  # the same layer, repeated
    ours *= 2
    theirs *= 2
    _same_state(ours, theirs)
    with pytest.raises(InvalidArgumentError, match="repeat count must be positive"):
        ours * 0
