"""``bp.onnx.export``: a burnpy module or function written as an ONNX model, from a recorded run.

The run is recorded on ``Capture(B)`` (B: the example arguments' backend, its inner backend
under ``Autodiff``), in eval mode; each recorded protocol op is then written as a few ONNX
nodes by one function of ``TRANSLATIONS``. Parameters and other constants become
initializers, named after the module's parameters and buffers where they are theirs.

Dynamic axes: the run is recorded again with each dynamic dim changed alone and with all of
them changed together; the ints of op arguments (reshape targets, expand shapes, slice bounds,
arange ends) that differ between the recordings are solved as ``scale * prod(dims) + offset``
of the dims they follow and written as ``Shape``/``Mul``/``Add`` nodes over the inputs.
"""

from __future__ import annotations

import inspect
import math
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, fields, is_dataclass
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from burnpy.autodiff.backend import AutodiffBackend
from burnpy.backend.base import Backend
from burnpy.backend.dtype import DType
from burnpy.capture import CONSTANT, Capture, Graph, Node, Ref
from burnpy.fusion import FusionBackend, materialize
from burnpy.ir.desc import TensorDesc
from burnpy.nn.module import Module
from burnpy.onnx.dtypes import TO_ONNX
from burnpy.onnx.errors import OnnxError
from burnpy.tensor import Tensor

#: The opset written when none is asked for, and the oldest one the translations use
#: (reductions take their axes as an input from opset 18).
DEFAULT_OPSET = 18
MIN_OPSET = 18

#: ONNX's "to the end" for a ``Slice`` without a stop.
_INT64_MAX = np.iinfo(np.int64).max


class OnnxExportError(OnnxError):
    """A run ``export`` cannot write: an op it does not translate, or a value that depends on
    a dynamic dim in a way it cannot derive."""


@dataclass(frozen=True)
class Sym:
    """An int argument that follows dynamic dims: ``scale * prod(dims) + offset``."""

    scale: int
    dims: tuple[str, ...]
    offset: int


def export(module_or_fn: Module | Callable[..., Any], example_args: Any,
           path: str | os.PathLike[str] | None, opset_version: int | None = None,
           input_names: Sequence[str] | None = None,
           output_names: Sequence[str] | None = None,
           dynamic_axes: Mapping[str, Mapping[int, str] | Sequence[int]] | None = None
           ) -> onnx.ModelProto:
    """Write ``module_or_fn(*example_args)`` as an ONNX model at ``path`` (skipped when None)
    and return it.

    ``example_args``: a tensor or a tuple of tensors, all of one backend. The result may be a
    tensor, a tuple or list of tensors, or a dataclass (``bp.models``' outputs: their tensor
    fields, named after them). ``dynamic_axes`` maps an input's name to ``{axis: dim name}``
    (or a list of axes); inputs sharing a dim name share its size.
    """
    args = tuple(example_args) if isinstance(example_args, tuple | list) else (example_args,)
    if not args or not all(isinstance(a, Tensor) for a in args):
        raise OnnxExportError("export: example_args must be a tensor or a tuple of tensors, "
                              f"got {type(example_args).__name__}")
    opset = DEFAULT_OPSET if opset_version is None else opset_version
    newest = onnx.defs.onnx_opset_version()
    if not MIN_OPSET <= opset <= newest:
        raise OnnxExportError(f"export: opset_version {opset} is outside {MIN_OPSET}..{newest}")
    names = list(input_names) if input_names is not None else [
        f"input_{i}" for i in range(len(args))]
    if len(names) != len(args):
        raise OnnxExportError(f"export: {len(names)} input_names for {len(args)} inputs")
    label = _label(module_or_fn)
    symbols = _symbols(dynamic_axes or {}, names, args, output_names)
    base = _record(module_or_fn, args)
    if output_names is not None and len(output_names) != len(base.graph.outputs):
        raise OnnxExportError(f"export: {len(output_names)} output_names for "
                              f"{len(base.graph.outputs)} outputs of {label}")
    outs = list(output_names) if output_names is not None else base.output_names
    dynamic = _Dynamic(symbols, args)
    if symbols.sizes:
        dynamic.merge(base.graph, [_record(module_or_fn, a).graph for a in dynamic.variants()],
                      label)
    builder = _Builder(base.graph, opset, base.parameter_names, dynamic, label)
    model = builder.build(names, outs)
    onnx.checker.check_model(model, full_check=True)
    if path is not None:
        onnx.save(model, os.fspath(path))
    return model


def _label(target: Any) -> str:
    return type(target).__name__ if isinstance(target, Module) else getattr(
        target, "__name__", repr(target))


# ---- recording ----------------------------------------------------------------------------------

@dataclass
class _Recorded:
    """One recorded run: its graph, the ONNX names of its outputs (from the result's
    structure) and the names of the module's tensors by primitive identity."""

    graph: Graph
    output_names: list[str]
    parameter_names: dict[int, str]


def _module_tensors(module: Module) -> Iterator[tuple[str, Tensor]]:
    """Every tensor a module holds: its parameters and buffers by name, then tensors kept as
    plain attributes (by attribute path)."""
    yield from module.named_parameters()
    yield from module.named_buffers()
    for prefix, sub in module.named_modules():
        for attr, value in vars(sub).items():
            if isinstance(value, Tensor):
                yield (f"{prefix}.{attr}" if prefix else attr), value


def _held(target: Module | Callable[..., Any]) -> Iterator[tuple[str, Module | Tensor]]:
    """The modules and tensors a run reads without taking them as arguments: the module
    itself, or a function's bound module and the modules and tensors it names (closure
    cells and globals), each with the prefix its initializers are named under."""
    if isinstance(target, Module):
        yield "", target
        return
    owner = getattr(target, "__self__", None)
    if isinstance(owner, Module):
        yield "", owner
    function = getattr(target, "__func__", target)
    if not inspect.isfunction(function):
        return
    named = inspect.getclosurevars(function)
    for name, value in {**named.globals, **named.nonlocals}.items():
        if isinstance(value, Module | Tensor):
            yield name, value


def _plain(backend: type[Backend]) -> tuple[type[Backend], Callable[[str, Any], Any]]:
    """The backend under ``backend``'s ``Autodiff`` and ``Fusion`` decorators, and how a
    primitive of ``backend`` of a kind (``"float"``...) becomes that backend's."""
    if issubclass(backend, AutodiffBackend):
        inner, unwrap = _plain(backend.InnerBackend)
        autodiff = backend
        return inner, lambda kind, p: unwrap(kind, autodiff.inner(p) if kind == "float" else p)
    if issubclass(backend, FusionBackend):
        inner, unwrap = _plain(backend.InnerBackend)
        return inner, lambda kind, p: unwrap(kind, p if kind == "quantized" else materialize(p))
    return backend, lambda kind, p: p


def _record(target: Module | Callable[..., Any], args: tuple[Tensor, ...]) -> _Recorded:
    """Run ``target(*args)`` once on ``Capture(B)`` in eval mode: every tensor of the modules
    it holds and of the arguments is moved onto the capture backend for the run (same
    values; B's own primitive under Autodiff) and put back after, as are the training flags."""
    backend = args[0].backend
    if any(a.backend is not backend for a in args):
        raise OnnxExportError("export: the example arguments are on different backends: "
                              + ", ".join(a.backend.name() for a in args))
    plain, unwrap = _plain(backend)
    capture = Capture(plain)
    moved: dict[int, tuple[Tensor, Any, Any]] = {}
    names: dict[int, str] = {}
    training: list[tuple[Module, bool]] = []

    def move(t: Tensor) -> None:
        if id(t) in moved or t.backend is not backend:
            return
        moved[id(t)] = (t, t.backend, t.primitive)
        t.primitive = unwrap(t.kind, t.primitive)
        t.backend = capture

    try:
        for prefix, held in _held(target):
            if isinstance(held, Tensor):
                move(held)
                names.setdefault(id(held.primitive), prefix)
                continue
            training.append((held, held.training))
            held.eval()
            for name, t in _module_tensors(held):
                move(t)
                names.setdefault(id(t.primitive), f"{prefix}.{name}" if prefix else name)
        for a in args:
            move(a)
        with capture.recording([a.primitive for a in args]) as graph:
            result = target(*args)
            flat, out_names = _flatten(result)
            capture.set_outputs(graph, [t.primitive for t in flat])
    finally:
        for t, b, p in moved.values():
            t.backend, t.primitive = b, p
        for module, mode in training:
            module.train(mode)
    return _Recorded(graph, out_names, names)


def _flatten(result: Any, name: str = "output") -> tuple[list[Tensor], list[str]]:
    """The tensors of a result, in order, and their default names: ``output`` for a tensor,
    ``output_0``... for a tuple or list, a dataclass's field names (``logits``); other
    values inside (None fields, caches) are left out."""
    if isinstance(result, Tensor):
        return [result], [name]
    if is_dataclass(result) and not isinstance(result, type):
        parts = [(f.name, getattr(result, f.name)) for f in fields(result)]
    elif isinstance(result, tuple | list):
        parts = [(f"{name}_{i}", r) for i, r in enumerate(result)]
    else:
        raise OnnxExportError(f"export: the result must hold tensors, got "
                              f"{type(result).__name__}")
    tensors: list[Tensor] = []
    labels: list[str] = []
    for label, part in parts:
        if isinstance(part, Tensor | tuple | list) or (is_dataclass(part)
                                                       and not isinstance(part, type)):
            found, found_labels = _flatten(part, label)
            tensors += found
            labels += found_labels
    return tensors, labels


# ---- dynamic dims --------------------------------------------------------------------------------

@dataclass
class _Symbols:
    """The dynamic dims: each name's size in the example, where it is read (input, axis),
    and the names given to outputs' dims."""

    sizes: dict[str, int]
    places: dict[str, list[tuple[int, int]]]
    output_axes: dict[str, dict[int, str]]


def _symbols(dynamic_axes: Mapping[str, Mapping[int, str] | Sequence[int]],
             names: list[str], args: tuple[Tensor, ...],
             output_names: Sequence[str] | None) -> _Symbols:
    sizes: dict[str, int] = {}
    places: dict[str, list[tuple[int, int]]] = {}
    output_axes: dict[str, dict[int, str]] = {}
    for name, axes in dynamic_axes.items():
        named = dict(axes) if isinstance(axes, Mapping) else {a: f"{name}_dim{a}" for a in axes}
        if name not in names:
            if output_names is not None and name in output_names:
                output_axes[name] = {int(k): v for k, v in named.items()}
                continue
            raise OnnxExportError(f"export: dynamic_axes names {name!r}, which is not an input "
                                  f"({names}) or an output")
        i = names.index(name)
        for axis, dim in named.items():
            rank = len(args[i].shape)
            if not -rank <= axis < rank:
                raise OnnxExportError(f"export: dynamic axis {axis} of input {name!r} is "
                                      f"outside its shape {list(args[i].shape)}")
            size = args[i].shape[axis % rank]
            if size < 2:
                raise OnnxExportError(f"export: dynamic dim {dim!r} (axis {axis} of input "
                                      f"{name!r}) has size {size} in the example; give it 2 "
                                      "or more (a size of 1 broadcasts, so it records other ops)")
            if sizes.setdefault(dim, size) != size:
                raise OnnxExportError(f"export: dynamic dim {dim!r} is {sizes[dim]} and "
                                      f"{size} in the example inputs")
            places.setdefault(dim, []).append((i, axis % rank))
    return _Symbols(sizes, places, output_axes)


def _other(size: int, step: int) -> int:
    """A size ``step`` away from ``size``: smaller from 4 up (no size 1, where broadcasting
    would take other paths), else larger."""
    return size - step if size >= 4 else size + step


class _Dynamic:
    """The recordings at other sizes of the dynamic dims, and what differs between them."""

    def __init__(self, symbols: _Symbols, args: tuple[Tensor, ...]) -> None:
        self.symbols = symbols
        self.args = args
        self.order = list(symbols.sizes)
        #: Each recording's size of every dim: the example's, each dim changed alone by one,
        #: then all of them by two (smaller where the size is 4 or more, else larger).
        base = dict(symbols.sizes)
        self.points: list[dict[str, int]] = [base] + [
            {**base, dim: _other(base[dim], 1)} for dim in self.order] + [
            {d: _other(size, 2) for d, size in base.items()}]
        #: The output dims that differ between recordings, by output position.
        self.output_dims: dict[int, dict[int, Sym]] = {}

    def variants(self) -> list[tuple[Tensor, ...]]:
        """The example arguments at the sizes of each recording after the first, their
        values repeated along each resized axis."""
        return [tuple(self._resized(i, a, point) for i, a in enumerate(self.args))
                for point in self.points[1:]]

    def _resized(self, i: int, arg: Tensor, point: dict[str, int]) -> Tensor:
        array = arg.to_numpy()
        for dim, where in self.symbols.places.items():
            for index, axis in where:
                if index == i:
                    array = np.take(array, np.arange(point[dim]) % array.shape[axis], axis=axis)
        return Tensor.from_data(np.ascontiguousarray(array), backend=arg.backend)

    def merge(self, base: Graph, others: list[Graph], label: str) -> None:
        """Replace, in ``base``'s nodes, each int argument that differs between the
        recordings by its ``Sym``; raise when the recordings differ otherwise."""
        for g in others:
            if [n.op for n in g.nodes] != [n.op for n in base.nodes] or len(
                    g.values) != len(base.values):
                raise OnnxExportError(
                    f"export of {label}: the run records other ops when the dynamic dims "
                    f"{self.order} change size (control flow on a size): it cannot be exported "
                    "with these dynamic axes")
        for i, value in enumerate(base.values):
            if value.kind != CONSTANT:
                continue
            for g in others:
                other = g.values[i]
                if other.kind != CONSTANT or other.desc != value.desc or not np.array_equal(
                        np.asarray(other.data), np.asarray(value.data)):
                    reader = next((n.op for n in base.nodes if i in n.inputs), "the output")
                    raise OnnxExportError(
                        f"export of {label}: a constant read by {reader} ({value.desc}) "
                        f"changes with the dynamic dims {self.order}; build it from tensor "
                        "ops on the inputs instead of host data")
        for position, node in enumerate(base.nodes):
            where = f"{label}, node {position} ({node.op})"
            node.args = tuple(self._merged(a, [g.nodes[position].args[k] for g in others],
                                           where) for k, a in enumerate(node.args))
            node.kwargs = {k: self._merged(v, [g.nodes[position].kwargs[k] for g in others],
                                           where) for k, v in node.kwargs.items()}
        for o, index in enumerate(base.outputs):
            shapes = [base.values[index].desc.shape] + [
                g.values[g.outputs[o]].desc.shape for g in others]
            self.output_dims[o] = {
                axis: self._solve([s[axis] for s in shapes], f"{label}, output {o}")
                for axis in range(len(shapes[0])) if len({s[axis] for s in shapes}) > 1}

    def _merged(self, value: Any, others: list[Any], where: str) -> Any:
        """``value`` (an argument as the example's run recorded it) with each int that takes
        other values in ``others`` (the other runs') replaced by its ``Sym``; any other
        difference is an error."""
        if isinstance(value, Ref):
            if any(not isinstance(o, Ref) or o.index != value.index for o in others):
                raise OnnxExportError(f"export of {where}: the op reads other values when the "
                                      f"dynamic dims {self.order} change size")
            return value
        if isinstance(value, int | np.integer) and not isinstance(value, bool):
            values = [int(value)] + [int(o) for o in others]
            return values[0] if len(set(values)) == 1 else self._solve(values, where)
        if isinstance(value, slice):
            return slice(*(self._merged(getattr(value, f), [getattr(o, f) for o in others],
                                        where) for f in ("start", "stop", "step")))
        if isinstance(value, tuple | list):
            if any(len(o) != len(value) for o in others):
                raise OnnxExportError(f"export of {where}: argument {value!r} changes length "
                                      f"with the dynamic dims {self.order}")
            return type(value)(self._merged(v, [o[i] for o in others], where)
                               for i, v in enumerate(value))
        if any(o != value for o in others):
            raise OnnxExportError(f"export of {where}: argument {value!r} changes with the "
                                  f"dynamic dims {self.order}; it cannot be derived")
        return value

    def _solve(self, values: list[int], where: str) -> Sym:
        """``values`` (one per recording) as ``scale * prod(dims) + offset``."""
        points = self.points
        moved = tuple(d for k, d in enumerate(self.order) if values[k + 1] != values[0])

        def product(point: dict[str, int]) -> int:
            return math.prod(point[d] for d in moved)

        if moved:
            spread = product(points[-1]) - product(points[0])
            scale, rest = divmod(values[-1] - values[0], spread) if spread else (0, 1)
            offset = values[0] - scale * product(points[0])
            if not rest and scale and all(scale * product(p) + offset == v
                                          for p, v in zip(points, values, strict=True)):
                return Sym(scale, moved, offset)
        raise OnnxExportError(
            f"export of {where}: the value {values[0]} takes the values {values} as the dynamic "
            f"dims {self.order} take {[list(p.values()) for p in points]}, which is not "
            "scale * product(dims) + offset; it cannot be derived from the inputs' shapes")


# ---- the ONNX graph ------------------------------------------------------------------------------

class _Builder:
    """The ONNX nodes and initializers of one recorded graph, and the names of its values."""

    def __init__(self, graph: Graph, opset: int, parameter_names: dict[int, str],
                 dynamic: _Dynamic, label: str) -> None:
        self.graph = graph
        self.opset = opset
        self.parameter_names = parameter_names
        self.dynamic = dynamic
        self.label = label
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[TensorProto] = []
        self.names: dict[int, str] = {}
        self.taken: set[str] = set()
        self.cache: dict[Any, str] = {}
        self.input_names: list[str] = []

    def fresh(self, base: str) -> str:
        """A name no value of the model has yet."""
        name, n = base, 0
        while name in self.taken:
            n += 1
            name = f"{base}_{n}"
        self.taken.add(name)
        return name

    def emit(self, op_type: str, inputs: Sequence[str], outputs: int = 1,
             **attrs: Any) -> list[str]:
        """Append an ONNX node; its output names."""
        outs = [self.fresh(op_type.lower()) for _ in range(outputs)]
        self.nodes.append(helper.make_node(op_type, list(inputs), outs,
                                           name=self.fresh(f"node_{op_type}"), **attrs))
        return outs

    def one(self, op_type: str, *inputs: str, **attrs: Any) -> str:
        """Append a one-output ONNX node; its output name."""
        return self.emit(op_type, inputs, 1, **attrs)[0]

    def const(self, array: np.ndarray, base: str = "const") -> str:
        """An initializer holding ``array`` (small ones shared by value)."""
        key = (array.dtype.str, array.shape, array.tobytes()) if array.size <= 16 else None
        if key is not None and key in self.cache:
            return self.cache[key]
        name = self.fresh(base)
        self.initializers.append(numpy_helper.from_array(array, name))
        if key is not None:
            self.cache[key] = name
        return name

    def scalar(self, value: float | int | bool, dtype: DType) -> str:
        """A 0-d constant of ``dtype``."""
        return self.const(np.array(value, dtype=dtype.numpy))

    def v(self, ref: Ref) -> str:
        """The ONNX name of a recorded value."""
        return self.names[ref.index]

    def d(self, ref: Ref) -> TensorDesc:
        """The shape and dtype of a recorded value (as recorded at the example's sizes)."""
        return self.graph.values[ref.index].desc

    def dim(self, name: str) -> str:
        """A dynamic dim's size, ``[1]`` int64, read from the first input that has it."""
        key = ("dim", name)
        if key not in self.cache:
            index, axis = self.dynamic.symbols.places[name][0]
            self.cache[key] = self.one("Shape", self.input_names[index], start=axis,
                                       end=axis + 1)
        return self.cache[key]

    def sym(self, s: Sym) -> str:
        """``s`` computed from the inputs' shapes, ``[1]`` int64."""
        if s not in self.cache:
            out = self.dim(s.dims[0])
            for d in s.dims[1:]:
                out = self.one("Mul", out, self.dim(d))
            if s.scale != 1:
                out = self.one("Mul", out, self.const(np.array([s.scale], np.int64)))
            if s.offset:
                out = self.one("Add", out, self.const(np.array([s.offset], np.int64)))
            self.cache[s] = out
        return self.cache[s]

    def ints(self, values: Sequence[int | Sym]) -> str:
        """A 1-D int64 tensor of ``values``, with the dynamic ones computed."""
        if not any(isinstance(v, Sym) for v in values):
            return self.const(np.array([int(v) for v in values if not isinstance(v, Sym)],
                                       np.int64))
        parts: list[str] = []
        run: list[int] = []
        for v in values:
            if isinstance(v, Sym):
                if run:
                    parts.append(self.const(np.array(run, np.int64)))
                    run = []
                parts.append(self.sym(v))
            else:
                run.append(int(v))
        if run:
            parts.append(self.const(np.array(run, np.int64)))
        return self.one("Concat", *parts, axis=0)

    def int_scalar(self, value: int | Sym, dtype: DType) -> str:
        """A 0-d int of ``dtype``: a constant, or a dynamic value reshaped and cast."""
        if not isinstance(value, Sym):
            return self.scalar(int(value), dtype)
        out = self.one("Reshape", self.sym(value), self.const(np.zeros(0, np.int64)))
        return out if dtype == DType.int64 else self.one("Cast", out, to=TO_ONNX[dtype])

    def error(self, position: int, node: Node, why: str) -> OnnxExportError:
        return OnnxExportError(f"export of {self.label}: node {position} {node.op} "
                               f"({', '.join(str(self.graph.values[i].desc) for i in node.inputs)}"
                               f"): {why}")

    def build(self, input_names: list[str], output_names: list[str]) -> onnx.ModelProto:
        graph = self.graph
        self.input_names = input_names
        inputs = []
        dims: dict[tuple[int, int], str] = {}
        for dim, where in self.dynamic.symbols.places.items():
            for index, axis in where:
                dims[(index, axis)] = dim
        for k, (index, name) in enumerate(zip(graph.inputs, input_names, strict=True)):
            self.taken.add(name)
            self.names[index] = name
            desc = graph.values[index].desc
            shape = [dims.get((k, a), size) for a, size in enumerate(desc.shape)]
            inputs.append(helper.make_tensor_value_info(name, _onnx_type(desc.dtype, name),
                                                        shape))
        self.taken.update(output_names)
        live, needed = _live_nodes(graph)
        for value in graph.values:
            if value.kind == CONSTANT and value.index in needed:
                base = self.parameter_names.get(id(value.data), f"constant_{value.index}")
                name = self.fresh(base)
                self.names[value.index] = name
                array = np.asarray(value.data)
                _onnx_type(value.desc, name)
                self.initializers.append(numpy_helper.from_array(
                    np.ascontiguousarray(array.reshape(value.desc.shape)), name))
        for position, node in enumerate(graph.nodes):
            if not live[position]:
                continue
            translate = TRANSLATIONS.get(node.op)
            if translate is None:
                raise self.error(position, node, "this protocol op has no ONNX translation")
            bound = _bind(node)
            try:
                outs = translate(self, bound, node)
            except OnnxExportError as e:
                raise self.error(position, node, str(e)) from None
            for index, name in zip(node.outputs, outs, strict=True):
                self.names[index] = name
        outputs = []
        for o, (index, name) in enumerate(zip(graph.outputs, output_names, strict=True)):
            self.nodes.append(helper.make_node("Identity", [self.names[index]], [name],
                                               name=self.fresh(f"node_output_{o}")))
            desc = graph.values[index].desc
            named = self.dynamic.symbols.output_axes.get(name, {})
            dynamic = self.dynamic.output_dims.get(o, {})
            shape = [named.get(a) or (_dim_name(dynamic[a], name, a) if a in dynamic else size)
                     for a, size in enumerate(desc.shape)]
            outputs.append(helper.make_tensor_value_info(name, _onnx_type(desc.dtype, name),
                                                         shape))
        onnx_graph = helper.make_graph(self.nodes, self.label, inputs, outputs,
                                       self.initializers)
        model = helper.make_model(onnx_graph, producer_name="burnpy",
                                  opset_imports=[helper.make_opsetid("", self.opset)])
        return model


def _live_nodes(graph: Graph) -> tuple[list[bool], set[int]]:
    """Which nodes, and which values, the outputs depend on (the others, such as index
    checks read on the host, are not written)."""
    needed = set(graph.outputs)
    live = [False] * len(graph.nodes)
    for position in range(len(graph.nodes) - 1, -1, -1):
        node = graph.nodes[position]
        if needed.intersection(node.outputs):
            live[position] = True
            needed.update(node.inputs)
    return live, needed


def _dim_name(s: Sym, output: str, axis: int) -> str:
    if s.scale == 1 and s.offset == 0 and len(s.dims) == 1:
        return s.dims[0]
    return f"{output}_dim{axis}"


def _onnx_type(dtype: Any, where: str) -> int:
    dtype = dtype.dtype if isinstance(dtype, TensorDesc) else dtype
    try:
        return TO_ONNX[dtype]
    except KeyError:
        raise OnnxExportError(f"export: {where} has dtype {dtype!r}, which ONNX cannot "
                              "hold") from None


_SIGNATURES: dict[str, inspect.Signature] = {}


def _bind(node: Node) -> dict[str, Any]:
    """A node's arguments by the protocol op's parameter names, defaults filled in."""
    signature = _SIGNATURES.get(node.op)
    if signature is None:
        attr = inspect.getattr_static(Backend, node.op)
        function = attr.__func__ if isinstance(attr, staticmethod | classmethod) else attr
        signature = inspect.signature(function)
        if isinstance(attr, classmethod):
            signature = signature.replace(parameters=list(signature.parameters.values())[1:])
        _SIGNATURES[node.op] = signature
    bound = signature.bind(*node.args, **node.kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


# ---- translations: one function per protocol op ------------------------------------------------

Translation = Callable[[_Builder, dict[str, Any], Node], list[str]]
TRANSLATIONS: dict[str, Translation] = {}


def _out_dtype(b: _Builder, node: Node, k: int = 0) -> DType:
    return b.graph.values[node.outputs[k]].desc.dtype


def _unary(op_type: str) -> Translation:
    def translate(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
        return [b.one(op_type, b.v(next(iter(a.values()))))]
    return translate


def _binary(op_type: str) -> Translation:
    def translate(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
        return [b.one(op_type, b.v(a["lhs"]), b.v(a["rhs"]))]
    return translate


def _with_scalar(op_type: str, negate: bool = False) -> Translation:
    """``lhs op rhs`` where ``rhs`` is a number, in ``lhs``'s dtype (``Not`` after it when
    ``negate``: ``not_equal_elem``)."""
    def translate(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
        x = a["lhs"]
        out = b.one(op_type, b.v(x), b.scalar(a["rhs"], b.d(x).dtype))
        return [b.one("Not", out) if negate else out]
    return translate


for _kind in ("float", "int"):
    for _op, _onnx in (("add", "Add"), ("sub", "Sub"), ("mul", "Mul")):
        TRANSLATIONS[f"{_kind}_{_op}"] = _binary(_onnx)
        TRANSLATIONS[f"{_kind}_{_op}_scalar"] = _with_scalar(_onnx)
    for _op, _onnx in (("equal", "Equal"), ("greater", "Greater"), ("lower", "Less"),
                       ("greater_equal", "GreaterOrEqual"), ("lower_equal", "LessOrEqual")):
        TRANSLATIONS[f"{_kind}_{_op}"] = _binary(_onnx)
        TRANSLATIONS[f"{_kind}_{_op}_elem"] = _with_scalar(_onnx)
    TRANSLATIONS[f"{_kind}_not_equal_elem"] = _with_scalar("Equal", negate=True)
TRANSLATIONS.update({
    "float_div": _binary("Div"), "float_div_scalar": _with_scalar("Div"),
    "float_matmul": _binary("MatMul"), "float_powf": _binary("Pow"),
    "float_powf_scalar": lambda b, a, n: [b.one("Pow", b.v(a["tensor"]),
                                                b.scalar(a["exponent"], b.d(a["tensor"]).dtype))],
    "bool_and": _binary("And"), "bool_or": _binary("Or"), "bool_xor": _binary("Xor"),
    "bool_equal": _binary("Equal"),
})
for _name, _onnx in (("float_exp", "Exp"), ("float_log", "Log"), ("float_sqrt", "Sqrt"),
                     ("float_neg", "Neg"), ("float_recip", "Reciprocal"), ("float_abs", "Abs"),
                     ("float_cos", "Cos"), ("float_sin", "Sin"), ("float_tan", "Tan"),
                     ("float_tanh", "Tanh"), ("float_erf", "Erf"), ("float_floor", "Floor"),
                     ("float_ceil", "Ceil"), ("float_sign", "Sign"), ("float_round", "Round"),
                     ("float_sinh", "Sinh"), ("float_cosh", "Cosh"), ("float_asin", "Asin"),
                     ("float_acos", "Acos"), ("float_atan", "Atan"), ("float_detach", "Identity"),
                     ("int_neg", "Neg"), ("int_abs", "Abs"), ("int_sign", "Sign"),
                     ("bool_not", "Not"), ("relu", "Relu"), ("sigmoid", "Sigmoid")):
    TRANSLATIONS[_name] = _unary(_onnx)


def _translation(*names: str) -> Callable[[Translation], Translation]:
    """Register ``fn`` as the translation of each protocol op in ``names``."""
    def register(fn: Translation) -> Translation:
        for name in names:
            TRANSLATIONS[name] = fn
        return fn
    return register


def _kinds(op: str, kinds: tuple[str, ...] = ("float", "int", "bool")) -> tuple[str, ...]:
    return tuple(f"{k}_{op}" for k in kinds)


@_translation("float_square")
def _square(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    x = b.v(a["tensor"])
    return [b.one("Mul", x, x)]


@_translation("float_clamp")
def _clamp(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    dtype = b.d(a["tensor"]).dtype
    low = "" if a["min"] is None else b.scalar(a["min"], dtype)
    high = "" if a["max"] is None else b.scalar(a["max"], dtype)
    return [b.one("Clip", b.v(a["tensor"]), low, high)]


@_translation("silu")
def _silu(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    x = b.v(a["x"])
    return [b.one("Mul", x, b.one("Sigmoid", x))]


@_translation("gelu")
def _gelu(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    """``x/2 (1 + erf(x/sqrt 2))``, or with ``approximate="tanh"`` torch's tanh form."""
    x, dtype = b.v(a["x"]), b.d(a["x"]).dtype
    half, one = b.scalar(0.5, dtype), b.scalar(1.0, dtype)
    if a["approximate"] == "tanh":
        cube = b.one("Mul", b.one("Mul", x, x), x)
        inner = b.one("Add", x, b.one("Mul", cube, b.scalar(0.044715, dtype)))
        t = b.one("Tanh", b.one("Mul", inner, b.scalar(math.sqrt(2.0 / math.pi), dtype)))
    else:
        t = b.one("Erf", b.one("Mul", x, b.scalar(1.0 / math.sqrt(2.0), dtype)))
    return [b.one("Mul", b.one("Mul", x, half), b.one("Add", t, one))]


@_translation("leaky_relu")
def _leaky_relu(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    return [b.one("LeakyRelu", b.v(a["x"]), alpha=float(a["negative_slope"]))]


@_translation("softmax", "log_softmax")
def _softmax(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    op_type = "Softmax" if node.op == "softmax" else "LogSoftmax"
    return [b.one(op_type, b.v(a["x"]), axis=int(a["dim"]))]


@_translation("linear")
def _linear(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    """``x @ weight^T + bias`` (weight ``[out, in]``)."""
    out = b.one("MatMul", b.v(a["x"]), b.one("Transpose", b.v(a["weight"]), perm=[1, 0]))
    return [out if a["bias"] is None else b.one("Add", out, b.v(a["bias"]))]


@_translation("embedding")
def _embedding(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    return [b.one("Gather", b.v(a["weight"]), b.v(a["indices"]), axis=0)]


@_translation("layer_norm")
def _layer_norm(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    x, desc = a["x"], b.d(a["x"])
    ndim = int(a["normalized_ndim"])
    normalized = desc.shape[len(desc.shape) - ndim:]
    weight = b.v(a["weight"]) if a["weight"] is not None else b.const(
        np.ones(normalized, desc.dtype.numpy))
    inputs = [b.v(x), weight] + ([b.v(a["bias"])] if a["bias"] is not None else [])
    return [b.one("LayerNormalization", *inputs, axis=-ndim, epsilon=float(a["eps"]))]


@_translation("rms_norm")
def _rms_norm(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    """``x / sqrt(mean(x^2) + eps) * weight`` over the last ``normalized_ndim`` dims."""
    x, dtype = b.v(a["x"]), b.d(a["x"]).dtype
    axes = b.const(np.arange(-int(a["normalized_ndim"]), 0, dtype=np.int64))
    mean = b.one("ReduceMean", b.one("Mul", x, x), axes, keepdims=1)
    rms = b.one("Sqrt", b.one("Add", mean, b.scalar(float(a["eps"]), dtype)))
    out = b.one("Mul", x, b.one("Reciprocal", rms))
    return [out if a["weight"] is None else b.one("Mul", out, b.v(a["weight"]))]


@_translation("attention")
def _attention(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    """The protocol's composition: ``softmax(q * scale @ k^T, masked) @ v``, a causal mask
    built from the runtime lengths, rows with every key masked giving zeros."""
    q, k, v = (b.v(a[n]) for n in ("query", "key", "value"))
    desc = b.d(a["query"])
    dtype, rank = desc.dtype, len(desc.shape)
    scale = a["scale"] if a["scale"] is not None else 1.0 / math.sqrt(desc.shape[-1])
    perm = [*range(rank - 2), rank - 1, rank - 2]
    scores = b.one("MatMul", b.one("Mul", q, b.scalar(scale, dtype)),
                   b.one("Transpose", k, perm=perm))
    if a["is_causal"]:
        zero, one = b.scalar(0, DType.int64), b.scalar(1, DType.int64)
        lq = b.one("Squeeze", b.one("Shape", q, start=rank - 2, end=rank - 1))
        lk = b.one("Squeeze", b.one("Shape", k, start=rank - 2, end=rank - 1))
        rows = b.one("Unsqueeze", b.one("Range", zero, lq, one), b.const(np.array([1], np.int64)))
        cols = b.one("Range", zero, lk, one)
        scores = b.one("Where", b.one("Greater", cols, rows), b.scalar(float("-inf"), dtype),
                       scores)
    if a["mask"] is None:
        return [b.one("MatMul", b.one("Softmax", scores, axis=-1), v)]
    minus_inf = b.scalar(float("-inf"), dtype)
    scores = b.one("Where", b.v(a["mask"]), scores, minus_inf)
    dead = b.one("Equal", b.one("ReduceMax", scores, b.const(np.array([-1], np.int64)), keepdims=1),
                 minus_inf)
    zero_f = b.scalar(0.0, dtype)
    weights = b.one("Softmax", b.one("Where", dead, zero_f, scores), axis=-1)
    return [b.one("MatMul", b.one("Where", dead, zero_f, weights), v)]


@_translation("conv", "conv1d", "conv2d", "conv3d")
def _conv(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    options = a["options"]
    inputs = [b.v(a["x"]), b.v(a["weight"])] + ([b.v(a["bias"])] if a["bias"] is not None
                                                 else [])
    padding = list(options.padding)
    return [b.one("Conv", *inputs, strides=list(options.stride), pads=padding + padding,
                  dilations=list(options.dilation), group=int(options.groups))]


def _listed(value: int | Sequence[int]) -> list[int]:
    """A pool's or adaptive pool's sizes as a list (the ``1d`` ops take plain ints)."""
    return [int(value)] if isinstance(value, int | np.integer) else [int(v) for v in value]


@_translation("max_pool", "max_pool1d", "max_pool2d", "max_pool_with_indices",
              "max_pool1d_with_indices", "max_pool2d_with_indices")
def _max_pool(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    """``MaxPool``; its indices flatten the whole input, so the ``_with_indices`` ops keep
    them modulo the spatial size (torch's index within each ``[n, c]`` plane)."""
    padding = _listed(a["padding"])
    attrs = dict(kernel_shape=_listed(a["kernel"]), strides=_listed(a["stride"]),
                 pads=padding + padding, dilations=_listed(a["dilation"]),
                 ceil_mode=int(a["ceil_mode"]))
    if not node.op.endswith("_with_indices"):
        return [b.one("MaxPool", b.v(a["x"]), **attrs)]
    values, flat = b.emit("MaxPool", [b.v(a["x"])], 2, **attrs)
    plane = b.one("ReduceProd", b.one("Shape", b.v(a["x"]), start=2), keepdims=0)
    return [values, _as_recorded(b, node, 1, b.one("Mod", flat, plane, fmod=0))]


@_translation("avg_pool", "avg_pool1d", "avg_pool2d")
def _avg_pool(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    padding = _listed(a["padding"])
    return [b.one("AveragePool", b.v(a["x"]), kernel_shape=_listed(a["kernel"]),
                  strides=_listed(a["stride"]), pads=padding + padding,
                  count_include_pad=int(a["count_include_pad"]), ceil_mode=int(a["ceil_mode"]))]


@_translation("adaptive_avg_pool", "adaptive_avg_pool1d", "adaptive_avg_pool2d")
def _adaptive_avg_pool(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    """A global average pool, an even split into windows (``kernel = stride = in / out``),
    or, for windows of several sizes, each spatial dim in turn: the mean of each window
    ``[floor(i * in / out), ceil((i + 1) * in / out))``, concatenated (windows are products
    of intervals, so the means along each dim compose)."""
    sizes = [int(s) for s in b.d(a["x"]).shape[2:]]
    out = _listed(a["output_size"])
    if all(o == 1 for o in out):
        return [b.one("GlobalAveragePool", b.v(a["x"]))]
    if not any(s % o for s, o in zip(sizes, out, strict=True)):
        kernel = [s // o for s, o in zip(sizes, out, strict=True)]
        return [b.one("AveragePool", b.v(a["x"]), kernel_shape=kernel, strides=kernel)]
    x = b.v(a["x"])
    for axis, (size, o) in enumerate(zip(sizes, out, strict=True), start=2):
        if size == o:
            continue
        parts = []
        for i in range(o):
            start, stop = (i * size) // o, -((-(i + 1) * size) // o)
            window = b.one("Slice", x, b.ints([start]), b.ints([stop]), b.ints([axis]))
            parts.append(b.one("ReduceMean", window, b.ints([axis]), keepdims=1))
        x = parts[0] if len(parts) == 1 else b.one("Concat", *parts, axis=axis)
    return [x]


@_translation(*_kinds("reshape"))
def _reshape(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    return [b.one("Reshape", b.v(a["tensor"]), b.ints(a["shape"]), allowzero=1)]


@_translation(*_kinds("expand"))
def _expand(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    return [b.one("Expand", b.v(a["tensor"]), b.ints(a["shape"]))]


@_translation(*_kinds("swap_dims"))
def _swap_dims(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    perm = list(range(len(b.d(a["tensor"]).shape)))
    d1, d2 = int(a["dim1"]), int(a["dim2"])
    perm[d1], perm[d2] = perm[d2], perm[d1]
    return [b.one("Transpose", b.v(a["tensor"]), perm=perm)]


@_translation(*_kinds("permute"))
def _permute(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    return [b.one("Transpose", b.v(a["tensor"]), perm=[int(x) for x in a["axes"]])]


@_translation(*_kinds("slice"))
def _slice(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    slices = a["slices"]
    starts = [0 if s.start is None else s.start for s in slices]
    stops = [_INT64_MAX if s.stop is None else s.stop for s in slices]
    steps = [1 if s.step is None else s.step for s in slices]
    return [b.one("Slice", b.v(a["tensor"]), b.ints(starts), b.ints(stops),
                  b.ints(list(range(len(slices)))), b.ints(steps))]


@_translation(*_kinds("cat"))
def _cat(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    return [b.one("Concat", *(b.v(t) for t in a["tensors"]), axis=int(a["dim"]))]


@_translation(*_kinds("repeat_dim"))
def _repeat_dim(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    repeats = [1] * len(b.d(a["tensor"]).shape)
    repeats[int(a["dim"])] = a["times"]
    return [b.one("Tile", b.v(a["tensor"]), b.ints(repeats))]


@_translation("float_select", "int_select", "bool_select")
def _select(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    return [b.one("Gather", b.v(a["tensor"]), b.v(a["indices"]), axis=int(a["dim"]))]


@_translation("float_gather", "int_gather", "bool_gather")
def _gather(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    return [b.one("GatherElements", b.v(a["tensor"]), b.v(a["indices"]), axis=int(a["dim"]))]


@_translation("float_mask_fill", "int_mask_fill")
def _mask_fill(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    value = b.scalar(a["value"], b.d(a["tensor"]).dtype)
    return [b.one("Where", b.v(a["mask"]), value, b.v(a["tensor"]))]


@_translation("float_mask_where", "int_mask_where", "bool_mask_where")
def _mask_where(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    return [b.one("Where", b.v(a["mask"]), b.v(a["value"]), b.v(a["tensor"]))]


def _filled(value: float | int | bool) -> Translation:
    def translate(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
        dtype = _out_dtype(b, node)
        fill = a.get("fill_value", value)
        return [b.one("ConstantOfShape", b.ints(a["shape"]),
                      value=numpy_helper.from_array(np.array([fill], dtype.numpy)))]
    return translate


for _kind, _zero, _one in (("float", 0.0, 1.0), ("int", 0, 1)):
    TRANSLATIONS[f"{_kind}_zeros"] = _filled(_zero)
    TRANSLATIONS[f"{_kind}_ones"] = _filled(_one)
    TRANSLATIONS[f"{_kind}_full"] = _filled(_zero)
TRANSLATIONS["bool_full"] = _filled(False)


@_translation("int_arange")
def _arange(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    dtype = _out_dtype(b, node)
    return [b.one("Range", *(b.int_scalar(a[n], dtype) for n in ("start", "end", "step")))]


@_translation("float_cast", "int_cast", "int_into_float", "float_into_int", "bool_into_float",
              "bool_into_int")
def _cast(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    dtype = _out_dtype(b, node)
    return [b.one("Cast", b.v(a["tensor"]), to=_onnx_type(dtype, node.op))]


def _reduced(b: _Builder, x: str, op_type: str, keep: bool, a: dict[str, Any],
             node: Node) -> str:
    """``x`` reduced over ``a["dim"]``, kept (the protocol's ``_dim`` ops), or over all dims
    (the protocol's result shaped as recorded)."""
    if keep:
        return b.one(op_type, x, b.const(np.array([int(a["dim"])], np.int64)), keepdims=1)
    out = b.one(op_type, x, keepdims=0)
    shape = b.graph.values[node.outputs[0]].desc.shape
    return out if not shape else b.one("Reshape", out, b.ints(list(shape)))


def _reduce(op_type: str, keep: bool) -> Translation:
    """A reduction over one dim or all of them (see ``_reduced``)."""
    def translate(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
        return [_reduced(b, b.v(a["tensor"]), op_type, keep, a, node)]
    return translate


for _kind in ("float", "int"):
    TRANSLATIONS[f"{_kind}_sum_dim"] = _reduce("ReduceSum", True)
    TRANSLATIONS[f"{_kind}_sum"] = _reduce("ReduceSum", False)
    TRANSLATIONS[f"{_kind}_max_dim"] = _reduce("ReduceMax", True)
    TRANSLATIONS[f"{_kind}_min_dim"] = _reduce("ReduceMin", True)
    TRANSLATIONS[f"{_kind}_max"] = _reduce("ReduceMax", False)
    TRANSLATIONS[f"{_kind}_min"] = _reduce("ReduceMin", False)
TRANSLATIONS["float_mean_dim"] = _reduce("ReduceMean", True)
TRANSLATIONS["float_mean"] = _reduce("ReduceMean", False)


@_translation("float_argmax", "float_argmin", "int_argmax", "int_argmin")
def _argmax(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    op_type = "ArgMax" if node.op.endswith("argmax") else "ArgMin"
    return [b.one(op_type, b.v(a["tensor"]), axis=int(a["dim"]), keepdims=1,
                  select_last_index=0)]


@_translation("float_max_dim_with_indices", "float_min_dim_with_indices",
              "int_max_dim_with_indices", "int_min_dim_with_indices")
def _extreme_with_index(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    """The largest (smallest) values along ``dim``, kept, and the index of the first one."""
    x, dim = b.v(a["tensor"]), int(a["dim"])
    largest = "_max_" in node.op
    values = b.one("ReduceMax" if largest else "ReduceMin", x,
                   b.const(np.array([dim], np.int64)), keepdims=1)
    index = b.one("ArgMax" if largest else "ArgMin", x, axis=dim, keepdims=1,
                  select_last_index=0)
    dtype = _out_dtype(b, node, 1)
    return [values, index if dtype == DType.int64 else b.one("Cast", index,
                                                              to=_onnx_type(dtype, node.op))]


@_translation("float_cumsum", "int_cumsum")
def _cumsum(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    return [b.one("CumSum", b.v(a["tensor"]), b.scalar(int(a["dim"]), DType.int64))]


# ---- linear algebra -----------------------------------------------------------------------------

def _inverse(b: _Builder, x: str, desc: TensorDesc) -> str:
    """The inverse of square matrices ``[..., n, n]`` by the adjugate: each cofactor is the
    ``Det`` of a minor gathered with constant indices, divided by ``Det(x)``."""
    n = desc.shape[-1]
    if n == 1:
        return b.one("Reciprocal", x)
    keep = np.array([[j for j in range(n) if j != i] for i in range(n)], np.int64)
    rank = len(desc.shape)
    rows = b.one("Gather", x, b.const(keep), axis=rank - 2)      # [..., n_i, n-1, n]
    minors = b.one("Gather", rows, b.const(keep), axis=rank)      # [..., n_i, n-1, n_j, n-1]
    batch = list(range(rank - 2))
    minors = b.one("Transpose", minors, perm=[*batch, rank - 2, rank, rank - 1, rank + 1])
    signs = np.array([[(-1.0) ** (i + j) for j in range(n)] for i in range(n)],
                     desc.dtype.numpy)
    cofactors = b.one("Mul", b.one("Det", minors), b.const(signs))
    det = b.one("Unsqueeze", b.one("Det", x), b.const(np.array([-1, -2], np.int64)))
    adjugate = b.one("Transpose", cofactors, perm=[*batch, rank - 1, rank - 2])
    return b.one("Div", adjugate, det)


@_translation("float_inv")
def _inv(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    return [_inverse(b, b.v(a["tensor"]), b.d(a["tensor"]))]


@_translation("float_solve")
def _solve(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    lhs, rhs = a["lhs"], a["rhs"]
    if len(b.d(rhs).shape) == len(b.d(lhs).shape) - 1:
        vector = b.one("Unsqueeze", b.v(rhs), b.const(np.array([-1], np.int64)))
        product = b.one("MatMul", _inverse(b, b.v(lhs), b.d(lhs)), vector)
        return [b.one("Squeeze", product, b.const(np.array([-1], np.int64)))]
    return [b.one("MatMul", _inverse(b, b.v(lhs), b.d(lhs)), b.v(rhs))]


@_translation("float_slogdet")
def _slogdet(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    det = b.one("Det", b.v(a["tensor"]))
    return [b.one("Sign", det), b.one("Log", b.one("Abs", det))]



# ---- more elementwise math ----------------------------------------------------------------------

for _name, _onnx in (("float_asinh", "Asinh"), ("float_acosh", "Acosh"), ("float_atanh", "Atanh"),
                     ("float_is_nan", "IsNaN"), ("float_is_inf", "IsInf"),
                     ("int_bitwise_not", "BitwiseNot")):
    TRANSLATIONS[_name] = _unary(_onnx)
for _op, _onnx in (("and", "BitwiseAnd"), ("or", "BitwiseOr"), ("xor", "BitwiseXor")):
    TRANSLATIONS[f"int_bitwise_{_op}"] = _binary(_onnx)
TRANSLATIONS["int_matmul"] = _binary("MatMul")
TRANSLATIONS["int_powi_scalar"] = lambda b, a, n: [
    b.one("Pow", b.v(a["tensor"]), b.scalar(int(a["exponent"]), b.d(a["tensor"]).dtype))]


@_translation("float_not_equal", "int_not_equal", "bool_not_equal")
def _not_equal(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    return [b.one("Not", b.one("Equal", b.v(a["lhs"]), b.v(a["rhs"])))]


@_translation("float_clamp_min", "float_clamp_max", "int_clamp")
def _clamp_variants(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    """``Clip`` with the one bound the op names (both for ``int_clamp``)."""
    dtype = b.d(a["tensor"]).dtype
    low, high = a.get("min"), a.get("max")
    return [b.one("Clip", b.v(a["tensor"]), "" if low is None else b.scalar(low, dtype),
                  "" if high is None else b.scalar(high, dtype))]


@_translation("float_trunc")
def _trunc(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    x = b.v(a["tensor"])
    negative = b.one("Less", x, b.scalar(0.0, b.d(a["tensor"]).dtype))
    return [b.one("Where", negative, b.one("Ceil", x), b.one("Floor", x))]


@_translation("float_log1p")
def _log1p(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    """``log(u) * x / (u - 1)`` with ``u = 1 + x`` (exact where ``u`` rounds to 1), which
    keeps the relative accuracy of small ``x`` that ``log(1 + x)`` loses."""
    x, dtype = b.v(a["tensor"]), b.d(a["tensor"]).dtype
    one = b.scalar(1.0, dtype)
    u = b.one("Add", x, one)
    shifted = b.one("Sub", u, one)
    exact = b.one("Equal", shifted, b.scalar(0.0, dtype))
    safe = b.one("Where", exact, one, shifted)
    scaled = b.one("Mul", b.one("Log", u), b.one("Div", x, safe))
    # u = inf (x = inf) gives inf * (inf / inf); log(u) is right there.
    return [b.one("Where", exact, x, b.one("Where", b.one("IsInf", u), b.one("Log", u), scaled))]


@_translation("float_expm1")
def _expm1(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    """``(u - 1) * x / log(u)`` with ``u = exp(x)`` (Kahan's form, accurate for small
    ``x``), ``x`` where ``u`` rounds to 1 and ``u - 1`` where ``log(u)`` is infinite."""
    x, dtype = b.v(a["tensor"]), b.d(a["tensor"]).dtype
    one = b.scalar(1.0, dtype)
    u = b.one("Exp", x)
    shifted = b.one("Sub", u, one)
    log_u = b.one("Log", u)
    exact = b.one("Equal", shifted, b.scalar(0.0, dtype))
    far = b.one("Or", exact, b.one("IsInf", log_u))
    scaled = b.one("Mul", shifted, b.one("Div", x, b.one("Where", far, one, log_u)))
    return [b.one("Where", exact, x, b.one("Where", b.one("IsInf", log_u), shifted, scaled))]


@_translation("float_erfc")
def _erfc(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    """``1 - erf(x)``: ONNX has no erfc, so far in the right tail (``x > 3``, erfc below
    2e-5) the result keeps only the absolute accuracy of ``erf``."""
    return [b.one("Sub", b.scalar(1.0, b.d(a["tensor"]).dtype), b.one("Erf", b.v(a["tensor"])))]


@_translation("float_atan2")
def _atan2(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    """``atan(y / x)`` moved to the quadrant of ``(x, y)`` (``y``'s zeros signed, as
    NumPy's), ``±pi/2`` on the y axis."""
    y, x, dtype = b.v(a["lhs"]), b.v(a["rhs"]), b.d(a["lhs"]).dtype
    zero = b.scalar(0.0, dtype)
    angle = b.one("Atan", b.one("Div", y, x))
    # The upper half plane includes +0 but not -0: 1/y keeps a zero's sign.
    signed_zero = b.one("And", b.one("Equal", y, zero),
                        b.one("Greater", b.one("Reciprocal", y), zero))
    up = b.one("Or", b.one("Greater", y, zero), signed_zero)
    pi = b.one("Where", up, b.scalar(math.pi, dtype), b.scalar(-math.pi, dtype))
    left = b.one("Add", angle, pi)
    axis = b.one("Mul", b.one("Sign", y), b.scalar(math.pi / 2, dtype))
    return [b.one("Where", b.one("Greater", x, zero), angle,
                  b.one("Where", b.one("Less", x, zero), left, axis))]


@_translation("float_hypot")
def _hypot(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    x, y = b.v(a["lhs"]), b.v(a["rhs"])
    return [b.one("Sqrt", b.one("Add", b.one("Mul", x, x), b.one("Mul", y, y)))]


@_translation("float_logaddexp", "float_logaddexp2")
def _logaddexp(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    """``max + log(1 + exp(-|lhs - rhs|))`` (base 2 for ``logaddexp2``); ``max`` itself
    where both are infinite alike."""
    x, y, dtype = b.v(a["lhs"]), b.v(a["rhs"]), b.d(a["lhs"]).dtype
    ln2 = math.log(2.0)
    two = node.op.endswith("2")
    top = b.one("Max", x, y)
    gap = b.one("Neg", b.one("Abs", b.one("Sub", x, y)))
    if two:
        gap = b.one("Mul", gap, b.scalar(ln2, dtype))
    tail = b.one("Log", b.one("Add", b.scalar(1.0, dtype), b.one("Exp", gap)))
    if two:
        tail = b.one("Mul", tail, b.scalar(1.0 / ln2, dtype))
    return [b.one("Where", b.one("IsInf", top), top, b.one("Add", top, tail))]


@_translation("float_remainder", "float_remainder_scalar", "int_remainder",
              "int_remainder_scalar")
def _remainder(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    """The remainder with the divisor's sign: ``Mod`` (Python's for ints; for floats C's
    ``fmod``, then moved by the divisor where the signs differ, as NumPy does)."""
    x, desc = b.v(a["lhs"]), b.d(a["lhs"])
    y = b.scalar(a["rhs"], desc.dtype) if node.op.endswith("_scalar") else b.v(a["rhs"])
    if node.op.startswith("int"):
        return [b.one("Mod", x, y, fmod=0)]
    zero = b.scalar(0.0, desc.dtype)
    r = b.one("Mod", x, y, fmod=1)
    differ = b.one("Xor", b.one("Less", r, zero), b.one("Less", y, zero))
    fix = b.one("And", differ, b.one("Not", b.one("Equal", r, zero)))
    return [b.one("Where", fix, b.one("Add", r, y), r)]


@_translation("int_div", "int_div_scalar")
def _floor_div(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    """Floor division: ONNX's ``Div`` truncates, so one less where the signs differ and the
    division is inexact."""
    x, dtype = b.v(a["lhs"]), b.d(a["lhs"]).dtype
    y = b.scalar(a["rhs"], dtype) if node.op.endswith("_scalar") else b.v(a["rhs"])
    q = b.one("Div", x, y)
    zero = b.scalar(0, dtype)
    inexact = b.one("Not", b.one("Equal", b.one("Mul", q, y), x))
    differ = b.one("Xor", b.one("Less", x, zero), b.one("Less", y, zero))
    return [b.one("Sub", q, b.one("Cast", b.one("And", inexact, differ), to=TO_ONNX[dtype]))]


@_translation("int_bitwise_left_shift", "int_bitwise_right_shift")
def _shift(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    """ONNX's ``BitShift`` takes unsigned ints: a left shift goes through the two's
    complement bits; an arithmetic right shift of a negative ``x`` is ``~(~x >> s)``."""
    x, dtype = b.v(a["lhs"]), b.d(a["lhs"]).dtype
    unsigned = {DType.int64: DType.uint64, DType.int32: DType.uint32, DType.int16: DType.uint16,
                DType.int8: DType.uint8}.get(dtype, dtype)
    shift = b.one("Cast", b.v(a["rhs"]), to=TO_ONNX[unsigned])
    if node.op.endswith("left_shift"):
        bits = b.one("BitShift", b.one("Cast", x, to=TO_ONNX[unsigned]), shift, direction="LEFT")
        return [b.one("Cast", bits, to=TO_ONNX[dtype])]
    negative = b.one("Less", x, b.scalar(0, dtype))
    magnitude = b.one("Where", negative, b.one("BitwiseNot", x), x)
    bits = b.one("BitShift", b.one("Cast", magnitude, to=TO_ONNX[unsigned]), shift,
                 direction="RIGHT")
    shifted = b.one("Cast", bits, to=TO_ONNX[dtype])
    return [b.one("Where", negative, b.one("BitwiseNot", shifted), shifted)]


@_translation("softplus")
def _softplus(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    x, dtype, beta = b.v(a["x"]), b.d(a["x"]).dtype, float(a["beta"])
    if beta == 1.0:
        return [b.one("Softplus", x)]
    scaled = b.one("Softplus", b.one("Mul", x, b.scalar(beta, dtype)))
    return [b.one("Mul", scaled, b.scalar(1.0 / beta, dtype))]


@_translation("log_sigmoid")
def _log_sigmoid(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    return [b.one("Neg", b.one("Softplus", b.one("Neg", b.v(a["x"]))))]


@_translation("hard_sigmoid")
def _hard_sigmoid(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    return [b.one("HardSigmoid", b.v(a["x"]), alpha=float(a["alpha"]), beta=float(a["beta"]))]


# ---- more reductions, scans and sorting ---------------------------------------------------------

for _kind in ("float", "int"):
    TRANSLATIONS[f"{_kind}_prod_dim"] = _reduce("ReduceProd", True)
    TRANSLATIONS[f"{_kind}_prod"] = _reduce("ReduceProd", False)


def _truth(op_type: str, keep: bool) -> Translation:
    """``any``/``all``: ``ReduceMax``/``ReduceMin`` of the truth values as int32 (ONNX's
    reductions take no bools)."""
    def translate(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
        desc = b.d(a["tensor"])
        truth = b.v(a["tensor"]) if desc.dtype == DType.bool_ else b.one(
            "Not", b.one("Equal", b.v(a["tensor"]), b.scalar(0, desc.dtype)))
        out = _reduced(b, b.one("Cast", truth, to=TensorProto.INT32), op_type, keep, a, node)
        return [b.one("Cast", out, to=TensorProto.BOOL)]
    return translate


for _kind in ("float", "int", "bool"):
    TRANSLATIONS[f"{_kind}_any"] = _truth("ReduceMax", False)
    TRANSLATIONS[f"{_kind}_any_dim"] = _truth("ReduceMax", True)
    TRANSLATIONS[f"{_kind}_all"] = _truth("ReduceMin", False)
    TRANSLATIONS[f"{_kind}_all_dim"] = _truth("ReduceMin", True)


def _length(b: _Builder, x: str, dim: int) -> str:
    """The runtime size of ``x``'s dim ``dim`` (non-negative), a 0-d int64."""
    return b.one("Squeeze", b.one("Shape", x, start=dim, end=dim + 1))


def _upto(b: _Builder, x: str, dim: int, rank: int) -> str:
    """``[n, n]`` bools, ``[i, j]`` true where ``j <= i`` (``n``: ``x``'s size along ``dim``,
    read at run time), with ones appended to broadcast against the dims after ``dim``."""
    zero, one = b.scalar(0, DType.int64), b.scalar(1, DType.int64)
    steps = b.one("Range", zero, _length(b, x, dim), one)
    rows = b.one("Unsqueeze", steps, b.const(np.array([1], np.int64)))
    mask = b.one("LessOrEqual", steps, rows)
    trailing = rank - 1 - dim
    if not trailing:
        return mask
    return b.one("Unsqueeze", mask, b.const(np.arange(2, 2 + trailing, dtype=np.int64)))


def _extreme(dtype: DType, largest: bool) -> float | int:
    """The identity of a running max (``largest``) or min in ``dtype``."""
    if dtype.is_float:
        return float("-inf") if largest else float("inf")
    info = np.iinfo(dtype.numpy)
    return int(info.min if largest else info.max)


@_translation("float_cumprod", "int_cumprod", "float_cummax_with_indices",
              "float_cummin_with_indices", "int_cummax_with_indices", "int_cummin_with_indices",
              "float_cummax", "float_cummin")
def _running(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    """A running product, max or min along ``dim``: ``x`` seen as ``[..., i, j, ...]`` with
    the ``j > i`` entries replaced by the op's identity, reduced over ``j``; the running
    extremes' indices are the last ``j`` reaching them (torch.cummax), by ``ArgMax``."""
    desc = b.d(a["tensor"])
    rank = len(desc.shape)
    dim = int(a["dim"]) % rank
    x = b.v(a["tensor"])
    spread = b.one("Unsqueeze", x, b.const(np.array([dim], np.int64)))
    mask = _upto(b, x, dim, rank)
    over = b.const(np.array([dim + 1], np.int64))
    if node.op.endswith("cumprod"):
        kept = b.one("Where", mask, spread, b.scalar(1, desc.dtype))
        return [b.one("ReduceProd", kept, over, keepdims=0)]
    largest = "cummax" in node.op
    kept = b.one("Where", mask, spread, b.scalar(_extreme(desc.dtype, largest), desc.dtype))
    values = b.one("ReduceMax" if largest else "ReduceMin", kept, over, keepdims=0)
    if not node.op.endswith("_with_indices"):
        return [values]
    index = b.one("ArgMax" if largest else "ArgMin", kept, axis=dim + 1, keepdims=0,
                  select_last_index=1)
    return [values, _as_recorded(b, node, 1, index)]


def _top(b: _Builder, a: dict[str, Any], k: str, largest: bool) -> tuple[str, str]:
    """``TopK`` along ``a["dim"]`` (equal values in index order, so a stable sort): its
    values and int64 indices."""
    rank = len(b.d(a["tensor"]).shape)
    values, index = b.emit("TopK", [b.v(a["tensor"]), k], 2, axis=int(a["dim"]) % rank,
                           largest=int(largest), sorted=1)
    return values, index


def _as_recorded(b: _Builder, node: Node, k: int, index: str) -> str:
    """int64 ``index`` cast to the dtype the run recorded for output ``k``."""
    dtype = _out_dtype(b, node, k)
    return index if dtype == DType.int64 else b.one("Cast", index, to=TO_ONNX[dtype])


@_translation("float_sort_with_indices", "int_sort_with_indices", "float_sort", "int_sort",
              "float_argsort", "int_argsort")
def _sort(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    """A stable sort: ``TopK`` of all the dim's values (its size read at run time)."""
    rank = len(b.d(a["tensor"]).shape)
    dim = int(a["dim"]) % rank
    k = b.one("Shape", b.v(a["tensor"]), start=dim, end=dim + 1)
    values, index = _top(b, a, k, bool(a["descending"]))
    if node.op.endswith("_sort"):
        return [values]
    if node.op.endswith("_argsort"):
        return [_as_recorded(b, node, 0, index)]
    return [values, _as_recorded(b, node, 1, index)]


@_translation("float_topk_with_indices")
def _topk(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    values, index = _top(b, a, b.ints([a["k"]]), bool(a["largest"]))
    return [values, _as_recorded(b, node, 1, index)]


# ---- more layout and indexing -------------------------------------------------------------------

@_translation(*_kinds("flip"))
def _flip(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    axes = [int(x) for x in a["axes"]]
    if not axes:
        return [b.one("Identity", b.v(a["tensor"]))]
    n = len(axes)
    return [b.one("Slice", b.v(a["tensor"]), b.ints([-1] * n),
                  b.ints([int(np.iinfo(np.int64).min)] * n), b.ints(axes), b.ints([-1] * n))]


@_translation(*_kinds("unfold"))
def _unfold(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    """Windows ``start + [0, size)`` for ``start`` in ``range(0, n - size + 1, step)``
    (``n`` read at run time) gathered along ``dim``, the window dim moved last."""
    x, rank = b.v(a["tensor"]), len(b.d(a["tensor"]).shape)
    dim, size, step = int(a["dim"]) % rank, int(a["size"]), int(a["step"])
    end = b.one("Sub", _length(b, x, dim), b.scalar(size - 1, DType.int64))
    starts = b.one("Range", b.scalar(0, DType.int64), end, b.scalar(step, DType.int64))
    windows = b.one("Add", b.one("Unsqueeze", starts, b.const(np.array([1], np.int64))),
                    b.const(np.arange(size, dtype=np.int64)))
    taken = b.one("Gather", x, windows, axis=dim)   # [..., count, size, ...]
    perm = [*range(dim + 1), *range(dim + 2, rank + 1), dim + 1]
    return [b.one("Transpose", taken, perm=perm)]


@_translation("float_scatter", "int_scatter", "float_scatter_add", "int_scatter_add")
def _scatter(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    """``ScatterElements`` (summing for ``scatter_add``), the values cut to the indices'
    shape as the protocol reads them."""
    values = b.v(a["values"])
    indices, values_desc = b.d(a["indices"]), b.d(a["values"])
    if values_desc.shape != indices.shape:
        rank = len(indices.shape)
        values = b.one("Slice", values, b.ints([0] * rank), b.ints(list(indices.shape)),
                       b.ints(list(range(rank))))
    reduction = "add" if node.op.endswith("_add") else "none"
    return [b.one("ScatterElements", b.v(a["tensor"]), b.v(a["indices"]), values,
                  axis=int(a["dim"]), reduction=reduction)]


@_translation("float_select_add", "int_select_add", "float_select_assign",
              "int_select_assign")
def _select_write(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    """``index_add``/``index_copy`` along ``dim``: the 1-d indices broadcast to the values'
    shape, then ``ScatterElements``."""
    rank = len(b.d(a["tensor"]).shape)
    dim = int(a["dim"]) % rank
    values = b.v(a["values"])
    axes = np.array([d for d in range(rank) if d != dim], np.int64)
    lined = b.one("Unsqueeze", b.v(a["indices"]), b.const(axes)) if axes.size else b.v(
        a["indices"])
    spread = b.one("Expand", lined, b.one("Shape", values))
    reduction = "add" if node.op.endswith("_add") else "none"
    return [b.one("ScatterElements", b.v(a["tensor"]), spread, values, axis=dim,
                  reduction=reduction)]


# ---- more of the nn ops -------------------------------------------------------------------------

@_translation("conv_transpose", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d")
def _conv_transpose(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    options = a["options"]
    inputs = [b.v(a["x"]), b.v(a["weight"])] + ([b.v(a["bias"])] if a["bias"] is not None
                                                 else [])
    padding = list(options.padding)
    return [b.one("ConvTranspose", *inputs, strides=list(options.stride),
                  pads=padding + padding, dilations=list(options.dilation),
                  output_padding=list(options.padding_out), group=int(options.groups))]


@_translation("interpolate")
def _interpolate(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    """``Resize`` of the two spatial dims to ``output_size``: nearest as torch (source
    ``floor(i * in / out)``), bilinear with torch's half-pixel or corner-aligned
    coordinates."""
    if a["mode"] == "nearest":
        modes = dict(mode="nearest", coordinate_transformation_mode="asymmetric",
                     nearest_mode="floor")
    else:
        modes = dict(mode="linear", coordinate_transformation_mode=(
            "align_corners" if a["align_corners"] else "pytorch_half_pixel"))
    return [b.one("Resize", b.v(a["x"]), "", "", b.ints(list(a["output_size"])), axes=[2, 3],
                  **modes)]


@_translation("batch_norm")
def _batch_norm(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    """Training-mode batch normalization with the batch's statistics: ``(y, mean, var)``,
    ``var`` biased, over every dim but the channels (dim 1)."""
    x, desc = b.v(a["x"]), b.d(a["x"])
    rank, dtype = len(desc.shape), desc.dtype
    over = b.const(np.array([0, *range(2, rank)], np.int64))
    mean = b.one("ReduceMean", x, over, keepdims=1)
    centered = b.one("Sub", x, mean)
    var = b.one("ReduceMean", b.one("Mul", centered, centered), over, keepdims=1)
    y = b.one("Div", centered, b.one("Sqrt", b.one("Add", var, b.scalar(float(a["eps"]),
                                                                          dtype))))
    channels = [-1, *([1] * (rank - 2))]
    if a["weight"] is not None:
        y = b.one("Mul", y, b.one("Reshape", b.v(a["weight"]), b.ints(channels)))
    if a["bias"] is not None:
        y = b.one("Add", y, b.one("Reshape", b.v(a["bias"]), b.ints(channels)))
    flat = b.const(np.array([-1], np.int64))
    return [y, b.one("Reshape", mean, flat), b.one("Reshape", var, flat)]


@_translation("float_cholesky")
def _cholesky(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    """The lower Cholesky factor, unrolled over the ``n`` columns (``n`` as recorded; ONNX
    has no factorization): column ``j`` is ``A[:, j] - L[:, :j] @ L[j, :j]``, divided by the
    square root of its ``j``-th entry, zero above it. A matrix that is not positive
    definite gives NaN."""
    x, desc = b.v(a["tensor"]), b.d(a["tensor"])
    rank, n, dtype = len(desc.shape), desc.shape[-1], desc.dtype
    rows, cols = b.ints([rank - 2]), b.ints([rank - 1])
    swap = [*range(rank - 2), rank - 1, rank - 2]
    zero = b.scalar(0.0, dtype)
    columns: list[str] = []
    for j in range(n):
        column = b.one("Slice", x, b.ints([j]), b.ints([j + 1]), cols)       # [..., n, 1]
        if columns:
            done = columns[0] if len(columns) == 1 else b.one("Concat", *columns, axis=-1)
            row = b.one("Slice", done, b.ints([j]), b.ints([j + 1]), rows)   # [..., 1, j]
            column = b.one("Sub", column, b.one("MatMul", done,
                                                b.one("Transpose", row, perm=swap)))
        pivot = b.one("Slice", column, b.ints([j]), b.ints([j + 1]), rows)  # [..., 1, 1]
        scaled = b.one("Div", column, b.one("Sqrt", pivot))
        below = b.const((np.arange(n) >= j).reshape(n, 1))
        columns.append(b.one("Where", below, scaled, zero))
    return [columns[0] if n == 1 else b.one("Concat", *columns, axis=-1)]


@_translation(*_kinds("slice_assign"))
def _slice_assign(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    """``ScatterND`` of ``value`` at the grid of the slices' coordinates: each sliced dim's
    ``Range`` (bounds as recorded, dynamic ones computed), broadcast to the value's leading
    dims and stacked; the dims after the slices are written whole."""
    x, value = b.v(a["tensor"]), b.v(a["value"])
    slices = a["slices"]
    k = len(slices)
    grid = b.one("Concat", b.one("Shape", value, end=k), b.const(np.array([1], np.int64)),
                 axis=0)
    coordinates = []
    for d, s in enumerate(slices):
        stop = _length(b, x, d) if s.stop is None else b.int_scalar(s.stop, DType.int64)
        steps = b.one("Range", b.int_scalar(0 if s.start is None else s.start, DType.int64),
                      stop, b.int_scalar(1 if s.step is None else s.step, DType.int64))
        around = np.array([i for i in range(k + 1) if i != d], np.int64)
        coordinates.append(b.one("Expand", b.one("Unsqueeze", steps, b.const(around)), grid))
    indices = coordinates[0] if k == 1 else b.one("Concat", *coordinates, axis=-1)
    return [b.one("ScatterND", x, indices, value)]


@_translation("lstm")
def _lstm(b: _Builder, a: dict[str, Any], node: Node) -> list[str]:
    """ONNX's ``LSTM`` over the projected gates: its input weight is the permutation taking
    torch's gate order (i, f, g, o) to ONNX's (i, o, f, c), exact since it only moves values,
    the recurrent weight's rows permuted alike; ``[T + 1, N, H]``: every step's hidden state,
    then the last cell state."""
    gates, desc = b.v(a["gates_x"]), b.d(a["gates_x"])
    hidden = desc.shape[2] // 4
    order = np.concatenate([np.arange(k * hidden, (k + 1) * hidden) for k in (0, 3, 1, 2)])
    moved = np.eye(4 * hidden, dtype=desc.dtype.numpy)[order][None]
    recurrent = b.one("Gather", b.v(a["weight_hh"]), b.const(order.astype(np.int64)), axis=0)
    first = b.const(np.array([0], np.int64))
    recurrent = b.one("Unsqueeze", recurrent, first)
    h0, c0 = (b.one("Unsqueeze", b.v(a[n]), first) for n in ("h0", "c0"))
    states, _, cell = b.emit("LSTM", [gates, b.const(moved), recurrent, "", "", h0, c0], 3,
                             hidden_size=hidden)
    steps = b.one("Squeeze", states, b.const(np.array([1], np.int64)))
    return [b.one("Concat", steps, cell, axis=0)]
