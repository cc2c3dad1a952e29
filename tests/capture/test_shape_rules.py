"""The protocol ops' shape rules (``burnpy.ir.shapes``) against the shapes B really makes.

Every conformance case and a GPT training step are recorded on ``Capture(CpuBackend)``; each
recorded node whose op has a rule is asked its output shapes, first with the recorded plain
dims, then with every dim >= 2 a symbolic ``SymInt`` (the rule's dims must evaluate to B's,
its guards must hold, nothing converted). A hand list of the ops a GPT, MLP or CNN step runs is
then run by B at two sizes: the rule's expressions built at the first must give B's shapes at
the second."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

import numpy as np
import pytest

import burnpy as bp
from burnpy import optim
from burnpy.backend.dtype import DType
from burnpy.backend.ops.module_ops import ConvOptions, ConvTransposeOptions
from burnpy.capture import Capture
from burnpy.capture.graph import Graph, Node, Ref
from burnpy.examples.gpt_model import GPT, GPTConfig, decay_groups
from burnpy.ir import FUSABLE
from burnpy.ir.shapes import SHAPE_RULES, result_shapes
from burnpy.ir.symbolic import Sym, Tape, tracked
from burnpy.testing import parametrize_cases, run_case
from burnpy_cpu import CpuBackend

C = Capture(CpuBackend)
A = bp.Autodiff(C)
Shape = tuple[Any, ...]


def _cases() -> Iterator[tuple[Any, str]]:
    """Each conformance case with its first dtype, as the Capture suite runs them."""
    seen: set[str] = set()
    for p in parametrize_cases(C):
        case, dtype = p.values[0], p.values[1]
        if case.name not in seen:
            seen.add(case.name)
            yield case, str(dtype)


@cache
def _case_graphs() -> list[Graph]:
    graphs = []
    for case, dtype in _cases():
        with C.recording() as graph:
            try:
                run_case(case, C, dtype, seed=0)
            except pytest.skip.Exception:
                continue
        graphs.append(graph)
    return graphs


@cache
def _gpt_graphs() -> list[Graph]:
    """Two training steps of the GPT example with AdamW and clipping (the first step's Adam
    has no state yet), as ``test_compile``'s trainer runs them."""
    config = GPTConfig(vocab_size=11, block_size=8, n_layer=1, n_head=2, n_embd=8)
    model = GPT(config, backend=A)
    opt = optim.AdamW(decay_groups(model, 0.1), lr=3e-3, betas=(0.9, 0.99),
                      grad_clipping=optim.GradientClipping.norm(1.0))
    rng = np.random.default_rng(5)
    graphs = []
    for _ in range(2):
        x, y = (bp.Tensor.from_numpy(rng.integers(0, 11, (2, 8)), backend=A) for _ in "xy")
        with C.recording() as graph:
            opt.step(model, model.loss(x, y).backward())
        graphs.append(graph)
    return graphs


def _nodes(graphs: list[Graph]) -> list[tuple[Graph, Node]]:
    return [(g, n) for g in graphs for n in g.nodes if n.op in SHAPE_RULES]


def _made(graph: Graph, node: Node) -> list[Shape]:
    return [graph.values[i].desc.shape for i in node.outputs]


def _recorded_shape_of(graph: Graph) -> Callable[[Ref], Shape]:
    return lambda ref: graph.values[ref.index].desc.shape


def _check_plain(pairs: list[tuple[Graph, Node]]) -> list[str]:
    wrong = []
    for graph, node in pairs:
        got = result_shapes(node.op, node.args, node.kwargs, _recorded_shape_of(graph))
        if got != _made(graph, node):
            wrong.append(f"{node!r}: rule {got}, made {_made(graph, node)}")
    return wrong


def _symbolic_shape_of(graph: Graph, tape: Tape, values: list[int]) -> Callable[[Ref], Shape]:
    """Each tensor's dims, those >= 2 as symbols numbered in first-met order (``values``
    gets their plain values); the same value gets the same symbols each time."""
    seen: dict[int, Shape] = {}

    def shape_of(ref: Ref) -> Shape:
        if ref.index not in seen:
            seen[ref.index] = _symbols(graph.values[ref.index].desc.shape, tape, values)
        return seen[ref.index]
    return shape_of


def _symbols(shape: Shape, tape: Tape, values: list[int]) -> Shape:
    """``shape`` with each dim >= 2 a symbol reading ``values`` (its value appended there)."""
    dims = []
    for d in shape:
        if d >= 2:
            dims.append(tracked(d, len(values), tape, dims=True))
            values.append(d)
        else:
            dims.append(d)
    return tuple(dims)


def _evaluated(shapes: list[Shape], values: list[int]) -> list[Shape]:
    return [tuple(d.expr(values) if isinstance(d, Sym) else d for d in s) for s in shapes]


def _check_symbolic(pairs: list[tuple[Graph, Node]]) -> list[str]:
    wrong = []
    for graph, node in pairs:
        tape, values = Tape(), list[int]()
        got = result_shapes(node.op, node.args, node.kwargs,
                            _symbolic_shape_of(graph, tape, values))
        made = _made(graph, node)
        problem = ""
        if got is None:
            problem = "no shapes"
        elif _evaluated(got, values) != made:
            problem = f"evaluates to {_evaluated(got, values)}"
        elif not all(isinstance(d, int) for s in got for d in s):
            problem = f"non-int dims {got}"
        elif not tape.holds(values):
            problem = "a guard fails on the recorded dims"
        elif any(type(outcome) is not bool for _, outcome in tape.guards):
            problem = "a dim was converted (int()/index())"
        if problem:
            wrong.append(f"{node!r}: {problem}, made {made}")
    return wrong


def _report(wrong: list[str]) -> str:
    return f"{len(wrong)} wrong:\n" + "\n".join(wrong[:25])


def test_rules_give_every_recorded_conformance_shape() -> None:
    pairs = _nodes(_case_graphs())
    ops = {n.op for _, n in pairs}
    print(f"\nconformance: {len(pairs)} nodes of {len(ops)} ops checked")
    assert len(ops) > 200 and len(pairs) > 5000
    wrong = _check_plain(pairs)
    assert not wrong, _report(wrong)


def test_rules_with_symbolic_dims_evaluate_to_the_recorded_shapes() -> None:
    pairs = _nodes(_case_graphs()) + _nodes(_gpt_graphs())
    wrong = _check_symbolic(pairs)
    assert not wrong, _report(wrong)


def test_every_op_of_a_gpt_training_step_has_a_right_rule() -> None:
    ops = {n.op for g in _gpt_graphs() for n in g.nodes}
    assert {"adam_step", "attention_backward", "layer_norm_backward", "embedding_backward",
            "cross_entropy_backward", "float_cat", "float_slice"} <= ops
    assert not ops - SHAPE_RULES.keys()
    pairs = _nodes(_gpt_graphs())
    print(f"\nGPT step: {len(pairs)} nodes of {len(ops)} ops checked")
    wrong = _check_plain(pairs)
    assert not wrong, _report(wrong)


def test_every_fusable_and_composite_op_has_a_rule() -> None:
    assert not FUSABLE.keys() - SHAPE_RULES.keys()


# ---- two sizes --------------------------------------------------------------------------------
#: An op call at size ``n`` (0 or 1): its name, its tensors' shapes and kinds (``"f"``, or the
#: bound ``k`` of an int tensor's values in ``[0, k)``), its positional arguments from those
#: tensors and their (maybe symbolic) shapes, and its keyword arguments.
Args = Callable[[list[Any], list[Shape]], tuple[Any, ...]]
Call = tuple[str, list[tuple[Shape, Any] | None], Args, dict[str, Any]]

ALL: Args = lambda t, s: tuple(t)  # noqa: E731 - the tensors, in order
F = "f"
CONV = ConvOptions((1, 2), (1, 0), (1, 1), 1)
CONV_T = ConvTransposeOptions((2, 1), (1, 0), (1, 0), (1, 1), 1)
POOL = ((2, 2), (2, 2), (0, 0), False, False)


def _call(op: str, inputs: list[tuple[Shape, Any] | None], args: Args = ALL, **kwargs: Any) -> Call:
    return op, inputs, args, kwargs


SIZED: dict[str, Callable[[int], Call]] = {
    "matmul": lambda n: _call("float_matmul", [((2, 3 + n, 4 + n), F), ((2, 4 + n, 5 + 2 * n), F)]),
    "linear": lambda n: _call("linear", [((2, 3 + n, 4 + n), F), ((6, 4 + n), F), ((6,), F)]),
    "reshape -1": lambda n: _call("float_reshape", [((2, 3 + n, 4 + n), F)],
                                  lambda t, s: (t[0], (-1, s[0][2]))),
    "reshape": lambda n: _call("float_reshape", [((2, 3 + n, 4), F)],
                               lambda t, s: (t[0], (s[0][0] * s[0][1], 2, 2))),
    "cat": lambda n: _call("float_cat", [((2, 3 + n), F), ((2, 5 + 2 * n), F)],
                           lambda t, s: (list(t), 1)),
    "slice": lambda n: _call("float_slice", [((4 + n, 6 + 2 * n), F)],
                             lambda t, s: (t[0], (slice(1, s[0][0] - 1), slice(2, s[0][1], 2)))),
    "slice_assign": lambda n: _call("float_slice_assign", [((4 + n, 6), F), ((2 + n, 6), F)],
                                    lambda t, s: (t[0], (slice(2, s[0][0]),), t[1])),
    "conv2d": lambda n: _call("conv2d", [((2, 3, 7 + n, 8 + 2 * n), F), ((4, 3, 3, 2), F),
                                         ((4,), F)], lambda t, s: (*t, CONV)),
    "conv1d": lambda n: _call("conv1d", [((2, 3, 9 + n), F), ((4, 3, 3), F), None],
                              lambda t, s: (t[0], t[1], None,
                                            ConvOptions((2,), (1,), (2,), 1))),
    "conv_x_backward": lambda n: _call("conv_x_backward", [
        ((2, 3, 7 + n, 8 + 2 * n), F), ((4, 3, 3, 2), F), ((2, 4, 7 + n, 4 + n), F)],
        lambda t, s: (*t, CONV)),
    "conv_weight_backward": lambda n: _call("conv_weight_backward", [
        ((2, 3, 7 + n, 8 + 2 * n), F), ((4, 3, 3, 2), F), ((2, 4, 7 + n, 4 + n), F)],
        lambda t, s: (*t, CONV)),
    "conv_bias_backward": lambda n: _call("conv_bias_backward", [((2, 4 + n, 5 + n, 6), F)]),
    "conv_transpose2d": lambda n: _call("conv_transpose2d", [
        ((2, 3, 4 + n, 5), F), ((3, 4, 3, 3), F), ((4,), F)], lambda t, s: (*t, CONV_T)),
    "conv_transpose_x_backward": lambda n: _call("conv_transpose_x_backward", [
        ((2, 3, 4 + n, 5), F), ((3, 4, 3, 3), F), ((2, 4, 8 + 2 * n, 7), F)],
        lambda t, s: (*t, CONV_T)),
    "conv_transpose_weight_backward": lambda n: _call("conv_transpose_weight_backward", [
        ((2, 3, 4 + n, 5), F), ((3, 4, 3, 3), F), ((2, 4, 8 + 2 * n, 7), F)],
        lambda t, s: (*t, CONV_T)),
    "max_pool2d": lambda n: _call("max_pool2d", [((2, 3, 7 + n, 8 + 3 * n), F)],
                                  lambda t, s: (t[0], (2, 3), (2, 2), (1, 0), (1, 1), False)),
    "max_pool2d_with_indices": lambda n: _call(
        "max_pool2d_with_indices", [((2, 3, 7 + 2 * n, 8 + 3 * n), F)],  # one ceil branch
        lambda t, s: (t[0], (2, 3), (2, 2), (1, 0), (1, 1), True)),
    "max_pool_with_indices_backward": lambda n: _call(
        "max_pool_with_indices_backward",
        [((2, 3, 6 + 2 * n, 6), F), ((2, 3, 3 + n, 3), F), ((2, 3, 3 + n, 3), 36)]),
    "avg_pool2d": lambda n: _call("avg_pool2d", [((2, 3, 6 + 2 * n, 7), F)],
                                  lambda t, s: (t[0], *POOL)),
    "avg_pool_backward": lambda n: _call("avg_pool_backward",
                                         [((2, 3, 6 + 2 * n, 7), F), ((2, 3, 3 + n, 3), F)],
                                         lambda t, s: (*t, *POOL)),
    "adaptive_avg_pool2d": lambda n: _call("adaptive_avg_pool2d", [((2, 3, 6 + 2 * n, 5), F)],
                                           lambda t, s: (t[0], (s[0][2] // 2, 2))),
    "adaptive_avg_pool_backward": lambda n: _call(
        "adaptive_avg_pool_backward", [((2, 3, 6 + 2 * n, 5), F), ((2, 3, 3 + n, 2), F)]),
    "interpolate_backward": lambda n: _call(
        "interpolate_backward", [((2, 3, 4 + n, 5), F), ((2, 3, 8 + 2 * n, 7), F)],
        lambda t, s: (*t, (2 * s[0][2], 7), "bilinear", False)),
    "batch_norm_backward": lambda n: _call(
        "batch_norm_backward", [((2 + n, 3, 5 + n), F), ((3,), F), ((2 + n, 3, 5 + n), F)],
        lambda t, s: (*t, 1e-5)),
    "rms_norm_backward": lambda n: _call(
        "rms_norm_backward", [((2, 3 + n, 4 + n), F), ((4 + n,), F), ((2, 3 + n, 4 + n), F)],
        lambda t, s: (t[0], 1, t[1], t[2], 1e-5)),
    "lstm_states": lambda n: _call("lstm_states", [((4 + n, 2 + n, 12), F), ((12, 3), F),
                                                   ((2 + n, 3), F), ((2 + n, 3), F)]),
    "lstm_backward": lambda n: _call("lstm_backward", [
        ((12, 3), F), ((2 + n, 3), F), ((2 + n, 3), F), ((5 + n, 2 + n, 3), F),
        ((4 + n, 2 + n, 12), F), ((4 + n, 2 + n, 3), F), ((5 + n, 2 + n, 3), F)]),
    "embedding": lambda n: _call("embedding", [((11, 4 + n), F), ((2, 5 + n), 11)]),
    "embedding_backward": lambda n: _call(
        "embedding_backward", [((11, 4), F), ((2, 5 + n, 4), F), ((2, 5 + n), 11)]),
    "cross_entropy": lambda n: _call("cross_entropy", [((6 + n, 5 + n), F), ((6 + n,), 5)],
                                     lambda t, s: (*t, -100)),
    "cross_entropy_backward": lambda n: _call(
        "cross_entropy_backward", [((6 + n, 5), F), ((6 + n,), 5), ((6 + n,), F)],
        lambda t, s: (t[0], t[1], -100, t[2])),
    "layer_norm": lambda n: _call("layer_norm", [((2, 3 + n, 4 + n), F), ((4 + n,), F),
                                                 ((4 + n,), F)],
                                  lambda t, s: (t[0], 1, t[1], t[2], 1e-5)),
    "layer_norm_backward": lambda n: _call(
        "layer_norm_backward", [((2, 3 + n, 4), F), ((4,), F), ((2, 3 + n, 4), F)],
        lambda t, s: (t[0], 1, t[1], t[2], 1e-5)),
    "sum_dim": lambda n: _call("float_sum_dim", [((2, 3 + n, 4 + n), F)], lambda t, s: (t[0], 1)),
    "add": lambda n: _call("float_add", [((2, 3 + n, 4 + n), F), ((4 + n,), F)]),
    "relu_backward": lambda n: _call("relu_backward", [((3 + n, 4), F), ((3 + n, 4), F)]),
    "expand": lambda n: _call("float_expand", [((3 + n, 1), F)],
                              lambda t, s: (t[0], (2, s[0][0], 2 * s[0][0] - 1))),
    "swap_dims": lambda n: _call("float_swap_dims", [((2, 3 + n, 4 + 2 * n), F)],
                                 lambda t, s: (t[0], -1, 1)),
    "permute": lambda n: _call("float_permute", [((2, 3 + n, 4 + 2 * n), F)],
                               lambda t, s: (t[0], (2, 0, 1))),
    "unfold": lambda n: _call("float_unfold", [((2, 7 + n), F)], lambda t, s: (t[0], 1, 3, 2)),
    "repeat_dim": lambda n: _call("float_repeat_dim", [((2, 3 + n), F)],
                                  lambda t, s: (t[0], 1, 3)),
    "gather": lambda n: _call("float_gather", [((3, 5 + n), F), ((3, 4 + n), 5)],
                              lambda t, s: (t[0], 1, t[1])),
    "select": lambda n: _call("float_select", [((5 + n, 3), F), ((4 + 2 * n,), 5)],
                              lambda t, s: (t[0], 0, t[1])),
    "argmax": lambda n: _call("float_argmax", [((3 + n, 4 + n), F)], lambda t, s: (t[0], 1)),
    "topk": lambda n: _call("float_topk_with_indices", [((3 + n, 4 + n), F)],
                            lambda t, s: (t[0], 2, -1, True)),
    "cummax": lambda n: _call("float_cummax", [((3 + n, 4 + n), F)], lambda t, s: (t[0], 1)),
    "attention_weights": lambda n: _call(
        "attention_weights", [((2, 3, 5 + n, 4 + n), F), ((2, 3, 6 + 2 * n, 4 + n), F)],
        lambda t, s: (t[0], t[1], None, None, True)),
    "attention_backward": lambda n: _call(
        "attention_backward", [((2, 5 + n, 4), F), ((2, 5 + n, 4), F), ((2, 5 + n, 3), F),
                               ((2, 5 + n, 3), F)],
        lambda t, s: (t[0], t[1], t[2], None, None, True, t[3])),
    "arange": lambda n: _call("int_arange", [((5 + n,), F)],
                              lambda t, s: (1, s[0][0], 2, CpuBackend.default_device(),
                                            DType.int64)),
    "zeros": lambda n: _call("float_zeros", [((5 + n, 3), F)],
                             lambda t, s: ((s[0][0] + 1, 2), CpuBackend.default_device(),
                                           DType.float32)),
    "sgd_step": lambda n: _call("sgd_step", [((3 + n, 4), F), ((3 + n, 4), F), None],
                                lambda t, s: (t[0], t[1], None), lr=0.1, momentum=0.9),
    "rmsprop_step": lambda n: _call("rmsprop_step", [((3 + n, 4), F)] * 2,
                                    lambda t, s: (*t, None, None, None), lr=0.1, alpha=0.9,
                                    eps=1e-8, momentum=0.5, centered=True),
    "adam_step": lambda n: _call("adam_step", [((3 + n, 4), F)] * 5, step=2, lr=0.1,
                                 beta1=0.9, beta2=0.99, eps=1e-8, amsgrad=True),
}


def _tensors(inputs: list[Any], rng: np.random.Generator) -> list[Any]:
    """Arrays for ``inputs`` (an entry None stands for an absent optional tensor)."""
    return [None if spec is None else rng.standard_normal(spec[0]).astype(np.float32)
            if spec[1] == F else rng.integers(0, spec[1], spec[0]) for spec in inputs]


def _shapes_made(result: Any) -> list[Shape]:
    if result is None:
        return []
    if isinstance(result, tuple | list):
        return [s for r in result for s in _shapes_made(r)]
    return [tuple(result.shape)]


def _shapes(inputs: list[Any]) -> list[Shape]:
    return [() if spec is None else spec[0] for spec in inputs]


@pytest.mark.parametrize("name", sorted(SIZED))
def test_rules_built_at_one_size_give_the_shapes_at_another(name: str) -> None:
    rng = np.random.default_rng(0)
    op, small, args_of, kwargs = SIZED[name](0)
    _, large, large_args_of, large_kwargs = SIZED[name](1)
    tape, values = Tape(), list[int]()
    small_shapes, large_shapes = _shapes(small), _shapes(large)
    symbolic = [_symbols(shape, tape, values) for shape in small_shapes]
    tensors = _tensors(small, rng)
    by_id = {id(t): s for t, s in zip(tensors, symbolic, strict=True)}
    got = result_shapes(op, args_of(tensors, symbolic), kwargs, lambda p: by_id[id(p)])
    assert got is not None
    run = getattr(CpuBackend, op)
    assert _evaluated(got, values) == _shapes_made(run(*args_of(tensors, small_shapes),
                                                       **kwargs))
    later = [d for shape, at_small in zip(large_shapes, small_shapes, strict=True)
             for d, d0 in zip(shape, at_small, strict=True) if d0 >= 2]
    made = _shapes_made(run(*large_args_of(_tensors(large, rng), large_shapes), **large_kwargs))
    assert tape.holds(later), "the rule's guards reject a valid size"
    assert _evaluated(got, later) == made
    assert any(isinstance(d, Sym) for s in got for d in s)


def _plain_shape_of(shapes: dict[str, Shape]) -> Callable[[str], Shape]:
    return lambda name: shapes[name]


@pytest.mark.parametrize(("op", "args", "shapes"), [
    ("float_add", ("a", "b"), {"a": (3, 4), "b": (5, 4)}),
    ("float_mask_where", ("a", "m", "b"), {"a": (3, 4), "m": (2, 4), "b": (4,)}),
    ("float_matmul", ("a", "b"), {"a": (2, 3, 4), "b": (2, 5, 6)}),
    ("float_matmul", ("a", "b"), {"a": (3, 4), "b": (2, 4, 6)}),
    ("float_reshape", ("a", (5, -1)), {"a": (3, 4)}),
    ("float_reshape", ("a", (5, 3)), {"a": (3, 4)}),
    ("float_reshape", ("a", (-1, -1)), {"a": (3, 4)}),
    ("float_expand", ("a", (3, 5)), {"a": (3, 4)}),
    ("float_expand", ("a", (4,)), {"a": (3, 4)}),
    ("float_cat", (["a", "b"], 1), {"a": (3, 4), "b": (2, 4)}),
    ("float_slice", ("a", (slice(0, 5),)), {"a": (3, 4)}),
    ("float_sum_dim", ("a", 2), {"a": (3, 4)}),
    ("float_swap_dims", ("a", 0, 2), {"a": (3, 4)}),
    ("float_permute", ("a", (0, 0)), {"a": (3, 4)}),
    ("linear", ("x", "w", None), {"x": (2, 5), "w": (3, 4)}),
    ("embedding", ("w", "i"), {"w": (3, 4, 5), "i": (2,)}),
    ("cross_entropy", ("x", "t", -100), {"x": (3, 4), "t": (4,)}),
    ("layer_norm", ("x", 1, "w", None, 1e-5), {"x": (3, 4), "w": (3,)}),
    ("conv2d", ("x", "w", None, ConvOptions((1, 1), (0, 0), (1, 1), 1)),
     {"x": (1, 3, 5, 5), "w": (2, 4, 3, 3)}),
    ("conv2d", ("x", "w", None, ConvOptions((1, 1), (0, 0), (1, 1), 1)),
     {"x": (1, 3, 2, 5), "w": (2, 3, 3, 3)}),
    ("attention_weights", ("q", "k", None, None, False), {"q": (2, 3, 4), "k": (2, 5, 6)}),
    ("adam_step", ("p", "g", None, None, None), {"p": (3, 4), "g": (4, 3)}),
])
def test_rules_refuse_invalid_arguments(op: str, args: tuple[Any, ...],
                                        shapes: dict[str, Shape]) -> None:
    kwargs = dict(step=1, lr=0.1, beta1=0.9, beta2=0.99, eps=1e-8) if op == "adam_step" else {}
    assert result_shapes(op, args, kwargs, _plain_shape_of(shapes)) is None


def test_the_guards_of_a_rule_hold_exactly_where_its_shapes_do() -> None:
    tape, values = Tape(), list[int]()
    a, b = _symbols((4, 3), tape, values), _symbols((3,), tape, values)
    out = result_shapes("float_matmul", ("a", "b"), {},
                        _plain_shape_of({"a": (2, *a), "b": (2, b[0], 5)}))
    assert out is not None and _evaluated(out, [7, 6, 6]) == [(2, 7, 5)]
    assert tape.holds([7, 6, 6]) and not tape.holds([7, 6, 5])  # the inner dims must agree
