"""``Learner``: the training loop (Burn's ``Learner``): epochs over a ``DataLoader``, a live
progress bar, validation on ``model.valid()``, per-epoch checkpoints and resume, early
stopping, a plot and a summary.

Batches are tuples whose last field is the target and whose other fields are the model's
inputs. Tensors from a loader on another backend are moved to the model's (``from_inner``
onto the autodiff backend, ``inner()`` for validation), so one loader on ``CpuBackend``
feeds ``Autodiff(CpuBackend)``.

Under ``burnpy.distributed`` (a model wrapped in ``DistributedDataParallel``, a loader with a
``DistributedSampler``) every rank runs the loop; metrics are averaged over the ranks, rank 0
alone shows the progress bar, logs and writes checkpoints, and every rank resumes from them.

``Learner(..., compile=True)`` runs each step (forward, loss, backward, optimizer update)
through ``bp.compile``: the model must be on a ``Capture`` backend
(``Autodiff(Capture(CpuBackend))``), and a Burn-style scheduler's rate reaches the compiled
step through the optimizer's groups (``scheduled_rates``), where it stays symbolic.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from tqdm import tqdm

from burnpy.backend.errors import BurnpyError, InvalidArgumentError
from burnpy.distributed.group import barrier, get_rank, is_initialized
from burnpy.distributed.metrics import average_metrics
from burnpy.jit import compile as jit_compile
from burnpy.nn.functional import cross_entropy
from burnpy.nn.module import Module
from burnpy.optim.lr_scheduler import LrScheduler
from burnpy.optim.optimizer import Optimizer
from burnpy.record import Record, from_record, read_record, to_record, write_record
from burnpy.tensor import Tensor
from burnpy.train.metrics import Mean, Metric
from burnpy.train.plot import NOTICE, matplotlib_available, plot_history

if TYPE_CHECKING:
    from burnpy.backend.base import Backend

LossFn = Callable[[Any, Tensor], Tensor]
Batches = Iterable[tuple[Tensor, ...]]
_CHECKPOINT = re.compile(r"checkpoint-(\d+)\.safetensors$")


@contextmanager
def scheduled_rates(optimizer: Optimizer, lr: float | None) -> Iterator[None]:
    """Inside, each of ``optimizer``'s groups holds the rate ``optimizer.step(model, grads,
    lr)`` would give it (restored on exit), so ``optimizer.step(model, grads)`` in a
    ``bp.compile``d step uses ``lr`` as a symbolic rate instead of recording anew per value."""
    if lr is None:
        yield
        return
    saved = [group["lr"] for group in optimizer.param_groups]
    rates = [optimizer._rate(group, lr) for group in optimizer.param_groups]
    for group, rate in zip(optimizer.param_groups, rates, strict=True):
        group["lr"] = rate
    try:
        yield
    finally:
        for group, rate in zip(optimizer.param_groups, saved, strict=True):
            group["lr"] = rate


def _train_step(model: Module, optimizer: Optimizer,
                loss_fn: LossFn) -> Callable[..., tuple[Any, Tensor]]:
    """One step at the optimizer's current rates, ``step(*inputs, targets) -> (output,
    loss)``; a closure over the three, so ``bp.compile`` reaches exactly their state."""

    def step(*batch: Tensor) -> tuple[Any, Tensor]:
        *inputs, targets = batch
        output = model(*inputs)
        loss = loss_fn(output, targets)
        optimizer.step(model, loss.backward())
        return output, loss

    return step


class CheckpointError(BurnpyError, ValueError):
    """A resume that cannot continue: the checkpoint was written by a different set-up."""


@dataclass
class TrainSummary:
    """What ``fit`` did: one history row per epoch (``epoch``, ``train_loss``, ``valid_loss``,
    ``train_<metric>``, ``valid_<metric>``, ``lr``, ``seconds``) and how it ended."""

    history: list[dict[str, Any]] = field(default_factory=list)
    best_epoch: int | None = None
    stopped_early: bool = False
    resumed_from: int | None = None
    seconds: float = 0.0
    plot: Path | None = None
    checkpoint: Path | None = None


def epoch_seed(seed: int, epoch: int) -> int:
    """The backend seed of ``epoch``: a pure function of both, so resuming replays it."""
    return int(np.random.SeedSequence([seed, epoch]).generate_state(1)[0])


def to_backend(t: Tensor, backend: type[Backend]) -> Tensor:
    """``t`` on ``backend``, through ``from_inner``/``inner`` when one decorates the other."""
    if t.backend is backend:
        return t
    if getattr(backend, "InnerBackend", None) is t.backend:
        return Tensor.from_inner(t, backend=backend)
    if getattr(t.backend, "InnerBackend", None) is backend:
        return t.inner()
    return t.to_backend(backend)


class Learner:
    """Trains ``model`` with ``optimizer`` on ``loss_fn(model(*inputs), targets)``.

    ``scheduler`` gives the learning rate of every step. ``checkpoint_dir`` gets
    ``checkpoint-NNN.safetensors`` after each epoch (model, optimizer, scheduler, epoch,
    seed, history); ``fit(resume=True)`` continues from the newest. ``patience`` stops when the
    validation loss has not improved for that many epochs. ``plot_path`` gets a PNG of the
    history when matplotlib is installed. ``progress`` shows a live bar per epoch when standard
    error is a terminal (a log file gets the per-epoch summaries only). ``seed`` drives the
    shuffling and the backend's generator per epoch (dropout), so a resumed run equals an
    uninterrupted one. ``compile`` runs each step through ``bp.compile`` (the model on a
    ``Capture`` backend); its results equal the eager loop's bit for bit.
    """

    def __init__(self, model: Module, optimizer: Optimizer, loss_fn: LossFn = cross_entropy, *,
                 scheduler: LrScheduler | None = None, metrics: Sequence[Metric] = (),
                 checkpoint_dir: str | Path | None = None, patience: int | None = None,
                 min_delta: float = 0.0, plot_path: str | Path | None = None, seed: int = 0,
                 progress: bool = True, log: Callable[[str], None] | None = None,
                 compile: bool = False) -> None:
        backend = model.backend
        if backend is None or not backend.ad_enabled():
            name = "no tensors" if backend is None else backend.name()
            raise InvalidArgumentError(f"Learner: the model must be on an autodiff backend "
                                       f"(Autodiff(B)), got {name}")
        if patience is not None and patience < 1:
            raise InvalidArgumentError(f"Learner: patience must be >= 1, got {patience}")
        self.model, self.optimizer, self.loss_fn = model, optimizer, loss_fn
        self.scheduler, self.metrics = scheduler, list(metrics)
        self.checkpoint_dir = None if checkpoint_dir is None else Path(checkpoint_dir)
        self.patience, self.min_delta = patience, min_delta
        self.plot_path = None if plot_path is None else Path(plot_path)
        self.seed, self.progress = seed, progress
        self.log = log or _print_on_rank0
        step = _train_step(model, optimizer, loss_fn)
        self._step = jit_compile(step) if compile else step

    # ---- the loop ----------------------------------------------------------------------------
    def fit(self, train: Batches, valid: Batches | None = None, epochs: int = 1,
            resume: bool = False) -> TrainSummary:
        """Train until ``epochs`` epochs are done (counting resumed ones) or early stopping."""
        summary = TrainSummary()
        start = 0
        if resume:
            start = self._resume(summary)
        best = min((row["valid_loss"] for row in summary.history if "valid_loss" in row),
                   default=float("inf"))
        bad_epochs = self._bad_epochs(summary.history, best)
        began = time.perf_counter()
        for epoch in range(start, epochs):
            epoch_began = time.perf_counter()
            row = self._train_epoch(train, epoch, epochs)
            if valid is not None:
                row.update({f"valid_{k}": v for k, v in self.evaluate(valid).items()})
            row["seconds"] = time.perf_counter() - epoch_began
            summary.history.append(row)
            self.log(self._format_row(row, epochs))
            if "valid_loss" in row:
                if row["valid_loss"] < best - self.min_delta:
                    best, bad_epochs, summary.best_epoch = row["valid_loss"], 0, epoch + 1
                else:
                    bad_epochs += 1
            if self.checkpoint_dir is not None:
                summary.checkpoint = self._save_checkpoint(epoch + 1, summary.history)
            if self.patience is not None and bad_epochs >= self.patience:
                summary.stopped_early = True
                self.log(f"early stopping: no validation-loss improvement for {bad_epochs} "
                         f"epoch(s)")
                break
        summary.seconds = time.perf_counter() - began
        if summary.best_epoch is None and summary.history and "valid_loss" in summary.history[0]:
            summary.best_epoch = 1 + min(range(len(summary.history)),
                                         key=lambda i: summary.history[i]["valid_loss"])
        if self.plot_path is not None and summary.history and get_rank() == 0:
            if matplotlib_available():
                summary.plot = plot_history(summary.history, self.plot_path)
            else:
                self.log(NOTICE)
        self.log(self.summary_text(summary))
        return summary

    def _train_epoch(self, train: Batches, epoch: int, epochs: int) -> dict[str, Any]:
        model, backend = self.model, self.model.backend
        assert backend is not None
        backend.seed(model.device or backend.default_device(), epoch_seed(self.seed, epoch))
        if hasattr(train, "set_epoch"):
            train.set_epoch(epoch)
        model.train()
        loss_mean = Mean()
        for m in self.metrics:
            m.reset()
        lr = self.optimizer.lr
        # A scheduler built on the optimizer sets its groups' rates (torch's order: the
        # optimizer steps, then the scheduler); a Burn-style one gives each step's rate.
        drives_groups = self.scheduler is not None and self.scheduler.optimizer is self.optimizer
        stream = sys.stderr
        bar = tqdm(train, total=_length(train), desc=f"epoch {epoch + 1}/{epochs}",
                   disable=not (self.progress and get_rank() == 0 and _is_terminal(stream)),
                   leave=False,
                   dynamic_ncols=True, file=stream)
        for batch in bar:
            *inputs, targets = (to_backend(t, backend) for t in batch)
            rate = None
            if self.scheduler is not None and not drives_groups:
                rate = self.scheduler.step()
            with scheduled_rates(self.optimizer, rate):
                output, loss = self._step(*inputs, targets)
            lr = self.optimizer.lr if rate is None else rate
            if self.scheduler is not None and drives_groups:
                self.scheduler.step()
            loss_mean.add(float(loss.item()), targets.shape[0] if targets.ndim else 1)
            for m in self.metrics:
                m.update(output, targets)
            bar.set_postfix(self._postfix(loss_mean.value()), refresh=False)
        bar.close()
        row: dict[str, Any] = {"epoch": epoch + 1, "train_loss": loss_mean.value()}
        row.update({f"train_{m.name}": m.value() for m in self.metrics})
        row["lr"] = lr
        return average_metrics(row)

    def _postfix(self, loss: float) -> dict[str, str]:
        out = {"loss": f"{loss:.4f}"}
        out.update({m.name: m.format(m.value()) for m in self.metrics})
        return out

    def evaluate(self, loader: Batches, model: Module | None = None) -> dict[str, float]:
        """Loss and metrics of ``model`` (default: ``self.model.valid()``) over ``loader``."""
        model = self.model.valid() if model is None else model
        backend = model.backend
        assert backend is not None
        loss_mean = Mean()
        for m in self.metrics:
            m.reset()
        for batch in loader:
            *inputs, targets = (to_backend(t, backend) for t in batch)
            output = model(*inputs)
            loss_mean.add(float(self.loss_fn(output, targets).item()),
                          targets.shape[0] if targets.ndim else 1)
            for m in self.metrics:
                m.update(output, targets)
        out = {"loss": loss_mean.value()}
        out.update({m.name: m.value() for m in self.metrics})
        return average_metrics(out)

    # ---- checkpoints -------------------------------------------------------------------------
    def _save_checkpoint(self, epoch: int, history: list[dict[str, Any]]) -> Path:
        assert self.checkpoint_dir is not None
        path = self.checkpoint_dir / f"checkpoint-{epoch:03d}.safetensors"
        if get_rank() == 0:  # one writer; the other ranks wait until the file is complete
            parts = {"model": to_record(self.model), "optimizer": to_record(self.optimizer)}
            if self.scheduler is not None:
                parts["scheduler"] = to_record(self.scheduler)
            record = Record.combine("checkpoint", parts,
                                    {"epoch": epoch, "seed": self.seed, "history": history})
            write_record(path, record)
        if is_initialized():
            barrier()
        return path

    def latest_checkpoint(self) -> Path | None:
        """The newest ``checkpoint-NNN.safetensors`` in ``checkpoint_dir``, if any."""
        if self.checkpoint_dir is None or not self.checkpoint_dir.is_dir():
            return None
        found = [(int(m.group(1)), p) for p in self.checkpoint_dir.iterdir()
                 if (m := _CHECKPOINT.search(p.name))]
        return max(found)[1] if found else None

    def _resume(self, summary: TrainSummary) -> int:
        """Load the newest checkpoint; the epoch to continue from (0 without one)."""
        if self.checkpoint_dir is None:
            raise InvalidArgumentError("fit(resume=True) needs a checkpoint_dir")
        path = self.latest_checkpoint()
        if path is None:
            return 0
        record = read_record(path)
        if record.extra.get("seed") != self.seed:
            raise CheckpointError(f"{path}: written with seed {record.extra.get('seed')}, but "
                                  f"this Learner uses seed {self.seed}; a resume would not "
                                  "replay the same run")
        from_record(self.model, record.part("model"), str(path))
        from_record(self.optimizer, record.part("optimizer"), str(path))
        if self.scheduler is not None:
            from_record(self.scheduler, record.part("scheduler"), str(path))
        summary.history = list(record.extra.get("history", []))
        summary.resumed_from = int(record.extra["epoch"])
        self.log(f"resumed from {path} (epoch {summary.resumed_from})")
        return summary.resumed_from

    def _bad_epochs(self, history: list[dict[str, Any]], best: float) -> int:
        """Epochs since the best validation loss (continues early stopping across a resume)."""
        losses = [row["valid_loss"] for row in history if "valid_loss" in row]
        if not losses:
            return 0
        return len(losses) - 1 - max(i for i, v in enumerate(losses) if v == best)

    # ---- reporting ---------------------------------------------------------------------------
    def _format_row(self, row: dict[str, Any], epochs: int) -> str:
        parts = [f"epoch {row['epoch']}/{epochs}", f"train loss {row['train_loss']:.4f}"]
        parts += [f"{m.name} {m.format(row[f'train_{m.name}'])}" for m in self.metrics]
        if "valid_loss" in row:
            parts.append(f"| valid loss {row['valid_loss']:.4f}")
            parts += [f"{m.name} {m.format(row[f'valid_{m.name}'])}" for m in self.metrics]
        parts.append(f"| lr {row['lr']:.3g} | {row['seconds']:.1f}s")
        return "  ".join(parts)

    def summary_text(self, summary: TrainSummary) -> str:
        """A few lines: epochs, time, best validation results, files written."""
        lines = ["training summary",
                 f"  model:       {type(self.model).__name__}, {self.model.num_params():,} "
                 f"parameters",
                 f"  optimizer:   {self.optimizer!r}",
                 f"  epochs:      {len(summary.history)}"
                 + (f" (resumed after {summary.resumed_from})" if summary.resumed_from else "")
                 + (", stopped early" if summary.stopped_early else ""),
                 f"  time:        {summary.seconds:.1f}s"]
        if summary.best_epoch is not None:
            best = summary.history[summary.best_epoch - 1]
            results = [f"loss {best['valid_loss']:.4f}"] + [
                f"{m.name} {m.format(best[f'valid_{m.name}'])}" for m in self.metrics]
            lines.append(f"  best valid:  epoch {summary.best_epoch}: " + ", ".join(results))
        if summary.checkpoint is not None:
            lines.append(f"  checkpoint:  {summary.checkpoint}")
        if summary.plot is not None:
            lines.append(f"  plot:        {summary.plot}")
        return "\n".join(lines)


def _print_on_rank0(line: str) -> None:
    """The default log: standard output, from one rank only under ``burnpy.distributed``."""
    if get_rank() == 0:
        tqdm.write(line, file=sys.stdout)


def _is_terminal(stream: Any) -> bool:
    """Whether ``stream`` is a terminal: progress bars only go there, never into a log file."""
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if callable(isatty) else False
    except ValueError:  # a closed stream
        return False


def _length(loader: Iterable[Any]) -> int | None:
    try:
        return len(loader)  # type: ignore[arg-type]
    except TypeError:
        return None
