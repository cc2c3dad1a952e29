"""``DistributedDataParallel`` (torch.nn.parallel's): one model replica per rank, gradients
averaged in backward over ``burnpy.distributed``'s process group.

At construction every rank checks that all ranks hold the same parameters and buffers (names,
shapes, dtypes) and takes rank 0's values. Parameters are grouped into buckets of at most
``bucket_cap_mb`` (in reverse registration order, as torch's DDP, since backward reaches the
last layers first). Each forward hooks the current parameters' graph leaves into the autodiff
backward pass (``burnpy.autodiff.graph.register_leaf_hook``); as soon as every gradient of a
bucket is final, the bucket is flattened into one host buffer and its non-blocking
``MPI_Iallreduce`` starts, so communication overlaps the rest of the backward pass. Buckets
start in index order on every rank (MPI needs the same order everywhere). At the end of the
pass the requests are completed, divided by the world size and written back into the
Gradients ``backward()`` returns, so ``opt.step(ddp, grads)`` sees averaged gradients.

BatchNorm's statistics stay per rank (as torch's DDP: batch statistics of the local batch).

Parameters that get no gradient (torch's ``find_unused_parameters``): with every backward one
small all-reduce counts, per parameter, the ranks that gave it a gradient. By default a
parameter without a gradient on some rank is an error, raised on every rank (torch raises at
the next iteration). With ``find_unused_parameters=True`` a rank without a gradient contributes
zeros to the average, and a parameter no rank used gets no gradient at all, so the optimizer
leaves it alone (torch leaves its ``.grad`` untouched). A bucket holding an unused parameter
starts at the end of backward instead of overlapping it.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from burnpy.autodiff.backend import AutodiffBackend
from burnpy.autodiff.gradients import node_of
from burnpy.autodiff.graph import LeafHookHandle, Node, register_leaf_hook
from burnpy.backend.errors import InvalidArgumentError
from burnpy.distributed import failure
from burnpy.distributed.collectives import all_gather_object, broadcast
from burnpy.distributed.errors import DistributedError
from burnpy.distributed.group import ProcessGroup, current_group
from burnpy.distributed.host import wire_dtype
from burnpy.nn.module import Module
from burnpy.tensor._core import FLOAT, new
from burnpy.tensor.creation import from_owned_data

if TYPE_CHECKING:
    from mpi4py import MPI

#: (name, shape, dtype, is_param) of every tensor of a module: what all ranks must agree on.
Signature = list[tuple[str, tuple[int, ...], str, bool]]


def signature(module: Module) -> Signature:
    """The names, shapes and dtypes of ``module``'s parameters and buffers."""
    return [(s.name, s.tensor.shape, s.tensor.dtype.name, s.is_param) for s in module.slots()]


def mismatch(signatures: list[Signature]) -> str | None:
    """How the first rank differing from rank 0 differs (None when all agree)."""
    reference = {name: (shape, dtype, param) for name, shape, dtype, param in signatures[0]}
    for rank, sig in enumerate(signatures[1:], start=1):
        own = {name: (shape, dtype, param) for name, shape, dtype, param in sig}
        for name in reference.keys() - own.keys():
            return f"rank {rank} has no '{name}', which rank 0 has"
        for name in own.keys() - reference.keys():
            return f"rank {rank} has '{name}', which rank 0 does not"
        for name, (shape, dtype, param) in own.items():
            ref = reference[name]
            if (shape, dtype) != ref[:2]:
                return (f"'{name}' is {dtype} {list(shape)} on rank {rank} but {ref[1]} "
                        f"{list(ref[0])} on rank 0")
            if param != ref[2]:
                return f"'{name}' is a {'parameter' if param else 'buffer'} on rank {rank} only"
        if [s[0] for s in sig] != [s[0] for s in signatures[0]]:
            return f"rank {rank} registers its parameters in another order than rank 0"
    return None


class _Bucket:
    """Parameters whose gradients travel together, their flat buffer and its request."""

    __slots__ = ("dtype", "flat", "names", "pending", "request", "sizes")

    def __init__(self, dtype: np.dtype) -> None:
        self.dtype = dtype
        self.names: list[str] = []
        self.sizes: list[int] = []
        self.pending = 0
        self.flat: np.ndarray | None = None
        self.request: MPI.Request | None = None


class GradientSync:
    """The backward hook of one DDP model (a ``burnpy.autodiff.graph.LeafHook``)."""

    def __init__(self, group: ProcessGroup, buckets: list[_Bucket], log_events: bool,
                 find_unused: bool) -> None:
        self.group = group
        self.buckets = buckets
        self.find_unused = find_unused
        #: Every bucketed parameter, in bucket order: the entries of the used-count vector.
        self.names = [name for bucket in buckets for name in bucket.names]
        self.where = {name: (b, i) for b, bucket in enumerate(buckets)
                      for i, name in enumerate(bucket.names)}
        #: (event, detail, perf_counter time): "ready" (a gradient is final), "start" (a
        #: bucket's all-reduce), "finish" (the end of backward); kept when ``log_events``.
        self.events: list[tuple[str, str, float]] | None = [] if log_events else None
        self.nodes: dict[Node, str] = {}
        self.handle: LeafHookHandle | None = None
        self.grads: dict[str, Any] = {}
        self.shapes: dict[str, tuple[int, ...]] = {}
        self.backend: Any = None
        #: Whether gradient primitives are NumPy arrays (the averages are then used in place).
        self.host_native = False
        self.next_start = 0

    def arm(self, module: Module) -> None:
        """Hook the current parameters' leaves (a step replaces them) and reset the buckets."""
        self.close()
        for name, t in module.named_parameters():
            if name not in self.where:
                continue
            self.shapes[name] = t.shape
            node = node_of(t)
            if node is not None:
                self.nodes[node] = name
                backend = t.backend
                assert issubclass(backend, AutodiffBackend)  # tracked: node_of found a node
                self.backend = backend.InnerBackend
                self.host_native = isinstance(t.inner().primitive, np.ndarray)
        self.handle = register_leaf_hook(self.nodes, self)
        self.grads = {}
        for bucket in self.buckets:
            bucket.pending, bucket.flat, bucket.request = len(bucket.names), None, None
        self.next_start = 0

    def _log(self, event: str, detail: str) -> None:
        if self.events is not None:
            self.events.append((event, detail, time.perf_counter()))

    def leaf_ready(self, leaf: Node, grad: Any) -> None:
        """Keep ``leaf``'s final gradient; start every bucket now complete, in index order."""
        name = self.nodes[leaf]
        self.grads[name] = grad
        self._log("ready", name)
        bucket = self.buckets[self.where[name][0]]
        bucket.pending -= 1
        while self.next_start < len(self.buckets) and \
                self.buckets[self.next_start].pending == 0:
            self._start(self.next_start)
        self._progress()

    def _progress(self) -> None:
        """Let MPI move the started all-reduces along (it progresses inside MPI calls)."""
        from mpi4py import MPI

        requests = [b.request for b in self.buckets if b.request is not None]
        if requests:
            MPI.Request.Testall(requests)

    def _host(self, name: str, dtype: np.dtype) -> np.ndarray:
        grad = self.grads.get(name)
        if grad is None:  # no gradient on this rank: it contributes zeros
            return np.zeros(int(np.prod(self.shapes[name], dtype=np.int64)), dtype=dtype)
        array = grad if isinstance(grad, np.ndarray) else \
            new(self.backend, grad, FLOAT).into_data().array
        return array.reshape(-1)

    def _start(self, index: int) -> None:
        from mpi4py import MPI

        bucket = self.buckets[index]
        wire = wire_dtype(bucket.dtype)
        flat = np.concatenate([self._host(name, wire) for name in bucket.names]) \
            if len(bucket.names) > 1 else self._host(bucket.names[0], wire).copy()
        bucket.flat = flat.astype(wire, copy=False)
        bucket.request = self.group.comm.Iallreduce(MPI.IN_PLACE, bucket.flat, MPI.SUM)
        self.next_start = index + 1
        self._log("start", str(index))

    def finish(self, grads: dict[Node, Any]) -> None:
        """Start what is left, wait for every bucket and the used counts, write the averages
        into ``grads`` (raise on every rank if a parameter lacks a gradient somewhere and
        unused parameters are not allowed)."""
        from mpi4py import MPI

        self._log("finish", "")
        while self.next_start < len(self.buckets):
            self._start(self.next_start)
        used = np.array([self.grads.get(name) is not None for name in self.names], np.int32)
        requests = [b.request for b in self.buckets if b.request is not None]
        requests.append(self.group.comm.Iallreduce(MPI.IN_PLACE, used, MPI.SUM))
        failure.wait(self.group, requests, "DistributedDataParallel backward")
        missing = [(name, int(n)) for name, n in zip(self.names, used, strict=True)
                   if n < self.group.size]
        if missing and not self.find_unused:
            for bucket in self.buckets:
                bucket.flat = bucket.request = None
            listed = ", ".join(f"'{name}' (no gradient on {self.group.size - n} of "
                               f"{self.group.size} ranks)" for name, n in missing[:5])
            more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
            raise DistributedError(
                f"DistributedDataParallel: parameters took no part in the loss: {listed}{more}. "
                "Pass find_unused_parameters=True if some parameters may go unused in a step "
                "(a rank without a gradient then contributes zeros), or remove them")
        unused_everywhere = {name for name, n in missing if n == 0}
        by_name = {name: node for node, name in self.nodes.items()}
        for bucket in self.buckets:
            assert bucket.flat is not None
            flat = bucket.flat
            np.divide(flat, self.group.size, out=flat)
            offset = 0
            for name, size in zip(bucket.names, bucket.sizes, strict=True):
                part = flat[offset:offset + size].reshape(self.shapes[name])
                offset += size
                node = by_name.get(name)
                if node is not None and name not in unused_everywhere:
                    grads[node] = self._primitive(part, bucket.dtype)
            bucket.flat = bucket.request = None

    def _primitive(self, array: np.ndarray, dtype: np.dtype) -> Any:
        """``array`` as a gradient primitive of the inner backend, in the parameter's dtype."""
        array = array.astype(dtype, copy=False)
        if self.host_native:
            return array
        return from_owned_data(array, backend=self.backend).primitive

    def close(self) -> None:
        """Unhook the parameters."""
        if self.handle is not None:
            self.handle.remove()
            self.handle = None
        self.nodes = {}


class DistributedDataParallel(Module):
    """Wraps ``module`` for data-parallel training on every rank of the process group.

    ``ddp(x)`` runs ``module(x)``; ``loss.backward()`` returns gradients averaged over the
    ranks; ``opt.step(ddp, grads)`` updates the replica as for any module (parameter names
    start with ``module.``, as torch's). ``log_events`` keeps ``ddp.events`` (when each
    gradient was final and each bucket's all-reduce started), to see the overlap.
    ``find_unused_parameters``: whether a parameter may get no gradient on some ranks (see
    the module docstring); by default that raises ``DistributedError``. Parameters that do
    not require a gradient at construction are left out, as torch's.
    """

    _sync: GradientSync

    def __init__(self, module: Module, bucket_cap_mb: float = 25.0,
                 log_events: bool = False, find_unused_parameters: bool = False) -> None:
        if bucket_cap_mb <= 0:
            raise InvalidArgumentError(f"DistributedDataParallel: bucket_cap_mb must be > 0, "
                                       f"got {bucket_cap_mb}")
        backend = module.backend
        if backend is None or not backend.ad_enabled():
            raise InvalidArgumentError("DistributedDataParallel: the module must be on an "
                                       "autodiff backend (Autodiff(B))")
        group = current_group("DistributedDataParallel")
        problem = mismatch([cast(Signature, s) for s in all_gather_object(
            signature(module), "DistributedDataParallel")])
        if problem is not None:
            raise DistributedError(f"DistributedDataParallel: the ranks hold different models: "
                                   f"{problem}")
        self.module = module
        for slot in module.slots():
            if slot.tensor.kind in (FLOAT, "int", "bool"):
                value = broadcast(slot.tensor, 0)
                if group.rank != 0:
                    if slot.is_param and slot.tensor.is_require_grad():
                        value.require_grad()
                    slot.write(value)
        object.__setattr__(self, "_sync", GradientSync(
            group, _buckets(module, bucket_cap_mb * 2**20), log_events,
            find_unused_parameters))

    @property
    def events(self) -> list[tuple[str, str, float]]:
        """The event log of the last backward passes (empty unless ``log_events``)."""
        return self._sync.events or []

    @property
    def bucket_names(self) -> list[list[str]]:
        """The parameter names of each bucket, in the order their all-reduces start."""
        return [list(b.names) for b in self._sync.buckets]

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """``module(*args, **kwargs)``, with its parameters hooked for the next backward."""
        self._sync.arm(self.module)
        return self.module(*args, **kwargs)

    def extra_repr(self) -> str:
        return f"{len(self._sync.buckets)} buckets, world size {self._sync.group.size}"


def _buckets(module: Module, cap_bytes: float) -> list[_Bucket]:
    """Parameters requiring a gradient in reverse registration order, cut into buckets of
    one dtype and at most ``cap_bytes`` (a larger parameter gets a bucket of its own)."""
    buckets: list[_Bucket] = []
    for name, t in reversed(list(module.named_parameters())):
        if not t.is_require_grad():
            continue
        dtype = t.dtype.numpy
        size = t.numel()
        last = buckets[-1] if buckets else None
        full = last is not None and (sum(last.sizes) + size) * dtype.itemsize > cap_bytes
        if last is None or last.dtype != dtype or full:
            last = _Bucket(dtype)
            buckets.append(last)
        last.names.append(name)
        last.sizes.append(size)
    return buckets
