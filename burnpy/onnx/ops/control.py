"""ONNX control flow: If, Loop and Scan, whose bodies are subgraphs run by the interpreter.

A body sees the values of its enclosing scopes (``OpContext.run_subgraph`` runs it over
them). Conditions and trip counts are read on the host, so the number of iterations is
decided as the graph runs; the values the body computes stay burnpy tensors, so gradients
flow through every iteration under ``Autodiff``. Sequence and optional values are outside
burnpy's ONNX import, so a branch or body producing one fails with ``UnsupportedOnnxError``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from onnx import GraphProto, TensorProto

import burnpy
from burnpy.onnx.attributes import Attributes
from burnpy.onnx.dtypes import burnpy_dtype
from burnpy.onnx.registry import OpContext, Outputs, onnx_op
from burnpy.tensor import Tensor

Inputs = list[Tensor | None]


def _body(ctx: OpContext, attrs: Attributes, name: str) -> GraphProto:
    graph = attrs.graph(name)
    if graph is None:
        ctx.error(f"attribute {name!r} (a graph) is required")
    return graph


def _truth(ctx: OpContext, t: Tensor, what: str) -> bool:
    """A one-element condition tensor's value on the host."""
    if t.numel() != 1:
        ctx.error(f"{what} must have one element, got shape {t.shape}")
    return bool(ctx.host(t).reshape(-1)[0])


def _tensors(ctx: OpContext, values: Sequence[Tensor | None], graph: GraphProto
             ) -> list[Tensor]:
    """A subgraph's outputs, all of which must be tensors."""
    out = []
    for proto, value in zip(graph.output, values, strict=True):
        if value is None:
            ctx.unsupported(f"subgraph {graph.name!r} output {proto.name!r} that is not a "
                            "tensor")
        out.append(value)
    return out


def _empty_scan_output(ctx: OpContext, graph: GraphProto, index: int, axis: int) -> Tensor:
    """The scan output ``index`` of ``graph`` after zero iterations: an empty tensor, which
    only the body's declared (static) per-iteration shape can give."""
    proto = graph.output[index]
    tensor_type = proto.type.tensor_type
    dims = [d.dim_value if d.HasField("dim_value") else -1 for d in tensor_type.shape.dim]
    if not proto.type.HasField("tensor_type") or not tensor_type.HasField("shape") \
            or any(d < 0 for d in dims) or tensor_type.elem_type == TensorProto.UNDEFINED:
        ctx.unsupported(f"a scan output ({proto.name!r}) after zero iterations whose body "
                        "does not declare its static shape and type")
    dtype = burnpy_dtype(tensor_type.elem_type, ctx.label)
    dims.insert(axis if axis >= 0 else len(dims) + 1 + axis, 0)
    return Tensor.zeros(dims, dtype=dtype, backend=ctx.backend, device=ctx.device)


@onnx_op("If", 1, attrs=("else_branch", "then_branch"))
def _if(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX If: runs ``then_branch`` or ``else_branch`` by the boolean condition."""
    cond = _truth(ctx, ctx.arg(inputs, 0), "the condition")
    graph = _body(ctx, attrs, "then_branch" if cond else "else_branch")
    return _tensors(ctx, ctx.run_subgraph(graph, []), graph)


@onnx_op("Loop", 1, attrs=("body",))
def _loop(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX Loop: runs ``body`` while the condition holds and fewer than ``M`` iterations
    ran, threading the loop-carried values and stacking the scan outputs along a new axis 0."""
    body = _body(ctx, attrs, "body")
    trip, cond_in = ctx.optional(inputs, 0), ctx.optional(inputs, 1)
    carried: list[Tensor] = []
    for i in range(2, len(inputs)):
        carried.append(ctx.arg(inputs, i))
    n_carried = len(body.input) - 2
    if n_carried != len(carried) or len(body.output) < 1 + n_carried:
        ctx.error(f"body {body.name!r} takes {len(body.input)} inputs and gives "
                  f"{len(body.output)} outputs for {len(carried)} loop-carried value(s)")
    max_trips = None if trip is None else int(ctx.scalar(trip))
    cond = True if cond_in is None else _truth(ctx, cond_in, "the condition")
    scans: list[list[Tensor]] = [[] for _ in range(len(body.output) - 1 - n_carried)]
    i = 0
    while cond and (max_trips is None or i < max_trips):
        feeds = [ctx.constant(np.int64(i)), ctx.constant(np.bool_(cond)), *carried]
        out = _tensors(ctx, ctx.run_subgraph(body, feeds), body)
        cond = _truth(ctx, out[0], "the body's condition output")
        carried = out[1:1 + n_carried]
        for acc, value in zip(scans, out[1 + n_carried:], strict=True):
            acc.append(value)
        i += 1
    stacked = [burnpy.stack(acc, dim=0) if acc
               else _empty_scan_output(ctx, body, 1 + n_carried + k, 0)
               for k, acc in enumerate(scans)]
    return [*carried, *stacked]


def _scan_loop(ctx: OpContext, body: GraphProto, states: list[Tensor],
               scan_inputs: list[Tensor], in_axes: list[int], in_reverse: list[bool],
               out_axes: list[int], out_reverse: list[bool], length: int
               ) -> tuple[list[Tensor], list[Tensor]]:
    """Run a Scan body over ``length`` slices of ``scan_inputs``; returns the final states
    and the scan outputs stacked along their axes."""
    n_out = len(body.output) - len(states)
    slices: list[list[Tensor]] = [[] for _ in range(n_out)]
    for step in range(length):
        feeds = [*states]
        for x, axis, rev in zip(scan_inputs, in_axes, in_reverse, strict=True):
            feeds.append(x.select(axis, length - 1 - step if rev else step))
        out = _tensors(ctx, ctx.run_subgraph(body, feeds), body)
        states = out[:len(states)]
        for acc, value in zip(slices, out[len(states):], strict=True):
            acc.append(value)
    stacked = []
    for k, (acc, axis, rev) in enumerate(zip(slices, out_axes, out_reverse, strict=True)):
        if not acc:
            stacked.append(_empty_scan_output(ctx, body, len(states) + k, axis))
            continue
        ordered = acc[::-1] if rev else acc
        rank = ordered[0].ndim + 1
        stacked.append(burnpy.stack(ordered, dim=axis % rank))
    return states, stacked


def _flags(ctx: OpContext, attrs: Attributes, name: str, count: int) -> list[int]:
    values = attrs.ints(name)
    if values is None:
        return [0] * count
    if len(values) != count:
        ctx.error(f"attribute {name!r} has {len(values)} values, expected {count}")
    return values


@onnx_op("Scan", 9, attrs=("body", "num_scan_inputs", "scan_input_axes",
                           "scan_input_directions", "scan_output_axes",
                           "scan_output_directions"))
def _scan(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX Scan (opset 9 on): iterates ``body`` over slices of the scan inputs along their
    axes, forward or reverse, carrying the states and stacking the scan outputs."""
    body = _body(ctx, attrs, "body")
    m = attrs.int("num_scan_inputs", 0)
    values = [ctx.arg(inputs, i) for i in range(len(inputs))]
    if m < 1 or m > len(values):
        ctx.error(f"num_scan_inputs={m} with {len(values)} inputs")
    states, scan_inputs = values[:len(values) - m], values[len(values) - m:]
    n_out = len(body.output) - len(states)
    in_axes = [a % x.ndim if x.ndim else a for a, x in
               zip(_flags(ctx, attrs, "scan_input_axes", m), scan_inputs, strict=True)]
    in_rev = [d != 0 for d in _flags(ctx, attrs, "scan_input_directions", m)]
    out_axes = _flags(ctx, attrs, "scan_output_axes", n_out)
    out_rev = [d != 0 for d in _flags(ctx, attrs, "scan_output_directions", n_out)]
    lengths = {x.shape[a] for x, a in zip(scan_inputs, in_axes, strict=True)}
    if len(lengths) != 1:
        ctx.error(f"scan inputs of different lengths {sorted(lengths)} along their axes")
    final, stacked = _scan_loop(ctx, body, states, scan_inputs, in_axes, in_rev, out_axes,
                                out_rev, lengths.pop())
    return [*final, *stacked]


@onnx_op("Scan", 8, attrs=("body", "directions", "num_scan_inputs"))
def _scan8(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX Scan of opset 8: a leading batch axis on every state and scan input (sequence
    axis 1), an optional ``sequence_lens`` per batch entry (shorter scan outputs are padded
    with zeros), run one batch entry at a time."""
    body = _body(ctx, attrs, "body")
    m = attrs.int("num_scan_inputs", 0)
    lens = ctx.optional(inputs, 0)
    values = [ctx.arg(inputs, i) for i in range(1, len(inputs))]
    if m < 1 or m > len(values):
        ctx.error(f"num_scan_inputs={m} with {len(values)} inputs after sequence_lens")
    states, scan_inputs = values[:len(values) - m], values[len(values) - m:]
    n_out = len(body.output) - len(states)
    rev = [d != 0 for d in _flags(ctx, attrs, "directions", m)]
    batch, seq = scan_inputs[0].shape[0], scan_inputs[0].shape[1]
    lengths = ctx.ints(lens) if lens is not None else [seq] * batch
    if len(lengths) != batch or any(n < 0 or n > seq for n in lengths):
        ctx.error(f"sequence_lens {lengths} do not fit batch {batch} and length {seq}")
    finals: list[list[Tensor]] = []
    outs: list[list[Tensor]] = []
    for b in range(batch):
        length = lengths[b]
        xs = [x[b].narrow(0, 0, length) for x in scan_inputs]
        final, stacked = _scan_loop(ctx, body, [s[b] for s in states], xs, [0] * m, rev,
                                    [0] * n_out, [False] * n_out, length)
        if length < seq:
            stacked = [burnpy.cat([y, Tensor.zeros((seq - length, *y.shape[1:]),
                                                   dtype=y.dtype, backend=ctx.backend,
                                                   device=ctx.device)], dim=0)
                       for y in stacked]
        finals.append(final)
        outs.append(stacked)
    return [*(burnpy.stack(list(v), dim=0) for v in zip(*finals, strict=True)),
            *(burnpy.stack(list(v), dim=0) for v in zip(*outs, strict=True))]
