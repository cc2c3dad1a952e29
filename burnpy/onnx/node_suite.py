"""The ONNX project's backend node tests, run on a burnpy backend.

``onnx.backend.test.loader.load_model_tests(kind="node")`` builds every case offline (a
one-node model with inputs and expected outputs); ``category`` sorts out those outside
burnpy's scope (the table ``EXCLUDED``), and ``run_case`` runs one case and compares as
onnx's own runner does (dtype and shape exact, then ``assert_allclose`` with the case's rtol
and atol). ``tests/onnx/test_node_suite.py`` runs it; ``benchmarks/onnx_node_suite.py``
reports the counts per op and per category.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from onnx import AttributeProto, ModelProto, TensorProto, TypeProto
from onnx.backend.test.loader import load_model_tests

from burnpy.backend.errors import BurnpyError
from burnpy.onnx.attributes import tensor_to_numpy
from burnpy.onnx.dtypes import for_backend
from burnpy.onnx.errors import UnsupportedOnnxError
from burnpy.onnx.model import OnnxModule
from burnpy.tensor import Tensor

if TYPE_CHECKING:
    from onnx.backend.test.case.test_case import TestCase

    from burnpy.backend import Backend

_FLOAT8 = {TensorProto.FLOAT8E4M3FN, TensorProto.FLOAT8E4M3FNUZ, TensorProto.FLOAT8E5M2,
           TensorProto.FLOAT8E5M2FNUZ, TensorProto.FLOAT8E8M0}
_LOW_BIT_INT = {TensorProto.INT4, TensorProto.UINT4, TensorProto.INT2, TensorProto.UINT2}
_FLOAT4 = {TensorProto.FLOAT4E2M1}
_RANDOM_OPS = {"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike",
               "Bernoulli", "Multinomial"}
_TRAINING_DOMAIN = "ai.onnx.preview.training"

#: The categories outside burnpy's scope, in the order a case is sorted by, with why.
EXCLUDED: dict[str, str] = {
    "training": "ops of the ai.onnx.preview.training domain (optimizer steps, Gradient)",
    "onnx-ml": "the classical-ML domain ai.onnx.ml (trees, label encoders, scalers)",
    "string": "string tensors (burnpy has no string dtype)",
    "sequence": "sequence values (SequenceConstruct, SplitToSequence...)",
    "optional": "optional values (Optional, OptionalHasElement...)",
    "float8": "float8 element types",
    "int4/int2": "4-bit and 2-bit integer element types",
    "float4": "the float4 element type",
    "random": "random ops, whose outputs the suite cannot compare (Dropout training too, "
              "but for ratio 0, which drops nothing)",
    "image decoder": "ImageDecoder, which decodes image files",
}

#: Eligible cases whose expected outputs burnpy differs from beyond the runner's tolerance
#: while being right, with why; the test accepts "wrong" for these and no other case.
KNOWN_DIFFERENCES: dict[str, str] = {
    "test_dft_inverse": "the expected imaginary parts hold NumPy's complex64 FFT round-off "
                        "(1.9e-7, above atol 1e-7) where the exact value is 0; onnxruntime "
                        "differs too (20 values)",
    "test_dft_inverse_opset19": "as test_dft_inverse",
    # NumPy's float16 matmul, which the reference runs, rounds its running sum to float16 at
    # every step; burnpy's float16 products accumulate in float32 and round once (as torch's
    # CPU kernels and cuBLAS do), so outputs differ by up to 2 float16 ulps
    "test_attention_4d_fp16": "float16 products accumulated in float32 (the reference rounds "
                              "each partial sum to float16): 3 of 192 values 1 ulp apart",
    "test_attention_4d_causal_fp16": "as test_attention_4d_fp16: 44 of 192 values up to "
                                     "2 ulps apart",
    "test_attention_4d_gqa_with_past_and_present_fp16": "as test_attention_4d_fp16: 177 of "
                                                        "576 values up to 2 ulps apart",
}


def _type_codes(tp: TypeProto) -> tuple[set[int], set[str]]:
    """Element types and value kinds (tensor, sequence, optional, map...) in a type."""
    kind = tp.WhichOneof("value")
    if kind in ("tensor_type", "sparse_tensor_type"):
        return {getattr(tp, kind).elem_type}, {"tensor"}
    if kind == "sequence_type":
        codes, kinds = _type_codes(tp.sequence_type.elem_type)
        return codes, kinds | {"sequence"}
    if kind == "optional_type":
        codes, kinds = _type_codes(tp.optional_type.elem_type)
        return codes, kinds | {"optional"}
    if kind == "map_type":
        codes, kinds = _type_codes(tp.map_type.value_type)
        return codes | {tp.map_type.key_type}, kinds | {"map"}
    return set(), set()


def _model_features(model: ModelProto) -> tuple[set[str], set[str], set[int], set[str]]:
    """(op types, domains, element types, value kinds) anywhere in the model."""
    ops: set[str] = set()
    domains: set[str] = {imp.domain for imp in model.opset_import}
    codes: set[int] = set()
    kinds: set[str] = set()

    def visit(graph: Any) -> None:
        for value in [*graph.input, *graph.output, *graph.value_info]:
            c, k = _type_codes(value.type)
            codes.update(c)
            kinds.update(k)
        codes.update(t.data_type for t in graph.initializer)
        for node in graph.node:
            ops.add(node.op_type)
            domains.add(node.domain)
            for attr in node.attribute:
                if attr.type == AttributeProto.TENSOR:
                    codes.add(attr.t.data_type)
                elif attr.type == AttributeProto.GRAPH:
                    visit(attr.g)
                elif attr.type == AttributeProto.GRAPHS:
                    for g in attr.graphs:
                        visit(g)
                elif attr.name in ("to", "dtype", "output_dtype", "softmax_precision") and \
                        attr.type == AttributeProto.INT:
                    codes.add(attr.i)

    visit(model.graph)
    return ops, domains, codes, kinds


def category(case: TestCase) -> str | None:
    """The excluded category of ``case`` (a key of ``EXCLUDED``), or None when it counts."""
    assert case.model is not None
    ops, domains, codes, kinds = _model_features(case.model)
    if _TRAINING_DOMAIN in domains:
        return "training"
    if "ai.onnx.ml" in domains:
        return "onnx-ml"
    if TensorProto.STRING in codes:
        return "string"
    if "sequence" in kinds or any("Sequence" in op and op != "ReverseSequence" for op in ops):
        return "sequence"
    if "optional" in kinds or any(op.startswith("Optional") for op in ops):
        return "optional"
    if codes & _FLOAT8:
        return "float8"
    if codes & _LOW_BIT_INT:
        return "int4/int2"
    if codes & _FLOAT4:
        return "float4"
    if ops & _RANDOM_OPS or (case.name.startswith("test_training_dropout")
                             and "zero_ratio" not in case.name):
        return "random"
    if "ImageDecoder" in ops:
        return "image decoder"
    return None


#: The element types of a float32 case: float32 data, with int64 (or int32) shapes and
#: indices, which a backend without int64 runs in its int dtype, and bool masks.
_FLOAT32_CASE_TYPES = {TensorProto.FLOAT, TensorProto.INT64, TensorProto.INT32,
                       TensorProto.BOOL}


def is_float32(case: TestCase) -> bool:
    """Whether ``case`` is one of "the float32 ones" that also run on backends with 32-bit
    types only (WebGPU): eligible, every graph output float32, and no element type anywhere
    other than float32, int64/int32 (shapes, indices) and bool."""
    assert case.model is not None
    if category(case) is not None:
        return False
    graph = case.model.graph
    if any(o.type.tensor_type.elem_type != TensorProto.FLOAT for o in graph.output):
        return False
    codes = _model_features(case.model)[2]
    codes.update(i.type.tensor_type.elem_type for i in graph.input)
    return codes <= _FLOAT32_CASE_TYPES


@functools.cache
def cases() -> dict[str, TestCase]:
    """Every node case of the installed onnx, by name (built once per process)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {c.name: c for c in load_model_tests(kind="node")}


def op_types(case: TestCase) -> list[str]:
    """The op types of a case's top-level graph."""
    assert case.model is not None
    return sorted({node.op_type for node in case.model.graph.node})


@dataclass(frozen=True)
class Outcome:
    """One case's result: ``status`` is pass, unsupported (an ``UnsupportedOnnxError``),
    error (another ``BurnpyError``), wrong (a result unlike the expected one) or crash (an
    exception that is no ``BurnpyError``); ``detail`` says what happened."""

    status: str
    detail: str = ""


def as_array(value: object) -> np.ndarray:
    """A case's input or expected output as an array (some are ``TensorProto``s)."""
    return tensor_to_numpy(value) if isinstance(value, TensorProto) else np.asarray(value)


def _to_numpy(value: object) -> np.ndarray:
    if not isinstance(value, Tensor):
        raise TypeError(f"output is {type(value).__name__}, not a Tensor")
    return np.asarray(value.to_numpy())


def compare(outputs: list[np.ndarray], expected: list[np.ndarray], rtol: float,
            atol: float) -> str:
    """Why ``outputs`` differ from ``expected`` as onnx's runner judges it ("" when equal)."""
    if len(outputs) != len(expected):
        return f"{len(outputs)} outputs, expected {len(expected)}"
    for i, (out, ref) in enumerate(zip(outputs, expected, strict=True)):
        if out.shape != ref.shape:
            return f"output {i}: shape {out.shape}, expected {ref.shape}"
        if out.dtype != ref.dtype:
            return f"output {i}: dtype {out.dtype}, expected {ref.dtype}"
        tol = rtol
        if out.dtype.name == "bfloat16":
            tol, out, ref = max(rtol, 2**-6), out.astype(np.float32), ref.astype(np.float32)
        try:
            np.testing.assert_allclose(out, ref, rtol=tol, atol=atol)
        except AssertionError as e:
            return f"output {i}: {str(e).strip().splitlines()[-1] if str(e) else 'differs'}"
    return ""


def run_case(case: TestCase, backend: type[Backend],
             convert: Callable[[np.ndarray], Tensor] | None = None) -> Outcome:
    """Run ``case`` on ``backend`` and judge it; never raises for a burnpy failure. Inputs are
    made by ``convert``, by default as the backend holds them (int64 as its int dtype where
    it has no int64, as the interpreter runs int64 constants)."""
    assert case.model is not None and case.data_sets is not None
    make = convert or (lambda a: Tensor.from_data(for_backend(a, backend, None, "input"),
                                                  backend=backend))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            module = OnnxModule(case.model, backend)
            for inputs, expected in case.data_sets:
                feeds = [make(as_array(a)) for a in inputs]
                result = module(*feeds)
                got = [_to_numpy(result)] if isinstance(result, Tensor) else \
                    [_to_numpy(r) for r in result]
                why = compare(got, [as_array(e) for e in expected], case.rtol, case.atol)
                if why:
                    return Outcome("wrong", why)
    except UnsupportedOnnxError as e:
        return Outcome("unsupported", str(e))
    except BurnpyError as e:
        return Outcome("error", f"{type(e).__name__}: {e}")
    except Exception as e:
        return Outcome("crash", f"{type(e).__name__}: {e}")
    return Outcome("pass")
