"""``Function``: custom differentiable ops in PyTorch's style (``torch.autograd.Function``).

A Function is applied at every level of a decorator stack, as a built-in op is. ``apply``
peels the levels off its arguments down to the innermost (plain) backend, runs ``forward``
there once, without any graph, and builds the result back up:

- on an ``Autodiff`` level K it records one node (a ``GradFn``) whose backward calls the
  Function's ``backward`` with tensors of K's inner backend I: the gradients, the saved
  inputs and outputs *as they are on I*, so in ``Autodiff(Autodiff(B))`` the saved output
  carries I's own node of this Function and the gradients ``backward`` returns are
  differentiable again, exactly as torch's double backward of a custom Function;
- on a ``ForwardAD`` level it calls ``jvp`` with the inputs' tangents (tensors of its inner
  backend) and pairs each output with the tangent returned.

Each level gets its own ``ctx`` holding the saved tensors of its inner backend; the user's
attributes (``ctx.scale = ...``) are shared by all of them. A saved tensor that is neither
an input nor an output of forward is a constant on the levels above (as in torch: save inputs
and outputs, or recompute from them in backward, for exact higher derivatives).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar, TypeVar

from burnpy.backend.errors import AutodiffError, article, describe
from burnpy.custom_ops.grad_fn import (
    GradFn,
    common_backend,
    is_autodiff,
    is_forward_ad,
    lift_untracked,
    record_outputs,
)
from burnpy.tensor._core import FLOAT, new
from burnpy.tensor.tensor import Tensor

F = TypeVar("F", bound=Callable[..., Any])
#: Where a saved tensor comes from: ``("input", i)``, ``("output", j)`` or ``("constant", 0)``
#: (None for a saved None), so every level finds its own version of it.
SavedRef = tuple[str, int] | None


def once_differentiable(backward: F) -> F:
    """Declare a Function's ``backward`` differentiable once only (torch's decorator): it may
    leave the graph (NumPy...), and the gradients it returns raise ``AutodiffError`` when
    differentiated again. Use it under or over ``@staticmethod``."""
    setattr(getattr(backward, "__func__", backward), "once_differentiable", True)  # noqa: B010
    return backward


class FunctionCtx:
    """The ``ctx`` of a ``Function`` call: what forward leaves for ``backward`` and ``jvp``.

    ``needs_input_grad`` has one bool per positional argument of forward: whether it is a
    float tensor tracked on this level (in forward: on any level, or carrying a tangent).
    """

    __slots__ = ("__dict__", "_dirty", "_dirty_marks", "_for_jvp", "_forward_refs", "_function",
                 "_multiple", "_non_differentiable", "_non_differentiable_marks", "_saved",
                 "_saved_for_forward", "_saved_refs", "materialize_grads", "needs_input_grad")

    def __init__(self, function: type[Function], needs_input_grad: tuple[bool, ...]) -> None:
        self._function = function
        self.needs_input_grad = needs_input_grad
        self.materialize_grads = True
        self._for_jvp = False
        self._saved: tuple[Tensor | None, ...] = ()
        self._saved_for_forward: tuple[Tensor | None, ...] = ()
        self._dirty_marks: tuple[Tensor, ...] = ()
        self._non_differentiable_marks: tuple[Tensor, ...] = ()

    # ---- used in forward / setup_context -------------------------------------------------------
    def save_for_backward(self, *tensors: Tensor | None) -> None:
        """Keep inputs, outputs (or other tensors) of forward for ``backward``."""
        self._saved = self._checked_tensors("save_for_backward", tensors)

    def save_for_forward(self, *tensors: Tensor | None) -> None:
        """Keep tensors for ``jvp``, where ``ctx.saved_tensors`` returns them."""
        self._saved_for_forward = self._checked_tensors("save_for_forward", tensors)

    def mark_non_differentiable(self, *outputs: Tensor) -> None:
        """These outputs get no gradient: backward receives zeros (or None) for them."""
        self._non_differentiable_marks = self._checked_tensors("mark_non_differentiable", outputs)

    def mark_dirty(self, *tensors: Tensor) -> None:
        """These inputs were modified in place (``x[...] = v``) and are returned as outputs:
        the caller's tensor object then holds the new value, with this op in its history."""
        self._dirty_marks = self._checked_tensors("mark_dirty", tensors)

    def set_materialize_grads(self, value: bool) -> None:
        """True (default): missing gradients reach backward (and missing tangents jvp) as
        zeros; False: as None."""
        self.materialize_grads = bool(value)

    @property
    def saved_tensors(self) -> tuple[Tensor | None, ...]:
        """The tensors saved for this call: by ``save_for_backward`` in backward, by
        ``save_for_forward`` in jvp; tensors of the backend backward or jvp works on."""
        return self._saved_for_forward if self._for_jvp else self._saved

    def _checked_tensors(self, op: str, tensors: tuple[Any, ...]) -> tuple[Any, ...]:
        for i, t in enumerate(tensors):
            if not (t is None or isinstance(t, Tensor)):
                raise AutodiffError(f"{self._function.__name__}: ctx.{op} takes tensors, got "
                                    f"{type(t).__name__} at position {i}")
        return tensors

    # ---- levels -------------------------------------------------------------------------------
    def _seal(self, inputs: Sequence[Any], outputs: Sequence[Any], multiple: bool) -> None:
        """After forward: saved tensors as references, marks as output and input indices."""
        name = self._function.__name__
        self._multiple = multiple
        self._saved_refs = tuple(_reference(t, inputs, outputs) for t in self._saved)
        self._forward_refs = tuple(_reference(t, inputs, outputs) for t in self._saved_for_forward)
        self._non_differentiable = frozenset(
            _index_in(outputs, t, f"{name}: ctx.mark_non_differentiable takes outputs of forward")
            for t in self._non_differentiable_marks)
        dirty = {}
        for t in self._dirty_marks:
            i = _index_in(inputs, t, f"{name}: ctx.mark_dirty takes inputs of forward")
            j = _index_in(outputs, t, f"{name}: an input marked dirty must be returned by "
                                      "forward (as torch requires)")
            dirty[j] = i
        self._dirty = dirty

    def _lifted(self, backend: Any, inputs: Sequence[Any], outputs: Sequence[Any],
                needs_input_grad: tuple[bool, ...], for_jvp: bool) -> FunctionCtx:
        """This call's ctx one level up, whose tensors are of ``backend``: ``inputs`` and
        ``outputs`` are the call's values there."""
        ctx = FunctionCtx.__new__(FunctionCtx)
        ctx.__dict__ = self.__dict__  # the user's attributes are shared by every level
        ctx._function = self._function
        ctx.needs_input_grad = needs_input_grad
        ctx.materialize_grads = self.materialize_grads
        ctx._for_jvp = for_jvp
        ctx._multiple = self._multiple
        ctx._non_differentiable = self._non_differentiable
        ctx._dirty = self._dirty
        ctx._saved_refs = self._saved_refs
        ctx._forward_refs = self._forward_refs
        ctx._saved = tuple(_resolve(r, t, backend, inputs, outputs)
                           for r, t in zip(self._saved_refs, self._saved, strict=True))
        ctx._saved_for_forward = tuple(
            _resolve(r, t, backend, inputs, outputs)
            for r, t in zip(self._forward_refs, self._saved_for_forward, strict=True))
        return ctx


def _reference(tensor: Tensor | None, inputs: Sequence[Any], outputs: Sequence[Any]) -> SavedRef:
    if tensor is None:
        return None
    for where, values in (("input", inputs), ("output", outputs)):
        for i, value in enumerate(values):
            if value is tensor:
                return where, i
    return "constant", 0


def _resolve(ref: SavedRef, previous: Tensor | None, backend: Any, inputs: Sequence[Any],
             outputs: Sequence[Any]) -> Tensor | None:
    """The saved tensor ``ref`` on ``backend`` (``previous`` is its value one level down)."""
    if ref is None or previous is None:
        return None
    where, i = ref
    if where == "input":
        return inputs[i]
    if where == "output":
        return outputs[i]
    return previous if previous.backend is backend else lift_untracked(backend, previous)


def _index_in(values: Sequence[Any], tensor: Tensor, message: str) -> int:
    for i, value in enumerate(values):
        if value is tensor:
            return i
    raise AutodiffError(message)


class Function:
    """A custom differentiable op: subclass it with static methods and call ``apply``.

    - ``forward(ctx, *args, **kwargs)``, or ``forward(*args, **kwargs)`` together with
      ``setup_context(ctx, inputs, output)``: computes the output (a Tensor, or a tuple of
      outputs, tensors or not) from its inputs seen untracked, on the innermost backend;
      ``ctx`` is a ``FunctionCtx``. Keyword arguments get no gradient.
    - ``backward(ctx, *grad_outputs)`` (or ``vjp``): one gradient per output in (None for
      non-tensor outputs, and for missing gradients unless ``materialize_grads``), one
      gradient per positional argument out (None for non-tensors and no gradient). Write it
      with burnpy Tensor ops to make it differentiable again; mark it ``@once_differentiable``
      when it is not.
    - ``jvp(ctx, *tangents)``: one tangent per positional argument in, one per output out;
      needed on ``ForwardAD`` backends.
    """

    forward: ClassVar[Callable[..., Any]]
    setup_context: ClassVar[Callable[..., Any]]
    backward: ClassVar[Callable[..., Any]]
    vjp: ClassVar[Callable[..., Any]]
    jvp: ClassVar[Callable[..., Any]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """``vjp`` and ``backward`` are two names for one method: either defines both."""
        super().__init_subclass__(**kwargs)
        own = vars(cls)
        if "vjp" in own and "backward" not in own:
            cls.backward = own["vjp"]
        elif "backward" in own and "vjp" not in own:
            cls.vjp = own["backward"]

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        """Run the op on ``args`` (tensors on one backend, and any other values): its outputs,
        differentiable through ``backward`` and ``jvp`` on the decorators of that backend."""
        if getattr(cls, "forward", None) is None:
            raise AutodiffError(f"{cls.__name__} defines no forward")
        backend = common_backend(f"{cls.__name__}.apply", (*args, *kwargs.values()))
        outputs, ctx = _apply(cls, backend, args, kwargs, (False,) * len(args))
        return tuple(outputs) if ctx._multiple else outputs[0]


Applied = tuple[list[Any], FunctionCtx]


def _apply(function: type[Function], backend: Any, args: tuple[Any, ...],
           kwargs: dict[str, Any], needs: tuple[bool, ...]) -> Applied:
    """``function`` on ``args`` of ``backend``: the outputs there and the ctx of that level.
    ``needs`` says which arguments are differentiable on the levels above."""
    if is_autodiff(backend):
        return _apply_autodiff(function, backend, args, kwargs, needs)
    if is_forward_ad(backend):
        return _apply_forward_ad(function, backend, args, kwargs, needs)
    return _run_forward(function, backend, args, kwargs, needs)


def _run_forward(function: type[Function], backend: Any, args: tuple[Any, ...],
                 kwargs: dict[str, Any], needs: tuple[bool, ...]) -> Applied:
    """The innermost level: forward itself, on tensor objects of its own."""
    ctx = FunctionCtx(function, needs)
    inputs = tuple(_own(a) for a in args)
    own_kwargs = {k: _own(v) for k, v in kwargs.items()}
    setup = getattr(function, "setup_context", None)
    if setup is None:
        result = function.forward(ctx, *inputs, **own_kwargs)
    else:
        result = function.forward(*inputs, **own_kwargs)
        setup(ctx, inputs, result)
    multiple = isinstance(result, tuple)
    outputs = list(result) if multiple else [result]
    for j, out in enumerate(outputs):
        if isinstance(out, Tensor) and backend is not None and out.backend is not backend:
            raise AutodiffError(
                f"{function.__name__}.forward returned output {j} on {out.backend.name()}; it "
                f"runs on {backend.name()}, its inputs' innermost backend, and must return "
                "tensors of it")
    ctx._seal(inputs, outputs, multiple)
    _rebind_dirty(ctx, args, outputs)
    return outputs, ctx


def _apply_autodiff(function: type[Function], backend: Any, args: tuple[Any, ...],
                    kwargs: dict[str, Any], needs: tuple[bool, ...]) -> Applied:
    """An Autodiff level: the op one level down, then one node running ``backward``."""
    inner = backend.InnerBackend
    tracked = tuple(isinstance(a, Tensor) and a.kind is FLOAT and a.primitive.node is not None
                    for a in args)
    down = tuple(a.inner() if isinstance(a, Tensor) else a for a in args)
    down_kwargs = {k: v.inner() if isinstance(v, Tensor) else v for k, v in kwargs.items()}
    inner_outputs, inner_ctx = _apply(function, inner, down, down_kwargs,
                                      _either(needs, tracked))
    ctx = inner_ctx._lifted(inner, down, inner_outputs, tracked, for_jvp=False)
    differentiable = _differentiable(ctx, inner_outputs)
    if any(tracked) and any(differentiable):
        for i in ctx._dirty.values():
            node = args[i].primitive.node if tracked[i] else None
            if node is not None and node.op is None:
                raise AutodiffError(
                    f"{function.__name__}: input {i} is marked dirty but is a leaf that "
                    "requires grad, which cannot be modified in place (its gradient would be "
                    "lost); pass a copy (x * 1.0)")
        grad_fn = _FunctionBackward(function, ctx, args, inner_outputs)
        outputs = record_outputs(grad_fn, inner_outputs, differentiable)
    else:
        outputs = [lift_untracked(backend, o) for o in inner_outputs]
    _rebind_dirty(ctx, args, outputs)
    return outputs, ctx


def _apply_forward_ad(function: type[Function], backend: Any, args: tuple[Any, ...],
                      kwargs: dict[str, Any], needs: tuple[bool, ...]) -> Applied:
    """A ForwardAD level: the op on the primals one level down, then ``jvp`` for tangents."""
    inner = backend.InnerBackend
    primals, tangents = [], []
    for a in args:
        if isinstance(a, Tensor) and a.kind is FLOAT:
            primal, tangent = backend.dual_parts(a.primitive)
            primals.append(new(inner, primal, FLOAT))
            tangents.append(None if tangent is None else new(inner, tangent, FLOAT))
        else:
            primals.append(a.inner() if isinstance(a, Tensor) else a)
            tangents.append(None)
    down_kwargs = {k: v.inner() if isinstance(v, Tensor) else v for k, v in kwargs.items()}
    carried = tuple(t is not None for t in tangents)
    inner_outputs, inner_ctx = _apply(function, inner, tuple(primals), down_kwargs,
                                      _either(needs, carried))
    ctx = inner_ctx._lifted(inner, primals, inner_outputs, carried, for_jvp=True)
    differentiable = _differentiable(ctx, inner_outputs)
    out_tangents: list[Tensor | None] = [None] * len(inner_outputs)
    if any(carried) and any(differentiable):
        jvp = getattr(function, "jvp", None)
        if jvp is None:
            raise AutodiffError(
                f"{function.__name__} defines no jvp, so it cannot carry the tangents of "
                f"{backend.name()}: add jvp(ctx, *tangents) returning one tangent per output")
        if ctx.materialize_grads:
            tangents = [p.zeros_like() if t is None and isinstance(p, Tensor) and p.kind is FLOAT
                        else t for p, t in zip(primals, tangents, strict=True)]
        out_tangents = _checked_tangents(function, jvp(ctx, *tangents), inner_outputs, inner)
    outputs = []
    for o, t, d in zip(inner_outputs, out_tangents, differentiable, strict=True):
        if isinstance(o, Tensor) and o.kind is FLOAT:
            tangent = t.primitive if d and t is not None else None
            outputs.append(new(backend, backend.make_dual(o.primitive, tangent), FLOAT))
        else:
            outputs.append(lift_untracked(backend, o))
    _rebind_dirty(ctx, args, outputs)
    return outputs, ctx


def _either(a: tuple[bool, ...], b: tuple[bool, ...]) -> tuple[bool, ...]:
    return tuple(x or y for x, y in zip(a, b, strict=True))


def _own(value: Any) -> Any:
    """A tensor object of forward's own (rebinding it leaves the caller's alone)."""
    return new(value.backend, value.primitive, value.kind) if isinstance(value, Tensor) else value


def _differentiable(ctx: FunctionCtx, outputs: Sequence[Any]) -> list[bool]:
    return [isinstance(o, Tensor) and o.kind is FLOAT and j not in ctx._non_differentiable
            for j, o in enumerate(outputs)]


def _rebind_dirty(ctx: FunctionCtx, args: tuple[Any, ...], outputs: list[Any]) -> None:
    """Each dirty input's tensor object takes its output's value and becomes that output."""
    for j, i in ctx._dirty.items():
        args[i].primitive = outputs[j].primitive
        outputs[j] = args[i]


def _checked_tangents(function: type[Function], returned: Any, outputs: Sequence[Any],
                      backend: Any) -> list[Tensor | None]:
    """``jvp``'s result as one tangent per output: float tensors of ``backend`` shaped and
    typed like their outputs, or None."""
    name = function.__name__
    count = len(outputs)
    if isinstance(returned, tuple | list):
        tangents = list(returned)
    elif count == 1:
        tangents = [returned]
    else:
        raise AutodiffError(f"{name}.jvp returned {type(returned).__name__}; expected one "
                            f"tangent (a Tensor or None) per output, {count} in all")
    if len(tangents) != count:
        raise AutodiffError(f"{name}.jvp returned {len(tangents)} tangent(s), expected {count}: "
                            "one per output of forward")
    for j, (t, out) in enumerate(zip(tangents, outputs, strict=True)):
        if t is None:
            continue
        if not isinstance(t, Tensor):
            raise AutodiffError(f"{name}.jvp: tangent {j} is a {type(t).__name__}, expected a "
                                "burnpy Tensor or None")
        if not (isinstance(out, Tensor) and out.kind is FLOAT):
            raise AutodiffError(f"{name}.jvp returned a tangent for output {j}, which is not a "
                                "float tensor; return None there")
        if t.backend is not backend or t.kind is not FLOAT:
            raise AutodiffError(f"{name}.jvp: tangent {j} is {article(t.kind)} tensor of "
                                f"{t.backend.name()}, expected a float tensor of {backend.name()}")
        if t.shape != out.shape or t.dtype is not out.dtype:
            raise AutodiffError(
                f"{name}.jvp: tangent {j} has shape {describe(t.shape)} and dtype {t.dtype!r}, "
                f"expected those of output {j}: {describe(out.shape)}, {out.dtype!r}")
    return tangents


class _FunctionBackward(GradFn):
    """The node of one Function call on one Autodiff level: calls ``backward`` with that
    level's ctx, materializing missing gradients as zeros when the ctx asks for it."""

    __slots__ = ("_outputs", "ctx", "function")

    def __init__(self, function: type[Function], ctx: FunctionCtx, inputs: tuple[Any, ...],
                 outputs: Sequence[Any]) -> None:
        super().__init__(inputs, ctx.saved_tensors)
        self.function = function
        self.ctx = ctx
        #: ``(shape, dtype, device)`` of each float output on the inner backend, else None.
        self._outputs = tuple((o.shape, o.dtype, o.device)
                              if isinstance(o, Tensor) and o.kind is FLOAT else None
                              for o in outputs)

    @property
    def name(self) -> str:
        return f"{self.function.__name__}Backward"

    @property
    def label(self) -> str:
        return f"{self.function.__name__}.backward"

    @property
    def once_differentiable(self) -> bool:  # type: ignore[override]
        return bool(getattr(getattr(self.function, "backward", None), "once_differentiable",
                            False))

    def backward(self, grad_output: Any) -> Any:
        backward = getattr(self.function, "backward", None)
        if backward is None:
            raise AutodiffError(f"{self.function.__name__} defines no backward (or vjp), so it "
                                "cannot be differentiated in reverse mode")
        grads = grad_output if isinstance(grad_output, tuple) else (grad_output,)
        if self.ctx.materialize_grads:
            inner = self._backend.InnerBackend
            grads = tuple(
                Tensor.zeros(spec[0], backend=inner, device=spec[2], dtype=spec[1])
                if g is None and spec is not None else g
                for g, spec in zip(grads, self._outputs, strict=True))
        return backward(self.ctx, *grads)
