"""``OnnxModule``: an interpreter running an ONNX graph on burnpy Tensors, as a ``Module``.

The graph's nodes run in topological order over a table of values by name; each node runs
the op function the registry gives for the model's opset of its domain, on burnpy's public
tensor ops, so the module works on every backend and trains under ``Autodiff``. Float
initializers are the module's parameters (named after the graph, sanitised into attribute
names), integer and bool ones its buffers.

Values the graph computes from shapes and constants alone (``Shape``, ``Constant`` and the
integer initializers, and every node reading only such values: the exporter's
``Shape -> Gather -> Concat -> Reshape`` chains) are folded: those nodes run on the host
backend (the model's backend under its decorators), each kept with its last inputs and
outputs and run again only when an input changes (a shape, a re-pointed initializer). A node
reading them on the device gets each as a tensor uploaded once, whose host copy
``OpContext.ints`` reads instead of the device: no device value is read for a shape, so a
``bp.compile`` recording of the module stays one graph (its shapes, and the integer
initializers read as shapes, specialize it) and eager calls skip the shape arithmetic.
"""

from __future__ import annotations

import math
import re
import weakref
from collections import ChainMap
from collections.abc import Iterator, MutableMapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx
from onnx import AttributeProto, GraphProto, ModelProto, NodeProto

from burnpy.backend.device import Device
from burnpy.capture import specialize
from burnpy.nn.module import Module
from burnpy.onnx.attributes import Attributes, tensor_to_numpy
from burnpy.onnx.dtypes import check_array_dtype, for_backend
from burnpy.onnx.errors import OnnxError, UnsupportedOnnxError, node_label
from burnpy.onnx.ops.nn import gelu, matmul_add
from burnpy.onnx.registry import HostValues, OpContext, OpFn, OpImpl, lookup
from burnpy.tensor import Tensor

if TYPE_CHECKING:
    from burnpy.backend import Backend

Values = MutableMapping[str, "Tensor | None"]

#: Ops never folded: each run draws new random values (a fold would repeat one draw).
_RANDOM = frozenset({"Bernoulli", "Dropout", "Multinomial", "RandomNormal", "RandomNormalLike",
                     "RandomUniform", "RandomUniformLike"})
#: Ops whose outputs depend on their input's shape alone: folded whatever the input.
_SHAPE_ONLY = frozenset({"Shape", "Size"})


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

    __slots__ = ("attrs", "impl", "inputs", "label", "opset", "outputs")

    def __init__(self, impl: OpImpl, attrs: Attributes, label: str, opset: int,
                 inputs: tuple[str, ...], outputs: tuple[str, ...]) -> None:
        self.impl = impl
        self.attrs = attrs
        self.label = label
        self.opset = opset
        self.inputs = inputs
        self.outputs = outputs


def _named(node: PreparedNode, outputs: list[Tensor | None]) -> Iterator[tuple[str, Tensor]]:
    """Each output the node names, with its value (``UnsupportedOnnxError`` for one the op
    does not make)."""
    for i, name in enumerate(node.outputs):
        if not name:
            continue
        value = outputs[i] if i < len(outputs) else None
        if value is None:
            raise UnsupportedOnnxError(f"{node.label}: output {i} ({name!r}) is not supported")
        yield name, value


class _Fusion:
    """Nodes the interpreter runs as one op: ``nodes`` (their positions ``removed``, the last
    one's place taken), replaced by ``fn`` reading ``inputs`` and making the last node's
    outputs."""

    __slots__ = ("fn", "inputs", "nodes", "removed")

    def __init__(self, fn: OpFn, removed: Sequence[int], nodes: Sequence[NodeProto],
                 inputs: Sequence[str]) -> None:
        self.fn = fn
        self.removed = tuple(removed)
        self.nodes = tuple(nodes)
        self.inputs = tuple(inputs)


def _is_op(node: NodeProto, op_type: str) -> bool:
    return node.op_type == op_type and node.domain in ("", "ai.onnx")


def _fusions(nodes: Sequence[NodeProto], folds: Sequence[bool],
             outputs: set[str]) -> list[_Fusion]:
    """The node groups run as one op, each intermediate value read by the group alone and no
    graph output, none folded: an ``Add`` of a ``MatMul``'s product (``matmul_add``: a linear
    op with its bias), and the exporters' erf GELU ``x * (erf(x / sqrt(2)) + 1) * 0.5``
    (``gelu``), its constants ``Constant`` nodes."""
    readers: dict[str, list[int]] = {}
    producer: dict[str, int] = {}
    constants: dict[str, float] = {}
    for position, node in enumerate(nodes):
        for name in dict.fromkeys(_names_read(node)):
            readers.setdefault(name, []).append(position)
        for name in node.output:
            producer[name] = position
        if _is_op(node, "Constant") and len(node.attribute) == 1 and node.attribute[0].name == \
                "value":
            array = tensor_to_numpy(node.attribute[0].t)
            if array.size == 1 and array.dtype.kind == "f":
                constants[node.output[0]] = float(array.reshape(()))

    def only_reader(name: str) -> NodeProto | None:
        """The node reading ``name`` if it is the only one and ``name`` no graph output."""
        found = readers.get(name, [])
        if len(found) != 1 or name in outputs or folds[found[0]]:
            return None
        return nodes[found[0]]

    def other(node: NodeProto, name: str) -> str | None:
        """The other input of a two-input node reading ``name`` once."""
        if len(node.input) != 2 or list(node.input).count(name) != 1:
            return None
        return node.input[1] if node.input[0] == name else node.input[0]

    def scalar(name: str | None, value: float) -> bool:
        return name in constants and abs(constants[name] - value) <= 1e-6 * abs(value)

    found: list[_Fusion] = []
    for position, node in enumerate(nodes):
        if folds[position] or len(node.output) != 1:
            continue
        out = node.output[0]
        if _is_op(node, "MatMul"):
            add = only_reader(out)
            bias = None if add is None or not _is_op(add, "Add") else other(add, out)
            if add is not None and bias is not None:
                found.append(_Fusion(matmul_add, (position, producer[add.output[0]]),
                                     (node, add), [*node.input, bias]))
        elif _is_op(node, "Erf"):
            div = nodes[producer[node.input[0]]] if node.input[0] in producer else None
            if div is None or not _is_op(div, "Div") or only_reader(div.output[0]) is not node \
                    or not scalar(div.input[1], math.sqrt(2.0)):
                continue
            x = div.input[0]
            chain = [div, node]
            for op_type, operand, value in (("Add", None, 1.0), ("Mul", x, None),
                                            ("Mul", None, 0.5)):
                step = only_reader(chain[-1].output[0])
                second = None if step is None or not _is_op(step, op_type) else other(
                    step, chain[-1].output[0])
                if second is None or not (second == operand if value is None
                                          else scalar(second, value)):
                    break
                assert step is not None
                chain.append(step)
            else:
                found.append(_Fusion(gelu, [producer[n.output[0]] for n in chain], chain, [x]))
    return found


def _foldable(node: NodeProto, folded: set[str]) -> bool:
    """Whether ``node``'s outputs follow from shapes and constants alone (the names in
    ``folded``): a standard, non-random op without subgraphs, reading only such names (a
    ``Shape`` or ``Size`` whatever its input)."""
    if node.domain not in ("", "ai.onnx") or node.op_type in _RANDOM:
        return False
    if any(attr.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS)
           for attr in node.attribute):
        return False
    return node.op_type in _SHAPE_ONLY or all(not n or n in folded for n in node.input)


class _Made:
    """One run of a folded node on the host backend: the inputs it ran on (host tensors by
    identity, or a shape for ``Shape``/``Size``), its host outputs and their device copies,
    each made when a device node first reads it."""

    __slots__ = ("device", "key", "outputs")

    def __init__(self, key: list[Any], outputs: list[Tensor | None]) -> None:
        self.key = key
        self.outputs = outputs
        self.device: list[Tensor | None] = [None] * len(outputs)

    def upload(self, index: int, runner: GraphRunner) -> Tensor:
        """Output ``index`` on the model's backend, uploaded once, its host copy kept."""
        copy = self.device[index]
        if copy is None:
            host = self.outputs[index]
            assert host is not None
            data = host.into_data()
            copy = Tensor.from_data(data, backend=runner.backend, device=runner.device)
            runner.known.add(copy, data.array)
            self.device[index] = copy
        return copy


class _Fold:
    """A folded node: its last run (``_Made``, replaced whole, so a call running beside
    another in a second thread reads a consistent one), run again only when an input
    changed."""

    __slots__ = ("last", "shape_only")

    def __init__(self, shape_only: bool) -> None:
        self.shape_only = shape_only
        self.last: _Made | None = None

    def run(self, node: PreparedNode, hosts: dict[str, Tensor], values: Values,
            runner: GraphRunner) -> _Made:
        """The node's run for this call's inputs: the last one if they are the same."""
        last = self.last
        if self.shape_only:
            x = hosts.get(node.inputs[0])
            if x is None:
                x = values[node.inputs[0]]
            assert x is not None
            inputs: list[Tensor | None] = [x]
            key: list[Any] = [x.shape]
            if last is not None and last.key == key:
                return last
        else:
            inputs = [hosts[name] if name else None for name in node.inputs]
            key = inputs
            if last is not None and len(last.key) == len(key) and all(
                    a is b for a, b in zip(last.key, key, strict=True)):
                return last
        made = _Made(key, runner.call(node, inputs, runner.host, {}))
        self.last = made
        if last is not None:
            for copy in last.device:
                if copy is not None:
                    runner.known.drop(copy)
        return made


class _Step:
    """One node of the main graph as ``OnnxModule.forward`` runs it: folded (``fold``) or run
    on the device after uploading the folded values it reads (``uploads``: name, producer's
    position, output index); then the values no later node reads are dropped (``dead``)."""

    __slots__ = ("dead", "fold", "node", "uploads")

    def __init__(self, node: PreparedNode, fold: _Fold | None,
                 uploads: tuple[tuple[str, int, int], ...], dead: tuple[str, ...]) -> None:
        self.node = node
        self.fold = fold
        self.uploads = uploads
        self.dead = dead


class _Source:
    """An integer or bool initializer as a folded value: its host copy, valid while the
    module's tensor keeps the primitive it was read from."""

    __slots__ = ("attr", "host", "primitive")

    def __init__(self, attr: str, primitive: Any, host: Tensor) -> None:
        self.attr = attr
        self.primitive = primitive
        self.host = host

    def current(self, module: Module, runner: GraphRunner) -> Tensor:
        """The host copy of the initializer's present value (read again once re-pointed); a
        recording bakes in what is computed from it, so its graph keeps to this primitive."""
        tensor = getattr(module, self.attr)
        specialize(tensor.backend, tensor.kind, tensor.primitive)
        if tensor.primitive is not self.primitive or getattr(tensor, "_shares", None) is not None:
            data = tensor.into_data()
            self.host = Tensor.from_data(data, backend=runner.host, device=runner.device)
            self.primitive = tensor.primitive
            runner.known.add(tensor, data.array)
        return self.host


class GraphRunner:
    """Runs ONNX graphs (the main graph and the subgraphs of control-flow ops) on one backend,
    with the model's opset per domain."""

    def __init__(self, backend: type[Backend], device: Device | None,
                 opsets: dict[str, int]) -> None:
        self.backend = backend
        self.device = device
        self.opsets = opsets
        #: Where folded nodes run: ``backend`` under its decorators (Capture, Fusion...),
        #: whose ops no recording sees.
        self.host = backend
        while hasattr(self.host, "InnerBackend"):
            self.host = self.host.InnerBackend
        #: Host copies of the device tensors holding folded values and integer initializers.
        self.known = HostValues()

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
        return PreparedNode(impl, attrs, label, opset, tuple(node.input), tuple(node.output))

    def run_node(self, node: NodeProto, values: Values) -> None:
        """Run one node, reading its inputs from and writing its outputs to ``values``."""
        self.run_prepared(self.prepare(node), values)

    def run_prepared(self, node: PreparedNode, values: Values) -> None:
        """Run one prepared node, reading its inputs from and writing its outputs to
        ``values``."""
        label = node.label
        inputs: list[Tensor | None] = []
        for name in node.inputs:
            if not name:
                inputs.append(None)
                continue
            if name not in values:
                raise OnnxError(f"{label}: input {name!r} is not produced by any earlier node")
            inputs.append(values[name])
        values.update(_named(node, self.call(node, inputs, self.backend, values)))

    def call(self, node: PreparedNode, inputs: list[Tensor | None], backend: type[Backend],
             values: Values) -> list[Tensor | None]:
        """``node``'s op on ``inputs`` (trailing omitted ones dropped) with ``backend`` making
        its constants, subgraphs seeing ``values``; its outputs as a list."""
        while inputs and inputs[-1] is None:
            inputs.pop()

        def subgraph(graph: GraphProto, feeds: Sequence[Tensor | None]) -> list[Tensor | None]:
            return self.run_graph(graph, feeds, values)

        ctx = OpContext(backend, self.device, node.label, node.opset, len(node.outputs),
                        subgraph, self.known)
        result = node.impl.fn(ctx, inputs, node.attrs)
        return [result] if isinstance(result, Tensor) else list(result)

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


class _Interpreter:
    """How an ``OnnxModule`` runs its graph: the runner, the nodes as run (each fused group as
    one node in its last node's place, ``fused`` keeping the group), which are folded and
    what they make, the integer initializers as folded values, and the prepared steps with
    their caches. Not the module's state (its parameters and buffers are): it is kept beside
    the module (``_INTERPRETERS``), not among its attributes, so a walk of the module's state
    (``bp.compile``'s) meets only that; a copy of the module builds its own when first
    called."""

    __slots__ = ("folded_outputs", "folds", "fused", "nodes", "runner", "sources", "steps")

    def __init__(self, module: OnnxModule, runner: GraphRunner) -> None:
        self.runner = runner
        self.sources: dict[str, _Source] = {}
        for name, attr in module.parameter_names.items():
            tensor = getattr(module, attr)
            if tensor.kind != "float":
                data = tensor.into_data()
                runner.known.add(tensor, data.array)
                self.sources[name] = _Source(attr, tensor.primitive, Tensor.from_data(
                    data, backend=runner.host, device=runner.device))
        graph = module._graph
        nodes = _topological(graph.node, set(module.input_names) | set(module.parameter_names))
        folded = set(self.sources)
        folds: list[bool] = []
        for node in nodes:
            folds.append(_foldable(node, folded))
            if folds[-1]:
                folded.update(node.output)
        self.nodes: list[NodeProto] = []
        self.folds: list[bool] = []
        self.fused: dict[int, _Fusion] = {}
        fusions: dict[int, _Fusion] = {}
        removed: set[int] = set()
        for group in _fusions(nodes, folds, set(module.output_names)):
            if removed.isdisjoint(group.removed):  # a node joins one group at most
                fusions[group.removed[-1]] = group
                removed.update(group.removed)
        for position, (node, fold) in enumerate(zip(nodes, folds, strict=True)):
            fusion = fusions.get(position)
            if fusion is not None:
                self.fused[len(self.nodes)] = fusion
                node = onnx.helper.make_node(node.op_type, fusion.inputs, node.output,
                                             name=node.name)
            elif position in removed:
                continue
            self.nodes.append(node)
            self.folds.append(fold)
        #: The values that follow from shapes and constants: made by folded nodes.
        self.folded_outputs: dict[str, tuple[int, int]] = {}
        for position, (node, fold) in enumerate(zip(self.nodes, self.folds, strict=True)):
            if fold:
                for i, name in enumerate(node.output):
                    if name:
                        self.folded_outputs[name] = (position, i)
        self.steps: list[_Step] | None = None

    def prepare(self, position: int) -> PreparedNode:
        """Node ``position`` resolved for running (a fused group as its one op, each of its
        nodes resolved first: an unsupported one raises as it would alone)."""
        fusion = self.fused.get(position)
        if fusion is None:
            return self.runner.prepare(self.nodes[position])
        parts = [self.runner.prepare(node) for node in fusion.nodes]
        label = " + ".join(part.label for part in parts)
        impl = OpImpl("", "+".join(node.op_type for node in fusion.nodes), parts[-1].opset,
                      fusion.fn, frozenset())
        return PreparedNode(impl, Attributes([], label), label, parts[-1].opset,
                            fusion.inputs, parts[-1].outputs)

    def plan(self, output_names: list[str]) -> list[_Step]:
        """Each node prepared (raising what one lacks), folded or with the folded values it
        reads uploaded, and the values to drop after it."""
        prepared = [self.prepare(position) for position in range(len(self.nodes))]
        folds = [_Fold(node.op_type in _SHAPE_ONLY) if fold else None
                 for node, fold in zip(self.nodes, self.folds, strict=True)]
        release = _release_after(self.nodes, set(output_names))
        steps = []
        for node, prep, fold, dead in zip(self.nodes, prepared, folds, release, strict=True):
            uploads: list[tuple[str, int, int]] = []
            if fold is None:
                for name in dict.fromkeys(_names_read(node)):
                    made = self.folded_outputs.get(name)
                    if made is not None:
                        uploads.append((name, *made))
            steps.append(_Step(prep, fold, tuple(uploads), dead))
        return steps

    def run(self, module: OnnxModule, values: Values) -> None:
        """Run the graph over ``values`` (parameters, buffers and inputs by graph name),
        leaving the graph's outputs in it."""
        if self.steps is None:  # resolved on the first call, which raises what a node lacks
            self.steps = self.plan(module.output_names)
        runner = self.runner
        hosts = {name: source.current(module, runner) for name, source in self.sources.items()}
        runs: dict[int, _Made] = {}  # this call's run of each folded node, by position
        for position, step in enumerate(self.steps):
            node, fold = step.node, step.fold
            if fold is not None:
                made = runs[position] = fold.run(node, hosts, values, runner)
                hosts.update(_named(node, made.outputs))
            else:
                for name, producer, index in step.uploads:
                    if name not in values:
                        values[name] = runs[producer].upload(index, runner)
                runner.run_prepared(node, values)
            for name in step.dead:  # its last reader ran: its memory goes back for reuse
                values.pop(name, None)
        for name in module.output_names:
            found = self.folded_outputs.get(name)
            if found is not None:
                values[name] = runs[found[0]].upload(found[1], runner)


#: Each module's interpreter, beside it (see ``_Interpreter``).
_INTERPRETERS: weakref.WeakKeyDictionary[OnnxModule, _Interpreter] = (
    weakref.WeakKeyDictionary())


class OnnxModule(Module):
    """An ONNX model as a burnpy ``Module``: ``module(*inputs)`` takes tensors in the graph's
    input order and returns a tensor (one output) or a tuple in the graph's output order.

    ``input_names`` and ``output_names`` are the graph's; ``parameter_names`` maps each
    initializer's graph name to the attribute holding it."""

    def __init__(self, model: ModelProto, backend: type[Backend],
                 device: Device | None = None) -> None:
        graph = model.graph
        self._opsets: dict[str, int] = {}
        for imp in model.opset_import:
            self._opsets["" if imp.domain == "ai.onnx" else imp.domain] = int(imp.version)
        self._backend = backend
        self._device = device
        runner = GraphRunner(backend, device, self._opsets)
        self._graph = graph
        if graph.sparse_initializer:
            raise UnsupportedOnnxError(f"graph {graph.name!r}: sparse initializer "
                                       f"{graph.sparse_initializer[0].values.name!r} is not "
                                       "supported")
        taken: set[str] = set()
        self.parameter_names: dict[str, str] = {}
        for proto in graph.initializer:
            attr = _attribute_name(proto.name, taken)
            value = runner.constant(proto, f"graph {graph.name!r}")
            if value.kind == "float":
                if isinstance(value.primitive, np.ndarray) and value.primitive.base is None:
                    # the module's own copy, never written in place (burnpy re-points a
                    # tensor instead): read-only, a host backend may keep what it derives
                    # from it (CpuBackend's Winograd weights)
                    value.primitive.flags.writeable = False
                setattr(self, attr, value)
            else:
                self.register_buffer(attr, value)
            self.parameter_names[proto.name] = attr
        self.input_names = [i.name for i in graph.input if i.name not in self.parameter_names]
        self.output_names = [o.name for o in graph.output]
        _INTERPRETERS[self] = _Interpreter(self, runner)

    def _interpreter(self) -> _Interpreter:
        """This module's interpreter (a copy's built on its first call)."""
        found = _INTERPRETERS.get(self)
        if found is None:
            found = _INTERPRETERS[self] = _Interpreter(
                self, GraphRunner(self._backend, self._device, self._opsets))
        return found

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
        self._interpreter().run(self, values)
        missing = [name for name in self.output_names if name not in values]
        if missing:
            raise OnnxError(f"OnnxModule({self._graph.name!r}): no node produces the "
                            f"outputs {missing}")
        outputs = tuple(values[name] for name in self.output_names)
        if len(outputs) == 1 and outputs[0] is not None:
            return outputs[0]
        return outputs
