"""State dicts as records: the ``Stateful`` protocol and its conversion to and from ``Record``.

Anything with ``state_dict()``, ``load_state_dict(state)`` and a ``record_kind`` can be
recorded (modules, optimizers and LR schedulers do); this module knows nothing of them. A state
dict is a tree of string-keyed mappings: its tensor leaves become the record's tensors, named by
their ``/``-joined path, and everything else stays in the record's JSON ``extra`` at the same
place in the tree.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Protocol, TypeVar, runtime_checkable

from burnpy.backend.data import TensorData
from burnpy.backend.errors import RecordError
from burnpy.record.format import Record
from burnpy.tensor import Tensor

#: Joins the keys of a nested tensor's path into its record entry name.
SEPARATOR = "/"


@runtime_checkable
class Stateful(Protocol):
    """An object that gives and takes its state as a (nested) dict of tensors and JSON values.

    ``record_kind`` names what the record holds (``"module"``, ``"optimizer"``...), so a file
    is never loaded into an object of another kind.
    """

    record_kind: ClassVar[str]

    def state_dict(self) -> Mapping[str, Any]:
        """The state: string-keyed mappings whose leaves are tensors or JSON values."""
        ...

    def load_state_dict(self, state: Mapping[str, Any]) -> object:
        """Restore a state given by ``state_dict`` (tensors arrive as host ``TensorData``)."""
        ...


S = TypeVar("S", bound=Stateful)


def _has_tensor(value: object) -> bool:
    if isinstance(value, Tensor | TensorData):
        return True
    return isinstance(value, Mapping) and any(_has_tensor(v) for v in value.values())


def _split(state: Mapping[str, Any], prefix: str, tensors: dict[str, TensorData],
           seen: set[int] | None = None) -> dict[str, Any]:
    """Move ``state``'s tensor leaves into ``tensors`` (by path); the rest, as a JSON tree. A
    tensor object met again (a tied weight under its second name) is stored once: loading
    takes a tied tensor under any of its names."""
    seen = set() if seen is None else seen
    rest: dict[str, Any] = {}
    for key, value in state.items():
        if SEPARATOR in key and _has_tensor(value):
            raise RecordError(f"record: state key {prefix + key!r} contains {SEPARATOR!r}, "
                              "which separates the keys of a tensor's path")
        if isinstance(value, Tensor):
            if id(value) not in seen:
                seen.add(id(value))
                tensors[prefix + key] = value.into_data()
        elif isinstance(value, TensorData):
            tensors[prefix + key] = value
        elif isinstance(value, Mapping) and _has_tensor(value):
            inner = _split(value, prefix + key + SEPARATOR, tensors, seen)
            if inner:
                rest[key] = inner
        else:
            rest[key] = value
    return rest


def to_record(obj: Stateful) -> Record:
    """The record of ``obj``'s state dict, of kind ``obj.record_kind``."""
    if not isinstance(obj, Stateful):
        raise RecordError(f"record: cannot record a {type(obj).__name__} (it needs "
                          "state_dict(), load_state_dict() and a record_kind)")
    tensors: dict[str, TensorData] = {}
    extra = _split(obj.state_dict(), "", tensors)
    return Record(obj.record_kind, tensors, extra)


def state_of(record: Record) -> dict[str, Any]:
    """The state dict a record holds: its JSON tree with the tensors put back at their paths."""
    state: dict[str, Any] = {key: _copy(value) for key, value in record.extra.items()}
    for name, data in record.tensors.items():
        *parents, leaf = name.split(SEPARATOR)
        node = state
        for key in parents:
            node = node.setdefault(key, {})
        node[leaf] = data
    return state


def _copy(value: Any) -> Any:
    """A copy of a JSON tree's dicts, so filling in tensors leaves the record as it was."""
    return {k: _copy(v) for k, v in value.items()} if isinstance(value, dict) else value


def from_record(obj: S, record: Record, source: str = "record") -> S:
    """Load ``record`` into ``obj``; RecordError when it does not fit (naming the entry)."""
    if record.kind != obj.record_kind:
        raise RecordError(f"{source}: holds a {record.kind} record, not a {obj.record_kind} one")
    try:
        obj.load_state_dict(state_of(record))
    except ValueError as exc:
        raise RecordError(f"{source}: {exc}") from exc
    return obj
