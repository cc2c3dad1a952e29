"""``Sequential``: modules applied in order, named ``"0"``, ``"1"``... as in torch."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from burnpy.backend.errors import IndexOutOfBoundsError, KindError
from burnpy.nn.module import Module


class Sequential(Module):
    """Chains modules: ``Sequential(Conv2d(...), ReLU(), ...)(x)``."""

    def __init__(self, *modules: Module) -> None:
        for m in modules:
            self.append(m)

    def append(self, module: Module) -> Sequential:
        """Add ``module`` as the last layer (named by its position); returns self."""
        if not isinstance(module, Module):
            raise KindError(f"Sequential: expected a Module, got {type(module).__name__}")
        setattr(self, str(len(self)), module)
        return self

    def _layers(self) -> list[Module]:
        return [v for v in vars(self).values() if isinstance(v, Module)]

    def __len__(self) -> int:
        return len(self._layers())

    def __iter__(self) -> Iterator[Module]:
        return iter(self._layers())

    def __getitem__(self, index: int) -> Module:
        layers = self._layers()
        if not -len(layers) <= index < len(layers):
            raise IndexOutOfBoundsError(f"Sequential: index {index} out of range for "
                                        f"{len(layers)} modules")
        return layers[index]

    def forward(self, x: Any) -> Any:
        """``x`` through every layer in order."""
        for layer in self._layers():
            x = layer(x)
        return x
