"""What every pretrained architecture shares: its configuration read from ``config.json``, its
weights read from a checkpoint directory as transformers' ``save_pretrained`` writes it, and
``PreTrainedModel``, the base class whose ``from_pretrained`` builds and loads a model."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import burnpy.nn as nn
from burnpy.backend.dtype import DType
from burnpy.backend.errors import InvalidArgumentError, RecordError
from burnpy.backend.registry import default_backend
from burnpy.nn.init import no_init_weights
from burnpy.nn.module import IncompatibleKeys
from burnpy.record import map_safetensors
from burnpy.record.mapped import copy_out
from burnpy.tensor import Tensor
from burnpy.tensor.creation import from_owned_data

if TYPE_CHECKING:
    from burnpy.backend.base import Backend
    from burnpy.backend.data import TensorData
    from burnpy.backend.dtype import DTypeLike

WEIGHTS = "model.safetensors"
WEIGHTS_INDEX = "model.safetensors.index.json"


class ConfigError(InvalidArgumentError):
    """A checkpoint's configuration that burnpy cannot honour (an unknown ``model_type``, an
    unsupported activation or RoPE scaling): named by its field, never approximated."""


C = TypeVar("C", bound="PretrainedConfig")


@dataclasses.dataclass(frozen=True)
class PretrainedConfig:
    """The fields of ``config.json`` an architecture reads, with transformers' names and
    defaults (subclasses declare them); other fields are ignored."""

    model_type: ClassVar[str] = ""
    #: Another name transformers accepts for a field (``hidden_size`` for GPT-2's ``n_embd``).
    attribute_map: ClassVar[dict[str, str]] = {}

    bos_token_id: int | None = None
    eos_token_id: int | list[int] | None = None
    pad_token_id: int | None = None
    tie_word_embeddings: bool = True

    @classmethod
    def from_dict(cls: type[C], raw: dict[str, Any]) -> C:
        """The configuration from ``config.json``'s contents; ``ConfigError`` names a field of
        the wrong type or a ``model_type`` of another architecture."""
        found = raw.get("model_type", cls.model_type)
        if found != cls.model_type:
            raise ConfigError(f"{cls.__name__}: config field model_type is {found!r}, not "
                              f"{cls.model_type!r}")
        aliases = {alias: name for alias, name in cls.attribute_map.items()}
        names = {f.name for f in dataclasses.fields(cls)}
        values: dict[str, Any] = {}
        for key, value in raw.items():
            name = aliases.get(key, key)
            if name in names:
                values[name] = value
        for f in dataclasses.fields(cls):
            if f.name not in values or f.default is dataclasses.MISSING:
                continue
            value, default = values[f.name], f.default
            kind = type(default)
            if default is None or f.name.endswith("_token_id"):  # int, list of ints or None
                continue
            ok = (isinstance(value, bool) if kind is bool else
                  isinstance(value, int | float) and not isinstance(value, bool) if kind is float
                  else isinstance(value, kind) and not (kind is int and isinstance(value, bool)))
            if not ok:
                raise ConfigError(f"{cls.__name__}: config field {f.name} must be "
                                  f"{kind.__name__}, got {value!r}")
        return cls(**values)


def read_config(directory: str | Path) -> dict[str, Any]:
    """The contents of ``directory/config.json``."""
    path = Path(directory) / "config.json"
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError:
        raise RecordError(f"from_pretrained: {path} does not exist (a checkpoint directory "
                          "as save_pretrained writes it holds config.json)") from None
    except (OSError, ValueError) as exc:
        raise RecordError(f"from_pretrained: cannot read {path} ({exc})") from None
    if not isinstance(raw, dict):
        raise RecordError(f"from_pretrained: {path} is not a JSON object")
    return raw


def read_weights(directory: str | Path) -> dict[str, TensorData]:
    """Every tensor of the checkpoint in ``directory``, memory-mapped: ``model.safetensors``,
    or the shards ``model.safetensors.index.json`` names."""
    root = Path(directory)
    if (root / WEIGHTS).exists():
        return map_safetensors(root / WEIGHTS)
    index_path = root / WEIGHTS_INDEX
    if not index_path.exists():
        raise RecordError(f"from_pretrained: {root} holds neither {WEIGHTS} nor {WEIGHTS_INDEX} "
                          "(burnpy reads safetensors checkpoints only)")
    try:
        weight_map = json.loads(index_path.read_text())["weight_map"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise RecordError(f"from_pretrained: cannot read the weight map of {index_path} "
                          f"({exc!r})") from None
    shards: dict[str, dict[str, TensorData]] = {}
    out: dict[str, TensorData] = {}
    for name, shard in weight_map.items():
        if shard not in shards:
            shards[shard] = map_safetensors(root / shard)
        if name not in shards[shard]:
            raise RecordError(f"from_pretrained: {index_path} puts '{name}' in {shard}, which "
                              "does not hold it")
        out[name] = shards[shard][name]
    return out


M = TypeVar("M", bound="PreTrainedModel")


class PreTrainedModel(nn.Module):
    """A model of a transformers architecture: its modules carry transformers' names, so a
    checkpoint's keys are the state dict's."""

    config_class: ClassVar[type[PretrainedConfig]]
    config: PretrainedConfig
    #: The attribute holding the base model in a model with a head (``transformer``, ``model``).
    base_model_prefix: ClassVar[str] = ""
    #: Checkpoint keys transformers ignores for this architecture (buffers older versions
    #: saved), as regular expressions searched in each key.
    keys_to_ignore_on_load: ClassVar[tuple[str, ...]] = ()

    #: What the checkpoint lacked and what it had beyond the model (``from_pretrained``).
    loading_info: IncompatibleKeys

    def __init__(self, config: PretrainedConfig, *, backend: type[Backend] | None = None,
                 dtype: DTypeLike | None = None) -> None:
        """Keep ``config``; an architecture builds its modules on ``backend`` in ``dtype``."""
        self.config = config

    @classmethod
    def from_pretrained(cls: type[M], directory: str | Path, *,
                        backend: type[Backend] | None = None, dtype: DTypeLike | None = None,
                        strict: bool = True) -> M:
        """The model saved in ``directory`` (by transformers' ``save_pretrained``), on
        ``backend`` (the default backend when None) in ``dtype`` (the backend's float dtype
        when None), in eval mode. Missing or unexpected weights raise ``StateDictError``;
        with ``strict=False`` they are initialized as the architecture does and listed in
        ``loading_info``.

        The model is built without initializing its weights (``no_init_weights``: their
        memory is never touched) and each weight is copied once out of the file's memory map,
        whose pages are released as it goes: loading holds about the model's size, not two or
        three times it."""
        config = cls.config_class.from_dict(read_config(directory))
        b = backend or default_backend()
        dt = DType.of(dtype) if dtype is not None else b.float_dtype
        if not dt.is_float:
            raise InvalidArgumentError(f"{cls.__name__}.from_pretrained: dtype must be a float "
                                       f"dtype, got {dt!r}")
        with no_init_weights():
            model = cls(config, backend=b, dtype=dt)
        info = model.load_checkpoint(read_weights(directory), strict=strict)
        if info.missing_keys:  # strict=False: the architecture's own initialization for these
            fresh = cls(config, backend=b, dtype=dt).state_dict()
            model.load_state_dict({k: fresh[k] for k in info.missing_keys}, strict=False,
                                  assign=True)
        model.loading_info = info
        model.eval()
        return model

    def load_checkpoint(self, state: dict[str, TensorData],
                        strict: bool = True) -> IncompatibleKeys:
        """Load a transformers checkpoint's tensors (names as saved, with or without the base
        model's prefix), each copied once, converted to the module's dtype, out of the file's
        memory map (``copy_out``, which releases the mapped pages as it copies), into tensors
        that take the copy as their own; the projection weights ``column_major_weights`` names
        are stored column-major, for a decoding step's one-row products. Returns
        ``load_state_dict``'s missing/unexpected keys."""
        own = self.state_dict()
        prefix = self.base_model_prefix + "."
        if prefix != ".":
            wants = any(n.startswith(prefix) for n in own)
            has = any(k.startswith(prefix) for k in state)
            if has and not wants:
                state = {k.removeprefix(prefix): v for k, v in state.items()}
            elif wants and not has:
                state = {prefix + k: v for k, v in state.items()}
        ignore = [re.compile(p) for p in self.keys_to_ignore_on_load]
        projections = self.column_major_weights()
        values: dict[str, Tensor | TensorData] = {}
        for key, data in state.items():
            if any(p.search(key) for p in ignore):
                continue
            like = own.get(key)
            if like is None or tuple(data.shape) != like.shape:
                values[key] = data  # load_state_dict reports it
            else:
                host = copy_out(data, like.dtype, transposed=id(like) in projections)
                values[key] = from_owned_data(host, backend=like.backend, device=like.device)
        return self.load_state_dict(values, strict=strict, assign=True)

    def column_major_weights(self) -> set[int]:
        """The ids of the projection weights ``load_checkpoint`` stores column-major: those
        whose one-row product ``[1, K] @ [K, N]`` NumPy's BLAS runs faster so (see
        ``row_major_operand``). An ``nn.Linear`` weight ``[out, in]`` is the operand
        transposed; a module declaring ``weight_is_in_out = True`` (GPT-2's ``Conv1D``)
        multiplies by its ``[in, out]`` weight as stored. A tied embedding is its ``nn.Linear``
        head's weight."""
        ids: set[int] = set()
        for m in self.modules():
            if isinstance(m, nn.Linear):
                n, k = m.weight.shape
                if row_major_operand(k, n):  # the operand weight.T row-major: weight column-major
                    ids.add(id(m.weight))
            elif getattr(m, "weight_is_in_out", False):
                weight: Tensor = getattr(m, "weight")  # noqa: B009 - a declared attribute
                k, n = weight.shape
                if not row_major_operand(k, n):
                    ids.add(id(weight))
        return ids


def row_major_operand(k: int, n: int) -> bool:
    """Whether the weight operand ``[K, N]`` of a one-row product ``x [1, K] @ w`` is fastest
    row-major with NumPy's OpenBLAS (one thread): when ``K <= N`` (wide: 1.2x to 1.6x at
    GPT-2's and Llama's projections and their heads); a tall one (``K > N``: an MLP's down
    projection, a grouped key/value projection) runs as N dot products of length K, 1.05x to
    1.3x faster column-major."""
    return k <= n
