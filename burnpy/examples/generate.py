"""Continue a prompt with a Hugging Face checkpoint: bring your own model.

``python -m burnpy.examples.generate DIRECTORY --prompt TEXT`` loads the causal LM that
transformers' ``save_pretrained`` wrote to ``DIRECTORY`` (GPT-2 or Llama: ``config.json`` and
``model.safetensors`` or its shards) with ``bp.models.from_pretrained`` on ``--backend``,
continues the prompt through the KV cache (greedy, or sampled with ``--do-sample``,
``--temperature``, ``--top-k`` and ``--top-p``) and prints the text and the tokens/s. The prompt
is tokenized with the ``tokenizers`` library (the ``examples`` extra) when the directory holds
a ``tokenizer.json``; otherwise it is read as space-separated token ids and ids are printed.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

import burnpy.models as bpm
from burnpy.examples.digits import BACKENDS, load_backend

if TYPE_CHECKING:
    from tokenizers import Tokenizer

TOKENIZER = "tokenizer.json"


@dataclass
class Generation:
    """What a run produced: every token id (prompt first), its text (the ids, space-separated,
    without a tokenizer), how many tokens were new and how fast they came."""

    ids: list[int]
    text: str
    new_tokens: int
    tokens_per_s: float


def load_tokenizer(directory: Path) -> Tokenizer | None:
    """The directory's ``tokenizer.json`` read by the ``tokenizers`` library, or None when it
    has none."""
    path = directory / TOKENIZER
    if not path.is_file():
        return None
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise SystemExit(f"{path}: reading it needs the tokenizers library (pip install "
                         "'burnpy[examples]'); or pass the prompt as token ids from a directory "
                         f"without {TOKENIZER}") from None
    return Tokenizer.from_file(str(path))


def prompt_ids(prompt: str, tokenizer: Tokenizer | None) -> list[int]:
    """The prompt's token ids: tokenized, or read as space-separated ints."""
    if tokenizer is not None:
        ids: list[int] = tokenizer.encode(prompt).ids
    else:
        try:
            ids = [int(word) for word in prompt.split()]
        except ValueError:
            raise SystemExit(f"--prompt {prompt!r}: without a {TOKENIZER} in the checkpoint "
                             "directory the prompt is space-separated token ids") from None
    if not ids:
        raise SystemExit("--prompt: the prompt has no tokens")
    return ids


def run(args: argparse.Namespace) -> Generation:
    """Load, tokenize, generate and decode as ``args`` say (see ``parse_args``)."""
    backend = load_backend(args.backend)
    model = bpm.from_pretrained(args.directory, backend=backend)
    if not isinstance(model, bpm.GenerationMixin):
        raise SystemExit(f"{args.directory}: holds a {type(model).__name__}, a base model "
                         "without a language-model head; generation needs a *LMHeadModel or "
                         "*ForCausalLM checkpoint")
    tokenizer = load_tokenizer(args.directory)
    ids = prompt_ids(args.prompt, tokenizer)
    if args.do_sample:
        backend.seed(backend.default_device(), args.seed)
    began = time.perf_counter()
    out = model.generate(np.array([ids], dtype=np.int64), max_new_tokens=args.max_new_tokens,
                         do_sample=args.do_sample, temperature=args.temperature,
                         top_k=args.top_k, top_p=args.top_p)
    seconds = time.perf_counter() - began
    every = [int(i) for i in out.into_data().array[0]]
    new = len(every) - len(ids)
    text = (tokenizer.decode(every) if tokenizer is not None
            else " ".join(str(i) for i in every))
    return Generation(every, text, new, new / seconds if seconds > 0 else float("inf"))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line (``--help`` lists it)."""
    p = argparse.ArgumentParser(prog="python -m burnpy.examples.generate", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("directory", type=Path, help="a checkpoint directory (save_pretrained's)")
    p.add_argument("--prompt", required=True,
                   help="the text to continue (token ids without a tokenizer.json)")
    p.add_argument("--max-new-tokens", type=int, default=50)
    p.add_argument("--do-sample", action="store_true", help="sample instead of greedy")
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--top-k", type=int, default=50)
    p.add_argument("--top-p", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0, help="the sampling generator's seed")
    p.add_argument("--backend", choices=sorted(BACKENDS), default="cpu")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """The command line: see the module docstring and ``--help``."""
    result = run(parse_args(argv))
    print(result.text)
    print(f"{result.new_tokens} new tokens, {result.tokens_per_s:.1f} tokens/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
