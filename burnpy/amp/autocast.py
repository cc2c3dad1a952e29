"""``autocast``: mixed precision with torch's meaning, as a context manager or a decorator.

Inside a region, each op the policy lists (``burnpy.amp.policy``) casts its floating inputs
before it runs: the matrix products and convolutions to the region's dtype, the losses and
other range-hungry ops to float32, the multi-tensor ops to their widest input dtype. Other
ops run as written, so their outputs keep the dtypes of their inputs. float64 inputs are
never cast, and ops run on tensors of other device types are not touched.

Regions are per thread and nest: an inner ``autocast(..., enabled=False)`` opts out, an inner
region with another dtype overrides the outer one until it exits. The casts go through
``Tensor.cast``, which is differentiable, so under ``Autodiff`` each gradient comes back in
its parameter's dtype. A float32 leaf that requires grad (a parameter) is cast to the
region's dtype once: the cast is cached, keyed by the tensor, until the outermost region of
the thread exits (torch's weight cache), unless ``cache_enabled=False``.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any, TypeVar

from burnpy.amp.policy import DEFAULT_DTYPE, POLICY, CastPolicy
from burnpy.autodiff.modes import is_grad_enabled
from burnpy.autodiff.tensor import AutodiffTensor
from burnpy.backend.dtype import DType, DTypeLike, promote_floats
from burnpy.backend.errors import DTypeError, InvalidArgumentError
from burnpy.tensor._core import FLOAT, TensorBase, is_tensor
from burnpy.tensor.autocast_hook import register_autocast_handler
from burnpy.tensor.tensor import Tensor

_F = TypeVar("_F", bound=Callable[..., Any])

#: The dtypes a region may cast to (torch's: other dtypes are refused).
LOWER_DTYPES = (DType.bfloat16, DType.float16)


class _ThreadState(threading.local):
    """One thread's autocast state: the region in force per device type, the nesting depth,
    whether a listed op is running (its inner ops run as written) and the weight cache."""

    def __init__(self) -> None:
        self.regions: dict[str, tuple[bool, DType]] = {}
        self.depth = 0
        self.paused = 0
        self.cache_enabled = True
        self.cache: dict[int, tuple[Any, Tensor]] = {}


_state = _ThreadState()


def _device_type(t: Tensor) -> str:
    """The device type (``"cpu"``, ``"cuda"``, ``"wgpu"``) a tensor's backend computes on."""
    return t.device.type


def _first_float(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Tensor | None:
    """The first float tensor among the arguments (and the sequences among them)."""
    for value in (*args, *kwargs.values()):
        if is_tensor(value):
            if value.kind is FLOAT:
                return value
        elif isinstance(value, list | tuple):
            for item in value:
                if is_tensor(item) and item.kind is FLOAT:
                    return item
    return None


def _eligible(value: Any, device_type: str) -> bool:
    """Whether autocast may cast ``value``: a float tensor, not float64, of the region's device
    type (torch's rule)."""
    return (is_tensor(value) and value.kind is FLOAT
            and value.dtype is not DType.float64 and _device_type(value) == device_type)


def _cached_cast(t: Tensor, dtype: DType, lower: DType) -> Tensor:
    """``t`` in ``dtype``; a float32 leaf requiring grad cast to the lower dtype is cached for
    the rest of the outermost region (torch's ``cached_cast``). Not under ``no_grad``: that
    cast is untracked, and a later use of the cache would lose the gradient (as torch's). A
    cached cast whose graph a backward pass consumed is cast again (several steps, or
    accumulated gradients, in one region)."""
    st = _state
    primitive = t.primitive
    cacheable = (st.cache_enabled and dtype is lower and t.dtype is DType.float32
                 and is_grad_enabled()
                 and isinstance(primitive, AutodiffTensor) and primitive.node is not None
                 and primitive.node.op is None and not hasattr(t, "_view_of"))
    if not cacheable:
        return t.cast(dtype)
    hit = st.cache.get(id(t))  # keeps the source primitive: a reused id cannot match it
    if hit is not None and hit[0] is primitive:  # not written since (a step replaces it)
        node = hit[1].primitive.node
        if node is None or node.parents is not None:  # a backward pass has not consumed it
            return hit[1]
    cast = t.cast(dtype)
    st.cache[id(t)] = (primitive, cast)
    return cast


def _cast_args(value: Any, dtype: DType, lower: DType, device_type: str) -> Any:
    """``value`` with its eligible tensors (in sequences too) cast to ``dtype``."""
    if is_tensor(value):
        if _eligible(value, device_type) and value.dtype is not dtype:
            return _cached_cast(value, dtype, lower)
        return value
    if isinstance(value, list | tuple) and any(isinstance(v, TensorBase) for v in value):
        return type(value)(_cast_args(v, dtype, lower, device_type) for v in value)
    return value


def _widest(args: tuple[Any, ...], kwargs: dict[str, Any], device_type: str) -> DType | None:
    """The widest dtype of the eligible tensors among the arguments (promote ops)."""
    widest: DType | None = None
    for value in (*args, *kwargs.values()):
        items = value if isinstance(value, list | tuple) else (value,)
        for item in items:
            if _eligible(item, device_type):
                widest = item.dtype if widest is None else promote_floats(widest, item.dtype)
    return widest


def _handle(name: str, fn: Callable[..., Any], args: tuple[Any, ...],
            kwargs: dict[str, Any]) -> Any:
    """Run the marked op ``name`` under this thread's regions (the hook's handler)."""
    st = _state
    if st.paused or not st.regions:
        return fn(*args, **kwargs)
    first = _first_float(args, kwargs)
    if first is None:
        return fn(*args, **kwargs)
    device_type = _device_type(first)
    region = st.regions.get(device_type)
    policy = POLICY[device_type].get(name) if region is not None and region[0] else None
    if policy is None:
        return fn(*args, **kwargs)
    lower = region[1] if region is not None else DEFAULT_DTYPE[device_type]
    target: DType | None
    if policy is CastPolicy.LOWER:
        target = lower
        if not first.backend.supports_dtype(first.device, lower):
            raise _unsupported(first, lower, device_type, name)
    elif policy is CastPolicy.FP32:
        target = DType.float32
    elif policy is CastPolicy.PROMOTE:
        target = _widest(args, kwargs, device_type)
    else:
        target = None
    if target is not None:
        args = tuple(_cast_args(a, target, lower, device_type) for a in args)
        kwargs = {k: _cast_args(v, target, lower, device_type) for k, v in kwargs.items()}
    st.paused += 1
    try:
        return fn(*args, **kwargs)
    finally:
        st.paused -= 1


def _unsupported(t: Tensor, dtype: DType, device_type: str, name: str) -> DTypeError:
    """The error for a region whose dtype ``t``'s backend cannot compute on its device."""
    backend, device = t.backend, t.device
    usable = [str(d) for d in LOWER_DTYPES if backend.supports_dtype(device, d)]
    instead = (f"use autocast({device_type!r}, dtype={usable[0]})" if usable
               else "run it in float32 (enabled=False)")
    return DTypeError(
        f"autocast({device_type!r}, dtype={dtype}): {name} on {backend.__name__} "
        f"({backend.name(device)}, device {device}) cannot compute in {dtype.name}: the device "
        f"does not support it (a WebGPU adapter needs the 'shader-f16' feature for float16 "
        f"and has no bfloat16); {instead}")


_hook = register_autocast_handler(_handle)


class autocast:  # noqa: N801 - torch's name
    """Mixed precision for the ops of ``device_type`` (``"cpu"``, ``"cuda"``, ``"wgpu"``) in a
    ``with`` block or a decorated function: listed ops run in ``dtype`` (bfloat16 on the CPU,
    float16 on GPUs by default), in float32 or at their widest input, as torch's autocast.

    ``enabled=False`` opts out inside an enclosing region; ``cache_enabled=False`` casts the
    parameters again at each use instead of once per region.
    """

    def __init__(self, device_type: str, dtype: DTypeLike | None = None, enabled: bool = True,
                 cache_enabled: bool = True) -> None:
        if device_type not in POLICY:
            raise InvalidArgumentError(
                f"autocast: unknown device_type {device_type!r}; expected one of "
                f"{sorted(POLICY)} (the Device.type of a backend's tensors)")
        chosen = DEFAULT_DTYPE[device_type] if dtype is None else DType.of(dtype)
        if chosen not in LOWER_DTYPES:
            raise DTypeError(f"autocast: dtype must be bfloat16 or float16, got {chosen!r}")
        self.device_type = device_type
        self.fast_dtype = chosen
        self.enabled = bool(enabled)
        self.cache_enabled = bool(cache_enabled)
        self._saved: list[tuple[tuple[bool, DType] | None, bool]] = []

    def __enter__(self) -> autocast:
        """Open the region in this thread (nested regions restore the outer one on exit)."""
        st = _state
        self._saved.append((st.regions.get(self.device_type), st.cache_enabled))
        st.regions[self.device_type] = (self.enabled, self.fast_dtype)
        st.cache_enabled = self.cache_enabled
        st.depth += 1
        _hook.enter()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        """Close the region; the outermost region of the thread also empties the weight cache."""
        st = _state
        previous, cache_enabled = self._saved.pop()
        if previous is None:
            del st.regions[self.device_type]
        else:
            st.regions[self.device_type] = previous
        st.cache_enabled = cache_enabled
        st.depth -= 1
        if st.depth == 0:
            st.cache.clear()
        _hook.exit()

    def __call__(self, fn: _F) -> _F:
        """``fn`` running inside a fresh region like this one at each call (a decorator)."""
        device_type, dtype = self.device_type, self.fast_dtype
        enabled, cache_enabled = self.enabled, self.cache_enabled

        @functools.wraps(fn)
        def decorated(*args: Any, **kwargs: Any) -> Any:
            with autocast(device_type, dtype, enabled, cache_enabled):
                return fn(*args, **kwargs)

        return decorated  # type: ignore[return-value]


def is_autocast_enabled(device_type: str = "cpu") -> bool:
    """Whether an enabled region for ``device_type`` is in force in this thread."""
    region = _state.regions.get(device_type)
    return region is not None and region[0]


def get_autocast_dtype(device_type: str) -> DType:
    """The dtype a region for ``device_type`` casts to in this thread (its default outside)."""
    region = _state.regions.get(device_type)
    return DEFAULT_DTYPE[device_type] if region is None else region[1]
