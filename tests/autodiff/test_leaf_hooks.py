"""``register_leaf_hook``: the documented way to see leaves' final gradients during backward
(``DistributedDataParallel`` starts its all-reduces there), removed through its handle."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from burnpy import Tensor
from burnpy.autodiff import Autodiff
from burnpy.autodiff.gradients import node_of
from burnpy.autodiff.graph import Node, register_leaf_hook
from burnpy.backend.errors import AutodiffError
from burnpy_cpu import CpuBackend

AD = Autodiff(CpuBackend)


class Recorder:
    """Keeps what the backward pass told it."""

    def __init__(self) -> None:
        self.ready: list[tuple[Node, list[float] | None]] = []
        self.finished = 0

    def leaf_ready(self, leaf: Node, grad: Any) -> None:
        self.ready.append((leaf, None if grad is None else np.asarray(grad).tolist()))

    def finish(self, grads: dict[Node, Any]) -> None:
        self.finished += 1


def test_a_hooked_leaf_is_announced_with_its_final_gradient_until_removed() -> None:
    w = Tensor.from_data([1.0, -2.0, 3.0], backend=AD).require_grad()
    b = Tensor.from_data([0.5, 0.5, 0.5], backend=AD).require_grad()
    leaf_w, leaf_b = node_of(w), node_of(b)
    assert leaf_w is not None and leaf_b is not None
    hook = Recorder()
    handle = register_leaf_hook([leaf_w], hook)
    grads = ((w * w) * 3.0 + w * b).sum().backward()
    assert hook.ready == [(leaf_w, [6.5, -11.5, 18.5])]  # 6w + b, final when announced
    assert hook.finished == 1
    assert w.grad(grads).to_numpy().tolist() == [6.5, -11.5, 18.5]
    handle.remove()
    handle.remove()  # a second remove does nothing
    (w * b).sum().backward()
    assert hook.ready == [(leaf_w, [6.5, -11.5, 18.5])] and hook.finished == 1


def test_a_leaf_hooked_again_keeps_the_new_hook_when_the_old_handle_is_removed() -> None:
    w = Tensor.from_data([2.0], backend=AD).require_grad()
    leaf = node_of(w)
    assert leaf is not None
    first, second = Recorder(), Recorder()
    old = register_leaf_hook([leaf], first)
    new = register_leaf_hook([leaf], second)
    old.remove()
    (w * w).sum().backward()
    assert first.ready == [] and second.ready == [(leaf, [4.0])]
    new.remove()


def test_only_leaves_can_be_hooked() -> None:
    w = Tensor.from_data([2.0], backend=AD).require_grad()
    inner = node_of(w * 2.0)
    assert inner is not None
    with pytest.raises(AutodiffError,
                       match=r"register_leaf_hook: Node\(float_mul_scalar.*not a leaf"):
        register_leaf_hook([inner], Recorder())
