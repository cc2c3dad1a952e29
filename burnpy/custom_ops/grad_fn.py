"""``GradFn``: the node-step protocol of custom ops (numr's ``GradFn``, chainrules'
``ReverseRule``), and ``apply_grad_fn``, which records one node running it.

An op author computes the op's outputs on the inner backend I of an ``Autodiff`` backend K,
builds a ``GradFn`` with the op's inputs (tensors of K) and the tensors its backward reads,
and calls ``apply_grad_fn(grad_fn, outputs)``: the outputs come back as tensors of K tracked
by one node whose rule calls ``grad_fn.backward`` with burnpy Tensors of I.

Backward is written with Tensor ops. When I is itself an Autodiff backend (``Autodiff(Autodiff
(B))``), those ops are recorded on I, so the gradients are differentiable again. A backward
that leaves the graph cannot be: its gradients are *poisoned* (tracked on I by a node that
raises ``AutodiffError`` when a later backward reaches it, never silent zeros) when

- it is declared so: ``once_differentiable = True`` (``@once_differentiable`` on a Function);
- it moved float values between the host and an Autodiff backend while running (``to_numpy``,
  ``item``, ``into_data``, printing, ``from_data``, ``from_inner``: counted by the backend);
- it returned a gradient without history although ``grad_output`` had one;

and something it could depend on on I (an input, ``grad_output``, a saved tensor) has history.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

from burnpy.autodiff.backend import AutodiffBackend
from burnpy.autodiff.graph import HOST_TRANSFERS, Op, OutputGrad
from burnpy.autodiff.tensor import AutodiffTensor
from burnpy.backend.errors import AutodiffError, BackendMismatchError, article, describe
from burnpy.tensor._core import FLOAT, new
from burnpy.tensor.tensor import Tensor

#: What a GradFn's ``backward`` receives: the output's gradient, or for a multi-output node a
#: tuple with one entry per output (None where no gradient reached that output).
GradOutput = Tensor | tuple[Tensor | None, ...]
#: ``(kind, shape, dtype)`` of a tensor input; None for any other value.
InputSpec = tuple[str, tuple[int, ...], Any] | None


def is_autodiff(backend: Any) -> bool:
    """Whether ``backend`` is an ``Autodiff`` decorator class."""
    return isinstance(backend, type) and issubclass(backend, AutodiffBackend)


def is_forward_ad(backend: Any) -> bool:
    """Whether ``backend`` is a ``ForwardAD`` decorator class (its primitives carry tangents)."""
    return bool(getattr(backend, "is_forward_ad", False))


def primitive_has_history(backend: Any, primitive: Any) -> bool:
    """Whether a float primitive of ``backend`` is tracked (Autodiff) or carries a tangent
    (ForwardAD); never on other backends."""
    if is_autodiff(backend):
        return primitive.node is not None
    if is_forward_ad(backend):
        return backend.dual_parts(primitive)[1] is not None
    return False


def has_history(tensor: Tensor | None) -> bool:
    """Whether ``tensor`` is a float tensor that is tracked or carries a tangent."""
    return (tensor is not None and tensor.kind is FLOAT
            and primitive_has_history(tensor.backend, tensor.primitive))


def common_backend(where: str, values: Iterable[Any]) -> Any:
    """The backend shared by the Tensors among ``values`` (None when there are none)."""
    backend = None
    for value in values:
        if isinstance(value, Tensor):
            if backend is None:
                backend = value.backend
            elif value.backend is not backend:
                raise BackendMismatchError(
                    f"{where}: tensors on different backends ({backend.name()} and "
                    f"{value.backend.name()}); move them to one with .to_backend() or "
                    ".inner()/Tensor.from_inner()")
    return backend


def lift_untracked(backend: Any, value: Any) -> Any:
    """``value`` (a tensor of ``backend``'s inner backend, or any other value) as an
    untracked, untangented tensor of ``backend``; non-tensors pass through."""
    if not isinstance(value, Tensor):
        return value
    if value.kind is not FLOAT:
        return Tensor.from_inner(value, backend=backend)
    if is_forward_ad(backend):
        return new(backend, backend.make_dual(value.primitive, None), FLOAT)
    return new(backend, AutodiffTensor(value.primitive), FLOAT)  # not counted: no host crossing


class GradFn(ABC):
    """One recorded node's backward step: numr's ``GradFn``, chainrules' ``ReverseRule``.

    Build it with the op's ``inputs`` (tensors of an Autodiff backend K, or any other values)
    and the ``saved_tensors`` its backward reads (tensors of K, taken through ``inner()``, or
    of K's inner backend I); record it with ``apply_grad_fn``. Attributes: ``inputs``, the
    graph node of each input (None for untracked inputs and non-float values: these are the
    node's ids); ``saved_tensors``, tensors of I; ``name``, the op's name in graph messages.
    """

    __slots__ = ("_backend", "_inner_tracked", "_pending", "_specs", "inputs", "saved_tensors")

    #: Declares a backward that may leave the graph: its gradients raise when differentiated.
    once_differentiable: ClassVar[bool] = False

    def __init__(self, inputs: Sequence[Any], saved_tensors: Sequence[Tensor | None] = ()) -> None:
        backend = common_backend(type(self).__name__, inputs)
        self._backend = backend
        self._specs: tuple[InputSpec, ...] = tuple(
            (a.kind, a.shape, a.dtype) if isinstance(a, Tensor) else None for a in inputs)
        floats = [a for a in inputs if isinstance(a, Tensor) and a.kind is FLOAT]
        if is_autodiff(backend):
            inner = backend.InnerBackend
            self.inputs: tuple[Any, ...] = tuple(
                a.primitive.node if isinstance(a, Tensor) and a.kind is FLOAT else None
                for a in inputs)
            self._pending: tuple[AutodiffTensor, ...] | None = tuple(a.primitive for a in floats)
            self._inner_tracked = any(primitive_has_history(inner, a.primitive.primitive)
                                      for a in floats)
        else:
            self.inputs = (None,) * len(inputs)
            self._pending = ()
            self._inner_tracked = False
        self.saved_tensors: tuple[Tensor | None, ...] = tuple(
            self._inner_view(t) for t in saved_tensors)

    @property
    def name(self) -> str:
        """The op's name in graph messages (the class name unless overridden)."""
        return type(self).__name__

    @property
    def label(self) -> str:
        """Who wrote the backward, for error messages."""
        return f"{type(self).__name__}.backward"

    @abstractmethod
    def backward(self, grad_output: GradOutput) -> Sequence[Tensor | None] | Tensor | None:
        """One gradient per input (None for no gradient), tensors of the inner backend I of
        the same shape (or one the input broadcasts to) and dtype as the input; a lone
        Tensor or None for a one-input op. ``grad_output`` is on I, like ``saved_tensors``."""

    def backward_with_tangents(self, grad_output: GradOutput,
                               grad_output_tangent: GradOutput | None
                               ) -> list[tuple[Tensor | None, Tensor | None]]:
        """``(gradient, gradient tangent)`` per input: chainrules' ``pullback_with_tangents``,
        for forward-over-reverse Hessian-vector products.

        ``grad_output`` and ``grad_output_tangent`` (None for a zero tangent; tuples for a
        multi-output node) are tensors of the primal backend P, and so are the results. The
        default needs the node recorded on ``Autodiff(ForwardAD(P))``, whose saved tensors
        carry the inputs' tangents: it runs ``backward`` on the dual ``grad_output`` and splits
        each gradient into its primal and tangent. Override it to get tangents another way.
        """
        dual_backend = getattr(self._backend, "InnerBackend", None)
        if not is_forward_ad(dual_backend):
            where = "a plain backend" if self._backend is None else self._backend.name()
            raise AutodiffError(
                f"{self.name}: backward_with_tangents needs the node recorded on "
                f"Autodiff(ForwardAD(B)), whose saved tensors carry tangents; it was recorded "
                f"on {where}. Override backward_with_tangents to give the tangents another way")
        if isinstance(grad_output, tuple):
            tangents = grad_output_tangent or (None,) * len(grad_output)
            dual: GradOutput = tuple(_dual(dual_backend, g, t)
                                     for g, t in zip(grad_output, tangents, strict=True))
        else:
            assert not isinstance(grad_output_tangent, tuple)  # one output, one tangent
            dual = _make_dual(dual_backend, grad_output, grad_output_tangent)
        grads = self._checked(self.backward(dual), dual_backend)
        return [(None, None) if g is None else _split(dual_backend, g) for g in grads]

    # ---- the engine's side ----------------------------------------------------------------------
    def _step(self, B: Any, grad: Any) -> tuple[Any, ...]:  # noqa: N803 - the inner backend
        """Run ``backward`` on the inner primitive ``grad`` (a list for a multi-output node):
        one checked, guarded gradient primitive per float input, as the graph's rules do."""
        if type(grad) is list:
            grad_output: GradOutput = tuple(None if g is None else new(B, g, FLOAT) for g in grad)
        else:
            grad_output = new(B, grad, FLOAT)
        transfers = HOST_TRANSFERS.count
        returned = self.backward(grad_output)
        left_graph = HOST_TRANSFERS.count != transfers
        grads = self._guarded(B, self._checked(returned, B), grad_output, left_graph)
        return tuple(None if g is None else g.primitive
                     for g, spec in zip(grads, self._specs, strict=True)
                     if spec is not None and spec[0] is FLOAT)

    def _checked(self, returned: Any, backend: Any) -> list[Tensor | None]:
        """``returned`` as one gradient per input, each a float tensor of ``backend`` whose
        shape reduces to its input's and whose dtype is its input's, or None."""
        count = len(self._specs)
        if isinstance(returned, tuple | list):
            grads = list(returned)
        elif count == 1:
            grads = [returned]
        else:
            raise AutodiffError(
                f"{self.label} returned {type(returned).__name__}; expected a tuple with one "
                f"gradient (a Tensor or None) per input, {count} in all")
        while len(grads) > count and grads[-1] is None:  # extra trailing Nones are harmless
            grads.pop()
        if len(grads) != count:
            raise AutodiffError(
                f"{self.label} returned {len(grads)} gradient(s), expected {count}: one per "
                "input, None for inputs without a gradient")
        for i, (g, spec) in enumerate(zip(grads, self._specs, strict=True)):
            if g is not None:
                self._check_one(i, g, spec, backend)
        return grads

    def _check_one(self, i: int, grad: Any, spec: InputSpec, backend: Any) -> None:
        """Raise unless ``grad`` fits input ``i`` (described by ``spec``) on ``backend``."""
        if spec is None:
            raise AutodiffError(f"{self.label} returned a gradient for input {i}, which is not "
                                "a tensor; return None there")
        if not isinstance(grad, Tensor):
            raise AutodiffError(f"{self.label}: gradient {i} is a {type(grad).__name__}, "
                                "expected a burnpy Tensor or None")
        kind, shape, dtype = spec
        if kind is not FLOAT:
            raise AutodiffError(f"{self.label} returned a gradient for input {i}, "
                                f"{article(kind)} tensor, which has none; return None there")
        if grad.backend is not backend:
            raise AutodiffError(
                f"{self.label}: gradient {i} is a tensor of {grad.backend.name()}, expected one "
                f"of {backend.name()}, the backend of grad_output and the saved tensors")
        if grad.kind is not FLOAT:
            raise AutodiffError(f"{self.label}: gradient {i} is {article(grad.kind)} tensor; "
                                "gradients are float tensors")
        lead = len(grad.shape) - len(shape)
        if lead < 0 or any(s not in (g, 1) for s, g in zip(shape, grad.shape[lead:], strict=True)):
            raise AutodiffError(
                f"{self.label}: gradient {i} has shape {describe(grad.shape)}, expected "
                f"{describe(shape)} (the shape of input {i}, or one it broadcasts to)")
        if grad.dtype is not dtype:
            raise AutodiffError(f"{self.label}: gradient {i} has dtype {grad.dtype!r}, expected "
                                f"{dtype!r}, the dtype of input {i}")

    def _guarded(self, B: Any, grads: list[Tensor | None], grad_output: GradOutput,  # noqa: N803
                 left_graph: bool) -> list[Tensor | None]:
        """``grads``, poisoned when backward left the graph and they could have history."""
        outs = grad_output if isinstance(grad_output, tuple) else (grad_output,)
        advice = ("Write backward with burnpy Tensor ops only (they are recorded on the inner "
                  "backend, so their results are differentiable again), or differentiate once")
        if self.once_differentiable:
            reason = "it is marked once_differentiable"
            advice = "Drop the mark if backward uses burnpy Tensor ops only, or differentiate once"
        elif left_graph:
            reason = ("it moved float values between the host and the graph (to_numpy, item, "
                      "into_data, printing, from_data, from_inner), so the gradients it returned "
                      "lost their history")
        elif any(has_history(o) for o in outs) and any(
                g is not None and not has_history(g) for g in grads):
            reason = "it returned a gradient without history although grad_output had one"
        else:
            return grads
        if not (self._inner_tracked or any(has_history(t) for t in (*outs, *self.saved_tensors))):
            return grads  # nothing to differentiate on B: the gradients are constants there
        message = f"{self.label} cannot be differentiated again: {reason}. {advice}"
        if not is_autodiff(B):
            raise AutodiffError(f"{message} (on {B.name()}, which carries tangents through it)")
        return [None if g is None else
                new(B, B.record(_POISON, g.primitive.primitive, (), (message,)), FLOAT)
                for g in grads]

    def _inner_view(self, tensor: Tensor | None) -> Tensor | None:
        """A saved tensor as a tensor of the inner backend (its lower levels' history kept)."""
        backend = self._backend
        if tensor is None or not is_autodiff(backend) or tensor.backend is backend.InnerBackend:
            return tensor
        if tensor.backend is backend:
            return tensor.inner()
        raise BackendMismatchError(
            f"{type(self).__name__}: saved tensor on {tensor.backend.name()}, expected one of "
            f"{backend.name()} or of its inner backend")


def _dual(backend: Any, primal: Tensor | None, tangent: Tensor | None) -> Tensor | None:
    """``primal`` with ``tangent`` as a tensor of the ForwardAD ``backend`` (None stays None)."""
    return None if primal is None else _make_dual(backend, primal, tangent)


def _make_dual(backend: Any, primal: Tensor, tangent: Tensor | None) -> Tensor:
    """``primal`` with ``tangent`` (None for zero) as a tensor of the ForwardAD ``backend``."""
    return new(backend, backend.make_dual(primal.primitive,
                                          None if tangent is None else tangent.primitive), FLOAT)


def _split(backend: Any, dual: Tensor) -> tuple[Tensor, Tensor | None]:
    """A tensor of the ForwardAD ``backend`` as its primal and tangent (None when zero)."""
    primal, tangent = backend.dual_parts(dual.primitive)
    inner = backend.InnerBackend
    return new(inner, primal, FLOAT), None if tangent is None else new(inner, tangent, FLOAT)


# ---- the recorded ops ---------------------------------------------------------------------------
# Custom nodes keep no inputs and cannot be replayed (forward may be anything), so they are
# compute-bound: BalancedCheckpointing keeps their outputs instead of recomputing them.
def _step_rule(B: Any, grad: Any, inputs: Any, output: Any, params: tuple[Any, ...],  # noqa: N803
               parents: tuple[Any, ...]) -> tuple[Any, ...]:
    """A custom node: its GradFn's backward."""
    return params[0]._step(B, grad)


def _output_rule(B: Any, grad: Any, inputs: Any, output: Any, params: tuple[Any, ...],  # noqa: N803
                 parents: tuple[Any, ...]) -> tuple[Any, ...]:
    """Output ``params[0]`` of a multi-output custom node: its gradient fills that slot."""
    return (OutputGrad(params[0], params[1], grad),)


def _poison_rule(B: Any, grad: Any, inputs: Any, output: Any, params: tuple[Any, ...],  # noqa: N803
                 parents: tuple[Any, ...]) -> tuple[Any, ...]:
    """A gradient computed off the graph: differentiating through it is an error."""
    raise AutodiffError(params[0])


_OUTPUT = Op("custom_output", _output_rule, None, saves_inputs=False, saves_output=False,
             compute_bound=True)
_POISON = Op("once_differentiable", _poison_rule, None, saves_inputs=False, saves_output=False,
             compute_bound=True)
_STEP_OPS: dict[str, Op] = {}


def _step_op(name: str) -> Op:
    """The (cached) op of custom nodes called ``name``."""
    op = _STEP_OPS.get(name)
    if op is None:
        op = _STEP_OPS.setdefault(name, Op(name, _step_rule, None, saves_inputs=False,
                                           saves_output=False, compute_bound=True))
    return op


def record_outputs(grad_fn: GradFn, outputs: Sequence[Any],
                   differentiable: Sequence[bool]) -> list[Any]:
    """``outputs`` (values of the inner backend of ``grad_fn``'s Autodiff backend K) as values
    of K; the ``differentiable`` ones are tracked by one node running ``grad_fn`` when an input
    is tracked (several outputs: one node for the op and one per tracked output)."""
    backend = grad_fn._backend
    pending = grad_fn._pending
    if pending is None:
        raise AutodiffError(f"{grad_fn.name}: this GradFn was already applied; build one per call")
    grad_fn._pending = None
    lifted = [lift_untracked(backend, o) for o in outputs]
    tracked = [i for i, d in enumerate(differentiable) if d]
    if not tracked or all(p.node is None for p in pending):
        return lifted
    op = _step_op(grad_fn.name)
    if len(outputs) == 1:
        lifted[0] = new(backend, backend.record(op, outputs[0].primitive, pending, (grad_fn,)),
                        FLOAT)
        return lifted
    joint = backend.record(op, outputs[tracked[0]].primitive, pending, (grad_fn,)).node
    for i in tracked:
        value = outputs[i].primitive
        # The op's node stands in for the tuple of outputs: each output is one slot of it.
        lifted[i] = new(backend, backend.record(_OUTPUT, value, (AutodiffTensor(value, joint),),
                                                (i, len(outputs))), FLOAT)
    return lifted


def apply_grad_fn(grad_fn: GradFn, outputs: Tensor | Sequence[Tensor]
                  ) -> Tensor | tuple[Tensor, ...]:
    """Record one node running ``grad_fn`` for ``outputs``: the op's results, computed from
    its inputs' inner values (tensors of the inner backend I of the inputs' Autodiff backend
    K, or untracked tensors of K). Returns them as tensors of K, the float ones tracked when
    an input is. On a plain backend the outputs come back unchanged."""
    multiple = isinstance(outputs, tuple | list)
    # Any: a wrong output (an int...) must reach the check below, which names it.
    values: list[Any] = list(outputs) if isinstance(outputs, tuple | list) else [outputs]
    backend = grad_fn._backend
    if is_forward_ad(backend):
        raise AutodiffError(
            f"{grad_fn.name}: a GradFn records a reverse-mode node, and {backend.name()} "
            "carries tangents instead; write a Function with a jvp for forward mode")
    if not is_autodiff(backend):
        return tuple(values) if multiple else values[0]
    inner = []
    for i, value in enumerate(values):
        if isinstance(value, Tensor) and value.backend is backend:
            value = value.inner()
        elif not (isinstance(value, Tensor) and value.backend is backend.InnerBackend):
            where = value.backend.name() if isinstance(value, Tensor) else type(value).__name__
            raise AutodiffError(
                f"apply_grad_fn({grad_fn.name}): output {i} is {where}; expected a tensor of "
                f"{backend.InnerBackend.name()} (computed from the inputs' inner values)")
        inner.append(value)
    result = record_outputs(grad_fn, inner, [v.kind is FLOAT for v in inner])
    return tuple(result) if multiple else result[0]
