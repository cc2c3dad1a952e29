"""``from_pretrained``'s memory: loading an 80 MB float32 GPT-2 checkpoint (transformers'
``save_pretrained``) in a fresh process grows its peak resident memory by about the
parameters' size. The bound, 1.5x, leaves room for allocator noise yet fails a loader that
initializes random weights before overwriting them, or keeps the file's mapped pages resident
beside the copies (2x or more). ``benchmarks/load_memory.py`` measures the 500 MB case."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
import transformers as tf

CHILD = """
import sys
import burnpy.models as bpm
from burnpy_cpu import CpuBackend

def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024

before = hwm()
model = bpm.from_pretrained(sys.argv[1], backend=CpuBackend)
grown = hwm() - before
print(grown, sum(p.numel() * p.dtype.itemsize for p in model.parameters()))
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads VmHWM from /proc")
def test_peak_resident_growth_is_about_the_parameters(tmp_path: Path) -> None:
    torch.manual_seed(0)
    config = tf.GPT2Config(vocab_size=16384, n_positions=512, n_embd=512, n_layer=4, n_head=8)
    tf.GPT2LMHeadModel(config).save_pretrained(tmp_path)
    size = (tmp_path / "model.safetensors").stat().st_size
    out = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path)], check=True,
                         capture_output=True, text=True)
    grown, params = map(int, out.stdout.split())
    assert abs(params - size) < 0.01 * size  # the file is the float32 parameters
    assert grown <= 1.5 * params, f"peak grew {grown / params:.2f}x the parameters"
