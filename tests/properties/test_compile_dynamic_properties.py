"""``bp.compile(dynamic=True)`` on random MLP training steps (depth, widths, activation,
optimizer) over random sequences of batch sizes: every call's loss and the weights it leaves
equal an eager twin's bit for bit, and one graph serves every size once a second size
confirmed it."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import burnpy as bp
from burnpy import nn, optim
from burnpy_cpu import CpuBackend

A = bp.Autodiff(bp.Capture(CpuBackend))
ACTIVATIONS = {"relu": nn.ReLU, "gelu": nn.GELU, "tanh": nn.Tanh}


def _model(widths: list[int], activation: str) -> nn.Module:
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(itertools.pairwise(widths)):
        if i:
            layers.append(ACTIVATIONS[activation]())
        layers.append(nn.Linear(a, b, backend=A))
    return nn.Sequential(*layers)


def _optimizer(kind: str) -> optim.Optimizer:
    return optim.Adam(lr=1e-2) if kind == "adam" else optim.SGD(lr=0.05, momentum=0.9)


def _step(model: nn.Module, opt: optim.Optimizer) -> Any:
    def step(x: bp.Tensor, y: bp.Tensor) -> bp.Tensor:
        loss = ((model(x) - y) ** 2).mean()
        opt.step(model, loss.backward())
        return loss
    return step


@settings(max_examples=20)
@given(widths=st.lists(st.integers(2, 9), min_size=2, max_size=4),
       activation=st.sampled_from(sorted(ACTIVATIONS)),
       kind=st.sampled_from(["adam", "sgd"]),
       sizes=st.lists(st.integers(2, 12), min_size=3, max_size=7),
       seed=st.integers(0, 2**16))
def test_a_dynamic_step_equals_eager_at_every_size(widths: list[int], activation: str,
                                                    kind: str, sizes: list[int],
                                                    seed: int) -> None:
    compiled_model, eager_model = _model(widths, activation), _model(widths, activation)
    eager_model.load_state_dict({k: v.clone() for k, v in compiled_model.state_dict().items()})
    step = bp.compile(_step(compiled_model, _optimizer(kind)), dynamic=True)
    eager = _step(eager_model, _optimizer(kind))
    rng = np.random.default_rng(seed)
    for n in sizes:
        x = rng.standard_normal((n, widths[0])).astype(np.float32)
        y = rng.standard_normal((n, widths[-1])).astype(np.float32)
        got = step(bp.Tensor.from_data(x, backend=A), bp.Tensor.from_data(y, backend=A))
        want = eager(bp.Tensor.from_data(x, backend=A), bp.Tensor.from_data(y, backend=A))
        assert np.array_equal(got.to_numpy(), want.to_numpy()), n
        for (k, a), b in zip(compiled_model.state_dict().items(),
                             eager_model.state_dict().values(), strict=True):
            assert np.array_equal(a.to_numpy(), b.to_numpy()), k
    # the first call makes the optimizer's state (eager), the second records; a later call
    # at another size records again and confirms the graph, which every other call replays
    info = step.cache_info()
    confirmed = any(n != sizes[1] for n in sizes[2:])
    assert info.dynamic_graphs == int(confirmed)
    assert info.recordings == 2 + int(confirmed)
    assert info.replays == len(sizes) - info.recordings
