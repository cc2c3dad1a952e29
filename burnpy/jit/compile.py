"""``bp.compile(fn)``: record ``fn`` once per input signature under ``Capture``, then replay
the recorded graph, a flat generated function of the backend's ops, on later calls.

The state ``fn`` reads and writes outside its arguments is part of the graph, not baked into
it. Before recording, the objects ``fn`` can reach are walked (its arguments, the ``self`` of
a bound method, its closure's cells and the globals its code names, and inside those:
optimizers (``param_groups``, ``state``, ``steps``, their other attributes), dicts, lists,
tuples and deques, every other object's attributes (a module's, a scheduler's, those of
``__slots__`` and of its classes), and the closure cells of functions held there (a bound
method's object too), to any depth up to 24 objects and 10,000 entries; a call
reaching more, a set of objects, a ``bytearray``, a NumPy array over 64 KiB or an iterator
(``next(batches)`` would replay the first batch) runs eagerly, its state being more than a
replay can check, as does a recording that draws from a host random generator (Python's or
NumPy's, global or reached: the draw would be baked in) (``fullgraph=True`` raises
``GraphBreakError``). Each tensor found is a *location*:
a tensor object (a parameter or buffer, re-pointed in place by ``ParamSlot.write`` or an
in-place op) or a container entry (an optimizer's state, replaced by a new tensor each step).
Every location's primitive is a graph input, bound at each call to its current value; every
location ``fn`` changed (another primitive, or another tensor) is a graph output written back
after each replay, as eager execution would (a fresh tracked leaf where ``fn`` made one).
Optimizers' learning rates, and the step counts of the optimizers whose update is one backend
op with the step as an argument, are symbolic scalars (``burnpy.ir.symbolic``): read at each
call, advanced after each replay.

Guards: a call replays a graph recorded with the same signature (each argument's backend,
kind, shape and dtype, the values of Python scalars among the arguments, the closure's cells
and the globals named, the grad mode and autocast regions), the same reachable objects, the
same state (each location's backend, kind, shape and dtype, the optimizers' state sizes and
the very dicts their state is in, and everything else the walk passed as it was before the
recording: each dict's, list's and attribute dict's size, so an entry added records again;
each plain scalar (``bool``, ``int``, ``float``, ``complex``, ``str``, ``bytes``, None, and
tuples and sets of them; a module's ``self.scale`` or training flag, a dropout's ``p``, an
optimizer's ``weight_decay``) by value and type, compared as ``marshal`` bytes in one go,
so ``1`` is not ``1.0`` and ``0.0`` is not ``-0.0``; each other object by identity, so a
swapped submodule or optimizer records again; each small NumPy array by its bytes, whose
values a recording bakes in; a scalar ``fn`` itself changes, a counter, so records at each
call, counting as eager does) and the same outcomes of the Python branches taken on
symbolic scalars; otherwise it records again (at most ``cache_size`` graphs, the oldest
dropped). Each graph's state checks, binding, replay and write-back are one generated
function of flat checks and direct calls;
a call of positional arguments first tries the one the previous call replayed, whose
generated prefix also checks the signature and the closure's cells and globals (by value
for scalars, by identity otherwise), so a replayed call costs about a microsecond beyond
its kernels. A host read inside ``fn`` (``.item()``, ``bool(t)``, ``to_numpy()``) raises a
``GraphBreakError`` naming the call and its line with ``fullgraph=True``; otherwise it splits
the graph there: a replay runs the ops before the read, reads the value again and goes on
only if it reads what the recording read (the same bytes: the Python after the read, its
branches and the scalars it derived, was recorded for that value); a call reading another
value runs eagerly (nothing was written back yet), and after two such calls the signature
runs eagerly from then on (a loss logged with ``.item()`` differs at every step). A graph
with a random op before a read is not split (a stopped replay would have drawn from the
generator): its signature runs eagerly, as does one that writes in place into a tensor
sharing a host array (``from_numpy``: the write goes to the array, outside the graph). Host-side
validity checks (embedding's index bounds, cross entropy's targets) are skipped while
recording (``burnpy.capture.recording_active``), so a replay does not make them. A call that
adds state (an optimizer's first step
creates its moments) runs eagerly and records again on the next call.

``dynamic=True``: the argument tensors' dims of 2 or more are symbols while ``fn`` records
(``burnpy.ir.symbolic``; sizes 0 and 1 are part of the signature, as in torch), seen above
Capture through ``Shaped`` primitives (``burnpy.capture.dynamic``), so shapes computed in
Python and each op's output dims (``burnpy.ir.shapes``) are expressions of them, evaluated
again at each replay; branches on sizes are guards. Sizes read without a guard (``range(n)``,
``np.arange(n)``) are invisible to the recording, so a graph replays only at its recorded
sizes (``provisional``) until a recording at other sizes gives the same program
(``_same_program``); from then on it serves any size its guards allow. A tensor argument that
tracks gradients keeps its sizes.

Random ops are recorded as nodes, so each replay draws fresh values from the backend's
seeded generator in eager's order. Tensors must run on a ``Capture(B)`` backend (under
``Autodiff`` or directly): ``Autodiff(Capture(CpuBackend))``, whose replays are bitwise equal to
eager; on ``Autodiff(Capture(Fusion(CpuBackend)))`` each run of elementwise ops over one shape
replays as one kernel of B's fuser (``burnpy.jit.fuse``), equal to eager within rounding.
"""

from __future__ import annotations

import builtins
import linecache
import marshal
import operator
import sys
import warnings
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from burnpy.amp import is_autocast_enabled
from burnpy.autodiff.modes import is_grad_enabled
from burnpy.backend.dtype import dtype_of_numpy
from burnpy.backend.errors import BurnpyError, InvalidArgumentError
from burnpy.capture import CONSTANT, CaptureBackend, Graph, Ref, recording_active
from burnpy.capture.dynamic import Shaped, plain
from burnpy.ir import symbolic
from burnpy.ir.symbolic import Sym, Tape
from burnpy.jit.reach import (
    ARGS,
    BY_VALUE,
    EMPTY,
    Entries,
    Reach,
    Roots,
    autocast_regions,
    flatten_leaves,
    host_rng_states,
    leaf_signature,
    signature_of,
)
from burnpy.jit.replay import (
    SPLIT,
    SPLIT_MISSES,
    collect_syms,
    generate_replay,
    lower_args,
    plain_value,
    splittable,
)
from burnpy.tensor import Tensor
from burnpy.tensor._core import FLOAT, QUANTIZED
from burnpy.tensor._core import new as wrap

_INNER = {"float": "inner", "int": "int_inner", "bool": "bool_inner"}
_FROM_INNER = {"float": "from_inner", "int": "int_from_inner", "bool": "bool_from_inner"}


class GraphBreakError(BurnpyError, RuntimeError):
    """``bp.compile(fullgraph=True)``: ``fn`` read a tensor's value on the host."""


class CacheInfo(NamedTuple):
    """A compiled function's cache: graphs kept (``size``, at most ``max_size``), eager
    signatures among them, how many calls recorded, replayed or ran eagerly, and
    (``dynamic=True``) how many graphs serve any size of their symbolic dims."""

    size: int
    max_size: int
    eager_signatures: int
    recordings: int
    replays: int
    eager_calls: int
    dynamic_graphs: int = 0


# ---- moving primitives between a tensor's backend and the Capture class ----------------------
def _chain(backend: Any, kind: str, op: str) -> tuple[type[CaptureBackend], list[Any]]:
    """The Capture class under ``backend`` and the decorators above it, outermost first."""
    chain = []
    while not (isinstance(backend, type) and issubclass(backend, CaptureBackend)):
        if kind == QUANTIZED or not hasattr(backend, "InnerBackend"):
            raise InvalidArgumentError(
                f"{op}: a {kind} tensor on {backend.name()} does not run on a Capture backend; "
                "build the model and its inputs on Capture(B), e.g. "
                "Autodiff(Capture(CpuBackend))")
        chain.append(backend)
        backend = backend.InnerBackend
    return backend, chain


def _down(chain: Sequence[Any], kind: str, primitive: Any) -> Any:
    for backend in chain:
        primitive = getattr(backend, _INNER[kind])(primitive)
    return primitive


def _up(chain: Sequence[Any], kind: str, primitive: Any) -> Any:
    for backend in reversed(chain):
        primitive = getattr(backend, _FROM_INNER[kind])(primitive)
    return primitive


def _dynamic_signature(leaf: Any) -> Any:
    """``leaf_signature`` with each dim of 2 or more of a tensor left open (None): a
    ``dynamic=True`` graph is shared by those sizes; sizes 0 and 1 are specialized, as torch
    does (a size-1 dim broadcasts)."""
    if isinstance(leaf, Tensor) and leaf.kind != QUANTIZED:
        backend, kind, shape, dtype, device = signature_of(leaf)
        return (backend, kind, tuple(None if d >= 2 else d for d in shape), dtype, device)
    return leaf_signature(leaf)


# ---- one recorded signature ------------------------------------------------------------------
#: Where a result that is not a tensor comes from: a constant, or a symbolic scalar.
_CONSTANT, _SCALAR = -1, -2


class _Written(NamedTuple):
    """A location ``fn`` changed: its position, whether a new tensor replaced the old one
    there, its backend, kind and tracking, the decorators over the Capture class, and its
    output position."""

    location: int
    replaced: bool
    backend: Any
    kind: str
    tracked: bool
    chain: list[Any]
    output: int


#: What an entry's generated function returns when a call does not match it, and when the
#: call matches an entry that runs eagerly.
_MISS, _EAGER = object(), object()


@dataclass
class _Entry:
    """A recorded signature: how to check a call against it and how to replay it (``run``
    None: this signature runs eagerly). ``call(leaves)`` is both, generated (``_Source``):
    ``_MISS`` where the call does not match, else the replay's result (``_EAGER`` when
    ``run`` is None); ``fast(args)`` also checks what picks the entry from the cache (the
    signature and the roots), for a call of positional arguments."""

    reach: Reach
    roots: tuple[int, ...]
    descs: list[tuple[Any, ...]]
    sizes: tuple[int, ...]
    fixed: tuple[Any, ...]
    tape: Tape
    #: What the walk's containers held before the recording: their sizes, the plain scalars'
    #: ``marshal`` bytes, the other objects and each array's bytes, dtype and shape
    #: (``Reach.sized``, ``values``, ``held``, ``arrays``).
    lengths: tuple[int, ...] = ()
    values: bytes = b""
    held: tuple[Any, ...] = ()
    arrays: tuple[tuple[bytes, Any, tuple[int, ...]], ...] = ()
    run: Callable[..., Any] | None = None
    chains: list[list[Any]] = field(default_factory=list)
    inputs: list[int] = field(default_factory=list)
    #: Locations sharing a primitive when recorded: (first, other, whether one tensor).
    ties: list[tuple[int, int, bool]] = field(default_factory=list)
    #: Whether the graph reads values on the host (``Graph.host_reads``): a replay may then
    #: stop at a read that differs (``SPLIT``), and ``misses`` counts those.
    splits: bool = False
    misses: int = 0
    #: Locations whose contents the graph baked in (``Graph.specialized``): (location, the
    #: primitive a replay requires there).
    specialized: list[tuple[int, Any]] = field(default_factory=list)
    slot_terms: list[symbolic.Term] = field(default_factory=list)
    scalar_writes: list[tuple[int, symbolic.Expr]] = field(default_factory=list)
    written: list[_Written] = field(default_factory=list)
    template: Any = None
    results: list[Any] = field(default_factory=list)
    #: ``dynamic=True``: each argument location's dims (an int where fixed, None where a
    #: symbol), the symbols' (location, dim) in value order after the state scalars, the
    #: values they had when recorded, and whether the graph is still ``provisional`` (replayed
    #: at those values only, until a recording at other sizes gives the same program).
    arg_shapes: dict[int, tuple[int | None, ...]] = field(default_factory=dict)
    symbols: list[tuple[int, int]] = field(default_factory=list)
    symbol_values: tuple[int, ...] = ()
    provisional: bool = False
    graph: Graph | None = None
    call: Callable[[Sequence[Any]], Any] | None = None
    fast: Callable[[tuple[Any, ...]], Any] | None = None


class _Source:
    """A generated function's source and the objects it names, for an entry's ``call`` and
    ``fast``: each check one flat ``if``, each primitive moved through its decorators by
    direct calls, so a replayed call costs little beyond its kernels."""

    __slots__ = ("lines", "names", "scope")

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.scope: dict[str, Any] = {"_MISS": _MISS, "_EAGER": _EAGER, "EMPTY": EMPTY,
                                      "Tensor": Tensor, "wrap": wrap, "dtype_of": dtype_of_numpy,
                                      "is_not": operator.is_not, "dumps": marshal.dumps}
        self.names: dict[int, str] = {}  # by the identity of each object named (held in scope)

    def constant(self, value: Any) -> str:
        """A name for ``value`` in the generated code."""
        name = self.names.get(id(value))
        if name is None:
            name = self.names[id(value)] = f"c{len(self.scope)}"
            self.scope[name] = value
        return name

    def guard(self, condition: str) -> None:
        """Return ``_MISS`` when ``condition`` holds."""
        self.lines.append(f"    if {condition}: return _MISS")

    def tensor(self, t: str, p: str, desc: tuple[Any, ...], is_tensor: bool) -> None:
        """Check that tensor ``t`` (its primitive read into ``p``) still has ``desc``
        (``signature_of``: backend, kind, shape, dtype, device), and is one unless ``is_tensor``."""
        backend, kind, shape, dtype, device = desc
        if not is_tensor:
            self.guard(f"not isinstance({t}, Tensor)")
        stored = dtype.numpy if dtype_of_numpy(dtype.numpy) is dtype else object()
        self.lines.append(f"    {p} = {t}.primitive")
        condition = (f"{t}.backend is not {self.constant(backend)} or {t}.kind != {kind!r} or "
                     f"{_shape_differs(p, shape)} or ({p}.dtype is not "
                     f"{self.constant(stored)} and dtype_of({p}.dtype) is not "
                     f"{self.constant(dtype)})")
        if device is not None:
            where = self.constant(getattr(backend, f"{kind}_device"))
            condition += f" or {where}({p}) != {self.constant(device)}"
        self.guard(condition)

    def moved(self, chain: Sequence[Any], method: str, value: str, outward: bool = False
              ) -> str:
        """``value`` moved down ``chain`` (outermost first) to the Capture class by each
        decorator's ``method``, or up from it (``outward``)."""
        for backend in (reversed(chain) if outward else chain):
            value = f"{self.constant(getattr(backend, method))}({value})"
        return value

    def build(self, name: str, signature: str) -> Callable[..., Any]:
        source = f"def {name}({signature}):\n" + "\n".join(self.lines) + "\n"
        exec(builtins.compile(source, f"<bp.compile {name}>", "exec"), self.scope)
        function: Callable[..., Any] = self.scope[name]
        return function


def _shape_differs(p: str, shape: tuple[int | None, ...]) -> str:
    """The condition that primitive ``p``'s shape is not ``shape`` (None: any size there)."""
    if None not in shape:
        return f"{p}.shape != {shape!r}"
    fixed = "".join(f" or {p}.shape[{k}] != {d}" for k, d in enumerate(shape) if d is not None)
    return f"len({p}.shape) != {len(shape)}{fixed}"


def _call_function(entry: _Entry) -> Callable[[Sequence[Any]], Any]:
    """The entry's ``call(leaves)``: ``leaves`` are a call's arguments whose signature (the
    cache's key) and roots matched the entry's."""
    src = _Source()
    _checks_and_replay(src, entry)
    return src.build("call", "leaves")


def _fast_function(entry: _Entry, key: Any, leaves: list[Any], roots: Roots,
                   seen: list[Any]) -> Callable[[tuple[Any, ...]], Any] | None:
    """The entry's ``fast(args)``: first what picks the entry from the cache, recorded in
    ``key`` (each argument's desc, type and value or identity, the grad mode, the autocast
    regions) and ``seen`` (what each of ``roots``' places held), then ``call``'s body. None
    where a closure cell was empty (its check would need its own ``try``)."""
    if any(value is EMPTY for (_, name), value in zip(roots.places, seen, strict=True)
           if name is None):
        return None
    leaf_keys, _, grad, regions, _ = key
    src = _Source()
    src.guard(f"len(args) != {len(leaves)}")
    if leaves:
        src.lines.append(f"    {''.join(f'a{j}, ' for j in range(len(leaves)))}= args")
    for j, (leaf, leaf_key) in enumerate(zip(leaves, leaf_keys, strict=True)):
        if isinstance(leaf, Tensor):
            src.tensor(f"a{j}", f"b{j}", leaf_key, False)
        elif isinstance(leaf, BY_VALUE):
            src.guard(_scalar_differs(src, f"a{j}", leaf))
        else:
            src.guard(f"id(a{j}) != {id(leaf)}")
    src.guard(f"{src.constant(is_grad_enabled)}() != {grad!r}")
    if regions:
        src.guard(f"{src.constant(autocast_regions)}() != {src.constant(regions)}")
    else:
        enabled = src.constant(is_autocast_enabled)
        src.guard(f"{enabled}('cpu') or {enabled}('cuda')")
    if roots.places:
        body, src.lines = src.lines, []
        getters: dict[int, str] = {}  # each globals dict's get, named once
        for (holder, name), value in zip(roots.places, seen, strict=True):
            if name is None:
                read = f"{src.constant(holder)}.cell_contents"
            else:
                if id(holder) not in getters:
                    getters[id(holder)] = src.constant(holder.get)
                read = f"{getters[id(holder)]}({name!r}, EMPTY)"
            src.lines.append(f"    v = {read}")
            src.guard(_scalar_differs(src, "v", value) if isinstance(value, bool | int | float
                                                                      | str)
                      else f"v is not {src.constant(value)}")
        src.lines = [*body, "    try:", *("    " + line for line in src.lines),
                     "    except ValueError:  # a cell emptied", "        return _MISS"]
    src.lines.append("    leaves = args")
    _checks_and_replay(src, entry)
    return src.build("fast", "args")


def _read(groups: list[Entries]) -> tuple[Any, ...]:
    """What the entries ``groups`` name hold now (``Reach.values`` or ``held``)."""
    out: list[Any] = []
    for container, keys, by_attribute in groups:
        if keys is None:
            out.append(container)
            continue
        got = (operator.attrgetter if by_attribute else operator.itemgetter)(*keys)(container)
        out.extend(got if len(keys) > 1 else (got,))
    return tuple(out)


def _snapshot(reach: Reach) -> tuple[bytes, tuple[Any, ...],
                                        tuple[tuple[bytes, Any, tuple[int, ...]], ...]]:
    """What the entries the walk passed hold now: the plain scalars' bytes in marshal's
    version 2 (no references, so equal values give equal bytes, and the bytes differ with
    each value's type and a zero's sign), the other objects, and the arrays' contents."""
    return (marshal.dumps(_read(reach.values), 2), _read(reach.held),
            tuple((a.tobytes(), a.dtype, a.shape) for a in reach.arrays))


def _reads(src: _Source, groups: list[Entries]) -> str:
    """The expression building ``_read(groups)`` in generated code."""
    items = []
    for container, keys, by_attribute in groups:
        name = src.constant(container)
        if keys is None:
            items.append(f"{name}, ")
        elif len(keys) > 1:
            get = (operator.attrgetter if by_attribute else operator.itemgetter)(*keys)
            items.append(f"*{src.constant(get)}({name}), ")
        elif by_attribute:
            items.append(f"{name}.{keys[0]}, ")
        else:
            items.append(f"{name}[{src.constant(keys[0])}], ")
    return "".join(items)


def _scalar_differs(src: _Source, name: str, value: Any) -> str:
    """The condition that ``name`` is not ``value``: another type, or another value (a zero
    of the other sign too, see ``value_key``)."""
    known = src.constant(value)
    differs = f"{name} != {known}"
    if value == 0 and isinstance(value, float | complex):
        differs += f" or repr({name}) != {src.constant(repr(value))}"
    return (f"type({name}) is not {src.constant(type(value))} or ({name} is not {known} and "
            f"({differs}))")


def _checks_and_replay(src: _Source, entry: _Entry) -> None:
    """The lines checking a call's state against the entry's (optimizers' state sizes, the
    step counts guarded by value, what the walk passed: sizes, scalars, objects and arrays,
    each location's desc and the ties between them, the tape's guards), then running the
    graph on it and writing back. A walk that gave up runs eagerly whatever the state."""
    reach = entry.reach
    if reach.incomplete is not None:
        src.lines.append("    return _EAGER")
        return
    sizes = iter(entry.sizes)
    for opt in reach.optimizers:  # the same sizes, and the same dicts the locations are in
        name = src.constant(opt)
        steps, count = next(sizes), next(sizes)
        src.guard(f"len({name}.steps) != {steps} or len({name}.state) != {count} or "
                  f"{name}.steps is not {src.constant(opt.steps)}")
        groups = src.constant(list(opt.param_groups))
        src.guard(f"len({name}.param_groups) != len({groups}) or "
                  f"any(map(is_not, {name}.param_groups, {groups}))")
        if count:
            each = [next(sizes) for _ in range(count)]
            held = src.constant(list(opt.state.values()))
            src.guard(f"any(map(is_not, {name}.state.values(), {held})) or "
                      f"list(map(len, {name}.state.values())) != {src.constant(each)}")
    if reach.sized:  # no entry added or removed, ...
        src.guard(f"tuple(map(len, {src.constant(tuple(reach.sized))})) != "
                  f"{src.constant(entry.lengths)}")
    # ... each plain scalar of the same type and value, each object the same (a replaced one
    # records again), each tensor's place still there: read under one try
    reads, checks = [], []
    if reach.values:
        reads.append(f"    sv = dumps(({_reads(src, reach.values)}), 2)")
        checks.append(f"sv != {src.constant(entry.values)}")
    if reach.held:
        reads.append(f"    ov = ({_reads(src, reach.held)})")
        checks.append(f"any(map(is_not, ov, {src.constant(entry.held)}))")
    for i, loc in enumerate(reach.tensors):
        if loc.holder is None:
            src.lines.append(f"    t{i} = {src.constant(loc.obj)}")
        elif loc.holder is not ARGS:
            reads.append(f"    t{i} = {src.constant(loc.holder)}[{src.constant(loc.key)}]")
    if reads:
        src.lines += ["    try:", *("    " + line for line in reads),
                      "    except (LookupError, AttributeError, ValueError):  # gone, or no "
                      "longer plain", "        return _MISS"]
    if checks:
        src.guard(" or ".join(checks))
    for array, (data, dtype, shape) in zip(reach.arrays, entry.arrays, strict=True):
        name = src.constant(array)
        src.guard(f"{name}.tobytes() != {src.constant(data)} or {name}.dtype != "
                  f"{src.constant(dtype)} or {name}.shape != {src.constant(shape)}")
    for (holder, k), value in zip(reach.fixed, entry.fixed, strict=True):
        src.guard(f"{src.constant(holder)}.get({src.constant(k)}) != {src.constant(value)}")
    for i, (loc, desc) in enumerate(zip(reach.tensors, entry.descs, strict=True)):
        if loc.holder is ARGS:  # its desc is part of the key (its open dims are checked here)
            src.lines += [f"    t{i} = leaves[{loc.key}]", f"    p{i} = t{i}.primitive"]
            if i in entry.arg_shapes:
                src.guard(_shape_differs(f"p{i}", entry.arg_shapes[i]))
            continue
        src.tensor(f"t{i}", f"p{i}", desc, loc.holder is None)
    moved = {*entry.inputs, *(i for a, b, same in entry.ties if not same for i in (a, b))}
    for i in sorted(moved):
        kind = entry.descs[i][1]
        src.lines.append(f"    q{i} = {src.moved(entry.chains[i], _INNER[kind], f'p{i}')}")
    for a, b, same in entry.ties:  # still one tensor, or one storage, as when recorded
        src.guard(f"t{a} is not t{b}" if same else f"q{a} is not q{b}")
    for i, primitive in entry.specialized:  # contents baked in: the very same primitive
        src.guard(f"q{i} is not {src.constant(primitive)}")
    scalars = "".join(f"{src.constant(h)}[{src.constant(k)}], " for h, k in reach.scalars)
    dims = "".join(f"p{i}.shape[{d}], " for i, d in entry.symbols)
    src.lines.append(f"    values = [{scalars}{dims}]")
    if entry.provisional:  # not yet seen to hold at other sizes
        src.guard(f"values[{len(reach.scalars)}:] != {list(entry.symbol_values)!r}")
    for term, outcome in entry.tape.terms:
        src.guard(f"{symbolic.source(term, 'values', src.constant)} != {src.constant(outcome)}")
    if entry.run is None:
        src.lines.append("    return _EAGER")
        return
    slots = "".join(f"{symbolic.source(t, 'values', src.constant)}, " for t in entry.slot_terms)
    src.lines.append(f"    outs = {src.constant(entry.run)}("
                     f"[{''.join(f'q{i}, ' for i in entry.inputs)}], [{slots}])")
    if entry.splits:
        src.scope["SPLIT"] = SPLIT
        src.lines.append("    if outs is SPLIT: return SPLIT")
    for w in entry.written:
        value = src.moved(w.chain, _FROM_INNER[w.kind], f"outs[{w.output}]", outward=True)
        if w.tracked:
            value = f"{src.constant(w.chain[0].float_set_require_grad)}({value}, True)"
        loc, backend = reach.tensors[w.location], src.constant(w.backend)
        if w.replaced:
            src.lines.append(f"    {src.constant(loc.holder)}[{src.constant(loc.key)}] = "
                             f"wrap({backend}, {value}, {w.kind!r})")
        else:
            src.lines += [f"    t{w.location}.backend = {backend}",
                          f"    t{w.location}.primitive = {value}"]
    for position, expr in entry.scalar_writes:
        holder, k = reach.scalars[position]
        src.lines.append(f"    {src.constant(holder)}[{src.constant(k)}] = "
                         f"{src.constant(expr)}(values)")
    results = []
    for backend, kind, how, i in entry.results:
        if i >= 0:
            value = src.moved(how, _FROM_INNER[kind], f"outs[{i}]", outward=True)
            results.append(f"wrap({src.constant(backend)}, {value}, {kind!r})")
        else:
            results.append(f"{src.constant(how)}(values)" if i == _SCALAR
                           else src.constant(kind))
    src.lines.append(f"    return {_rebuilt(src, entry.template, results)}")


def _rebuilt(src: _Source, template: Any, results: list[str]) -> str:
    """The expression building ``fn``'s result (its structure, ``template``, made by
    ``flatten_leaves``) from its leaves' expressions."""
    if isinstance(template, tuple | list):
        items = "".join(f"{_rebuilt(src, t, results)}, " for t in template)
        built = f"({items})" if isinstance(template, tuple) else f"[{items}]"
        kind = type(template)
        return built if kind is tuple or kind is list else f"{src.constant(kind)}({built})"
    if isinstance(template, dict):  # a plain dict, as flatten_leaves made it
        return "{" + "".join(f"{src.constant(k)}: {_rebuilt(src, v, results)}, "
                             for k, v in template.items()) + "}"
    return results[template]


def _sizes(reach: Reach) -> tuple[int, ...]:
    sizes = []
    for opt in reach.optimizers:
        sizes.append(len(opt.steps))
        sizes.append(len(opt.state))
        sizes.extend(len(entries) for entries in opt.state.values())
    return tuple(sizes)


def _host_read_site(op: str, fn_name: str) -> GraphBreakError:
    """The error for a host read, naming the first line of user code on the stack and the
    burnpy call it made."""
    frame = sys._getframe(2)
    call = op
    while frame is not None:
        module = str(frame.f_globals.get("__name__", ""))
        inside = module.startswith("burnpy") and not module.startswith("burnpy.examples")
        if inside:  # the outermost library call is the one the user's line made
            call = frame.f_code.co_name
        else:
            line = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
            return GraphBreakError(
                f"bp.compile(fullgraph=True): {fn_name} reads a tensor's value on the host "
                f"with {call}() at {frame.f_code.co_filename}:{frame.f_lineno} ({line!r}); "
                "keep the value a tensor, or compile with fullgraph=False (that signature "
                "then runs eagerly)")
        frame = frame.f_back  # type: ignore[assignment]
    return GraphBreakError(f"bp.compile(fullgraph=True): {fn_name} reads a tensor's value on "
                           f"the host ({op})")


class Compiled:
    """A function compiled by ``bp.compile``: call it as ``fn``; ``cache_info()`` reports its
    graphs, ``reset()`` drops them."""

    #: What another compiled function calling this one reaches through it is what ``fn``
    #: reaches (``__wrapped__``), not this object's cache (``burnpy.jit.reach``).
    state_of_wrapped = True

    def __init__(self, fn: Callable[..., Any], fullgraph: bool, cache_size: int,
                 dynamic: bool = False) -> None:
        if cache_size < 1:
            raise InvalidArgumentError(f"bp.compile: cache_size must be >= 1, got {cache_size}")
        self.fn = self.__wrapped__ = fn
        self.fullgraph = fullgraph
        self.dynamic = dynamic
        self._signature = _dynamic_signature if dynamic else leaf_signature
        self.cache_size = cache_size
        self.__name__ = getattr(fn, "__name__", type(fn).__name__)
        self.__doc__ = getattr(fn, "__doc__", None)
        self._cache: OrderedDict[Any, list[_Entry]] = OrderedDict()
        self._counts = [0, 0, 0]  # recordings, replays, eager calls
        self._roots = Roots(fn)
        self._fast: Callable[[tuple[Any, ...]], Any] | None = None
        self._fast_entry: _Entry | None = None
        self._warned = False  # about a full cache, once

    def cache_info(self) -> CacheInfo:
        """The cache's size, bound and eager signatures, and the calls by kind."""
        entries = [e for group in self._cache.values() for e in group]
        recordings, replays, eager_calls = self._counts
        return CacheInfo(len(entries), self.cache_size, sum(e.run is None for e in entries),
                         recordings, replays, eager_calls,
                         sum(bool(e.symbols) and not e.provisional and e.run is not None
                             for e in entries))

    def reset(self) -> None:
        """Drop every recorded graph: the next call records again."""
        self._cache.clear()
        self._fast = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if recording_active():  # called by a function being recorded: its ops join that graph
            return self.fn(*args, **kwargs)
        fast = self._fast  # the entry the last call replayed, while it is the newest used
        if fast is not None and not kwargs:
            result = fast(args)
            if result is not _MISS:
                if result is SPLIT:
                    assert self._fast_entry is not None
                    return self._split(self._fast_entry, args, kwargs)
                self._counts[1] += 1
                return result
        self._fast = None
        leaves: list[Any]
        template: Any
        if kwargs or any(type(a) in (tuple, list, dict) for a in args):
            leaves = []
            template = repr(flatten_leaves((args, kwargs), leaves))
        else:  # flat positional arguments
            leaves, template = list(args), len(args)
        seen = self._roots.read()
        root_objects, scalars = self._roots.split(seen)
        signature = self._signature
        key = (tuple(signature(leaf) for leaf in leaves), template, is_grad_enabled(),
               autocast_regions(), tuple(scalars))
        root_objects += [x for x in leaves
                         if not isinstance(x, Tensor) and not isinstance(x, BY_VALUE)]
        roots = tuple(id(r) for r in root_objects)
        for entry in self._cache.get(key, ()):
            if entry.roots != roots:
                continue
            assert entry.call is not None
            result = entry.call(leaves)
            if result is _MISS:
                continue
            self._cache.move_to_end(key)
            if result is _EAGER:
                self._counts[2] += 1
                return self.fn(*args, **kwargs)
            if result is SPLIT:
                return self._split(entry, args, kwargs)
            self._counts[1] += 1
            self._fast, self._fast_entry = entry.fast, entry
            return result
        return self._record(key, roots, root_objects, leaves, args, kwargs, seen)

    def _split(self, entry: _Entry, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """A replay that stopped at a host read giving another value than the recording's:
        run ``fn`` eagerly (nothing was written back); after ``SPLIT_MISSES`` such calls the
        signature runs eagerly from then on."""
        entry.misses += 1
        if entry.misses >= SPLIT_MISSES:
            entry.run = entry.fast = None
            entry.call = _call_function(entry)
            self._fast = None
        self._counts[2] += 1
        return self.fn(*args, **kwargs)

    def _record(self, key: Any, roots: tuple[int, ...], root_objects: list[Any],
                leaves: list[Any], args: tuple[Any, ...], kwargs: dict[str, Any],
                seen: list[Any]) -> Any:
        self._counts[0] += 1
        reach = Reach.of(leaves, root_objects)
        op = f"bp.compile({self.__name__})"
        if reach.incomplete is not None and self.fullgraph:
            raise GraphBreakError(f"bp.compile(fullgraph=True): {self.__name__} "
                                  f"{reach.incomplete}, which a replay cannot check; pass what "
                                  "it reads as arguments, or compile with fullgraph=False (that "
                                  "signature then runs eagerly)")
        tensors = [loc.get(leaves) for loc in reach.tensors]
        capture: Any = None
        chains: list[list[Any]] = []
        for t in tensors:
            c, chain = _chain(t.backend, t.kind, op)
            if capture is not None and c is not capture:
                raise InvalidArgumentError(f"{op}: tensors run on two Capture classes "
                                           f"({capture.__name__} and {c.__name__})")
            capture = c
            chains.append(chain)
        if capture is None:
            raise InvalidArgumentError(f"{op}: found no tensor among the arguments or the "
                                       "state the function reaches")
        before = [(t, t.primitive, t.backend) for t in tensors]
        # a tensor sharing a host array (from_numpy) takes in-place writes into that array,
        # outside the graph: a signature that writes one runs eagerly
        shared = [(a, a.copy()) for a in (getattr(t, "_shares", None) for t in tensors)
                  if a is not None]
        primitives = [_down(ch, t.kind, t.primitive)
                      for ch, t in zip(chains, tensors, strict=True)]
        first: dict[int, int] = {}
        inputs, ties = [], []
        for i, p in enumerate(primitives):
            if id(p) in first:
                ties.append((first[id(p)], i, tensors[first[id(p)]] is tensors[i]))
            else:
                first[id(p)] = i
                inputs.append(i)
        tape = Tape()
        originals = [h[k] for h, k in reach.scalars]
        syms = [symbolic.tracked(v, i, tape) for i, v in enumerate(originals)]
        entry = _Entry(reach, roots, [signature_of(t) for t in tensors], _sizes(reach),
                       tuple(h.get(k) for h, k in reach.fixed), tape,
                       tuple(map(len, reach.sized)), *_snapshot(reach), chains=chains,
                       inputs=inputs, ties=ties)
        swapped = self._symbolic_dims(entry, tensors, primitives, len(originals)) if (
            self.dynamic and reach.incomplete is None) else []  # else it runs eagerly anyway
        fn_name = self.__name__

        def on_host_read(name: str) -> None:
            if self.fullgraph:
                raise _host_read_site(name, fn_name)

        for (h, k), s in zip(reach.scalars, syms, strict=True):
            h[k] = s
        rng_states = host_rng_states(reach.rngs)
        result = None
        try:
            with capture.recording([primitives[i] for i in inputs], on_host_read,
                                   lower_args, dynamic=bool(swapped)) as graph:
                try:
                    result = self.fn(*args, **kwargs)
                finally:
                    for t, primitive, symbolic_primitive in swapped:  # unless fn re-pointed it
                        if t.primitive is symbolic_primitive:
                            t.primitive = primitive
                outputs = self._outputs(entry, result, before, leaves)
                capture.set_outputs(graph, outputs)
        finally:
            after = [h[k] for h, k in reach.scalars]
            for (h, k), original, sym, now in zip(reach.scalars, originals, syms, after,
                                                  strict=True):
                h[k] = original if now is sym else now.value if isinstance(now, Sym) else now
            if swapped:  # even where fn raised: no symbolic primitive stays in the state
                _release(result, leaves, root_objects)
        if rng_states != host_rng_states(reach.rngs):  # a host draw: baked into the graph
            reach.incomplete = "draws host random numbers (random, numpy.random)"
            if self.fullgraph:
                raise GraphBreakError(
                    f"bp.compile(fullgraph=True): {fn_name} {reach.incomplete}, which a "
                    "replay would repeat; draw them with burnpy's random ops, or pass them "
                    "as arguments")
        same = self._same_state(entry, root_objects, leaves)  # else: keep no entry
        replayable = (same and splittable(graph) and reach.incomplete is None
                      and not any(bool((a != copy).any()) for a, copy in shared))
        if replayable:
            position = {v: j for j, v in enumerate(graph.inputs)}
            entry.specialized = [(entry.inputs[position[v]],
                                  plain(primitives[entry.inputs[position[v]]]))
                                 for v in dict.fromkeys(graph.specialized) if v in position]
            entry.splits = bool(graph.host_reads)
            self._finish(entry, graph, syms, after)
        group = self._cache.setdefault(key, [])
        if replayable and entry.provisional:
            confirmed = next((e for e in reversed(group) if e.provisional and e.roots == roots
                              and _same_program(e, entry, [*originals, *entry.symbol_values])),
                             None)
            if confirmed is not None:  # the program did not depend on the sizes it ran at
                confirmed.provisional = False
                confirmed.call = _call_function(confirmed)
                if confirmed.fast is not None:
                    confirmed.fast = _fast_function(confirmed, key, leaves, self._roots, seen)
                if self._fast_entry is confirmed:
                    self._fast = None
                return plain_value(result)
        if same:  # replayed, or run eagerly (a host read, a write into a host array)
            entry.call = _call_function(entry)
            if replayable and isinstance(key[1], int):  # positional arguments
                entry.fast = _fast_function(entry, key, leaves, self._roots, seen)
            group.append(entry)
            self._cache.move_to_end(key)
            while sum(len(g) for g in self._cache.values()) > self.cache_size:
                oldest = next(iter(self._cache))
                self._cache[oldest].pop(0)
                if not self._cache[oldest]:
                    del self._cache[oldest]
                if not self._warned:  # each call records now: dearer than running eagerly
                    self._warned = True
                    warnings.warn(
                        f"bp.compile({self.__name__}): more signatures than cache_size="
                        f"{self.cache_size}, so the oldest graph is dropped and calls keep "
                        "recording, each costing more than an eager call; if the sizes vary, "
                        "compile with dynamic=True, else raise cache_size",
                        RuntimeWarning, stacklevel=3)
        elif not group:
            del self._cache[key]
        return plain_value(result)

    @staticmethod
    def _symbolic_dims(entry: _Entry, tensors: list[Any], primitives: list[Any], first: int
                       ) -> list[tuple[Any, Any, Any]]:
        """``dynamic=True``: give each dim of 2 or more of the argument tensors a symbol (the
        values after the ``first`` state scalars), replacing their primitives in
        ``primitives`` by ``Shaped`` ones and re-pointing every tensor over them for the
        recording; returns (tensor, its primitive, the symbolic one) for each re-pointed
        tensor. A tensor tracking gradients keeps its dims: a fresh primitive would not be the
        leaf its gradient is asked for."""
        reach, tape = entry.reach, entry.tape
        values: list[int] = []
        shaped: dict[int, Shaped] = {}
        for i, loc in enumerate(reach.tensors):
            t = tensors[i]
            if loc.holder is not ARGS or i not in entry.inputs or t.kind == QUANTIZED:
                continue
            if t.kind == FLOAT and t.backend.float_is_require_grad(t.primitive):
                entry.arg_shapes[i] = tuple(t.shape)
                continue
            dims: list[Any] = []
            for d, size in enumerate(primitives[i].shape):
                if size >= 2:
                    entry.symbols.append((i, d))
                    dims.append(symbolic.tracked(size, first + len(values), tape, dims=True))
                    values.append(size)
                else:
                    dims.append(size)
            if any(isinstance(d, Sym) for d in dims):
                shaped[id(primitives[i])] = primitives[i] = Shaped(primitives[i], tuple(dims))
        entry.symbol_values, entry.provisional = tuple(values), bool(values)
        swapped: list[tuple[Any, Any, Any]] = []
        for i, t in enumerate(tensors):  # every tensor over such a primitive sees its dims
            proxy = shaped.get(id(_down(entry.chains[i], t.kind, t.primitive)))
            if proxy is None or any(t is s for s, _, _ in swapped) or (
                    t.kind == FLOAT and t.backend.float_is_require_grad(t.primitive)):
                continue
            symbolic_primitive = _up(entry.chains[i], t.kind, proxy)
            swapped.append((t, t.primitive, symbolic_primitive))
            t.primitive = symbolic_primitive
        return swapped

    def _outputs(self, entry: _Entry, result: Any, before: list[tuple[Any, Any, Any]],
                 leaves: Sequence[Any]) -> list[Any]:
        """The graph's outputs (``fn``'s result tensors, then each written location's new
        primitive), noting in ``entry`` how to hand them back."""
        outputs: list[Any] = []
        results: list[Any] = []
        entry.template = flatten_leaves(result, results)
        for leaf in results:
            if isinstance(leaf, Tensor):
                _, chain = _chain(leaf.backend, leaf.kind, "bp.compile")
                entry.results.append((leaf.backend, leaf.kind, chain, len(outputs)))
                outputs.append(_down(chain, leaf.kind, leaf.primitive))
            elif isinstance(leaf, Sym):  # a state scalar: computed at each call
                entry.results.append((None, None, leaf.expr, _SCALAR))
            elif leaf is None or isinstance(leaf, bool | int | float | str):
                entry.results.append((None, leaf, None, _CONSTANT))
            else:
                raise InvalidArgumentError(
                    f"bp.compile({self.__name__}): the function returns a "
                    f"{type(leaf).__name__}, which a replay cannot make anew; return tensors, "
                    "Python scalars and None (in tuples, lists or dicts)")
        repointed: set[int] = set()
        for i, (loc, (t, primitive, backend)) in enumerate(
                zip(entry.reach.tensors, before, strict=True)):
            now = loc.get(leaves)
            if now is t and ((now.primitive is primitive and now.backend is backend)
                             or id(t) in repointed):  # unchanged, or written already
                continue
            if now is t:
                repointed.add(id(t))
            _, chain = _chain(now.backend, now.kind, "bp.compile")
            tracked = now.kind == FLOAT and bool(now.backend.float_is_require_grad(
                now.primitive))
            entry.written.append(_Written(i, now is not t, now.backend, now.kind, tracked,
                                          chain, len(outputs)))
            outputs.append(_down(chain, now.kind, now.primitive))
        return outputs

    @staticmethod
    def _same_state(entry: _Entry, root_objects: list[Any], leaves: Sequence[Any]) -> bool:
        """Whether ``fn`` left the state's layout as it found it (no tensor or scalar added)."""
        again = Reach.of(leaves, root_objects)
        reach = entry.reach
        return ([loc.identity() for loc in again.tensors]
                == [loc.identity() for loc in reach.tensors]
                and [(id(h), k) for h, k in again.scalars] == [(id(h), k) for h, k in
                                                               reach.scalars]
                and entry.sizes == _sizes(again))

    @staticmethod
    def _finish(entry: _Entry, graph: Graph, syms: list[Any], after: list[Any]) -> None:
        """Generate the replay function and the symbolic scalars' reads and writes."""
        found: list[Sym] = []
        for node in graph.nodes:
            collect_syms(node.args, found)
            collect_syms(node.kwargs, found)
        slots: dict[int, int] = {}
        for s in found:
            if id(s) not in slots:
                slots[id(s)] = len(entry.slot_terms)
                entry.slot_terms.append(s.term)
        if entry.provisional or entry.symbols:  # sizes vary: B's ops as they come
            entry.graph = graph
            entry.run = generate_replay(graph, slots, "replay", fuse=False)
        else:
            entry.run = graph.backend.replay_runner(generate_replay(graph, slots, "replay"),
                                                    graph)
        for position, (now, sym) in enumerate(zip(after, syms, strict=True)):
            if now is sym:
                continue
            expr = now.expr if isinstance(now, Sym) else _constant(now)
            entry.scalar_writes.append((position, expr))


def _release(result: Any, leaves: Sequence[Any], root_objects: list[Any]) -> None:
    """After a dynamic recording, give each tensor it left with symbolic dims (results, state
    it wrote) B's plain primitive back, as a replay would hand it out."""
    found: list[Any] = []
    flatten_leaves(result, found)
    tensors = [x for x in found if isinstance(x, Tensor)]
    tensors += [loc.get(leaves) for loc in Reach.of(leaves, root_objects).tensors]
    for t in tensors:
        if t.kind == QUANTIZED:
            continue
        _, chain = _chain(t.backend, t.kind, "bp.compile")
        primitive = _down(chain, t.kind, t.primitive)
        if type(primitive) is not Shaped:
            continue
        tracked = t.kind == FLOAT and bool(t.backend.float_is_require_grad(t.primitive))
        released = _up(chain, t.kind, primitive.inner)
        if tracked and chain:
            released = chain[0].float_set_require_grad(released, True)
        t.primitive = released


def _evaluated(x: Any, values: Sequence[Any]) -> Any:
    """``x`` (a dim, a shape, an argument) with each symbolic scalar's expression evaluated
    on ``values``."""
    if isinstance(x, Sym):
        return x.expr(values)
    kind = type(x)
    if kind is tuple or kind is list:
        return kind(_evaluated(a, values) for a in x)
    if kind is slice:
        return slice(_evaluated(x.start, values), _evaluated(x.stop, values),
                     _evaluated(x.step, values))
    if kind is dict:
        return {k: _evaluated(v, values) for k, v in x.items()}
    return x


def _same_arg(old: Any, new: Any, values: Sequence[Any]) -> bool:
    """Whether a node argument of the provisional graph, evaluated on ``values``, is the
    argument the recording at those values passed (Refs to the same value; numbers of the same
    type and value, a float's sign of zero and NaN included)."""
    if type(old) is Ref:
        return type(new) is Ref and old.index == new.index
    kind = type(old)
    if kind is tuple or kind is list:
        return (type(new) is kind and len(old) == len(new)
                and all(_same_arg(a, b, values) for a, b in zip(old, new, strict=True)))
    if kind is slice:
        return type(new) is slice and _same_arg((old.start, old.stop, old.step),
                                                (new.start, new.stop, new.step), values)
    if kind is dict:
        return (type(new) is dict and old.keys() == new.keys()
                and all(_same_arg(old[k], new[k], values) for k in old))
    mine = _evaluated(old, values)
    theirs = new.value if isinstance(new, Sym) else new
    if isinstance(mine, float) or isinstance(theirs, float):
        return type(mine) is type(theirs) and repr(mine) == repr(theirs)
    return bool(type(mine) is type(theirs) and mine == theirs)


def _same_data(a: Any, b: Any) -> bool:
    """Whether two constants hold the same values (B's arrays; another primitive only when
    it is the same object)."""
    if a is b:
        return True
    try:
        x, y = np.asarray(a), np.asarray(b)
    except (TypeError, ValueError):
        return False
    return (x.dtype != object and x.dtype == y.dtype and x.shape == y.shape
            and x.tobytes() == y.tobytes())


def _same_program(old: _Entry, new: _Entry, values: Sequence[Any]) -> bool:
    """Whether ``new``, recorded at other sizes (``values``: its state scalars and symbols),
    is ``old``'s program there: ``old``'s guards hold, and the same ops run on the same
    values, ``old``'s symbolic arguments and shapes evaluating to ``new``'s, with the same
    constants, host reads, checks, write-backs and results. Then nothing the recording
    baked in depended on the sizes, and ``old`` serves every size its guards allow."""
    a, b = old.graph, new.graph
    if a is None or b is None or not all(
            expr(values) == outcome for expr, outcome in old.tape.guards):
        return False
    if (len(a.values) != len(b.values) or len(a.nodes) != len(b.nodes)
            or a.inputs != b.inputs or a.outputs != b.outputs or a.specialized != b.specialized
            or [c[:2] for c in a.checks] != [c[:2] for c in b.checks]
            or [r[:3] for r in a.host_reads] != [r[:3] for r in b.host_reads]
            or not all(_same_data(np.asarray(x[3].array), np.asarray(y[3].array))
                       for x, y in zip(a.host_reads, b.host_reads, strict=True))):
        return False
    for x, y in zip(a.values, b.values, strict=True):
        if (x.kind != y.kind or x.desc.dtype != y.desc.dtype
                or _evaluated(a.shapes.get(x.index, x.desc.shape), values) != y.desc.shape
                or (x.kind == CONSTANT and not _same_data(x.data, y.data))):
            return False
    if not all(x.op == y.op and _same_arg(x.args, y.args, values)
               and _same_arg(x.kwargs, y.kwargs, values)
               for x, y in zip(a.nodes, b.nodes, strict=True)):
        return False
    return (old.inputs == new.inputs and old.ties == new.ties and old.symbols == new.symbols
            and old.arg_shapes == new.arg_shapes and old.template == new.template
            and [w[:5] + w[6:] for w in old.written] == [w[:5] + w[6:] for w in new.written]
            and [p for p, _ in old.scalar_writes] == [p for p, _ in new.scalar_writes]
            and len(old.results) == len(new.results)
            and all(_same_result(r, q, values) for r, q in zip(old.results, new.results,
                                                                 strict=True)))


def _same_result(old: Any, new: Any, values: Sequence[Any]) -> bool:
    """Whether one leaf of ``fn``'s result is made the same way in both recordings."""
    backend, kind, how, i = old
    if i != new[3] or (i >= 0 and (backend is not new[0] or kind != new[1])):
        return False
    if i == _SCALAR:
        return _same_arg(how(values), new[2](values), values)
    return i >= 0 or _same_arg(kind, new[1], values)


def _constant(value: Any) -> symbolic.Expr:
    return lambda _values: value


def compile(fn: Callable[..., Any] | None = None, *, dynamic: bool = False,
            fullgraph: bool = False, cache_size: int = 8) -> Any:
    """``fn`` recorded once per input signature and replayed after (see the module); also a
    decorator, bare or with options. ``dynamic=True``: the dims of 2 or more of the tensor
    arguments are symbols, so one graph serves every size the recorded program holds for."""
    if fn is None:
        return lambda f: Compiled(f, fullgraph, cache_size, dynamic)
    return Compiled(fn, fullgraph, cache_size, dynamic)

