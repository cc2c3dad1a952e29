"""``copy_out``: tensors copied out of a memory-mapped safetensors file equal torch's values
(float32 as stored, bfloat16 converted to float32), own their memory, and leave none of the
file's pages resident in the process (read from ``/proc/self/smaps``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

from burnpy.backend.data import TensorData
from burnpy.backend.dtype import DType
from burnpy.backend.errors import DTypeError
from burnpy.record import map_safetensors
from burnpy.record.mapped import CHUNK_BYTES, copy_out, release

SMAPS = Path("/proc/self/smaps")


def _resident_kib(path: Path) -> int:
    """Resident KiB of this process's mappings of ``path`` (0 when none is mapped)."""
    total, inside = 0, False
    for line in SMAPS.read_text().splitlines():
        head = line.split()
        if head and "-" in head[0] and len(head) >= 5:  # a mapping's first line
            inside = line.endswith(str(path))
        elif inside and line.startswith("Rss:"):
            total += int(head[1])
    return total


def _file(tmp_path: Path, dtype: torch.dtype) -> tuple[Path, dict[str, torch.Tensor]]:
    torch.manual_seed(0)
    tensors = {"big": torch.randn(3 * CHUNK_BYTES // 4 + 17, dtype=torch.float32).to(dtype),
               "small": torch.randn(5, 7).to(dtype)}
    path = tmp_path / "model.safetensors"
    save_file(tensors, str(path))
    return path, tensors


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_copy_out_equals_torch_and_owns_its_memory(tmp_path: Path, dtype: torch.dtype) -> None:
    path, tensors = _file(tmp_path, dtype)
    mapped = map_safetensors(path)
    for name, expected in tensors.items():
        out = copy_out(mapped[name], DType.float32)
        assert out.dtype is DType.float32 and out.array.flags.owndata
        np.testing.assert_array_equal(out.array, expected.float().numpy())


@pytest.mark.skipif(not SMAPS.exists(), reason="reads the mapping's residency from /proc")
def test_copy_out_releases_the_mapped_pages(tmp_path: Path) -> None:
    path, _ = _file(tmp_path, torch.float32)
    mapped = map_safetensors(path)
    big = mapped["big"]
    big.array.sum()  # every page read, so resident
    assert _resident_kib(path) * 1024 >= big.array.nbytes * 0.9
    copy_out(big, DType.float32)
    assert _resident_kib(path) * 1024 <= 2 * 4096 + mapped["small"].array.nbytes


@pytest.mark.skipif(not SMAPS.exists(), reason="reads the mapping's residency from /proc")
def test_release_keeps_values_readable(tmp_path: Path) -> None:
    path, _ = _file(tmp_path, torch.float32)
    big = map_safetensors(path)["big"].array
    before = big.copy()
    release(big)
    assert _resident_kib(path) * 1024 < big.nbytes // 2
    np.testing.assert_array_equal(big, before)  # faulted back in from the page cache
    release(before)  # not a mapping: nothing happens


def test_copy_out_refuses_quantized(tmp_path: Path) -> None:
    data = TensorData(np.zeros((2, 2), dtype=np.float32))
    with pytest.raises(DTypeError, match="copy_out"):
        copy_out(data, DType.qint8)


def test_copy_out_transposed_keeps_values_column_major(tmp_path: Path) -> None:
    path, tensors = _file(tmp_path, torch.bfloat16)
    out = copy_out(map_safetensors(path)["small"], DType.float32, transposed=True)
    assert out.array.shape == (5, 7) and out.array.flags.f_contiguous
    np.testing.assert_array_equal(out.array, tensors["small"].float().numpy())
