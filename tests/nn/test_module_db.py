"""torch.nn's own database, run against burnpy: every ``module_db`` entry's samples
(``module_inputs_func``, for the entry's float64 and float32 dtypes, in train mode and, where
``train_and_eval_differ``, in eval mode too, as torch's ``test_modules.py`` runs them) build
torch's module and burnpy's class of the same name from the same constructor arguments (torch
tensors as burnpy tensors, a torch module argument as burnpy's same-named module built from the
arguments torch's was built with), load torch's state dict strictly, and run the same inputs on
``Autodiff(CpuBackend)``. Outputs (values, dtypes, shapes), input gradients and parameter
gradients of a seeded cotangent, and every buffer after the forward (running statistics) must
equal torch's: relative ``1e-10`` in float64, ``1e-4`` in float32, each scaled by the
reference's magnitude where it exceeds 1.

An entry is *clean* when every sample matches; any other entry is listed in ``LISTED`` with
its status (``absent``: burnpy has no such class; ``refusing``: a ``BurnpyError`` on a sample
torch takes; ``failing``: a wrong result or a leaked exception) and the reason. The listing is
itself tested both ways: an unlisted entry must be clean, a listed one must still have its
listed status (a stale entry must go). ``python -m tests.nn.test_module_db`` prints every
entry that is not clean with its first problems, then the counts (``-v``: every problem; entry
names, e.g. ``nn.Linear``, restrict the run)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

import numpy as np
import pytest
import torch
from torch.testing._internal.common_modules import module_db

import burnpy as bp
import burnpy.nn as nn
import burnpy.nn.functional as F
from burnpy import Autodiff, BurnpyError, Tensor
from burnpy.nn.module import StateDictError
from burnpy_cpu import CpuBackend

AD = Autodiff(CpuBackend)
DTYPES = (torch.float64, torch.float32)
TOL = {torch.float64: 1e-10, torch.float32: 1e-4}
OURS_DTYPE = {torch.float64: bp.float64, torch.float32: bp.float32}

#: Entries that are not clean at this commit: (status, reason). Each is checked to still have
#: that status, so an entry that becomes clean (or changes status) must be taken off or fixed.
_LP_POOL = ("failing", "on the 'norm' sample (norm_type 1.5, negative inputs) torch's input "
            "gradient is NaN at the positions no window covers (its pow runs on the whole "
            "input before pooling: 0 * NaN); burnpy gives 0 there, the exact derivative, "
            "since the output does not depend on those positions")
LISTED: dict[str, tuple[str, str]] = {
    "nn.LPPool1d": _LP_POOL,
    "nn.LPPool2d": _LP_POOL,
    "nn.LPPool3d": _LP_POOL,
}

#: Entries whose first forward argument both libraries get through ``log_softmax(-1)``, the
#: leaf being the logits, with the reason.
THROUGH_LOG_SOFTMAX: dict[str, str] = {
    "nn.CTCLoss": "torch's CTC backward returns the gradient with respect to the logits "
                  "under a log_softmax, not to log_probs itself (it adds exp(log_probs) to "
                  "the true gradient, which burnpy returns: a finite difference agrees with "
                  "burnpy); through log_softmax both are the logits' gradient",
}


@dataclass(frozen=True)
class Sample:
    """One module input of an entry, with the dtype and mode torch's tests run it in."""

    dtype: torch.dtype
    training: bool
    index: int
    module_input: Any

    def label(self) -> str:
        """``float64 train #3 'desc'``, naming the sample in a problem."""
        mode = "train" if self.training else "eval"
        return (f"{str(self.dtype).removeprefix('torch.')} {mode} #{self.index} "
                f"'{self.module_input.desc}'")


@dataclass
class Outcome:
    """An entry's result: samples run, problems found, and its status."""

    entry: str
    ran: int = 0
    refusals: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    absent: bool = False

    @property
    def status(self) -> str:
        """``absent``, ``failing``, ``refusing`` or ``clean``."""
        if self.absent:
            return "absent"
        return "failing" if self.failures else "refusing" if self.refusals else "clean"


# ---- the samples, generated once --------------------------------------------------------------
#: A torch module passed as a constructor argument (TransformerEncoder's encoder layer) -> the
#: arguments it was built with, recorded while the samples are generated.
_BUILT_WITH: dict[int, tuple[torch.nn.Module, tuple[Any, ...], dict[str, Any]]] = {}


@contextmanager
def _recording_constructors() -> Iterator[None]:
    """Record the constructor arguments of every module_db class built meanwhile."""
    patches = []
    for cls in {info.module_cls for info in module_db}:
        original = cls.__init__

        def init(self: torch.nn.Module, *args: Any, _orig: Any = original,
                 **kwargs: Any) -> None:
            _orig(self, *args, **kwargs)
            _BUILT_WITH[id(self)] = (self, args, kwargs)  # the module kept: ids stay unique

        patches.append(mock.patch.object(cls, "__init__", init))
    for p in patches:
        p.start()
    try:
        yield
    finally:
        for p in patches:
            p.stop()


def _generate() -> dict[str, list[Sample]]:
    samples: dict[str, list[Sample]] = {}
    with _recording_constructors(), torch.random.fork_rng(devices=[]):
        for info in module_db:
            torch.manual_seed(0)
            out = samples.setdefault(info.name, [])
            for dtype in DTYPES:
                if dtype not in info.dtypes:
                    continue
                for training in (True, False) if info.train_and_eval_differ else (True,):
                    inputs = info.module_inputs_func(info, device="cpu", dtype=dtype,
                                                     requires_grad=True, training=training)
                    out.extend(Sample(dtype, training, i, mi) for i, mi in enumerate(inputs))
    return samples


INFOS = {info.name: info for info in module_db}
SAMPLES = _generate()


# ---- torch values as burnpy's -------------------------------------------------------------------
def _ours(value: Any, dtype: torch.dtype) -> Any:
    """A constructor or forward argument as a burnpy user writes it."""
    if isinstance(value, torch.Tensor):
        t = Tensor.from_data(value.detach().numpy().copy(), backend=AD)
        return t.require_grad() if value.requires_grad else t
    if isinstance(value, torch.nn.Module):
        _, args, kwargs = _BUILT_WITH[id(value)]
        return _build(type(value).__name__, args, kwargs, dtype)
    if isinstance(value, torch.dtype):
        return OURS_DTYPE[value]
    fn_name = getattr(value, "__name__", "")
    if callable(value) and getattr(torch.nn.functional, fn_name, None) is value:
        return getattr(F, fn_name)  # an activation=torch.nn.functional.gelu argument
    if isinstance(value, tuple | list):
        return type(value)(_ours(v, dtype) for v in value)
    if isinstance(value, dict):
        return {k: _ours(v, dtype) for k, v in value.items()}
    return value


def _build(name: str, args: tuple[Any, ...], kwargs: dict[str, Any], dtype: torch.dtype) -> Any:
    """burnpy's module ``name`` from torch's constructor arguments, on AD in ``dtype``."""
    kwargs = {k: v for k, v in kwargs.items() if k not in ("device", "dtype")}
    module = getattr(nn, name)(*_ours(args, dtype), **_ours(kwargs, dtype))
    return module.to(backend=AD, dtype=OURS_DTYPE[dtype])


def _torch_leaf(value: Any) -> Any:
    """A fresh copy of a forward argument (torch may write into it: ``inplace=True``)."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone().requires_grad_(value.requires_grad)
    if isinstance(value, tuple | list):
        return type(value)(_torch_leaf(v) for v in value)
    if isinstance(value, dict):
        return {k: _torch_leaf(v) for k, v in value.items()}
    return value


def _leaves(value: Any) -> list[Any]:
    """The tensors (and Nones, scalars) of a nested output, in order."""
    if isinstance(value, tuple | list):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


# ---- comparison ---------------------------------------------------------------------------------
def _first_through_log_softmax(name: str, args: tuple[Any, ...]) -> tuple[Any, ...]:
    if name not in THROUGH_LOG_SOFTMAX:
        return args
    return (args[0].log_softmax(-1), *args[1:])


def _differs(ours: Any, ref: Any, tol: float) -> str | None:
    """What differs between burnpy's value and torch's, or None."""
    if ref is None or not isinstance(ref, torch.Tensor):
        if isinstance(ours, Tensor) or ours != ref:
            return f"{ours!r} where torch gives {ref!r}"
        return None
    if not isinstance(ours, Tensor):
        return f"{type(ours).__name__} where torch gives a tensor of shape {tuple(ref.shape)}"
    if ours.shape != tuple(ref.shape):
        return f"shape {ours.shape} where torch's is {tuple(ref.shape)}"
    a, b = ours.to_numpy(), ref.detach().numpy()
    if a.dtype != b.dtype:
        return f"dtype {a.dtype} where torch's is {b.dtype}"
    if a.dtype.kind != "f":
        return None if np.array_equal(a, b) else (
            f"{int((a != b).sum())} of {a.size} values differ")
    scale = max(1.0, float(np.nanmax(np.abs(b), initial=0.0)))
    bad = ~np.isclose(a, b, rtol=tol, atol=tol * scale, equal_nan=True)
    if bad.any():
        i = np.unravel_index(int(np.argmax(bad)), a.shape)
        return (f"{int(bad.sum())} of {a.size} values differ, e.g. at {tuple(map(int, i))} "
                f"{a[i]!r} where torch gives {b[i]!r}")
    return None


def _grad_of(ours: Tensor, grads: Any) -> Tensor | None:
    return ours.grad(grads) if ours.is_require_grad() else None


def _run_sample(name: str, sample: Sample, out: Outcome) -> None:
    info = INFOS[name]
    cls_name = info.module_cls.__name__
    tol = TOL[sample.dtype]
    where = sample.label()
    ctor, fwd = sample.module_input.constructor_input, sample.module_input.forward_input
    ref = info.module_cls(*ctor.args, **ctor.kwargs).to(sample.dtype).train(sample.training)
    t_args, t_kwargs = _torch_leaf(fwd.args), _torch_leaf(fwd.kwargs)
    args, kwargs = _ours(t_args, sample.dtype), _ours(t_kwargs, sample.dtype)
    try:
        ours = _build(cls_name, ctor.args, ctor.kwargs, sample.dtype).train(sample.training)
        if any(isinstance(p, torch.nn.parameter.UninitializedParameter)
               for p in ref.parameters()):  # a lazy module: one forward sizes it
            with torch.no_grad():
                ref(*_torch_leaf(fwd.args), **_torch_leaf(fwd.kwargs))
            ours(*_ours(_torch_leaf(fwd.args), sample.dtype),
                 **_ours(_torch_leaf(fwd.kwargs), sample.dtype))
        ours.load_state_dict({k: v.detach().numpy().copy() for k, v in ref.state_dict().items()})
        result = ours(*_first_through_log_softmax(name, args), **kwargs)
    except StateDictError as e:
        out.failures.append(f"{where}: torch's state dict does not load: {e}")
        return
    except BurnpyError as e:
        out.refusals.append(f"{where}: {type(e).__name__}: {e}")
        return
    except Exception as e:  # a leaked exception is what the test reports
        out.failures.append(f"{where}: leaked {type(e).__name__}: {e}")
        return
    expected = ref(*_first_through_log_softmax(name, t_args), **t_kwargs)
    problems: list[str] = []
    ours_out, ref_out = _leaves(result), _leaves(expected)
    if len(ours_out) != len(ref_out):
        out.failures.append(f"{where}: {len(ours_out)} outputs where torch gives {len(ref_out)}")
        return
    for k, (a, b) in enumerate(zip(ours_out, ref_out, strict=True)):
        if (msg := _differs(a, b, tol)) is not None:
            problems.append(f"output {k}: {msg}")
    ref_buffers = dict(ref.named_buffers())
    for key, value in ours.state_dict().items():
        if key in ref_buffers and (msg := _differs(value, ref_buffers[key], tol)) is not None:
            problems.append(f"buffer {key} after forward: {msg}")
    if problems:
        out.failures.extend(f"{where}: {p}" for p in problems)
        return
    _check_gradients(ours, ref, (args, kwargs), (t_args, t_kwargs), ours_out, ref_out, sample,
                     out)


def _check_gradients(ours: Any, ref: torch.nn.Module, inputs: Any, t_inputs: Any,
                     ours_out: list[Any], ref_out: list[Any], sample: Sample,
                     out: Outcome) -> None:
    """Input and parameter gradients of a seeded cotangent on every float output."""
    rng = np.random.default_rng(sample.index)
    ours_loss: Tensor | None = None
    ref_loss: torch.Tensor | None = None
    for a, b in zip(ours_out, ref_out, strict=True):
        if isinstance(b, torch.Tensor) and b.requires_grad:
            seed = rng.standard_normal(tuple(b.shape)).astype(b.detach().numpy().dtype)
            term = (a * Tensor.from_data(seed, backend=AD)).sum()
            ours_loss = term if ours_loss is None else ours_loss + term
            t_term = (b * torch.from_numpy(seed)).sum()
            ref_loss = t_term if ref_loss is None else ref_loss + t_term
    if ours_loss is None or ref_loss is None:
        return
    where = sample.label()
    try:
        grads = ours_loss.backward()
    except BurnpyError as e:
        out.refusals.append(f"{where}: backward: {type(e).__name__}: {e}")
        return
    except Exception as e:  # a leaked exception is what the test reports
        out.failures.append(f"{where}: backward leaked {type(e).__name__}: {e}")
        return
    ref_loss.backward()
    tol = TOL[sample.dtype]
    pairs = [(f"input {i}", a, b) for i, (a, b) in enumerate(
        zip(_leaves(inputs), _leaves(t_inputs), strict=True))
        if isinstance(b, torch.Tensor) and b.requires_grad]
    params = dict(ref.named_parameters())
    pairs += [(f"parameter {key}", p, params[key]) for key, p in ours.named_parameters()]
    for what, a, b in pairs:
        mine = _grad_of(a, grads)
        theirs = b.grad
        if theirs is None and mine is None:
            continue
        if theirs is None:
            theirs = torch.zeros_like(b)
        if mine is None:
            mine = Tensor.zeros(a.shape, backend=AD, dtype=a.dtype)
        if (msg := _differs(mine, theirs, tol)) is not None:
            out.failures.append(f"{where}: gradient of {what}: {msg}")


def run_entry(name: str) -> Outcome:
    """Every sample of module_db's entry ``name`` against burnpy."""
    out = Outcome(name)
    if not hasattr(nn, INFOS[name].module_cls.__name__):
        out.absent = True
        return out
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny tensors: torch's thread pool only waits on busy cores
    try:
        with torch.random.fork_rng(devices=[]):  # torch's inits leave the caller's RNG alone
            for sample in SAMPLES[name]:
                _run_sample(name, sample, out)
                out.ran += 1
    finally:
        torch.set_num_threads(threads)
    return out


# ---- the tests --------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(SAMPLES))
def test_module_db_entry(name: str) -> None:
    out = run_entry(name)
    expected = LISTED[name][0] if name in LISTED else "clean"
    problems = out.failures + out.refusals
    assert out.status == expected, (
        f"{name} is {out.status}, listed as {expected}"
        + (" (take it off LISTED)" if out.status == "clean" else "")
        + f": {len(problems)} problems in {out.ran} samples:\n" + "\n".join(problems[:10]))
    if out.status != "absent":
        assert out.ran == len(SAMPLES[name]) > 0


def test_listed_entries_exist() -> None:
    """Every listed entry is one of module_db's, with a known status and a reason."""
    assert set(LISTED) | set(THROUGH_LOG_SOFTMAX) <= set(SAMPLES)
    assert all(status in ("absent", "refusing", "failing") and reason
               for status, reason in LISTED.values())


def test_every_sample_runs() -> None:
    """No entry is left without samples (torch's generators ran for every dtype listed)."""
    assert len(SAMPLES) == len(module_db)
    assert all(SAMPLES[name] for name in SAMPLES)


def test_the_check_sees_a_wrong_gradient_and_a_wrong_running_statistic(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison is not vacuous: a bias left out of the graph and a BatchNorm keeping
    twice torch's momentum are both reported."""
    linear = F.linear
    monkeypatch.setattr(F, "linear", lambda x, w, b=None: linear(
        x, w, None if b is None else b.detach()))
    out = run_entry("nn.Linear")
    assert out.status == "failing"
    assert "gradient of parameter bias" in out.failures[0]
    monkeypatch.undo()

    init = nn.BatchNorm1d.__init__

    def doubled(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self.momentum = None if self.momentum is None else 2 * self.momentum

    monkeypatch.setattr(nn.BatchNorm1d, "__init__", doubled)
    out = run_entry("nn.BatchNorm1d")
    assert any("buffer running_mean after forward" in f for f in out.failures)


def counts() -> tuple[int, int, int]:
    """(clean, listed with a reason, total) over module_db's entries, as this file asserts."""
    return len(SAMPLES) - len(LISTED), len(LISTED), len(SAMPLES)


def main(argv: list[str]) -> int:
    """Run the entries, print those not clean with their problems, then the counts."""
    verbose = "-v" in argv
    names = [a for a in argv if not a.startswith("-")] or list(SAMPLES)
    statuses: dict[str, int] = {}
    for name in names:
        out = run_entry(name)
        statuses[out.status] = statuses.get(out.status, 0) + 1
        problems = out.failures + out.refusals
        if out.status != "clean":
            print(f"{out.status:9} {name}: {len(problems)} problems in {out.ran} samples")
            for p in problems if verbose else problems[:3]:
                print(f"          {p[:400]}")
    print(", ".join(f"{n} {s}" for s, n in sorted(statuses.items())) + f" (of {len(names)})")
    clean, listed, total = counts()
    print(f"module_db entries: {clean} clean, {listed} listed with a reason, {total} total")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
