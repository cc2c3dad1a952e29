"""torch's containers: ``Sequential``, ``ModuleList``, ``ParameterList`` (items named ``"0"``,
``"1"``...) and ``ModuleDict``, ``ParameterDict`` (items named by their keys).

Each container is a ``Module`` holding its items as its attributes, in order, so ``Module``'s
attribute walk finds them with no rule of its own: state-dict keys are torch's
(``layers.0.weight``, ``heads.cls.bias``), ``parameters()`` gives an optimizer every item's
tensors, and ``to``, ``load_state_dict`` and ``valid()`` reach them as any sub-module's.
"""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, ClassVar, Generic, Self, TypeGuard, TypeVar, overload

from burnpy.backend.errors import (
    BurnpyError,
    IndexOutOfBoundsError,
    InvalidArgumentError,
    KindError,
)
from burnpy.nn.module import Module
from burnpy.tensor import Tensor

T = TypeVar("T")


class MissingKeyError(BurnpyError, KeyError):
    """A ``ModuleDict``/``ParameterDict`` key that is not there (a ``KeyError``, as torch's)."""


def _checked(container: Module, kind: type, value: object) -> Any:
    """``value`` when it is what ``container`` holds; KindError otherwise."""
    if not isinstance(value, kind):
        raise KindError(f"{type(container).__name__}: expected a {kind.__name__}, got "
                        f"{type(value).__name__}")
    return value


class _Holder(Module, Generic[T]):
    """A container of items of one kind (``_kind``: modules or tensors) held as attributes."""

    _kind: ClassVar[type] = Module

    def _holds(self, value: object) -> TypeGuard[T]:
        return isinstance(value, self._kind)


class _Numbered(_Holder[T]):
    """Items held in order as attributes ``"0"``, ``"1"``...: indexed, sliced and edited as
    torch's lists (negative indices too; ``del``, ``pop`` and ``insert`` renumber)."""

    @classmethod
    def _of(cls, items: list[T]) -> Self:
        """A new container of ``items``, numbered from 0."""
        out = cls()
        for item in items:
            out.append(item)
        return out

    def append(self, value: T) -> Self:
        """Add ``value`` as the last item (named by its position); returns self."""
        setattr(self, str(len(self)), _checked(self, self._kind, value))
        return self

    def extend(self, values: Iterable[T]) -> Self:
        """Append each of ``values`` in order; returns self."""
        if isinstance(values, Module | Tensor) or not isinstance(values, Iterable):
            raise KindError(f"{type(self).__name__}.extend: expected an iterable of "
                            f"{self._kind.__name__}s, got {type(values).__name__}")
        for v in list(values):
            self.append(v)
        return self

    def insert(self, index: int, value: T) -> Self:
        """Put ``value`` before position ``index`` (``-len <= index <= len``) and renumber;
        returns self."""
        items = self._values()
        n, i = len(items), _index(self, index)
        if not -n <= i <= n:
            raise IndexOutOfBoundsError(f"{type(self).__name__}.insert: index {index} out of "
                                        f"range for {n} items")
        items.insert(i, _checked(self, self._kind, value))
        self._renumber(items)
        return self

    def pop(self, index: int | slice = -1) -> Any:
        """Remove and return the item at ``index`` (a container of them for a slice)."""
        removed = self[index]
        del self[index]
        return removed

    def _named(self) -> list[tuple[str, T]]:
        return [(k, v) for k, v in vars(self).items() if self._holds(v)]

    def _values(self) -> list[T]:
        return [v for v in vars(self).values() if self._holds(v)]

    def _renumber(self, items: list[T]) -> None:
        """Make ``items`` this container's items, named ``"0"``, ``"1"``..."""
        for name, _ in self._named():
            delattr(self, name)
        for i, item in enumerate(items):
            setattr(self, str(i), item)

    def _position(self, index: object) -> int:
        """The position ``index`` (negative from the end) names; IndexOutOfBoundsError."""
        n, i = len(self), _index(self, index)
        if not -n <= i < n:
            raise IndexOutOfBoundsError(f"{type(self).__name__}: index {index} out of range "
                                        f"for {n} items")
        return i % n

    def _slice(self, index: slice) -> Self:
        """The items ``index`` selects, renumbered (torch's lists; ``Sequential`` keeps
        names)."""
        return self._of(self._values()[index])

    def __len__(self) -> int:
        return len(self._values())

    def __iter__(self) -> Iterator[T]:
        return iter(self._values())

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> Self: ...

    def __getitem__(self, index: int | slice) -> T | Self:
        if isinstance(index, slice):
            return self._slice(index)
        return self._values()[self._position(index)]

    def __setitem__(self, index: int, value: T) -> None:
        setattr(self, self._named()[self._position(index)][0],
                _checked(self, self._kind, value))

    def __delitem__(self, index: int | slice) -> None:
        items = self._values()
        gone = set(range(len(items))[index] if isinstance(index, slice)
                   else [self._position(index)])
        self._renumber([m for i, m in enumerate(items) if i not in gone])

    def __iadd__(self, values: Iterable[T]) -> Self:
        return self.extend(values)

    def __add__(self, other: Iterable[T]) -> Self:
        if not isinstance(other, type(self)):
            raise KindError(f"{type(self).__name__} + {type(other).__name__}: both operands "
                            f"must be {type(self).__name__}s")
        return self._of([*self, *other])

    def __dir__(self) -> list[str]:
        return [k for k in super().__dir__() if not k.isdigit()]


def _index(container: Module, index: object) -> int:
    """``index`` as an int (torch's ``operator.index``); KindError for anything else."""
    try:
        return operator.index(index)  # type: ignore[arg-type]  # any object may define it
    except TypeError:
        raise KindError(f"{type(container).__name__}: indices must be ints or slices, got "
                        f"{type(index).__name__}") from None


class Sequential(_Numbered[Module]):
    """Chains modules: ``Sequential(Conv2d(...), ReLU(), ...)(x)``, or named layers from one
    mapping, ``Sequential(OrderedDict(conv=..., act=...))``.

    Indexed and edited as torch's: an int (negative too) gives a layer, a slice a new
    ``Sequential`` of the same layers under their names; ``del``, ``pop`` and ``insert``
    renumber the layers ``"0"``, ``"1"``...; ``seq[i] = m`` keeps the name; ``+``, ``+=``
    and ``*`` (repeating the same layers) as torch's.
    """

    def __init__(self, *args: Module | Mapping[str, Module]) -> None:
        if len(args) == 1 and isinstance(args[0], Mapping):
            for name, module in args[0].items():
                setattr(self, name, _checked(self, Module, module))
            return
        for m in args:
            self.append(_checked(self, Module, m))

    def _slice(self, index: slice) -> Self:
        return type(self)(OrderedDict(self._named()[index]))

    def __mul__(self, other: int) -> Sequential:
        if not isinstance(other, int) or isinstance(other, bool):
            raise KindError(f"Sequential * {type(other).__name__}: multiply by an int")
        if other < 1:
            raise InvalidArgumentError(f"Sequential * {other}: the repeat count must be "
                                       "positive")
        return self._of(self._values() * other)

    __rmul__ = __mul__

    def __imul__(self, other: int) -> Sequential:
        self._renumber((self * other)._values())
        return self

    def forward(self, input: Any) -> Any:
        """``input`` through every layer in order."""
        for layer in self._values():
            input = layer(input)
        return input


class ModuleList(_Numbered[Module]):
    """torch.nn.ModuleList: a list of sub-modules, registered under ``"0"``, ``"1"``... (no
    ``forward``: iterate it). Slices are new ``ModuleList``s of the same modules, renumbered."""

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        if modules is not None:
            self.extend(modules)


class ParameterList(_Numbered[Tensor]):
    """torch.nn.ParameterList: a list of parameter tensors, registered under ``"0"``,
    ``"1"``... (each tracked on an autodiff backend, as any module tensor)."""

    _kind = Tensor

    def __init__(self, values: Iterable[Tensor] | None = None) -> None:
        if values is not None:
            self.extend(values)

    def extra_repr(self) -> str:
        return "\n".join(f"({i}): Parameter containing: [{t.dtype!r} of size {t.shape}]"
                         for i, t in enumerate(self))


class _Keyed(_Holder[T]):
    """Items held as attributes named by their string keys, in insertion order, with a
    dict's methods."""

    def _key(self, key: object) -> str:
        """``key`` when it can name an item; KindError or InvalidArgumentError otherwise."""
        name = type(self).__name__
        if not isinstance(key, str):
            raise KindError(f"{name}: keys must be strings, got {type(key).__name__}")
        if not key or "." in key or key.startswith("_"):
            raise InvalidArgumentError(f"{name}: key {key!r} is not allowed (keys are "
                                       "attribute names: not empty, no '.', no leading '_')")
        if not self._holds(vars(self).get(key)) and hasattr(self, key):
            raise InvalidArgumentError(f"{name}: key {key!r} is an attribute of {name} "
                                       "already")
        return key

    def _pairs(self) -> list[tuple[str, T]]:
        return [(k, v) for k, v in vars(self).items() if self._holds(v)]

    def __getitem__(self, key: str) -> T:
        value = vars(self).get(key) if isinstance(key, str) else None
        if not self._holds(value):
            raise MissingKeyError(f"{type(self).__name__}: no key {key!r} (keys: "
                                  f"{list(self.keys())})")
        return value

    def __setitem__(self, key: str, value: T) -> None:
        setattr(self, self._key(key), _checked(self, self._kind, value))

    def __delitem__(self, key: str) -> None:
        self[key]  # MissingKeyError for an absent key
        delattr(self, key)

    def __len__(self) -> int:
        return len(self._pairs())

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self._holds(vars(self).get(key))

    def clear(self) -> None:
        """Remove every item."""
        for key in self.keys():
            delattr(self, key)

    def pop(self, key: str) -> T:
        """Remove the item under ``key`` and return it."""
        value = self[key]
        del self[key]
        return value

    def keys(self) -> list[str]:
        """The keys, in insertion order."""
        return [k for k, _ in self._pairs()]

    def items(self) -> list[tuple[str, T]]:
        """``(key, item)`` pairs, in insertion order."""
        return self._pairs()

    def values(self) -> list[T]:
        """The items, in insertion order."""
        return [v for _, v in self._pairs()]

    def update(self, values: Mapping[str, T] | _Keyed[T] | Iterable[tuple[str, T]]) -> None:
        """Add or replace items from a mapping (in its order) or from ``(key, item)`` pairs."""
        name = type(self).__name__
        if (isinstance(values, Tensor | str) or not isinstance(values, Iterable)
                or (isinstance(values, Module) and not isinstance(values, _Keyed))):
            raise KindError(f"{name}.update: expected a mapping or an iterable of (key, value) "
                            f"pairs, got {type(values).__name__}")
        if isinstance(values, Mapping | _Keyed):
            pairs = list(self._mapping_order(values))
        else:
            pairs = []
            for j, pair in enumerate(values):
                if not isinstance(pair, tuple | list) or len(pair) != 2:
                    raise InvalidArgumentError(f"{name}.update: element #{j} must be a (key, "
                                               f"value) pair, got {pair!r}")
                pairs.append((pair[0], pair[1]))
        for key, value in pairs:
            self[key] = value

    def _mapping_order(self, values: Any) -> Iterable[tuple[str, T]]:
        """The pairs of a mapping in the order torch adds them (as given)."""
        return list(values.items())


class ModuleDict(_Keyed[Module]):
    """torch.nn.ModuleDict: sub-modules by string key, in insertion order (no ``forward``)."""

    def __init__(self, modules: Mapping[str, Module] | None = None) -> None:
        if modules is not None:
            self.update(modules)


class ParameterDict(_Keyed[Tensor]):
    """torch.nn.ParameterDict: parameter tensors by string key, in insertion order; built
    or updated from a plain ``dict`` it adds them in sorted key order, as torch's."""

    _kind = Tensor

    def __init__(self, parameters: Mapping[str, Tensor] | Iterable[tuple[str, Tensor]] | None
                 = None) -> None:
        if parameters is not None:
            self.update(parameters)

    def _mapping_order(self, values: Any) -> Iterable[tuple[str, Tensor]]:
        if isinstance(values, OrderedDict | _Keyed):
            return list(values.items())
        return sorted(values.items())

    def __reversed__(self) -> Iterator[str]:
        return reversed(self.keys())

    def copy(self) -> ParameterDict:
        """A new ParameterDict holding the same tensors under the same keys."""
        return ParameterDict(OrderedDict(self.items()))

    def setdefault(self, key: str, default: Tensor | None = None) -> Tensor:
        """The tensor under ``key``, first setting it to ``default`` when absent."""
        if key not in self:
            self[key] = _checked(self, Tensor, default)
        return self[key]

    def popitem(self) -> tuple[str, Tensor]:
        """Remove and return the last inserted ``(key, tensor)`` pair."""
        if not len(self):
            raise MissingKeyError("ParameterDict.popitem: the dict is empty")
        key = self.keys()[-1]
        return key, self.pop(key)

    def get(self, key: str, default: Any = None) -> Any:
        """The tensor under ``key``, or ``default``."""
        if key in self:
            return self[key]
        return default

    def fromkeys(self, keys: Iterable[str], default: Tensor | None = None) -> ParameterDict:
        """A new ParameterDict with ``default`` (one shared tensor) under each of ``keys``."""
        return ParameterDict(OrderedDict((k, _checked(self, Tensor, default)) for k in keys))

    def __or__(self, other: ParameterDict) -> ParameterDict:
        out = self.copy()
        out.update(other)
        return out

    def __ror__(self, other: ParameterDict) -> ParameterDict:
        out = other.copy()
        out.update(self)
        return out

    def __ior__(self, other: ParameterDict) -> ParameterDict:
        self.update(other)
        return self

    def extra_repr(self) -> str:
        return "\n".join(f"({k}): Parameter containing: [{t.dtype!r} of size {t.shape}]"
                         for k, t in self.items())
