"""``OnnxModule``: an interpreter running an ONNX graph on burnpy Tensors, as a ``Module``.

The graph's nodes run in topological order over a table of values by name; each node runs
the op function the registry gives for the model's opset of its domain, on burnpy's public
tensor ops, so the module works on every backend and trains under ``Autodiff``. Float
initializers are the module's parameters (named after the graph, sanitised into attribute
names), integer and bool ones its buffers.
"""

from __future__ import annotations

import re
from collections import ChainMap
from collections.abc import Iterator, MutableMapping, Sequence
from typing import TYPE_CHECKING

import onnx
from onnx import AttributeProto, GraphProto, ModelProto, NodeProto

from burnpy.backend.device import Device
from burnpy.nn.module import Module
from burnpy.onnx.attributes import Attributes, tensor_to_numpy
from burnpy.onnx.dtypes import check_array_dtype, for_backend
from burnpy.onnx.errors import OnnxError, UnsupportedOnnxError, node_label
from burnpy.onnx.registry import OpContext, OpImpl, lookup
from burnpy.tensor import Tensor

if TYPE_CHECKING:
    from burnpy.backend import Backend

Values = MutableMapping[str, "Tensor | None"]


def _attribute_name(graph_name: str, taken: set[str]) -> str:
    """A module attribute name for an initializer: letters, digits and ``_``, not starting
    with a digit or ``_`` (``_`` names are private to a Module), unique in ``taken``."""
    name = re.sub(r"\W", "_", graph_name).strip("_") or "param"
    if name[0].isdigit():
        name = "p" + name
    unique, n = name, 1
    while unique in taken:
        n += 1
        unique = f"{name}_{n}"
    taken.add(unique)
    return unique


def _topological(nodes: Sequence[NodeProto], known: set[str]) -> list[NodeProto]:
    """``nodes`` in an order where each runs after the producers of its inputs (the given
    order when it already is one, as ONNX requires); names in ``known`` are available."""
    available = set(known)
    pending = list(nodes)
    ordered: list[NodeProto] = []
    while pending:
        rest = []
        for node in pending:
            if all(not name or name in available for name in node.input):
                ordered.append(node)
                available.update(node.output)
            else:
                rest.append(node)
        if len(rest) == len(pending):
            # Inputs from an enclosing scope are only known when the subgraph runs.
            ordered.extend(rest)
            break
        pending = rest
    return ordered


def _names_read(node: NodeProto) -> Iterator[str]:
    """The value names ``node`` reads: its inputs, and those its subgraphs read (a subgraph
    sees the enclosing scope's values by name)."""
    yield from node.input
    for attr in node.attribute:
        for graph in (attr.g,) if attr.type == AttributeProto.GRAPH else attr.graphs:
            for inner in graph.node:
                yield from _names_read(inner)


def _release_after(nodes: Sequence[NodeProto], keep: set[str]) -> list[tuple[str, ...]]:
    """For each node, the values (not in ``keep``) that no later node reads, to drop once it
    has run: intermediates are freed as the graph goes, as a runtime's memory planner does,
    so the allocator reuses warm memory instead of mapping fresh pages for every op."""
    last: dict[str, int] = {}
    for i, node in enumerate(nodes):
        for name in _names_read(node):
            last[name] = i
        for name in node.output:
            last.setdefault(name, i)  # read by no node: dropped once made
    release: list[list[str]] = [[] for _ in nodes]
    for name, i in last.items():
        if name and name not in keep:
            release[i].append(name)
    return [tuple(names) for names in release]


class PreparedNode:
    """A node resolved once for repeated runs (see ``GraphRunner.prepare``)."""

    __slots__ = ("attrs", "constant", "impl", "inputs", "kept", "label", "opset", "outputs")

    def __init__(self, impl: OpImpl, attrs: Attributes, label: str, opset: int,
                 inputs: tuple[str, ...], outputs: tuple[str, ...], constant: bool) -> None:
        self.impl = impl
        self.attrs = attrs
        self.label = label
        self.opset = opset
        self.inputs = inputs
        self.outputs = outputs
        #: A Constant node (no inputs): its outputs, once made, are ``kept`` for later runs.
        self.constant = constant
        self.kept: list[Tensor | None] | None = None


class GraphRunner:
    """Runs ONNX graphs (the main graph and the subgraphs of control-flow ops) on one backend,
    with the model's opset per domain."""

    def __init__(self, backend: type[Backend], device: Device | None,
                 opsets: dict[str, int]) -> None:
        self.backend = backend
        self.device = device
        self.opsets = opsets

    def prepare(self, node: NodeProto) -> PreparedNode:
        """What running ``node`` needs that its inputs do not change: the implementation,
        label, parsed attributes and value names (read once: protobuf fields are slow)."""
        domain = "" if node.domain == "ai.onnx" else node.domain
        opset = self.opsets.get(domain)
        label = node_label(node.name, node.op_type, domain, opset or 0)
        if opset is None:
            raise OnnxError(f"{label}: the model imports no opset of domain {domain!r}")
        impl = lookup(domain, node.op_type, opset)
        if impl is None:
            raise UnsupportedOnnxError(f"{label}: operator {node.op_type} is not supported")
        attrs = Attributes(list(node.attribute), label)
        extra = attrs.names() - impl.attrs
        if extra:
            raise UnsupportedOnnxError(f"{label}, attribute {sorted(extra)[0]!r}: the "
                                       "attribute is not supported")
        constant = domain == "" and node.op_type == "Constant" and not node.input
        return PreparedNode(impl, attrs, label, opset, tuple(node.input), tuple(node.output),
                            constant)

    def run_node(self, node: NodeProto, values: Values) -> None:
        """Run one node, reading its inputs from and writing its outputs to ``values``."""
        self.run_prepared(self.prepare(node), values)

    def run_prepared(self, node: PreparedNode, values: Values) -> None:
        """Run one prepared node, reading its inputs from and writing its outputs to
        ``values``; a Constant node's outputs are made once and kept."""
        label = node.label
        outputs = node.kept
        if outputs is None:
            inputs: list[Tensor | None] = []
            for name in node.inputs:
                if not name:
                    inputs.append(None)
                    continue
                if name not in values:
                    raise OnnxError(f"{label}: input {name!r} is not produced by any earlier "
                                    "node")
                inputs.append(values[name])
            while inputs and inputs[-1] is None:
                inputs.pop()

            def subgraph(graph: GraphProto,
                         feeds: Sequence[Tensor | None]) -> list[Tensor | None]:
                return self.run_graph(graph, feeds, values)

            ctx = OpContext(self.backend, self.device, label, node.opset, len(node.outputs),
                            subgraph)
            result = node.impl.fn(ctx, inputs, node.attrs)
            outputs = [result] if isinstance(result, Tensor) else list(result)
            if node.constant:
                node.kept = outputs
        for i, name in enumerate(node.outputs):
            if not name:
                continue
            if i >= len(outputs) or outputs[i] is None:
                raise UnsupportedOnnxError(f"{label}: output {i} ({name!r}) is not supported")
            values[name] = outputs[i]

    def run_graph(self, graph: GraphProto, feeds: Sequence[Tensor | None],
                  outer: Values) -> list[Tensor | None]:
        """Run a subgraph with ``feeds`` as its inputs, seeing the enclosing ``outer`` values;
        returns its outputs in order."""
        if len(feeds) != len(graph.input):
            raise OnnxError(f"subgraph {graph.name!r}: {len(graph.input)} inputs, got "
                            f"{len(feeds)}")
        values: Values = ChainMap({}, outer)
        for proto in graph.initializer:
            values[proto.name] = self.constant(proto, f"subgraph {graph.name!r}")
        for proto, value in zip(graph.input, feeds, strict=True):
            values[proto.name] = value
        for node in _topological(graph.node, set(values)):
            self.run_node(node, values)
        return [values[o.name] for o in graph.output]

    def constant(self, proto: onnx.TensorProto, where: str) -> Tensor:
        """An initializer or constant as a tensor on this backend (int64 as its int dtype
        where it has no int64)."""
        array = tensor_to_numpy(proto)
        label = f"{where}, tensor {proto.name!r}"
        check_array_dtype(array, label)
        return Tensor.from_data(for_backend(array, self.backend, self.device, label),
                                backend=self.backend, device=self.device)


class OnnxModule(Module):
    """An ONNX model as a burnpy ``Module``: ``module(*inputs)`` takes tensors in the graph's
    input order and returns a tensor (one output) or a tuple in the graph's output order.

    ``input_names`` and ``output_names`` are the graph's; ``parameter_names`` maps each
    initializer's graph name to the attribute holding it."""

    def __init__(self, model: ModelProto, backend: type[Backend],
                 device: Device | None = None) -> None:
        graph = model.graph
        opsets: dict[str, int] = {}
        for imp in model.opset_import:
            opsets["" if imp.domain == "ai.onnx" else imp.domain] = int(imp.version)
        self._runner = GraphRunner(backend, device, opsets)
        self._graph = graph
        if graph.sparse_initializer:
            raise UnsupportedOnnxError(f"graph {graph.name!r}: sparse initializer "
                                       f"{graph.sparse_initializer[0].values.name!r} is not "
                                       "supported")
        taken: set[str] = set()
        self.parameter_names: dict[str, str] = {}
        for proto in graph.initializer:
            attr = _attribute_name(proto.name, taken)
            value = self._runner.constant(proto, f"graph {graph.name!r}")
            if value.kind == "float":
                setattr(self, attr, value)
            else:
                self.register_buffer(attr, value)
            self.parameter_names[proto.name] = attr
        self.input_names = [i.name for i in graph.input if i.name not in self.parameter_names]
        self.output_names = [o.name for o in graph.output]
        self._nodes = _topological(graph.node, set(self.input_names) | set(self.parameter_names))
        self._prepared: list[PreparedNode] | None = None
        self._release = _release_after(self._nodes, set(self.output_names))

    def forward(self, *inputs: Tensor) -> Tensor | tuple[Tensor | None, ...]:
        """Run the graph on ``inputs`` (in the graph's input order)."""
        if len(inputs) != len(self.input_names):
            raise OnnxError(f"OnnxModule({self._graph.name!r}): the graph takes "
                            f"{len(self.input_names)} inputs {self.input_names}, got "
                            f"{len(inputs)}")
        values: Values = {graph_name: getattr(self, attr)
                          for graph_name, attr in self.parameter_names.items()}
        for name, value in zip(self.input_names, inputs, strict=True):
            if not isinstance(value, Tensor):
                raise OnnxError(f"OnnxModule({self._graph.name!r}): input {name!r} must be a "
                                f"Tensor, got {type(value).__name__}")
            values[name] = value
        if self._prepared is None:  # resolved on the first call, which raises what a node lacks
            self._prepared = [self._runner.prepare(node) for node in self._nodes]
        for node, dead in zip(self._prepared, self._release, strict=True):
            self._runner.run_prepared(node, values)
            for name in dead:  # its last reader ran: its memory goes back for reuse
                values.pop(name, None)
        missing = [name for name in self.output_names if name not in values]
        if missing:
            raise OnnxError(f"OnnxModule({self._graph.name!r}): no node produces the "
                            f"outputs {missing}")
        outputs = tuple(values[name] for name in self.output_names)
        if len(outputs) == 1 and outputs[0] is not None:
            return outputs[0]
        return outputs
