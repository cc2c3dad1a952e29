"""torch.nn.utils.parametrize: a module's tensor computed from others at each read
(``register_parametrization(linear, "weight", Symmetric())``), with torch's state-dict names.

A parametrized tensor's originals live in ``module.parametrizations[name]``, a
``ParametrizationList`` holding them (``original``, or ``original0``, ``original1``... when the
parametrization's ``right_inverse`` returns several) beside the parametrization modules
(``"0"``, ``"1"``...). ``Module``'s attribute walk finds them there, so state dicts say
``parametrizations.weight.original``, optimizers step the originals and ``to()`` moves them.
``module.weight`` itself is no attribute any more: as torch's, the module's class becomes a
subclass of its own (``ParametrizedLinear``) with a property that computes it from the
originals at each read (in ``forward`` too), and whose setter writes through ``right_inverse``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from burnpy.autodiff.modes import no_grad
from burnpy.backend.errors import BurnpyError, InvalidArgumentError, KindError, describe
from burnpy.nn.container import ModuleDict, ModuleList
from burnpy.nn.module import Module
from burnpy.tensor import Tensor
from burnpy.tensor._core import FLOAT


class ParametrizationError(BurnpyError, ValueError):
    """A parametrization that cannot be registered, applied or removed as asked."""


class _Cache:
    """The values ``cached()`` keeps, by (module, name), while any ``cached()`` is open."""

    __slots__ = ("depth", "values")

    def __init__(self) -> None:
        self.depth = 0
        self.values: dict[tuple[int, str], Tensor] = {}


_CACHE = _Cache()


@contextmanager
def cached() -> Iterator[None]:
    """Compute each parametrized tensor once inside the block (a recurrent layer reading its
    parametrized weight every step), as torch's; the values are dropped when it ends."""
    _CACHE.depth += 1
    try:
        yield
    finally:
        _CACHE.depth -= 1
        if not _CACHE.depth:
            _CACHE.values = {}


def _right_inverse(module: Module, value: Any) -> Any:
    """``module.right_inverse(value)`` where it has one; the value as it is otherwise."""
    inverse = getattr(module, "right_inverse", None)
    return value if inverse is None else inverse(value)


def _set_value(original: Tensor, value: Tensor, what: str) -> None:
    """Write ``value`` into ``original`` in place (untracked), which stays the same object."""
    if value.dtype is not original.dtype:
        raise ParametrizationError(f"{what}: right_inverse returned {value.dtype!r}, but the "
                                   f"original is {original.dtype!r}")
    if value.shape != original.shape:
        raise ParametrizationError(f"{what}: right_inverse returned shape "
                                   f"{describe(value.shape)}, but the original has "
                                   f"{describe(original.shape)}")
    with no_grad():
        original.copy_(value.detach())


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor (items ``"0"``, ``"1"``..., applied in order) and
    the originals they compute it from (``original``, or ``original0``... when the first's
    ``right_inverse`` returns several tensors). Calling it gives the parametrized value."""

    original: Tensor  # with one original (``is_tensor``)

    def __init__(self, modules: Sequence[Module], original: Tensor, unsafe: bool = False,
                 is_buffer: bool = False) -> None:
        if not modules:
            raise ParametrizationError("ParametrizationList requires one or more modules")
        super().__init__()
        self.unsafe = unsafe
        with no_grad():
            new: Any = original
            for module in reversed(modules):
                new = _right_inverse(module, new)
        if isinstance(new, Tensor):
            self.is_tensor, self.ntensors = True, 1
            _set_value(original, new, "register_parametrization")
            self._keep("original", original, is_buffer)
        elif isinstance(new, Sequence) and all(isinstance(t, Tensor) for t in new):
            self.is_tensor, self.ntensors = False, len(new)
            frozen = original.backend.ad_enabled() and not original.is_require_grad()
            for i, t in enumerate(new):
                value = t.detach()  # a leaf of its own, tracked as a parameter when kept
                self._keep(f"original{i}", value, is_buffer)
                if frozen and not is_buffer and value.kind is FLOAT:
                    value.require_grad(False)
        else:
            raise ParametrizationError(f"right_inverse must return a Tensor or a sequence of "
                                       f"Tensors, got {type(new).__name__}")
        for module in modules:
            self.append(module)
        if not unsafe:
            value = self()
            if not isinstance(value, Tensor):
                raise ParametrizationError(f"a parametrization must return a Tensor, got "
                                           f"{type(value).__name__}")
            if value.dtype is not original.dtype or value.shape != original.shape:
                raise ParametrizationError(
                    f"registering a parametrization may not change the tensor's dtype or "
                    f"shape unless unsafe=True: {original.dtype!r} "
                    f"{describe(original.shape)} became {value.dtype!r} "
                    f"{describe(value.shape)}")

    def _keep(self, name: str, value: Tensor, is_buffer: bool) -> None:
        if is_buffer:
            self.register_buffer(name, value)
        else:
            setattr(self, name, value)

    def originals(self) -> list[Tensor]:
        """The tensors the parametrized value is computed from."""
        if self.is_tensor:
            return [self.original]
        return [getattr(self, f"original{i}") for i in range(self.ntensors)]

    def right_inverse(self, value: Tensor) -> None:
        """Write into the originals the values the parametrizations map to ``value`` (their
        ``right_inverse``s in reverse order), untracked; what ``module.weight = v`` does."""
        with no_grad():
            for module in reversed(list(self)):
                inverse = getattr(module, "right_inverse", None)
                if inverse is None:
                    raise ParametrizationError(f"parametrization {type(module).__name__} does "
                                               "not implement right_inverse")
                value = inverse(value)
        values = [value] if self.is_tensor else value
        if not isinstance(values, Sequence) or len(values) != self.ntensors:
            raise ParametrizationError(f"right_inverse must return {self.ntensors} tensor(s), "
                                       f"got {type(value).__name__}")
        for original, v in zip(self.originals(), values, strict=True):
            _set_value(original, v, "ParametrizationList.right_inverse")

    def forward(self) -> Tensor:
        """The parametrized value: the first parametrization of the originals, then each next
        one of the previous one's result."""
        items = list(self)
        x = items[0](*self.originals())
        for module in items[1:]:
            x = module(x)
        return x


def _plist(module: Module, name: str) -> ParametrizationList:
    """``module.parametrizations[name]``."""
    plist: ParametrizationList = vars(module)["parametrizations"][name]
    return plist


def _parametrized_value(module: Module, name: str) -> Tensor:
    plist = _plist(module, name)
    if not _CACHE.depth:
        return plist()
    key = (id(module), name)
    value = _CACHE.values.get(key)
    if value is None:
        value = _CACHE.values[key] = plist()
    return value


def _inject_new_class(module: Module) -> None:
    """Give ``module`` a class of its own (``Parametrized<Class>``, a subclass of its class)
    to hold the properties; assigning a parametrized name goes to its property."""
    cls = type(module)

    def set_attribute(self: Module, name: str, value: Any) -> None:
        if isinstance(getattr(type(self), name, None), property):
            object.__setattr__(self, name, value)  # the property's setter: right_inverse
        else:
            cls.__setattr__(self, name, value)

    namespace = {"__setattr__": set_attribute, "__module__": cls.__module__,
                 "__doc__": f"{cls.__name__} with parametrized tensors."}
    object.__setattr__(module, "__class__", type(f"Parametrized{cls.__name__}", (cls,),
                                                 namespace))


def _inject_property(module: Module, name: str) -> None:
    def get(self: Module) -> Tensor:
        return _parametrized_value(self, name)

    def set(self: Module, value: Tensor) -> None:
        _plist(self, name).right_inverse(value)

    setattr(type(module), name, property(get, set, doc=f"``{name}``, parametrized."))


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether ``module`` has a parametrization (on ``tensor_name``, when given)."""
    plists = vars(module).get("parametrizations")
    if not isinstance(plists, ModuleDict):
        return False
    return len(plists) > 0 if tensor_name is None else tensor_name in plists


def type_before_parametrizations(module: Module) -> type:
    """The module's class before it was parametrized (its own class otherwise)."""
    return type(module).__bases__[0] if is_parametrized(module) else type(module)


def register_parametrization(module: Module, tensor_name: str, parametrization: Module,
                             *, unsafe: bool = False) -> Module:
    """Make ``module.<tensor_name>`` read ``parametrization(original)``, as torch's: the
    original moves to ``module.parametrizations.<tensor_name>.original`` (through
    ``parametrization.right_inverse`` where it has one); registering a second one on the same
    name chains it. Unless ``unsafe``, the value must keep its shape and dtype."""
    where = f"register_parametrization({type(module).__name__}, '{tensor_name}')"
    if not isinstance(parametrization, Module):
        raise KindError(f"{where}: the parametrization must be a Module, got "
                        f"{type(parametrization).__name__}")
    if is_parametrized(module, tensor_name):
        if not unsafe:
            current = getattr(module, tensor_name)
            value = parametrization(current)
            if not isinstance(value, Tensor) or value.shape != current.shape or (
                    value.dtype is not current.dtype):
                raise ParametrizationError(f"{where}: the parametrization may not change the "
                                           "tensor's shape or dtype unless unsafe=True")
        plist = _plist(module, tensor_name)
        plist.append(parametrization)
        plist.unsafe |= unsafe
        return module
    original = vars(module).get(tensor_name)
    if not isinstance(original, Tensor):
        raise InvalidArgumentError(f"{where}: the module has no parameter or buffer named "
                                   f"'{tensor_name}'")
    is_buffer = tensor_name in module._buffer_names
    plist = ParametrizationList([parametrization], original, unsafe=unsafe,
                                is_buffer=is_buffer)
    del module.__dict__[tensor_name]
    object.__setattr__(module, "_buffer_names", module._buffer_names - {tensor_name})
    if not is_parametrized(module):
        _inject_new_class(module)
        setattr(module, "parametrizations", ModuleDict())  # noqa: B010 (not Module's)
    _inject_property(module, tensor_name)
    vars(module)["parametrizations"][tensor_name] = plist
    return module


def remove_parametrizations(module: Module, tensor_name: str,
                            leave_parametrized: bool = True) -> Module:
    """Undo ``register_parametrization`` on ``tensor_name``: the tensor becomes a plain
    parameter (or buffer) again, holding its current parametrized value
    (``leave_parametrized``) or the original (possible only with one original)."""
    if not is_parametrized(module, tensor_name):
        raise ParametrizationError(f"remove_parametrizations: {type(module).__name__} has no "
                                   f"parametrization on '{tensor_name}'")
    plist = _plist(module, tensor_name)
    is_buffer = any(n.startswith("original") for n in plist._buffer_names)
    if plist.is_tensor:
        original = plist.original
        if leave_parametrized:
            with no_grad():
                value = getattr(module, tensor_name)
            _set_value(original, value, "remove_parametrizations")
    elif leave_parametrized:
        original = getattr(module, tensor_name).detach()  # a leaf of its own
    else:
        raise ParametrizationError("remove_parametrizations: leave_parametrized=False needs a "
                                   f"parametrization of one original; '{tensor_name}' has "
                                   f"{plist.ntensors}")
    delattr(type(module), tensor_name)
    del vars(module)["parametrizations"][tensor_name]
    if is_buffer:
        module.register_buffer(tensor_name, original)
    else:
        setattr(module, tensor_name, original)
    if not is_parametrized(module):
        del module.__dict__["parametrizations"]
        object.__setattr__(module, "__class__", type(module).__bases__[0])
    return module
