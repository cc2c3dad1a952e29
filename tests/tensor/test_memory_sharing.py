"""Who owns a tensor's memory, against torch (issue 27): ``bp.tensor`` / ``Tensor.from_data``
copy as ``torch.tensor`` does; ``bp.from_numpy`` and ``bp.from_dlpack`` share as
``torch.from_numpy`` / ``torch.from_dlpack`` do; a ``DataLoader``'s batches are the dataset's
values even when the dataset refills the array it returned."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import burnpy as bp
from burnpy import Autodiff, InvalidArgumentError, Tensor, TensorData
from burnpy.backend.errors import DTypeError
from burnpy.data import ArrayDataset, DataLoader
from burnpy.fusion import Fusion
from burnpy_cpu import CpuBackend

AD = Autodiff(CpuBackend)


def test_a_reused_batch_buffer_does_not_change_the_gradient() -> None:
    """The issue's program: the buffer the input came from is refilled before backward."""
    buf = np.ones(3)
    x = Tensor.from_data(buf, backend=AD)
    w = Tensor.from_data(np.ones(3), backend=AD).require_grad()
    loss = (x * w).sum()
    buf[:] = 7
    tbuf = np.ones(3)
    tx = torch.tensor(tbuf)
    tw = torch.ones(3, dtype=torch.float64, requires_grad=True)
    tloss = (tx * tw).sum()
    tbuf[:] = 7
    tloss.backward()
    grad = w.grad(loss.backward())
    assert grad is not None
    np.testing.assert_array_equal(grad.to_numpy(), tw.grad.numpy())
    np.testing.assert_array_equal(grad.to_numpy(), [1.0, 1.0, 1.0])


@pytest.mark.parametrize("make", [
    lambda a: bp.tensor(a),
    lambda a: Tensor.from_data(a, backend=AD),
    lambda a: Tensor.from_data(TensorData(a)),
])
def test_copies_are_not_changed_by_writes_to_the_source(make: object) -> None:
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = make(a)  # type: ignore[operator]
    expected = torch.tensor(a)
    a[0, 0] = 100.0
    np.testing.assert_array_equal(t.to_numpy(), expected.numpy())
    np.testing.assert_array_equal(t.to_numpy(), [[0, 1, 2], [3, 4, 5]])


def test_a_torch_source_is_copied_as_torch_tensor_copies() -> None:
    src = torch.arange(4, dtype=torch.float32)
    t = bp.tensor(src)
    src += 10
    np.testing.assert_array_equal(t.to_numpy(), [0, 1, 2, 3])


def test_from_numpy_shares_both_ways_as_torch_from_numpy() -> None:
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    ta = a.copy()
    t, tt = bp.from_numpy(a), torch.from_numpy(ta)
    view, tview = t[1], tt[1]
    a[0, 0] = ta[0, 0] = 100.0  # the array's writes show in the tensor and its views
    t[1] = 5.0
    tt[1] = 5.0  # the tensor's in-place writes reach the array
    t.add_(1.0)
    tt.add_(1.0)
    np.testing.assert_array_equal(a, ta)
    np.testing.assert_array_equal(t.to_numpy(), tt.numpy())
    np.testing.assert_array_equal(view.to_numpy(), tview.numpy())
    np.testing.assert_array_equal(a, [[101, 2, 3], [6, 6, 6]])
    a[1, 2] = ta[1, 2] = -1.0  # still shared after the writes
    np.testing.assert_array_equal(t.to_numpy(), tt.numpy())


@pytest.mark.parametrize("dtype", [np.float64, np.int16, np.bool_])
def test_clone_of_a_shared_tensor_is_a_copy(dtype: type) -> None:
    a = np.array([1, 0, 3], dtype=dtype)
    t = bp.from_numpy(a)
    c, tc = t.clone(), torch.from_numpy(a.copy()).clone()
    a[...] = 0
    np.testing.assert_array_equal(c.to_numpy(), tc.numpy())
    assert c.dtype is t.dtype


def test_from_numpy_on_autodiff_shares_the_values_saved_for_backward() -> None:
    """torch's from_numpy tensors see the array's writes in backward too (no version bump)."""
    a, ta = np.ones(3), np.ones(3)
    x = bp.from_numpy(a, backend=AD)
    w = Tensor.from_data(np.ones(3), backend=AD).require_grad()
    tx, tw = torch.from_numpy(ta), torch.ones(3, dtype=torch.float64, requires_grad=True)
    loss, tloss = (x * w).sum(), (tx * tw).sum()
    a[:] = ta[:] = 7.0
    tloss.backward()
    grad = w.grad(loss.backward())
    assert grad is not None
    np.testing.assert_array_equal(grad.to_numpy(), tw.grad.numpy())
    with pytest.raises(InvalidArgumentError, match="add_: this tensor shares an array"):
        x.add_(1.0)


def test_from_numpy_refuses_what_cannot_share() -> None:
    a = np.ones(3, dtype=np.float32)
    with pytest.raises(InvalidArgumentError, match="from_numpy: backend fusion<cpu> cannot"):
        bp.from_numpy(a, backend=Fusion(CpuBackend))
    with pytest.raises(DTypeError, match="from_numpy: NumPy dtype >f4"):
        bp.from_numpy(a.astype(">f4"))
    with pytest.raises(InvalidArgumentError, match="expected a NumPy array, got list"):
        bp.from_numpy([1.0])  # type: ignore[arg-type]
    a.flags.writeable = False
    t = bp.from_numpy(a)
    with pytest.raises(InvalidArgumentError, match=r"mul_: .* read-only array"):
        t.mul_(2.0)
    np.testing.assert_array_equal(t.to_numpy(), [1, 1, 1])


def test_from_dlpack_shares_a_torch_tensor_as_torch_from_dlpack() -> None:
    src = torch.zeros(3)
    t = bp.from_dlpack(src)
    src[0] = 4.0
    t[1] = 2.0
    np.testing.assert_array_equal(t.to_numpy(), [4, 2, 0])
    np.testing.assert_array_equal(src.numpy(), [4, 2, 0])


def test_non_native_byte_order_is_copied_to_native() -> None:
    a = np.arange(3, dtype=">f8")
    t = bp.tensor(a)
    assert t.dtype is bp.float64
    np.testing.assert_array_equal(t.to_numpy(), torch.tensor(a.astype("<f8")).numpy())


class RefillingDataset:
    """A dataset that refills one batch buffer on every call, as a streaming reader does."""

    def __init__(self, values: np.ndarray) -> None:
        self.values = values
        self.buffer = np.empty((2,) + values.shape[1:], values.dtype)

    def __len__(self) -> int:
        return len(self.values)

    def get_batch(self, indices: np.ndarray) -> tuple[np.ndarray, ...]:
        """The rows at ``indices``, written into the one buffer."""
        self.buffer[:len(indices)] = self.values[indices]
        return (self.buffer[:len(indices)],)


@pytest.mark.parametrize("dataset", [RefillingDataset, ArrayDataset])
def test_data_loader_batches_keep_their_values(dataset: type) -> None:
    values = np.arange(12, dtype=np.float32).reshape(6, 2)
    batches = [b for (b,) in DataLoader(dataset(values), batch_size=2)]
    got = np.concatenate([b.to_numpy() for b in batches])
    np.testing.assert_array_equal(got, values)
