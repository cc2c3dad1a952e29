"""Model files: ``save(obj, path)`` / ``load(obj, path)`` for modules, optimizers and LR
schedulers, stored as safetensors records (see ``burnpy.record.format``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from burnpy.backend.errors import RecordError
from burnpy.nn.module import Module, StateDictError
from burnpy.optim.lr_scheduler import LrScheduler
from burnpy.optim.optimizer import Optimizer, OptimizerStateError
from burnpy.record.format import Record, decode, encode, read_record, write_record
from burnpy.tensor import Tensor

T = TypeVar("T", Module, Optimizer, LrScheduler)


def to_record(obj: Module | Optimizer | LrScheduler) -> Record:
    """The record of a module (its state dict), an optimizer (buffers, steps) or a scheduler."""
    if isinstance(obj, Module):
        return Record("module", {n: t.into_data() for n, t in obj.state_dict().items()},
                      {"type": type(obj).__name__})
    if isinstance(obj, Optimizer):
        state = obj.state_dict()
        tensors = {f"{name}/{key}": t.into_data()
                   for name, buffers in state["state"].items() for key, t in buffers.items()}
        return Record("optimizer", tensors, {"type": state["type"],
                                             "hyperparameters": state["hyperparameters"],
                                             "steps": state["steps"]})
    if isinstance(obj, LrScheduler):
        return Record("scheduler", {}, obj.state_dict())
    raise RecordError(f"record: cannot record a {type(obj).__name__} (modules, optimizers and "
                      "LR schedulers can be recorded)")


def from_record(obj: T, record: Record, source: str = "record") -> T:
    """Load ``record`` into ``obj``; RecordError when it does not fit (naming the entry)."""
    expected = ("module" if isinstance(obj, Module) else
                "optimizer" if isinstance(obj, Optimizer) else "scheduler")
    if record.kind != expected:
        raise RecordError(f"{source}: holds a {record.kind} record, not a {expected} one")
    try:
        if isinstance(obj, Module):
            obj.load_state_dict(record.tensors)
        elif isinstance(obj, Optimizer):
            state: dict[str, dict[str, Any]] = {}
            for key, data in record.tensors.items():
                name, _, buffer = key.rpartition("/")
                state.setdefault(name, {})[buffer] = Tensor.from_data(data)
            obj.load_state_dict({**record.extra, "state": state})
        else:
            obj.load_state_dict(record.extra)
    except (StateDictError, OptimizerStateError, ValueError) as exc:
        raise RecordError(f"{source}: {exc}") from exc
    return obj


def save(obj: Module | Optimizer | LrScheduler, path: str | Path) -> Path:
    """Write ``obj``'s record to ``path`` (atomically); returns the path."""
    return write_record(path, to_record(obj))


def load(obj: T, path: str | Path) -> T:
    """Load the record at ``path`` into ``obj`` and return it."""
    return from_record(obj, read_record(path), str(path))


__all__ = ["Record", "decode", "encode", "from_record", "load", "read_record", "save",
           "to_record", "write_record"]
