"""The GPT example trained under ``bp.autocast("cpu", bfloat16)`` tracks the same model under
``torch.autocast("cpu", torch.bfloat16)``: same weights, same batches, AdamW, 50 steps, the
losses agree within 2e-2 relative at every step (bfloat16 keeps 8 bits of mantissa). The
example script trains with ``--amp bf16`` and ``--amp fp16``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from burnpy import Autodiff, Tensor, autocast
from burnpy.examples import gpt
from burnpy.examples.gpt_model import GPT, GPTConfig, decay_groups
from burnpy.optim import AdamW
from burnpy_cpu import CpuBackend

AD = Autodiff(CpuBackend)
CONFIG = GPTConfig(vocab_size=11, block_size=16, n_layer=2, n_head=2, n_embd=32)
STEPS, BATCH, LR, DECAY = 50, 4, 3e-3, 0.1
tf = torch.nn.functional


def _torch_logits(w: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    """The example's GPT in torch's functional ops, reading the burnpy parameter names."""
    b, t = x.shape
    c, heads = CONFIG.n_embd, CONFIG.n_head
    h = w["tok.weight"][x] + w["pos.weight"][torch.arange(t)]
    for i in range(CONFIG.n_layer):
        p = f"blocks.{i}."
        a = tf.layer_norm(h, (c,), w[p + "ln1.weight"], w[p + "ln1.bias"], 1e-5)
        q, k, v = tf.linear(a, w[p + "attn.qkv.weight"], w[p + "attn.qkv.bias"]).chunk(3, -1)
        q, k, v = (z.reshape(b, t, heads, c // heads).transpose(1, 2) for z in (q, k, v))
        y = tf.scaled_dot_product_attention(q, k, v, is_causal=True)
        h = h + tf.linear(y.transpose(1, 2).reshape(b, t, c), w[p + "attn.proj.weight"],
                          w[p + "attn.proj.bias"])
        m = tf.layer_norm(h, (c,), w[p + "ln2.weight"], w[p + "ln2.bias"], 1e-5)
        m = tf.gelu(tf.linear(m, w[p + "fc.weight"], w[p + "fc.bias"]))
        h = h + tf.linear(m, w[p + "proj.weight"], w[p + "proj.bias"])
    h = tf.layer_norm(h, (c,), w["ln_f.weight"], w["ln_f.bias"], 1e-5)
    return tf.linear(h, w["tok.weight"])


def _batches() -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(0)
    stream = np.tile(rng.integers(0, CONFIG.vocab_size, 40), 20)  # a learnable pattern
    out = []
    for _ in range(STEPS):
        start = rng.integers(0, stream.size - CONFIG.block_size - 1, BATCH)
        out.append((np.stack([stream[s:s + CONFIG.block_size] for s in start]),
                    np.stack([stream[s + 1:s + CONFIG.block_size + 1] for s in start])))
    return out


def test_gpt_losses_track_torch_autocast_for_50_steps() -> None:
    CpuBackend.seed(CpuBackend.default_device(), 0)
    model = GPT(CONFIG, backend=AD)
    w = {n: torch.from_numpy(p.to_numpy().copy()).requires_grad_()
         for n, p in model.named_parameters()}
    groups: list[dict[str, Any]] = [
        {"params": [p for p in w.values() if p.ndim >= 2], "weight_decay": DECAY},
        {"params": [p for p in w.values() if p.ndim < 2], "weight_decay": 0.0}]
    torch_opt = torch.optim.AdamW(groups, lr=LR)
    opt = AdamW(decay_groups(model, DECAY), lr=LR)
    ours, theirs = [], []
    for x, y in _batches():
        with autocast("cpu"):
            loss = model.loss(Tensor.from_data(x, backend=AD), Tensor.from_data(y, backend=AD))
        opt.step(model, loss.backward())
        ours.append(loss.item())
        with torch.autocast("cpu", torch.bfloat16):
            logits = _torch_logits(w, torch.from_numpy(x))
            want = tf.cross_entropy(logits.reshape(-1, CONFIG.vocab_size),
                                    torch.from_numpy(y).reshape(-1))
        torch_opt.zero_grad()
        want.backward()
        torch_opt.step()
        theirs.append(want.item())
    np.testing.assert_allclose(ours, theirs, rtol=2e-2)
    assert ours[-1] < 0.8 * ours[0]  # it learns


@pytest.mark.parametrize("amp", ["bf16", "fp16"])
def test_example_trains_with_amp(amp: str, tmp_path: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert gpt.main(["--short", "--no-progress", "--steps", "6", "--eval-every", "3",
                     "--sample-tokens", "5", "--amp", amp, "--out", str(tmp_path)]) == 0
    assert "perplexity" in capsys.readouterr().out
