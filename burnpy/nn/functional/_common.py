"""Argument checks and small helpers shared by the ``burnpy.nn.functional`` topics: int
tuples of spatial arguments, float and ``[batch, channels, *spatial]`` inputs, parameters of the
input's backend and dtype, host arrays as tensors, torch's ``inplace=True``."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from burnpy.backend.errors import DTypeError, InvalidArgumentError, KindError, ShapeError, describe
from burnpy.tensor import Tensor
from burnpy.tensor._core import FLOAT, QUANTIZED, check_same_backend

IntOrTuple = int | Sequence[int]


def _tuple(op: str, name: str, value: IntOrTuple, n: int, minimum: int, *,
           one_for_all: bool = True) -> tuple[int, ...]:
    """``value`` as ``n`` ints of at least ``minimum``; with ``one_for_all`` a 1-tuple stands
    for every spatial dim, as in torch's convolutions and pools."""
    out = (value,) * n if isinstance(value, int) else tuple(value)
    if one_for_all and len(out) == 1:
        out = out * n
    if len(out) != n or any(not isinstance(v, int) for v in out):
        raise InvalidArgumentError(f"{op}: {name} must be an int or {n} ints, got {value!r}")
    if any(v < minimum for v in out):
        raise InvalidArgumentError(f"{op}: {name} must be >= {minimum}, got {value!r}")
    return out


def _ints(op: str, name: str, value: IntOrTuple, n: int, minimum: int) -> tuple[int, ...]:
    """``_tuple`` without the 1-tuple shorthand: exactly one int or ``n`` ints."""
    return _tuple(op, name, value, n, minimum, one_for_all=False)


def _unbatched(x: Tensor, n: int) -> bool:
    """Whether ``x`` is an unbatched ``[c, *spatial]`` input of an ``n``-d op, which torch
    takes as a batch of one."""
    return x.ndim == n + 1


def _float(op: str, x: Tensor, name: str = "input") -> None:
    if x.kind is not FLOAT:
        raise KindError(f"{op}: {name} must be a float tensor, got {x.kind} ({x.dtype!r})")


def _float_input(op: str, x: Tensor, n: int, name: str = "input") -> None:
    """``x`` is a float ``[batch, channels, *n spatial]`` tensor."""
    _float(op, x, name)
    if x.ndim != n + 2:
        raise ShapeError(f"{op}: {name} must be [batch, channels, {n} spatial dim(s)] "
                         f"({n + 2}-d), got shape {describe(x.shape)}")


def _same(op: str, x: Tensor, *others: Tensor | None) -> None:
    """Every given parameter is a float tensor of ``x``'s backend, device and dtype."""
    backend, dtype = x.backend, x.dtype
    for o in others:
        if o is not None:
            if o.backend is not backend or backend.multi_device:
                check_same_backend(op, x, o)
            if o.kind is not FLOAT:
                raise KindError(f"{op}: parameters must be float tensors, got {o.kind}")
            if o.dtype is not dtype:
                raise DTypeError(f"{op}: input is {dtype!r} but a parameter is {o.dtype!r}")


def _float_weight(weight: Tensor) -> Tensor:
    """Quantized weights (``Module.quantize_weights``) enter float-only kernels dequantized."""
    return weight.dequantize() if weight.kind is QUANTIZED else weight


def _host(x: Tensor, values: np.ndarray) -> Tensor:
    """A host array (an index map, a mask) as a tensor on ``x``'s backend and device: floats in
    ``x``'s dtype, ints in the backend's int dtype (int32 on WebGPU, which has no int64)."""
    if values.dtype.kind == "f":
        return Tensor.from_data(values, backend=x.backend, device=x.device, dtype=x.dtype)
    if values.dtype.kind in "iu":
        return Tensor.from_data(values, backend=x.backend, device=x.device,
                                dtype=x.backend.int_dtype)
    return Tensor.from_data(values, backend=x.backend, device=x.device)


def _inplace(x: Tensor, compute: Callable[[Tensor], Tensor], inplace: bool) -> Tensor:
    """``compute(x)``; with torch's ``inplace=True`` written into ``x`` (which is returned).
    In place, ``compute`` reads a copy of ``x``: the nodes it records then saved values the
    write leaves valid (a composition's inner nodes reading ``x`` itself would refuse their
    backward once ``x`` is overwritten, where torch's fused in-place kernels do not)."""
    return x.copy_(compute(x.clone())) if inplace else compute(x)
