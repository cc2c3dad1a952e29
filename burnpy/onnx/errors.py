"""The errors of ONNX import: a malformed model, or a node burnpy does not implement.

Each names the node (its name, op type and opset) and, where one is at fault, the attribute,
so an unsupported model says exactly what it needs instead of running to a wrong result.
"""

from __future__ import annotations

from burnpy.backend.errors import BurnpyError


class OnnxError(BurnpyError, ValueError):
    """A model burnpy cannot run as given: a missing value, a bad attribute or input."""


class UnsupportedOnnxError(OnnxError):
    """An operator, attribute, attribute value or dtype that burnpy does not implement (yet)."""


def node_label(name: str, op_type: str, domain: str, opset: int) -> str:
    """``Conv node 'conv1' (opset 13)``: how every message names a node."""
    op = f"{domain}.{op_type}" if domain else op_type
    return f"{op} node {name!r} (opset {opset})"
