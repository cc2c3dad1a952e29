"""burnpy: Burn's architecture in Python. Tensors are generic over a backend type; backends
are interchangeable; capabilities such as autodiff are decorator backends wrapping any backend.
"""

from typing import TYPE_CHECKING

from burnpy.autodiff import Autodiff, BalancedCheckpointing, Gradients, NoCheckpointing
from burnpy.backend import (
    Backend,
    BackendMismatchError,
    BurnpyError,
    Device,
    DeviceMismatchError,
    Distribution,
    DivisionByZeroError,
    DType,
    DTypeError,
    IndexOutOfBoundsError,
    InvalidArgumentError,
    KindError,
    RecordError,
    ShapeError,
    TensorData,
    UnsupportedDTypeError,
)
from burnpy.backend.dtype import (
    DTypeLike,
    bfloat16,
    bool_,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
)
from burnpy.backend.errors import GradAccessError
from burnpy.custom_ops import Function, GradFn
from burnpy.quantization import QuantScheme
from burnpy.tensor import Tensor, ValuesIndices, cat, stack

if TYPE_CHECKING:
    import numpy as np


def where(condition: Tensor, input: Tensor, other: Tensor) -> Tensor:
    """``input`` where ``condition`` is true, else ``other`` (torch.where)."""
    return other.mask_where(condition, input)


def tensor(data: object, *, backend: type[Backend] | None = None, device: Device | None = None,
           dtype: DTypeLike | None = None) -> Tensor:
    """Shorthand for ``Tensor.from_data`` (torch.tensor's spelling): a copy of nested lists, a
    scalar, a NumPy array or ``TensorData``, on ``backend`` (CpuBackend by default)."""
    return Tensor.from_data(data, backend=backend, device=device, dtype=dtype)


def from_numpy(array: "np.ndarray", *, backend: type[Backend] | None = None) -> Tensor:
    """torch.from_numpy: a tensor sharing ``array``'s memory, on CpuBackend (by default) or
    Autodiff(CpuBackend); see ``Tensor.from_numpy`` for the contract."""
    return Tensor.from_numpy(array, backend=backend)


def from_dlpack(obj: object, *, backend: type[Backend] | None = None,
                device: Device | None = None) -> Tensor:
    """torch.from_dlpack: a tensor sharing the memory of ``obj`` (anything with ``__dlpack__``)
    where the backend can import it; see ``Tensor.from_dlpack``."""
    return Tensor.from_dlpack(obj, backend=backend, device=device)


__all__ = [
    "Autodiff", "Backend", "BackendMismatchError", "BalancedCheckpointing", "BurnpyError", "DType",
    "DTypeError", "Device", "DeviceMismatchError", "Distribution", "DivisionByZeroError",
    "GradAccessError", "Gradients", "IndexOutOfBoundsError", "InvalidArgumentError", "KindError",
    "NoCheckpointing", "QuantScheme", "RecordError", "ShapeError", "Tensor", "TensorData",
    "UnsupportedDTypeError", "ValuesIndices",
    "bfloat16", "bool_", "cat", "float16", "float32", "float64", "int16", "int32", "int64", "int8",
    "from_dlpack", "from_numpy", "stack", "tensor", "uint16", "uint32", "uint64", "uint8",
    "where",
    "Function", "GradFn",
]

# Forward mode and the function transforms (burnpy.func builds on Tensor, imported above).
from burnpy import func  # noqa: E402
from burnpy.autodiff import ForwardAD  # noqa: E402

__all__ += ["ForwardAD", "func"]

from burnpy.capture import Capture  # noqa: E402
from burnpy.fusion import Fusion  # noqa: E402

__all__ += ["Capture", "Fusion"]

# Recording modes of every Autodiff backend, per thread (torch's names).
from burnpy.autodiff.modes import (  # noqa: E402
    AnomalyError,
    detect_anomaly,
    enable_grad,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)

__all__ += ["AnomalyError", "detect_anomaly", "enable_grad", "is_grad_enabled", "no_grad",
            "set_grad_enabled"]

# Shape and matrix-product functions of torch's namespace.
from collections.abc import Sequence  # noqa: E402

from burnpy.tensor import arithmetic as _arithmetic  # noqa: E402
from burnpy.tensor import layout as _layout  # noqa: E402


def einsum(equation: str, *operands: Tensor | Sequence[Tensor]) -> Tensor:
    """torch.einsum: dims labelled by letters, multiplied and summed over the labels missing
    from the output (implicit output, ``...`` and repeated labels for diagonals supported);
    the operands come as arguments or as one list."""
    items: list[Tensor] = []
    for t in operands:
        items.extend([t] if isinstance(t, Tensor) else t)
    return _arithmetic.einsum(equation, items)


def inner(input: Tensor, other: Tensor) -> Tensor:
    """torch.inner: sums of products over the last dims (``Tensor.inner`` is Burn's unwrap)."""
    return _arithmetic.inner(input, other)


def hstack(tensors: Sequence[Tensor]) -> Tensor:
    """Concatenated column-wise (along dim 1; dim 0 for 1-d tensors)."""
    return _layout.stack_along("hstack", tensors)


def vstack(tensors: Sequence[Tensor]) -> Tensor:
    """Concatenated row-wise, 1-d tensors as rows."""
    return _layout.stack_along("vstack", tensors)


def dstack(tensors: Sequence[Tensor]) -> Tensor:
    """Concatenated depth-wise (along dim 2), after promoting each tensor to 3 dims."""
    return _layout.stack_along("dstack", tensors)


def column_stack(tensors: Sequence[Tensor]) -> Tensor:
    """Concatenated as columns: 0-d and 1-d tensors become columns, then along dim 1."""
    return _layout.stack_along("column_stack", tensors)


__all__ += ["column_stack", "dstack", "einsum", "hstack", "inner", "vstack"]

# torch.amp's and torch.linalg's names.
from burnpy import amp, linalg  # noqa: E402
from burnpy.amp import autocast  # noqa: E402
from burnpy.jit import compile as compile  # noqa: E402  # torch's name, over the builtin

__all__ += ["amp", "autocast", "linalg"]

# Statistics, sorting and sampling in torch's functional spelling.
from burnpy.tensor.statistics import (  # noqa: E402
    MinMax,
    aminmax,
    bernoulli,
    bincount,
    bucketize,
    cdist,
    cumulative_trapezoid,
    dist,
    histc,
    kthvalue,
    logcumsumexp,
    logspace,
    median,
    mode,
    msort,
    multinomial,
    nanmean,
    nanmedian,
    nansum,
    norm,
    normal,
    rand_like,
    randint,
    randn_like,
    randperm,
    searchsorted,
    std_mean,
    trapezoid,
    unique,
    unique_consecutive,
    var_mean,
)

linspace = Tensor.linspace

__all__ += ["MinMax", "aminmax", "bernoulli", "bincount", "bucketize", "cdist",
            "cumulative_trapezoid", "dist", "histc", "kthvalue", "linspace", "logcumsumexp",
            "logspace", "median", "mode", "msort", "multinomial", "nanmean", "nanmedian",
            "nansum", "norm", "normal", "rand_like", "randint", "randn_like", "randperm",
            "searchsorted", "std_mean", "trapezoid", "unique", "unique_consecutive", "var_mean"]

#: Subpackages reachable as attributes after ``import burnpy as bp`` (``bp.nn.Linear``,
#: ``bp.optim.Adam``), imported on first use: ``nn`` and ``optim`` would add about a third to
#: ``import burnpy``'s 0.3 s (``python -X importtime``), which code that never uses them
#: should not pay.
_SUBPACKAGES = frozenset({"nn", "optim", "linalg", "data", "record", "train", "distributed",
                          "quantization", "testing", "autodiff", "backend", "fusion", "ir",
                          "tensor", "models", "onnx", "capture"})


def __getattr__(name: str) -> object:
    """``bp.nn``, ``bp.optim``...: the subpackage, imported the first time it is asked for."""
    if name in _SUBPACKAGES:
        import importlib

        return importlib.import_module(f"burnpy.{name}")
    raise AttributeError(f"module 'burnpy' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The module's names and its lazily imported subpackages."""
    return sorted({*globals(), *_SUBPACKAGES})


if TYPE_CHECKING:  # type checkers see the subpackages as the attributes they become
    from burnpy import data as data
    from burnpy import distributed as distributed
    from burnpy import linalg as linalg
    from burnpy import models as models
    from burnpy import nn as nn
    from burnpy import onnx as onnx
    from burnpy import optim as optim
    from burnpy import record as record
    from burnpy import testing as testing
    from burnpy import train as train
