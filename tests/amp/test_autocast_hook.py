"""The autocast hook's forwarders: a marked op keeps its signature, runs as written outside
regions and hands every argument (defaults included) to the handler inside one."""

from __future__ import annotations

import inspect
import traceback
from typing import Any

import numpy as np
import pytest

import burnpy as bp
from burnpy import Tensor
from burnpy.backend.errors import InvalidArgumentError
from burnpy.nn import functional as F
from burnpy.tensor import autocast_hook
from burnpy.tensor.autocast_hook import autocast_op, forwarder_source


def _op(x: Any, y: Any, scale: float = 2.0, *, bias: Any = None) -> tuple[Any, ...]:
    """A stand-in op returning what it was called with."""
    return x, y, scale, bias


def test_forwarder_keeps_the_op() -> None:
    marked = autocast_op("hook_test_op")(_op)
    assert marked is not _op and marked.__wrapped__ is _op  # type: ignore[attr-defined]
    assert marked.__name__ == "_op" and marked.__doc__ == _op.__doc__
    assert inspect.signature(marked) == inspect.signature(_op)
    assert marked(1, 2) == (1, 2, 2.0, None)
    assert marked(1, y=3, scale=4.0, bias=5) == (1, 3, 4.0, 5)
    with pytest.raises(TypeError):
        marked(1, 2, 3, 4)  # type: ignore[call-arg]  # bias is keyword-only, as in the op
    assert "hook_test_op" in autocast_hook.MARKED_OPS
    source = forwarder_source(marked)
    assert "def _op(x, y, scale=_d0, *, bias=_d1):" in source


def test_inside_a_region_the_handler_gets_every_argument() -> None:
    calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    def handler(name: str, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        calls.append((name, args, kwargs))
        return fn(*args, **kwargs)

    marked = autocast_op("hook_test_region")(_op)
    amp_handler = autocast_hook._handler  # the amp layer's, put back below
    hook = autocast_hook.register_autocast_handler(handler)
    try:
        hook.enter()
        try:
            assert marked(1, 2, bias=7) == (1, 2, 2.0, 7)
        finally:
            hook.exit()
        assert marked(1, 2) == (1, 2, 2.0, None)  # no region open: the handler is not asked
    finally:
        hook.remove()
        autocast_hook.register_autocast_handler(amp_handler)
    assert calls == [("hook_test_region", (1, 2, 2.0), {"bias": 7})]


def test_real_ops_still_autocast() -> None:
    a = Tensor.from_data(np.ones((3, 4), np.float32))
    w = Tensor.from_data(np.ones((5, 4), np.float32))
    assert F.linear(a, w).dtype == bp.float32
    with bp.autocast("cpu"):
        assert F.linear(a, w).dtype == bp.bfloat16
        assert (a @ w.T).dtype == bp.bfloat16
        assert F.linear(a, w, None).dtype == bp.bfloat16


def test_tracebacks_show_the_forwarder() -> None:
    def failing(x: Any) -> None:
        raise RuntimeError("inside the op")

    marked = autocast_op("hook_test_failing")(failing)
    with pytest.raises(RuntimeError) as info:
        marked(1)
    frames = traceback.extract_tb(info.value.__traceback__)
    assert any(f.filename.startswith("<autocast_op hook_test_failing") and f.line
               for f in frames)


@pytest.mark.parametrize("bad", [lambda *args: None, lambda x, **kw: None,
                                 lambda _handler: None])
def test_unsupported_signatures_are_refused(bad: Any) -> None:
    with pytest.raises(InvalidArgumentError, match="hook_test_bad"):
        autocast_op("hook_test_bad")(bad)
