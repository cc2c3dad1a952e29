"""burnpy.onnx's quantization, mel-filterbank and detection ops beyond the node suite: random
inputs, ties and saturation, per-axis and blocked scales, every box format and pooling mode
against onnxruntime, DeformConv against torch's convolution, and gradients under Autodiff
against closed forms and finite differences."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import onnx
import onnxruntime as ort  # type: ignore[import-untyped]
import torch
from onnx import TensorProto, helper, numpy_helper

import burnpy as bp
from burnpy import Autodiff, Tensor
from burnpy.onnx import UnsupportedOnnxError
from burnpy_cpu import CpuBackend

AD = Autodiff(CpuBackend)
_NP_TO_ONNX = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float64): TensorProto.DOUBLE,
               np.dtype(np.int64): TensorProto.INT64, np.dtype(np.int32): TensorProto.INT32,
               np.dtype(np.int16): TensorProto.INT16, np.dtype(np.int8): TensorProto.INT8,
               np.dtype(np.uint8): TensorProto.UINT8, np.dtype(np.uint16): TensorProto.UINT16}


def _model(op: str, feeds: dict[str, np.ndarray], outputs: list[str], opset: int,
           constants: dict[str, np.ndarray] | None = None, **attrs: Any) -> onnx.ModelProto:
    """A one-node model: ``feeds`` are graph inputs, ``constants`` initializers, in that
    order as the node's inputs ("" in either name skips an optional input)."""
    constants = constants or {}
    names = [*feeds, *constants]
    node = helper.make_node(op, names, outputs, **attrs)
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(k, _NP_TO_ONNX[v.dtype], v.shape)
         for k, v in feeds.items()],
        [onnx.ValueInfoProto(name=o) for o in outputs],
        [numpy_helper.from_array(v, k) for k, v in constants.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _ort(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    return [np.asarray(o) for o in session.run(None, feeds)]


def _ours(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    module = bp.onnx.load(model, backend=CpuBackend)
    out = module(*[Tensor.from_data(a, backend=CpuBackend) for a in feeds.values()])
    return [o.to_numpy() for o in ([out] if isinstance(out, Tensor) else out)]


def _grad(t: Tensor, grads: Any) -> np.ndarray:
    """``t``'s gradient in ``grads`` as an array (it must have one)."""
    g = t.grad(grads)
    assert g is not None
    return g.to_numpy()


def _same_as_ort(model: onnx.ModelProto, feeds: dict[str, np.ndarray], rtol: float = 1e-5,
                 atol: float = 1e-6) -> list[np.ndarray]:
    ours, theirs = _ours(model, feeds), _ort(model, feeds)
    for i, (got, ref) in enumerate(zip(ours, theirs, strict=True)):
        assert got.dtype == ref.dtype and got.shape == ref.shape, (i, got.dtype, ref.dtype)
        np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol, err_msg=f"output {i}")
    return ours


_QUANT_TYPES: dict[str, type[np.integer[Any]]] = {"uint8": np.uint8, "int8": np.int8,
                                                   "int16": np.int16, "uint16": np.uint16}


@pytest.mark.parametrize("qtype", sorted(_QUANT_TYPES))
@pytest.mark.parametrize("layout", ["tensor", "axis", "blocked"])
def test_quantize_dequantize_round_trip_matches_onnxruntime(qtype: str, layout: str) -> None:
    rng = np.random.default_rng(0)
    dtype = _QUANT_TYPES[qtype]
    info = np.iinfo(dtype)
    shape = (3, 8)
    if layout == "tensor":
        scale = np.array(0.5, np.float32)
        zero = np.array(info.min // 2 + info.max // 2, dtype)
        extra: dict[str, Any] = {}
    elif layout == "axis":
        scale = np.array([0.5, 0.25, 2.0], np.float32)
        zero = np.array([0, 1, info.max // 3], dtype)
        extra = {"axis": 0}
    else:
        scale = (rng.integers(1, 5, (3, 3)) / 4).astype(np.float32)
        zero = rng.integers(0, 3, (3, 3)).astype(dtype)
        extra = {"axis": 1, "block_size": 3}
    span = float(info.max - info.min)
    x = rng.uniform(-span, span, shape).astype(np.float32)
    # exact ties x / scale = k + 0.5 (rounded half to even) and values that saturate
    x[0, :4] = np.array([0.5, 1.5, 2.5, -3.5], np.float32) * scale.reshape(-1)[0]
    x[1, -1], x[2, -1] = 1e9, -1e9
    model = _model("QuantizeLinear", {"x": x}, ["q"], 21, {"s": scale, "z": zero}, **extra)
    (q,) = _same_as_ort(model, {"x": x}, rtol=0, atol=0)
    back = _model("DequantizeLinear", {"q": q}, ["y"], 21, {"s": scale, "z": zero}, **extra)
    _same_as_ort(back, {"q": q}, rtol=0, atol=0)


def test_quantize_ties_round_half_to_even_and_saturate() -> None:
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 300.0, -300.0], np.float32)
    model = _model("QuantizeLinear", {"x": x}, ["q"], 13,
                   {"s": np.array(1.0, np.float32), "z": np.array(0, np.int8)})
    (q,) = _ours(model, {"x": x})
    assert q.dtype == np.int8
    assert q.tolist() == [0, 2, 2, 0, -2, 127, -128]


def test_dynamic_quantize_linear_matches_onnxruntime() -> None:
    rng = np.random.default_rng(1)
    for x in (rng.normal(size=(4, 5)).astype(np.float32),
              rng.uniform(0.5, 3.0, (7,)).astype(np.float32),
              -rng.uniform(0.5, 3.0, (2, 3)).astype(np.float32)):
        model = _model("DynamicQuantizeLinear", {"x": x}, ["y", "s", "z"], 11)
        _same_as_ort(model, {"x": x}, rtol=0, atol=0)


def test_integer_matmuls_match_onnxruntime() -> None:
    rng = np.random.default_rng(2)
    a = rng.integers(0, 256, (2, 4, 6)).astype(np.uint8)
    b = rng.integers(-128, 128, (6, 5)).astype(np.int8)
    model = _model("MatMulInteger", {"a": a, "b": b}, ["y"], 10,
                   {"za": np.array(7, np.uint8), "zb": np.array(-3, np.int8)})
    _same_as_ort(model, {"a": a, "b": b}, rtol=0, atol=0)
    consts: dict[str, np.ndarray] = {
        "sa": np.array(0.02, np.float32), "za": np.array(120, np.uint8),
        "b": rng.integers(0, 256, (6, 5)).astype(np.uint8),
        "sb": np.array(0.03, np.float32), "zb": np.array(130, np.uint8),
        "sy": np.array(0.05, np.float32), "zy": np.array(128, np.uint8)}
    model = _model("QLinearMatMul", {"a": a}, ["y"], 10, consts)
    _same_as_ort(model, {"a": a}, rtol=0, atol=0)


def test_integer_convolutions_match_onnxruntime() -> None:
    rng = np.random.default_rng(3)
    x = rng.integers(0, 256, (1, 4, 7, 6)).astype(np.uint8)
    w = rng.integers(0, 256, (6, 2, 3, 3)).astype(np.uint8)
    conv = {"pads": [1, 0, 2, 1], "strides": [2, 1], "group": 2, "dilations": [1, 2]}
    model = _model("ConvInteger", {"x": x, "w": w}, ["y"], 10,
                   {"zx": np.array(100, np.uint8), "zw": np.array(120, np.uint8)}, **conv)
    _same_as_ort(model, {"x": x, "w": w}, rtol=0, atol=0)
    wi = rng.integers(-128, 128, (6, 2, 3, 3)).astype(np.int8)
    consts: dict[str, np.ndarray] = {
        "sx": np.array(0.01, np.float32), "zx": np.array(110, np.uint8), "w": wi,
        "sw": rng.uniform(0.01, 0.05, 6).astype(np.float32),
        "zw": np.zeros(6, np.int8), "sy": np.array(0.2, np.float32),
        "zy": np.array(120, np.uint8),
        "bias": rng.integers(-500, 500, 6).astype(np.int32)}
    model = _model("QLinearConv", {"x": x}, ["y"], 10, consts, **conv)
    _same_as_ort(model, {"x": x}, rtol=0, atol=0)


def test_dequantize_linear_differentiates_in_the_scale() -> None:
    q = np.array([[3, -7, 12], [0, 5, -128]], np.int8)
    model = _model("DequantizeLinear", {"q": q, "s": np.array([0.5, 2.0], np.float32)}, ["y"],
                   13, {"z": np.array([1, -2], np.int8)}, axis=0)
    module = bp.onnx.load(model, backend=AD)
    scale = Tensor.from_data(np.array([0.5, 2.0], np.float32), backend=AD).require_grad()
    y = module(Tensor.from_data(q, backend=AD), scale)
    assert isinstance(y, Tensor)
    grads = y.sum().backward()
    expected = (q.astype(np.float32) - np.array([[1], [-2]])).sum(1)
    np.testing.assert_allclose(_grad(scale, grads), expected)


def test_a_float8_output_is_unsupported_naming_the_node() -> None:
    x = np.ones(3, np.float32)
    model = _model("QuantizeLinear", {"x": x}, ["q"], 21, {"s": np.array(1.0, np.float32)},
                   output_dtype=TensorProto.FLOAT8E4M3FN, name="q8")
    with pytest.raises(UnsupportedOnnxError, match=r"QuantizeLinear node 'q8' \(opset 21\)"
                       r".*FLOAT8E4M3FN"):
        _ours(model, {"x": x})


@pytest.mark.parametrize(("bins", "dft", "rate", "low", "high"),
                         [(8, 16, 8192, 0.0, 4096.0), (20, 512, 16000, 80.0, 7600.0),
                          (5, 63, 22050, 300.0, 8000.0)])
def test_mel_weight_matrix_matches_onnxruntime(bins: int, dft: int, rate: int, low: float,
                                               high: float) -> None:
    feeds: dict[str, np.ndarray] = {"n": np.array(bins, np.int64), "d": np.array(dft, np.int64),
             "r": np.array(rate, np.int64), "lo": np.array(low, np.float32),
             "hi": np.array(high, np.float32)}
    _same_as_ort(_model("MelWeightMatrix", feeds, ["m"], 17), feeds, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("center", [0, 1])
def test_non_max_suppression_matches_onnxruntime(center: int) -> None:
    rng = np.random.default_rng(4)
    corner = rng.uniform(0, 10, (2, 30, 2)).astype(np.float32)
    size = rng.uniform(0.5, 4, (2, 30, 2)).astype(np.float32)
    boxes = np.concatenate([corner, corner + size if not center else size], -1)
    scores = rng.uniform(0, 1, (2, 3, 30)).astype(np.float32)
    scores[0, 0, :4] = 0.75  # ties keep the lower index first
    consts: dict[str, np.ndarray] = {
        "m": np.array([5], np.int64), "iou": np.array([0.3], np.float32),
        "st": np.array([0.2], np.float32)}
    model = _model("NonMaxSuppression", {"b": boxes, "s": scores}, ["i"], 11, consts,
                   center_point_box=center)
    (sel,) = _same_as_ort(model, {"b": boxes, "s": scores}, rtol=0, atol=0)
    assert sel.shape[0] > 10


@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("transform", ["half_pixel", "output_half_pixel"])
@pytest.mark.parametrize("ratio", [0, 2])
def test_roi_align_matches_onnxruntime(mode: str, transform: str, ratio: int) -> None:
    rng = np.random.default_rng(5)
    x = rng.normal(size=(2, 3, 9, 11)).astype(np.float32)
    start = rng.uniform(-2, 8, (6, 2))
    rois = np.concatenate([start, start + rng.uniform(0.3, 6, (6, 2))], 1).astype(np.float32)
    index = np.array([0, 1, 1, 0, 1, 0], np.int64)
    model = _model("RoiAlign", {"x": x, "rois": rois, "b": index}, ["y"], 16, mode=mode,
                   coordinate_transformation_mode=transform, output_height=3,
                   output_width=4, sampling_ratio=ratio, spatial_scale=0.9)
    _same_as_ort(model, {"x": x, "rois": rois, "b": index})


def test_roi_align_gradient_matches_finite_differences() -> None:
    rng = np.random.default_rng(6)
    x = rng.normal(size=(1, 2, 5, 6))
    rois = np.array([[0.3, 0.7, 4.2, 3.9], [1.1, 0.2, 5.0, 4.4]], np.float64)
    model = _model("RoiAlign", {"x": x, "rois": rois, "b": np.zeros(2, np.int64)}, ["y"], 16,
                   output_height=2, output_width=2, sampling_ratio=2)
    module = bp.onnx.load(model, backend=AD)
    weights = rng.normal(size=(2, 2, 2, 2))

    def loss(xt: Tensor) -> Tensor:
        out = module(xt, Tensor.from_data(rois, backend=AD),
                     Tensor.from_data(np.zeros(2, np.int64), backend=AD))
        assert isinstance(out, Tensor)
        return (out * Tensor.from_data(weights, backend=AD)).sum()

    xt = Tensor.from_data(x, backend=AD).require_grad()
    grad = _grad(xt, loss(xt).backward())
    numeric = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[i] = 1e-6
        numeric[i] = (loss(Tensor.from_data(x + step, backend=AD)).item()
                      - loss(Tensor.from_data(x - step, backend=AD)).item()) / 2e-6
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-8)


def test_max_roi_pool_matches_onnxruntime() -> None:
    rng = np.random.default_rng(7)
    x = rng.normal(size=(2, 3, 8, 10)).astype(np.float32)
    rois = np.array([[0, 0, 0, 9, 7], [1, 2.4, 1.6, 6.5, 5.2], [1, -3, -2, 4, 3],
                     [0, 7, 5, 20, 15], [1, 5, 5, 5, 5]], np.float32)
    model = _model("MaxRoiPool", {"x": x, "rois": rois}, ["y"], 21, pooled_shape=[3, 2],
                   spatial_scale=1.0)
    _same_as_ort(model, {"x": x, "rois": rois})


def _deform_model(x: np.ndarray, w: np.ndarray, offset: np.ndarray,
                  mask: np.ndarray | None = None, **attrs: Any) -> onnx.ModelProto:
    feeds = {"x": x, "w": w, "offset": offset}
    consts = {} if mask is None else {"b": np.zeros(w.shape[0], x.dtype), "mask": mask}
    return _model("DeformConv", feeds, ["y"], 19, consts, **attrs)


def test_deform_conv_with_whole_pixel_offsets_is_a_shifted_convolution() -> None:
    rng = np.random.default_rng(8)
    x = rng.normal(size=(2, 4, 7, 8))
    w = rng.normal(size=(6, 2, 3, 3))
    attrs: dict[str, Any] = {"pads": [1, 1, 1, 1], "strides": [2, 1], "dilations": [1, 2],
                             "group": 2}
    oh, ow = 4, 6
    zero = np.zeros((2, 18, oh, ow))
    (got,) = _ours(_deform_model(x, w, zero, **attrs), {"x": x, "w": w, "offset": zero})
    reference = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), None,
                                           (2, 1), (1, 1), (1, 2), 2).numpy()
    np.testing.assert_allclose(got, reference, rtol=1e-10, atol=1e-10)
    shift = np.zeros((2, 9, 2, oh, ow))
    shift[:, :, 0], shift[:, :, 1] = 1.0, -2.0  # every tap reads one row down, two left
    (moved,) = _ours(_deform_model(x, w, shift.reshape(2, 18, oh, ow), **attrs),
                     {"x": x, "w": w, "offset": shift.reshape(2, 18, oh, ow)})
    # the padded input read one row down and two columns left, zero outside the image
    height, width = x.shape[2:]
    shifted = np.zeros((2, 4, height + 2, width + 2))
    for u, v in np.ndindex(height + 2, width + 2):
        if 0 <= u - 1 + 1 < height and 0 <= v - 1 - 2 < width:
            shifted[:, :, u, v] = x[:, :, u, v - 3]
    reference = torch.nn.functional.conv2d(torch.from_numpy(shifted), torch.from_numpy(w),
                                           None, (2, 1), 0, (1, 2), 2).numpy()
    np.testing.assert_allclose(moved, reference, rtol=1e-10, atol=1e-10)


def test_deform_conv_gradients_match_finite_differences() -> None:
    rng = np.random.default_rng(9)
    x = rng.normal(size=(1, 2, 5, 5))
    w = rng.normal(size=(2, 2, 2, 2))
    offset = rng.uniform(-1.5, 1.5, (1, 8, 4, 4))
    mask = rng.uniform(0.2, 1.0, (1, 4, 4, 4))
    model = _deform_model(x, w, offset, mask)
    module = bp.onnx.load(model, backend=AD)

    def run(values: list[np.ndarray]) -> tuple[Tensor, list[Tensor]]:
        ts = [Tensor.from_data(v, backend=AD).require_grad() for v in values]
        out = module(*ts)
        assert isinstance(out, Tensor)
        return (out * out).sum(), ts

    values = [x, w, offset]
    loss, leaves = run(values)
    grads = loss.backward()
    for which, leaf in enumerate(leaves):
        analytic = _grad(leaf, grads)
        for i in list(np.ndindex(values[which].shape))[::7]:
            plus = [v.copy() for v in values]
            minus = [v.copy() for v in values]
            plus[which][i] += 1e-6
            minus[which][i] -= 1e-6
            numeric = (run(plus)[0].item() - run(minus)[0].item()) / 2e-6
            np.testing.assert_allclose(analytic[i], numeric, rtol=1e-4, atol=1e-6,
                                       err_msg=f"input {which} at {i}")


def test_deform_conv_matches_onnxruntime() -> None:
    rng = np.random.default_rng(10)
    x = rng.normal(size=(2, 4, 6, 7)).astype(np.float32)
    w = rng.normal(size=(4, 2, 3, 3)).astype(np.float32)
    offset = rng.uniform(-2, 2, (2, 36, 5, 6)).astype(np.float32)
    model = _model("DeformConv", {"x": x, "w": w, "offset": offset}, ["y"], 19,
                   {"b": rng.normal(size=4).astype(np.float32),
                    "mask": rng.uniform(0, 1, (2, 18, 5, 6)).astype(np.float32)},
                   group=2, offset_group=2, pads=[0, 1, 1, 0])
    _same_as_ort(model, {"x": x, "w": w, "offset": offset}, rtol=1e-4, atol=1e-5)
