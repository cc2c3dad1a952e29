"""``Sequential``: modules applied in order, named ``"0"``, ``"1"``... as in torch."""

from __future__ import annotations

import operator
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, overload

from burnpy.backend.errors import IndexOutOfBoundsError, KindError
from burnpy.nn.module import Module


class Sequential(Module):
    """Chains modules: ``Sequential(Conv2d(...), ReLU(), ...)(x)``, or named layers from one
    mapping, ``Sequential(OrderedDict(conv=..., act=...))``.

    Indexed and edited as torch's: an int (negative too) gives a layer, a slice a new
    ``Sequential`` of the same layers under their names; ``del``, ``pop`` and ``insert``
    renumber the layers ``"0"``, ``"1"``...; ``seq[i] = m`` keeps the name.
    """

    def __init__(self, *modules: Module | Mapping[str, Module]) -> None:
        if len(modules) == 1 and isinstance(modules[0], Mapping):
            for name, module in modules[0].items():
                setattr(self, name, _checked(module))
            return
        for m in modules:
            self.append(_checked(m))

    def append(self, module: Module) -> Sequential:
        """Add ``module`` as the last layer (named by its position); returns self."""
        setattr(self, str(len(self)), _checked(module))
        return self

    def extend(self, modules: Iterable[Module]) -> Sequential:
        """Append each of ``modules`` in order; returns self."""
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, module: Module) -> Sequential:
        """Put ``module`` before position ``index`` (``-len <= index <= len``) and renumber;
        returns self."""
        layers = self._layers()
        n, i = len(layers), _index(index)
        if not -n <= i <= n:
            raise IndexOutOfBoundsError(f"Sequential.insert: index {index} out of range for "
                                        f"{n} modules")
        layers.insert(i, _checked(module))
        self._renumber(layers)
        return self

    def pop(self, index: int | slice = -1) -> Any:
        """Remove and return the layer at ``index`` (a ``Sequential`` for a slice)."""
        removed = self[index]
        del self[index]
        return removed

    def _named(self) -> list[tuple[str, Module]]:
        return [(k, v) for k, v in vars(self).items() if isinstance(v, Module)]

    def _layers(self) -> list[Module]:
        return [v for v in vars(self).values() if isinstance(v, Module)]

    def _renumber(self, layers: list[Module]) -> None:
        """Make ``layers`` this container's layers, named ``"0"``, ``"1"``..."""
        for name, _ in self._named():
            delattr(self, name)
        for i, layer in enumerate(layers):
            setattr(self, str(i), layer)

    def _position(self, index: int) -> int:
        """The position ``index`` (negative from the end) names; IndexOutOfBoundsError."""
        n, i = len(self), _index(index)
        if not -n <= i < n:
            raise IndexOutOfBoundsError(f"Sequential: index {index} out of range for {n} "
                                        "modules")
        return i % n

    def __len__(self) -> int:
        return len(self._layers())

    def __iter__(self) -> Iterator[Module]:
        return iter(self._layers())

    @overload
    def __getitem__(self, index: int) -> Module: ...

    @overload
    def __getitem__(self, index: slice) -> Sequential: ...

    def __getitem__(self, index: int | slice) -> Module:
        if isinstance(index, slice):
            return type(self)(dict(self._named()[index]))
        return self._layers()[self._position(index)]

    def __setitem__(self, index: int, module: Module) -> None:
        setattr(self, self._named()[self._position(index)][0], _checked(module))

    def __delitem__(self, index: int | slice) -> None:
        layers = self._layers()
        gone = set(range(len(layers))[index] if isinstance(index, slice)
                   else [self._position(index)])
        self._renumber([m for i, m in enumerate(layers) if i not in gone])

    def forward(self, x: Any) -> Any:
        """``x`` through every layer in order."""
        for layer in self._layers():
            x = layer(x)
        return x


def _checked(module: object) -> Module:
    if not isinstance(module, Module):
        raise KindError(f"Sequential: expected a Module, got {type(module).__name__}")
    return module


def _index(index: object) -> int:
    """``index`` as an int (torch's ``operator.index``); KindError for anything else."""
    try:
        return operator.index(index)  # type: ignore[arg-type]
    except TypeError:
        raise KindError(f"Sequential: indices must be ints or slices, got "
                        f"{type(index).__name__}") from None
