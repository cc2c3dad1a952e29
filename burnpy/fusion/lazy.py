"""Ops ``Fusion`` records without fusing them: views (reshape, swap_dims, permute) and matmul.

Such an op (an "opaque" node of the stream) runs B's own op, alone, when the stream is
flushed, after the groups it reads. Recording it instead of running it at once keeps the
stream open: a reshape of a pending value does not compute that value early and cut its group
in two (a view costs no kernel on a backend whose primitives are strided views), and the ops
recorded after a matmul may still join the group that the matmul reads (a bias gradient's sum
joins the activation gradient it sums; the matmul reading that gradient no longer forces it
out alone). A fuser opts in by listing the ops in ``lazy_ops``; without it (or when the
result's shape cannot be worked out here, so B should name the problem) the op runs eagerly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from burnpy.fusion.stream import LazyNode, ir_dtype
from burnpy.fusion.tensor import PLAIN
from burnpy.ir.shapes import SHAPE_RULES

if TYPE_CHECKING:
    from burnpy.fusion.backend import _State


#: Every op that may be recorded as an opaque node (a fuser's ``lazy_ops`` picks among them).
LAZY_OPS = frozenset({f"{kind}_{op}" for kind in ("float", "int", "bool")
                      for op in ("reshape", "swap_dims", "permute")} | {"float_matmul"})


def _shape_of(tensor: Any) -> tuple[int, ...]:
    return tuple(tensor.shape)


def _result_shape(op: str, args: tuple[Any, ...],
                  device_of: Callable[[Any], Any]) -> tuple[int, ...] | None:
    """The shape ``op`` gives for ``args`` (its rule in ``burnpy.ir.shapes``), or None when B
    should run it (and name the error): plain int dims and sizes only, a matmul of two
    tensors of one dtype on one device."""
    first = args[0]
    if op == "matmul":
        other = args[1]
        if (type(other) in PLAIN or other.dtype != first.dtype
                or device_of(other) != device_of(first)):
            return None
    else:
        given = args[1] if op != "swap_dims" else args[1:]
        if not all(type(d) is int for d in given) or (op == "reshape" and -1 in given):
            return None
    shapes = SHAPE_RULES[f"float_{op}"](args, _shape_of)
    return None if shapes is None else shapes[0]


def lazy_recorder(name: str, state: _State, eager: Callable[..., Any],
                  listed: list[bool]) -> Callable[..., Any]:
    """The op ``name`` (one of ``LAZY_OPS``) recorded as an opaque node when B's fuser lists
    it in ``lazy_ops`` and (for a view) the tensor it reads is pending; ``eager`` (B's op
    now) otherwise. A reshape to the unchanged shape returns the tensor itself. A matmul is
    recorded even on computed operands: the elementwise ops reading it may run in its kernel.
    ``listed`` receives, on first use, whether the fuser lists the op: the generated front
    (``burnpy.fusion.backend._fronted``) then runs B's matmul of two values at once when it
    does not; it runs B's view of one of B's primitives at once in any case, so a view
    comes here with a handle only.
    """
    op = name.split("_", 1)[1]
    matmul = op == "matmul"

    def record(*args: Any) -> Any:
        first = args[0]
        if op == "reshape" and tuple(args[1]) == tuple(first.shape):
            return first
        if not matmul and first.node is None:  # a view of a computed handle: nothing pending
            return eager(*args)
        if not listed:
            fuser = state.fusers[0] if state.fusers else state.fuser()
            listed.append(fuser is not None and name in getattr(fuser, "lazy_ops", ()))
        if not listed[0]:
            return eager(*args)
        shape = _result_shape(op, args, state.device_of)
        if shape is None:
            return eager(*args)
        dtype = ir_dtype(first.dtype)
        device = state.device_of(first)
        stream = state.stream(device)
        kept = tuple(state.recorded(a) if i < (2 if matmul else 1) else a
                     for i, a in enumerate(args))
        return stream.push(LazyNode(stream, name, None, kept, (0, 1) if matmul else (0,),
                                    shape, dtype, dtype, False, None), first.dtype, device)

    record.__name__ = name
    record.__doc__ = f"``{name}``, recorded to run when the stream is flushed."
    return record
