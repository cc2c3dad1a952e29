"""The load layout of projection weights (``PreTrainedModel.column_major_weights``): each is
stored so that a decoding step's one-row product reads it fastest (wide operands row-major,
tall ones column-major), with the checkpoint's values, and the model still matches
transformers' logits."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import transformers as tf

import burnpy.models as bpm
from burnpy.tensor import Tensor
from burnpy_cpu import CpuBackend

CONFIGS: dict[str, Any] = {
    "gpt2": lambda: tf.GPT2LMHeadModel(tf.GPT2Config(
        vocab_size=61, n_positions=32, n_embd=16, n_layer=2, n_head=4)),
    "gpt2_untied": lambda: tf.GPT2LMHeadModel(tf.GPT2Config(
        vocab_size=53, n_positions=32, n_embd=24, n_layer=1, n_head=3, n_inner=12,
        tie_word_embeddings=False)),
    "llama": lambda: tf.LlamaForCausalLM(tf.LlamaConfig(
        vocab_size=61, hidden_size=16, intermediate_size=24, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32)),
}


def _operand(name: str, module: Any, array: np.ndarray) -> np.ndarray | None:
    """The ``[K, N]`` operand of the one-row product that weight ``name`` takes part in, as
    a view of the stored array (a tied embedding is checked as its head's weight); None for
    weights that are no projection."""
    if not name.endswith(".weight") or array.ndim != 2:
        return None
    owner = module.get_submodule(name.removesuffix(".weight"))
    if isinstance(owner, tf.pytorch_utils.Conv1D):
        return array
    if isinstance(owner, torch.nn.Linear):
        return array.T
    return None


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_projection_weights_take_the_one_row_layout(name: str, tmp_path: Path) -> None:
    torch.manual_seed(0)
    theirs = CONFIGS[name]().eval()
    theirs.save_pretrained(tmp_path)
    ours = bpm.from_pretrained(tmp_path, backend=CpuBackend)
    state = ours.state_dict()
    checked = 0
    for key, value in theirs.state_dict().items():
        if key not in state:
            continue
        stored = state[key].into_data().array
        np.testing.assert_array_equal(stored, value.numpy(), err_msg=key)
        operand = _operand(key, theirs, state[key].primitive)
        if operand is None:
            continue
        k, n = operand.shape
        want = "C" if k <= n else "F"
        got = "C" if operand.flags.c_contiguous else "F" if operand.flags.f_contiguous else "-"
        assert got == want, f"{name} {key}: operand [{k}, {n}] stored {got}, expected {want}"
        checked += 1
    assert checked >= 4
    ids = np.random.default_rng(1).integers(0, 50, (1, 6))
    with torch.no_grad():
        expected = theirs(torch.from_numpy(ids)).logits.numpy()
    logits = ours(Tensor.from_data(ids, backend=CpuBackend)).logits.into_data().array
    np.testing.assert_allclose(logits, expected, rtol=1e-4, atol=1e-5)
