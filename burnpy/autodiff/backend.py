"""``Autodiff[B, C]``: the decorator backend that adds reverse-mode gradients to any backend.

``Autodiff(B)`` (or ``Autodiff[B, C]``) builds, once per pair and thread-safely, a subclass
of ``AutodiffBackend`` whose float primitive is ``AutodiffTensor``; int, bool and quantized
primitives are B's own and their ops are B's functions, bound directly on the class.
"""

from __future__ import annotations

from typing import Any, ClassVar

from burnpy.autodiff.checkpoint import CheckpointStrategy, NoCheckpointing
from burnpy.autodiff.gradients import Gradients
from burnpy.autodiff.graph import (
    HOST_TRANSFERS,
    MODIFICATIONS,
    Op,
    mark_modified,
    new_key,
    new_leaf,
    run_backward,
)
from burnpy.autodiff.modes import MODE, Record, modal_record, user_frame
from burnpy.autodiff.rule_helpers import zeros
from burnpy.autodiff.rules.families import AutodiffQOps, AutodiffRules
from burnpy.autodiff.tensor import AutodiffTensor
from burnpy.backend.base import Backend
from burnpy.backend.decorator import (
    ClassCache,
    InnerDevices,
    PassThroughKinds,
    inner_attributes,
    passthrough_ops,
)
from burnpy.backend.device import Device
from burnpy.backend.dtype import dtype_of_numpy
from burnpy.backend.errors import AutodiffError, InvalidArgumentError


class AutodiffBackend(AutodiffRules, PassThroughKinds, InnerDevices, Backend, abstract=True):
    """Base of every ``Autodiff[B, C]`` class: Burn's ``AutodiffBackend`` API as class methods.

    ``InnerBackend`` is B and ``checkpointing`` is C; gradients are B's float primitives.
    """

    checkpointing: ClassVar[type[CheckpointStrategy]]
    FloatTensorPrimitive: ClassVar[Any] = AutodiffTensor

    # ---- the backend's non-op methods, delegated to B ------------------------------------------
    @classmethod
    def name(cls, device: Device | None = None) -> str:
        label = "" if cls.checkpointing is NoCheckpointing else f", {cls.checkpointing.label}"
        return f"autodiff<{cls.InnerBackend.name(device)}{label}>"

    @classmethod
    def ad_enabled(cls) -> bool:
        return True

    # ---- gradients ----------------------------------------------------------------------------
    @classmethod
    def backward(cls, tensor: AutodiffTensor, grad_output: Any = None,
                 retain_graph: bool = False) -> Gradients:
        """Gradients of ``tensor`` for every tracked leaf (and retained tensor) it depends on.

        ``grad_output`` is an inner-backend primitive of ``tensor``'s shape, or None to seed
        ones (the gradient of ``sum(tensor)``, Burn's rule). The graph's saved state is freed
        as the pass goes unless ``retain_graph``; a consumed graph cannot be walked again.
        """
        root = tensor.node
        if root is None:
            raise AutodiffError(
                "backward: the tensor does not require grad (no tracked tensor was used to "
                "compute it); call require_grad() on the leaves to differentiate")
        inner = cls.InnerBackend
        if grad_output is None:
            p = tensor.primitive
            grad_output = inner.float_ones(tensor.shape, inner.float_device(p),
                                           dtype_of_numpy(p.dtype))
        return Gradients(run_backward(inner, root, grad_output, retain_graph, cls.checkpointing))

    @classmethod
    def grad(cls, tensor: AutodiffTensor, grads: Gradients) -> Any:
        """The gradient of ``tensor`` in ``grads`` (an inner primitive), or None."""
        return grads.get(tensor)

    @classmethod
    def grad_remove(cls, tensor: AutodiffTensor, grads: Gradients) -> Any:
        """Pop the gradient of ``tensor`` from ``grads`` (None when absent)."""
        return grads.pop(tensor)

    @classmethod
    def grad_replace(cls, tensor: AutodiffTensor, grads: Gradients, grad: Any) -> None:
        """Set the gradient of ``tensor`` in ``grads`` to the inner primitive ``grad``."""
        node = tensor.node
        if node is None:
            raise AutodiffError("grad_replace: the tensor is not tracked, so it can have no "
                                "gradient; call require_grad() on it first")
        if node.key is None:
            node.key = new_key()
        grads.set(node, grad)

    @classmethod
    def retain_grad(cls, tensor: AutodiffTensor) -> None:
        """Keep this intermediate tensor's gradient in the Gradients of later backward passes
        (leaves always keep theirs)."""
        node = tensor.node
        if node is None:
            raise AutodiffError("retain_grad: the tensor does not require grad, so it gets no "
                                "gradient to retain")
        if node.key is None:
            node.key = new_key()

    @classmethod
    def write_in_place(cls, target: AutodiffTensor, value: AutodiffTensor,
                       what: str) -> AutodiffTensor:
        """The primitive a tensor holds after the in-place write ``what`` (``"add_"``...) gave
        it ``value``, computed from ``target`` by ordinary ops (torch's rules).

        A leaf that requires grad refuses outside ``no_grad`` (its gradient would be that of
        another value). Otherwise the node of the old value is marked modified, so a node that
        saved it refuses to run its backward; while recording, the write stays in the graph
        (gradients reach the old value and the operand); under ``no_grad`` the tensor keeps its
        node (a parameter stays the same leaf) with the new values.
        """
        node = target.node
        if node is None:
            return value
        if node.op is None and MODE.grad_enabled:
            raise AutodiffError(
                f"{what}: a leaf tensor that requires grad cannot be modified in place (its "
                "gradient would belong to another value); update it under `with bp.no_grad():` "
                "(as optimizers and initializers do), or write into a copy (t.clone())")
        mark_modified(node, f"{what} at {user_frame()}")
        if not MODE.grad_enabled:
            return AutodiffTensor(value.primitive, node)
        if value.node is None:  # a constant overwrote a tracked value: it stays in the graph
            return cls.record(_OVERWRITE, value.primitive, (target,), (value.primitive,))
        if value.node is not node:
            value.node.born = MODIFICATIONS.count  # the write's own node reads the old value
        return value

    @classmethod
    def float_set_require_grad(cls, tensor: AutodiffTensor, require_grad: bool) -> AutodiffTensor:
        """A leaf that is tracked (or, with False, untracked) holding the same values."""
        node = tensor.node
        if node is not None and node.op is not None:
            raise AutodiffError(
                f"require_grad: Can't convert a non leaf tensor into a tracked tensor: this "
                f"tensor was computed by {node.op.name} from tracked tensors; use detach() to "
                "get a new leaf with its values")
        if require_grad:
            return tensor if node is not None else AutodiffTensor(tensor.primitive,
                                                                  new_leaf(tensor.shape))
        return tensor if node is None else AutodiffTensor(tensor.primitive)

    @staticmethod
    def float_is_require_grad(tensor: AutodiffTensor) -> bool:
        return tensor.node is not None

    @staticmethod
    def float_detach(tensor: AutodiffTensor) -> AutodiffTensor:
        return tensor if tensor.node is None else AutodiffTensor(tensor.primitive)

    # ---- crossing between this backend and B, or the host ---------------------------------------
    # The crossings that bypass the graph are counted (``HOST_TRANSFERS``): a custom op's backward
    # that makes one cannot be differentiated again (see ``burnpy.custom_ops.grad_fn``).
    @classmethod
    def float_from_data(cls, data: Any, device: Device) -> AutodiffTensor:
        """A constant holding ``data``."""
        HOST_TRANSFERS.count += 1
        return AutodiffTensor(cls.InnerBackend.float_from_data(data, device))

    @classmethod
    def float_into_data(cls, tensor: AutodiffTensor) -> Any:
        """The values on the host."""
        HOST_TRANSFERS.count += 1
        return cls.InnerBackend.float_into_data(tensor.primitive)

    @staticmethod
    def inner(tensor: AutodiffTensor) -> Any:
        """B's float primitive, untracked."""
        return tensor.primitive

    @staticmethod
    def from_inner(tensor: Any) -> AutodiffTensor:
        """An untracked float primitive of this backend from one of B."""
        HOST_TRANSFERS.count += 1
        return AutodiffTensor(tensor)


#: Int, bool and quantized ops taken from B unchanged; the few with float inputs or outputs
#: are defined on AutodiffBackend and its mixins instead.
_DELEGATED = passthrough_ops(AutodiffQOps)


class _AutodiffFactory:
    """``Autodiff(B)``, ``Autodiff(B, C)`` and ``Autodiff[B, C]``: one cached class per pair."""

    __slots__ = ("_classes",)

    def __init__(self) -> None:
        self._classes: ClassCache[type[AutodiffBackend]] = ClassCache()

    def __call__(self, backend: type[Backend],
                 checkpointing: type[CheckpointStrategy] = NoCheckpointing
                 ) -> type[AutodiffBackend]:
        if not (isinstance(backend, type) and issubclass(backend, Backend)):
            raise InvalidArgumentError(f"Autodiff: expected a backend class, got {backend!r}")
        if not (isinstance(checkpointing, type) and issubclass(checkpointing, CheckpointStrategy)
                and checkpointing is not CheckpointStrategy):
            raise InvalidArgumentError(
                f"Autodiff: expected a checkpoint strategy (NoCheckpointing or "
                f"BalancedCheckpointing), got {checkpointing!r}")
        return self._classes.get((backend, checkpointing),
                                 lambda: _build(backend, checkpointing))

    def __getitem__(self, params: Any) -> type[AutodiffBackend]:
        return self(*params) if isinstance(params, tuple) else self(params)

    def __repr__(self) -> str:
        return "Autodiff"


def _build(inner: type[Backend], checkpointing: type[CheckpointStrategy]) -> type[AutodiffBackend]:
    """The decorator class of ``inner`` under ``checkpointing``."""
    namespace: dict[str, Any] = {name: staticmethod(getattr(inner, name)) for name in _DELEGATED}
    suffix = "" if checkpointing is NoCheckpointing else f", {checkpointing.__name__}"
    name = f"Autodiff[{inner.__name__}{suffix}]"
    namespace.update(inner_attributes(
        inner, name, f"{inner.__name__} with reverse-mode autodiff ({checkpointing.__name__})."))
    namespace.update(
        __module__=__name__,
        checkpointing=checkpointing,
        record=staticmethod(_recording(inner, checkpointing.record)),
        IntTensorPrimitive=inner.IntTensorPrimitive,
        BoolTensorPrimitive=inner.BoolTensorPrimitive,
    )
    return type(name, (AutodiffBackend,), namespace)


def _overwrite_backward(B: Any, grad: Any, inputs: Any, output: Any,  # noqa: N803
                        params: tuple[Any, ...],
                        parents: tuple[Any, ...]) -> tuple[Any, ...]:
    """A value overwritten by a constant gets no gradient (torch's ``zero_``, ``fill_``)."""
    return (zeros(B, parents[0].shape, grad),)


#: An in-place write of a constant over a tracked value (its retro-forward is the constant).
_OVERWRITE = Op("overwrite", _overwrite_backward,
                forward=lambda B, inputs, params: params[0],  # noqa: N803
                saves_inputs=False, saves_output=False, compute_bound=False)


def _recording(inner: type[Backend], record: Record) -> Record:
    """The strategy's ``record``, through ``modal_record`` while a mode (``no_grad``,
    ``detect_anomaly``) is active in this thread."""

    def recording(op: Op, out: Any, tensors: tuple[AutodiffTensor, ...],
                  params: tuple[Any, ...]) -> AutodiffTensor:
        if MODE.plain:
            return record(op, out, tensors, params)
        return modal_record(inner, record, op, out, tensors, params)

    return recording


Autodiff = _AutodiffFactory()
