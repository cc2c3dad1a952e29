"""The ``Backend`` protocol: a class used as a type, whose ops are static/class methods.

A concrete backend subclasses ``Backend``, sets its associated types and implements the
required core of every op family; everything else is provided by composition and may be
overridden for speed. ``Backend.__init_subclass__`` names any required op left out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, TypeAlias

from burnpy.backend.device import Device
from burnpy.backend.dtype import DType
from burnpy.backend.errors import BurnpyError
from burnpy.backend.ops._marker import is_required
from burnpy.backend.ops.activation_ops import ActivationOps
from burnpy.backend.ops.bool_ops import BoolOps
from burnpy.backend.ops.float_ops import FloatOps
from burnpy.backend.ops.int_ops import IntOps
from burnpy.backend.ops.linalg_ops import LinalgOps
from burnpy.backend.ops.module_ops import ModuleOps
from burnpy.backend.ops.optim_ops import OptimOps
from burnpy.backend.ops.q_ops import QOps

#: The device values ops take and return; inside ``Backend`` the name ``Device`` is the class
#: attribute (the backend's device class), so signatures there use this alias.
DeviceValue: TypeAlias = Device


class IncompleteBackendError(BurnpyError, TypeError):
    """A concrete backend class that leaves required ops unimplemented."""


class Backend(FloatOps, IntOps, BoolOps, QOps, ModuleOps, ActivationOps, OptimOps, LinalgOps):
    """Base of every backend. Never instantiated: ``CpuBackend.float_add(a, b)``.

    Associated types (class attributes): ``Device`` (the device class),
    ``FloatTensorPrimitive``, ``IntTensorPrimitive``, ``BoolTensorPrimitive``,
    ``QuantizedTensorPrimitive``; default element dtypes ``float_dtype`` and ``int_dtype``.
    Pass ``abstract=True`` in the class statement for an intermediate base class.
    """

    Device: ClassVar[type[Device]] = Device
    FloatTensorPrimitive: ClassVar[type[Any]] = object
    IntTensorPrimitive: ClassVar[type[Any]] = object
    BoolTensorPrimitive: ClassVar[type[Any]] = object
    QuantizedTensorPrimitive: ClassVar[type[Any]] = object
    float_dtype: ClassVar[DType] = DType.float32
    int_dtype: ClassVar[DType] = DType.int64
    #: False when every tensor shares one device, letting hot paths skip device checks.
    multi_device: ClassVar[bool] = True
    #: True when binary ops of one kind broadcast NumPy-style (raising ValueError on
    #: incompatible shapes), promote dtypes as burnpy does, and all tensors share one device.
    #: The protocol layer then skips its own shape and dtype checks on the hot path and
    #: turns the ValueError into a ShapeError. Decorators must not inherit it blindly.
    trusted_binary_ops: ClassVar[bool] = False

    def __new__(cls, *args: Any, **kwargs: Any) -> Backend:
        raise TypeError(f"{cls.__name__} is a backend type: use the class, never an instance")

    def __init_subclass__(cls, abstract: bool = False, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if abstract:
            return
        missing = sorted(name for name in dir(cls) if is_required(getattr(cls, name, None)))
        if missing:
            raise IncompleteBackendError(
                f"backend {cls.__name__} does not implement {len(missing)} required op(s): "
                + ", ".join(missing))

    # ---- non-op methods ------------------------------------------------------------------------
    @classmethod
    def name(cls, device: DeviceValue | None = None) -> str:
        """A human-readable name, e.g. ``"cpu"`` or ``"autodiff<cpu>"``."""
        return cls.__name__

    @classmethod
    def seed(cls, device: DeviceValue, seed: int) -> None:
        """Reseed the random generator of ``device``."""
        raise BurnpyError(f"backend {cls.__name__} has no random generator to seed")

    @classmethod
    def sync(cls, device: DeviceValue) -> None:
        """Wait until every queued op on ``device`` has finished (no-op when synchronous)."""

    @classmethod
    def ad_enabled(cls) -> bool:
        """Whether this backend tracks gradients (true only for autodiff decorators)."""
        return False

    @classmethod
    def default_device(cls) -> DeviceValue:
        """The device used when a creation op is given none."""
        return cls.devices()[0]

    @classmethod
    def devices(cls) -> list[DeviceValue]:
        """Every device this backend can use on this machine."""
        raise IncompleteBackendError(f"backend {cls.__name__} does not list its devices")

    @classmethod
    def supports_dtype(cls, device: DeviceValue, dtype: DType) -> bool:
        """Whether ``dtype`` can be stored and computed on ``device``."""
        return True

    @classmethod
    def add_gradients(cls, lhs: Any, rhs: Any) -> Any:
        """``lhs + rhs`` for two gradients of one tensor (its shape and dtype), as backward
        accumulates them: ``float_add`` here. A backend whose ``float_add`` is slow for some
        dtype may take another path for it here, without a check on every other add."""
        return cls.float_add(lhs, rhs)

    @classmethod
    def replay_runner(cls, run: Callable[[list[Any], list[Any]], list[Any]], graph: Any
                      ) -> Callable[[list[Any], list[Any]], list[Any]]:
        """What ``bp.compile`` calls for each replay of ``graph`` (a ``burnpy.capture.Graph``
        recorded on this backend), given its generated op-by-op ``run(inputs, scalars) ->
        outputs``: ``run`` itself here; a backend that can record a whole replay once and
        relaunch it (a CUDA graph, one WebGPU submission) returns its own function."""
        return run
