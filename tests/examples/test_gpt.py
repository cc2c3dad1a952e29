"""The GPT example, ``python -m burnpy.examples.gpt``: short run, resume, KV cache, torch parity."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from burnpy import jit
from burnpy.examples import gpt
from burnpy.examples.gpt_model import GPT, GPTConfig
from burnpy.jit import Compiled
from burnpy.tensor import Tensor
from burnpy.train.plot import matplotlib_available
from burnpy_cpu import CpuBackend

ROOT = Path(__file__).resolve().parents[2]
SHORT = ["--short", "--no-progress", "--steps", "12", "--eval-every", "4"]


def test_short_run_trains_checkpoints_plots_and_samples(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    result = gpt.run(gpt.parse_args([*SHORT, "--out", str(tmp_path)]))
    out = capsys.readouterr().out
    assert (tmp_path / "checkpoints" / gpt.CHECKPOINT).is_file()
    assert (tmp_path / "loss.png").is_file() == matplotlib_available()
    assert [r["step"] for r in result.history] == [0, 4, 8, 12]
    assert result.history[-1]["valid_loss"] < result.history[0]["valid_loss"]
    assert "perplexity " in out and "tokens/s" in out
    assert result.sample.startswith("The ") and len(result.sample) == len("The ") + 40
    assert result.tokens_per_s > 0


def test_resume_continues_from_the_checkpoint_step(tmp_path: Path) -> None:
    args = [*SHORT, "--steps", "8", "--eval-every", "4"]
    full = gpt.run(gpt.parse_args([*args, "--out", str(tmp_path / "full")]))
    part = ["--out", str(tmp_path / "part")]
    stopped = gpt.run(gpt.parse_args([*args, *part, "--stop-at", "4"]))
    assert [r["step"] for r in stopped.history] == [0, 4]
    resumed = gpt.run(gpt.parse_args([*args, *part, "--resume"]))
    assert resumed.start_step == 4
    # The batches depend only on (seed, step) and the state is restored: steps 5-8 replay.
    np.testing.assert_allclose([r["valid_loss"] for r in resumed.history],
                               [r["valid_loss"] for r in full.history], rtol=1e-6)


def test_compile_gives_the_eager_losses_and_sample(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """``--compile``: the step (AdamW, clipping, the warm-up + cosine rate) recorded once and
    replayed gives the eager run's training and validation losses and sample, bit for bit."""
    compile_ = jit.compile
    compiled: list[Compiled] = []

    def keep(fn: object) -> Compiled:
        compiled.append(compile_(fn))  # type: ignore[arg-type]
        return compiled[-1]

    monkeypatch.setattr(jit, "compile", keep)
    eager = gpt.run(gpt.parse_args([*SHORT, "--out", str(tmp_path / "eager")]))
    assert not compiled
    ours = gpt.run(gpt.parse_args([*SHORT, "--out", str(tmp_path / "compiled"), "--compile"]))
    assert ours.history == eager.history and ours.sample == eager.sample
    info = compiled[0].cache_info()
    assert info.replays == 10 and info.eager_signatures == 0  # 12 steps: eager, record, replays


def test_webgpu_trains(tmp_path: Path) -> None:
    """``--backend wgpu`` runs (no int64 there: the character ids are int32) and learns; its
    steps equal the CPU's within rounding in tests/wgpu/test_wgpu_compile.py (here each backend
    draws its own initial weights and dropout masks)."""
    args = [*SHORT, "--steps", "6", "--eval-every", "3"]
    result = gpt.run(gpt.parse_args([*args, "--out", str(tmp_path), "--backend", "wgpu"]))
    losses = [r["valid_loss"] for r in result.history]
    assert [r["step"] for r in result.history] == [0, 3, 6]
    assert np.isfinite(losses).all() and losses[-1] < losses[0] - 0.05
    assert result.sample.startswith("The ")


def test_resume_refuses_another_set_up(tmp_path: Path) -> None:
    gpt.run(gpt.parse_args([*SHORT, "--out", str(tmp_path), "--steps", "4"]))
    with pytest.raises(SystemExit, match=r"--resume: .* another set-up"):
        gpt.run(gpt.parse_args([*SHORT, "--out", str(tmp_path), "--steps", "4", "--seed", "1",
                                "--resume"]))


def _model(seed: int = 0) -> GPT:
    CpuBackend.seed(CpuBackend.default_device(), seed)
    return GPT(GPTConfig(vocab_size=11, block_size=12, n_layer=2, n_head=2, n_embd=8),
               backend=CpuBackend, dtype="float64")


def test_kv_cache_gives_the_logits_of_the_full_sequence() -> None:
    model = _model()
    ids = gpt.generate(model, [1, 2, 3], 8, temperature=0.0)
    full = model(Tensor.from_data(np.array([ids]), backend=CpuBackend)).to_numpy()[0]
    cache = model.new_cache()
    steps = [model(Tensor.from_data(np.array([ids[:3]]), backend=CpuBackend), cache)]
    for token in ids[3:]:
        steps.append(model(Tensor.from_data(np.array([[token]]), backend=CpuBackend), cache))
    cached = np.concatenate([s.to_numpy()[0] for s in steps])
    assert cached.dtype == np.float64 and cache.length == len(ids)
    np.testing.assert_allclose(cached, full, rtol=0, atol=1e-13)  # rounding only
    # Greedy decoding picks each next token from these logits.
    assert ids[3:] == [int(np.argmax(row)) for row in full[2:-1]]


def test_forward_and_loss_match_torch_in_float64() -> None:
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    model = _model(3)
    w = {n: torch.from_numpy(p.to_numpy()) for n, p in model.named_parameters()}
    rng = np.random.default_rng(0)
    idx, targets = rng.integers(0, 11, (3, 12)), rng.integers(0, 11, (3, 12))

    def reference(x: torch.Tensor) -> torch.Tensor:
        t = x.shape[1]
        h = w["tok.weight"][x] + w["pos.weight"][torch.arange(t)]
        for i in range(2):
            p = f"blocks.{i}."
            a = tf.layer_norm(h, (8,), w[p + "ln1.weight"], w[p + "ln1.bias"], 1e-5)
            q, k, v = tf.linear(a, w[p + "attn.qkv.weight"], w[p + "attn.qkv.bias"]).chunk(3, -1)
            q, k, v = (z.reshape(3, t, 2, 4).transpose(1, 2) for z in (q, k, v))
            y = tf.scaled_dot_product_attention(q, k, v, is_causal=True)
            y = y.transpose(1, 2).reshape(3, t, 8)
            h = h + tf.linear(y, w[p + "attn.proj.weight"], w[p + "attn.proj.bias"])
            m = tf.layer_norm(h, (8,), w[p + "ln2.weight"], w[p + "ln2.bias"], 1e-5)
            m = tf.gelu(tf.linear(m, w[p + "fc.weight"], w[p + "fc.bias"]))
            h = h + tf.linear(m, w[p + "proj.weight"], w[p + "proj.bias"])
        h = tf.layer_norm(h, (8,), w["ln_f.weight"], w["ln_f.bias"], 1e-5)
        return tf.linear(h, w["tok.weight"])

    expected = reference(torch.from_numpy(idx))
    x = Tensor.from_data(idx, backend=CpuBackend)
    np.testing.assert_allclose(model(x).to_numpy(), expected.numpy(), rtol=0, atol=1e-10)
    loss = tf.cross_entropy(expected.reshape(-1, 11), torch.from_numpy(targets).reshape(-1))
    ours = model.loss(x, Tensor.from_data(targets, backend=CpuBackend))
    assert abs(ours.item() - loss.item()) < 1e-10


def test_example_runs_as_a_module(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "burnpy.examples.gpt", *SHORT,
                             "--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
                            timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert "perplexity" in result.stdout and "sample (" in result.stdout
