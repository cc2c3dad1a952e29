"""Descriptions of protocol op calls: the op's name, its tensors' shapes and dtypes, its scalars.

Any call of any protocol op can be described (``describe``): a tensor argument becomes a
``TensorDesc``, everything else (numbers, dims, shapes, dtypes, None) is a scalar argument.
The Fusion decorator uses these descriptions in its error messages and its op log; the fused
groups a fuser compiles are described in ``burnpy.ir.fused``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from burnpy.backend.dtype import DType
from burnpy.backend.primitives import Shape


class TensorDesc(NamedTuple):
    """A tensor as the IR sees it: its shape and element type (never its values)."""

    shape: Shape
    dtype: DType

    def __str__(self) -> str:
        return f"{self.dtype.value}{list(self.shape)}"


class OpDesc(NamedTuple):
    """One protocol op call: ``name`` (e.g. ``"float_add_scalar"``), the tensors it reads, the
    tensors it returns and its other arguments, in call order."""

    name: str
    inputs: tuple[TensorDesc, ...]
    outputs: tuple[TensorDesc, ...]
    scalars: tuple[object, ...]

    def __str__(self) -> str:
        ins = ", ".join([*map(str, self.inputs), *map(repr, self.scalars)])
        outs = ", ".join(map(str, self.outputs))
        return f"{self.name}({ins}) -> {outs}"


def describe(name: str, args: tuple[Any, ...], result: Any,
             tensor_desc: Callable[[Any], TensorDesc | None]) -> OpDesc:
    """The description of the call ``name(*args) -> result``.

    ``tensor_desc`` maps a value to its ``TensorDesc`` (None for a non-tensor); lists and
    tuples of tensors (``float_cat``'s inputs, ``sort_with_indices``'s results) are flattened.
    """
    inputs: list[TensorDesc] = []
    scalars: list[object] = []
    for arg in args:
        found = _tensors(arg, tensor_desc)
        if found:
            inputs.extend(found)
        else:
            scalars.append(arg)
    return OpDesc(name, tuple(inputs), tuple(_tensors(result, tensor_desc)), tuple(scalars))


def _tensors(value: Any, tensor_desc: Callable[[Any], TensorDesc | None]) -> list[TensorDesc]:
    if isinstance(value, list | tuple):
        return [d for v in value for d in _tensors(v, tensor_desc)]
    desc = tensor_desc(value)
    return [] if desc is None else [desc]
