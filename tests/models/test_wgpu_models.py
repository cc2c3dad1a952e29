"""GPT-2 and Llama checkpoints on WebGPU (the CPU software adapter in CI): float32 outputs
of a left-padded batch within 1e-4 of transformers', and greedy ``generate`` with the KV cache
token for token (ids as int32, the int dtype WebGPU stores)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import burnpy.models as bpm
from burnpy.tensor import Tensor
from burnpy_wgpu import WgpuBackend
from tests.models.test_transformers_parity import _compare_outputs, _ids, _write

NAMES = ["gpt2_untied", "llama3_bias_untied", "llama_gqa_tied"]


@pytest.mark.parametrize("name", NAMES)
def test_padded_outputs_match_transformers_on_webgpu(name: str, tmp_path: Path) -> None:
    hf = _write(name, tmp_path)
    model = bpm.from_pretrained(tmp_path, backend=WgpuBackend)
    ids, mask = _ids(hf.config.vocab_size)
    with torch.no_grad():
        theirs = hf(torch.from_numpy(ids), attention_mask=torch.from_numpy(mask),
                    output_hidden_states=True)
    ours = model(Tensor.from_data(ids.astype(np.int32), backend=WgpuBackend),
                 attention_mask=Tensor.from_data(mask.astype(np.int32), backend=WgpuBackend),
                 output_hidden_states=True)
    _compare_outputs(ours, theirs, mask, 1e-4)


@pytest.mark.parametrize("name", NAMES)
def test_greedy_generate_matches_transformers_on_webgpu(name: str, tmp_path: Path) -> None:
    hf = _write(name, tmp_path)
    ids, mask = _ids(hf.config.vocab_size)
    with torch.no_grad():
        want = hf.generate(torch.from_numpy(ids), attention_mask=torch.from_numpy(mask),
                           max_new_tokens=9, do_sample=False, pad_token_id=0).numpy()
    model = bpm.from_pretrained(tmp_path, backend=WgpuBackend)
    got = model.generate(Tensor.from_data(ids.astype(np.int32), backend=WgpuBackend),
                         attention_mask=mask.astype(np.int32), max_new_tokens=9,
                         do_sample=False, pad_token_id=0)
    np.testing.assert_array_equal(got.into_data().array, want)
    # host ids (NumPy int64) come back in the backend's int dtype
    got = model.generate(ids, attention_mask=mask, max_new_tokens=2, do_sample=False,
                         pad_token_id=0)
    assert got.dtype == WgpuBackend.int_dtype
    np.testing.assert_array_equal(got.into_data().array, want[:, :ids.shape[1] + 2])
