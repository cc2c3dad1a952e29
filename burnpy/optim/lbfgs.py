"""``LBFGS``: limited-memory BFGS (Nocedal), torch's algorithm, names and defaults, with an
optional strong-Wolfe line search (Nocedal and Wright, algorithms 3.5 and 3.6, with cubic
interpolation).

It evaluates the loss several times a step, so its step takes a closure, as torch's:
``opt.step(model, closure=fn)``, where ``fn()`` recomputes the loss from the model's current
parameters and returns it (a tensor of the model's autodiff backend); the step takes the
gradients of its ``backward()`` itself. The parameters are handled as one flat vector on the
inner backend (one concatenation per evaluation); the scalars of the two-loop recursion and
of the line search are host floats."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from burnpy.backend.errors import InvalidArgumentError
from burnpy.nn.module import Module
from burnpy.optim.optimizer import Optimizer, Params
from burnpy.tensor import Tensor

#: torch's line search constants: sufficient decrease, curvature, iterations.
C1, C2, MAX_LINE_SEARCH = 1e-4, 0.9, 25


@dataclass(slots=True)
class _Point:
    """A trial step ``t`` along the direction: the loss, flat gradient and directional
    derivative there."""

    t: float
    f: float
    g: Tensor
    gtd: float


def _cubic_minimum(a: _Point, b: _Point, low: float, high: float) -> float:
    """The minimiser of the cubic through two points' values and slopes, clamped to
    ``[low, high]`` (their midpoint when the cubic has no minimum)."""
    d1 = a.gtd + b.gtd - 3.0 * (a.f - b.f) / (a.t - b.t)
    square = d1 * d1 - a.gtd * b.gtd
    if square < 0:
        return (low + high) / 2.0
    d2 = math.sqrt(square)
    if a.t <= b.t:
        t = b.t - (b.t - a.t) * ((b.gtd + d2 - d1) / (b.gtd - a.gtd + 2.0 * d2))
    else:
        t = a.t - (a.t - b.t) * ((a.gtd + d2 - d1) / (a.gtd - b.gtd + 2.0 * d2))
    return min(max(t, low), high)


def strong_wolfe(evaluate: Callable[[float], tuple[float, Tensor]], d: Tensor, start: _Point,
                 t: float, tolerance_change: float) -> tuple[_Point, int]:
    """A step along ``d`` from ``start`` (``t = 0``) meeting the strong Wolfe conditions:
    first a bracket grown by extrapolation, then zoomed by interpolation. ``evaluate(t)``
    gives the loss and flat gradient at ``t``. Returns the point and the evaluations made."""
    d_norm = float(d.abs().max())

    def probe(t: float) -> _Point:
        f, g = evaluate(t)
        return _Point(t, f, g, float(g.dot(d)))

    def sufficient(p: _Point) -> bool:
        return p.f <= start.f + C1 * p.t * start.gtd

    def curved(p: _Point) -> bool:
        return abs(p.gtd) <= -C2 * start.gtd

    prev, new, evals, iters = start, probe(t), 1, 0
    bracket: list[_Point] | None = None
    while iters < MAX_LINE_SEARCH:
        if not sufficient(new) or (iters > 1 and new.f >= prev.f):
            bracket = [prev, new]
            break
        if curved(new):
            return new, evals
        if new.gtd >= 0:
            bracket = [prev, new]
            break
        t = _cubic_minimum(prev, new, new.t + 0.01 * (new.t - prev.t), new.t * 10.0)
        prev, new = new, probe(t)
        evals += 1
        iters += 1
    if bracket is None:
        bracket = [start, new]
    low, high = (0, 1) if bracket[0].f <= bracket[1].f else (1, 0)
    stalled = False
    while iters < MAX_LINE_SEARCH:
        a, b = bracket
        if abs(b.t - a.t) * d_norm < tolerance_change:
            break
        left, right = min(a.t, b.t), max(a.t, b.t)
        t = _cubic_minimum(a, b, left, right)
        margin = 0.1 * (right - left)
        if min(right - t, t - left) < margin:
            # Too near an end: a step a tenth of the bracket inside it, on the second try.
            if stalled or t >= right or t <= left:
                t = right - margin if abs(t - right) < abs(t - left) else left + margin
                stalled = False
            else:
                stalled = True
        else:
            stalled = False
        new = probe(t)
        evals += 1
        iters += 1
        if not sufficient(new) or new.f >= bracket[low].f:
            bracket[high] = new
            low, high = (0, 1) if bracket[0].f <= bracket[1].f else (1, 0)
            continue
        if curved(new):
            bracket[low] = new
            break
        if new.gtd * (bracket[high].t - bracket[low].t) >= 0:
            bracket[high] = bracket[low]
        bracket[low] = new
    return bracket[low], evals


class LBFGS(Optimizer):
    """Quasi-Newton steps from the last ``history_size`` curvature pairs; each ``step``
    runs up to ``max_iter`` iterations, evaluating the closure as it goes. One parameter
    group only, as torch's."""

    def __init__(self, params: Params | None = None, lr: float | Tensor = 1.0,
                 max_iter: int = 20, max_eval: int | None = None,
                 tolerance_grad: float = 1e-7, tolerance_change: float = 1e-9,
                 history_size: int = 100, line_search_fn: str | None = None) -> None:
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        super().__init__(params, {"lr": lr, "max_iter": max_iter, "max_eval": max_eval,
                                  "tolerance_grad": tolerance_grad,
                                  "tolerance_change": tolerance_change,
                                  "history_size": history_size,
                                  "line_search_fn": line_search_fn})
        if len(self.param_groups) != 1:
            raise InvalidArgumentError("LBFGS: takes one parameter group (torch's too)")
        #: The search history and last direction (torch's ``state`` of the first parameter).
        self.history: dict[str, Any] = {"func_evals": 0, "n_iter": 0}

    def check_group(self, group: Mapping[str, Any]) -> None:
        super().check_group(group)
        if group["line_search_fn"] not in (None, "strong_wolfe"):
            raise InvalidArgumentError(f"LBFGS: line_search_fn must be None or "
                                       f"'strong_wolfe', got {group['line_search_fn']!r}")

    def update(self, key: Tensor, param: Tensor, grad: Tensor,
               group: Mapping[str, Any]) -> Tensor:
        """Refused: LBFGS evaluates the loss several times a step, so it steps through
        ``step(model, closure=fn)`` only."""
        raise InvalidArgumentError("LBFGS: needs a closure that recomputes the loss, "
                                   "opt.step(model, closure=fn), not gradients alone")

    def step(self, model: Module, grads: Any = None, lr: float | None = None, *,
             closure: Callable[[], Tensor] | None = None) -> Module:
        """Up to ``max_iter`` L-BFGS iterations on ``model``'s parameters, each evaluating
        ``closure()`` (the loss) for its gradients; returns the model."""
        if closure is None or grads is not None:
            raise InvalidArgumentError("LBFGS.step: needs closure= (a function that "
                                       "recomputes and returns the loss), and no grads")
        group = self.param_groups[0]
        known = self._group_of(model, model.slots())
        params = [p for p in group["params"] if isinstance(p, Tensor) and p in known]
        _Search(self, params, closure, {**group, "lr": self._rate(group, lr)}).run()
        return model

    def state_dict(self) -> dict[str, Any]:
        """The base state dict plus the search history (scalars and flat vectors)."""
        return {**super().state_dict(), "history": dict(self.history)}

    def load_state_dict(self, state: Mapping[str, Any]) -> LBFGS:
        """Restore a ``state_dict`` of an LBFGS, the search history included."""
        super().load_state_dict(state)
        self.history = dict(state.get("history", {"func_evals": 0, "n_iter": 0}))
        return self


class _Search:
    """One ``LBFGS.step``: the flat views of the parameters and the iteration."""

    __slots__ = ("closure", "group", "opt", "params")

    def __init__(self, opt: LBFGS, params: list[Tensor], closure: Callable[[], Tensor],
                 group: Mapping[str, Any]) -> None:
        self.opt, self.params, self.closure, self.group = opt, params, closure, group

    def flat(self, tensors: list[Tensor]) -> Tensor:
        """Inner-backend tensors as one flat vector."""
        return Tensor.cat([t.reshape(-1) for t in tensors])

    def values(self) -> list[Tensor]:
        """The parameters' current values on the inner backend."""
        return [self.opt.value(p) for p in self.params]

    def evaluate(self) -> tuple[float, Tensor]:
        """The closure's loss and the flat gradient (zeros where a parameter got none)."""
        loss = self.closure()
        grads = loss.backward()
        flat = []
        for p, v in zip(self.params, self.values(), strict=True):
            g = p.grad(grads)
            flat.append(v.zeros_like() if g is None else g)
        return float(loss), self.flat(flat)

    def write(self, values: list[Tensor]) -> None:
        """Make ``values`` (inner-backend tensors) the parameters' values."""
        for p, v in zip(self.params, values, strict=True):
            self.opt.write(p, v)

    def move(self, base: list[Tensor], t: float, d: Tensor) -> None:
        """Set the parameters to ``base + t * d``."""
        offset, out = 0, []
        for b in base:
            n = b.numel()
            out.append(b + d[offset:offset + n].reshape(b.shape) * t)
            offset += n
        self.write(out)

    def run(self) -> None:
        """torch's LBFGS iteration (see the module docstring)."""
        group, h = self.group, self.opt.history
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tol_grad, tol_change = group["tolerance_grad"], group["tolerance_change"]
        loss, flat_grad = self.evaluate()
        evals = 1
        h["func_evals"] += 1
        if float(flat_grad.abs().max()) <= tol_grad:
            return
        d, t = h.get("d"), h.get("t", lr)
        dirs, steps, ro = h.get("old_dirs", []), h.get("old_stps", []), h.get("ro", [])
        h_diag, prev_grad, prev_loss = h.get("H_diag", 1.0), h.get("prev_flat_grad"), loss
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            h["n_iter"] += 1
            if h["n_iter"] == 1 or d is None or prev_grad is None:
                d, dirs, steps, ro, h_diag = -flat_grad, [], [], [], 1.0
            else:
                y, s = flat_grad - prev_grad, d * t
                ys = float(y.dot(s))
                if ys > 1e-10:
                    if len(dirs) == group["history_size"]:
                        del dirs[0], steps[0], ro[0]
                    dirs.append(y)
                    steps.append(s)
                    ro.append(1.0 / ys)
                    h_diag = ys / float(y.dot(y))
                d = self.two_loop(flat_grad, dirs, steps, ro, h_diag)
            prev_grad, prev_loss = flat_grad, loss
            t = min(1.0, 1.0 / float(flat_grad.abs().sum())) * lr if h["n_iter"] == 1 else lr
            gtd = float(flat_grad.dot(d))
            if gtd > -tol_change:
                break
            base = self.values()
            if group["line_search_fn"] == "strong_wolfe":
                def at(step: float, base: list[Tensor] = base,
                       d: Tensor = d) -> tuple[float, Tensor]:
                    self.move(base, step, d)
                    out = self.evaluate()
                    self.write(base)
                    return out

                point, used = strong_wolfe(at, d, _Point(0.0, loss, flat_grad, gtd), t,
                                           tol_change)
                loss, flat_grad, t = point.f, point.g, point.t
                self.move(base, t, d)
                done = float(flat_grad.abs().max()) <= tol_grad
            else:
                self.move(base, t, d)
                used, done = 0, False
                if n_iter != max_iter:
                    loss, flat_grad = self.evaluate()
                    used, done = 1, float(flat_grad.abs().max()) <= tol_grad
            evals += used
            h["func_evals"] += used
            if (n_iter == max_iter or evals >= max_eval or done
                    or float((d * t).abs().max()) <= tol_change
                    or abs(loss - prev_loss) < tol_change):
                break
        h.update(d=d, t=t, old_dirs=dirs, old_stps=steps, ro=ro, H_diag=h_diag,
                 prev_flat_grad=prev_grad, prev_loss=prev_loss)

    @staticmethod
    def two_loop(grad: Tensor, dirs: list[Tensor], steps: list[Tensor], ro: list[float],
                 h_diag: float) -> Tensor:
        """The L-BFGS direction ``-H grad`` by the two-loop recursion over the history."""
        q = -grad
        alphas = [0.0] * len(dirs)
        for i in range(len(dirs) - 1, -1, -1):
            alphas[i] = float(steps[i].dot(q)) * ro[i]
            q = q - dirs[i] * alphas[i]
        r = q * h_diag
        for i in range(len(dirs)):
            beta = float(dirs[i].dot(r)) * ro[i]
            r = r + steps[i] * (alphas[i] - beta)
        return r
