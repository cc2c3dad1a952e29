"""Property tests of memory ownership (issue 27): a tensor never shares memory with the array
it was made from, for any dtype, shape, layout and byte order, so writing into the array later
never changes it (``torch.tensor``'s contract); ``from_numpy`` always shares, on CpuBackend and
Autodiff(CpuBackend) (``torch.from_numpy``'s)."""

from __future__ import annotations

from collections.abc import Callable

import hypothesis.extra.numpy as hnp
import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from burnpy import Autodiff, Tensor, TensorData, from_numpy, tensor
from burnpy.backend.dtype import DType
from burnpy_cpu import CpuBackend

AD = Autodiff(CpuBackend)
BACKENDS = st.sampled_from([CpuBackend, AD])
DTYPES = st.sampled_from([np.dtype(d) for d in (np.float16, np.float32, np.float64, np.int8,
                                                 np.int16, np.int32, np.int64, np.uint8,
                                                 np.uint32, np.bool_)]
                         + [DType.bfloat16.numpy])
SHAPES = hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4)


@st.composite
def arrays(draw: st.DrawFn, native: bool = False) -> np.ndarray:
    """A C-contiguous, transposed, strided or reversed view of random values of any dtype,
    in either byte order unless ``native``."""
    dtype = draw(DTYPES)
    shape = draw(SHAPES)
    values = draw(hnp.arrays(np.int64, shape, elements=st.integers(0, 100)))
    arr = values.astype(dtype)
    if not native and dtype.itemsize > 1 and dtype != DType.bfloat16.numpy \
            and draw(st.booleans()):
        arr = arr.astype(dtype.newbyteorder("S"))
    layout = draw(st.sampled_from(["c", "transposed", "strided", "reversed"]))
    if layout == "transposed":
        arr = arr.T
    elif layout == "strided" and arr.ndim:
        arr = np.repeat(arr, 2, axis=-1)[..., ::2]
    elif layout == "reversed" and arr.ndim:
        arr = arr[..., ::-1]
    return arr


def _scribble(arr: np.ndarray) -> None:
    """Overwrite every element with a value it did not hold."""
    arr[...] = np.logical_not(arr) if arr.dtype == np.bool_ else arr + arr.dtype.type(1)


COPYING: dict[str, Callable[[np.ndarray, type], Tensor]] = {
    "tensor": lambda a, b: tensor(a, backend=b),
    "from_data": lambda a, b: Tensor.from_data(a, backend=b),
    "from_data of TensorData": lambda a, b: Tensor.from_data(  # wraps a itself when native
        TensorData(np.asarray(a, dtype=a.dtype.newbyteorder("="))), backend=b),
    "from_data with dtype": lambda a, b: Tensor.from_data(a, backend=b, dtype=DType.float32),
}


@given(arr=arrays(), backend=BACKENDS, make=st.sampled_from(sorted(COPYING)))
def test_a_tensor_never_shares_the_memory_of_its_source(arr: np.ndarray, backend: type,
                                                         make: str) -> None:
    t = COPYING[make](arr, backend)
    before = t.to_numpy().copy()
    assert not np.shares_memory(t.to_numpy(), arr)
    _scribble(arr)
    np.testing.assert_array_equal(t.to_numpy(), before)


@given(arr=arrays(native=True), backend=BACKENDS)
def test_from_numpy_always_shares_the_memory_of_its_array(arr: np.ndarray,
                                                         backend: type) -> None:
    t = from_numpy(arr, backend=backend)
    assert t.dtype.numpy == arr.dtype and t.shape == arr.shape
    if arr.size and arr.flags.c_contiguous:
        assert np.shares_memory(t.to_numpy(), arr)
    _scribble(arr)
    np.testing.assert_array_equal(t.to_numpy(), arr)
