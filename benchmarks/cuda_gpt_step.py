"""Benchmark: the GPT example's training step on the GPU, burnpy on ``Autodiff(CudaBackend)`` and
on ``Autodiff(Fusion(CudaBackend))`` against the same model in torch CUDA eager.

``benchmarks/gpt_step.py``'s model, data and step (forward, mean cross entropy, backward,
gradient-norm clipping, AdamW with decay on matrices only) at the example's default shape,
float32, all three starting from the same weights; their losses over the first steps are
checked to agree. Steps are timed in alternating rounds, the device drained before each timer
is read; medians. Run: ``.venv/bin/python benchmarks/cuda_gpt_step.py [--rounds 15]``.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
from cuda_timing import alternate_synced, fmt, record, require_gpu
from gpt_step import BATCH, VOCAB, BurnpyStep, TorchStep, batches, torch_twin

from burnpy.autodiff import Autodiff
from burnpy.examples.gpt_model import GPT, GPTConfig
from burnpy.fusion import Fusion
from burnpy_cuda import CudaBackend

STEPS_PER_SAMPLE = 10


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=15)
    args = p.parse_args()
    require_gpu("cuda_gpt_step")
    device = CudaBackend.default_device()
    config = GPTConfig(VOCAB)
    data = batches(config, 8)
    plain = GPT(config, backend=Autodiff(CudaBackend))
    fused = GPT(config, backend=Autodiff(Fusion(CudaBackend)))
    fused.load_state_dict({name: t.to_numpy() for name, t in plain.state_dict().items()})
    steps = {"burnpy Autodiff(CudaBackend)": BurnpyStep(plain, data, Autodiff(CudaBackend)),
             "burnpy Autodiff(Fusion(CudaBackend))": BurnpyStep(fused, data,
                                                                Autodiff(Fusion(CudaBackend))),
             "torch CUDA eager": TorchStep(torch_twin(plain), data, "cuda")}
    losses = {name: [step() for _ in range(3)] for name, step in steps.items()}
    for name, values in losses.items():
        np.testing.assert_allclose(values, losses["torch CUDA eager"], rtol=1e-3,
                                   err_msg=f"{name} diverges from torch")

    def burnpy_sync() -> None:
        CudaBackend.sync(device)

    med = alternate_synced({
        name: (step.step, torch.cuda.synchronize if name.startswith("torch") else burnpy_sync)
        for name, step in steps.items()}, STEPS_PER_SAMPLE, args.rounds)
    theirs = med["torch CUDA eager"]
    print(f"GPT {config.n_layer} layers, {config.n_head} heads, width {config.n_embd}, context "
          f"{config.block_size}, batch {BATCH}; float32 AdamW + clipping on "
          f"{torch.cuda.get_device_name()}; median of {args.rounds} alternating samples of "
          f"{STEPS_PER_SAMPLE} steps (losses agree for 3 steps)")
    for name, seconds in med.items():
        print(f"  {name:38s} {fmt(seconds)}/step  {seconds / theirs:5.2f}x torch's time")
    record("cuda_gpt_step", seconds_per_step=med,
           ratio_plain=med["burnpy Autodiff(CudaBackend)"] / theirs,
           ratio_fused=med["burnpy Autodiff(Fusion(CudaBackend))"] / theirs)


if __name__ == "__main__":
    main()
