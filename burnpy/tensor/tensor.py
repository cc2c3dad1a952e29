"""``Tensor``: the user-facing tensor over any backend, of kind float, int, bool or quantized.

A Tensor is three slots (``TensorBase``): the backend class, the backend's primitive and the
kind. Every op validates its inputs (shapes, dtypes, kinds, backends, devices), once, then calls
one backend op; backends never re-check.

The class is small: its attributes, ``repr`` and the autodiff methods are written here; every
other method is written, with its signature, docstring and body, in the mixin of its topic,
which help(), pdoc and an IDE show as Tensor's:

- ``creation.CreationOps``: ``from_data``, ``zeros``, ``full``, ``random``, ``arange``...
- ``conversion.ConversionOps``: ``to_numpy``, ``item``, ``to``, ``cast``, DLPack...
- ``arithmetic.ArithmeticOps``: the operators, comparisons, ``matmul`` and matrix products
- ``elementwise.ElementwiseOps``: ``exp``, ``sigmoid``, ``clamp``, ``isnan``, ``mask_where``...
- ``layout.LayoutOps``: ``reshape``, ``permute``, ``expand``, ``split``, ``tril``, ``cat``...
- ``indexing.IndexingOps``: ``t[key]``, ``gather``, ``scatter``, ``index_select``...
- ``reduction.ReductionOps``: ``sum``, ``mean``, ``var``, ``max``, ``cumsum``, ``sort``...
- ``statistics.StatisticsOps``: ``median``, ``norm``, ``unique``, ``histc``, ``multinomial``...
- ``inplace.InplaceOps``: ``t[key] = v``, ``add_``, ``zero_``, ``copy_``, ``clone``
- ``quantized.QuantizedOps``: ``quantize``, ``dequantize``, ``fake_quantize``

A mixin never imports ``Tensor``: results are built with ``_core.new``, operands are tested with
``isinstance(x, TensorBase)``, and methods of other topics are called on ``self``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, TypeGuard

import numpy as np

from burnpy.backend.device import Device
from burnpy.backend.dtype import DType, dtype_of_numpy
from burnpy.backend.errors import (
    AutodiffError,
    BackendMismatchError,
    BurnpyError,
    KindError,
    ShapeError,
    article,
    describe,
)
from burnpy.tensor import _core
from burnpy.tensor._core import BOOL, FLOAT, INT, QUANTIZED, TensorBase, new
from burnpy.tensor.arithmetic import ArithmeticOps
from burnpy.tensor.checks import normalize_dim, numel
from burnpy.tensor.conversion import ConversionOps
from burnpy.tensor.creation import CreationOps
from burnpy.tensor.elementwise import ElementwiseOps
from burnpy.tensor.grad_method import GradMethod
from burnpy.tensor.indexing import IndexingOps
from burnpy.tensor.inplace import InplaceOps
from burnpy.tensor.layout import LayoutOps
from burnpy.tensor.quantized import QuantizedOps
from burnpy.tensor.reduction import ReductionOps
from burnpy.tensor.statistics import StatisticsOps

if TYPE_CHECKING:
    from burnpy.autodiff.backend import AutodiffBackend
    from burnpy.autodiff.gradients import Gradients
    from burnpy.backend.base import Backend


class Tensor(CreationOps, ConversionOps, ArithmeticOps, ElementwiseOps, LayoutOps, IndexingOps,
             ReductionOps, StatisticsOps, InplaceOps, QuantizedOps, TensorBase):
    """A tensor of one backend type. Build with ``Tensor.from_data``, ``zeros``, ``random``...

    ``backend`` is the backend class (``CpuBackend``, ``Autodiff(CpuBackend)``...), ``primitive``
    its native value, ``kind`` one of ``"float"``, ``"int"``, ``"bool"``, ``"quantized"``.
    """

    __slots__ = ()

    @property
    def shape(self) -> tuple[int, ...]:
        """The size of each dim."""
        return self.primitive.shape

    @property
    def dtype(self) -> DType:
        """The element type (``bp.float32``...); a quantized tensor reports its scheme's dtype."""
        if self.kind is QUANTIZED:
            return self.primitive.dtype
        return dtype_of_numpy(self.primitive.dtype)

    @property
    def device(self) -> Device:
        """The device the tensor lives on."""
        b, kind, p = self.backend, self.kind, self.primitive
        if kind is FLOAT:
            return b.float_device(p)
        if kind is INT:
            return b.int_device(p)
        if kind is BOOL:
            return b.bool_device(p)
        return b.q_device(p)

    @property
    def ndim(self) -> int:
        """The number of dims."""
        return len(self.primitive.shape)

    def dim(self) -> int:
        """The number of dimensions (torch's ``dim()``; ``ndim`` as a property)."""
        return self.ndim

    def numel(self) -> int:
        """The number of elements."""
        return numel(self.primitive.shape)

    def size(self, dim: int | None = None) -> int | tuple[int, ...]:
        """The shape, or one dim's size (torch.Tensor.size)."""
        if dim is None:
            return self.shape
        return self.shape[normalize_dim("size", dim, self.ndim)]

    def __len__(self) -> int:
        """The size of dim 0 (a 0-d tensor has no length)."""
        if not self.shape:
            raise ShapeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        """The sub-tensors along dim 0, in order."""
        for i in range(len(self)):
            yield self[i]

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        """The values, shape, dtype, backend and device (and ``require_grad`` when tracked)."""
        try:
            arr = self.to_numpy()
            body = repr(arr.item()) if arr.ndim == 0 else np.array2string(
                arr, separator=", ", threshold=200, precision=4, prefix="Tensor(")
        except BurnpyError as exc:
            body = f"<unreadable: {exc}>"
        extra = ""
        if self.kind is FLOAT and self.backend.ad_enabled() and self.is_require_grad():
            extra = ", require_grad=True"
        if self.kind is QUANTIZED:
            extra = f", scheme={self.primitive.scheme}"
        return (f"Tensor({body}, shape={describe(self.shape)}, dtype={self.dtype!r}, "
                f"backend={self.backend.name()}, device={self.device}{extra})")

    def require_grad(self, flag: bool = True) -> Tensor:
        """Mark a leaf float tensor as tracked (``requires_grad_`` in torch); returns it."""
        b = self.backend
        if self.kind is not FLOAT:
            raise KindError(f"require_grad: only float tensors can track gradients, "
                            f"got {article(self.kind)} tensor of dtype {self.dtype!r}")
        if not _tracks_gradients(b):
            raise AutodiffError(f"require_grad: backend {b.name()} does not track gradients; "
                                f"build the tensor on Autodiff({b.__name__})")
        self.primitive = b.float_set_require_grad(self.primitive, flag)
        return self

    requires_grad_ = require_grad

    def is_require_grad(self) -> bool:
        """Whether this float tensor is tracked by autodiff (a leaf or a result)."""
        return self.kind is FLOAT and self.backend.float_is_require_grad(self.primitive)

    @property
    def requires_grad(self) -> bool:
        """torch's spelling of ``is_require_grad()``; ``t.requires_grad = False`` freezes a
        leaf as ``require_grad(False)`` does."""
        return self.is_require_grad()

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        self.require_grad(flag)

    def retain_grad(self) -> Tensor:
        """Keep this intermediate tensor's gradient in the ``Gradients`` of a backward pass."""
        self._autodiff_backend("retain_grad").retain_grad(self.primitive)
        return self

    def detach(self) -> Tensor:
        """The same values, cut from the gradient graph."""
        if self.kind is not FLOAT:
            return self
        return new(self.backend, self.backend.float_detach(self.primitive), FLOAT)

    def backward(self, grad_output: Tensor | None = None,
                 retain_graph: bool = False) -> Gradients:
        """Gradients of this tensor for every tracked leaf (and retained tensor) it depends on.

        Seeded with ones (Burn's rule: the gradient of ``self.sum()``) or with ``grad_output``,
        a float tensor of this shape. The graph is freed unless ``retain_graph``.
        """
        b = self._autodiff_backend("backward")
        seed = None
        if grad_output is not None:
            if grad_output.shape != self.shape:
                raise ShapeError(f"backward: grad_output shape {describe(grad_output.shape)} "
                                 f"does not match the output shape {describe(self.shape)}")
            seed = _inner_float_primitive(b, grad_output, "backward")
        return b.backward(self.primitive, seed, retain_graph)

    @GradMethod
    def grad(self, grads: Gradients) -> Tensor | None:
        """This tensor's gradient in ``grads`` (a tensor of the inner backend), or None.

        A method, as Burn's: ``w.grad.numpy()`` (torch's habit) raises ``GradAccessError``
        showing this call; ``w.grad is None`` cannot be caught and is always False.
        """
        b = self._autodiff_backend("grad")
        g = b.grad(self.primitive, grads)
        return None if g is None else new(b.InnerBackend, g, FLOAT)

    def grad_remove(self, grads: Gradients) -> Tensor | None:
        """Pop this tensor's gradient from ``grads``."""
        b = self._autodiff_backend("grad_remove")
        g = b.grad_remove(self.primitive, grads)
        return None if g is None else new(b.InnerBackend, g, FLOAT)

    def grad_replace(self, grads: Gradients, grad: Tensor) -> None:
        """Set this tensor's gradient in ``grads`` to ``grad`` (a tensor of the inner backend)."""
        b = self._autodiff_backend("grad_replace")
        if grad.shape != self.shape:
            raise ShapeError(f"grad_replace: gradient shape {describe(grad.shape)} does not "
                             f"match the tensor shape {describe(self.shape)}")
        b.grad_replace(self.primitive, grads, _inner_float_primitive(b, grad, "grad_replace"))

    def inner(self) -> Tensor:
        """This tensor on the inner backend, untracked (Burn's ``inner``): for inference."""
        b = self.backend
        inner = getattr(b, "InnerBackend", None)
        if inner is None:
            raise BackendMismatchError(f"inner: {b.name()} is not a decorator backend "
                                       "(it has no inner backend)")
        fn = {FLOAT: "inner", INT: "int_inner", BOOL: "bool_inner", QUANTIZED: "q_inner"}[self.kind]
        return new(inner, getattr(b, fn)(self.primitive), self.kind)

    def _autodiff_backend(self, op: str) -> type[AutodiffBackend]:
        """This float tensor's backend, or the error saying why it has no gradients."""
        b = self.backend
        if self.kind is not FLOAT:
            raise KindError(f"{op}: gradients exist only for float tensors, got {self.kind}")
        if not _tracks_gradients(b):
            raise AutodiffError(f"{op}: backend {b.name()} does not track "
                                f"gradients; use Autodiff({b.__name__})")
        return b


def _tracks_gradients(b: type[Backend]) -> TypeGuard[type[AutodiffBackend]]:
    """Whether ``b`` is an ``Autodiff`` decorator (imported here: autodiff imports Tensor)."""
    from burnpy.autodiff.backend import AutodiffBackend

    return b.ad_enabled() and issubclass(b, AutodiffBackend)


def _inner_float_primitive(b: type[AutodiffBackend], t: Tensor, op: str) -> Any:
    """The primitive of ``t`` as a float tensor of ``b``'s inner backend (or ``b`` itself)."""
    if t.kind is not FLOAT:
        raise KindError(f"{op}: expected a float tensor, got {t.kind}")
    if t.backend is b.InnerBackend:
        return t.primitive
    if t.backend is b:
        return b.inner(t.primitive)
    raise BackendMismatchError(f"{op}: expected a tensor of {b.InnerBackend.name()}, got one "
                               f"of {t.backend.name()}")


_core.TENSOR_CLASS = Tensor
