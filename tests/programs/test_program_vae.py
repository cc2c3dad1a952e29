"""A VAE: the reparameterisation ``mu + eps * exp(logvar / 2)`` with the noise ``eps`` drawn
by NumPy and passed in (so both frameworks see the same), a sigmoid decoder, the summed
binary cross entropy plus the KL term per sample, Adam; five steps, burnpy's port against
torch's."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import torch

import burnpy as bp
import burnpy.nn as nn
import burnpy.nn.functional as F
from burnpy import Tensor, optim
from tests.programs.harness import AD, Snapshot, copy_from, observe, side_by_side

IN, HIDDEN, LATENT, BATCH, STEPS = 8, 6, 2, 4, 5


def _batches() -> list[tuple[np.ndarray, np.ndarray]]:
    """(binary images [BATCH, IN], noise [BATCH, LATENT]) per step."""
    rng = np.random.default_rng(1)
    return [((rng.random((BATCH, IN)) > 0.5).astype(np.float64),
             rng.standard_normal((BATCH, LATENT))) for _ in range(STEPS)]


# ---- the PyTorch program ------------------------------------------------------------------------
class TorchVAE(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.enc = torch.nn.Linear(IN, HIDDEN)
        self.mu = torch.nn.Linear(HIDDEN, LATENT)
        self.logvar = torch.nn.Linear(HIDDEN, LATENT)
        self.dec1 = torch.nn.Linear(LATENT, HIDDEN)
        self.dec2 = torch.nn.Linear(HIDDEN, IN)

    def forward(self, x: torch.Tensor,
                eps: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        h = torch.relu(self.enc(x))
        mu, logvar = self.mu(h), self.logvar(h)
        z = mu + eps * torch.exp(0.5 * logvar)
        return torch.sigmoid(self.dec2(torch.relu(self.dec1(z)))), mu, logvar


def torch_model() -> TorchVAE:
    torch.manual_seed(1)
    return TorchVAE().double()


def torch_run() -> Iterator[Snapshot]:
    model = torch_model()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for step, (x, eps) in enumerate(_batches()):
        x_t = torch.tensor(x)
        opt.zero_grad()
        recon, mu, logvar = model(x_t, torch.tensor(eps))
        bce = torch.nn.functional.binary_cross_entropy(recon, x_t, reduction="sum")
        kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
        loss = (bce + kld) / len(x_t)
        loss.backward()
        opt.step()
        yield observe(f"step {step}", loss=loss, bce=bce, kld=kld, model=model)


# ---- the burnpy port ----------------------------------------------------------------------------
class VAE(nn.Module):
    def __init__(self) -> None:
        self.enc = nn.Linear(IN, HIDDEN)
        self.mu = nn.Linear(HIDDEN, LATENT)
        self.logvar = nn.Linear(HIDDEN, LATENT)
        self.dec1 = nn.Linear(LATENT, HIDDEN)
        self.dec2 = nn.Linear(HIDDEN, IN)

    def forward(self, x: Tensor, eps: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        h = F.relu(self.enc(x))
        mu, logvar = self.mu(h), self.logvar(h)
        z = mu + eps * (0.5 * logvar).exp()
        return F.sigmoid(self.dec2(F.relu(self.dec1(z)))), mu, logvar


def burnpy_run() -> Iterator[Snapshot]:
    model = copy_from(VAE().to(backend=AD, dtype=bp.float64), torch_model())
    opt = optim.Adam(model.parameters(), lr=1e-2)
    for step, (x, eps) in enumerate(_batches()):
        x_t = bp.tensor(x, backend=AD)
        recon, mu, logvar = model(x_t, bp.tensor(eps, backend=AD))
        bce = F.binary_cross_entropy(recon, x_t, reduction="sum")
        kld = -0.5 * (1 + logvar - mu.pow(2) - logvar.exp()).sum()
        loss = (bce + kld) / len(x_t)
        grads = loss.backward()
        opt.step(model, grads)
        yield observe(f"step {step}", loss=loss, bce=bce, kld=kld, model=model)


def test_vae_matches_torch() -> None:
    side_by_side(torch_run(), burnpy_run())
