"""PyTorch's OpInfo samples against burnpy (see ``opinfo_harness``): for every entry burnpy
claims, no float64 or float32 sample may give a wrong value, dtype, shape or gradient, or leak
an exception that is not a ``BurnpyError``. A ``BurnpyError`` on a sample torch takes is a
refusal: allowed here, counted as not clean by ``python -m tests.opinfo.report``, which prints
the clean / absent / deliberate / refusing / failing counts over the 326 entries."""

from __future__ import annotations

import pytest
from opinfo_harness import ENTRIES, run_entry

# Entries that still give a wrong result or leak an exception at this commit, with what is
# missing. Strict: an entry that becomes right fails here until it is taken off the list.
KNOWN_FAILING: dict[str, str] = {
}


@pytest.mark.parametrize("entry", [
    pytest.param(e, marks=pytest.mark.xfail(strict=True, reason=KNOWN_FAILING[e]))
    if e in KNOWN_FAILING else e for e in ENTRIES])
def test_opinfo_entry(entry: str) -> None:
    out = run_entry(entry)
    if out.status == "absent":
        pytest.skip("absent: burnpy has no callable for this entry yet")
    if out.status == "deliberate":
        pytest.skip(f"deliberate: {out.deliberate_entry}")
    assert out.ran > 0 or out.deliberate, f"{entry}: no sample ran"
    assert not out.failures, f"{entry}: {len(out.failures)} of {out.ran} samples:\n" + "\n".join(
        out.failures[:10])
