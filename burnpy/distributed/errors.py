"""``DistributedError``: what every rank raises when the process group cannot go on."""

from __future__ import annotations

from burnpy.backend.errors import BurnpyError


class DistributedError(BurnpyError, RuntimeError):
    """A collective that failed, timed out, or whose peer rank failed; or ranks that disagree
    (different models under ``DistributedDataParallel``).

    ``peer`` is the rank whose failure this one learned of (None when this rank saw the
    problem itself): a rank raising for a peer does not notify the others again.
    """

    def __init__(self, message: str, peer: int | None = None) -> None:
        super().__init__(message)
        self.peer = peer
