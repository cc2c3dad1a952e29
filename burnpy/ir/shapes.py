"""The output-shape rules of the protocol ops: the shapes of the tensors an op call makes, computed
from its arguments' shapes without running it.

A dynamic recording (``bp.compile(dynamic=True)``) asks ``result_shapes`` for each recorded op's
output shapes while the dims are ``SymInt``s (``burnpy.ir.symbolic``): ints whose arithmetic
keeps an expression and whose comparisons record guards. So every rule computes dims with Python
arithmetic (``+ - * // %``), comparisons, ``min``/``max`` and tuple building only (never
``int()``, ``range(d)`` or a type test on a dim, which would drop the expression or convert it
silently), and checks what the op requires with comparisons (broadcast dims equal or 1, element
counts equal, inner dims equal), whose recorded guards make the graph valid for other dims
only where those hold. A rule returns None when the arguments are not valid: the op then runs
and names the error. Dim *arguments* (``dim=-1``, ``keepdim``, ranks) are plain ints; shape
arguments (a reshape target, slice bounds, ``int_arange``'s end) may hold ``SymInt``s.

The elementwise ops and reductions ``Fusion`` records (``burnpy.ir.fused.FUSABLE``) and their
compositions (``ELEMENTWISE_COMPOSITES``) get their rules from those declarations; the
structural, module and optimizer ops have hand rules, grouped where families share a law.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

from burnpy.backend.base import Backend
from burnpy.backend.ops.module_ops import (
    conv_output_size,
    conv_transpose_output_size,
    pool_output_size,
)
from burnpy.ir.fused import ELEMENTWISE_COMPOSITES, FUSABLE, Fusable

Shape = tuple[Any, ...]
ShapeOf = Callable[[Any], Shape]
#: A rule: the call's arguments (every parameter, in signature order, defaults filled in) and
#: the shape lookup of its tensors, to the result's tensor shapes (None: invalid arguments).
Rule = Callable[[tuple[Any, ...], ShapeOf], "list[Shape] | None"]


def result_shapes(op: str, args: tuple[Any, ...], kwargs: dict[str, Any],
                  shape_of: Callable[[Any], tuple[Any, ...]]) -> list[tuple[Any, ...]] | None:
    """The shapes of the tensors protocol op ``op`` makes from ``args``/``kwargs`` (its call's
    arguments as passed: tensors are primitives, whose dims ``shape_of(p)`` gives), one per
    tensor of its result in order (a tuple result's None entries skipped), or None where no
    rule is known or the arguments are not valid (B then runs the op and names the error)."""
    rule = SHAPE_RULES.get(op)
    if rule is None:
        return None
    bound = _bind(op, args, kwargs)
    return None if bound is None else rule(bound, shape_of)


# ---- arguments --------------------------------------------------------------------------------
@cache
def _signature(op: str) -> tuple[tuple[str, ...], tuple[Any, ...], frozenset[int]]:
    """``op``'s parameter names, their defaults (``inspect.Parameter.empty`` where required) and
    the positions of its tensor parameters (annotated with a primitive type)."""
    attr = inspect.getattr_static(Backend, op)
    function = attr.__func__ if isinstance(attr, staticmethod | classmethod) else attr
    parameters = list(inspect.signature(function).parameters.values())
    if isinstance(attr, classmethod):
        parameters = parameters[1:]
    return (tuple(p.name for p in parameters), tuple(p.default for p in parameters),
            frozenset(i for i, p in enumerate(parameters) if "Primitive" in str(p.annotation)))


def _bind(op: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...] | None:
    """Every parameter's argument in signature order (None if the call does not fit)."""
    names, defaults, _ = _signature(op)
    if len(args) > len(names) or any(k not in names[len(args):] for k in kwargs):
        return None
    rest = [kwargs.get(n, d) for n, d in zip(names[len(args):], defaults[len(args):],
                                               strict=True)]
    if any(v is inspect.Parameter.empty for v in rest):
        return None
    return (*args, *rest)


# ---- shape laws -------------------------------------------------------------------------------
def _axis(dim: int, rank: int) -> int | None:
    """``dim`` (negative counts from the end) as an index below ``rank``, None out of range."""
    return dim % rank if -rank <= dim < rank else None


def _broadcast(shapes: Sequence[Shape]) -> Shape | None:
    """NumPy broadcasting: shapes right-aligned, each dim equal or 1 (None if they clash)."""
    rank = max(len(s) for s in shapes)
    out: list[Any] = []
    for i in range(rank):
        dim: Any = 1
        for shape in shapes:
            j = len(shape) - rank + i
            if j < 0:
                continue
            d = shape[j]
            if dim == 1:
                dim = d
            elif d != 1 and d != dim:
                return None
        out.append(dim)
    return tuple(out)


def _expanded(shape: Shape, target: Sequence[Any]) -> Shape | None:
    """``shape`` broadcast to ``target`` (``expand``: same rank or more leading dims, size-1
    dims stretched), None where it does not fit."""
    lead = len(target) - len(shape)
    if lead < 0:
        return None
    for i, d in enumerate(target):
        j = i - lead
        if j >= 0 and shape[j] == d:
            continue
        if d < 0 or (j >= 0 and shape[j] != 1):
            return None
    return tuple(target)


def _kept(shape: Shape, dim: int) -> Shape | None:
    """``shape`` reduced along ``dim``, kept with size 1."""
    axis = _axis(dim, len(shape))
    return None if axis is None else (*shape[:axis], 1, *shape[axis + 1:])


def _replaced(shape: Shape, dim: int, size: Any) -> Shape | None:
    """``shape`` with dim ``dim`` of ``size``."""
    axis = _axis(dim, len(shape))
    return None if axis is None else (*shape[:axis], size, *shape[axis + 1:])


def _matmul(lhs: Shape, rhs: Shape) -> Shape | None:
    """``[..., m, k] @ [..., k, n]``: same rank >= 2, batch dims broadcast."""
    if len(lhs) != len(rhs) or len(lhs) < 2 or lhs[-1] != rhs[-2]:
        return None
    batch = _broadcast([lhs[:-2], rhs[:-2]])
    return None if batch is None else (*batch, lhs[-2], rhs[-1])


def _transposed(shape: Shape) -> Shape:
    return (*shape[:-2], shape[-1], shape[-2])


def _reshaped(old: Shape, new: Sequence[Any]) -> Shape | None:
    """``new`` with a single ``-1`` resolved from the element count, None unless it holds as
    many elements as ``old``."""
    total = math.prod(old)
    free = [i for i, d in enumerate(new) if d < 0]
    target = tuple(new)
    if free:
        i = free[0]
        if len(free) > 1 or new[i] != -1:
            return None
        known = math.prod(target[:i] + target[i + 1:])
        if known == 0:
            return None
        target = (*target[:i], total // known, *target[i + 1:])
    return target if math.prod(target) == total else None


def _sliced(shape: Shape, slices: Sequence[slice]) -> Shape | None:
    """The region of normalized ``slices`` (``0 <= start <= stop <= size``, positive steps;
    trailing dims whole)."""
    if len(slices) > len(shape):
        return None
    out: list[Any] = []
    for s, size in zip(slices, shape, strict=False):
        start = 0 if s.start is None else s.start
        stop = size if s.stop is None else s.stop
        step = 1 if s.step is None else s.step
        if not (step > 0 and 0 <= start <= stop <= size):
            return None
        out.append((stop - start + step - 1) // step)
    return (*out, *shape[len(slices):])


def _one(shape: Shape | None) -> list[Shape] | None:
    return None if shape is None else [shape]


# ---- rule makers ------------------------------------------------------------------------------
def _broadcasting(positions: Sequence[int]) -> Rule:
    """The broadcast shape of the tensors at ``positions`` (an optional one may be None)."""
    def rule(a: tuple[Any, ...], s: ShapeOf) -> list[Shape] | None:
        shapes = [s(a[p]) for p in positions if a[p] is not None]
        return _one(_broadcast(shapes)) if shapes else None
    return rule


def _from_fusable(op: str, spec: Fusable) -> Rule:
    """The rule ``Fusion``'s declaration implies: tensor operands broadcast, ``expand`` to the
    shape at ``extra``, reductions to ``()`` or with their dim kept as 1."""
    if spec.result == "expand":
        extra = spec.extra
        assert extra is not None
        return lambda a, s: _one(_expanded(s(a[0]), a[extra]))
    if spec.result == "reduce":
        if spec.extra is None:
            return lambda a, s: [()]
        at = spec.extra
        return lambda a, s: _one(_kept(s(a[0]), a[at]))
    tensors = _signature(op)[2]
    return _broadcasting([p for p in spec.operands if p in tensors])


def _same(count: int = 1, dim: int | None = None) -> Rule:
    """``count`` tensors shaped like the first argument (its dim argument at ``dim`` checked)."""
    def rule(a: tuple[Any, ...], s: ShapeOf) -> list[Shape] | None:
        shape = s(a[0])
        if dim is not None and _axis(a[dim], len(shape)) is None:
            return None
        return [shape] * count
    return rule


def _keepdim(count: int = 1) -> Rule:
    """``count`` tensors: the first argument reduced along the dim at position 1, kept."""
    def rule(a: tuple[Any, ...], s: ShapeOf) -> list[Shape] | None:
        kept = _kept(s(a[0]), a[1])
        return None if kept is None else [kept] * count
    return rule


def _square(shape: Shape) -> bool:
    return len(shape) >= 2 and shape[-1] == shape[-2]


# ---- structural ops ---------------------------------------------------------------------------
def _swap_dims(a: tuple[Any, ...], s: ShapeOf) -> list[Shape] | None:
    shape = s(a[0])
    i, j = _axis(a[1], len(shape)), _axis(a[2], len(shape))
    if i is None or j is None:
        return None
    out = list(shape)
    out[i], out[j] = shape[j], shape[i]
    return [tuple(out)]


def _permute(a: tuple[Any, ...], s: ShapeOf) -> list[Shape] | None:
    shape = s(a[0])
    axes = [_axis(d, len(shape)) for d in a[1]]
    if None in axes or sorted(axes) != list(range(len(shape))):  # type: ignore[type-var]
        return None
    return [tuple(shape[x] for x in axes)]  # type: ignore[index]


def _flip(a: tuple[Any, ...], s: ShapeOf) -> list[Shape] | None:
    shape = s(a[0])
    return None if any(_axis(d, len(shape)) is None for d in a[1]) else [shape]


def _cat(a: tuple[Any, ...], s: ShapeOf) -> list[Shape] | None:
    shapes = [s(t) for t in a[0]]
    if not shapes:
        return None
    first = shapes[0]
    axis = _axis(a[1], len(first))
    if axis is None or any(len(x) != len(first) for x in shapes):
        return None
    for x in shapes[1:]:
        if any(x[i] != first[i] for i in range(len(first)) if i != axis):
            return None
    return [(*first[:axis], sum(x[axis] for x in shapes), *first[axis + 1:])]


def _slice_assign(a: tuple[Any, ...], s: ShapeOf) -> list[Shape] | None:
    shape = s(a[0])
    region = _sliced(shape, a[1])
    if region is None or _expanded(s(a[2]), region) is None:
        return None
    return [shape]


def _repeat_dim(a: tuple[Any, ...], s: ShapeOf) -> list[Shape] | None:
    shape = s(a[0])
    axis = _axis(a[1], len(shape))
    if axis is None or a[2] < 0:
        return None
    return _one(_replaced(shape, axis, shape[axis] * a[2]))


def _unfold(a: tuple[Any, ...], s: ShapeOf) -> list[Shape] | None:
    shape, size, step = s(a[0]), a[2], a[3]
    axis = _axis(a[1], len(shape))
    if axis is None or step <= 0 or size < 0 or size > shape[axis]:
        return None
    return [(*shape[:axis], (shape[axis] - size) // step + 1, *shape[axis + 1:], size)]


def _gather(a: tuple[Any, ...], s: ShapeOf) -> list[Shape] | None:
    shape, index = s(a[0]), s(a[2])
    axis = _axis(a[1], len(shape))
    if axis is None or len(index) != len(shape) or any(
            index[i] > shape[i] for i in range(len(shape)) if i != axis):
        return None
    return [index]


def _select(a: tuple[Any, ...], s: ShapeOf) -> list[Shape] | None:
    index = s(a[2])
    return _one(_replaced(s(a[0]), a[1], index[0])) if len(index) == 1 else None


def _select_into(a: tuple[Any, ...], s: ShapeOf) -> list[Shape] | None:
    """``select_add``/``select_assign``: the tensor's shape; ``values`` shaped like the rows."""
    shape, index = s(a[0]), s(a[2])
    rows = _replaced(shape, a[1], index[0]) if len(index) == 1 else None
    return None if rows is None or s(a[3]) != rows else [shape]


def _scatter(a: tuple[Any, ...], s: ShapeOf) -> list[Shape] | None:
    shape = s(a[0])
    if _axis(a[1], len(shape)) is None or not len(s(a[2])) == len(s(a[3])) == len(shape):
        return None
    return [shape]


def _topk(a: tuple[Any, ...], s: ShapeOf) -> list[Shape] | None:
    shape, k = s(a[0]), a[1]
    axis = _axis(a[2], len(shape))
    if axis is None or k < 0 or k > shape[axis]:
        return None
    out = (*shape[:axis], k, *shape[axis + 1:])
    return [out, out]


def _created(a: tuple[Any, ...], s: ShapeOf) -> list[Shape] | None:
    """``zeros``/``ones``/``full``/``empty``/``random``: the shape argument, first."""
    shape = tuple(a[0])
    return None if any(d < 0 for d in shape) else [shape]


def _arange(a: tuple[Any, ...], s: ShapeOf) -> list[Shape] | None:
    start, end, step = a[0], a[1], a[2]
    if step == 0:
        return None
    return [(max(0, -((start - end) // step)),)]


# ---- linear algebra ---------------------------------------------------------------------------
def _matmul_rule(a: tuple[Any, ...], s: ShapeOf) -> list[Shape] | None:
    return _one(_matmul(s(a[0]), s(a[1])))


def _square_same(a: tuple[Any, ...], s: ShapeOf) -> list[Shape] | None:
    shape = s(a[0])
    return [shape] if _square(shape) else None


def _slogdet(a: tuple[Any, ...], s: ShapeOf) -> list[Shape] | None:
    shape = s(a[0])
    return [shape[:-2]] * 2 if _square(shape) else None


def _eigh(a: tuple[Any, ...], s: ShapeOf) -> list[Shape] | None:
    shape = s(a[0])
    return [shape[:-1], shape] if _square(shape) else None


def _solve(a: tuple[Any, ...], s: ShapeOf) -> list[Shape] | None:
    lhs, rhs = s(a[0]), s(a[1])
    if not _square(lhs) or len(rhs) != len(lhs) or lhs[:-1] != rhs[:-1]:
        return None
    return [rhs]


def _qr(a: tuple[Any, ...], s: ShapeOf) -> list[Shape] | None:
    shape = s(a[0])
    if len(shape) < 2:
        return None
    *batch, m, n = shape
    k = m if a[1] else min(m, n)
    return [(*batch, m, k), (*batch, k, n)]


def _svd(a: tuple[Any, ...], s: ShapeOf) -> list[Shape] | None:
    shape = s(a[0])
    if len(shape) < 2:
        return None
    *batch, m, n = shape
    k = min(m, n)
    if a[1]:
        return [(*batch, m, m), (*batch, k), (*batch, n, n)]
    return [(*batch, m, k), (*batch, k), (*batch, k, n)]


# ---- module ops -------------------------------------------------------------------------------
def _linear(a: tuple[Any, ...], s: ShapeOf) -> list[Shape] | None:
    x, weight = s(a[0]), s(a[1])
    if len(x) < 1 or len(weight) != 2 or x[-1] != weight[1]:
        return None
    rows = (math.prod(x[:-1]), weight[0])
    if a[2] is not None and _broadcast([rows, s(a[2])]) != rows:
        return None
    return [(*x[:-1], weight[0])]


def _embedding(a: tuple[Any, ...], s: ShapeOf) -> list[Shape] | None:
    weight = s(a[0])
    return [(*s(a[1]), weight[1])] if len(weight) == 2 else None


def _embedding_backward(a: tuple[Any, ...], s: ShapeOf) -> list[Shape] | None:
    weight = s(a[0])
    if len(weight) != 2 or math.prod(s(a[1])) != math.prod(s(a[2])) * weight[1]:
        return None
    return [weight]


def _classes(a: tuple[Any, ...], s: ShapeOf) -> Shape | None:
    """``cross_entropy``'s ``logits [n, c]`` when ``target`` is ``[n]``."""
    logits = s(a[0])
    return logits if len(logits) == 2 and s(a[1]) == logits[:1] else None


def _cross_entropy(a: tuple[Any, ...], s: ShapeOf) -> list[Shape] | None:
    logits = _classes(a, s)
    return None if logits is None else [logits[:1]]


def _cross_entropy_backward(a: tuple[Any, ...], s: ShapeOf) -> list[Shape] | None:
    logits = _classes(a, s)
    return None if logits is None or math.prod(s(a[3])) != logits[0] else [logits]


def _trailing(x: Shape, ndim: int) -> Shape | None:
    """The trailing ``ndim`` dims a layer/RMS norm normalizes over."""
    return x[len(x) - ndim:] if 0 <= ndim <= len(x) else None


def _norm(grads: int, weight: int, others: tuple[int, ...], backward: bool) -> Rule:
    """``layer_norm``/``rms_norm`` (x at 0, ``normalized_ndim`` at 1) and their backwards: x's
    shape, then ``grads`` tensors shaped like the normalized dims; the weight (at ``weight``)
    and the tensors at ``others`` hold as many elements as those dims, a backward's grad
    (at 3) as many as x."""
    def rule(a: tuple[Any, ...], s: ShapeOf) -> list[Shape] | None:
        x = s(a[0])
        trailing = _trailing(x, a[1])
        if trailing is None:
            return None
        width = math.prod(trailing)
        if any(a[p] is not None and math.prod(s(a[p])) != width for p in (weight, *others)):
            return None
        if backward and math.prod(s(a[3])) != math.prod(x):
            return None
        return [x, *[trailing] * grads]
    return rule


def _batch_norm(grad: int | None) -> Rule:
    """``batch_norm`` (``(y, mean, var)``) and its backward (``(dx, dweight, dbias)``) of
    ``x [n, c, *]``: x's shape and two ``[c]``; the weight (and bias, or the grad at ``grad``)
    checked."""
    def rule(a: tuple[Any, ...], s: ShapeOf) -> list[Shape] | None:
        x = s(a[0])
        if len(x) < 2:
            return None
        c = x[1]
        if any(a[p] is not None and math.prod(s(a[p])) != c
               for p in ((1,) if grad is not None else (1, 2))):
            return None
        if grad is not None and math.prod(s(a[grad])) != math.prod(x):
            return None
        return [x, (c,), (c,)]
    return rule


def _weights(a: tuple[Any, ...], s: ShapeOf) -> Shape | None:
    """``attention_weights``' shape ``[..., lq, lk]`` (query, key, mask at 0, 1, 2)."""
    query, key = s(a[0]), s(a[1])
    scores = _matmul(query, _transposed(key)) if len(key) >= 2 else None
    if scores is None or a[2] is None:
        return scores
    return _broadcast([scores, s(a[2])])


def _attention_weights(a: tuple[Any, ...], s: ShapeOf) -> list[Shape] | None:
    return _one(_weights(a, s))


def _attention(a: tuple[Any, ...], s: ShapeOf) -> list[Shape] | None:
    weights = _weights((a[0], a[1], a[3]), s)
    return None if weights is None else _one(_matmul(weights, s(a[2])))


def _attention_backward(a: tuple[Any, ...], s: ShapeOf) -> list[Shape] | None:
    """The shapes of the protocol's composition: ``dv = w^T g``, ``ds = w * (g v^T - rowsum)``,
    ``dq = ds k``, ``dk = ds^T q``."""
    query, key, value, grad = s(a[0]), s(a[1]), s(a[2]), s(a[6])
    weights = _weights((a[0], a[1], a[3]), s)
    if weights is None or (a[7] is not None and s(a[7]) != weights):
        return None
    grad_value = _matmul(_transposed(weights), grad)
    grad_weights = _matmul(grad, _transposed(value))
    if grad_value is None or grad_weights is None:
        return None
    scores = _broadcast([grad_weights, weights])
    if scores is None:
        return None
    grad_query, grad_key = _matmul(scores, key), _matmul(_transposed(scores), query)
    if grad_query is None or grad_key is None:
        return None
    return [grad_query, grad_key, grad_value]


def _spatial(x: Shape, n: int) -> bool:
    return len(x) == n + 2


def _conv_out(x: Shape, weight: Shape, bias: Shape | None, o: Any) -> Shape | None:
    """``conv``'s ``[n, c_out, *out]`` from ``x [n, c_in, *]``, ``weight [c_out, c_in / g, *k]``."""
    n = len(o.stride)
    if not (_spatial(x, n) and _spatial(weight, n)) or x[1] != weight[1] * o.groups:
        return None
    if bias is not None and bias != weight[:1]:
        return None
    sizes = tuple(conv_output_size(d, k, st, p, dl) for d, k, st, p, dl in zip(
        x[2:], weight[2:], o.stride, o.padding, o.dilation, strict=True))
    return None if any(d <= 0 for d in sizes) else (x[0], weight[0], *sizes)


def _conv_transpose_out(x: Shape, weight: Shape, bias: Shape | None, o: Any) -> Shape | None:
    """``conv_transpose``'s ``[n, c_out, *out]`` from ``weight [c_in, c_out / g, *k]``."""
    n = len(o.stride)
    if not (_spatial(x, n) and _spatial(weight, n)) or x[1] != weight[0]:
        return None
    channels = weight[1] * o.groups
    if bias is not None and bias != (channels,):
        return None
    sizes = tuple(conv_transpose_output_size(d, k, st, p, po, dl) for d, k, st, p, po, dl in zip(
        x[2:], weight[2:], o.stride, o.padding, o.padding_out, o.dilation, strict=True))
    return None if any(d <= 0 for d in sizes) else (x[0], channels, *sizes)


def _conv(out: Callable[[Shape, Shape, Shape | None, Any], Shape | None]) -> Rule:
    """A convolution ``(x, weight, bias, options)``."""
    return lambda a, s: _one(out(s(a[0]), s(a[1]), None if a[2] is None else s(a[2]), a[3]))


def _conv_backward(out: Callable[[Shape, Shape, Shape | None, Any], Shape | None],
                   of: int) -> Rule:
    """A convolution's gradient ``(x, weight, grad, options)`` in argument ``of``: its shape,
    once ``grad`` is shaped like the forward's output."""
    def rule(a: tuple[Any, ...], s: ShapeOf) -> list[Shape] | None:
        x, weight = s(a[0]), s(a[1])
        forward = out(x, weight, None, a[3])
        return None if forward is None or s(a[2]) != forward else [(x, weight)[of]]
    return rule


def _pooled(x: Shape, kernel: Sequence[int], stride: Sequence[int], padding: Sequence[int],
            dilation: Sequence[int], ceil_mode: bool) -> Shape | None:
    """A pool's output: the trailing ``len(kernel)`` dims pooled, the leading ones kept."""
    n = len(kernel)
    if len(x) < n + 1 or not len(stride) == len(padding) == len(dilation) == n:
        return None
    sizes = tuple(pool_output_size(d, k, st, p, dl, ceil_mode) for d, k, st, p, dl in zip(
        x[len(x) - n:], kernel, stride, padding, dilation, strict=True))
    return None if any(d <= 0 for d in sizes) else (*x[:len(x) - n], *sizes)


def _ints(v: Any) -> tuple[Any, ...]:
    """A pool option as a tuple (the 1-d ops take plain numbers)."""
    return tuple(v) if isinstance(v, tuple | list) else (v,)


def _avg_pool(a: tuple[Any, ...], s: ShapeOf) -> list[Shape] | None:
    kernel = _ints(a[1])
    return _one(_pooled(s(a[0]), kernel, _ints(a[2]), _ints(a[3]), (1,) * len(kernel), a[5]))


def _max_pool(count: int) -> Rule:
    """``max_pool*`` (``count`` 1) and ``max_pool*_with_indices`` (2: values and indices)."""
    def rule(a: tuple[Any, ...], s: ShapeOf) -> list[Shape] | None:
        out = _pooled(s(a[0]), _ints(a[1]), _ints(a[2]), _ints(a[3]), _ints(a[4]), a[5])
        return None if out is None else [out] * count
    return rule


def _avg_pool_backward(a: tuple[Any, ...], s: ShapeOf) -> list[Shape] | None:
    x = s(a[0])
    kernel = _ints(a[2])
    out = _pooled(x, kernel, _ints(a[3]), _ints(a[4]), (1,) * len(kernel), a[6])
    return None if out is None or s(a[1]) != out else [x]


def _max_pool_backward(a: tuple[Any, ...], s: ShapeOf) -> list[Shape] | None:
    x, grad = s(a[0]), s(a[1])
    return None if len(x) < 3 or grad[:2] != x[:2] or s(a[2]) != grad else [x]


def _resized(a: tuple[Any, ...], s: ShapeOf) -> list[Shape] | None:
    """``adaptive_avg_pool*``/``interpolate``: trailing dims become ``output_size`` (at 1)."""
    x, size = s(a[0]), _ints(a[1])
    if len(x) < len(size) + 1 or any(d <= 0 for d in size):
        return None
    return [(*x[:len(x) - len(size)], *size)]


def _resized_backward(a: tuple[Any, ...], s: ShapeOf) -> list[Shape] | None:
    """The gradient of a resize in ``x`` (at 0), given ``grad`` (at 1) of x's rank."""
    x = s(a[0])
    return [x] if len(s(a[1])) == len(x) else None


def _lstm_dims(a: tuple[Any, ...], s: ShapeOf) -> tuple[Any, Any, Any] | None:
    """``(T, N, H)`` of ``lstm(gates_x [T, N, 4H], weight_hh [4H, H], h0 [N, H], c0 [N, H])``."""
    gates = s(a[0])
    if len(gates) != 3 or gates[2] % 4 != 0:
        return None
    steps, n, hidden = gates[0], gates[1], gates[2] // 4
    if s(a[1]) != (gates[2], hidden) or s(a[2]) != (n, hidden) or s(a[3]) != (n, hidden):
        return None
    return steps, n, hidden


def _lstm(a: tuple[Any, ...], s: ShapeOf) -> list[Shape] | None:
    dims = _lstm_dims(a, s)
    return None if dims is None else [(dims[0] + 1, dims[1], dims[2])]


def _lstm_states(a: tuple[Any, ...], s: ShapeOf) -> list[Shape] | None:
    dims = _lstm_dims(a, s)
    if dims is None:
        return None
    steps, n, hidden = dims
    return [(steps + 1, n, hidden), (steps, n, 4 * hidden), (steps, n, hidden)]


def _lstm_backward(a: tuple[Any, ...], s: ShapeOf) -> list[Shape] | None:
    """``(weight_hh, h0, c0, output, gates, cells, grad)`` to the gradients in ``(gates_x,
    weight_hh, h0, c0)``."""
    gates = s(a[4])
    dims = _lstm_dims((a[4], a[0], a[1], a[2]), s)
    if dims is None:
        return None
    steps, n, hidden = dims
    if not s(a[3]) == s(a[6]) == (steps + 1, n, hidden) or s(a[5]) != (steps, n, hidden):
        return None
    return [gates, s(a[0]), s(a[1]), s(a[2])]


# ---- optimizer steps --------------------------------------------------------------------------
def _optimizer(state: tuple[int, ...], outputs: Callable[[tuple[Any, ...]], int]) -> Rule:
    """An optimizer step: ``outputs(args)`` tensors shaped like the parameter (at 0), once the
    grad (at 1) and the state buffers given (at ``state``) are shaped like it too."""
    def rule(a: tuple[Any, ...], s: ShapeOf) -> list[Shape] | None:
        param = s(a[0])
        if s(a[1]) != param or any(a[p] is not None and s(a[p]) != param for p in state):
            return None
        return [param] * outputs(a)
    return rule


# ---- the table --------------------------------------------------------------------------------
def _table() -> dict[str, Rule]:
    rules: dict[str, Rule] = {op: _from_fusable(op, spec) for op, spec in FUSABLE.items()}
    for op in ELEMENTWISE_COMPOSITES:
        rules[op] = _broadcasting(sorted(_signature(op)[2]))
    for op in ("float_hypot", "float_logaddexp", "int_bitwise_and", "int_bitwise_or",
               "int_bitwise_xor", "int_bitwise_left_shift", "int_bitwise_right_shift"):
        rules[op] = _broadcasting(sorted(_signature(op)[2]))
    same = ["float_detach", "float_erfc", "float_erfinv", "float_expm1", "float_digamma",
            "float_lgamma", "float_i0", "float_i1", "float_polygamma", "int_bitwise_not",
            "float_to_device", "int_to_device", "bool_to_device"]
    rules.update(dict.fromkeys(same, _same()))
    rules.update(float_cholesky=_square_same, float_inv=_square_same, float_slogdet=_slogdet,
                 float_eigh=_eigh, float_solve=_solve, float_qr=_qr, float_svd=_svd)
    for kind in ("float", "int"):
        for op in ("cumsum", "cumprod", "cummax", "cummin", "sort", "argsort"):
            rules[f"{kind}_{op}"] = _same(1, 1)
        for op in ("cummax_with_indices", "cummin_with_indices", "sort_with_indices"):
            rules[f"{kind}_{op}"] = _same(2, 1)
        for op in ("argmax", "argmin", "any_dim", "all_dim"):
            rules[f"{kind}_{op}"] = _keepdim()
        for op in ("max_dim_with_indices", "min_dim_with_indices"):
            rules[f"{kind}_{op}"] = _keepdim(2)
        rules[f"{kind}_any"] = rules[f"{kind}_all"] = lambda a, s: [()]
        rules.update({f"{kind}_matmul": _matmul_rule, f"{kind}_scatter": _scatter,
                      f"{kind}_scatter_add": _scatter, f"{kind}_select_add": _select_into,
                      f"{kind}_select_assign": _select_into,
                      f"{kind}_topk_with_indices": _topk})
        for op in ("zeros", "ones", "empty", "full", "random"):
            rules[f"{kind}_{op}"] = _created
    rules.update(bool_any=lambda a, s: [()], bool_all=lambda a, s: [()],
                 bool_any_dim=_keepdim(), bool_all_dim=_keepdim(), bool_full=_created,
                 bool_empty=_created, int_arange=_arange)
    for kind in ("float", "int", "bool"):
        rules.update({
            f"{kind}_reshape": lambda a, s: _one(_reshaped(s(a[0]), a[1])),
            f"{kind}_swap_dims": _swap_dims, f"{kind}_permute": _permute, f"{kind}_flip": _flip,
            f"{kind}_slice": lambda a, s: _one(_sliced(s(a[0]), a[1])),
            f"{kind}_slice_assign": _slice_assign, f"{kind}_cat": _cat,
            f"{kind}_repeat_dim": _repeat_dim, f"{kind}_unfold": _unfold,
            f"{kind}_gather": _gather, f"{kind}_select": _select})
    rules.update(softmax=_same(1, 1), log_softmax=_same(1, 1), linear=_linear,
                 embedding=_embedding, embedding_backward=_embedding_backward,
                 cross_entropy=_cross_entropy, cross_entropy_backward=_cross_entropy_backward,
                 layer_norm=_norm(0, 2, (3,), False), layer_norm_backward=_norm(2, 2, (), True),
                 rms_norm=_norm(0, 2, (), False), rms_norm_backward=_norm(1, 2, (), True),
                 batch_norm=_batch_norm(None), batch_norm_backward=_batch_norm(2),
                 attention_weights=_attention_weights, attention=_attention,
                 attention_backward=_attention_backward,
                 conv_bias_backward=lambda a, s: [s(a[0])[1:2]] if len(s(a[0])) >= 2 else None,
                 avg_pool=_avg_pool, avg_pool1d=_avg_pool, avg_pool2d=_avg_pool,
                 avg_pool_backward=_avg_pool_backward, max_pool=_max_pool(1),
                 max_pool1d=_max_pool(1), max_pool2d=_max_pool(1),
                 max_pool_with_indices=_max_pool(2), max_pool1d_with_indices=_max_pool(2),
                 max_pool2d_with_indices=_max_pool(2),
                 max_pool_with_indices_backward=_max_pool_backward,
                 adaptive_avg_pool=_resized, adaptive_avg_pool1d=_resized,
                 adaptive_avg_pool2d=_resized, interpolate=_resized,
                 adaptive_avg_pool_backward=_resized_backward,
                 interpolate_backward=_resized_backward,
                 lstm=_lstm, lstm_states=_lstm_states, lstm_backward=_lstm_backward,
                 adam_step=_optimizer((2, 3, 4), lambda a: 3 + bool(a[12])),
                 sgd_step=_optimizer((2,), lambda a: 1 + (a[4] != 0)),
                 rmsprop_step=_optimizer((2, 3, 4),
                                         lambda a: 2 + bool(a[10]) + (a[9] != 0)))
    for name in ("conv", "conv1d", "conv2d", "conv3d"):
        rules[name] = _conv(_conv_out)
    for name in ("conv_transpose", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"):
        rules[name] = _conv(_conv_transpose_out)
    rules.update(conv_x_backward=_conv_backward(_conv_out, 0),
                 conv_weight_backward=_conv_backward(_conv_out, 1),
                 conv_transpose_x_backward=_conv_backward(_conv_transpose_out, 0),
                 conv_transpose_weight_backward=_conv_backward(_conv_transpose_out, 1))
    return rules


#: The shape rule of every protocol op that has one, by name (``result_shapes`` applies them).
SHAPE_RULES: dict[str, Rule] = _table()
