"""ONNX text-feature operators: TfIdfVectorizer over integer token ids.

Counting n-grams is a host loop over token ids (integers carry no gradient); the features
come back as a float32 tensor on the node's backend.
"""

from __future__ import annotations

import numpy as np

from burnpy.onnx.attributes import Attributes
from burnpy.onnx.registry import OpContext, Outputs, onnx_op
from burnpy.tensor import Tensor

Inputs = list[Tensor | None]


def _pool(ctx: OpContext, attrs: Attributes) -> dict[tuple[int, ...], int]:
    """Each pool n-gram (as a tuple of ids) to its output column."""
    if "pool_strings" in attrs:
        ctx.unsupported("a pool of strings", "pool_strings")
    pool = attrs.ints("pool_int64s") or []
    starts = attrs.ints("ngram_counts") or []
    columns = attrs.ints("ngram_indexes") or []
    grams: dict[tuple[int, ...], int] = {}
    position = 0
    for size, start in enumerate(starts, start=1):
        end = starts[size] if size < len(starts) else len(pool)
        for offset in range(start, end, size):
            grams[tuple(pool[offset:offset + size])] = columns[position]
            position += 1
    return grams


@onnx_op("TfIdfVectorizer", 9, attrs=("max_gram_length", "max_skip_count", "min_gram_length",
                                      "mode", "ngram_counts", "ngram_indexes", "pool_int64s",
                                      "pool_strings", "weights"))
def _tfidf_vectorizer(ctx: OpContext, inputs: Inputs, attrs: Attributes) -> Outputs:
    """ONNX TfIdfVectorizer: counts of the pool's n-grams (sizes min..max, tokens up to
    ``max_skip_count`` apart, unigrams once) per row, as TF, IDF or TFIDF features."""
    x = ctx.arg(inputs, 0)
    if x.kind != "int":
        ctx.unsupported(f"input dtype {x.dtype!r}")
    grams = _pool(ctx, attrs)
    width = max(grams.values(), default=-1) + 1
    rows = x.to_numpy().reshape(-1 if x.ndim < 2 else x.shape[0], x.shape[-1] if x.ndim else 1)
    low, high = attrs.int("min_gram_length", 1), attrs.int("max_gram_length", 1)
    counts = np.zeros((rows.shape[0], width), dtype=np.float32)
    for r, row in enumerate(rows.tolist()):
        for gap in range(1, attrs.int("max_skip_count", 0) + 2):
            smallest = max(low, 2) if gap > 1 else low  # unigrams do not depend on the gap
            for size in range(smallest, high + 1):
                for start in range(len(row) - gap * (size - 1)):
                    column = grams.get(tuple(row[start:start + gap * (size - 1) + 1:gap]))
                    if column is not None:
                        counts[r, column] += 1
    mode = attrs.string("mode", "")
    weights = np.asarray(attrs.floats("weights") or [1.0] * width, dtype=np.float32)
    if mode == "TF":
        out = counts
    elif mode == "IDF":
        out = (counts > 0) * weights
    elif mode == "TFIDF":
        out = counts * weights
    else:
        ctx.error(f"mode must be TF, IDF or TFIDF, got {mode!r}")
    return ctx.constant(out.astype(np.float32).reshape(width if x.ndim < 2 else (-1, width)))
