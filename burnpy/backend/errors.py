"""The burnpy exception hierarchy: every user-facing failure is a ``BurnpyError``.

Messages name the op and the offending shapes, dtypes and devices, so a failure
deep inside a model says what broke without a debugger.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from burnpy.backend.dtype import DType


class BurnpyError(Exception):
    """Base class of every error burnpy raises on purpose."""


class ShapeError(BurnpyError, ValueError):
    """Shapes that cannot work together in an op (broadcast, matmul, cat, reshape...)."""


class DTypeError(BurnpyError, TypeError):
    """A dtype an op cannot take, or two dtypes that do not mix."""


class IndexOutOfBoundsError(BurnpyError, IndexError):
    """An index (gather, select, slice, dim) outside the tensor."""


class InvalidArgumentError(BurnpyError, ValueError):
    """An argument outside its domain: a negative stride, a zero kernel, a bad mode."""


class BackendMismatchError(BurnpyError, TypeError):
    """Two tensors of different backend types in one op (including B and Autodiff(B))."""


class DeviceMismatchError(BurnpyError, ValueError):
    """Two tensors on different devices in one op."""


class UnsupportedDTypeError(DTypeError):
    """A dtype the chosen backend does not support (``supports_dtype`` says no); ``dtype``
    is the refused dtype where the raiser knows it (None otherwise)."""

    def __init__(self, message: str, dtype: DType | None = None) -> None:
        super().__init__(message)
        self.dtype = dtype


class KindError(BurnpyError, TypeError):
    """An op applied to the wrong tensor kind (float, int, bool, quantized)."""


class AutodiffError(BurnpyError, RuntimeError):
    """A misuse of the gradient graph: consumed graph, non-leaf require_grad, bad custom op."""


class GradAccessError(AutodiffError, AttributeError):
    """``w.grad`` used as a value (``w.grad.numpy()``, torch's habit): in burnpy it is the
    method ``w.grad(grads)``. An AttributeError too, so ``hasattr`` probes stay quiet."""


class DivisionByZeroError(BurnpyError, ZeroDivisionError):
    """Integer division or remainder by zero (floats give inf/NaN instead, as IEEE says)."""


class RecordError(BurnpyError, OSError):
    """A model file that is missing, truncated, corrupt or does not match the module."""


def article(word: str) -> str:
    """``word`` with "a" or "an" in front ("an int tensor", "a float tensor")."""
    return ("an " if word[:1] in "aeiou" else "a ") + word


def describe(value: object) -> str:
    """Render a shape, dtype or device compactly for an error message."""
    if isinstance(value, tuple):
        return "(" + ", ".join(str(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    return str(value)
