"""What rank scripts share: where to report, and reporting."""

from __future__ import annotations

import pickle
import sys
from pathlib import Path
from typing import Any


def report(obj: Any) -> None:
    """Leave ``obj`` for the test (``rank<r>.pkl`` in the folder given as argument 1)."""
    from burnpy.distributed import get_rank

    Path(sys.argv[1], f"rank{get_rank()}.pkl").write_bytes(pickle.dumps(obj))
