"""``ForwardAD[B]``: the decorator backend that adds forward-mode derivatives (tangents).

``ForwardAD(B)`` (or ``ForwardAD[B]``) builds, once per B and thread-safely, a subclass of
``ForwardADBackend`` whose float primitive is ``DualTensor`` (primal and tangent, both B's
float primitives); int, bool and quantized primitives are B's own and their ops are B's
functions, bound directly on the class. Every tangent rule uses B's ops only, so the
decorators stack: ``ForwardAD(ForwardAD(B))`` gives higher forward derivatives and
``Autodiff(ForwardAD(B))`` Hessian-vector products (forward-over-reverse).
"""

from __future__ import annotations

from typing import Any, ClassVar

from burnpy.autodiff.dual_tensor import DualTensor
from burnpy.autodiff.rules.families import ForwardQOps, ForwardRules
from burnpy.backend.base import Backend
from burnpy.backend.decorator import (
    DecoratorFactory,
    InnerDevices,
    PassThroughKinds,
    inner_attributes,
    passthrough_ops,
)
from burnpy.backend.device import Device
from burnpy.backend.errors import DTypeError, ShapeError, describe


class ForwardADBackend(ForwardRules, PassThroughKinds, InnerDevices, Backend, abstract=True):
    """Base of every ``ForwardAD[B]`` class. ``InnerBackend`` is B.

    It tracks no reverse-mode graph (``ad_enabled()`` is False); ``is_forward_ad`` marks it
    for custom ops, which read and build primitives with ``dual_parts`` and ``make_dual``.
    """

    FloatTensorPrimitive: ClassVar[Any] = DualTensor
    is_forward_ad: ClassVar[bool] = True

    # ---- the backend's non-op methods, delegated to B ------------------------------------------
    @classmethod
    def name(cls, device: Device | None = None) -> str:
        return f"forward_ad<{cls.InnerBackend.name(device)}>"

    # ---- tangents -----------------------------------------------------------------------------
    @staticmethod
    def dual_parts(tensor: DualTensor) -> tuple[Any, Any]:
        """``(primal, tangent)``: B's float primitives; the tangent is None when zero."""
        return tensor.primal, tensor.tangent

    @staticmethod
    def make_dual(primal: Any, tangent: Any = None) -> DualTensor:
        """A primitive of this backend from B's ``primal`` and ``tangent`` (same shape and
        dtype; None for a zero tangent)."""
        if tangent is not None:
            if tangent.shape != primal.shape:
                raise ShapeError(f"make_dual: the tangent's shape {describe(tangent.shape)} "
                                 f"differs from the primal's {describe(primal.shape)}")
            if tangent.dtype != primal.dtype:
                raise DTypeError(f"make_dual: the tangent's dtype {tangent.dtype} differs "
                                 f"from the primal's {primal.dtype}")
        return DualTensor(primal, tangent)

    # ---- crossing between this backend and B --------------------------------------------------
    @staticmethod
    def inner(tensor: DualTensor) -> Any:
        """B's float primitive: the primal, without its tangent."""
        return tensor.primal

    @staticmethod
    def from_inner(tensor: Any) -> DualTensor:
        """An untangented float primitive of this backend from one of B."""
        return DualTensor(tensor)


#: Int, bool and quantized ops taken from B unchanged; the few with float inputs or outputs
#: are defined on ForwardADBackend and its mixins instead.
_DELEGATED = passthrough_ops(ForwardQOps)


def _build(inner: type[Backend]) -> type[ForwardADBackend]:
    """The decorator class of ``inner``."""
    namespace: dict[str, Any] = {name: staticmethod(getattr(inner, name)) for name in _DELEGATED}
    name = f"ForwardAD[{inner.__name__}]"
    namespace.update(inner_attributes(
        inner, name, f"{inner.__name__} with forward-mode derivatives (tangents)."))
    namespace.update(
        __module__=__name__,
        IntTensorPrimitive=inner.IntTensorPrimitive,
        BoolTensorPrimitive=inner.BoolTensorPrimitive,
        # Every binary op computes its primal with B's op first (so B's broadcasting, promotion
        # and ValueError on bad shapes hold) and fits its tangent to the primal's shape and
        # dtype: B's trust carries over.
        trusted_binary_ops=inner.trusted_binary_ops,
    )
    return type(name, (ForwardADBackend,), namespace)


ForwardAD: DecoratorFactory[type[ForwardADBackend]] = DecoratorFactory("ForwardAD", _build)
"""``ForwardAD(B)`` / ``ForwardAD[B]``: the decorator class of backend ``B``, one per ``B``."""
