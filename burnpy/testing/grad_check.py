"""The gradient conformance runner: one ``OpCase`` under ``Autodiff[backend, strategy]``.

``run_grad_case`` draws the case's inputs in float64, differentiates
``sum(out * cotangent)`` (summed over every float output, with random cotangents) with respect
to every float argument marked ``requires_grad``, and checks the gradients against torch's
autograd on the same values (``GRAD_RTOL``) and, when the inputs are small, against central
finite differences of the same function computed through burnpy on the plain backend
(``FD_EPS``, ``FD_RTOL``). The forward values under tracking are checked against torch too.
``run_second_order_case`` checks Hessian-vector products through
``Autodiff[Autodiff[backend, strategy], strategy]`` against torch's double backward: every
rule is written with the inner backend's ops, so its own derivative is recorded.

Run it on your own backend::

    import pytest
    from burnpy.testing.grad_check import parametrize_grad_cases, run_grad_case

    @pytest.mark.parametrize(("case", "strategy"), parametrize_grad_cases())
    def test_grad(case, strategy):
        run_grad_case(case, MyBackend, strategy, seed=0)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
import torch

from burnpy.autodiff import Autodiff, BalancedCheckpointing, NoCheckpointing
from burnpy.autodiff.checkpoint import CheckpointStrategy
from burnpy.backend.base import Backend
from burnpy.backend.dtype import DType
from burnpy.backend.errors import UnsupportedDTypeError
from burnpy.tensor import Tensor
from burnpy.testing import op_cases as _op_cases  # noqa: F401 - registers the cases
from burnpy.testing.cases import CASES, Arg, OpCase
from burnpy.testing.conformance import dtype_gap, to_burnpy
from burnpy.testing.module_cases import MODULE_CASES

#: Relative tolerance against torch's float64 gradients (scaled by the gradient's largest
#: magnitude for elements that come out of cancellation), and for second derivatives.
GRAD_RTOL = 1e-9
HVP_RTOL = 1e-8
#: The float32 mode's tolerances (scaled like GRAD_RTOL): float32 rounding through a few ops.
FORWARD_RTOL_F32 = 1e-5
GRAD_RTOL_F32 = 1e-4
#: Float32 cases whose conditioning needs more, with the reason.
F32_GRAD_RTOL: dict[str, tuple[float, str]] = {
    "softmax_large": (1e-2, "inputs of +-50 saturate softmax: its 1e-5 gradients come out of "
                            "cancellation in s * (g - sum(s * g)), float32 keeps ~2 digits"),
}
#: Central-difference step and the tolerance of the comparison with it.
FD_EPS = 1e-6
FD_RTOL = 1e-5
#: Finite differences run when the differentiated inputs hold at most this many elements
#: (always when torch has no derivative for the case), unless the graph rounds values to a
#: narrower float on the way: a 1e-6 step is below that dtype's resolution.
FD_MAX_ELEMENTS = 48
#: Cases where torch's float64 gradient is itself less accurate, with the rtol that covers it.
TORCH_GRAD_RTOL: dict[str, tuple[float, str]] = {
    "hard_sigmoid": (1e-7, "torch's CPU hardsigmoid backward multiplies by 1/6 rounded to "
                           "float32"),
}

STRATEGIES: tuple[type[CheckpointStrategy], ...] = (NoCheckpointing, BalancedCheckpointing)


def grad_cases(cases: Sequence[OpCase] | None = None) -> list[OpCase]:
    """The cases with ``grad=True`` and at least one float argument to differentiate
    (default: the shared table followed by the module-op table)."""
    pool = [*CASES, *MODULE_CASES] if cases is None else cases
    return [c for c in pool if c.grad and any(_differentiated(a) for a in c.args)]


def parametrize_grad_cases(cases: Sequence[OpCase] | None = None,
                           strategies: Sequence[type[CheckpointStrategy]] = STRATEGIES
                           ) -> list[Any]:
    """``pytest.param(case, strategy)`` for every gradient case and strategy, ids
    ``"<case>-<strategy>"``."""
    return [pytest.param(c, s, id=f"{c.name}-{s.label}")
            for c in grad_cases(cases) for s in strategies]


def run_grad_case(case: OpCase, backend: type[Backend], strategy: type[CheckpointStrategy],
                  seed: int = 0, dtype: str = "float64") -> None:
    """Check the gradients of ``case`` on ``Autodiff[backend, strategy]``; raise
    AssertionError naming the case, the input and the worst element on any mismatch.

    In float64 (the default) the gradients must match torch to ``GRAD_RTOL`` and finite
    differences. ``dtype="float32"`` is the mode for backends without float64 (WebGPU): the
    inputs are the same draws rounded to float32, torch differentiates those values in
    float64, and the gradients must match to ``GRAD_RTOL_F32``; a case that asks for a dtype
    the backend does not support (``asks_dtypes``) is skipped with the reason, any other
    refused dtype fails.
    """
    where = (f"grad case {case.name!r} [{dtype}] on Autodiff[{backend.__name__}, "
             f"{strategy.__name__}]")
    single = DType.of(dtype) is DType.float32
    rng = np.random.default_rng(seed)
    arrays = [_draw(arg, rng) for arg in case.args]
    if single:
        arrays = [_single(arr) for arr in arrays]
    ad = Autodiff(backend, strategy)
    inputs = [_to_burnpy(arg, arr, ad) for arg, arr in zip(case.args, arrays, strict=True)]
    try:
        outputs = _float_outputs(case.fn(*inputs))
    except UnsupportedDTypeError as exc:
        dtype_gap(case, where, exc)
    cotangents = [rng.standard_normal(o.shape) for o in outputs]
    if single:
        cotangents = [c.astype(np.float32).astype(np.float64) for c in cotangents]
        arrays = [a.astype(np.float64) if a.dtype.kind == "f" else
                  a.astype(np.int64) if a.dtype.kind in "iu" else a for a in arrays]

    t_inputs = [_to_torch(arg, arr) for arg, arr in zip(case.args, arrays, strict=True)]
    t_outputs = _float_outputs((case.torch_fn or case.fn)(*t_inputs))
    if len(t_outputs) != len(outputs):
        raise AssertionError(f"{where}: {len(outputs)} float outputs, torch gives "
                             f"{len(t_outputs)}")
    for i, (ours, theirs) in enumerate(zip(outputs, t_outputs, strict=True)):
        _assert_close(f"{where}, forward output {i}", ours.to_numpy(),
                      theirs.detach().double().numpy(), FORWARD_RTOL_F32 if single else 1e-12,
                      case)

    narrowed = _rounds_to_narrower_float(outputs)
    positions = _grad_positions(case)
    ours_grads = [_numpy(g, inputs[i].shape) for i, g in zip(
        positions, _vjp(outputs, cotangents, [inputs[i] for i in positions]), strict=True)]
    try:
        theirs = _torch_vjp(t_outputs, cotangents, [t_inputs[i] for i in positions], False)
    except RuntimeError:  # torch has no (or a broken) derivative here: differences decide
        theirs = None
    if theirs is not None:
        rtol = (F32_GRAD_RTOL.get(case.name, (GRAD_RTOL_F32, ""))[0] if single
                else TORCH_GRAD_RTOL.get(case.name, (GRAD_RTOL, ""))[0])
        for i, got, want in zip(positions, ours_grads, theirs, strict=True):
            _assert_close(f"{where}, gradient of input {i} vs torch", got,
                          _torch_numpy(want, t_inputs[i].shape), rtol, case)
    if single:  # a 1e-6 difference step is below float32's resolution
        if theirs is None:
            pytest.skip(f"torch has no derivative for {case.name}; float32 cannot be checked "
                        "by finite differences")
        return
    small = sum(arrays[i].size for i in positions) <= FD_MAX_ELEMENTS
    if theirs is None and narrowed:
        raise AssertionError(f"{where}: torch cannot differentiate it and finite differences "
                             "cannot either (it rounds to a narrower float)")
    if not narrowed and (small or theirs is None):
        fd_grads = _finite_differences(case, backend, arrays, cotangents)
        for i, got, want in zip(positions, ours_grads, fd_grads, strict=True):
            _assert_close(f"{where}, gradient of input {i} vs finite differences", got, want,
                          FD_RTOL, case)


def run_second_order_case(case: OpCase, backend: type[Backend], strategy: type[CheckpointStrategy],
                          seed: int = 0) -> None:
    """Check ``d/dx <grad_x sum(out * cotangent), v>`` for random directions ``v`` on
    ``Autodiff[Autodiff[backend, strategy], strategy]`` against torch's double backward;
    a case torch cannot differentiate twice is skipped."""
    where = (f"second-order case {case.name!r} on Autodiff[Autodiff[{backend.__name__}, "
             f"{strategy.__name__}]]")
    rng = np.random.default_rng(seed)
    arrays = [_draw(arg, rng) for arg in case.args]
    positions = _grad_positions(case)
    inner = Autodiff(backend, strategy)
    outer = Autodiff(inner, strategy)
    leaves = {i: Tensor.from_data(arrays[i], backend=inner).require_grad() for i in positions}
    inputs = [Tensor.from_inner(leaves[i], backend=outer).require_grad() if i in leaves
              else Tensor.from_data(arr, backend=outer) for i, arr in enumerate(arrays)]
    outputs = _float_outputs(case.fn(*inputs))
    cotangents = [rng.standard_normal(o.shape) for o in outputs]
    directions = [rng.standard_normal(arrays[i].shape) for i in positions]
    first = _vjp(outputs, cotangents, [inputs[i] for i in positions])
    pairs = [(g, v) for g, v in zip(first, directions, strict=True) if g is not None]
    ours = _vjp([g for g, _ in pairs], [v for _, v in pairs], [leaves[i] for i in positions])

    t_inputs = [_to_torch(arg, arr) for arg, arr in zip(case.args, arrays, strict=True)]
    t_outputs = _float_outputs((case.torch_fn or case.fn)(*t_inputs))
    t_wanted = [t_inputs[i] for i in positions]
    try:
        t_first = _torch_vjp(t_outputs, cotangents, t_wanted, True)
        t_pairs = [(g, v) for g, v in zip(t_first, directions, strict=True) if g is not None]
        theirs = _torch_vjp([g for g, _ in t_pairs], [v for _, v in t_pairs], t_wanted, False)
    except RuntimeError as exc:
        pytest.skip(f"torch cannot differentiate {case.name} twice: {exc}")
    for i, got, want in zip(positions, ours, theirs, strict=True):
        _assert_close(f"{where}, Hessian-vector product for input {i}",
                      _numpy(got, arrays[i].shape), _torch_numpy(want, arrays[i].shape),
                      HVP_RTOL, case)


def _single(arr: np.ndarray) -> np.ndarray:
    """A float draw rounded to float32."""
    return arr.astype(np.float32) if arr.dtype.kind == "f" else arr


def _differentiated(arg: Arg) -> bool:
    return arg.kind == "float" and arg.requires_grad


def _grad_positions(case: OpCase) -> list[int]:
    return [i for i, a in enumerate(case.args) if _differentiated(a)]


def _draw(arg: Arg, rng: np.random.Generator) -> np.ndarray:
    return arg.draw(rng, np.dtype(np.float64) if arg.kind == "float" else np.dtype(np.int64))


def _to_burnpy(arg: Arg, arr: np.ndarray, backend: type[Backend]) -> Tensor:
    """A Tensor of ``backend`` (a non-contiguous view stays one, ints in the backend's int
    dtype); a differentiated float argument is a tracked leaf."""
    t = to_burnpy(arg, arr, backend)
    return t.require_grad() if _differentiated(arg) else t


def _to_torch(arg: Arg, arr: np.ndarray) -> torch.Tensor:
    t = torch.from_numpy(np.array(arr))
    return t.requires_grad_() if _differentiated(arg) else t


def _float_outputs(result: Any) -> list[Any]:
    """The float tensors among a case's outputs (indices and masks carry no gradient)."""
    items = list(result) if isinstance(result, tuple | list) else [result]
    return [o for o in items if (o.kind == "float" if isinstance(o, Tensor)
                                 else o.dtype.is_floating_point)]


def _rounds_to_narrower_float(outputs: list[Tensor]) -> bool:
    """Whether the recorded graph casts to (or returns) a float narrower than float64."""
    nodes = [o.primitive.node for o in outputs if o.requires_grad]
    if any(o.dtype is not DType.float64 for o in outputs):
        return True
    seen = set(nodes)
    while nodes:
        node = nodes.pop()
        if node.op is not None and node.op.name == "float_cast" and \
                node.params[0] is not DType.float64:
            return True
        for parent in node.parents or ():
            if parent is not None and parent not in seen:
                seen.add(parent)
                nodes.append(parent)
    return False


def _vjp(outputs: list[Tensor], cotangents: list[np.ndarray],
         wanted: list[Tensor]) -> list[Tensor | None]:
    """Gradients of ``sum(out * cotangent)`` over the tracked outputs with respect to
    ``wanted`` (None where a tensor is not reached)."""
    loss = None
    for out, cot in zip(outputs, cotangents, strict=True):
        if out.requires_grad:
            term = (out * Tensor.from_data(cot.astype(out.dtype.numpy), backend=out.backend)).sum()
            loss = term if loss is None else loss + term
    if loss is None:
        return [None] * len(wanted)
    grads = loss.backward()
    return [t.grad(grads) for t in wanted]


def _torch_vjp(outputs: list[torch.Tensor], cotangents: list[np.ndarray],
               wanted: list[torch.Tensor], create_graph: bool) -> list[torch.Tensor | None]:
    """torch's gradients of the same objective (``create_graph`` for a second pass)."""
    terms = [(o * torch.from_numpy(c).to(o.dtype)).sum()
             for o, c in zip(outputs, cotangents, strict=True) if o.requires_grad]
    if not terms:
        return [None] * len(wanted)
    return list(torch.autograd.grad(sum(terms[1:], start=terms[0]), wanted,
                                    create_graph=create_graph, allow_unused=True))


def _numpy(grad: Tensor | None, shape: tuple[int, ...]) -> np.ndarray:
    return np.zeros(shape) if grad is None else grad.to_numpy()


def _torch_numpy(grad: torch.Tensor | None, shape: Any) -> np.ndarray:
    """A torch gradient as float64 NumPy (torch's symbolic zero tensors included)."""
    if grad is None:
        return np.zeros(tuple(shape))
    return torch.zeros(grad.shape, dtype=torch.float64).add_(grad.detach()).numpy()


def _finite_differences(case: OpCase, backend: type[Backend], arrays: list[np.ndarray],
                        cotangents: list[np.ndarray]) -> list[np.ndarray]:
    """Central differences of ``sum(out * cotangent)`` through burnpy on ``backend``."""

    def objective(values: list[np.ndarray]) -> float:
        outs = _float_outputs(case.fn(*[Tensor.from_data(v, backend=backend)
                                        for v in values]))
        return float(sum(np.sum(o.to_numpy() * c) for o, c in zip(outs, cotangents,
                                                                  strict=True)))

    grads = []
    for i in _grad_positions(case):
        grad = np.zeros(arrays[i].shape)
        for idx in np.ndindex(arrays[i].shape):
            values = [np.array(a) for a in arrays]
            values[i][idx] += FD_EPS
            up = objective(values)
            values[i][idx] -= 2 * FD_EPS
            grad[idx] = (up - objective(values)) / (2 * FD_EPS)
        grads.append(grad)
    return grads


def _assert_close(where: str, got: np.ndarray, want: np.ndarray, rtol: float,
                  case: OpCase) -> None:
    """Equal NaN positions and ``|got - want| <= rtol * (|want| + max|want|)``, loosened by
    the case's own rtol/atol."""
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        raise AssertionError(f"{where}: shape {got.shape}, expected {want.shape}")
    nan_got, nan_want = np.isnan(got), np.isnan(want)
    if not np.array_equal(nan_got, nan_want):
        raise AssertionError(f"{where}: NaN at {np.argwhere(nan_got).tolist()[:5]}, expected "
                             f"NaN at {np.argwhere(nan_want).tolist()[:5]}")
    finite = np.where(np.isfinite(want), np.abs(want), 0.0)
    scale = float(finite.max(initial=0.0))
    rtol = max(rtol, case.rtol or 0.0)
    with np.errstate(invalid="ignore"):
        err = np.where((got == want) | nan_want, 0.0, np.abs(got - want))
        bad = ~(err <= rtol * (np.abs(want) + scale) + (case.atol or 0.0))
    if bad.any():
        worst = np.unravel_index(int(np.argmax(np.where(bad, err, -1.0))), got.shape)
        raise AssertionError(
            f"{where}: {int(bad.sum())} of {got.size} values outside rtol={rtol}; worst at "
            f"{tuple(int(i) for i in worst)}: got {got[worst]!r}, expected {want[worst]!r}")
