"""The training plot: loss and metrics per epoch, written as a PNG with matplotlib."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

NOTICE = ("matplotlib is not installed, so no training plot was written "
          "(pip install 'burnpy[plot]')")


def matplotlib_available() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def plot_history(history: Sequence[dict[str, Any]], path: str | Path) -> Path:
    """One panel per quantity (loss, then each metric), train and validation curves."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = []
    for row in history:
        for key in row:
            base = key.split("_", 1)[1] if key.startswith(("train_", "valid_")) else None
            if base and base not in names:
                names.append(base)
    epochs = [row["epoch"] for row in history]
    fig, axes = plt.subplots(1, len(names), figsize=(5 * len(names), 3.8), squeeze=False)
    for ax, name in zip(axes[0], names, strict=True):
        for split in ("train", "valid"):
            key = f"{split}_{name}"
            points = [(e, row[key]) for e, row in zip(epochs, history, strict=True) if key in row]
            if points:
                ax.plot(*zip(*points, strict=True), marker="o", label=split)
        ax.set_xlabel("epoch")
        ax.set_title(name)
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(target, dpi=100)
    plt.close(fig)
    return target
