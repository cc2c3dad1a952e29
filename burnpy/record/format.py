"""The burnpy record file: a safetensors file with burnpy's metadata.

Layout (all in the safetensors header's ``__metadata__``, string to string):

- ``"format": "burnpy-record"``, ``"version": "2"``, ``"kind"``: what was saved (``"module"``,
  ``"optimizer"``, ``"scheduler"``, ``"checkpoint"``...);
- ``"tensors"``: JSON, one entry per stored tensor: ``{"kind": "float" | "int" | "bool",
  "dtype": "bfloat16", "crc32": 123}``. The entry is where a future tensor kind says how its
  parts are stored (a quantized tensor: ``"kind": "quantized"`` with its scheme), without
  changing files already written;
- ``"extra"``: JSON for everything that is not a tensor (step counts, hyperparameters...).

Version 2 stores any state dict as a tree (``burnpy.record.state``): an optimizer's buffers
sit under ``state/<param>/<buffer>`` and a module record keeps no class name. Version-1 files
(the first release's) are read by moving their entries to those places (``_upgrade_v1``).

Tensors are stored under their own safetensors dtype (``BF16`` included), so other safetensors
readers open the file too. Writes are atomic (temporary file in the same folder, then
``os.replace``); a missing, truncated or corrupt file raises ``RecordError``.
"""

from __future__ import annotations

import json
import os
import tempfile
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import safetensors

from burnpy.backend.data import QuantParams, TensorData, contiguous
from burnpy.backend.dtype import DType
from burnpy.backend.errors import BurnpyError, RecordError
from burnpy.quantization.scheme import QuantScheme
from burnpy.tensor import Tensor

FORMAT = "burnpy-record"
VERSION = 2

# burnpy dtype -> the safetensors header tag it is stored under.
_TAGS = {
    DType.float64: "F64", DType.float32: "F32", DType.float16: "F16", DType.bfloat16: "BF16",
    DType.int64: "I64", DType.int32: "I32", DType.int16: "I16", DType.int8: "I8",
    DType.uint8: "U8", DType.uint16: "U16", DType.uint32: "U32", DType.uint64: "U64",
    DType.bool_: "BOOL",
}


@dataclass
class Record:
    """The contents of a record file: its kind, host tensors by name and JSON extras."""

    kind: str
    tensors: dict[str, TensorData] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    @staticmethod
    def combine(kind: str, parts: Mapping[str, Record],
                extra: Mapping[str, Any] | None = None) -> Record:
        """One record holding several (a checkpoint: model, optimizer...), by part name."""
        tensors = {f"{p}/{n}": t for p, r in parts.items() for n, t in r.tensors.items()}
        meta = {p: {"kind": r.kind, "extra": r.extra} for p, r in parts.items()}
        return Record(kind, tensors, {**(extra or {}), "parts": meta})

    def part(self, name: str) -> Record:
        """The record ``combine`` stored as part ``name``."""
        meta = self.extra.get("parts", {}).get(name)
        if meta is None:
            raise RecordError(f"record of kind {self.kind!r} has no part {name!r} (parts: "
                              f"{sorted(self.extra.get('parts', {}))})")
        prefix = name + "/"
        tensors = {n[len(prefix):]: t for n, t in self.tensors.items() if n.startswith(prefix)}
        return Record(meta["kind"], tensors, meta["extra"])


def _host(value: Tensor | TensorData) -> TensorData:
    return value.into_data() if isinstance(value, Tensor) else value


#: Quantized tensors are stored as several safetensors entries: the int8 values under the
#: tensor's name (sub-byte values packed, ``8 // bits`` a uint8 byte, their logical shape in
#: the entry's ``"shape"``), and its scales under ``name + _PART + "scales"`` (and
#: "tensor_scale").
_PART = "::"


def _flatten(name: str, data: TensorData) -> Iterator[tuple[str, TensorData, dict[str, Any]]]:
    """(entry name, host data, extra metadata) for each safetensors entry of one tensor."""
    quant = data.quant
    if quant is None:
        yield name, data, {}
        return
    meta: dict[str, Any] = {
        "kind": "quantized", "dtype": data.dtype.value, "scheme": quant.scheme.to_dict(),
        "block_axis": quant.block_axis, "float_dtype": quant.float_dtype.value}
    if data.packed.dtype == np.uint8:
        yield name, TensorData(data.packed, DType.uint8), {**meta, "shape": list(data.shape)}
    else:
        yield name, TensorData(data.array, DType.int8), meta
    yield name + _PART + "scales", TensorData(quant.scales), {"part_of": name}
    if quant.tensor_scale is not None:
        yield name + _PART + "tensor_scale", TensorData(quant.tensor_scale), {"part_of": name}


def encode(record: Record) -> bytes:
    """The record as safetensors bytes."""
    arrays: dict[str, np.ndarray] = {}
    stored: dict[str, DType] = {}
    entries: dict[str, dict[str, Any]] = {}
    for name, data, extra_meta in (part for key, value in record.tensors.items()
                                   for part in _flatten(key, _host(value))):
        if data.dtype not in _TAGS:
            raise RecordError(f"record: tensor '{name}' has dtype {data.dtype!r}, which records "
                              "cannot store")
        arr = contiguous(data.array)
        if arr.dtype.byteorder == ">":
            arr = arr.byteswap().view(arr.dtype.newbyteorder("<"))
        arrays[name] = arr
        stored[name] = data.dtype
        entries[name] = {"kind": data.dtype.kind, "dtype": data.dtype.value,
                         "crc32": zlib.crc32(arr.tobytes()), **extra_meta}
    specs = {name: safetensors.TensorSpec(dtype=_spec_dtype(stored[name]),
                                          shape=list(arr.shape), data_ptr=arr.ctypes.data,
                                          data_len=arr.nbytes)
             for name, arr in arrays.items()}
    metadata = {"format": FORMAT, "version": str(VERSION), "kind": record.kind,
                "tensors": json.dumps(entries), "extra": json.dumps(record.extra)}
    return bytes(safetensors.serialize(specs, metadata=metadata))


def _spec_dtype(dtype: DType) -> str:
    return "bool" if dtype is DType.bool_ else dtype.value


def write_record(path: str | Path, record: Record) -> Path:
    """Write ``record`` to ``path`` atomically; returns the path."""
    target = Path(path)
    payload = encode(record)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def decode(payload: bytes, source: str = "record") -> Record:
    """Parse safetensors bytes written by ``encode``; RecordError on any damage."""
    try:
        entries = safetensors.deserialize(payload)
    except Exception as exc:  # safetensors raises its own error type
        raise RecordError(f"{source}: not a readable safetensors file, it is truncated or "
                          f"corrupt ({exc})") from None
    meta = _metadata(payload, source)
    infos = _json(meta, "tensors", source)
    extra = _json(meta, "extra", source)
    stored: dict[str, TensorData] = {}
    for name, entry in entries:
        info = infos.get(name)
        if info is None:
            raise RecordError(f"{source}: tensor '{name}' has no burnpy metadata entry")
        stored[name] = _tensor(name, entry, info, source)
    missing = sorted(set(infos) - set(stored))
    if missing:
        raise RecordError(f"{source}: tensors {missing} are listed but not stored")
    tensors = {name: _assemble(name, data, infos, stored, source)
               for name, data in stored.items() if "part_of" not in infos[name]}
    record = Record(meta["kind"], tensors, extra)
    return _upgrade_v1(record) if int(meta.get("version", "1")) < 2 else record


def _upgrade_v1(record: Record, prefix: str = "") -> Record:
    """A version-1 record in version 2's layout: a module's extra loses its class name, an
    optimizer's buffers move under ``state/``; a checkpoint's parts are upgraded in place."""
    if record.kind == "module":
        record.extra.pop("type", None)
    elif record.kind == "optimizer":
        record.tensors = {(prefix + "state/" + name[len(prefix):]
                           if name.startswith(prefix) else name): data
                          for name, data in record.tensors.items()}
    for part, meta in record.extra.get("parts", {}).items():
        view = _upgrade_v1(Record(meta["kind"], record.tensors, meta["extra"]),
                           prefix + part + "/")
        record.tensors, meta["extra"] = view.tensors, view.extra
    return record


def _assemble(name: str, data: TensorData, infos: dict[str, Any],
              stored: dict[str, TensorData], source: str) -> TensorData:
    """A stored tensor, with a quantized one's scales and scheme put back together."""
    info = infos[name]
    if info.get("kind") != "quantized":
        return data
    try:
        scheme = QuantScheme.from_dict(info["scheme"])
        scales = stored[name + _PART + "scales"].array
        ts_data = stored.get(name + _PART + "tensor_scale")
        params = QuantParams(scales, None if ts_data is None else ts_data.array,
                             info["block_axis"], scheme, DType.of(info["float_dtype"]))
        if "shape" in info:
            return TensorData(data.packed, scheme.dtype, params, shape=tuple(info["shape"]))
        return TensorData(data.array, scheme.dtype, params)
    except (KeyError, BurnpyError) as exc:
        raise RecordError(f"{source}: quantized tensor '{name}' is incomplete ({exc})") from None


def _metadata(payload: bytes, source: str) -> dict[str, str]:
    size = int.from_bytes(payload[:8], "little")
    meta = json.loads(payload[8:8 + size]).get("__metadata__") or {}
    if meta.get("format") != FORMAT:
        raise RecordError(f"{source}: a safetensors file, but not a burnpy record (no "
                          f"'format: {FORMAT}' metadata)")
    if int(meta.get("version", "0")) > VERSION:
        raise RecordError(f"{source}: record version {meta['version']} is newer than this "
                          f"burnpy reads ({VERSION}); upgrade burnpy")
    return meta


def _json(meta: dict[str, str], key: str, source: str) -> dict[str, Any]:
    try:
        return json.loads(meta.get(key, "{}"))
    except json.JSONDecodeError as exc:
        raise RecordError(f"{source}: the '{key}' metadata is corrupt ({exc})") from None


def _tensor(name: str, entry: dict[str, Any], info: dict[str, Any], source: str) -> TensorData:
    try:
        dtype = DType.of(info["dtype"])
    except Exception:
        raise RecordError(f"{source}: tensor '{name}' has an unknown dtype "
                          f"{info.get('dtype')!r}") from None
    if dtype.is_quantized:  # the values; _assemble restores the quantized dtype
        dtype = DType.uint8 if "shape" in info else DType.int8
    if _TAGS.get(dtype) != entry["dtype"]:
        raise RecordError(f"{source}: tensor '{name}' is stored as {entry['dtype']} but its "
                          f"metadata says {dtype!r}")
    raw = entry["data"]
    if zlib.crc32(raw) != info.get("crc32"):
        raise RecordError(f"{source}: tensor '{name}' is corrupt (its checksum does not match)")
    arr = np.frombuffer(raw, dtype=dtype.numpy).reshape(entry["shape"])
    return TensorData(arr, dtype)


def read_safetensors(path: str | Path) -> dict[str, TensorData]:
    """Every tensor of any safetensors file (one written by ``safetensors.torch.save_file``,
    say), as host ``TensorData`` by name, bfloat16 included (which
    ``safetensors.numpy.load_file`` cannot read): a state dict for ``Module.load_state_dict``.
    """
    source = Path(path)
    try:
        payload = source.read_bytes()
    except OSError as exc:
        raise RecordError(f"{source}: cannot read the file ({exc})") from None
    try:
        entries = safetensors.deserialize(payload)
    except Exception as exc:  # safetensors raises its own error type
        raise RecordError(f"{source}: not a readable safetensors file, it is truncated or "
                          f"corrupt ({exc})") from None
    by_tag = {tag: dtype for dtype, tag in _TAGS.items()}
    out: dict[str, TensorData] = {}
    for name, entry in entries:
        dtype = by_tag.get(entry["dtype"])
        if dtype is None:
            raise RecordError(f"{source}: tensor '{name}' has safetensors dtype "
                              f"{entry['dtype']}, which burnpy does not read (supported: "
                              f"{sorted(by_tag)})")
        arr = np.frombuffer(entry["data"], dtype=dtype.numpy).reshape(entry["shape"])
        out[name] = TensorData(arr, dtype)
    return out


def map_safetensors(path: str | Path) -> dict[str, TensorData]:
    """Every tensor of any safetensors file as read-only host ``TensorData`` viewing the file
    through a memory map (nothing is read until used): a large checkpoint is copied at most
    once, where its values are converted or moved into tensors."""
    source = Path(path)
    try:
        mapped = np.memmap(source, dtype=np.uint8, mode="r")
    except (OSError, ValueError) as exc:
        raise RecordError(f"{source}: cannot map the file ({exc})") from None
    size = int.from_bytes(mapped[:8].tobytes(), "little") if mapped.size >= 8 else -1
    try:
        if not 0 < size <= mapped.size - 8:
            raise ValueError(f"header length {size}")
        header = json.loads(mapped[8:8 + size].tobytes())
    except ValueError as exc:
        raise RecordError(f"{source}: not a readable safetensors file, it is truncated or "
                          f"corrupt ({exc})") from None
    by_tag = {tag: dtype for dtype, tag in _TAGS.items()}
    body = mapped[8 + size:]
    out: dict[str, TensorData] = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        dtype = by_tag.get(entry.get("dtype"))
        if dtype is None:
            raise RecordError(f"{source}: tensor '{name}' has safetensors dtype "
                              f"{entry.get('dtype')}, which burnpy does not read (supported: "
                              f"{sorted(by_tag)})")
        shape = tuple(entry["shape"])
        begin, end = entry["data_offsets"]
        if end - begin != int(np.prod(shape)) * dtype.numpy.itemsize or end > body.size:
            raise RecordError(f"{source}: tensor '{name}' ({entry['dtype']}, shape "
                              f"{list(shape)}) has bytes [{begin}, {end}) that do not fit it "
                              "or the file")
        out[name] = TensorData(body[begin:end].view(dtype.numpy).reshape(shape), dtype)
    return out


def read_record(path: str | Path) -> Record:
    """Read and verify the record at ``path``."""
    source = Path(path)
    try:
        payload = source.read_bytes()
    except FileNotFoundError:
        raise RecordError(f"{source}: no such record file") from None
    except OSError as exc:
        raise RecordError(f"{source}: cannot read the record ({exc})") from None
    return decode(payload, str(source))
