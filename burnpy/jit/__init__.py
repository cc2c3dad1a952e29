"""``bp.compile``: record a function once per input signature under ``Capture`` and replay the
recorded graph on later calls, with module, optimizer and scheduler state as its inputs and
outputs (``burnpy.jit.compile``); ``burnpy.jit.reach``: the walk of the state a function
reaches; ``burnpy.jit.replay``: the generated replay of a graph; ``burnpy.jit.fuse``: its
fused runs; ``burnpy.ir.symbolic``: the symbolic scalars it tracks."""

from burnpy.jit.compile import CacheInfo, Compiled, GraphBreakError, compile

__all__ = ["CacheInfo", "Compiled", "GraphBreakError", "compile"]
