"""Weight-only quantization of a loaded model in one call (torchao's ``quantize_(model,
int8_weight_only())``): every linear layer, the LM head included, gets an int8 or int4
weight while activations stay float, and the quantized model saves and reloads as a record.

``quantize(model, QuantScheme.int8())`` replaces each ``nn.Linear`` and GPT-2 ``Conv1D``
(whose ``[in, out]`` weight is transposed once here, not per call) by a ``QuantizedLinear``
holding an ``[out, in]`` weight quantized along ``in``, the layout the CPU's compiled
weight-only kernels read. A weight tied to an embedding (GPT-2's ``lm_head``) is untied: the
head gets its quantized copy and the embedding stays float, as in torchao. ``model.save(path)``
writes the quantized record (int4 values packed two a byte); ``load_quantized(model, path)``
rebuilds that structure on a freshly built float model from the file alone and loads it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from burnpy import nn
from burnpy.backend.data import TensorData
from burnpy.backend.errors import (
    InvalidArgumentError,
    KindError,
    RecordError,
    ShapeError,
    UnsupportedDTypeError,
    describe,
)
from burnpy.models.gpt2 import Conv1D
from burnpy.nn import functional as F
from burnpy.quantization import QuantScheme
from burnpy.record import from_record, read_record, state_of
from burnpy.tensor import Tensor
from burnpy.tensor._core import FLOAT, QUANTIZED

M = TypeVar("M", bound=nn.Module)

#: ``filter_fn(module, name)``: whether ``quantize`` converts that linear layer.
Filter = Callable[[nn.Module, str], bool]


class QuantizedLinear(nn.Module):
    """``y = x @ dequantized(weight).T + bias`` with a quantized ``weight [out_features,
    in_features]`` and float activations and bias (weight-only: the backend's ``q_linear``
    reads the integers). Built by ``quantize``; for inference, not training."""

    def __init__(self, weight: Tensor, bias: Tensor | None) -> None:
        if weight.kind is not QUANTIZED or weight.ndim != 2:
            raise KindError(f"QuantizedLinear: weight must be a 2-d quantized tensor, got "
                            f"{weight.kind} {describe(weight.shape)}")
        self.out_features, self.in_features = weight.shape
        if bias is not None and bias.shape != (self.out_features,):
            raise ShapeError(f"QuantizedLinear: bias must have shape ({self.out_features},), "
                             f"got {describe(bias.shape)}")
        self.weight = weight
        self.bias = bias

    def forward(self, input: Tensor) -> Tensor:
        """``[..., in_features] -> [..., out_features]``."""
        shape = input.shape
        if not shape or shape[-1] != self.in_features:
            raise ShapeError(f"QuantizedLinear(in_features={self.in_features}): the input's "
                             f"last dim must be {self.in_features}, got shape {describe(shape)}")
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}, {self.weight.scheme}")


def _float_weight(module: nn.Module) -> Tensor | None:
    """The ``[out, in]`` float weight of a layer ``quantize`` converts, else None."""
    if isinstance(module, nn.Linear) and module.weight.kind is FLOAT:
        return module.weight
    if isinstance(module, Conv1D) and module.weight.kind is FLOAT:
        return module.weight.t()
    return None


def _quantized_weight(name: str, module: nn.Module, weight: Tensor,
                      scheme: QuantScheme) -> Tensor:
    """``weight [out, in]`` quantized along ``in``; ``ShapeError`` or ``UnsupportedDTypeError``
    naming the layer where the scheme cannot apply to it."""
    where = f"quantize: {name or 'the model'} ({type(module).__name__}, weight [out, in] = " \
            f"{list(weight.shape)}, {weight.dtype!r})"
    block = scheme.level.block_size
    if block is not None and weight.shape[1] % block != 0:
        raise ShapeError(f"{where}: block_size {block} does not divide in_features "
                         f"{weight.shape[1]}; pick a block size that does, or leave the layer "
                         "out with filter_fn")
    w = weight.detach()
    if not w.backend.supports_dtype(w.device, scheme.param.dtype):
        raise UnsupportedDTypeError(f"{where}: {w.backend.__name__} cannot store the scheme's "
                                    f"{scheme.param.dtype!r} scales ({scheme})",
                                    scheme.param.dtype)
    return w.quantize(scheme)


def _replace(parent: nn.Module, prefix: str,
             convert: Callable[[str, nn.Module], nn.Module | None]) -> None:
    """Walk ``parent``'s sub-modules (attributes, and list or dict entries, as ``Module``
    finds them), putting ``convert(name, module)`` in place of each module it does not
    return None for, and descending into the others."""
    def visit(name: str, child: nn.Module) -> nn.Module | None:
        new = convert(name, child)
        if new is None:
            _replace(child, name + ".", convert)
        return new

    for attr, value in list(vars(parent).items()):
        if attr.startswith("_"):
            continue
        if isinstance(value, nn.Module):
            new = visit(prefix + attr, value)
            if new is not None:
                object.__setattr__(parent, attr, new)
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, nn.Module) and (new := visit(f"{prefix}{attr}.{i}",
                                                                  item)) is not None:
                    value[i] = new
        elif isinstance(value, dict):
            for key, item in list(value.items()):
                if isinstance(item, nn.Module) and (new := visit(f"{prefix}{attr}.{key}",
                                                                  item)) is not None:
                    value[key] = new


def quantize(model: M, scheme: QuantScheme, *, filter_fn: Filter | None = None) -> M:
    """Weight-only quantization in place, returning ``model`` (torchao's ``quantize_``):
    every ``nn.Linear`` and GPT-2 ``Conv1D`` (the LM head too; ``filter_fn(module, name)``
    False leaves one float) becomes a ``QuantizedLinear`` whose ``[out, in]`` weight is
    quantized with ``scheme`` along ``in`` (``QuantScheme.int8()`` per tensor,
    ``QuantScheme.int8(32)`` or ``QuantScheme.int4(32)`` in blocks of 32 inputs), its bias and
    the activations float. Embeddings and norms stay float.

    ``ShapeError`` names a layer whose ``in_features`` the block size does not divide and
    ``UnsupportedDTypeError`` one whose backend cannot store the scheme's scales; nothing is
    replaced then. A propagating scheme is refused: weight-only layers return float.
    """
    if not isinstance(model, nn.Module):
        raise InvalidArgumentError(f"quantize: expects a Module, got {type(model).__name__}")
    if not isinstance(scheme, QuantScheme):
        raise InvalidArgumentError(f"quantize: expects a QuantScheme, got "
                                   f"{type(scheme).__name__}")
    if scheme.propagate:
        raise InvalidArgumentError(f"quantize: {scheme} propagates quantization to results, "
                                   "but weight-only layers give float activations; use "
                                   "scheme.with_propagation(False)")
    if _float_weight(model) is not None:
        raise InvalidArgumentError(f"quantize: the model is itself a {type(model).__name__}; "
                                   "quantize the module holding it, which can swap it")
    planned: dict[int, QuantizedLinear] = {}

    def plan(name: str, module: nn.Module) -> None:
        weight = _float_weight(module)
        if weight is None or id(module) in planned or (
                filter_fn is not None and not filter_fn(module, name)):
            return None
        bias = getattr(module, "bias", None)
        planned[id(module)] = QuantizedLinear(
            _quantized_weight(name, module, weight, scheme),
            bias.detach() if isinstance(bias, Tensor) else None)
        return None

    _replace(model, "", plan)  # every layer quantized first: a refused one changes nothing
    _replace(model, "", lambda _name, module: planned.get(id(module)))
    return model


def load_quantized(model: M, path: str | Path) -> M:
    """Load a record ``model.save(path)`` wrote after ``quantize`` into a freshly built float
    ``model`` of the same architecture, returning it: each linear layer whose weight the file
    holds quantized becomes a ``QuantizedLinear`` of that weight (scheme and all, read from the
    file, so nothing is quantized again), then every tensor loads as ``load`` does."""
    source = str(path)
    record = read_record(path)
    state = state_of(record)

    def restore(name: str, module: nn.Module) -> nn.Module | None:
        weight = _float_weight(module)
        data = state.get(f"{name}.weight")
        if weight is None or not isinstance(data, TensorData) or data.quant is None:
            return None
        if tuple(data.shape) != weight.shape:
            raise RecordError(f"load_quantized: {source} holds '{name}.weight' quantized as "
                              f"{list(data.shape)}, but the model's {type(module).__name__} "
                              f"needs [out, in] = {list(weight.shape)}")
        bias = getattr(module, "bias", None)
        return QuantizedLinear(Tensor.from_data(data, backend=weight.backend,
                                                device=weight.device),
                               bias.detach() if isinstance(bias, Tensor) else None)

    _replace(model, "", restore)
    return from_record(model, record, source)
