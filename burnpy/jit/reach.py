"""What a function compiled by ``bp.compile`` reaches: the walk of its state (``Reach``: tensor
locations, optimizers, symbolic and guarded scalars, the containers, objects and arrays a
replay checks), the places it reads anew at each call (``Roots``: closure cells, globals) and
the keys a call's arguments are matched by. ``burnpy.jit.compile`` says what each is for."""

from __future__ import annotations

import dis
import io
import logging
import pickle
import random
import types
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from burnpy.amp import get_autocast_dtype, is_autocast_enabled
from burnpy.tensor import Tensor

#: Optimizers whose update passes the step count straight to one backend op (``adam_step``,
#: ``sgd_step``, ``rmsprop_step``): their step counts are symbolic. Others compute with the
#: count in Python (``beta1 ** step``), where an ``int`` cannot stay symbolic, so their counts
#: are guarded by value (each step records again).
SYMBOLIC_STEPS = frozenset({"Adam", "AdamW", "SGD", "RMSprop"})


class _Location:
    """A tensor ``fn`` can reach: the tensor object itself (``holder`` None: ``obj``), an entry
    ``holder[key]`` of a dict or list, or argument leaf ``key`` (``holder`` is ``ARGS``)."""

    __slots__ = ("holder", "key", "obj")

    def __init__(self, holder: Any, key: Any, obj: Tensor | None = None) -> None:
        self.holder = holder
        self.key = key
        self.obj = obj

    def get(self, leaves: Sequence[Any]) -> Any:
        """The tensor there now."""
        if self.holder is None:
            return self.obj
        if self.holder is ARGS:
            return leaves[self.key]
        return self.holder[self.key]

    def identity(self) -> tuple[int, Any]:
        """What tells this location from another (the object, or the holder and key)."""
        if self.holder is None:
            return id(self.obj), None
        return id(self.holder), self.key


ARGS = object()


def is_module(obj: Any) -> bool:
    return callable(getattr(obj, "slots", None)) and hasattr(obj, "training")


def _is_optimizer(obj: Any) -> bool:
    return all(hasattr(obj, a) for a in ("param_groups", "state", "steps"))


#: The exact types a walk holds by value (a subclass, an enum or a NumPy scalar, is an object
#: held by identity); tuples, sets and frozensets of them too. A replay compares them by their
#: ``marshal`` bytes, which tell 1 from 1.0 and True, and 0.0 from -0.0.
_PLAIN = frozenset({bool, int, float, complex, str, bytes, type(None)})

#: How deep a walk goes (objects within objects) and how many entries it guards before it
#: gives up: a call reaching more state than that runs eagerly (its state cannot be checked).
_DEPTH, _ENTRIES = 24, 10_000

#: An optimizer's attributes the walk leaves to its own checks (its groups, state and step
#: counts) or that are bookkeeping no step reads (``_found``, ``_pending``).
_OPTIMIZER_OWN = frozenset({"param_groups", "state", "steps", "_found", "_pending"})

#: The most bytes of a NumPy array a replay compares (a recording bakes what ``fn`` made of
#: its values, ``Tensor.from_data(array)``): a call reaching a bigger one runs eagerly.
_ARRAY_BYTES = 1 << 16

#: Objects the walk holds by identity and does not enter: Python modules, built-in functions
#: and types, and the objects of logging and I/O (a logger reaches every logger of the
#: process), which compute no values.
_OPAQUE = (types.ModuleType, types.BuiltinFunctionType, type, logging.Filterer,
           logging.Manager, io.IOBase)


#: Host random generators: a value ``fn`` draws from one is baked into the recorded graph,
#: so a recording that advances one (or NumPy's or Python's global one) runs eagerly.
_HOST_RNGS = (random.Random, np.random.Generator, np.random.RandomState,
              np.random.BitGenerator)


def host_rng_states(rngs: Sequence[Any]) -> list[bytes]:
    """The states of Python's and NumPy's global generators and of ``rngs``, as pickles (a
    generator's pickle holds its state), compared before and after a recording."""
    return [pickle.dumps(random.getstate()), pickle.dumps(np.random.get_state(legacy=False)),
            *[pickle.dumps(r) for r in rngs]]


def _by_value(value: Any) -> bool:
    """Whether ``value`` is a plain scalar, or a tuple or set of them (held by value)."""
    kind = type(value)
    if kind in _PLAIN:
        return True
    return (kind is tuple or kind is frozenset or kind is set) and all(map(_by_value, value))


def _filled(cell: types.CellType) -> bool:
    """Whether a closure cell holds a value."""
    try:
        cell.cell_contents  # noqa: B018 - read to see whether it raises
    except ValueError:
        return False
    return True


def _slot_names(obj: Any) -> list[str]:
    """The ``__slots__`` attributes of ``obj``'s class and its bases that are set."""
    names = []
    for cls in type(obj).__mro__:
        declared = cls.__dict__.get("__slots__", ())
        for name in (declared,) if isinstance(declared, str) else declared:
            if name not in ("__dict__", "__weakref__") and hasattr(obj, name):
                names.append(name)
    return list(dict.fromkeys(names))


#: Entries a replay reads: (a container, its keys or None for itself, whether by attribute).
Entries = tuple[Any, tuple[Any, ...] | None, bool]


@dataclass
class Reach:
    """What ``fn`` can reach: tensor locations, optimizers, the scalars that are symbolic
    (``(holder, key)``) or guarded by value, and what a replay checks of the rest: the
    containers' sizes, each entry's value or object, the arrays' bytes."""

    tensors: list[_Location] = field(default_factory=list)
    optimizers: list[Any] = field(default_factory=list)
    scalars: list[tuple[Any, Any]] = field(default_factory=list)
    fixed: list[tuple[Any, Any]] = field(default_factory=list)
    seen: set[tuple[int, Any]] = field(default_factory=set)
    objects: set[int] = field(default_factory=set)
    #: The dicts and lists the walk passed (objects' attribute dicts among them): a replay
    #: checks their sizes, so an entry added (a new attribute or key) records again.
    sized: list[Any] = field(default_factory=list)
    #: Entries a replay reads, as ``(container, keys, by attribute)`` (keys None: the
    #: container itself, a set of scalars reached directly): those holding plain scalars
    #: (``values``, checked by value and type) and those holding other objects (``held``,
    #: checked by identity: a swapped submodule or optimizer, a replaced tuple of tensors).
    values: list[Entries] = field(default_factory=list)
    held: list[Entries] = field(default_factory=list)
    #: The NumPy arrays reached: a replay compares their bytes, dtypes and shapes.
    arrays: list[np.ndarray] = field(default_factory=list)
    #: The host random generators reached: a recording that draws from one runs eagerly.
    rngs: list[Any] = field(default_factory=list)
    #: Why the walk gave up (too deep, too much state, a set of objects, an iterator), or
    #: None.
    incomplete: str | None = None
    entries: int = 0

    @classmethod
    def of(cls, leaves: Sequence[Any], roots: list[Any]) -> Reach:
        """The walk from a call's arguments (``leaves``) and the objects ``fn`` reaches
        outside them."""
        reach = cls()
        for i, leaf in enumerate(leaves):
            if isinstance(leaf, Tensor):
                reach.tensor(_Location(ARGS, i))
        for obj in roots:
            reach.visit(obj)
        # a learning rate is symbolic, not held by value, however else the walk met its group
        symbolic = {(id(h), k) for h, k in reach.scalars}
        reach.values = [(c, tuple(k for k in keys if (id(c), k) not in symbolic), a)
                        if keys is not None else (c, keys, a) for c, keys, a in reach.values]
        reach.values = [group for group in reach.values if group[1] != ()]
        return reach

    def tensor(self, location: _Location) -> None:
        if location.identity() not in self.seen:
            self.seen.add(location.identity())
            self.tensors.append(location)

    def contents(self, container: Any, depth: int, skip: frozenset[str] = frozenset(),
                 attributes: Sequence[str] | None = None) -> None:
        """Add what a dict or list holds (or, with ``attributes``, those of an object with
        ``__slots__``): tensors as locations (in slots: the tensor objects), plain scalars
        by value, other objects by identity, walked in turn. A class's dict (a mapping
        proxy) adds its attributes but the dunder names, methods and other descriptors."""
        items: list[tuple[Any, Any]]
        if attributes is not None:
            items = [(name, getattr(container, name)) for name in attributes]
        else:
            self.sized.append(container)
            items = list(container.items() if isinstance(container, dict | types.MappingProxyType)
                         else enumerate(container))
        of_class = isinstance(container, types.MappingProxyType)
        values, held = [], []
        for key, value in items:
            if key in skip or (of_class and (key.startswith("__") or hasattr(value, "__get__"))):
                continue
            if isinstance(value, Tensor):
                if attributes is None:
                    self.tensor(_Location(container, key))
                    continue
                self.tensor(_Location(None, None, value))
                held.append(key)
            elif _by_value(value):
                values.append(key)
            else:
                held.append(key)
                self.visit(value, depth + 1)
        self.entries += len(items)
        if self.entries > _ENTRIES:
            self.incomplete = f"reaches more than {_ENTRIES} entries of state"
        by_attribute = attributes is not None
        if values:
            self.values.append((container, tuple(values), by_attribute))
        if held:
            self.held.append((container, tuple(held), by_attribute))

    def classes(self, cls: type, depth: int) -> None:
        """Add the attributes of ``cls`` and its bases, but Python's own (``object``,
        builtins): an instance reads those it does not hold itself."""
        for base in cls.__mro__:
            if base.__module__ != "builtins" and id(base) not in self.objects:
                self.objects.add(id(base))
                self.contents(base.__dict__, depth)

    def visit(self, obj: Any, depth: int = 0) -> None:
        """Add what ``obj`` holds."""
        if isinstance(obj, Tensor):
            self.tensor(_Location(None, None, obj))
            return
        if id(obj) in self.objects:
            return
        if isinstance(obj, types.MethodType):  # held in state: its object and function
            self.objects.add(id(obj))
            self.visit(obj.__self__, depth + 1)
            self.visit(obj.__func__, depth + 1)
            return
        if isinstance(obj, types.FunctionType):  # held in state: its closure's cells, whose
            self.objects.add(id(obj))  # contents change (a dict) or are rebound (nonlocal)
            for cell in obj.__closure__ or ():
                if _filled(cell):
                    self.contents(cell, depth, attributes=["cell_contents"])
            return
        if isinstance(obj, _OPAQUE):
            return
        if getattr(type(obj), "state_of_wrapped", False):  # a compiled function: its cache
            self.visit(obj.__wrapped__, depth)  # is no state, what its function reaches is
            return
        if isinstance(obj, _HOST_RNGS):  # held by identity; a draw is found by its state
            self.objects.add(id(obj))
            self.rngs.append(obj)
            return
        if hasattr(type(obj), "__next__"):  # its position is state no replay can check
            self.incomplete = (f"reaches an iterator ({type(obj).__name__}), whose position "
                               "a replay would not advance")
            return
        if _by_value(obj):
            if isinstance(obj, set):  # its members may change: checked by value
                self.objects.add(id(obj))
                self.values.append((obj, None, False))
            return
        if depth > _DEPTH:
            self.incomplete = f"reaches state more than {_DEPTH} objects deep"
            return
        self.objects.add(id(obj))
        if not isinstance(obj, dict | list | tuple | set | frozenset):
            self.classes(type(obj), depth)
        if _is_optimizer(obj):
            self.optimizers.append(obj)
            symbolic_steps = any(c.__name__ in SYMBOLIC_STEPS for c in type(obj).__mro__)
            for group in obj.param_groups:
                self.scalars.append((group, "lr"))
                self.contents(group, depth + 1, frozenset({"params", "lr"}))
                # the parameters by identity: each is a location of its own
                self.sized.append(group["params"])
                if group["params"]:
                    self.held.append((group["params"], tuple(range(len(group["params"]))),
                                      False))
                for p in group["params"]:
                    if isinstance(p, Tensor):
                        self.tensor(_Location(None, None, p))
            for p in obj.steps:
                (self.scalars if symbolic_steps else self.fixed).append((obj.steps, p))
            for entries in obj.state.values():
                for name, value in entries.items():
                    if isinstance(value, Tensor):
                        self.tensor(_Location(entries, name))
            if isinstance(getattr(obj, "__dict__", None), dict):
                self.contents(vars(obj), depth, _OPTIMIZER_OWN)
        elif isinstance(obj, dict | list | deque):
            self.contents(obj, depth)
        elif isinstance(obj, np.ndarray):
            if obj.dtype.hasobject or obj.nbytes > _ARRAY_BYTES:
                self.incomplete = (f"reaches a NumPy array of {obj.nbytes} bytes ({obj.dtype}), "
                                   f"past the {_ARRAY_BYTES} a replay compares")
            else:
                self.arrays.append(obj)
        elif isinstance(obj, bytearray | memoryview):  # mutable bytes: neither walked nor held
            self.incomplete = f"reaches a {type(obj).__name__}"
        elif isinstance(obj, tuple | frozenset):  # immutable: its holder checks it is the same
            for value in obj:
                self.visit(value, depth + 1)
        elif isinstance(obj, set):  # its members may change, unseen
            self.incomplete = "reaches a set of objects"
        else:  # an object holding state: its attributes (a module's, a scheduler's)
            attributes = getattr(obj, "__dict__", None)
            if isinstance(attributes, dict):
                self.contents(attributes, depth)
            slots = _slot_names(obj)
            if slots:
                self.contents(obj, depth, attributes=slots)


#: The instructions that read or write a global name (``co_names`` also holds attribute
#: names: ``opt.step(...)`` must not make a global ``step`` part of the state).
_GLOBAL_ACCESS = frozenset({"LOAD_GLOBAL", "STORE_GLOBAL", "DELETE_GLOBAL", "LOAD_NAME",
                            "STORE_NAME", "DELETE_NAME"})


def _names(code: types.CodeType) -> Iterator[str]:
    """The global names ``code`` and the code nested in it use."""
    for instruction in dis.get_instructions(code):
        if instruction.opname in _GLOBAL_ACCESS:
            yield instruction.argval
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _names(const)


class Roots:
    """The objects ``fn`` reaches outside its arguments, read anew at each call (a global may
    be rebound): a module itself, a bound method's ``self`` (``fixed``), and the *places*
    holding the rest: its closure's cells and the globals its code names, and those of the
    functions of its own module it names (two levels). Python modules and classes found
    there are left out, other functions are walked for their closures' cells; the plain
    scalars (``int``, ``float``, ``bool``, ``str``) join the call's signature."""

    __slots__ = ("fixed", "places")

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fixed: list[Any] = []
        #: Each place: (a closure cell, None) or (a globals dict, a name).
        self.places: list[tuple[Any, str | None]] = []
        if is_module(fn):
            self.fixed.append(fn)
            return
        if hasattr(fn, "__self__"):
            self.fixed.append(fn.__self__)
        self._add_places(getattr(fn, "__func__", fn), 0)

    def _add_places(self, target: Any, depth: int) -> None:
        code = getattr(target, "__code__", None)
        if code is None:
            return
        cells = target.__closure__ or ()
        scope = target.__globals__
        names = list(dict.fromkeys(_names(code)))
        self.places += [(cell, None) for cell in cells]
        self.places += [(scope, name) for name in names]
        if depth < 2:
            referenced = [scope.get(n) for n in names]
            for cell in cells:
                try:
                    referenced.append(cell.cell_contents)
                except ValueError:  # an empty cell
                    continue
            for f in referenced:
                if getattr(type(f), "state_of_wrapped", False):  # a compiled function
                    f = f.__wrapped__
                if (isinstance(f, types.FunctionType) and f is not target
                        and f.__globals__ is scope):
                    self._add_places(f, depth + 1)

    def read(self) -> list[Any]:
        """What each place holds now (``EMPTY`` for an empty cell or an unbound name)."""
        values: list[Any] = []
        for holder, name in self.places:
            if name is None:
                try:
                    values.append(holder.cell_contents)
                except ValueError:
                    values.append(EMPTY)
            else:
                values.append(holder.get(name, EMPTY))
        return values

    def split(self, values: list[Any]) -> tuple[list[Any], list[Any]]:
        """The objects reached (the fixed ones, then those of ``values``) and the plain
        scalars among ``values``."""
        roots, scalars = list(self.fixed), []
        for value in values:
            if isinstance(value, bool | int | float | str):
                scalars.append(value_key(value))
            elif not (value is EMPTY or isinstance(value, types.ModuleType | type)
                      or getattr(type(value), "state_of_wrapped", False)):
                roots.append(value)  # a function among them: the walk reads its cells
        return roots, scalars


#: What an empty cell or an unbound global holds, for ``Roots.read``.
EMPTY = object()


def flatten_leaves(value: Any, out: list[Any]) -> Any:
    """``value``'s structure with each leaf replaced by its position in ``out``."""
    if isinstance(value, tuple | list):
        return type(value)(flatten_leaves(v, out) for v in value)
    if isinstance(value, dict):
        return {k: flatten_leaves(v, out) for k, v in value.items()}
    out.append(value)
    return len(out) - 1


def autocast_regions() -> tuple[Any, ...]:
    """The autocast regions in force in this thread (what ops cast to), per device type."""
    return tuple((kind, get_autocast_dtype(kind)) for kind in ("cpu", "cuda")
                 if is_autocast_enabled(kind))


def signature_of(t: Tensor) -> tuple[Any, ...]:
    """What a recording specializes a tensor on: backend, kind, shape, dtype and device."""
    return (t.backend, t.kind, t.shape, t.dtype,
            t.device if t.backend.multi_device else None)


#: The arguments a signature holds by value (the others but tensors by identity).
BY_VALUE = (bool, int, float, str, bytes, complex, type(None))


def leaf_signature(leaf: Any) -> Any:
    if isinstance(leaf, Tensor):
        return signature_of(leaf)
    if isinstance(leaf, BY_VALUE):
        return value_key(leaf)
    return (type(leaf), id(leaf))


def value_key(value: Any) -> tuple[Any, ...]:
    """What tells a Python scalar from another: its type and value, and a zero's sign (0.0
    equals -0.0, yet ``x + 0.0`` and ``x + -0.0`` differ where ``x`` is -0.0)."""
    if value == 0 and isinstance(value, float | complex):
        return (type(value), value, repr(value))
    return (type(value), value)
