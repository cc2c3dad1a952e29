# ruff: noqa: N803 - the inner backend type is spelled ``B``, as in Burn's generics
"""Recording modes of every Autodiff backend, per thread: ``no_grad`` / ``enable_grad`` (torch's
names for Burn's ``inner()`` over a block of code) and ``detect_anomaly``.

Both are context managers and decorators. The recording path reads one thread-local flag,
``MODE.plain``, and takes the slow path (``modal_record``) only when a mode is active.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from burnpy.autodiff.tensor import AutodiffTensor
from burnpy.backend.errors import AutodiffError, describe

if TYPE_CHECKING:  # the graph imports this module
    from burnpy.autodiff.graph import Node, Op

F = TypeVar("F", bound=Callable[..., Any])
Record = Callable[["Op", Any, tuple[AutodiffTensor, ...], tuple[Any, ...]], AutodiffTensor]

#: Frames under this prefix (burnpy, burnpy_cpu, burnpy_wgpu, burnpy_cuda) are not user code.
_OWN_FILES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "burnpy")


class AnomalyError(AutodiffError):
    """An op's forward or backward produced NaN or infinite values under ``detect_anomaly``."""


class _Mode(threading.local):
    """This thread's recording mode (class attributes are each new thread's defaults)."""

    grad_enabled = True
    anomaly = False
    #: grad_enabled and not anomaly: the recording path's one check.
    plain = True
    #: Where each node was recorded (user file and line), kept while ``detect_anomaly`` is on.
    origins: dict[Node, str] | None = None

    def update(self) -> None:
        self.plain = self.grad_enabled and not self.anomaly


MODE = _Mode()


class _GradMode:
    """Sets whether Autodiff backends record, for a block (``with``) or a function (decorator);
    the previous setting comes back on exit, so the modes nest."""

    __slots__ = ("_enabled", "_previous")

    def __init__(self, enabled: bool) -> None:
        self._enabled = enabled
        self._previous: list[bool] = []

    def __enter__(self) -> None:
        self._previous.append(MODE.grad_enabled)
        MODE.grad_enabled = self._enabled
        MODE.update()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        MODE.grad_enabled = self._previous.pop()
        MODE.update()

    def __call__(self, fn: F) -> F:
        @functools.wraps(fn)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            with _GradMode(self._enabled):
                return fn(*args, **kwargs)

        return wrapped  # type: ignore[return-value]  # the same signature as fn


def no_grad() -> _GradMode:
    """Stop recording on every Autodiff backend in this thread: results are untracked (inference,
    optimizer updates). ``with bp.no_grad():`` or ``@bp.no_grad()``."""
    return _GradMode(False)


def enable_grad() -> _GradMode:
    """Record again inside a ``no_grad`` block (this thread); also a decorator."""
    return _GradMode(True)


def set_grad_enabled(mode: bool) -> _GradMode:
    """``no_grad()`` when ``mode`` is False, ``enable_grad()`` when True (torch's spelling)."""
    return _GradMode(bool(mode))


def is_grad_enabled() -> bool:
    """Whether Autodiff backends record in this thread."""
    return MODE.grad_enabled


class detect_anomaly:  # noqa: N801 - torch's name, used as a context manager
    """Raise ``AnomalyError`` at the first recorded op whose forward, or whose backward step,
    produces NaN or infinite values, naming the op and the line of user code that recorded it.

    Slow (every tracked result and gradient is checked on the host): a debugging aid.
    """

    __slots__ = ("_previous",)

    def __init__(self) -> None:
        self._previous: list[tuple[bool, dict[Node, str] | None]] = []

    def __enter__(self) -> None:
        self._previous.append((MODE.anomaly, MODE.origins))
        MODE.anomaly = True
        MODE.origins = {} if MODE.origins is None else MODE.origins
        MODE.update()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        MODE.anomaly, MODE.origins = self._previous.pop()
        MODE.update()

    def __call__(self, fn: F) -> F:
        @functools.wraps(fn)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            with detect_anomaly():
                return fn(*args, **kwargs)

        return wrapped  # type: ignore[return-value]  # the same signature as fn


def modal_record(B: Any, record: Record, op: Op, out: Any, tensors: tuple[AutodiffTensor, ...],
                 params: tuple[Any, ...]) -> AutodiffTensor:
    """``record`` under the active modes: untracked under ``no_grad``; checked and located
    under ``detect_anomaly``."""
    if not MODE.grad_enabled:
        return AutodiffTensor(out)
    where = user_frame()
    if not all_finite(B, out):
        raise AnomalyError(f"detect_anomaly: {op.name} at {where} produced NaN or infinite "
                           f"values (output shape {describe(out.shape)})")
    tracked = record(op, out, tensors, params)
    if MODE.origins is not None and tracked.node is not None:
        MODE.origins[tracked.node] = where
    return tracked


def check_gradients(B: Any, node: Node, grads: tuple[Any, ...]) -> None:
    """Under ``detect_anomaly``: raise if ``node``'s backward step gave a non-finite gradient."""
    for index, grad in enumerate(grads):
        if grad is not None and hasattr(grad, "shape") and not all_finite(B, grad):
            origins = MODE.origins or {}
            where = origins.get(node, "an unknown place (recorded outside detect_anomaly)")
            name = node.op.name if node.op is not None else "a leaf"
            raise AnomalyError(
                f"detect_anomaly: the backward of {name} (recorded at {where}) produced NaN or "
                f"infinite values in the gradient of its input {index} (shape "
                f"{describe(grad.shape)})")


def all_finite(B: Any, value: Any) -> bool:
    """Whether every element of the inner float primitive ``value`` is finite (on the host)."""
    array = B.float_into_data(value).array
    if array.dtype.itemsize < 4:  # float16 / bfloat16: check in float32
        array = array.astype(np.float32)
    return bool(np.isfinite(array).all())


def user_frame() -> str:
    """``file:line in function`` of the innermost caller outside burnpy's packages."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_OWN_FILES):
        frame = frame.f_back  # type: ignore[assignment]
    if frame is None:
        return "an unknown place"
    code = frame.f_code
    return f"{code.co_filename}:{frame.f_lineno} in {code.co_name}"
