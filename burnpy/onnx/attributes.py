"""A node's attributes, parsed once into Python values with typed getters.

Ops read ``attrs.int("axis", 0)``, ``attrs.ints("perm")``, ``attrs.tensor("value")``...; a
getter checks the attribute's ONNX type, so a malformed model fails naming the attribute.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator

import numpy as np
from onnx import AttributeProto, GraphProto, TensorProto, numpy_helper

from burnpy.onnx.errors import OnnxError

_KIND_NAMES: dict[builtins.int, str] = {
    AttributeProto.INT: "int", AttributeProto.INTS: "ints", AttributeProto.FLOAT: "float",
    AttributeProto.FLOATS: "floats", AttributeProto.STRING: "string",
    AttributeProto.STRINGS: "strings", AttributeProto.TENSOR: "tensor",
    AttributeProto.GRAPH: "graph", AttributeProto.GRAPHS: "graphs",
    AttributeProto.TENSORS: "tensors", AttributeProto.SPARSE_TENSOR: "sparse tensor",
    AttributeProto.TYPE_PROTO: "type", AttributeProto.TYPE_PROTOS: "types",
}


def tensor_to_numpy(proto: TensorProto) -> np.ndarray:
    """A ``TensorProto``'s values as a NumPy array (external data already loaded)."""
    return np.asarray(numpy_helper.to_array(proto))


class Attributes:
    """The attributes of one node by name; ``where`` names the node in errors."""

    __slots__ = ("_protos", "where")

    def __init__(self, protos: Iterator[AttributeProto] | list[AttributeProto],
                 where: str) -> None:
        self._protos = {a.name: a for a in protos}
        self.where = where

    def names(self) -> frozenset[str]:
        """The names of the attributes the node sets."""
        return frozenset(self._protos)

    def __contains__(self, name: str) -> bool:
        return name in self._protos

    def _get(self, name: str, kind: builtins.int) -> AttributeProto | None:
        proto = self._protos.get(name)
        if proto is None:
            return None
        if proto.ref_attr_name:
            raise OnnxError(f"{self.where}: attribute {name!r} refers to a function attribute "
                            f"{proto.ref_attr_name!r} outside a function body")
        if proto.type != kind:
            raise OnnxError(f"{self.where}: attribute {name!r} is "
                            f"{_KIND_NAMES.get(proto.type, str(proto.type))}, expected "
                            f"{_KIND_NAMES[kind]}")
        return proto

    def int(self, name: str, default: builtins.int) -> builtins.int:
        """An INT attribute, or ``default`` when absent."""
        proto = self._get(name, AttributeProto.INT)
        return default if proto is None else builtins.int(proto.i)

    def float(self, name: str, default: builtins.float) -> builtins.float:
        """A FLOAT attribute, or ``default`` when absent."""
        proto = self._get(name, AttributeProto.FLOAT)
        return default if proto is None else builtins.float(proto.f)

    def string(self, name: str, default: str) -> str:
        """A STRING attribute decoded as UTF-8, or ``default`` when absent."""
        proto = self._get(name, AttributeProto.STRING)
        return default if proto is None else proto.s.decode("utf-8")

    def ints(self, name: str) -> list[builtins.int] | None:
        """An INTS attribute, or None when absent."""
        proto = self._get(name, AttributeProto.INTS)
        return None if proto is None else [builtins.int(v) for v in proto.ints]

    def floats(self, name: str) -> list[builtins.float] | None:
        """A FLOATS attribute, or None when absent."""
        proto = self._get(name, AttributeProto.FLOATS)
        return None if proto is None else [builtins.float(v) for v in proto.floats]

    def strings(self, name: str) -> list[str] | None:
        """A STRINGS attribute decoded as UTF-8, or None when absent."""
        proto = self._get(name, AttributeProto.STRINGS)
        return None if proto is None else [v.decode("utf-8") for v in proto.strings]

    def tensor(self, name: str) -> np.ndarray | None:
        """A TENSOR attribute as a NumPy array, or None when absent."""
        proto = self._get(name, AttributeProto.TENSOR)
        return None if proto is None else tensor_to_numpy(proto.t)

    def graph(self, name: str) -> GraphProto | None:
        """A GRAPH attribute (a subgraph of If, Loop, Scan), or None when absent."""
        proto = self._get(name, AttributeProto.GRAPH)
        return None if proto is None else proto.g
