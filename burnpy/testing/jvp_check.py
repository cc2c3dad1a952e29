"""The tangent conformance runner: one ``OpCase`` under ``ForwardAD(backend)``.

``run_jvp_case`` draws the case's inputs in float64 and a random tangent for every float
argument marked ``requires_grad``, runs the case on ``ForwardAD(backend)`` and checks the
primal outputs against torch and the output tangents against ``torch.func.jvp`` of the same
function (``JVP_RTOL``); where torch has no forward derivative, central differences along
the tangent through burnpy on the plain backend decide (``FD_EPS``, ``FD_RTOL``).
``run_forward_over_forward_case`` checks the second directional derivative ``D2f[u, v]``
through ``ForwardAD(ForwardAD(backend))`` against ``torch.func.jvp`` of ``jvp``, and
``run_hvp_case`` the Hessian-vector product of ``sum(out * cotangent)`` through
``Autodiff(ForwardAD(backend))`` (forward-over-reverse: every reverse rule runs on dual
primitives) against torch's double backward.

Run it on your own backend::

    import pytest
    from burnpy.testing.jvp_check import parametrize_jvp_cases, run_jvp_case

    @pytest.mark.parametrize("case", parametrize_jvp_cases())
    def test_tangents(case):
        run_jvp_case(case, MyBackend, seed=0)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
import torch
import torch.func

from burnpy.autodiff import Autodiff
from burnpy.autodiff.forward import ForwardAD, make_dual, unpack_dual
from burnpy.backend.base import Backend
from burnpy.backend.dtype import DType
from burnpy.tensor import Tensor
from burnpy.testing.cases import OpCase
from burnpy.testing.conformance import to_burnpy
from burnpy.testing.grad_check import (
    FD_EPS,
    FD_RTOL,
    HVP_RTOL,
    TORCH_GRAD_RTOL,
    _assert_close,
    _draw,
    _float_outputs,
    _grad_positions,
    _numpy,
    _torch_numpy,
    _torch_vjp,
    _vjp,
    grad_cases,
)

#: Relative tolerance of float64 tangents against torch's (scaled by the largest magnitude
#: for elements that come out of cancellation), and of second-order tangents.
JVP_RTOL = 1e-9
SECOND_ORDER_RTOL = 1e-8
#: Cases whose second forward derivative torch gets wrong, checked by differences instead.
TORCH_SECOND_FORWARD_WRONG: dict[str, str] = {
    "cumprod_zero": "torch's forward-over-forward cumprod drops the terms through a zero "
                    "(its reverse-over-reverse Hessian agrees with burnpy)",
    **dict.fromkeys(
        ("batch_norm_train", "batch_norm_train_no_affine_1d", "batch_norm_train_3d"),
        "torch 2.13's forward-over-forward batch_norm (training) disagrees with central "
        "differences and with its own composition from mean and var; burnpy agrees with both"),
    **dict.fromkeys(
        ("layer_norm", "layer_norm_two_dims_weight_only", "layer_norm_no_affine"),
        "torch 2.13's forward-over-forward layer_norm disagrees with central differences and "
        "with its own composition from mean and var; burnpy agrees with both"),
    **dict.fromkeys(
        ("linalg_det", "linalg_det_negative", "linalg_slogdet", "linalg_solve",
         "linalg_solve_vector", "linalg_solve_broadcast", "linalg_solve_right"),
        "torch 2.13's forward-over-forward det, slogdet and solve treat the saved LU factors "
        "as constants and disagree with central differences; burnpy agrees with them"),
    **dict.fromkeys(
        ("instance_norm", "instance_norm_affine"),
        "torch's instance_norm runs its batch_norm, whose forward-over-forward is wrong (see "
        "batch_norm_train); burnpy agrees with central differences"),
}


def parametrize_jvp_cases(cases: Sequence[OpCase] | None = None) -> list[Any]:
    """``pytest.param(case)`` for every differentiable case (default: the shared table and
    the module-op table), ids ``"<case>"``."""
    return [pytest.param(c, id=c.name) for c in grad_cases(cases)]


def run_jvp_case(case: OpCase, backend: type[Backend], seed: int = 0) -> None:
    """Check the float64 tangents of ``case`` on ``ForwardAD(backend)``; raise AssertionError
    naming the case, the output and the worst element on any mismatch."""
    where = f"jvp case {case.name!r} on ForwardAD[{backend.__name__}]"
    rng = np.random.default_rng(seed)
    arrays = [_draw(arg, rng) for arg in case.args]
    positions = _grad_positions(case)
    tangents = {i: rng.standard_normal(arrays[i].shape) for i in positions}
    inputs = [_dual(case, i, arr, backend, tangents.get(i)) for i, arr in enumerate(arrays)]
    outputs = [unpack_dual(o) for o in _float_outputs(case.fn(*inputs))]

    t_inputs = [torch.from_numpy(np.array(arr)) for arr in arrays]
    fn = _on_positions(case, t_inputs, positions)
    t_primals = tuple(t_inputs[i] for i in positions)
    t_outputs = fn(*t_primals)
    if len(t_outputs) != len(outputs):
        raise AssertionError(f"{where}: {len(outputs)} float outputs, torch gives "
                             f"{len(t_outputs)}")
    for k, ((primal, _), theirs) in enumerate(zip(outputs, t_outputs, strict=True)):
        _assert_close(f"{where}, primal output {k}", primal.to_numpy(),
                      theirs.double().numpy(), 1e-12, case)
    ours = [_numpy(tangent, primal.shape) for primal, tangent in outputs]
    try:
        theirs_tangents = torch.func.jvp(
            fn, t_primals, tuple(torch.from_numpy(tangents[i]) for i in positions))[1]
    except (RuntimeError, NotImplementedError):  # no forward derivative in torch
        theirs_tangents = None
    if theirs_tangents is not None:
        rtol = TORCH_GRAD_RTOL.get(case.name, (JVP_RTOL, ""))[0]
        for k, (got, want) in enumerate(zip(ours, theirs_tangents, strict=True)):
            _assert_close(f"{where}, tangent of output {k} vs torch.func.jvp", got,
                          _torch_numpy(want, got.shape), rtol, case)
        return
    if any(primal.dtype is not DType.float64 for primal, _ in outputs):
        raise AssertionError(f"{where}: torch has no forward derivative and finite "
                             "differences cannot check an output narrower than float64")
    for k, (got, want) in enumerate(zip(ours, _directional_differences(
            case, backend, arrays, tangents), strict=True)):
        _assert_close(f"{where}, tangent of output {k} vs finite differences", got, want,
                      FD_RTOL, case)


def run_forward_over_forward_case(case: OpCase, backend: type[Backend], seed: int = 0) -> None:
    """Check ``D2f[u, v]`` of ``case`` through ``ForwardAD(ForwardAD(backend))`` (inner
    tangent ``v``, outer tangent ``u``) against torch's ``jvp`` of ``jvp``; where torch cannot
    take it (or takes it wrongly, ``TORCH_SECOND_FORWARD_WRONG``), against central differences
    along ``u`` of the first-order tangent along ``v``."""
    where = (f"forward-over-forward case {case.name!r} on "
             f"ForwardAD[ForwardAD[{backend.__name__}]]")
    rng = np.random.default_rng(seed)
    arrays = [_draw(arg, rng) for arg in case.args]
    positions = _grad_positions(case)
    inner_tangents = {i: rng.standard_normal(arrays[i].shape) for i in positions}
    outer_tangents = {i: rng.standard_normal(arrays[i].shape) for i in positions}
    fad = ForwardAD(backend)
    inputs = []
    for i, arr in enumerate(arrays):
        inner = _dual(case, i, arr, backend, inner_tangents.get(i))
        outer = None if i not in outer_tangents else Tensor.from_inner(
            Tensor.from_data(outer_tangents[i], backend=backend), backend=fad)
        inputs.append(make_dual(inner, outer) if inner.kind == "float" else
                      Tensor.from_inner(inner, backend=ForwardAD(fad)))
    ours = []
    for out in _float_outputs(case.fn(*inputs)):
        _, outer = unpack_dual(out)
        second = None if outer is None else unpack_dual(outer).tangent
        ours.append(_numpy(second, out.shape))

    t_inputs = [torch.from_numpy(np.array(arr)) for arr in arrays]
    fn = _on_positions(case, t_inputs, positions)
    v = tuple(torch.from_numpy(inner_tangents[i]) for i in positions)
    u = tuple(torch.from_numpy(outer_tangents[i]) for i in positions)
    if case.name not in TORCH_SECOND_FORWARD_WRONG:
        try:
            theirs = torch.func.jvp(lambda *p: torch.func.jvp(fn, p, v)[1],
                                    tuple(t_inputs[i] for i in positions), u)[1]
        except (RuntimeError, NotImplementedError):  # no second forward derivative in torch
            pass
        else:
            for k, (got, want) in enumerate(zip(ours, theirs, strict=True)):
                _assert_close(f"{where}, second-order tangent of output {k}", got,
                              _torch_numpy(want, got.shape), SECOND_ORDER_RTOL, case)
            return

    def first_order(step: float) -> list[np.ndarray]:
        moved = [arr + step * outer_tangents[i] if i in outer_tangents else arr
                 for i, arr in enumerate(arrays)]
        duals = [_dual(case, i, arr, backend, inner_tangents.get(i))
                 for i, arr in enumerate(moved)]
        return [_numpy(unpack_dual(o).tangent, o.shape)
                for o in _float_outputs(case.fn(*duals))]

    up, down = first_order(FD_EPS), first_order(-FD_EPS)
    for k, (got, a, b) in enumerate(zip(ours, up, down, strict=True)):
        _assert_close(f"{where}, second-order tangent of output {k} vs finite differences",
                      got, (a - b) / (2 * FD_EPS), FD_RTOL, case)


def run_hvp_case(case: OpCase, backend: type[Backend], seed: int = 0) -> None:
    """Check the Hessian-vector product of ``sum(out * cotangent)`` along random directions
    through ``Autodiff(ForwardAD(backend))`` against torch's double backward; where torch
    cannot differentiate twice, against central differences along the directions of the
    gradient on ``Autodiff(backend)``."""
    where = f"hvp case {case.name!r} on Autodiff[ForwardAD[{backend.__name__}]]"
    rng = np.random.default_rng(seed)
    arrays = [_draw(arg, rng) for arg in case.args]
    positions = _grad_positions(case)
    directions = {i: rng.standard_normal(arrays[i].shape) for i in positions}
    outer = Autodiff(ForwardAD(backend))
    inputs = [Tensor.from_inner(_dual(case, i, arr, backend, directions.get(i)), backend=outer)
              for i, arr in enumerate(arrays)]
    for i in positions:
        inputs[i].require_grad()
    outputs = _float_outputs(case.fn(*inputs))
    cotangents = [rng.standard_normal(o.shape) for o in outputs]
    grads = _vjp(outputs, cotangents, [inputs[i] for i in positions])
    ours = [_numpy(None if g is None else unpack_dual(g).tangent, arrays[i].shape)
            for i, g in zip(positions, grads, strict=True)]

    t_inputs = [torch.from_numpy(np.array(arr)) for arr in arrays]
    t_wanted = [t_inputs[i].requires_grad_() for i in positions]
    t_outputs = _float_outputs((case.torch_fn or case.fn)(*t_inputs))
    try:
        t_first = _torch_vjp(t_outputs, cotangents, t_wanted, True)
        t_pairs = [(g, directions[i]) for i, g in zip(positions, t_first, strict=True)
                   if g is not None]
        theirs = _torch_vjp([g for g, _ in t_pairs], [v for _, v in t_pairs], t_wanted, False)
    except RuntimeError:  # torch cannot differentiate it twice
        theirs = None
    if theirs is not None:
        for i, got, want in zip(positions, ours, theirs, strict=True):
            _assert_close(f"{where}, Hessian-vector product for input {i}", got,
                          _torch_numpy(want, arrays[i].shape), HVP_RTOL, case)
        return

    def gradients(step: float) -> list[np.ndarray]:
        ad = Autodiff(backend)
        moved = [to_burnpy(arg, arr + step * directions[i] if i in directions else arr, ad)
                 for i, (arg, arr) in enumerate(zip(case.args, arrays, strict=True))]
        for i in positions:
            moved[i].require_grad()
        found = _vjp(_float_outputs(case.fn(*moved)), cotangents, [moved[i] for i in positions])
        return [_numpy(g, arrays[i].shape) for i, g in zip(positions, found, strict=True)]

    up, down = gradients(FD_EPS), gradients(-FD_EPS)
    for i, got, a, b in zip(positions, ours, up, down, strict=True):
        _assert_close(f"{where}, Hessian-vector product for input {i} vs finite differences",
                      got, (a - b) / (2 * FD_EPS), FD_RTOL, case)


def _dual(case: OpCase, i: int, arr: np.ndarray, backend: type[Backend],
          tangent: np.ndarray | None) -> Tensor:
    """Argument ``i`` on ``ForwardAD(backend)`` (a non-contiguous view stays one), with
    ``tangent`` when it is differentiated."""
    primal = to_burnpy(case.args[i], arr, backend)
    if tangent is None:
        return Tensor.from_inner(primal, backend=ForwardAD(backend))
    return make_dual(primal, Tensor.from_data(tangent, backend=backend))


def _on_positions(case: OpCase, t_inputs: list[torch.Tensor],
                  positions: list[int]) -> Callable[..., tuple[torch.Tensor, ...]]:
    """torch's function of the differentiated arguments only, returning its float outputs."""
    fn = case.torch_fn or case.fn

    def call(*diff: torch.Tensor) -> tuple[torch.Tensor, ...]:
        args = list(t_inputs)
        for i, d in zip(positions, diff, strict=True):
            args[i] = d
        return tuple(_float_outputs(fn(*args)))

    return call


def _directional_differences(case: OpCase, backend: type[Backend], arrays: list[np.ndarray],
                             tangents: dict[int, np.ndarray]) -> list[np.ndarray]:
    """Central differences of every float output along the tangents, through burnpy on
    ``backend``."""

    def outputs(step: float) -> list[np.ndarray]:
        values = [arr + step * tangents[i] if i in tangents else arr
                  for i, arr in enumerate(arrays)]
        return [o.to_numpy() for o in _float_outputs(case.fn(*[
            to_burnpy(arg, v, backend) for arg, v in zip(case.args, values, strict=True)]))]

    up, down = outputs(FD_EPS), outputs(-FD_EPS)
    return [(a - b) / (2 * FD_EPS) for a, b in zip(up, down, strict=True)]
