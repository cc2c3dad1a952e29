"""Where a step's time goes among a backend's ops: each protocol op of a backend class timed
while an ``OpClock`` is installed, so a benchmark can say how much of a step a decorator over
that backend could change at all."""

from __future__ import annotations

import inspect
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from types import TracebackType
from typing import Any

from burnpy.backend.base import Backend
from burnpy.backend.ops._marker import provided_ops, required_ops


class OpClock:
    """Times every protocol op of ``backend`` (seconds and calls by op name) between
    ``__enter__`` and ``__exit__``. Only the outermost op of a call counts: an op that B
    builds from its own ops is timed once, as the whole. The clock adds a Python frame and two
    ``clock`` reads to each op (~0.5 us), which lands in the op's time. ``clock`` is wall time
    by default; ``time.thread_time`` keeps a loaded machine's waits out of the figures."""

    def __init__(self, backend: type[Backend],
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self.backend = backend
        self.clock = clock
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: Counter[str] = Counter()
        self._saved: dict[str, Any] = {}
        self._depth = 0

    def _timed(self, name: str, op: Callable[..., Any]) -> Callable[..., Any]:
        seconds, calls, clock = self.seconds, self.calls, self.clock

        def timed(*args: Any, **kwargs: Any) -> Any:
            self._depth += 1
            start = clock()
            try:
                return op(*args, **kwargs)
            finally:
                self._depth -= 1
                if not self._depth:
                    seconds[name] += clock() - start
                    calls[name] += 1

        return timed

    def __enter__(self) -> OpClock:
        backend = self.backend
        for name in sorted({*required_ops(Backend), *provided_ops(Backend)}):
            found = inspect.getattr_static(backend, name, None)
            if not isinstance(found, classmethod | staticmethod):
                continue
            self._saved[name] = vars(backend).get(name)
            setattr(backend, name, staticmethod(self._timed(name, getattr(backend, name))))
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        for name, saved in self._saved.items():
            if saved is None:
                delattr(self.backend, name)
            else:
                setattr(self.backend, name, saved)
        self._saved.clear()
