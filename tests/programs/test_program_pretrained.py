"""Fine-tuning from pretrained weights in torch's order: build the model and its optimizer,
cast the model to float64, then load the weights from a live ``torch_model.state_dict()``.
The torch model the weights came from keeps training with its own optimizer (in place, into
the tensors its state dict handed out) while burnpy's model trains; burnpy's model must hold
its own copy and its optimizer must still hold its parameters. SGD with Nesterov momentum;
four steps, burnpy's port against torch's."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import torch

import burnpy as bp
import burnpy.nn as nn
import burnpy.nn.functional as F
from burnpy import Tensor, optim
from tests.programs.harness import AD, Snapshot, observe, side_by_side

IN, HIDDEN, OUT, BATCH, STEPS = 4, 6, 3, 5, 4

rng = np.random.default_rng(8)
DATA = [(rng.standard_normal((BATCH, IN)), rng.integers(0, OUT, BATCH)) for _ in range(STEPS)]


class Pretrained:
    """A torch model someone else is still training, one SGD step at a time."""

    def __init__(self) -> None:
        torch.manual_seed(8)
        self.model = TorchNet().double()
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.5)

    def train_step(self) -> None:
        self.opt.zero_grad()
        self.model(torch.ones(2, IN, dtype=torch.float64)).square().sum().backward()
        self.opt.step()


# ---- the PyTorch program ------------------------------------------------------------------------
class TorchNet(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(IN, HIDDEN)
        self.norm = torch.nn.LayerNorm(HIDDEN)
        self.fc2 = torch.nn.Linear(HIDDEN, OUT)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.norm(self.fc1(x))))


def torch_run(pretrained: Pretrained) -> Iterator[Snapshot]:
    torch.manual_seed(80)
    model = TorchNet()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)
    model.double()
    model.load_state_dict(pretrained.model.state_dict())
    for step, (x, y) in enumerate(DATA):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(torch.tensor(x)), torch.tensor(y))
        loss.backward()
        opt.step()
        yield observe(f"step {step}", loss=loss, model=model)


# ---- the burnpy port ----------------------------------------------------------------------------
class Net(nn.Module):
    def __init__(self) -> None:
        self.fc1 = nn.Linear(IN, HIDDEN)
        self.norm = nn.LayerNorm(HIDDEN)
        self.fc2 = nn.Linear(HIDDEN, OUT)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc2(F.relu(self.norm(self.fc1(x))))


def burnpy_run(pretrained: Pretrained) -> Iterator[Snapshot]:
    model = Net().to(backend=AD)
    opt = optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)
    model.to(dtype=bp.float64)
    model.load_state_dict(pretrained.model.state_dict())
    for step, (x, y) in enumerate(DATA):
        pretrained.train_step()  # torch trains its own model on; ours must not follow
        loss = F.cross_entropy(model(bp.tensor(x, backend=AD)), bp.tensor(y, backend=AD))
        opt.step(model, loss.backward())
        yield observe(f"step {step}", loss=loss, model=model)


def test_pretrained_from_a_live_torch_state_dict_matches_torch() -> None:
    pretrained = Pretrained()
    side_by_side(torch_run(pretrained), burnpy_run(pretrained))
