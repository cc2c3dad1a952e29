"""Runs PyTorch's own OpInfo samples (``op_db``) against burnpy on CpuBackend.

Each entry of ``entries.txt`` (op_db's ``name`` or ``name.variant_test_name``) maps to a burnpy
callable: an explicit one in ``OVERRIDES``, else the first of a ``Tensor`` method, a ``burnpy``
attribute, ``burnpy.nn.functional`` or ``burnpy.linalg`` spelled as torch spells it. An entry
with no callable is *absent* (not a failure: it becomes covered when the op lands). Every
float64 and float32 sample (``op.sample_inputs("cpu", dtype, requires_grad=True)``) runs forward
on CpuBackend against torch (values, dtype and shape), then on ``Autodiff(CpuBackend)`` with a
seeded cotangent against torch autograd, both seen through the sample's
``output_process_fn_grad``. A sample whose arguments burnpy deliberately does not take is
skipped with the reason in ``DELIBERATE`` or ``_deliberate_sample``; any other mismatch, and
any exception that is not a ``BurnpyError``, is a failure. torch runs single-threaded here:
its thread pool costs more than these small samples take.
"""

from __future__ import annotations

import importlib
import math
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib.machinery import PathFinder
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.testing._internal.common_utils import SEED

import burnpy as bp
import burnpy.nn.functional as F
from burnpy import Autodiff, BurnpyError, Tensor
from burnpy_cpu import CpuBackend

AD = Autodiff(CpuBackend)
DTYPES = (torch.float64, torch.float32)
RTOL = {torch.float64: 1e-10, torch.float32: 1e-5}
ENTRIES: tuple[str, ...] = tuple(
    line.strip() for line in (Path(__file__).parent / "entries.txt").read_text().splitlines()
    if line.strip() and not line.startswith("#"))

Call = Callable[..., Any]


def _method(name: str) -> Call:
    """``input.name(*args, **kwargs)``, resolved on the burnpy tensor at call time."""
    return lambda x, *args, **kwargs: getattr(x, name)(*args, **kwargs)


def _factory(fn: Callable[..., Any]) -> Call:
    """A factory (``ones``, ``arange``...) called on the backend under test."""
    fn.factory = True  # type: ignore[attr-defined]
    return fn


# torch spellings that burnpy writes differently, or calls that are not ``input.op(*args)``.
OVERRIDES: dict[str, Call] = {
    "__radd__": lambda x, other: other + x,
    # op_db calls torch.einsum(operands_list, equation); burnpy takes the equation first
    "einsum": lambda operands, equation: bp.einsum(equation, operands),
    "__rand__": lambda x, other: other & x,
    "__rdiv__": lambda x, other: other / x,
    "__rmatmul__": lambda x, other: other @ x,
    "__rmod__": lambda x, other: other % x,
    "__rmul__": lambda x, other: other * x,
    "__ror__": lambda x, other: other | x,
    "__rpow__": lambda x, other: other ** x,
    "__rsub__": lambda x, other: other - x,
    "__rxor__": lambda x, other: other ^ x,
    "__getitem__": lambda x, key: x[key],
    "T": lambda x: x.T,
    "mT": lambda x: x.mT,
    "cat": lambda xs, *args, **kwargs: bp.cat(xs, *args, **kwargs),
    "stack": lambda xs, *args, **kwargs: bp.stack(xs, *args, **kwargs),
    "eq": _method("equal"),
    "ne": _method("not_equal"),
    "gt": _method("greater"),
    "ge": _method("greater_equal"),
    "lt": _method("lower"),
    "le": _method("lower_equal"),
    "floor_divide": _method("floor_div"),
    "true_divide": _method("div"),
    "reciprocal": _method("recip"),
    "rsub": lambda x, other, alpha=1: other - x * alpha if alpha != 1 else other - x,
    "where": lambda x, condition, other: bp.where(condition, x, other),
    "max.binary": _method("maximum"),
    "min.binary": _method("minimum"),
    "max.reduction_no_dim": _method("max"),
    "min.reduction_no_dim": _method("min"),
    "max.reduction_with_dim": _method("max"),
    "min.reduction_with_dim": _method("min"),
    "masked_fill": _method("masked_fill"),
    "nn.functional.embedding": lambda weight, idx, **kwargs: F.embedding(idx, weight, **kwargs),
    "nn.functional.logsigmoid": lambda x: F.logsigmoid(x),
    "ones": _factory(lambda shape, backend, dtype=None: Tensor.ones(shape, backend=backend,
                                                                     dtype=dtype)),
    "zeros": _factory(lambda shape, backend, dtype=None: Tensor.zeros(shape, backend=backend,
                                                                       dtype=dtype)),
    "full": _factory(lambda shape, value, backend, dtype=None: Tensor.full(
        shape, value, backend=backend, dtype=dtype)),
    "eye": _factory(lambda n, *args, backend, dtype=None: Tensor.eye(n, *args, backend=backend,
                                                                      dtype=dtype)),
    "arange": _factory(lambda start, end=None, step=1, *, backend, dtype=None: Tensor.arange(
        start, end, step, backend=backend, dtype=dtype)),
    "linspace": _factory(lambda start, end, steps, backend, dtype=None: Tensor.linspace(
        start, end, steps, backend=backend, dtype=dtype)),
}

# Whole entries burnpy deliberately does not serve as torch does, with the reason.
DELIBERATE: dict[str, str] = {
    "nn.functional.dropout": "random: burnpy's generator is not torch's, so the values differ",
    "inner": "Tensor.inner() is Burn's method (the tensor without autodiff), not torch.inner",
    "int": "burnpy's .int() is the backend's int dtype (int64 on CPU), torch's is int32",
    "polar": "builds a complex tensor, and burnpy has no complex dtypes",
}

# Entries whose float32 gradient torch computes less accurately than burnpy: their float32
# gradients are compared with torch's float64 gradient of the same sample (cast to float32), to
# float32's conditioning: eps32 times the largest input magnitude (a gradient built from
# ``exp(x - out)`` inherits the rounding of values that large), at least ``RTOL``. The reason
# gives the errors measured against that float64 reference.
FLOAT64_GRADIENT_REFERENCE: dict[str, str] = {
    "logcumsumexp": "on samples spanning 1e4, torch's float32 gradient is off by 2.2e-3 and "
                    "6.8e-4, burnpy's by 2.4e-7 and 2.6e-4 (a float32 output of 1e4 is itself "
                    "rounded by 5e-4)",
}


#: Entries whose float32 forward is compared with torch's float64 result (cast back to
#: float32) at float32's epsilon times the output's largest magnitude, as the gradients of
#: ``FLOAT64_GRADIENT_REFERENCE`` are: both answers are float32 sums whose order differs.
FLOAT64_FORWARD_REFERENCE: dict[str, str] = {
    "nn.functional.conv_transpose3d": "an output of -0.0247 sums terms whose magnitudes add up "
                                      "to 1307: burnpy is 1.8e-5 from the float64 value, torch "
                                      "6.6e-6 (float32's epsilon there is 7.8e-5)",
    "nn.functional.conv3d": "with dilation 3 and padding='same', outputs sum terms whose "
                            "magnitudes add up to 675: burnpy is at most 4.0e-5 from the "
                            "float64 values, torch 6.6e-5",
}


def _deliberate_sample(entry: str, sample: Any) -> str | None:
    """The reason burnpy deliberately does not take this sample's arguments, or None."""
    kwargs = sample.kwargs
    if "out" in kwargs:
        return "out= is not an argument: burnpy returns new tensors"
    if kwargs.get("memory_format") is not None:
        return "memory_format= has no meaning: burnpy tensors have no strides"
    if kwargs.get("dropout_p", 0.0) > 0.0:
        return "random: burnpy's dropout generator is not torch's, so the values differ"
    if entry == "nn.functional.batch_norm" and not 0 <= kwargs.get("momentum", 0.1) <= 1:
        return "a momentum outside [0, 1] is refused: the running statistics would diverge"
    x = sample.input
    if entry == "nn.functional.hardsigmoid" and x.dtype == torch.float64:
        return ("torch's float64 hardsigmoid gradient multiplies by a float32 1/6 (2.98e-8 "
                "relative off); burnpy's is exact")
    if entry == "nn.functional.layer_norm" and math.prod(sample.args[0]) == 1:
        return ("over one element the gradient is exactly 0; torch's float32 one is rounding "
                "noise")
    if entry in ("std.unbiased", "var.unbiased"):
        return "a positional bool is torch's deprecated unbiased overload; burnpy takes correction="
    for value in _leaves((sample.input, *sample.args, *kwargs.values())):
        if isinstance(value, torch.Tensor) and value.is_complex():
            return "complex tensors are not a burnpy kind"
    return None


def _leaves(value: Any) -> Iterator[Any]:
    if isinstance(value, list | tuple):
        for v in value:
            yield from _leaves(v)
    else:
        yield value


@cache
def op_infos() -> dict[str, Any]:
    """op_db's entries by ``name`` or ``name.variant_test_name``."""
    from torch.testing._internal.common_methods_invocations import op_db
    out: dict[str, Any] = {}
    for op in op_db:
        key = op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")
        out.setdefault(key, op)
    return out


def resolve(entry: str) -> Call | None:
    """The burnpy callable for an entry, or None when burnpy has none yet."""
    if entry in OVERRIDES:
        return OVERRIDES[entry]
    name = entry
    if name.startswith("nn.functional."):
        return _attribute(F, name.removeprefix("nn.functional.").split(".")[0])
    if name.startswith("linalg."):
        # Only the package's own module: an editable install may map a missing submodule to
        # another checkout.
        if PathFinder.find_spec("burnpy.linalg", list(bp.__path__)) is None:
            return None
        linalg = importlib.import_module("burnpy.linalg")
        return _attribute(linalg, name.removeprefix("linalg.").split(".")[0])
    name = name.split(".")[0]
    if callable(getattr(Tensor, name, None)):
        return _method(name)
    return _attribute(bp, name)


def _attribute(module: Any, name: str) -> Call | None:
    fn = getattr(module, name, None)
    return fn if callable(fn) else None


# ---- conversion ------------------------------------------------------------------------------

_DTYPE_NAMES = {torch.float64: "float64", torch.float32: "float32", torch.float16: "float16",
                torch.bfloat16: "bfloat16", torch.int64: "int64", torch.int32: "int32",
                torch.int16: "int16", torch.int8: "int8", torch.uint8: "uint8",
                torch.bool: "bool_"}


def to_burnpy(value: Any, backend: Any, leaves: list[tuple[torch.Tensor, Tensor]]) -> Any:
    """A sample argument as burnpy takes it: tensors on ``backend`` (float tensors that torch
    tracks are tracked too when ``backend`` is Autodiff, and recorded in ``leaves``), dtypes as
    names, sizes as tuples, containers element by element."""
    if isinstance(value, torch.Tensor):
        t = Tensor.from_data(value.detach().numpy(), backend=backend,
                             dtype=_DTYPE_NAMES[value.dtype])
        if value.requires_grad and backend is AD:
            t = t.require_grad()
            leaves.append((value, t))
        return t
    if isinstance(value, torch.dtype):
        return _DTYPE_NAMES[value]
    if isinstance(value, torch.Size):
        return tuple(value)
    if isinstance(value, list):
        return [to_burnpy(v, backend, leaves) for v in value]
    if isinstance(value, tuple):
        return tuple(to_burnpy(v, backend, leaves) for v in value)
    return value


def _flat(out: Any) -> list[Any]:
    if isinstance(out, list | tuple):
        return [leaf for o in out for leaf in _flat(o)]
    return [out]


# ---- comparison ------------------------------------------------------------------------------

class MismatchError(AssertionError):
    """burnpy's result differs from torch's."""


def _torch_values(t: Any) -> np.ndarray:
    if isinstance(t, torch.Tensor):
        return t.detach().numpy()
    return np.asarray(t)


def compare(got: Any, want: Any, rtol: float, what: str, *, scaled: bool = False) -> None:
    """Raise ``MismatchError`` unless ``got`` (burnpy) equals ``want`` (torch): same structure,
    shape and dtype, equal ints and bools, floats within ``rtol`` (relative to each value,
    with ``rtol`` as the absolute floor, or with ``scaled`` ``rtol`` times the tensor's largest
    magnitude: gradients are sums of many products, whose small entries cancel) and NaN where
    torch has NaN."""
    got_l, want_l = _flat(got), _flat(want)
    if len(got_l) != len(want_l):
        raise MismatchError(f"{what}: {len(got_l)} outputs, torch has {len(want_l)}")
    for i, (g, w) in enumerate(zip(got_l, want_l, strict=True)):
        where = f"{what}[{i}]" if len(got_l) > 1 else what
        if isinstance(w, torch.Tensor):
            if not isinstance(g, Tensor):
                raise MismatchError(f"{where}: got {type(g).__name__}, torch returns a tensor")
            if g.dtype.name != _DTYPE_NAMES.get(w.dtype, str(w.dtype)):
                raise MismatchError(f"{where}: dtype {g.dtype.name}, torch {w.dtype}")
            if g.shape != tuple(w.shape):
                raise MismatchError(f"{where}: shape {g.shape}, torch {tuple(w.shape)}")
            gv = g.to_numpy()
        else:
            gv = g.to_numpy() if isinstance(g, Tensor) else np.asarray(g)
        wv = _torch_values(w)
        _close(gv, wv, rtol, where, scaled)


def _close(got: np.ndarray, want: np.ndarray, rtol: float, where: str, scaled: bool) -> None:
    if got.shape != want.shape:
        raise MismatchError(f"{where}: shape {got.shape}, torch {want.shape}")
    if want.dtype.kind in "fc" or got.dtype.kind in "fc":
        g = got.astype(np.float64)
        w = want.astype(np.float64)
        finite = np.abs(w[np.isfinite(w)])
        atol = rtol * max(1.0, float(finite.max())) if scaled and finite.size else rtol
        ok = np.isclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
    else:
        ok = got == want
    if not np.all(ok):
        bad = int(np.argmin(ok.reshape(-1)))
        raise MismatchError(f"{where}: {int(np.size(ok) - np.count_nonzero(ok))} of {np.size(ok)} "
                       f"values differ, e.g. {got.reshape(-1)[bad]!r} vs torch "
                       f"{want.reshape(-1)[bad]!r}")


# ---- running ---------------------------------------------------------------------------------

@dataclass
class Outcome:
    """What the samples of one entry did: failures (description of sample and error) and
    deliberate skips (reasons), over the samples run."""

    entry: str
    absent: bool = False
    deliberate_entry: str | None = None
    ran: int = 0
    failures: list[str] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)
    deliberate: list[str] = field(default_factory=list)

    @property
    def status(self) -> str:
        """``absent``, ``deliberate``, ``failing`` (a wrong result or a leaked exception),
        ``refusing`` (a ``BurnpyError`` on a sample torch takes) or ``clean``."""
        if self.absent:
            return "absent"
        if self.deliberate_entry is not None:
            return "deliberate"
        if self.failures:
            return "failing"
        return "refusing" if self.refusals else "clean"


def dtypes(entry: str) -> tuple[torch.dtype, ...]:
    """float64 and float32 where the op takes them, else its int64 or bool samples."""
    supported = op_infos()[entry].supported_dtypes("cpu")
    floats = tuple(d for d in DTYPES if d in supported)
    if floats:
        return floats
    return tuple(d for d in (torch.int64, torch.bool) if d in supported)[:1]


def samples(entry: str, dtype: torch.dtype) -> list[Any]:
    """Every sample of an entry in ``dtype``, each drawn after seeding as torch's own tests
    seed (``SEED`` into torch's CPU generator, ``random`` and NumPy), so deterministic.
    torch's own reseeding (``set_seed``) also queues a formatted stack trace for CUDA per
    sample, which costs more than most samples' checks."""
    op = op_infos()[entry]
    grad = op.supports_autograd and dtype.is_floating_point  # torch refuses int/bool leaves
    drawn = iter(op.sample_inputs("cpu", dtype, requires_grad=grad, set_seed=False))
    out: list[Any] = []
    while True:
        torch.default_generator.manual_seed(SEED)
        random.seed(SEED)
        np.random.seed(SEED)  # torch's samples draw from NumPy's global state too
        sample = next(drawn, None)
        if sample is None:
            return out
        out.append(sample)


def _call(fn: Call, backend: Any, sample: Any, leaves: list[tuple[torch.Tensor, Tensor]],
          factory: bool) -> Any:
    x = to_burnpy(sample.input, backend, leaves)
    args = to_burnpy(sample.args, backend, leaves)
    kwargs = {k: to_burnpy(v, backend, leaves) for k, v in sample.kwargs.items()
              if k not in ("device", "requires_grad")}
    if factory:
        kwargs["backend"] = backend
    return fn(x, *args, **kwargs)


def _reference(op: Any, sample: Any) -> Any:
    return op(sample.input, *sample.args, **sample.kwargs)


def _cotangent(shape: tuple[int, ...], index: int, dtype: torch.dtype) -> np.ndarray:
    rng = np.random.default_rng(1000 + index)
    return rng.uniform(0.5, 1.5, size=shape).astype(np.float64 if dtype == torch.float64
                                                     else np.float32)


def check_sample(entry: str, fn: Call, sample: Any, dtype: torch.dtype) -> None:
    """Run one sample forward and backward; raise ``MismatchError`` or let burnpy's error out."""
    op = op_infos()[entry]
    factory = getattr(fn, "factory", False)
    rtol = RTOL.get(dtype, 0.0)
    # torch's own view of the outputs (e.g. |U| of an SVD, whose column signs are free),
    # applied alike to both answers; the identity for most samples
    process = sample.output_process_fn_grad
    got = process(_call(fn, CpuBackend, sample, [], factory))
    want = process(_reference(op, sample))
    if dtype == torch.float32 and entry in FLOAT64_FORWARD_REFERENCE:
        with torch.no_grad():
            exact = _float64_call(op, sample, {})
        rounded = tuple(t.float() for t in exact) if isinstance(want, tuple | list) else (
            exact[0].float())
        compare(got, rounded, _float32_rtol(rtol, exact), "forward")
    else:
        compare(got, want, rtol, "forward")
    if not op.supports_autograd or factory:
        return
    want_out = [w for w in _flat(want)]
    diff = [i for i, w in enumerate(want_out) if isinstance(w, torch.Tensor) and w.requires_grad]
    if not diff:
        return
    leaves: list[tuple[torch.Tensor, Tensor]] = []
    got_ad = _flat(process(_call(fn, AD, sample, leaves, factory)))
    if not leaves:
        return
    loss_t = torch.zeros((), dtype=dtype)
    loss_b: Tensor | None = None
    for i in diff:
        w = want_out[i]
        cot = _cotangent(tuple(w.shape), i, w.dtype)
        loss_t = loss_t + (w * torch.from_numpy(cot)).sum()
        term = (got_ad[i] * Tensor.from_data(cot, backend=AD)).sum()
        loss_b = term if loss_b is None else loss_b + term
    assert loss_b is not None
    if dtype == torch.float32 and entry in FLOAT64_GRADIENT_REFERENCE:
        torch_grads = _float64_gradients(op, sample, diff, [t for t, _ in leaves])
        rtol = _float32_rtol(rtol, [t for t, _ in leaves])
    else:
        torch_grads = torch.autograd.grad(loss_t, [t for t, _ in leaves], allow_unused=True)
    grads = loss_b.backward()
    for k, ((t, b), tg) in enumerate(zip(leaves, torch_grads, strict=True)):
        g = b.grad(grads)
        # torch answers some gradients with a ZeroTensor, which has no NumPy view
        want_g = torch.zeros_like(t) if tg is None or tg._is_zerotensor() else tg
        if g is None:
            if bool(torch.any(want_g != 0)):
                raise MismatchError(f"gradient[{k}]: None, torch has a non-zero gradient")
            continue
        compare(g, want_g, rtol, f"gradient[{k}]", scaled=True)


def _upcast(value: Any, up: dict[int, torch.Tensor]) -> Any:
    """``value`` with its float32 tensors (inside lists, tuples and dicts too) cast to float64,
    keeping whether they require grad; ``up`` maps each original's id to its float64 copy."""
    if isinstance(value, torch.Tensor) and value.dtype == torch.float32:
        t = value.detach().double().requires_grad_(value.requires_grad)
        up[id(value)] = t
        return t
    if isinstance(value, list | tuple):
        return type(value)(_upcast(v, up) for v in value)
    if isinstance(value, dict):
        return {k: _upcast(v, up) for k, v in value.items()}
    return value


def _float64_call(op: Any, sample: Any, up: dict[int, torch.Tensor]) -> list[Any]:
    """torch's outputs of the sample (as its ``output_process_fn_grad`` shows them) with its
    float32 tensors cast to float64 (``_upcast``)."""
    return _flat(sample.output_process_fn_grad(
        op(*_upcast((sample.input, *sample.args), up), **_upcast(sample.kwargs, up))))


def _float32_rtol(rtol: float, tensors: Sequence[torch.Tensor]) -> float:
    """``rtol``, or float32's epsilon times the largest magnitude among ``tensors`` where
    that is larger: what rounding float32 sums of such values may leave."""
    largest = max((float(t.detach().abs().max()) for t in tensors if t.numel()), default=0.0)
    return max(rtol, float(np.finfo(np.float32).eps) * largest)


def _float64_gradients(op: Any, sample: Any, diff: list[int],
                       leaves: list[torch.Tensor]) -> tuple[torch.Tensor | None, ...]:
    """torch's gradients of the sample's float32 ``leaves`` computed in float64 (the sample's
    float32 tensors cast up, the same cotangents), cast back to float32."""
    up: dict[int, torch.Tensor] = {}
    out = _float64_call(op, sample, up)
    loss = torch.zeros((), dtype=torch.float64)
    for i in diff:
        cot = _cotangent(tuple(out[i].shape), i, torch.float32)
        loss = loss + (out[i] * torch.from_numpy(cot.astype(np.float64))).sum()
    grads = torch.autograd.grad(loss, [up[id(t)] for t in leaves], allow_unused=True)
    return tuple(None if g is None else g.float() for g in grads)


def describe_sample(sample: Any) -> str:
    """A short description of a sample: shapes and values of its arguments."""
    def d(v: Any) -> str:
        if isinstance(v, torch.Tensor):
            return f"{str(v.dtype).removeprefix('torch.')}{list(v.shape)}"
        if isinstance(v, list | tuple):
            inner = ", ".join(d(x) for x in v)
            return f"[{inner}]" if isinstance(v, list) else f"({inner})"
        return repr(v)
    parts = [d(sample.input), *(d(a) for a in sample.args),
             *(f"{k}={d(v)}" for k, v in sample.kwargs.items())]
    return f"({', '.join(parts)})"


def run_entry(entry: str) -> Outcome:
    """Run every sample of an entry in float64 and float32."""
    outcome = Outcome(entry)
    if entry in DELIBERATE:  # whether or not burnpy has a callable of that name
        outcome.deliberate_entry = DELIBERATE[entry]
        return outcome
    fn = resolve(entry)
    if fn is None:
        outcome.absent = True
        return outcome
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # samples are small: torch's thread pool costs more than it saves
    try:
        _run_samples(entry, fn, outcome)
    finally:
        torch.set_num_threads(threads)
    return outcome


def _run_samples(entry: str, fn: Call, outcome: Outcome) -> None:
    for dtype in dtypes(entry):
        for sample in samples(entry, dtype):
            reason = _deliberate_sample(entry, sample)
            if reason is not None:
                outcome.deliberate.append(reason)
                continue
            outcome.ran += 1
            label = f"{str(dtype).removeprefix('torch.')} {describe_sample(sample)}"
            try:
                check_sample(entry, fn, sample, dtype)
            except BurnpyError as e:
                outcome.refusals.append(f"{label}: raises {type(e).__name__}: {e}")
            except MismatchError as e:
                outcome.failures.append(f"{label}: {e}")
            except Exception as e:
                outcome.failures.append(f"{label}: leaks {type(e).__name__}: {e}")
