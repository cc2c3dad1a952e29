"""Convolution, normalization and pooling layers against their torch.nn twins with torch's
weights copied in: outputs, input and parameter gradients in float64, outputs in float32."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import burnpy as bp
import burnpy.nn as nn
from burnpy import Tensor
from burnpy.backend.errors import BurnpyError
from tests.nn.test_nn_layers import AD, F64, _copy_weights, check_layer

RNG = np.random.default_rng(29)


def _x(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape)


def forward_f32(ours: nn.Module, theirs: torch.nn.Module, x: np.ndarray,
                tol: float = 1e-5) -> None:
    """The float32 forward of ``ours`` (torch's weights copied in) against ``theirs``."""
    ours.float()
    theirs.float()
    _copy_weights(ours, theirs)
    got = ours(Tensor.from_data(x.astype(np.float32))).to_numpy()
    np.testing.assert_allclose(got, theirs(torch.from_numpy(x.astype(np.float32)))
                               .detach().numpy(), rtol=tol, atol=tol)


# ---- convolutions -------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs", [{}, {"stride": (1, 2, 1), "padding": 1, "groups": 2},
                                    {"padding": "same", "dilation": (1, 2, 1)},
                                    {"padding": "valid", "bias": False}])
def test_conv3d(kwargs: dict[str, Any]) -> None:
    check_layer(nn.Conv3d(4, 6, (2, 3, 2), **kwargs, **F64),
                torch.nn.Conv3d(4, 6, (2, 3, 2), **kwargs).double(), _x(2, 4, 5, 6, 4))
    forward_f32(nn.Conv3d(4, 6, (2, 3, 2), **kwargs), torch.nn.Conv3d(4, 6, (2, 3, 2),
                                                                      **kwargs),
                _x(2, 4, 5, 6, 4))


@pytest.mark.parametrize("kwargs", [{}, {"stride": 2, "padding": 1, "output_padding": 1},
                                    {"groups": 2, "dilation": (2, 1, 1), "bias": False}])
def test_conv_transpose3d(kwargs: dict[str, Any]) -> None:
    check_layer(nn.ConvTranspose3d(4, 6, 3, **kwargs, **F64),
                torch.nn.ConvTranspose3d(4, 6, 3, **kwargs).double(), _x(2, 4, 3, 4, 3))
    forward_f32(nn.ConvTranspose3d(4, 6, 3, **kwargs),
                torch.nn.ConvTranspose3d(4, 6, 3, **kwargs), _x(2, 4, 3, 4, 3))


@pytest.mark.parametrize("mode", ["zeros", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("padding", [1, (2, 1), "same", "valid"])
def test_conv2d_padding_modes(mode: str, padding: Any) -> None:
    kwargs = {"padding": padding, "padding_mode": mode, "dilation": (1, 2)}
    check_layer(nn.Conv2d(3, 4, (4, 3), **kwargs, **F64),
                torch.nn.Conv2d(3, 4, (4, 3), **kwargs).double(), _x(2, 3, 7, 8))


@pytest.mark.parametrize("mode", ["reflect", "circular"])
def test_conv1d_conv3d_padding_modes_unbatched(mode: str) -> None:
    check_layer(nn.Conv1d(3, 4, 3, padding=2, padding_mode=mode, **F64),
                torch.nn.Conv1d(3, 4, 3, padding=2, padding_mode=mode).double(), _x(3, 7))
    check_layer(nn.Conv3d(2, 3, 3, padding="same", padding_mode=mode, **F64),
                torch.nn.Conv3d(2, 3, 3, padding="same", padding_mode=mode).double(),
                _x(1, 2, 4, 5, 3))


def test_conv_transpose_output_size() -> None:
    x = _x(1, 3, 4, 5)
    ours, theirs = nn.ConvTranspose2d(3, 2, 3, stride=2, **F64), torch.nn.ConvTranspose2d(
        3, 2, 3, stride=2).double()
    check_layer(ours, theirs, x, call=lambda layer, xs: layer(xs[0], output_size=[10, 11]))
    with pytest.raises(BurnpyError, match=r"ConvTranspose2d.*output_size"):
        ours(Tensor.from_data(x, backend=AD), output_size=[12, 11])


def test_conv_bad_configurations() -> None:
    with pytest.raises(BurnpyError, match="Conv2d: padding_mode"):
        nn.Conv2d(2, 2, 3, padding_mode="mirror")
    with pytest.raises(BurnpyError, match=r"Conv1d: padding='same'.*strided"):
        nn.Conv1d(2, 2, 3, stride=2, padding="same")
    with pytest.raises(BurnpyError, match="ConvTranspose1d: only padding_mode='zeros'"):
        nn.ConvTranspose1d(2, 2, 3, padding_mode="reflect")
    with pytest.raises(BurnpyError, match=r"Conv3d\(in_channels=2\)"):
        nn.Conv3d(2, 2, 3)(Tensor.zeros((1, 3, 4, 4, 4)))
    assert "padding_mode=circular" in repr(nn.Conv2d(2, 2, 3, padding=1,
                                                     padding_mode="circular"))
    assert bp.float64 is nn.Conv3d(1, 1, 1, **F64).weight.dtype


# ---- normalizations -----------------------------------------------------------------------------
def test_batch_norm3d_train_eval_and_running_stats() -> None:
    ours, theirs = nn.BatchNorm3d(3, momentum=0.3, **F64), torch.nn.BatchNorm3d(
        3, momentum=0.3).double()
    check_layer(ours, theirs, _x(2, 3, 4, 3, 2))
    for name in ("running_mean", "running_var"):
        np.testing.assert_allclose(getattr(ours, name).to_numpy(),
                                   getattr(theirs, name).numpy(), rtol=1e-12)
    ours.eval()
    theirs.eval()
    check_layer(ours, theirs, _x(2, 3, 4, 3, 2))
    forward_f32(nn.BatchNorm3d(3).eval(), theirs.eval(), _x(2, 3, 4, 3, 2))


@pytest.mark.parametrize(("ours", "theirs", "shape"), [
    (nn.BatchNorm1d, torch.nn.BatchNorm1d, (4, 3, 5)),
    (nn.BatchNorm2d, torch.nn.BatchNorm2d, (2, 3, 4, 5)),
    (nn.SyncBatchNorm, torch.nn.SyncBatchNorm, (2, 3, 4, 5)),
    (nn.InstanceNorm2d, torch.nn.InstanceNorm2d, (2, 3, 4, 5)),
])
def test_channel_norms_without_bias(ours: type, theirs: type, shape: tuple[int, ...]) -> None:
    """torch's ``bias=False``: a weight but no bias (state-dict keys and gradients)."""
    layer = ours(3, affine=True, bias=False, **F64)
    assert layer.bias is None and layer.weight is not None
    torch_layer = theirs(3, affine=True, bias=False).double()
    assert sorted(layer.state_dict()) == sorted(torch_layer.state_dict())
    check_layer(layer, torch_layer, _x(*shape))


def test_group_norm_without_bias() -> None:
    check_layer(nn.GroupNorm(2, 4, bias=False, **F64),
                torch.nn.GroupNorm(2, 4, bias=False).double(), _x(2, 4, 3, 5))
    check_layer(nn.GroupNorm(2, 4, **F64), torch.nn.GroupNorm(2, 4).double(), _x(2, 4, 6))


def test_sync_batch_norm_without_a_group_is_batch_norm() -> None:
    ours, theirs = nn.SyncBatchNorm(3, momentum=None, **F64), torch.nn.BatchNorm2d(
        3, momentum=None).double()
    for _ in range(2):
        check_layer(ours, theirs, _x(2, 3, 4, 5))
    np.testing.assert_allclose(ours.running_var.to_numpy(), theirs.running_var.numpy(),
                               rtol=1e-12)
    ours.eval()
    theirs.eval()
    check_layer(ours, theirs, _x(2, 3, 4, 5))


def test_convert_sync_batchnorm_shares_the_parameters() -> None:
    seq = nn.Sequential(nn.Conv2d(3, 3, 1), nn.BatchNorm2d(3), nn.ReLU())
    bn = seq[1]
    converted = nn.SyncBatchNorm.convert_sync_batchnorm(seq)
    assert type(converted[1]) is nn.SyncBatchNorm and converted[1].weight is bn.weight
    assert converted[1].running_mean is bn.running_mean
    assert sorted(converted.state_dict()) == sorted(
        torch.nn.Sequential(torch.nn.Conv2d(3, 3, 1), torch.nn.BatchNorm2d(3),
                            torch.nn.ReLU()).state_dict())
    assert type(nn.SyncBatchNorm.convert_sync_batchnorm(nn.BatchNorm1d(2))) is nn.SyncBatchNorm


# ---- pools --------------------------------------------------------------------------------------
def _with_indices(layer: Any, xs: list[Any]) -> Any:
    """The values of a pool called with ``return_indices``, indices checked equal to torch's
    by ``test_pools_return_torchs_indices``."""
    return layer(*xs)[0]


@pytest.mark.parametrize(("ours", "theirs", "shape"), [
    (nn.AdaptiveMaxPool3d((3, None, 2)), torch.nn.AdaptiveMaxPool3d((3, None, 2)),
     (2, 3, 7, 4, 5)),
    (nn.AdaptiveMaxPool3d(2), torch.nn.AdaptiveMaxPool3d(2), (3, 5, 4, 5)),
    (nn.LPPool3d(2, (2, 3, 2)), torch.nn.LPPool3d(2, (2, 3, 2)), (2, 3, 4, 6, 5)),
    (nn.LPPool3d(3, 2, stride=1, ceil_mode=True), torch.nn.LPPool3d(3, 2, stride=1,
                                                                   ceil_mode=True),
     (1, 2, 3, 4, 3)),
    (nn.AvgPool2d(3, 2, 1, divisor_override=5), torch.nn.AvgPool2d(3, 2, 1, divisor_override=5),
     (2, 3, 7, 6)),
    (nn.AvgPool2d(3, 2, 1, True, False), torch.nn.AvgPool2d(3, 2, 1, True, False),
     (2, 3, 7, 6)),
    (nn.AvgPool1d(3, 2, 1, count_include_pad=False), torch.nn.AvgPool1d(
        3, 2, 1, count_include_pad=False), (2, 3, 8)),
])
def test_pool_layers(ours: nn.Module, theirs: torch.nn.Module, shape: tuple[int, ...]) -> None:
    x = RNG.uniform(0.5, 2.0, shape)  # positive: LPPool's odd powers stay real
    check_layer(ours, theirs, x)
    forward_f32(ours, theirs, x)


@pytest.mark.parametrize(("ours", "theirs", "shape"), [
    (nn.AdaptiveMaxPool3d((3, 2, 4), True), torch.nn.AdaptiveMaxPool3d((3, 2, 4), True),
     (2, 3, 7, 5, 6)),
    (nn.MaxPool3d(2, 2, 1, return_indices=True), torch.nn.MaxPool3d(2, 2, 1,
                                                                    return_indices=True),
     (2, 3, 5, 4, 5)),
    (nn.MaxPool1d(3, 2, return_indices=True), torch.nn.MaxPool1d(3, 2, return_indices=True),
     (2, 3, 9)),
])
def test_pools_return_torchs_indices(ours: nn.Module, theirs: torch.nn.Module,
                                     shape: tuple[int, ...]) -> None:
    x = _x(*shape)
    check_layer(ours, theirs, x, call=_with_indices)
    _, got = ours(Tensor.from_data(x))
    np.testing.assert_array_equal(got.to_numpy(), theirs(torch.from_numpy(x))[1].numpy())


@pytest.mark.parametrize(("n", "shape", "kwargs"), [
    (2, (2, 3, 9, 11), {"kernel_size": (2, 3), "output_size": (5, 4)}),
    (2, (2, 3, 17, 13), {"kernel_size": 3, "output_ratio": (0.5, 0.7)}),
    (2, (3, 9, 11), {"kernel_size": 2, "output_size": 4}),
    (3, (2, 3, 7, 8, 9), {"kernel_size": (2, 2, 3), "output_size": (4, 5, 3)}),
    (3, (2, 6, 5, 7), {"kernel_size": 2, "output_ratio": 0.6}),
])
def test_fractional_max_pool_with_torchs_samples(n: int, shape: tuple[int, ...],
                                                 kwargs: dict[str, Any]) -> None:
    planes = (1 if len(shape) == n + 1 else shape[0], shape[-n - 1], n)
    for dtype in (np.float64, np.float32):
        samples = RNG.random(planes).astype(dtype)
        ours = getattr(nn, f"FractionalMaxPool{n}d")(
            **kwargs, return_indices=True, _random_samples=Tensor.from_data(samples, backend=AD))
        theirs = getattr(torch.nn, f"FractionalMaxPool{n}d")(
            **kwargs, return_indices=True, _random_samples=torch.from_numpy(samples))
        x = _x(*shape).astype(dtype)
        xt, tx = Tensor.from_data(x, backend=AD).require_grad(), torch.tensor(
            x, requires_grad=True)
        (values, indices), (ref_values, ref_indices) = ours(xt), theirs(tx)
        np.testing.assert_array_equal(values.to_numpy(), ref_values.detach().numpy())
        np.testing.assert_array_equal(indices.to_numpy(), ref_indices.numpy())
        w = RNG.standard_normal(values.shape).astype(dtype)
        grad = xt.grad((values * Tensor.from_data(w, backend=AD)).sum().backward())
        (ref_values * torch.from_numpy(w)).sum().backward()
        assert grad is not None and tx.grad is not None
        np.testing.assert_allclose(grad.to_numpy(), tx.grad.numpy(), rtol=1e-6, atol=1e-6)


def test_fractional_max_pool_draws_its_own_samples() -> None:
    x = Tensor.from_data(_x(4, 3, 12, 12))
    out = nn.FractionalMaxPool2d(3, output_ratio=0.5)(x)
    assert out.shape == (4, 3, 6, 6)
    with pytest.raises(BurnpyError, match="FractionalMaxPool2d: give exactly one"):
        nn.FractionalMaxPool2d(2)
    with pytest.raises(BurnpyError, match="fractional_max_pool2d: output"):
        nn.FractionalMaxPool2d(4, output_size=10)(x)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_max_unpool_inverts_max_pool(n: int) -> None:
    shape = (2, 3, 9, 7, 6)[:n + 2]
    pool = getattr(torch.nn, f"MaxPool{n}d")(2, 2, return_indices=True)
    values, indices = pool(torch.from_numpy(_x(*shape)))
    sizes = list(shape[2:])
    ours, theirs = getattr(nn, f"MaxUnpool{n}d")(2), getattr(torch.nn, f"MaxUnpool{n}d")(2)
    ours_indices = Tensor.from_data(indices.numpy(), backend=AD)
    check_layer(ours, theirs, values.detach().numpy(),
                call=lambda layer, xs: layer(xs[0], ours_indices if layer is ours else indices,
                                             output_size=sizes))
    unbatched = ours(Tensor.from_data(values[0].detach().numpy()), Tensor.from_data(
        indices[0].numpy()), sizes)
    np.testing.assert_array_equal(unbatched.to_numpy(),
                                  theirs(values[0], indices[0], sizes).detach().numpy())
    with pytest.raises(BurnpyError, match=f"max_unpool{n}d: indices must lie"):
        ours(Tensor.from_data(values.detach().numpy()),
             Tensor.from_data(indices.numpy() + 10**4))
