"""Benchmark: peak resident memory while ``bp.models.from_pretrained`` loads a checkpoint.

Writes a GPT-2 checkpoint at its 124M configuration (about 500 MB in float32; tied output
layer, so ``lm_head.weight`` is not stored) in transformers' ``save_pretrained`` layout
(``config.json`` and ``model.safetensors`` with ``transformer.*`` keys), once as float32 and
once as bfloat16, with random values. Each load runs in a fresh Python process that imports
burnpy first, then reads its resident high-water mark (``VmHWM`` of ``/proc/self/status``)
before and after ``from_pretrained(dir, backend=CpuBackend)`` into float32 parameters.
Reports the growth in peak resident memory over the size of the float32 parameters the
model ends with (the file size for the float32 file): the target is at most 1.3x, which a
loader that builds random initial weights and then copies the file over them (2x), or that
keeps the file's mapped pages resident beside the copies (2x), misses.
Run: ``.venv/bin/python benchmarks/load_memory.py [--dir /tmp/burnpy-load-memory]``.
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

#: GPT-2 at its 124M configuration (transformers' defaults).
CONFIG: dict[str, Any] = {
    "model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "vocab_size": 50257,
    "n_positions": 1024, "n_embd": 768, "n_layer": 12, "n_head": 12, "tie_word_embeddings": True}

_TAGS = {"float32": ("F32", np.float32), "bfloat16": ("BF16", ml_dtypes.bfloat16)}


def gpt2_shapes(config: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    """transformers' ``GPT2LMHeadModel`` state-dict names and shapes (tied head not stored)."""
    e, v, p = int(config["n_embd"]), int(config["vocab_size"]), int(config["n_positions"])
    shapes: dict[str, tuple[int, ...]] = {"transformer.wte.weight": (v, e),
                                          "transformer.wpe.weight": (p, e)}
    for i in range(int(config["n_layer"])):
        h = f"transformer.h.{i}."
        shapes |= {h + "ln_1.weight": (e,), h + "ln_1.bias": (e,),
                   h + "attn.c_attn.weight": (e, 3 * e), h + "attn.c_attn.bias": (3 * e,),
                   h + "attn.c_proj.weight": (e, e), h + "attn.c_proj.bias": (e,),
                   h + "ln_2.weight": (e,), h + "ln_2.bias": (e,),
                   h + "mlp.c_fc.weight": (e, 4 * e), h + "mlp.c_fc.bias": (4 * e,),
                   h + "mlp.c_proj.weight": (4 * e, e), h + "mlp.c_proj.bias": (e,)}
    return shapes | {"transformer.ln_f.weight": (e,), "transformer.ln_f.bias": (e,)}


def write_checkpoint(directory: Path, dtype: str) -> int:
    """Write ``config.json`` and ``model.safetensors`` of random values in ``dtype`` (one
    tensor in memory at a time); returns the safetensors file's size in bytes."""
    tag, np_dtype = _TAGS[dtype]
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps(CONFIG))
    shapes = gpt2_shapes(CONFIG)
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    offset, itemsize = 0, np.dtype(np_dtype).itemsize
    for name, shape in shapes.items():
        size = int(np.prod(shape)) * itemsize
        header[name] = {"dtype": tag, "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    rng = np.random.default_rng(0)
    path = directory / "model.safetensors"
    with path.open("wb") as fh:
        fh.write(struct.pack("<Q", len(raw)) + raw)
        for shape in shapes.values():
            fh.write((0.02 * rng.standard_normal(shape, dtype=np.float32)).astype(np_dtype)
                     .tobytes())
    return path.stat().st_size


_CHILD = """
import sys
import burnpy.models as bpm
from burnpy_cpu import CpuBackend

def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/self/status")

before = hwm()
model = bpm.from_pretrained(sys.argv[1], backend=CpuBackend)
after = hwm()
params = sum(p.numel() * p.dtype.itemsize for p in model.parameters())
print(before, after, params)
"""


def measure(directory: Path) -> tuple[int, int]:
    """(peak resident growth during the load, bytes of the loaded parameters), measured in a
    fresh process."""
    out = subprocess.run([sys.executable, "-c", _CHILD, str(directory)], check=True,
                         capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    before, after, params = map(int, out.stdout.split())
    return after - before, params


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--dir", type=Path, default=None,
                   help="where to write the checkpoints (a temporary folder by default)")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="burnpy-load-memory-") as tmp:
        root = args.dir or Path(tmp)
        print("GPT-2 124M checkpoint -> from_pretrained(backend=CpuBackend), float32 "
              "parameters; peak resident growth (VmHWM) in a fresh process")
        for dtype in ("float32", "bfloat16"):
            directory = root / f"gpt2-{dtype}"
            size = write_checkpoint(directory, dtype)
            grown, params = measure(directory)
            print(f"  {dtype:8s} file {size / 2**20:7.1f} MiB  parameters {params / 2**20:7.1f} MiB"
                  f"  peak growth {grown / 2**20:7.1f} MiB = {grown / params:.2f}x the float32 "
                  "parameters (target <= 1.3x)")


if __name__ == "__main__":
    main()
