"""``DualTensor``, the float primitive of a ForwardAD backend, and its deferred-primal form."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class DualTensor:
    """An inner-backend float primitive (``primal``) and its tangent (another inner primitive
    of the same shape and dtype, or None for a zero tangent: the untangented fast path).

    ``shape`` (a tuple) and ``dtype`` (the primal's NumPy dtype) are copied at construction
    because the Tensor layer and the provided ops read them on every call.
    """

    __slots__ = ("dtype", "primal", "shape", "tangent")

    def __init__(self, primal: Any, tangent: Any = None) -> None:
        self.primal = primal
        self.tangent = tangent
        self.shape: tuple[int, ...] = primal.shape
        self.dtype: Any = primal.dtype

    def __repr__(self) -> str:
        state = "no tangent" if self.tangent is None else "with tangent"
        return f"DualTensor(shape={self.shape}, dtype={self.dtype}, {state})"


class DeferredDualTensor(DualTensor):
    """A DualTensor whose primal is computed when first read (its shape and dtype are known
    up front).

    A forward-over-reverse HVP reads only the tangents of the weight gradients, so the
    matmuls computing those gradients' primals are dead work: ``ForwardAD``'s matmul defers
    its primal and never runs it if nothing reads it.
    """

    __slots__ = ("_compute", "_value")

    def __init__(self, compute: Callable[[], Any], shape: tuple[int, ...], dtype: Any,
                 tangent: Any) -> None:
        self._compute: Callable[[], Any] | None = compute
        self._value: Any = None
        self.tangent = tangent
        self.shape = shape
        self.dtype = dtype

    @property
    def primal(self) -> Any:
        value = self._value
        if value is None:
            compute = self._compute
            if compute is None:  # another thread has just computed it
                return self._value
            value = self._value = compute()
            self._compute = None
        return value
