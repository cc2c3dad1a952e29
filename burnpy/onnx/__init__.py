"""ONNX import: ``burnpy.onnx.load`` turns an ONNX model into a ``bp.nn.Module`` that runs on
any backend and trains under ``Autodiff`` (an interpreter over burnpy's tensor ops).

Operators live in ``burnpy.onnx.ops``, one module per topic, each registered with
``burnpy.onnx.registry.onnx_op``; needs the ``onnx`` extra (``pip install burnpy[onnx]``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import onnx
from onnx import ModelProto

from burnpy.backend.registry import default_backend
from burnpy.onnx import ops as ops
from burnpy.onnx.errors import OnnxError, UnsupportedOnnxError
from burnpy.onnx.export import OnnxExportError, export
from burnpy.onnx.model import OnnxModule
from burnpy.onnx.registry import onnx_op

if TYPE_CHECKING:
    from burnpy.backend import Backend
    from burnpy.backend.device import Device


def load(model: str | os.PathLike[str] | bytes | ModelProto, *,
         backend: type[Backend] | None = None, device: Device | None = None,
         base_dir: str | os.PathLike[str] | None = None) -> OnnxModule:
    """An ONNX model (a path, serialized bytes or a ``ModelProto``) as an ``OnnxModule`` on
    ``backend`` (the default backend when None). External data (models over 2 GB) is read from
    the model file's folder, or from ``base_dir`` for bytes and protos that refer to it."""
    if isinstance(model, ModelProto):
        proto = model
    elif isinstance(model, bytes):
        proto = onnx.load_from_string(model)
    else:
        path = Path(model)
        proto = onnx.load(str(path), load_external_data=False)
        if base_dir is None:
            base_dir = path.parent
    if base_dir is not None:
        onnx.load_external_data_for_model(proto, str(base_dir))
    _check_no_external(proto)
    return OnnxModule(proto, backend or default_backend(), device)


def _check_no_external(model: ModelProto) -> None:
    """Raise ``OnnxError`` when an initializer's data is still outside the model."""
    for proto in model.graph.initializer:
        if proto.data_location == onnx.TensorProto.EXTERNAL:
            raise OnnxError(f"load: initializer {proto.name!r} keeps its data in an external "
                            "file; pass base_dir= (the folder of the .onnx file)")


__all__ = ["OnnxError", "OnnxExportError", "OnnxModule", "UnsupportedOnnxError", "export",
           "load", "onnx_op"]
