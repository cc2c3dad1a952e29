"""``Capture(B)``: record the protocol op calls a run makes, as a ``Graph`` to replay or export.

The recorder ``bp.compile`` and ``bp.onnx.export`` build on: every op runs on B as usual, and
while ``Capture(B).recording()`` is active its calls are appended to a graph of values (inputs,
constants, node outputs) and nodes (op name, arguments, results) that ``Graph.replay`` runs
again on B without any Tensor, Autodiff or module code.
"""

from burnpy.capture.backend import (
    Capture,
    CaptureBackend,
    check_values,
    recording_active,
    records,
    specialize,
)
from burnpy.capture.graph import CONSTANT, INPUT, NODE, Graph, Node, Ref, Value

__all__ = ["CONSTANT", "INPUT", "NODE", "Capture", "CaptureBackend", "Graph", "Node", "Ref",
           "Value", "check_values", "recording_active", "records", "specialize"]
