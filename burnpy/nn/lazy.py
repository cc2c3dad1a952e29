"""Lazy modules' machinery (torch's ``LazyModuleMixin``): a layer whose input size is inferred
at its first call.

A lazy layer (``LazyLinear``, ``LazyConv2d``, ``LazyBatchNorm1d``...) is built as its regular
class with no input features, its float tensors replaced by empty placeholders
(``UninitializedParameter``, ``UninitializedBuffer``) that keep the backend, device and dtype
(``to()``/``double()`` before the first call reach them). The first call runs the regular
class's ``__init__`` with the input's feature count, the placement the placeholders hold and the
settings it was built with, then the module becomes that class (``cls_to_become``: ``type(m)
is nn.Linear``), so an optimizer built after that call sees the parameters. Loading a state
dict into a lazy module materialises it first, with the feature count the state's shapes give.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from burnpy.backend.device import Device
from burnpy.backend.dtype import DTypeLike
from burnpy.nn.module import Module, _mark_parameter
from burnpy.tensor import Tensor
from burnpy.tensor._core import FLOAT

if TYPE_CHECKING:
    from burnpy.backend.base import Backend

#: The regular ``__init__``'s arguments after the feature count, positional and by keyword.
LazyArgs = tuple[tuple[Any, ...], dict[str, Any]]


class UninitializedBuffer(Tensor):
    """torch's placeholder for a buffer whose shape a lazy module infers at its first call:
    an empty float tensor holding only its backend, device and dtype."""

    __slots__ = ()

    def __init__(self, requires_grad: bool = False, device: Device | None = None,
                 dtype: DTypeLike | None = None, *,
                 backend: type[Backend] | None = None) -> None:
        empty = Tensor.empty((0,), backend=backend, device=device, dtype=dtype)
        super().__init__(empty.backend, empty.primitive, FLOAT)


class UninitializedParameter(Tensor):
    """torch's placeholder for a parameter whose shape a lazy module infers at its first
    call: an empty float tensor holding its backend, device, dtype and tracking."""

    __slots__ = ()

    def __init__(self, requires_grad: bool = True, device: Device | None = None,
                 dtype: DTypeLike | None = None, *,
                 backend: type[Backend] | None = None) -> None:
        empty = Tensor.empty((0,), backend=backend, device=device, dtype=dtype)
        super().__init__(empty.backend, empty.primitive, FLOAT)
        if requires_grad and self.backend.ad_enabled():
            self.require_grad()
        _mark_parameter(self)  # frozen stays frozen when assigned, as Parameter's


def _placeholder(t: Tensor, is_param: bool) -> Tensor:
    """The placeholder standing for ``t`` until the module materialises."""
    kw: dict[str, Any] = {"device": t.device, "dtype": t.dtype, "backend": t.backend}
    return UninitializedParameter(**kw) if is_param else UninitializedBuffer(**kw)


class LazyModuleMixin(Module):
    """A layer whose feature count comes from its first input (put before the regular class:
    ``class LazyLinear(LazyModuleMixin, Linear)``). Subclasses name ``cls_to_become``, call
    ``_start_lazy`` in ``__init__`` and say where the count is, in an input
    (``_input_features``) and in a state dict (``_features_in_state``)."""

    cls_to_become: ClassVar[type[Module]]
    _lazy_args: LazyArgs | None = None

    def _start_lazy(self, *args: Any, **kwargs: Any) -> None:
        """Build as the regular class with no features, float tensors as placeholders;
        ``args``/``kwargs`` are the regular ``__init__``'s after the feature count."""
        self._regular_init(0, args, kwargs)
        self._lazy_args = (args, kwargs)
        for name, value in list(vars(self).items()):
            if isinstance(value, Tensor) and value.kind is FLOAT:
                setattr(self, name, _placeholder(value, name not in self._buffer_names))

    def _regular_init(self, features: int, args: tuple[Any, ...],
                      kwargs: dict[str, Any]) -> None:
        init: Callable[..., None] = self.cls_to_become.__init__
        init(self, features, *args, **kwargs)

    def has_uninitialized_params(self) -> bool:
        """Whether a parameter or buffer of this module still waits for its shape."""
        return any(isinstance(v, UninitializedParameter | UninitializedBuffer)
                   for v in vars(self).values())

    def _materialize(self, features: int) -> None:
        """Run the regular ``__init__`` with ``features`` on the placeholders' placement (the
        first placeholder's; tracking kept per parameter)."""
        assert self._lazy_args is not None
        args, kwargs = self._lazy_args
        holders = [(n, v) for n, v in vars(self).items()
                   if isinstance(v, UninitializedParameter | UninitializedBuffer)]
        if holders:
            t = holders[0][1]
            kwargs = {**kwargs, "backend": t.backend, "device": t.device, "dtype": t.dtype}
        frozen = [n for n, v in holders if isinstance(v, UninitializedParameter)
                  and v.backend.ad_enabled() and not v.is_require_grad()]
        self._lazy_args = None
        self._regular_init(features, args, kwargs)
        for name in frozen:
            getattr(self, name).require_grad(False)

    def initialize_parameters(self, input: Tensor, *args: Any, **kwargs: Any) -> None:
        """Materialise with the feature count of the first call's input (torch's name)."""
        self._materialize(self._input_features(input))

    @abstractmethod
    def _input_features(self, input: Tensor) -> int:
        """The feature count of an input (ShapeError for one this layer cannot take)."""

    @abstractmethod
    def _features_in_state(self, state: Mapping[str, Any], prefix: str) -> int | None:
        """The feature count ``state``'s entries for this module give (None: none do)."""

    def _prepare_load(self, state: dict[str, Any], prefix: str) -> None:
        """Materialise with the state's feature count (torch's ``_lazy_load_hook``)."""
        if self._lazy_args is not None:
            features = self._features_in_state(state, prefix)
            if features is not None:
                self._materialize(features)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Materialise from the input (unless loaded already), become ``cls_to_become`` and
        run its ``forward``."""
        if self._lazy_args is not None:
            self.initialize_parameters(*args, **kwargs)
        object.__setattr__(self, "__class__", self.cls_to_become)  # type(self) is it now
        return self.forward(*args, **kwargs)


def state_dim(state: Mapping[str, Any], key: str, dim: int) -> int | None:
    """Dim ``dim`` of ``state[key]``'s shape (a tensor, array or torch tensor), None when the
    entry is absent or has fewer dims."""
    value = state.get(key)
    shape = None if value is None else tuple(value.shape)
    return None if shape is None or len(shape) <= dim else int(shape[dim])
