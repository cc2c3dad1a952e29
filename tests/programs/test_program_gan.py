"""A GAN on 2-d points, ``nn.Sequential`` generator and discriminator, BCE-with-logits plus
feature matching through the discriminator's slice ``disc[:-1]``: trained with two Adams (one
per net), then with one Adam over both, ``Adam(list(gen.parameters()) +
list(disc.parameters()))`` (both nets name their layers ``0`` and ``2``), the discriminator
frozen for the generator's step so that one ``opt.step()`` leaves it alone, as torch users do;
four steps each, burnpy's port against torch's after every update."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
import torch

import burnpy as bp
import burnpy.nn as nn
import burnpy.nn.functional as F
from burnpy import Tensor, optim
from tests.programs.harness import AD, Snapshot, copy_from, observe, side_by_side

NOISE, HIDDEN, BATCH, STEPS = 3, 8, 6, 4
BETAS = (0.5, 0.999)


def _batches() -> list[tuple[np.ndarray, np.ndarray]]:
    """(real points [BATCH, 2], generator noise [BATCH, NOISE]) per step."""
    rng = np.random.default_rng(2)
    return [(rng.normal([2.0, -1.0], 0.5, (BATCH, 2)), rng.standard_normal((BATCH, NOISE)))
            for _ in range(STEPS)]


# ---- the PyTorch program ------------------------------------------------------------------------
def torch_models() -> tuple[torch.nn.Sequential, torch.nn.Sequential]:
    torch.manual_seed(2)
    gen = torch.nn.Sequential(torch.nn.Linear(NOISE, HIDDEN), torch.nn.ReLU(),
                            torch.nn.Linear(HIDDEN, 2)).double()
    disc = torch.nn.Sequential(torch.nn.Linear(2, HIDDEN), torch.nn.LeakyReLU(0.2),
                            torch.nn.Linear(HIDDEN, 1)).double()
    return gen, disc


def torch_run(one_optimizer: bool) -> Iterator[Snapshot]:
    gen, disc = torch_models()
    criterion = torch.nn.BCEWithLogitsLoss()
    if one_optimizer:
        opt = torch.optim.Adam(list(gen.parameters()) + list(disc.parameters()), lr=1e-3,
                               betas=BETAS)
        opt_g = opt_d = opt
    else:
        opt_g = torch.optim.Adam(gen.parameters(), lr=2e-3, betas=BETAS)
        opt_d = torch.optim.Adam(disc.parameters(), lr=1e-3, betas=BETAS)
    ones = torch.ones(BATCH, 1, dtype=torch.float64)
    zeros = torch.zeros(BATCH, 1, dtype=torch.float64)
    for step, (real_np, z_np) in enumerate(_batches()):
        real = torch.tensor(real_np)
        fake = gen(torch.tensor(z_np))
        disc.requires_grad_(True)
        opt_d.zero_grad()
        d_loss = criterion(disc(real), ones) + criterion(disc(fake.detach()), zeros)
        d_loss.backward()
        opt_d.step()
        yield observe(f"step {step}: discriminator", d_loss=d_loss, gen=gen, disc=disc)
        disc.requires_grad_(False)  # with one optimizer, opt.step() must leave disc alone
        opt_g.zero_grad()
        features = torch.nn.functional.mse_loss(disc[:-1](fake).mean(0),
                                                disc[:-1](real).mean(0))
        g_loss = criterion(disc(fake), ones) + features
        g_loss.backward()
        opt_g.step()
        yield observe(f"step {step}: generator", g_loss=g_loss, gen=gen, disc=disc)


# ---- the burnpy port ----------------------------------------------------------------------------
def set_requires_grad(module: nn.Module, flag: bool) -> None:
    """torch's ``module.requires_grad_(flag)``."""
    for p in module.parameters():
        p.requires_grad_(flag)


def burnpy_run(one_optimizer: bool) -> Iterator[Snapshot]:
    t_gen, t_disc = torch_models()
    gen = copy_from(nn.Sequential(nn.Linear(NOISE, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, 2))
                    .to(backend=AD, dtype=bp.float64), t_gen)
    disc = copy_from(nn.Sequential(nn.Linear(2, HIDDEN), nn.LeakyReLU(0.2),
                                   nn.Linear(HIDDEN, 1)).to(backend=AD, dtype=bp.float64), t_disc)
    criterion = nn.BCEWithLogitsLoss()
    if one_optimizer:
        opt = optim.Adam(list(gen.parameters()) + list(disc.parameters()), lr=1e-3, betas=BETAS)
        opt_g = opt_d = opt
    else:
        opt_g = optim.Adam(gen.parameters(), lr=2e-3, betas=BETAS)
        opt_d = optim.Adam(disc.parameters(), lr=1e-3, betas=BETAS)
    # torch's ``opt.step()`` updates every parameter of the optimizer that has a gradient;
    # burnpy's steps a module's: with one optimizer, step both nets (the frozen one has none)
    nets_d, nets_g = ((gen, disc), (gen, disc)) if one_optimizer else ((disc,), (gen,))

    ones = Tensor.ones((BATCH, 1), backend=AD, dtype=bp.float64)
    zeros = Tensor.zeros((BATCH, 1), backend=AD, dtype=bp.float64)
    for step, (real_np, z_np) in enumerate(_batches()):
        real = bp.tensor(real_np, backend=AD)
        fake = gen(bp.tensor(z_np, backend=AD))
        set_requires_grad(disc, True)
        d_loss = criterion(disc(real), ones) + criterion(disc(fake.detach()), zeros)
        grads = d_loss.backward()
        for net in nets_d:
            opt_d.step(net, grads)
        yield observe(f"step {step}: discriminator", d_loss=d_loss, gen=gen, disc=disc)
        set_requires_grad(disc, False)
        features = F.mse_loss(disc[:-1](fake).mean(0), disc[:-1](real).mean(0))
        g_loss = criterion(disc(fake), ones) + features
        grads = g_loss.backward()
        for net in nets_g:
            opt_g.step(net, grads)
        yield observe(f"step {step}: generator", g_loss=g_loss, gen=gen, disc=disc)


@pytest.mark.parametrize("one_optimizer", [False, True], ids=["two-optimizers", "one-optimizer"])
def test_gan_matches_torch(one_optimizer: bool) -> None:
    side_by_side(torch_run(one_optimizer), burnpy_run(one_optimizer))
