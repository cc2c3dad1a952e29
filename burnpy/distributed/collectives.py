"""Collectives on tensors: ``all_reduce``, ``broadcast``, ``all_gather``, ``reduce_scatter``.

Each returns new tensors on the input's backend and device; every rank must call the same
collectives in the same order with tensors of the same shape and dtype. CUDA tensors of an
``"nccl"`` group go through NCCL, everything else through MPI (``host.py``). ``all_reduce`` is
differentiable (a ``Function``: its backward all-reduces the gradient); the others return
untracked tensors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from burnpy.backend.errors import InvalidArgumentError, ShapeError, describe
from burnpy.custom_ops.function import Function, FunctionCtx
from burnpy.distributed import failure
from burnpy.distributed.group import ProcessGroup, current_group
from burnpy.distributed.host import RECEIVE, from_host, lift, peel, to_host
from burnpy.tensor import Tensor
from burnpy.tensor._core import BOOL, FLOAT

if TYPE_CHECKING:
    from mpi4py import MPI

REDUCE_OPS = ("sum", "mean", "max", "min")


def _mpi_op(op: str, kind: str) -> MPI.Op:
    """The MPI reduction of ``op`` for tensors of ``kind`` (bool: sum/max are OR, min AND)."""
    from mpi4py import MPI

    if kind == BOOL:
        return MPI.LAND if op == "min" else MPI.LOR
    return {"sum": MPI.SUM, "mean": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN}[op]


def _check_op(name: str, op: str, t: Tensor) -> None:
    if op not in REDUCE_OPS:
        raise InvalidArgumentError(f"{name}: op must be one of {REDUCE_OPS}, got {op!r}")
    if op == "mean" and t.kind != FLOAT:
        raise InvalidArgumentError(f"{name}: op='mean' needs a float tensor, got {t.dtype!r}; "
                                   "use op='sum' and divide")
    if t.kind not in (FLOAT, "int", BOOL):
        raise InvalidArgumentError(f"{name}: cannot communicate a {t.kind} tensor; dequantize "
                                   "it first")


def _use_nccl(group: ProcessGroup, plain: Tensor) -> bool:
    return group.nccl is not None and group.nccl.handles(plain)


def _reduce_plain(t: Tensor, op: str) -> Tensor:
    """``all_reduce`` of a plain (undecorated) tensor."""
    group = current_group("all_reduce")
    if _use_nccl(group, t):
        assert group.nccl is not None
        return group.nccl.all_reduce(t, op)
    send = to_host(t)
    out = RECEIVE.take(send.shape, send.dtype)
    try:
        failure.wait(group, [group.comm.Iallreduce(send, out, _mpi_op(op, t.kind))],
                     "all_reduce")
    except BaseException:
        RECEIVE.forget(out)
        raise
    if op == "mean":
        np.divide(out, group.size, out=out)
    return from_host(out, t)


def _op(ctx: FunctionCtx) -> str:
    """The reduce op ``_AllReduce.forward`` kept on ``ctx``."""
    return str(vars(ctx)["op"])


class _AllReduce(Function):
    """``all_reduce`` as a differentiable op: every rank's output is the reduction of all
    inputs, so the gradient of an input sums (or averages) every rank's output gradient;
    for max/min it goes to the ranks holding the extreme value."""

    @staticmethod
    def forward(ctx: FunctionCtx, x: Tensor, *, op: str) -> Tensor:
        y = _reduce_plain(x, op)
        vars(ctx)["op"] = op  # read back by backward and jvp
        if op in ("max", "min"):
            ctx.save_for_backward(x, y)
            ctx.save_for_forward(x, y)
        return y

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> Tensor:
        if _op(ctx) in ("sum", "mean"):
            return all_reduce(grad, _op(ctx))
        x, y = ctx.saved_tensors
        assert x is not None and y is not None
        return all_reduce(grad, "sum").mask_fill(x.not_equal(y), 0.0)

    @staticmethod
    def jvp(ctx: FunctionCtx, dx: Tensor) -> Tensor:
        if _op(ctx) in ("sum", "mean"):
            return all_reduce(dx, _op(ctx))
        x, y = ctx.saved_tensors
        assert x is not None and y is not None
        holds = x.equal(y)  # ranks holding the extreme value share its tangent
        count = all_reduce(holds.cast(dx.dtype), "sum")
        return all_reduce(dx.mask_fill(holds.logical_not(), 0.0), "sum") / count


def all_reduce(t: Tensor, op: str = "sum") -> Tensor:
    """``t`` reduced element-wise over every rank with ``op`` (``"sum"``, ``"mean"``,
    ``"max"``, ``"min"``; bool tensors: sum and max are OR, min is AND). Differentiable."""
    _check_op("all_reduce", op, t)
    if t.kind == FLOAT:
        result: Tensor = _AllReduce.apply(t, op=op)
        return result
    plain, decorators = peel(t)
    return lift(_reduce_plain(plain, op), decorators)


def broadcast(t: Tensor, src: int = 0) -> Tensor:
    """Rank ``src``'s ``t`` on every rank (untracked)."""
    group = current_group("broadcast")
    if not 0 <= src < group.size:
        raise InvalidArgumentError(f"broadcast: src must be a rank in [0, {group.size}), "
                                   f"got {src}")
    plain, decorators = peel(t)
    if _use_nccl(group, plain):
        assert group.nccl is not None
        return lift(group.nccl.broadcast(plain, src), decorators)
    host = to_host(plain)
    buffer = host.copy() if group.rank == src else np.empty_like(host)
    failure.wait(group, [group.comm.Ibcast(buffer, root=src)], "broadcast")
    return lift(from_host(buffer, plain), decorators)


def all_gather(t: Tensor) -> list[Tensor]:
    """Every rank's ``t``, in rank order (untracked)."""
    group = current_group("all_gather")
    plain, decorators = peel(t)
    if _use_nccl(group, plain):
        assert group.nccl is not None
        return [lift(x, decorators) for x in group.nccl.all_gather(plain)]
    host = to_host(plain)
    out = np.empty((group.size, *host.shape), dtype=host.dtype)
    failure.wait(group, [group.comm.Iallgather(host, out)], "all_gather")
    return [lift(from_host(out[r], plain), decorators) for r in range(group.size)]


def reduce_scatter(t: Tensor, op: str = "sum") -> Tensor:
    """``t`` reduced over every rank with ``op``, then split along dim 0 into world-size
    chunks: rank ``r`` gets chunk ``r`` (untracked). Dim 0 must divide by the world size."""
    group = current_group("reduce_scatter")
    _check_op("reduce_scatter", op, t)
    if t.ndim == 0 or t.shape[0] % group.size:
        raise ShapeError(f"reduce_scatter: dim 0 of {describe(t.shape)} must divide by the "
                         f"world size {group.size}")
    plain, decorators = peel(t)
    if _use_nccl(group, plain):
        assert group.nccl is not None
        return lift(group.nccl.reduce_scatter(plain, op), decorators)
    host = to_host(plain)
    out = np.empty((host.shape[0] // group.size, *host.shape[1:]), dtype=host.dtype)
    request = group.comm.Ireduce_scatter_block(host, out, _mpi_op(op, plain.kind))
    failure.wait(group, [request], "reduce_scatter")
    if op == "mean":
        np.divide(out, group.size, out=out)
    return lift(from_host(out, plain), decorators)


def all_gather_object(obj: object, what: str = "all_gather_object") -> list[object]:
    """Every rank's picklable ``obj``, in rank order (bounded by the group's timeout, unlike
    mpi4py's blocking ``allgather``)."""
    import pickle

    group = current_group(what)
    payload = np.frombuffer(pickle.dumps(obj), dtype=np.uint8)
    sizes = np.empty(group.size, dtype=np.int64)
    failure.wait(group, [group.comm.Iallgather(np.array([payload.size], np.int64), sizes)], what)
    out = np.empty(int(sizes.sum()), dtype=np.uint8)
    offsets = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    failure.wait(group, [group.comm.Iallgatherv(payload, [out, (sizes, offsets)])], what)
    return [pickle.loads(out[o:o + n].tobytes()) for o, n in zip(offsets, sizes, strict=True)]
