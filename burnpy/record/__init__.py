"""Record files: ``save(obj, path)`` / ``load(obj, path)`` for anything ``Stateful`` (modules,
optimizers, LR schedulers), stored as safetensors records (see ``burnpy.record.format``).

This package only writes and reads files: objects give and take their state through the
``Stateful`` protocol, so it imports neither ``burnpy.nn`` nor ``burnpy.optim``.
"""

from __future__ import annotations

from pathlib import Path

from burnpy.record.format import (
    Record,
    decode,
    encode,
    map_safetensors,
    read_record,
    read_safetensors,
    write_record,
)
from burnpy.record.state import S as _S
from burnpy.record.state import Stateful, from_record, state_of, to_record


def save(obj: Stateful, path: str | Path) -> Path:
    """Write ``obj``'s record to ``path`` (atomically); returns the path."""
    return write_record(path, to_record(obj))


def load(obj: _S, path: str | Path) -> _S:
    """Load the record at ``path`` into ``obj`` and return it."""
    return from_record(obj, read_record(path), str(path))


__all__ = ["Record", "Stateful", "decode", "encode", "from_record", "load", "map_safetensors",
           "read_record", "read_safetensors", "save", "state_of", "to_record", "write_record"]
