"""``bp.amp.GradScaler`` against ``torch.amp.GradScaler``: a model computing in float16
(float32 parameters under ``autocast("cpu", float16)``, as torch's scaler requires) trained
with injected inf gradients gives the same scale after every update, skips the same steps and
ends with the same parameters; clipping after ``unscale_``; state dicts; misuse errors."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

import burnpy as bp
from burnpy import Autodiff, Tensor
from burnpy.amp import GradScaler
from burnpy.nn import functional as F
from burnpy_cpu import CpuBackend

AD = Autodiff(CpuBackend)
STEPS = 10
INF_STEPS = {1, 4, 5}  # steps whose first gradient gets an inf (4 and 5: two in a row)
INIT_SCALE, GROWTH, BACKOFF, INTERVAL = 2.0**8, 2.0, 0.5, 2


def _data() -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    params = [rng.standard_normal((6, 4)).astype(np.float32) * 0.5,
              rng.standard_normal(6).astype(np.float32) * 0.1,
              rng.standard_normal((2, 6)).astype(np.float32) * 0.5,
              rng.standard_normal(2).astype(np.float32) * 0.1]
    return params, rng.standard_normal((8, 4)).astype(np.float32), \
        rng.standard_normal((8, 2)).astype(np.float32)


def _burnpy_run(clip: float | None) -> tuple[list[float], list[bool], list[np.ndarray]]:
    params, x, y = _data()
    layers = [bp.nn.Linear(4, 6, backend=AD), bp.nn.Linear(6, 2, backend=AD)]
    model = bp.nn.Sequential(layers[0], bp.nn.ReLU(), layers[1])
    for layer, (w, b) in zip(layers, (params[:2], params[2:]), strict=True):
        layer.weight = Tensor.from_data(w, backend=AD).require_grad()
        layer.bias = Tensor.from_data(b, backend=AD).require_grad()
    opt = bp.optim.SGD(lr=0.1)
    scaler = GradScaler(INIT_SCALE, GROWTH, BACKOFF, INTERVAL)
    xs, ys = Tensor.from_data(x, backend=AD), Tensor.from_data(y, backend=AD)
    scales, skipped = [], []
    for step in range(STEPS):
        with bp.autocast("cpu", bp.float16):
            loss = F.mse_loss(model(xs), ys)
        grads = scaler.scale(loss).backward()
        if step in INF_STEPS:
            weight = layers[0].weight
            g = weight.grad(grads)
            assert g is not None
            arr = g.to_numpy().copy()
            arr[0, 0] = np.inf
            weight.grad_replace(grads, Tensor.from_data(arr))
        before = layers[0].weight.to_numpy().copy()
        if clip is not None:
            scaler.unscale_(opt, model, grads)
            bp.optim.clip_grad_norm(model, grads, clip)
        scaler.step(opt, model, grads)
        scaler.update()
        scales.append(scaler.get_scale())
        skipped.append(bool(np.array_equal(before, layers[0].weight.to_numpy())))
    return scales, skipped, [p.to_numpy() for p in model.parameters()]


def _torch_run(clip: float | None) -> tuple[list[float], list[bool], list[np.ndarray]]:
    params, x, y = _data()
    first = torch.nn.Linear(4, 6)
    model = torch.nn.Sequential(first, torch.nn.ReLU(), torch.nn.Linear(6, 2))
    with torch.no_grad():
        for p, arr in zip(model.parameters(), params, strict=True):
            p.copy_(torch.from_numpy(arr))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu", INIT_SCALE, GROWTH, BACKOFF, INTERVAL)
    scales, skipped = [], []
    for step in range(STEPS):
        opt.zero_grad()
        with torch.autocast("cpu", torch.float16):
            loss = torch.nn.functional.mse_loss(model(torch.from_numpy(x)),
                                                torch.from_numpy(y))
        scaler.scale(loss).backward()
        if step in INF_STEPS:
            assert first.weight.grad is not None
            first.weight.grad[0, 0] = float("inf")
        before = first.weight.detach().clone()
        if clip is not None:
            scaler.unscale_(opt)
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        scaler.step(opt)
        scaler.update()
        scales.append(scaler.get_scale())
        skipped.append(bool(torch.equal(before, first.weight)))
    return scales, skipped, [p.detach().numpy() for p in model.parameters()]


@pytest.mark.parametrize("clip", [None, 0.5], ids=["plain", "clip_after_unscale"])
def test_scale_sequence_and_skipped_steps_match_torch(clip: float | None) -> None:
    scales, skipped, params = _burnpy_run(clip)
    want_scales, want_skipped, want_params = _torch_run(clip)
    assert scales == want_scales
    changes = list(itertools.pairwise(scales))
    assert any(b > a for a, b in changes) and any(b < a for a, b in changes)  # grew, backed off
    assert skipped == want_skipped
    assert [i for i, s in enumerate(skipped) if s] == sorted(INF_STEPS)
    for got, want in zip(params, want_params, strict=True):
        np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32),
                                   rtol=4e-3, atol=4e-3)


def test_state_dict_round_trips_and_matches_torchs_keys() -> None:
    scaler = GradScaler(init_scale=1024.0, growth_interval=3)
    scaler._growth_tracker = 2
    state = scaler.state_dict()
    assert set(state) == set(torch.amp.GradScaler("cpu").state_dict())
    fresh = GradScaler()
    fresh.load_state_dict(state)
    assert fresh.state_dict() == state and fresh.get_scale() == 1024.0
    torch_scaler = torch.amp.GradScaler("cpu")
    torch_scaler.load_state_dict(state)
    assert torch_scaler.get_scale() == 1024.0
    assert GradScaler(enabled=False).state_dict() == {}


def test_disabled_scaler_passes_through() -> None:
    scaler = GradScaler(enabled=False)
    loss = Tensor.from_data(np.float32(3.0))
    assert scaler.scale(loss) is loss and scaler.get_scale() == 1.0
    scaler.update()


def test_scale_of_a_half_loss_is_float32() -> None:
    loss = Tensor.from_data(np.float16(2000.0))
    scaled = GradScaler().scale(loss)
    assert scaled.dtype is bp.float32 and scaled.item() == 2000.0 * 2.0**16


def test_misuse_raises() -> None:
    with pytest.raises(bp.InvalidArgumentError, match="GradScaler: growth_factor"):
        GradScaler(growth_factor=1.0)
    with pytest.raises(bp.InvalidArgumentError, match=r"GradScaler\.update: no inf checks"):
        GradScaler().update()
    w = Tensor.from_data(np.ones((2, 2), np.float32), backend=AD).require_grad()
    model = bp.nn.Linear(2, 2, backend=AD)
    model.weight = w
    grads = (model(Tensor.from_data(np.ones((1, 2), np.float32), backend=AD))).sum().backward()
    opt = bp.optim.SGD(lr=0.1)
    scaler = GradScaler()
    scaler.unscale_(opt, model, grads)
    with pytest.raises(bp.InvalidArgumentError, match="unscale_: already called"):
        scaler.unscale_(opt, model, grads)
    scaler.step(opt, model, grads)
    with pytest.raises(bp.InvalidArgumentError, match="step: already called"):
        scaler.step(opt, model, grads)
