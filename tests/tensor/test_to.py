"""``Tensor.to`` takes torch's forms: a dtype, a device, both, another tensor, the keywords
``dtype=``/``device=``/``copy=``, and a device's name; a device the backend lacks is a clear
error."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import burnpy as bp
from burnpy import Tensor


@pytest.mark.parametrize(("args", "kwargs"), [
    (("float16",), {}),
    ((), {"dtype": "float64"}),
    (("cpu",), {}),
    (("cpu", "int64"), {}),
    ((), {"device": "cpu", "dtype": "int32"}),
    ((), {"copy": True}),
    ((), {}),
])
def test_to_agrees_with_torch(args: tuple[str, ...], kwargs: dict[str, object]) -> None:
    values = np.array([1.5, -2.25, 3.0], np.float32)
    ours = Tensor.from_data(values)
    theirs = torch.from_numpy(values)

    def mapped(name: object) -> object:
        if name == "cpu":
            return str(ours.device) if isinstance(name, str) else name
        return name

    def torch_mapped(name: object) -> object:
        return getattr(torch, name) if isinstance(name, str) and name != "cpu" else name

    got = ours.to(*map(mapped, args), **{k: mapped(v) for k, v in kwargs.items()})
    want = theirs.to(*map(torch_mapped, args), **{k: torch_mapped(v) for k, v in kwargs.items()})
    assert str(got.dtype).removeprefix("bp.") == str(want.dtype).removeprefix("torch.")
    np.testing.assert_array_equal(got.to_numpy(), want.numpy())
    # torch returns the tensor itself when nothing changes, and a new one with copy=True.
    assert (got is ours) == (want is theirs)


def test_to_another_tensor_takes_its_dtype_and_device() -> None:
    x = Tensor.from_data(np.arange(3.0))
    like = Tensor.from_data(np.array([1], np.int32))
    got = x.to(like)
    assert got.dtype is bp.int32 and got.device == like.device
    np.testing.assert_array_equal(got.to_numpy(), [0, 1, 2])


def test_a_device_the_backend_lacks_is_named_in_the_error() -> None:
    x = Tensor.from_data([1.0])
    with pytest.raises(bp.DeviceMismatchError, match=r"to: no device named 'cuda' on backend "
                       r"cpu \(devices: \['cpu:0'\]\)"):
        x.to("cuda")
    with pytest.raises(bp.DeviceMismatchError):
        x.to(device="cuda:1")
