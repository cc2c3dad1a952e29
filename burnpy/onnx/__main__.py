"""``python -m burnpy.onnx MODEL.onnx``: what a model is and whether burnpy runs it.

It prints the graph's inputs and outputs (dtypes, shapes with their symbolic dims), its
initializers, its opsets and, per op type (subgraphs included), the node count and whether
burnpy's registry has an implementation for the model's opset that reads every attribute the
nodes set. ``--check`` runs the model on seeded random inputs (symbolic dims set by ``--dim``,
else small) in burnpy and, when it is installed, in onnxruntime, and prints each output's
largest absolute and relative difference. Exit status: 0 when it runs and matches
(rtol 1e-3, atol 1e-5), 1 on a mismatch, 2 when burnpy cannot run the model (an unsupported
op or a model error).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import numpy as np
import onnx
from google.protobuf.message import DecodeError  # type: ignore[import-untyped]
from onnx import AttributeProto, GraphProto, ModelProto, NodeProto, TypeProto, helper

from burnpy.backend.errors import BurnpyError
from burnpy.onnx.dtypes import onnx_type_name
from burnpy.onnx.errors import OnnxError
from burnpy.onnx.registry import lookup

#: ``--check``'s tolerance, onnx's backend-test runner's rtol with a float32-sized atol.
RTOL, ATOL = 1e-3, 1e-5
#: Exit statuses: a mismatch against onnxruntime, and a model burnpy cannot run.
MISMATCH, CANNOT_RUN = 1, 2


def _nodes(graph: GraphProto) -> Iterator[NodeProto]:
    """Every node of ``graph`` and of its subgraphs (If's branches, Loop's and Scan's bodies)."""
    for node in graph.node:
        yield node
        for attr in node.attribute:
            if attr.type == AttributeProto.GRAPH:
                yield from _nodes(attr.g)
            elif attr.type == AttributeProto.GRAPHS:
                for sub in attr.graphs:
                    yield from _nodes(sub)


def _domain(domain: str) -> str:
    return "" if domain == "ai.onnx" else domain


def opsets(model: ModelProto) -> dict[str, int]:
    """The model's opset per domain ("" is ai.onnx)."""
    return {_domain(imp.domain): int(imp.version) for imp in model.opset_import}


def element_type_name(code: int) -> str:
    """``float32`` for ONNX's FLOAT: the NumPy name where there is one, else ONNX's."""
    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(code)).name
    except (KeyError, TypeError, ValueError):
        return onnx_type_name(code).lower()


def dims(type_proto: TypeProto) -> list[int | str] | None:
    """A tensor type's shape: ints for fixed dims, the dim's name for a symbolic one, ``?``
    for an unnamed one; None when the rank is unknown."""
    tensor = type_proto.tensor_type
    if not tensor.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?")
            for d in tensor.shape.dim]


def type_text(type_proto: TypeProto) -> str:
    """``float32[batch, 3, 224, 224]``, ``sequence<int64[?]>``, ``float32[...]`` (rank
    unknown)."""
    kind = type_proto.WhichOneof("value")
    if kind == "tensor_type":
        shape = dims(type_proto)
        inner = "..." if shape is None else ", ".join(str(d) for d in shape)
        return f"{element_type_name(type_proto.tensor_type.elem_type)}[{inner}]"
    if kind == "sequence_type":
        return f"sequence<{type_text(type_proto.sequence_type.elem_type)}>"
    if kind == "optional_type":
        return f"optional<{type_text(type_proto.optional_type.elem_type)}>"
    if kind == "map_type":
        key = element_type_name(type_proto.map_type.key_type)
        return f"map<{key}, {type_text(type_proto.map_type.value_type)}>"
    return "unknown type"


@dataclass(frozen=True)
class OpSupport:
    """One op type of a model: how many nodes, at which opset, and what burnpy says."""

    domain: str
    op_type: str
    opset: int | None
    count: int
    #: "yes (since N)", "no", or why not: the attribute the implementation does not read.
    status: str

    @property
    def supported(self) -> bool:
        """Whether every node of this op type can run in burnpy."""
        return self.status.startswith("yes")


def op_support(model: ModelProto) -> list[OpSupport]:
    """Per (domain, op type) of the model (subgraphs included), sorted: the node count and
    whether burnpy's registry runs it at the model's opset with the attributes its nodes set."""
    versions = opsets(model)
    counts: Counter[tuple[str, str]] = Counter()
    attributes: dict[tuple[str, str], set[str]] = {}
    for node in _nodes(model.graph):
        key = (_domain(node.domain), node.op_type)
        counts[key] += 1
        attributes.setdefault(key, set()).update(a.name for a in node.attribute)
    rows = []
    for (domain, op_type), count in sorted(counts.items()):
        opset = versions.get(domain)
        impl = None if opset is None else lookup(domain, op_type, opset)
        if opset is None:
            status = f"no (the model imports no opset of domain {domain!r})"
        elif impl is None:
            status = "no"
        else:
            unread = sorted(attributes[(domain, op_type)] - impl.attrs)
            status = (f"no (attribute {unread[0]!r} is not supported)" if unread
                      else f"yes (since {impl.since})")
        rows.append(OpSupport(domain, op_type, opset, count, status))
    return rows


def graph_inputs(model: ModelProto) -> list[onnx.ValueInfoProto]:
    """The graph's inputs that are not initializers (older exporters list both)."""
    initialized = {t.name for t in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in initialized]


def _initializer_bytes(proto: onnx.TensorProto) -> int:
    """An initializer's size in bytes, from its dims (its data may be external)."""
    try:
        itemsize = np.dtype(helper.tensor_dtype_to_np_dtype(proto.data_type)).itemsize
    except (KeyError, TypeError, ValueError):
        itemsize = 1
    return int(np.prod(proto.dims, dtype=np.int64)) * itemsize


def summarize(model: ModelProto, name: str, out: TextIO) -> list[OpSupport]:
    """Print the model's inputs, outputs, initializers, opsets and op support to ``out``;
    returns the op support rows."""
    graph = model.graph
    producer = " ".join(p for p in (model.producer_name, model.producer_version) if p)
    print(f"{name}: graph {graph.name!r}, IR version {model.ir_version}"
          + (f", produced by {producer}" if producer else ""), file=out)
    print("opsets: " + ", ".join(f"{d or 'ai.onnx'} {v}"
                                 for d, v in sorted(opsets(model).items())), file=out)
    for title, values in (("inputs", graph_inputs(model)), ("outputs", list(graph.output))):
        print(f"{title}:", file=out)
        width = max((len(v.name) for v in values), default=0)
        for value in values:
            print(f"  {value.name:<{width}}  {type_text(value.type)}", file=out)
    total = sum(_initializer_bytes(t) for t in graph.initializer)
    external = sum(t.data_location == onnx.TensorProto.EXTERNAL for t in graph.initializer)
    print(f"initializers: {len(graph.initializer)} ({_size_text(total)}"
          + (f", {external} in external data" if external else "") + ")", file=out)
    rows = op_support(model)
    print(f"ops: {sum(r.count for r in rows)} nodes, {len(rows)} op types", file=out)
    width = max((len(_op_name(r)) for r in rows), default=0)
    for row in rows:
        print(f"  {_op_name(row):<{width}}  {row.count:>5}  {row.status}", file=out)
    missing = [r for r in rows if not r.supported]
    print(f"burnpy supports {len(rows) - len(missing)} of {len(rows)} op types"
          + (": missing " + ", ".join(_op_name(r) for r in missing) if missing else ""),
          file=out)
    return rows


def _size_text(size: int) -> str:
    """``1.5 MB``, ``12.0 kB``, ``80 bytes``."""
    if size >= 1e6:
        return f"{size / 1e6:.1f} MB"
    return f"{size / 1e3:.1f} kB" if size >= 1e3 else f"{size} bytes"


def _op_name(row: OpSupport) -> str:
    return f"{row.domain}.{row.op_type}" if row.domain else row.op_type


def random_inputs(model: ModelProto, sizes: dict[str, int], default_size: int, seed: int,
                  int_high: int) -> dict[str, np.ndarray]:
    """Seeded random values for the graph's inputs: floats standard normal, ints in
    ``[0, int_high)``, bools fair; a symbolic dim takes ``sizes[name]``, else
    ``default_size``, as does an unnamed one."""
    rng = np.random.default_rng(seed)
    feeds = {}
    for value in graph_inputs(model):
        if value.type.WhichOneof("value") != "tensor_type":
            raise OnnxError(f"--check: input {value.name!r} is a {type_text(value.type)}; "
                            "only tensor inputs can be made up")
        shape = dims(value.type)
        if shape is None:
            raise OnnxError(f"--check: input {value.name!r} has no known rank")
        concrete = tuple(d if isinstance(d, int) else sizes.get(d, default_size)
                         for d in shape)
        code = value.type.tensor_type.elem_type
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(code))
        if dtype.kind == "f":
            array = rng.standard_normal(concrete).astype(dtype)
        elif dtype.kind in "iu":
            array = rng.integers(0, int_high, concrete).astype(dtype)
        elif dtype.kind == "b":
            array = rng.random(concrete) < 0.5
        else:
            raise OnnxError(f"--check: input {value.name!r} of type "
                            f"{element_type_name(code)} cannot be made up")
        feeds[value.name] = np.asarray(array)
    return feeds


def run_burnpy(path: Path, feeds: dict[str, np.ndarray],
               backend_name: str | None) -> list[np.ndarray]:
    """The model's outputs in burnpy on the named backend (the default one when None)."""
    from burnpy.backend.registry import backend_named, default_backend
    from burnpy.onnx import load
    from burnpy.tensor import Tensor

    backend = default_backend() if backend_name is None else backend_named(backend_name)
    module = load(path, backend=backend)
    result = module(*[Tensor.from_data(feeds[name], backend=backend)
                      for name in module.input_names])
    outputs = list(result) if isinstance(result, tuple) else [result]
    for name, value in zip(module.output_names, outputs, strict=True):
        if value is None:
            raise OnnxError(f"--check: burnpy made no value for output {name!r}")
    return [value.to_numpy() for value in outputs if value is not None]


def differences(got: np.ndarray, expected: np.ndarray) -> tuple[float, float, bool]:
    """The largest absolute difference, the largest relative one (where ``expected`` is not
    zero), and whether ``got`` matches ``expected`` (same shape and dtype, within RTOL/ATOL,
    NaNs where it has them)."""
    if got.shape != expected.shape or got.dtype != expected.dtype or got.size == 0:
        same = got.shape == expected.shape and got.dtype == expected.dtype
        return 0.0, 0.0, same
    a, b = got.astype(np.float64), expected.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        gap = np.abs(a - b)
        both_nan = np.isnan(a) & np.isnan(b)
        gap[both_nan | (a == b)] = 0.0  # equal infinities too
        relative = np.where(b != 0, gap / np.abs(b), 0.0)
    match = bool(np.allclose(a, b, rtol=RTOL, atol=ATOL, equal_nan=True))
    return float(np.nanmax(gap)), float(np.nanmax(relative)), match


def check(model: ModelProto, path: Path, args: argparse.Namespace, out: TextIO) -> int:
    """Run the model in burnpy and in onnxruntime (when installed); print and return the
    exit status."""
    sizes = dict(args.dim)
    feeds = random_inputs(model, sizes, args.default_dim, args.seed, args.int_high)
    print(f"check inputs (seed {args.seed}): "
          + ", ".join(f"{k} {v.dtype.name}{list(v.shape)}" for k, v in feeds.items()), file=out)
    try:
        got = run_burnpy(path, feeds, args.backend)
    except BurnpyError as error:
        print(f"burnpy cannot run the model: {type(error).__name__}: {error}", file=out)
        return CANNOT_RUN
    try:
        onnxruntime = importlib.import_module("onnxruntime")
    except ImportError:
        for name, value in zip((o.name for o in model.graph.output), got, strict=True):
            print(f"  {name}: {value.dtype.name}{list(value.shape)} (onnxruntime is not "
                  "installed: nothing to compare with)", file=out)
        return 0
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(str(path), options,
                                           providers=["CPUExecutionProvider"])
    expected = session.run(None, feeds)
    status = 0
    print(f"outputs against onnxruntime {onnxruntime.__version__} (rtol {RTOL}, atol {ATOL}):",
          file=out)
    for name, value, ref in zip((o.name for o in model.graph.output), got, expected,
                                strict=True):
        ref = np.asarray(ref)
        gap, relative, match = differences(value, ref)
        shape = f"{value.dtype.name}{list(value.shape)}"
        if value.shape != ref.shape or value.dtype != ref.dtype:
            detail = f"{shape}, onnxruntime's is {ref.dtype.name}{list(ref.shape)}"
        else:
            detail = f"{shape}  max abs diff {gap:.3g}  max rel diff {relative:.3g}"
        print(f"  {name}: {detail}  {'ok' if match else 'MISMATCH'}", file=out)
        if not match:
            status = MISMATCH
    return status


def _dim(text: str) -> tuple[str, int]:
    """``batch=4`` as ("batch", 4), for ``--dim``."""
    name, sep, value = text.partition("=")
    if not sep or not name or not value.isdigit():
        raise argparse.ArgumentTypeError(f"--dim wants NAME=SIZE, got {text!r}")
    return name, int(value)


def parser() -> argparse.ArgumentParser:
    """The command's arguments."""
    p = argparse.ArgumentParser(prog="python -m burnpy.onnx",
                                description="Describe an ONNX model and whether burnpy runs it.")
    p.add_argument("model", type=Path, help="the .onnx file (external data beside it)")
    p.add_argument("--check", action="store_true",
                   help="run it on random inputs in burnpy and onnxruntime and compare")
    p.add_argument("--dim", type=_dim, action="append", default=[], metavar="NAME=SIZE",
                   help="the size of a symbolic dim for --check (repeatable)")
    p.add_argument("--default-dim", type=int, default=2, metavar="SIZE",
                   help="the size of symbolic dims not given by --dim (default 2)")
    p.add_argument("--seed", type=int, default=0, help="the random inputs' seed (default 0)")
    p.add_argument("--int-high", type=int, default=2, metavar="N",
                   help="integer inputs are drawn from [0, N) (default 2: valid ids, masks)")
    p.add_argument("--backend", default=None,
                   help="the burnpy backend by name (default: the default backend)")
    return p


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Run the command with ``argv`` (``sys.argv[1:]`` when None), printing to ``out``
    (stdout when None); returns the exit status."""
    args = parser().parse_args(argv)
    stream = sys.stdout if out is None else out
    path: Path = args.model
    try:
        model = onnx.load(str(path), load_external_data=False)
    except (OSError, DecodeError) as error:
        print(f"cannot read {path}: {error}", file=stream)
        return CANNOT_RUN
    rows = summarize(model, path.name, stream)
    if not args.check:
        return 0
    if not all(r.supported for r in rows):
        print("--check: burnpy cannot run the model (unsupported op types above)", file=stream)
        return CANNOT_RUN
    try:
        return check(model, path, args, stream)
    except OnnxError as error:
        print(str(error), file=stream)
        return CANNOT_RUN


if __name__ == "__main__":
    sys.exit(main())
