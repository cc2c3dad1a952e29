"""Every layer against its torch.nn twin with copied weights, in float64: the forward output,
the input gradient and every parameter gradient (through Autodiff(CpuBackend))."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import burnpy as bp
import burnpy.nn as nn
from burnpy import Tensor
from burnpy.autodiff import Autodiff
from burnpy_cpu import CpuBackend

AD = Autodiff(CpuBackend)
F64 = {"backend": AD, "dtype": bp.float64}
RNG = np.random.default_rng(0)


def _close(ours: Tensor | None, ref: torch.Tensor | None, what: str, tol: float = 1e-10) -> None:
    assert ours is not None and ref is not None, f"{what}: missing gradient"
    assert ours.shape == tuple(ref.shape), what
    np.testing.assert_allclose(ours.to_numpy(), ref.detach().numpy(), rtol=tol, atol=tol,
                               err_msg=what)


def _copy_weights(ours: nn.Module, theirs: torch.nn.Module) -> None:
    ours.load_state_dict({k: v.detach().numpy().copy() for k, v in theirs.state_dict().items()})


def check_layer(ours: nn.Module, theirs: torch.nn.Module, *inputs: np.ndarray,
                call: Callable[[Any, list[Any]], Any] | None = None, tol: float = 1e-10) -> None:
    """Same output and gradients (w.r.t. float inputs and every parameter) as torch's layer."""
    _copy_weights(ours, theirs)
    theirs.zero_grad(set_to_none=True)
    run = call or (lambda layer, xs: layer(*xs))
    xs = [Tensor.from_data(a, backend=AD) for a in inputs]
    xs = [x.require_grad() if x.kind == "float" else x for x in xs]
    txs = [torch.tensor(a, requires_grad=a.dtype.kind == "f") for a in inputs]
    out, ref = run(ours, xs), run(theirs, txs)
    if isinstance(ref, tuple):
        out, ref = out[0], ref[0]
    _close(out, ref, "output", tol)
    seed = RNG.standard_normal(tuple(ref.shape))
    grads = (out * Tensor.from_data(seed, backend=AD)).sum().backward()
    (ref * torch.from_numpy(seed)).sum().backward()
    theirs_params = dict(theirs.named_parameters())
    names = [n for n, _ in ours.named_parameters()]
    assert sorted(names) == sorted(theirs_params)
    for name, p in ours.named_parameters():
        _close(p.grad(grads), theirs_params[name].grad, f"grad of {name}", tol)
    for i, (x, tx) in enumerate(zip(xs, txs, strict=True)):
        if tx.requires_grad:
            _close(x.grad(grads), tx.grad, f"grad of input {i}", tol)


def _x(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape)


def test_linear() -> None:
    check_layer(nn.Linear(5, 3, **F64), torch.nn.Linear(5, 3).double(), _x(2, 4, 5))
    check_layer(nn.Linear(5, 3, bias=False, **F64), torch.nn.Linear(5, 3, bias=False).double(),
                _x(4, 5))


@pytest.mark.parametrize("kwargs", [{}, {"stride": 2, "padding": 1},
                                    {"dilation": 2, "groups": 2, "padding": 2}])
def test_conv1d_conv2d(kwargs: dict[str, Any]) -> None:
    check_layer(nn.Conv1d(4, 6, 3, **kwargs, **F64), torch.nn.Conv1d(4, 6, 3, **kwargs).double(),
                _x(2, 4, 9))
    check_layer(nn.Conv2d(4, 6, 3, **kwargs, **F64), torch.nn.Conv2d(4, 6, 3, **kwargs).double(),
                _x(2, 4, 7, 8))


def test_conv_transpose() -> None:
    kwargs = {"stride": 2, "padding": 1, "output_padding": 1}
    check_layer(nn.ConvTranspose2d(4, 6, 3, **kwargs, **F64),
                torch.nn.ConvTranspose2d(4, 6, 3, **kwargs).double(), _x(2, 4, 5, 6))
    check_layer(nn.ConvTranspose1d(4, 2, 3, groups=2, **F64),
                torch.nn.ConvTranspose1d(4, 2, 3, groups=2).double(), _x(2, 4, 5))


def test_pools() -> None:
    x = _x(2, 3, 9, 8)
    check_layer(nn.MaxPool2d(2), torch.nn.MaxPool2d(2), x)
    check_layer(nn.MaxPool2d(3, 2, 1, ceil_mode=True), torch.nn.MaxPool2d(3, 2, 1, ceil_mode=True),
                x)
    check_layer(nn.AvgPool2d(3, 2, 1), torch.nn.AvgPool2d(3, 2, 1), x)
    check_layer(nn.AdaptiveAvgPool2d((4, 3)), torch.nn.AdaptiveAvgPool2d((4, 3)), x)
    check_layer(nn.MaxPool1d(2), torch.nn.MaxPool1d(2), _x(2, 3, 9))


@pytest.mark.parametrize(("ours", "theirs", "shape"), [
    (nn.BatchNorm1d, torch.nn.BatchNorm1d, (8, 4)),
    (nn.BatchNorm1d, torch.nn.BatchNorm1d, (5, 4, 3)),
    (nn.BatchNorm2d, torch.nn.BatchNorm2d, (3, 4, 5, 2)),
])
def test_batch_norm_train_running_stats_and_eval(ours: type, theirs: type,
                                                 shape: tuple[int, ...]) -> None:
    layer, ref = ours(4, momentum=0.3, **F64), theirs(4, momentum=0.3).double()
    with torch.no_grad():
        ref.weight.uniform_(0.5, 1.5)
        ref.bias.uniform_(-0.5, 0.5)
    check_layer(layer, ref, _x(*shape))
    x = _x(*shape)
    layer(Tensor.from_data(x, backend=AD))
    ref(torch.from_numpy(x))
    for name in ("running_mean", "running_var"):
        _close(getattr(layer, name), getattr(ref, name), name, 1e-12)
    assert int(layer.num_batches_tracked.item()) == int(ref.num_batches_tracked) == 2
    layer.eval()
    ref.eval()
    check_layer(layer, ref, _x(*shape))


def test_batch_norm_cumulative_and_untracked() -> None:
    layer, ref = nn.BatchNorm1d(3, momentum=None, **F64), torch.nn.BatchNorm1d(3, momentum=None)
    ref = ref.double()
    for _ in range(3):
        x = _x(6, 3)
        layer(Tensor.from_data(x, backend=AD))
        ref(torch.from_numpy(x))
    _close(layer.running_var, ref.running_var, "running_var", 1e-12)
    check_layer(nn.BatchNorm2d(3, affine=False, track_running_stats=False, **F64),
                torch.nn.BatchNorm2d(3, affine=False, track_running_stats=False).double(),
                _x(2, 3, 4, 4))


def test_batch_norm_wrong_channels() -> None:
    with pytest.raises(bp.ShapeError, match=r"BatchNorm2d\(4\).*4 channels"):
        nn.BatchNorm2d(4)(Tensor.zeros((2, 3, 4, 4)))


def test_layer_group_rms_norm() -> None:
    x = _x(2, 3, 4, 5)
    check_layer(nn.LayerNorm((4, 5), **F64), torch.nn.LayerNorm((4, 5)).double(), x)
    check_layer(nn.LayerNorm(5, elementwise_affine=False, **F64),
                torch.nn.LayerNorm(5, elementwise_affine=False).double(), x)
    check_layer(nn.GroupNorm(3, 6, **F64), torch.nn.GroupNorm(3, 6).double(), _x(2, 6, 4))
    check_layer(nn.RMSNorm(5, **F64), torch.nn.RMSNorm(5).double(), x)
    check_layer(nn.RMSNorm((4, 5), eps=1e-3, **F64), torch.nn.RMSNorm((4, 5), eps=1e-3).double(),
                x)
    with pytest.raises(bp.ShapeError, match="normalized_shape"):
        nn.LayerNorm(4)(Tensor.zeros((2, 3)))


def test_embedding() -> None:
    check_layer(nn.Embedding(10, 4, **F64), torch.nn.Embedding(10, 4).double(),
                np.array([[1, 2, 2], [9, 0, 1]]))
    with pytest.raises(bp.KindError, match="int tensor"):
        nn.Embedding(10, 4)(Tensor.zeros((2,)))


@pytest.mark.parametrize("module", [
    nn.ReLU(), nn.GELU(), nn.GELU("tanh"), nn.Sigmoid(), nn.Tanh(), nn.SiLU(),
    nn.LeakyReLU(0.2), nn.Softplus(2.0), nn.Hardsigmoid(), nn.Softmax(1), nn.LogSoftmax(-1),
    nn.Flatten(), nn.Identity(),
])
def test_activation_modules(module: nn.Module) -> None:
    name = type(module).__name__
    ref = {"ReLU": torch.nn.ReLU(), "GELU": torch.nn.GELU(getattr(module, "approximate", "none")),
           "Sigmoid": torch.nn.Sigmoid(), "Tanh": torch.nn.Tanh(), "SiLU": torch.nn.SiLU(),
           "LeakyReLU": torch.nn.LeakyReLU(0.2), "Softplus": torch.nn.Softplus(2.0),
           "Hardsigmoid": torch.nn.Hardsigmoid(), "Softmax": torch.nn.Softmax(1),
           "LogSoftmax": torch.nn.LogSoftmax(-1), "Flatten": torch.nn.Flatten(),
           "Identity": torch.nn.Identity()}[name]
    # torch's hardsigmoid backward scales by a float32 1/6 even in float64.
    check_layer(module, ref, _x(3, 4, 2), tol=1e-7 if name == "Hardsigmoid" else 1e-10)


def test_sequential_matches_torch() -> None:
    ours = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1, **F64), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(16, 3, **F64))
    ref = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3, padding=1), torch.nn.ReLU(),
                              torch.nn.MaxPool2d(2), torch.nn.Flatten(),
                              torch.nn.Linear(16, 3)).double()
    assert list(ours.state_dict()) == list(ref.state_dict())
    check_layer(ours, ref, _x(2, 1, 4, 4))
    assert len(ours) == 5 and isinstance(ours[-1], nn.Linear)


def _mha_call(masks: dict[str, np.ndarray], kwargs: dict[str, Any]) -> Callable[..., Any]:
    def call(layer: Any, xs: list[Any]) -> Any:
        to = ((lambda a: torch.from_numpy(a)) if isinstance(layer, torch.nn.Module)
              else (lambda a: Tensor.from_data(a, backend=AD)))
        return layer(*xs, **{k: to(v) for k, v in masks.items()}, **kwargs)
    return call


@pytest.mark.parametrize(("masks", "kwargs"), [
    ({}, {}),
    ({}, {"average_attn_weights": False}),
    ({"attn_mask": np.triu(np.ones((4, 6), dtype=bool), 1),
      "key_padding_mask": np.array([[False] * 5 + [True], [False] * 6])}, {}),
    ({"attn_mask": RNG.standard_normal((2 * 2, 4, 6))}, {}),
])
def test_multi_head_attention(masks: dict[str, np.ndarray], kwargs: dict[str, Any]) -> None:
    ours = nn.MultiHeadAttention(8, 2, batch_first=True, **F64)
    ref = torch.nn.MultiheadAttention(8, 2, batch_first=True).double()
    inputs = (_x(2, 4, 8), _x(2, 6, 8), _x(2, 6, 8))
    check_layer(ours, ref, *inputs, call=_mha_call(masks, kwargs))
    _, weights = _mha_call(masks, kwargs)(ours, [Tensor.from_data(a, backend=AD) for a in inputs])
    _, ref_weights = _mha_call(masks, kwargs)(ref, [torch.from_numpy(a) for a in inputs])
    _close(weights, ref_weights, "attention weights")


def test_multi_head_attention_kdim_vdim_weights_and_self() -> None:
    ours = nn.MultiHeadAttention(6, 3, kdim=4, vdim=5, batch_first=True, **F64)
    ref = torch.nn.MultiheadAttention(6, 3, kdim=4, vdim=5, batch_first=True).double()
    _copy_weights(ours, ref)
    q, k, v = _x(2, 3, 6), _x(2, 7, 4), _x(2, 7, 5)
    out, w = ours(*(Tensor.from_data(a, backend=AD) for a in (q, k, v)))
    ref_out, ref_w = ref(*(torch.from_numpy(a) for a in (q, k, v)))
    _close(out, ref_out, "output")
    _close(w, ref_w, "weights")
    check_layer(ours, ref, q, k, v)
    x = _x(2, 5, 8)
    self_attn = nn.MultiHeadAttention(8, 4, batch_first=True, **F64)
    ref_self = torch.nn.MultiheadAttention(8, 4, batch_first=True).double()
    check_layer(self_attn, ref_self, x,
                call=lambda layer, xs: layer(xs[0], xs[0], xs[0], need_weights=False))
    causal = self_attn(*(Tensor.from_data(x, backend=AD),) * 3, is_causal=True)[0]
    mask = torch.nn.Transformer.generate_square_subsequent_mask(5, dtype=torch.float64)
    _close(causal, ref_self(*(torch.from_numpy(x),) * 3, attn_mask=mask)[0], "causal")


@pytest.mark.parametrize(("norm_first", "activation"), [(False, "relu"), (True, "gelu")])
def test_transformer_encoder_layer(norm_first: bool, activation: str) -> None:
    ours = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation=activation,
                                      norm_first=norm_first, batch_first=True, **F64)
    ref = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation=activation,
                                           norm_first=norm_first, batch_first=True).double()
    check_layer(ours, ref, _x(2, 5, 8))
    mask = np.triu(np.ones((5, 5), dtype=bool), 1)
    check_layer(ours, ref, _x(2, 5, 8),
                call=lambda layer, xs: layer(xs[0], src_mask=(
                    torch.from_numpy(mask) if isinstance(layer, torch.nn.Module)
                    else Tensor.from_data(mask, backend=AD))))


def test_dropout_is_seeded_scaled_and_off_in_eval() -> None:
    x = Tensor.ones((200, 50), backend=AD)
    drop = nn.Dropout(0.25)
    CpuBackend.seed(CpuBackend.default_device(), 3)
    a = drop(x).to_numpy()
    CpuBackend.seed(CpuBackend.default_device(), 3)
    b = drop(x).to_numpy()
    np.testing.assert_array_equal(a, b)
    assert set(np.unique(a)) == {0.0, np.float32(1 / 0.75)}
    assert abs((a == 0).mean() - 0.25) < 0.02
    assert drop.eval()(x) is x
    assert nn.Dropout(0.0)(x) is x
    assert float(nn.Dropout(1.0)(x).sum()) == 0.0
    with pytest.raises(bp.InvalidArgumentError, match="p must be in"):
        nn.Dropout(1.5)


def test_dropout_gradient_uses_the_mask() -> None:
    x = Tensor.ones((50, 40), backend=AD).require_grad()
    out = nn.functional.dropout(x, 0.5)
    g = x.grad(out.sum().backward())
    assert g is not None
    np.testing.assert_array_equal(g.to_numpy(), out.to_numpy())


@pytest.mark.parametrize(("layer", "shape", "match"), [
    (nn.Linear(4, 2), (3, 5), "in_features=4"),
    (nn.Conv2d(3, 2, 3), (1, 2, 5, 5), "in_channels=3"),
    (nn.Conv1d(3, 2, 3), (1, 3, 5, 5), "in_channels=3"),
    (nn.GroupNorm(2, 4), (2, 3, 5), "GroupNorm"),
])
def test_wrong_input_shapes_name_the_layer(layer: nn.Module, shape: tuple[int, ...],
                                           match: str) -> None:
    with pytest.raises(bp.ShapeError, match=match):
        layer(Tensor.zeros(shape))


def test_bad_configurations() -> None:
    with pytest.raises(bp.InvalidArgumentError, match="divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(bp.InvalidArgumentError, match="divisible by num_heads"):
        nn.MultiHeadAttention(6, 4)
    with pytest.raises(bp.InvalidArgumentError, match="activation"):
        nn.TransformerEncoderLayer(4, 2, activation="swish")


def test_default_initializations_follow_torch_bounds() -> None:
    lin = nn.Linear(100, 50)
    w = lin.weight.to_numpy()
    assert np.abs(w).max() <= 0.1 and np.abs(w).max() > 0.09
    conv = nn.Conv2d(4, 8, 3)
    assert np.abs(conv.weight.to_numpy()).max() <= 1 / 6
    mha = nn.MultiHeadAttention(8, 2)
    assert np.all(mha.in_proj_bias.to_numpy() == 0)
    assert np.abs(mha.in_proj_weight.to_numpy()).max() <= np.sqrt(6 / 32)
    emb = nn.Embedding(1000, 20).weight.to_numpy()
    assert abs(emb.std() - 1.0) < 0.05
