"""Train a character-level GPT and sample from it with a KV cache.

``python -m burnpy.examples.gpt`` trains ``burnpy.examples.gpt_model.GPT`` on
``Autodiff(backend)`` with AdamW (weight decay on matrices only), gradient-norm clipping and a
warm-up + cosine schedule, reports validation loss and perplexity, writes checkpoints
(``--resume`` continues from the last one) and a loss plot to ``--out``, then samples text with
temperature and top-k through the KV cache on ``model.valid()`` and reports tokens/s.
``mpiexec -n 2 python -m burnpy.examples.gpt --distributed`` trains data-parallel: each rank
takes its slice of every step's windows (``--batch-size`` per rank), the model is wrapped in
``DistributedDataParallel``; rank 0 reports, checkpoints, plots and samples, every rank resumes.
``--compile`` builds the model on ``Autodiff(Capture(backend))`` and runs each training step
through ``bp.compile``: the same numbers, recorded once and replayed.

The text: speeches from Shakespeare's plays (public domain, under 1 MB), shipped in
``burnpy/examples/data``; ``--text PATH`` trains on any UTF-8 file instead.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from tqdm import tqdm

from burnpy import distributed as dist
from burnpy import jit
from burnpy.amp import GradScaler, autocast
from burnpy.autodiff import Autodiff
from burnpy.capture import Capture
from burnpy.distributed.metrics import average_metrics
from burnpy.examples.digits import (
    BACKENDS,
    add_execution_options,
    check_execution_options,
    load_backend,
)
from burnpy.examples.gpt_model import GPT, GPTConfig, decay_groups
from burnpy.fusion import Fusion
from burnpy.nn.functional import cross_entropy
from burnpy.optim import AdamW, GradientClipping, warmup_cosine
from burnpy.record import Record, from_record, read_record, to_record, write_record
from burnpy.tensor import Tensor
from burnpy.train.learner import scheduled_rates
from burnpy.train.plot import NOTICE, matplotlib_available

if TYPE_CHECKING:
    from burnpy.backend.base import Backend

CHECKPOINT = "checkpoint.safetensors"

TEXT = Path(__file__).with_name("data") / "tinyshakespeare.txt"
SHORT_CHARS = 60_000


def default_text(short: bool) -> str:
    """The shipped public-domain text (Shakespeare, under 1 MB); its first 60k characters with
    ``--short``."""
    text = TEXT.read_text(encoding="utf-8")
    return text[:SHORT_CHARS] if short else text


@dataclass
class CharData:
    """A text as int32 character ids, split 90/10 into train and validation (int32: every
    backend stores it, WebGPU has no int64)."""

    chars: list[str]
    train: np.ndarray
    valid: np.ndarray

    @staticmethod
    def of(text: str) -> CharData:
        """The vocabulary (sorted distinct characters) and the two splits."""
        chars = sorted(set(text))
        index = {c: i for i, c in enumerate(chars)}
        ids = np.fromiter((index[c] for c in text), dtype=np.int32, count=len(text))
        cut = int(0.9 * len(ids))
        return CharData(chars, ids[:cut], ids[cut:])

    def encode(self, text: str) -> list[int]:
        """Character ids of ``text`` (every character must be in the vocabulary)."""
        index = {c: i for i, c in enumerate(self.chars)}
        return [index[c] for c in text]

    def decode(self, ids: list[int]) -> str:
        """The text of character ids."""
        return "".join(self.chars[i] for i in ids)


def batch(data: np.ndarray, rng: np.random.Generator, size: int,
          block: int) -> tuple[np.ndarray, np.ndarray]:
    """``size`` random windows of ``block`` ids and the same windows shifted by one."""
    starts = rng.integers(0, len(data) - block - 1, size)
    x = np.stack([data[s:s + block] for s in starts])
    y = np.stack([data[s + 1:s + block + 1] for s in starts])
    return x, y


def evaluate(model: GPT, data: np.ndarray, backend: type[Backend], size: int, block: int,
             batches: int, seed: int) -> float:
    """Mean loss of an inference model over ``batches`` fixed random validation windows."""
    rng = np.random.default_rng([seed, 1 << 20])
    total = 0.0
    for _ in range(batches):
        x, y = batch(data, rng, size, block)
        loss = model.loss(Tensor.from_data(x, backend=backend),
                          Tensor.from_data(y, backend=backend))
        total += float(loss.item())
    return total / batches


def generate(model: GPT, prompt: list[int], new_tokens: int, *, temperature: float = 1.0,
             top_k: int | None = None, rng: np.random.Generator | None = None) -> list[int]:
    """``prompt`` followed by ``new_tokens`` sampled ids, through a KV cache.

    The prompt is fed once; then each step feeds one token and reuses every layer's cached keys
    and values. ``temperature == 0`` is greedy. When the cache fills the context, it is rebuilt
    from the last half-context of tokens (a sliding window, one prefill per half-context).
    """
    backend = model.backend
    assert backend is not None
    rng = rng or np.random.default_rng(0)
    block = model.config.block_size
    out = list(prompt)
    cache = model.new_cache()
    feed = out[-block:]
    for _ in range(new_tokens):
        if cache.length + len(feed) > block:
            cache, feed = model.new_cache(), out[-(block // 2):]
        logits = model(Tensor.from_data(np.array([feed], dtype=np.int32), backend=backend),
                       cache)
        row = logits.to_numpy()[0, -1].astype(np.float64)  # one host copy, indexed there
        out.append(pick_token(row, temperature, top_k, rng))
        feed = out[-1:]
    return out


def pick_token(logits: np.ndarray, temperature: float, top_k: int | None,
               rng: np.random.Generator) -> int:
    """The next id from one row of logits: argmax at temperature 0, else a sample of
    ``softmax(logits / temperature)`` restricted to the ``top_k`` largest."""
    if temperature == 0.0:
        return int(np.argmax(logits))
    scaled = logits / temperature
    if top_k is not None and top_k < len(scaled):
        cutoff = np.partition(scaled, -top_k)[-top_k]
        scaled = np.where(scaled < cutoff, -np.inf, scaled)
    p = np.exp(scaled - scaled.max())
    return int(rng.choice(len(p), p=p / p.sum()))


def plot_losses(history: list[dict[str, float]], path: Path) -> Path:
    """Train and validation loss against the step, as a PNG (matplotlib, Agg)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for key in ("train_loss", "valid_loss"):
        ax.plot([r["step"] for r in history], [r[key] for r in history], marker="o",
                label=key.split("_")[0])
    ax.set_xlabel("step")
    ax.set_ylabel("cross entropy (nats/char)")
    ax.set_title("character-level GPT")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


@dataclass
class RunResult:
    """What ``main`` reports, for tests and the caller."""

    start_step: int = 0
    history: list[dict[str, float]] = field(default_factory=list)
    sample: str = ""
    tokens_per_s: float = 0.0
    rank: int = 0


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The options; ``--short`` shrinks the model, the run and the sample for a quick check."""
    p = argparse.ArgumentParser(prog="python -m burnpy.examples.gpt", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", choices=sorted(BACKENDS), default="cpu")
    p.add_argument("--steps", type=int, default=None,
                   help="training steps (default 1200, or 30 with --short)")
    p.add_argument("--short", action="store_true",
                   help="a tiny run that checks everything end to end (tests, CI)")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--block-size", type=int, default=64)
    p.add_argument("--n-layer", type=int, default=2)
    p.add_argument("--n-head", type=int, default=4)
    p.add_argument("--n-embd", type=int, default=64)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--clip", type=float, default=1.0, help="gradient-norm clipping threshold")
    p.add_argument("--eval-every", type=int, default=None,
                   help="steps between validations and checkpoints (default steps / 6)")
    p.add_argument("--eval-batches", type=int, default=8)
    p.add_argument("--text", type=Path, default=None,
                   help="train on this UTF-8 text file instead of the shipped Shakespeare")
    p.add_argument("--prompt", default="The ")
    p.add_argument("--sample-tokens", type=int, default=300)
    p.add_argument("--temperature", type=float, default=0.8)
    p.add_argument("--top-k", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=Path("runs/gpt"),
                   help="folder for the checkpoint, the plot and the sample")
    p.add_argument("--stop-at", type=int, default=None,
                   help="stop after this step, checkpointed (the schedule still spans --steps)")
    p.add_argument("--resume", action="store_true",
                   help="continue from --out's checkpoint (same set-up and seed)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_execution_options(p)
    p.add_argument("--amp", choices=sorted(AMP_DTYPES), default=None,
                   help="mixed precision: the forward pass under bp.autocast in bfloat16 or "
                        "float16 (float16 with a GradScaler)")
    args = p.parse_args(argv)
    check_execution_options(p, args)
    if args.short:
        args.n_layer, args.n_embd, args.block_size, args.batch_size = 1, 32, 32, 8
        args.eval_batches, args.sample_tokens = 2, 40
    if args.steps is None:
        args.steps = 30 if args.short else 1200
    if args.eval_every is None:
        args.eval_every = max(1, args.steps // 6)
    return args


#: ``--amp``'s choices: the autocast dtype of each.
AMP_DTYPES = {"bf16": "bfloat16", "fp16": "float16"}


def inference(model: GPT) -> GPT:
    """The training model's copy on the inner backend (``valid()``: untracked, eval mode)."""
    copy = model.valid()
    assert isinstance(copy, GPT)
    return copy


def _is_terminal() -> bool:
    """Progress bars only go to a terminal, never into a log file (as the Learner's)."""
    isatty = getattr(sys.stderr, "isatty", None)
    return bool(isatty()) if callable(isatty) else False


def run(args: argparse.Namespace) -> RunResult:
    """Train (or resume), evaluate, checkpoint, plot and sample, as ``main`` describes."""
    inner = load_backend(args.backend)
    if args.fusion:
        inner = Fusion(inner)
    if args.compile:
        inner = Capture(inner)
    backend = Autodiff[inner]
    inner.seed(inner.default_device(), args.seed)
    text = args.text.read_text(encoding="utf-8") if args.text else default_text(args.short)
    data = CharData.of(text)
    config = GPTConfig(len(data.chars), args.block_size, args.n_layer, args.n_head, args.n_embd)
    model = GPT(config, backend=backend)
    rank, world = 0, 1
    if args.distributed:
        dist.init_process_group()
        rank, world = dist.get_rank(), dist.get_world_size()
    # DDP's forward hooks the backward pass; the optimizer steps the inner model (its names).
    trained = dist.DistributedDataParallel(model) if args.distributed else model
    optim = AdamW(decay_groups(model, args.weight_decay), lr=args.lr, betas=(0.9, 0.99),
                  grad_clipping=GradientClipping.norm(args.clip))
    warmup = max(1, min(100, args.steps // 10))
    sched = warmup_cosine(args.lr, warmup, args.steps, eta_min=args.lr / 10)
    if rank == 0:
        print(f"gpt: {len(text):,} characters, vocabulary {len(data.chars)}, "
              f"{model.num_params():,} parameters ({config.n_layer} layers, {config.n_head} "
              f"heads, width {config.n_embd}, context {config.block_size}); backend "
              f"{backend.name()}" + (f"; {world} ranks" if args.distributed else ""))

    result = RunResult(rank=rank)
    path = args.out / "checkpoints" / CHECKPOINT
    setup = {"config": config.as_dict(), "seed": args.seed, "steps": args.steps,
             "text_chars": len(text)}
    if args.distributed:
        setup["ranks"] = world
    if args.resume and path.is_file():
        record = read_record(path)
        if record.extra.get("setup") != setup:
            raise SystemExit(f"--resume: {path} was written by another set-up "
                             f"({record.extra.get('setup')}), this run is {setup}")
        from_record(model, record.part("model"), str(path))
        from_record(optim, record.part("optimizer"), str(path))
        from_record(sched, record.part("scheduler"), str(path))
        result.start_step = int(record.extra["step"])
        result.history = list(record.extra["history"])
        if rank == 0:
            print(f"resumed from {path} at step {result.start_step}")

    def validate(step: int, train_loss: float) -> None:
        # Every rank evaluates its (identical) replica; rank 0 alone reports and writes.
        train_loss = average_metrics({"loss": train_loss})["loss"]
        valid = evaluate(inference(model), data.valid, inner, args.batch_size, args.block_size,
                         args.eval_batches, args.seed)
        result.history.append({"step": step, "train_loss": train_loss, "valid_loss": valid})
        if rank != 0:
            return
        tqdm.write(f"step {step:5d}  train loss {train_loss:.4f}  valid loss {valid:.4f}  "
                   f"perplexity {math.exp(valid):.2f}  lr {sched.lr:.2e}", file=sys.stdout)
        parts = {"model": to_record(model), "optimizer": to_record(optim),
                 "scheduler": to_record(sched)}
        write_record(path, Record.combine("checkpoint", parts, {
            "step": step, "history": result.history, "setup": setup}))

    if result.start_step == 0:
        validate(0, evaluate(inference(model), data.train, inner, args.batch_size,
                             args.block_size, args.eval_batches, args.seed))
    began = time.perf_counter()
    stop = args.steps if args.stop_at is None else min(args.stop_at, args.steps)
    bar = tqdm(range(result.start_step, stop), desc="training", file=sys.stderr,
               disable=args.no_progress or rank != 0 or not _is_terminal(), dynamic_ncols=True,
               leave=False)
    running: list[float] = []
    region = autocast(inner.default_device().type, AMP_DTYPES.get(args.amp),
                      enabled=args.amp is not None)
    scaler = GradScaler(enabled=args.amp == "fp16")

    def train_step(x: Tensor, y: Tensor) -> Tensor:
        with region:
            logits = trained(x)
            loss = cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        grads = scaler.scale(loss).backward()
        # The scaler unscales before the optimizer clips, and skips steps that overflowed.
        scaler.step(optim, model, grads)
        return loss

    step_fn = jit.compile(train_step) if args.compile else train_step
    for step in bar:
        # The batch of a step depends only on (seed, step): a resumed run replays the same data.
        # Each rank takes its slice of the step's windows.
        x, y = batch(data.train, np.random.default_rng([args.seed, step]),
                     args.batch_size * world, args.block_size)
        mine = slice(rank * args.batch_size, (rank + 1) * args.batch_size)
        # The schedule's rate reaches the step through the optimizer's groups (symbolic there).
        with scheduled_rates(optim, sched.step()):
            loss = step_fn(Tensor.from_data(x[mine], backend=backend),
                           Tensor.from_data(y[mine], backend=backend))
        scaler.update()
        running.append(float(loss.item()))
        bar.set_postfix(loss=f"{running[-1]:.4f}", refresh=False)
        if (step + 1) % args.eval_every == 0 or step + 1 in (stop, args.steps):
            validate(step + 1, float(np.mean(running)))
            running = []
    bar.close()
    seconds = time.perf_counter() - began
    if args.distributed:
        dist.destroy_process_group()
        if rank != 0:
            return result
    trained = stop - result.start_step
    if trained:
        print(f"trained {trained} steps in {seconds:.1f}s ({trained / seconds:.1f} steps/s)")
    final = result.history[-1]["valid_loss"]
    print(f"validation loss {result.history[0]['valid_loss']:.4f} -> {final:.4f}, "
          f"perplexity {math.exp(final):.2f}")
    print(f"checkpoint: {path}")
    if matplotlib_available():
        print(f"plot: {plot_losses(result.history, args.out / 'loss.png')}")
    else:
        print(NOTICE)

    infer = inference(model)
    prompt = data.encode(args.prompt)
    began = time.perf_counter()
    ids = generate(infer, prompt, args.sample_tokens, temperature=args.temperature,
                   top_k=args.top_k, rng=np.random.default_rng(args.seed))
    result.tokens_per_s = args.sample_tokens / (time.perf_counter() - began)
    result.sample = data.decode(ids)
    (args.out / "sample.txt").write_text(result.sample, encoding="utf-8")
    print(f"sample (temperature {args.temperature}, top-k {args.top_k}, KV cache, "
          f"{result.tokens_per_s:.0f} tokens/s):\n{result.sample}")
    return result


def main(argv: list[str] | None = None) -> int:
    """The command line: see the module docstring and ``--help``."""
    began = time.perf_counter()
    if run(parse_args(argv)).rank == 0:
        print(f"done in {time.perf_counter() - began:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
