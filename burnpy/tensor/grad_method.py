"""``Tensor.grad``: Burn's method ``w.grad(grads)``, guarded against torch's attribute habit.

In torch ``w.grad`` is a tensor; in burnpy gradients live in the ``Gradients`` that
``backward()`` returns, and ``w.grad`` is a method. A plain method would answer
``w.grad.numpy()`` with "'function' object has no attribute 'numpy'"; ``GradMethod`` binds to
a ``BoundGrad`` that is called exactly as the method was, and whose every attribute, operator
and conversion raises a ``GradAccessError`` showing the call. What cannot be intercepted:
``w.grad is None`` (always False: use ``w.grad(grads) is None``) and identity or ``callable``
checks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn, overload

from burnpy.backend.errors import GradAccessError, describe

if TYPE_CHECKING:
    from burnpy.autodiff.gradients import Gradients
    from burnpy.tensor.tensor import Tensor

GradFunction = Callable[["Tensor", "Gradients"], "Tensor | None"]


def _refuse(bound: BoundGrad, what: str) -> NoReturn:
    t = bound._tensor
    raise GradAccessError(
        f"w.grad{what}: w.grad is a method in burnpy, not a tensor: call w.grad(grads) with "
        "the Gradients that loss.backward() returned (grads = loss.backward(); "
        f"g = w.grad(grads), a Tensor of the inner backend or None); w is {t.kind} "
        f"{describe(t.shape)} {t.dtype!r} on {t.backend.name()}")


class BoundGrad:
    """``w.grad`` of one tensor: call it with ``grads``; anything else raises."""

    __slots__ = ("_fn", "_tensor")

    def __init__(self, fn: GradFunction, tensor: Tensor) -> None:
        """Bind ``fn`` (the ``grad`` method's body) to ``tensor``."""
        self._fn = fn
        self._tensor = tensor

    def __call__(self, grads: Gradients) -> Tensor | None:
        """This tensor's gradient in ``grads`` (a tensor of the inner backend), or None."""
        return self._fn(self._tensor, grads)

    if not TYPE_CHECKING:  # hidden from mypy, which then flags ``w.grad.numpy()`` statically
        def __getattr__(self, name: str) -> NoReturn:
            if name in BoundGrad.__slots__:  # an unset slot (never after __init__)
                raise AttributeError(name)
            _refuse(self, f".{name}")

    def __repr__(self) -> str:
        """Names the call, since printing ``w.grad`` is how a torch user inspects a gradient."""
        return "<burnpy Tensor.grad method: call w.grad(grads) with loss.backward()'s Gradients>"

    def __bool__(self) -> NoReturn:
        """``if w.grad:`` is torch's habit; refused."""
        _refuse(self, " as a truth value")

    def __array__(self, *args: Any, **kwargs: Any) -> NoReturn:
        """``np.asarray(w.grad)`` would make an object array; refused."""
        _refuse(self, " as an array")

    def __float__(self) -> NoReturn:
        """``float(w.grad)``; refused."""
        _refuse(self, " as a number")

    def __len__(self) -> NoReturn:
        """``len(w.grad)``; refused."""
        _refuse(self, " has no length")

    def __iter__(self) -> NoReturn:
        """``for g in w.grad``; refused."""
        _refuse(self, " iterated")

    def __getitem__(self, key: object) -> NoReturn:
        """``w.grad[0]``; refused."""
        _refuse(self, "[...]")

    def _arithmetic(self, other: object) -> NoReturn:
        """``w.grad * lr``, ``p - lr * w.grad`` and the other operators; refused."""
        _refuse(self, " in arithmetic")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _arithmetic
    __truediv__ = __rtruediv__ = __matmul__ = __rmatmul__ = __pow__ = _arithmetic
    __lt__ = __le__ = __gt__ = __ge__ = _arithmetic

    def __neg__(self) -> NoReturn:
        """``-w.grad``; refused."""
        _refuse(self, " negated")


class GradMethod:
    """The descriptor behind ``Tensor.grad``: ``w.grad`` is a ``BoundGrad`` of ``w``;
    ``Tensor.grad(w, grads)`` still works, and ``__wrapped__`` is the method's function, for
    introspection (one instance, so no ``__slots__``: it carries the method's ``__doc__``)."""

    def __init__(self, fn: GradFunction) -> None:
        """Wrap the method body ``fn``."""
        self.__wrapped__ = fn
        self.__doc__ = fn.__doc__

    @overload
    def __get__(self, tensor: None, owner: type | None = None) -> GradMethod: ...
    @overload
    def __get__(self, tensor: Tensor, owner: type | None = None) -> BoundGrad: ...

    def __get__(self, tensor: Tensor | None, owner: type | None = None) -> GradMethod | BoundGrad:
        """The bound ``w.grad`` (or this descriptor, looked up on the class)."""
        if tensor is None:
            return self
        return BoundGrad(self.__wrapped__, tensor)

    def __call__(self, tensor: Tensor, grads: Gradients) -> Tensor | None:
        """``Tensor.grad(w, grads)``, as the unbound method was."""
        return self.__wrapped__(tensor, grads)
