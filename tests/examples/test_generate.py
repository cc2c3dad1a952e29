"""The bring-your-own-model example, ``python -m burnpy.examples.generate``: a tiny GPT-2
written by transformers' ``save_pretrained`` beside a word-level ``tokenizer.json`` built with
the ``tokenizers`` library, continued greedily; the text must be transformers' own greedy
``generate`` decoded by the same tokenizer, and the ids path its ids."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import transformers as tf

from burnpy.examples import generate

tokenizers = pytest.importorskip("tokenizers")

WORDS = ["[UNK]", *(f"w{i}" for i in range(60))]
NEW = 12


def _checkpoint(path: Path, with_tokenizer: bool) -> tf.GPT2LMHeadModel:
    """A seeded random GPT-2 (vocabulary 61) saved to ``path``; returns it in eval mode."""
    torch.manual_seed(3)
    config = tf.GPT2Config(vocab_size=len(WORDS), n_positions=64, n_embd=32, n_layer=2,
                           n_head=4, bos_token_id=None, eos_token_id=None)
    model = tf.GPT2LMHeadModel(config).eval()
    model.generation_config.pad_token_id = 0
    model.save_pretrained(path)
    if with_tokenizer:
        tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(
            {w: i for i, w in enumerate(WORDS)}, unk_token="[UNK]"))
        tok.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
        tok.save(str(path / generate.TOKENIZER))
    return model


def _greedy(model: tf.GPT2LMHeadModel, ids: list[int]) -> list[int]:
    prompt = torch.tensor([ids])
    with torch.inference_mode():
        out = model.generate(prompt, max_new_tokens=NEW, do_sample=False,
                             attention_mask=torch.ones_like(prompt))
    return [int(i) for i in out[0]]


def test_text_prompt_matches_transformers_greedy_generate(tmp_path: Path) -> None:
    model = _checkpoint(tmp_path, with_tokenizer=True)
    prompt = "w3 w17 w42 w5"
    result = generate.run(generate.parse_args(
        [str(tmp_path), "--prompt", prompt, "--max-new-tokens", str(NEW)]))
    tok = tokenizers.Tokenizer.from_file(str(tmp_path / generate.TOKENIZER))
    want = _greedy(model, tok.encode(prompt).ids)
    assert result.ids == want and result.new_tokens == NEW
    assert result.text == tok.decode(want) and result.text.startswith(prompt)
    assert result.tokens_per_s > 0


def test_token_id_prompt_and_the_command_line(tmp_path: Path) -> None:
    model = _checkpoint(tmp_path, with_tokenizer=False)
    ids = [3, 17, 42, 5, 9]
    want = _greedy(model, ids)
    out = subprocess.run([sys.executable, "-m", "burnpy.examples.generate", str(tmp_path),
                          "--prompt", " ".join(map(str, ids)), "--max-new-tokens", str(NEW)],
                         check=True, capture_output=True, text=True)
    lines = out.stdout.splitlines()
    assert lines[0] == " ".join(map(str, want))
    assert lines[1].startswith(f"{NEW} new tokens, ") and lines[1].endswith(" tokens/s")


def test_sampling_is_seeded_and_keeps_the_prompt(tmp_path: Path) -> None:
    _checkpoint(tmp_path, with_tokenizer=False)
    argv = [str(tmp_path), "--prompt", "1 2 3", "--max-new-tokens", "8", "--do-sample",
            "--temperature", "0.7", "--top-k", "10", "--top-p", "0.9", "--seed", "5"]
    first, again = (generate.run(generate.parse_args(argv)) for _ in range(2))
    assert first.ids == again.ids and first.ids[:3] == [1, 2, 3] and len(first.ids) == 11
    assert np.all(np.array(first.ids) < len(WORDS))


def test_bad_prompts_exit_with_a_message(tmp_path: Path) -> None:
    _checkpoint(tmp_path, with_tokenizer=False)
    with pytest.raises(SystemExit, match="space-separated token ids"):
        generate.run(generate.parse_args([str(tmp_path), "--prompt", "hello there"]))
    with pytest.raises(SystemExit, match="no tokens"):
        generate.run(generate.parse_args([str(tmp_path), "--prompt", " "]))
