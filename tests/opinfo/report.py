"""Prints how burnpy stands on PyTorch's OpInfo samples: each entry of ``entries.txt`` as clean,
absent, deliberate, refusing or failing, with the first problems of each, then the counts.

Run from the repository root: ``python -m tests.opinfo.report`` (``-v`` lists every problem;
names after the options restrict the run to those entries).
"""

from __future__ import annotations

import sys
import warnings
from collections import Counter

from tests.opinfo.opinfo_harness import ENTRIES, run_entry

STATUSES = ("clean", "absent", "deliberate", "refusing", "failing")


def main(argv: list[str]) -> int:
    """Run the entries, print the problems and the counts; exit 0."""
    warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's, on samples' extreme values
    verbose = "-v" in argv
    names = [a for a in argv if not a.startswith("-")] or list(ENTRIES)
    counts: Counter[str] = Counter()
    for entry in names:
        out = run_entry(entry)
        counts[out.status] += 1
        problems = out.failures + out.refusals
        if out.status in ("failing", "refusing"):
            print(f"{out.status:9} {entry}: {len(problems)} of {out.ran} samples")
            for p in problems if verbose else problems[:3]:
                print(f"          {p[:300]}")
        elif out.status == "deliberate":
            print(f"{'deliberate':9} {entry}: {out.deliberate_entry}")
        elif verbose:
            print(f"{out.status:9} {entry}")
    print(", ".join(f"{counts[s]} {s}" for s in STATUSES) + f" (of {len(names)} entries)")
    print(f"{counts['clean']} of {len(names)} clean")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
