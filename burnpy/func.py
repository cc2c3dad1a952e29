"""Function transforms with ``torch.func``'s signatures: ``grad``, ``value_and_grad``, ``vjp``,
``jvp``, ``hvp``, ``jacobian`` (``jacrev``, ``jacfwd``) and ``hessian``.

Arguments are Tensors of any backend X: a plain one such as ``CpuBackend``, or a decorated one
when transforms nest. Each transform lifts them onto the decorator it needs, ``Autodiff(X)``
for reverse mode and ``ForwardAD(X)`` for forward mode, calls ``f`` and returns its results
as Tensors of X. So transforms compose by stacking decorators: ``jvp(grad(f))`` runs ``f`` on
``Autodiff(ForwardAD(X))`` (forward-over-reverse), ``vjp(grad(f))`` on
``Autodiff(Autodiff(X))``, and ``hessian`` is ``jacobian(jacobian(f, mode="rev"),
mode="fwd")``. Tensor arguments outside ``argnums`` are lifted too, untracked; a tensor that
``f`` closes over stays on X and cannot meet the lifted ones, so pass data as arguments.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from burnpy.autodiff import Autodiff, ForwardAD, make_dual, unpack_dual
from burnpy.autodiff.forward.backend import ForwardADBackend
from burnpy.backend.errors import (
    BackendMismatchError,
    InvalidArgumentError,
    KindError,
    ShapeError,
    article,
    describe,
)
from burnpy.tensor import Tensor, stack

if TYPE_CHECKING:
    from burnpy.backend.base import Backend

Argnums = int | tuple[int, ...]
JacobianMode = Literal["rev", "fwd"]
HvpMode = Literal["fwd_over_rev", "rev_over_rev"]

__all__ = ["grad", "hessian", "hvp", "jacfwd", "jacobian", "jacrev", "jvp", "value_and_grad",
           "vjp"]


# ---- reverse mode -------------------------------------------------------------------------------
def grad(f: Callable[..., Any], argnums: Argnums = 0,
         has_aux: bool = False) -> Callable[..., Any]:
    """``grad(f, argnums)(*args)``: the gradient of ``f``'s scalar (shape ``()``) float output
    with respect to the arguments at ``argnums`` (a Tensor, or a tuple of them when
    ``argnums`` is a tuple), shaped as those arguments. With ``has_aux``, ``f`` returns
    ``(output, aux)`` and the result is ``(gradients, aux)``."""

    @functools.wraps(f)
    def grad_f(*args: Any) -> Any:
        (_, aux), grads = _value_and_grad("grad", f, argnums, has_aux, args)
        return (grads, aux) if has_aux else grads

    return grad_f


def value_and_grad(f: Callable[..., Any], argnums: Argnums = 0,
                   has_aux: bool = False) -> Callable[..., Any]:
    """As ``grad``, returning ``(value, gradients)``, or ``((value, aux), gradients)`` with
    ``has_aux`` (JAX's order; ``torch.func.grad_and_value`` returns the pair swapped)."""

    @functools.wraps(f)
    def value_and_grad_f(*args: Any) -> Any:
        (value, aux), grads = _value_and_grad("value_and_grad", f, argnums, has_aux, args)
        return ((value, aux) if has_aux else value), grads

    return value_and_grad_f


def vjp(f: Callable[..., Any], *primals: Tensor, has_aux: bool = False) -> tuple[Any, ...]:
    """``(output, vjp_fn)`` (plus ``aux`` with ``has_aux``): ``vjp_fn(cotangents)`` returns
    the tuple of ``J^T cotangents``, one per primal, for cotangents shaped as the output (a
    Tensor, or a tuple for a tuple output). ``vjp_fn`` may be called many times."""
    positions = tuple(range(len(primals)))
    base = _common_backend("vjp", primals, positions)
    ad = Autodiff(base)
    lifted = _lift("vjp", primals, ad, base)
    for i in positions:
        lifted[i].require_grad()
    out, aux = _split_aux("vjp", _call("vjp", f, lifted, ad, base), has_aux)
    outputs, is_tuple = _outputs("vjp", out)

    def vjp_fn(cotangents: Tensor | Sequence[Tensor]) -> tuple[Tensor, ...]:
        given = list(cotangents) if is_tuple else [cotangents]
        cts = [c for c in given if isinstance(c, Tensor)]
        if len(cts) != len(outputs) or len(cts) != len(given):
            raise InvalidArgumentError(
                f"vjp_fn: expected {_count(len(outputs), 'cotangent Tensor')} matching f's "
                f"output{'s' if is_tuple else ''}, got {cotangents!r}")
        loss = None
        for k, (o, c) in enumerate(zip(outputs, cts, strict=True)):
            if c.shape != o.shape:
                raise ShapeError(f"vjp_fn: cotangent {k} has shape {describe(c.shape)}, the "
                                 f"output's is {describe(o.shape)}")
            if o.backend is ad and o.requires_grad:
                term = (o * Tensor.from_inner(c, backend=ad)).sum()
                loss = term if loss is None else loss + term
        if loss is None:
            return tuple(p.zeros_like() for p in primals)
        grads = loss.backward(retain_graph=True)
        return tuple(_grad_or_zeros(lifted[i], grads, primals[i]) for i in positions)

    value = _unlift(out, ad)
    return (value, vjp_fn, _unlift(aux, ad)) if has_aux else (value, vjp_fn)


# ---- forward mode -------------------------------------------------------------------------------
def jvp(f: Callable[..., Any], primals: Sequence[Tensor], tangents: Sequence[Tensor | None], *,
        has_aux: bool = False) -> tuple[Any, ...]:
    """``(output, jvp_out)`` (plus ``aux`` with ``has_aux``): ``f(*primals)`` and its
    derivative along ``tangents`` (one per primal, same shape and dtype; burnpy also takes
    None for a primal held fixed, which skips its tangent work). ``jvp_out`` is shaped as the
    output: a Tensor, or a tuple of them."""
    lifted, fad, base = _lift_duals("jvp", *_check_pairs("jvp", primals, tangents))
    out, aux = _split_aux("jvp", _call("jvp", f, lifted, fad, base), has_aux)
    outputs, is_tuple = _outputs("jvp", out)
    values, derivatives = [], []
    for o in outputs:
        value, tangent = unpack_dual(o) if o.backend is fad else (o, None)
        values.append(value)
        derivatives.append(value.zeros_like() if tangent is None and value.kind == "float"
                           else tangent)
    if is_tuple:
        result: tuple[Any, ...] = (tuple(values), tuple(derivatives))
    else:
        result = (values[0], derivatives[0])
    return (*result, _unlift(aux, fad)) if has_aux else result


def hvp(f: Callable[..., Any], primals: Sequence[Tensor], tangents: Sequence[Tensor | None], *,
        argnums: Argnums = 0, mode: HvpMode = "fwd_over_rev") -> Any:
    """The Hessian-vector product ``jvp(grad(f, argnums), primals, tangents)[1]``: the
    derivative along ``tangents`` of the gradient of ``f``'s scalar output with respect to
    the arguments at ``argnums`` (shaped as ``grad``'s result).

    ``mode="fwd_over_rev"`` (default) runs ``f`` on ``Autodiff(ForwardAD(X))``: the reverse
    pass itself carries the tangents. ``mode="rev_over_rev"`` runs it on
    ``Autodiff(Autodiff(X))`` and differentiates ``<grad f, tangents>`` once more. A None
    tangent holds that primal fixed (data, labels): neither mode then spends work on it.
    """
    if mode not in ("fwd_over_rev", "rev_over_rev"):
        raise InvalidArgumentError(f"hvp: mode must be 'fwd_over_rev' or 'rev_over_rev', got "
                                   f"{mode!r}")
    primals, tangents = _check_pairs("hvp", primals, tangents)
    positions, as_tuple = _positions("hvp", argnums, len(primals))
    if mode == "fwd_over_rev":
        # jvp(grad(f)) reading the gradients' tangents only: their primals (the gradient
        # itself) are never needed, and ForwardAD's matmul then skips computing them.
        lifted = _lift_duals("hvp", primals, tangents)[0]
        grads = grad(f, argnums)(*lifted)
        products = tuple(_tangent_only(g, primals[i]) for g, i in zip(
            grads if as_tuple else (grads,), positions, strict=True))
        return products if as_tuple else products[0]
    moving = tuple(i for i, t in enumerate(tangents) if t is not None)
    if not moving:
        zeros = tuple(primals[i].zeros_like() for i in positions)
        return zeros if as_tuple else zeros[0]

    moving_tangents = [t for t in tangents if t is not None]

    def directional(*args: Any) -> Tensor:
        terms = [(g * Tensor.from_inner(t, backend=g.backend)).sum()
                 for g, t in zip(grad(f, moving)(*args), moving_tangents, strict=True)]
        return functools.reduce(operator.add, terms)

    return grad(directional, argnums)(*primals)


# ---- Jacobians and Hessians ---------------------------------------------------------------------
def jacobian(f: Callable[..., Any], argnums: Argnums = 0, *, mode: JacobianMode = "rev",
             has_aux: bool = False) -> Callable[..., Any]:
    """``jacobian(f, argnums, mode)(*args)``: the Jacobian of each output of ``f`` with
    respect to each argument at ``argnums``, of shape ``output.shape + argument.shape``.

    Nesting follows ``torch.func.jacrev``: a Tensor for one output and an int ``argnums``, a
    tuple over ``argnums`` when it is a tuple, a tuple over outputs when ``f`` returns a
    tuple (of tuples over ``argnums``). ``mode="rev"`` runs ``f`` once and one backward pass
    per output element (cheap for few outputs); ``mode="fwd"`` one tangent pass per
    differentiated input element (cheap for few inputs). With ``has_aux`` the result is
    ``(jacobian, aux)``.
    """
    if mode not in ("rev", "fwd"):
        raise InvalidArgumentError(f"jacobian: mode must be 'rev' or 'fwd', got {mode!r}")
    build = _jacobian_rev if mode == "rev" else _jacobian_fwd

    @functools.wraps(f)
    def jacobian_f(*args: Any) -> Any:
        positions, as_tuple = _positions("jacobian", argnums, len(args))
        blocks, is_tuple, aux = build(f, positions, has_aux, args)
        per_output = [tuple(row) if as_tuple else row[0] for row in blocks]
        jac = tuple(per_output) if is_tuple else per_output[0]
        return (jac, aux) if has_aux else jac

    return jacobian_f


def jacrev(f: Callable[..., Any], argnums: Argnums = 0, *,
           has_aux: bool = False) -> Callable[..., Any]:
    """``jacobian`` in reverse mode (``torch.func.jacrev``)."""
    return jacobian(f, argnums, mode="rev", has_aux=has_aux)


def jacfwd(f: Callable[..., Any], argnums: Argnums = 0, *,
           has_aux: bool = False) -> Callable[..., Any]:
    """``jacobian`` in forward mode (``torch.func.jacfwd``)."""
    return jacobian(f, argnums, mode="fwd", has_aux=has_aux)


def hessian(f: Callable[..., Any], argnums: Argnums = 0) -> Callable[..., Any]:
    """The Hessian of ``f``'s output with respect to the arguments at ``argnums``,
    ``jacfwd(jacrev(f, argnums), argnums)`` (forward-over-reverse, as ``torch.func``): shape
    ``output.shape + arg.shape + arg.shape``, nested in tuples as ``jacobian``'s."""
    return jacfwd(jacrev(f, argnums), argnums)


def _jacobian_rev(f: Callable[..., Any], positions: tuple[int, ...], has_aux: bool,
                  args: tuple[Any, ...]) -> tuple[list[list[Tensor]], bool, Any]:
    """One forward on ``Autodiff(X)``, then one backward per output element seeded with that
    element's one-hot cotangent (the graph is retained between them)."""
    base = _common_backend("jacobian", args, positions)
    ad = Autodiff(base)
    lifted = _lift("jacobian", args, ad, base)
    for i in positions:
        lifted[i].require_grad()
    out, aux = _split_aux("jacobian", _call("jacobian", f, lifted, ad, base), has_aux)
    outputs, is_tuple = _outputs("jacobian", out)
    blocks = []
    for o in outputs:
        rows: list[list[Tensor]] = [[] for _ in positions]
        tracked = o.backend is ad and o.requires_grad
        size = o.numel()
        if tracked and size:
            for seed in _one_hots(o.shape, o.dtype, base, o.device):
                grads = o.backward(grad_output=seed, retain_graph=True)
                for row, i in zip(rows, positions, strict=True):
                    row.append(_grad_or_zeros(lifted[i], grads, args[i]))
        blocks.append([_assemble(row, 0, o.shape, args[i], bool(tracked and size))
                       for row, i in zip(rows, positions, strict=True)])
    return blocks, is_tuple, _unlift(aux, ad)


def _jacobian_fwd(f: Callable[..., Any], positions: tuple[int, ...], has_aux: bool,
                  args: tuple[Any, ...]) -> tuple[list[list[Tensor]], bool, Any]:
    """One tangent pass on ``ForwardAD(X)`` per element of each differentiated argument,
    seeded with that element's one-hot tangent; the other arguments carry no tangent."""
    base = _common_backend("jacobian", args, positions)
    fad = ForwardAD(base)
    plain = _lift("jacobian", args, fad, base)
    columns: dict[int, list[list[Tensor]]] = {}
    outputs: list[Tensor] | None = None
    is_tuple = False
    aux = None

    def run(lifted: list[Any]) -> list[Tensor]:
        nonlocal is_tuple, aux
        out, aux = _split_aux("jacobian", _call("jacobian", f, lifted, fad, base), has_aux)
        outs, is_tuple = _outputs("jacobian", out)
        return outs

    for p in positions:
        x = args[p]
        columns[p] = []
        for seed in _one_hots(x.shape, x.dtype, base, x.device):
            lifted = list(plain)
            lifted[p] = make_dual(x, seed)
            outputs = run(lifted)
            columns[p].append([_tangent_or_zeros(o, fad) for o in outputs])
    if outputs is None:  # every differentiated argument is empty: only the shapes are needed
        outputs = run(plain)
    blocks = []
    for k, o in enumerate(outputs):
        blocks.append([_assemble([col[k] for col in columns[p]], o.ndim, o.shape, args[p],
                                 bool(columns[p])) for p in positions])
    return blocks, is_tuple, _unlift(aux, fad)


def _assemble(parts: list[Tensor], dim: int, out_shape: tuple[int, ...], arg: Tensor,
              filled: bool) -> Tensor:
    """Rows (``dim`` 0) or columns (``dim`` = output ndim) stacked into a Jacobian block of
    shape ``out_shape + arg.shape``; zeros when nothing was computed (no dependence, or an
    empty output or argument)."""
    shape = tuple(out_shape) + tuple(arg.shape)
    if not filled:
        return Tensor.zeros(shape, backend=arg.backend, device=arg.device, dtype=arg.dtype)
    return stack(parts, dim).reshape(shape)


def _one_hots(shape: tuple[int, ...], dtype: Any, backend: type[Backend], device: Any) -> Any:
    """Tensors of ``shape`` on ``backend`` holding a single one, at each element in turn."""
    n = int(np.prod(shape, dtype=np.int64))
    for k in range(n):
        basis = np.zeros(n, dtype=dtype.numpy)
        basis[k] = 1
        yield Tensor.from_data(basis.reshape(shape), backend=backend, device=device)


# ---- shared pieces ------------------------------------------------------------------------------
def _value_and_grad(op: str, f: Callable[..., Any], argnums: Argnums, has_aux: bool,
                    args: tuple[Any, ...]) -> tuple[tuple[Tensor, Any], Any]:
    """``((value, aux), gradients)`` of ``f`` at ``args`` on ``Autodiff(X)``."""
    positions, as_tuple = _positions(op, argnums, len(args))
    base = _common_backend(op, args, positions)
    ad = Autodiff(base)
    lifted = _lift(op, args, ad, base)
    for i in positions:
        lifted[i].require_grad()
    out, aux = _split_aux(op, _call(op, f, lifted, ad, base), has_aux)
    if not isinstance(out, Tensor) or out.kind != "float":
        raise InvalidArgumentError(f"{op}: f must return a float Tensor, got {_what(out)}")
    if out.shape != ():
        raise ShapeError(f"{op}: f must return a scalar (shape ()), got shape "
                         f"{describe(out.shape)}; use vjp or jacobian for non-scalar outputs")
    if out.backend is ad and out.requires_grad:
        found = out.backward()
        grads = tuple(_grad_or_zeros(lifted[i], found, args[i]) for i in positions)
    else:  # the output does not depend on the arguments
        grads = tuple(args[i].zeros_like() for i in positions)
    return (_unlift(out, ad), _unlift(aux, ad)), (grads if as_tuple else grads[0])


def _positions(op: str, argnums: Argnums, nargs: int) -> tuple[tuple[int, ...], bool]:
    """``argnums`` as non-negative positions, and whether it was a tuple."""
    as_tuple = isinstance(argnums, tuple)
    items = argnums if isinstance(argnums, tuple) else (argnums,)
    if not items:
        raise InvalidArgumentError(f"{op}: argnums must name at least one argument")
    positions = []
    for a in items:
        if not isinstance(a, int) or isinstance(a, bool):
            raise InvalidArgumentError(f"{op}: argnums must be an int or a tuple of ints, "
                                       f"got {argnums!r}")
        if not -nargs <= a < nargs:
            raise InvalidArgumentError(f"{op}: argnums {a} is out of range for "
                                       f"{_count(nargs, 'positional argument')}")
        positions.append(a % nargs)
    if len(set(positions)) != len(positions):
        raise InvalidArgumentError(f"{op}: argnums {argnums!r} names an argument twice")
    return tuple(positions), as_tuple


def _common_backend(op: str, args: Sequence[Any], positions: Sequence[int]) -> type[Backend]:
    """The backend of the differentiated arguments, which must be float Tensors on one."""
    backend: type[Backend] | None = None
    for i in positions:
        a = args[i]
        if not isinstance(a, Tensor):
            raise InvalidArgumentError(f"{op}: argument {i} is {_what(a)}; only float Tensors "
                                       "can be differentiated")
        if a.kind != "float":
            raise KindError(f"{op}: argument {i} is {article(a.kind)} tensor ({a.dtype!r}); "
                            "only float tensors can be differentiated (cast it with .float())")
        if backend is None:
            backend = a.backend
        elif a.backend is not backend:
            raise BackendMismatchError(f"{op}: the differentiated arguments are on different "
                                       f"backends ({backend.name()} and {a.backend.name()})")
    assert backend is not None, "_positions gives at least one position"
    return backend


def _lift(op: str, args: Sequence[Any], target: type[Backend], base: type[Backend]) -> list[Any]:
    """Every Tensor argument (all on ``base``) lifted onto ``target``, untracked; other
    arguments as they are."""
    lifted = []
    for i, a in enumerate(args):
        if isinstance(a, Tensor):
            if a.backend is not base:
                raise BackendMismatchError(
                    f"{op}: argument {i} is on {a.backend.name()}, the differentiated ones on "
                    f"{base.name()}; every Tensor argument must be on one backend")
            a = Tensor.from_inner(a, backend=target)
        lifted.append(a)
    return lifted


_HINT = "inside burnpy.func"


def _call(op: str, f: Callable[..., Any], args: list[Any], target: type[Backend],
          base: type[Backend]) -> Any:
    """``f(*args)``, naming the usual cause of a backend mismatch (once, however deeply the
    transforms nest): a tensor ``f`` closes over."""
    try:
        return f(*args)
    except BackendMismatchError as exc:
        if _HINT in str(exc):
            raise
        raise BackendMismatchError(
            f"{exc}; {_HINT}.{op}, f runs on {target.name()}, while tensors f closes over "
            f"stay on {base.name()}: pass them to f as arguments (those outside argnums are "
            "lifted without tracking)") from exc


def _split_aux(op: str, result: Any, has_aux: bool) -> tuple[Any, Any]:
    """``(output, aux)`` of ``f``'s result."""
    if not has_aux:
        return result, None
    if not (isinstance(result, tuple) and len(result) == 2):
        raise InvalidArgumentError(f"{op}: with has_aux=True, f must return a pair "
                                   f"(output, aux), got {_what(result)}")
    return result


def _outputs(op: str, out: Any) -> tuple[list[Tensor], bool]:
    """``f``'s output as a list of Tensors, and whether it was a tuple (or list)."""
    if isinstance(out, Tensor):
        return [out], False
    if isinstance(out, tuple | list) and out and all(isinstance(o, Tensor) for o in out):
        return list(out), True
    raise InvalidArgumentError(f"{op}: f must return a Tensor or a tuple of Tensors, got "
                               f"{_what(out)}")


def _check_pairs(op: str, primals: Sequence[Tensor], tangents: Sequence[Tensor | None]
                 ) -> tuple[tuple[Tensor, ...], tuple[Tensor | None, ...]]:
    """``primals`` and ``tangents`` as tuples of one tangent (or None) per primal Tensor."""
    if not isinstance(primals, tuple | list) or not isinstance(tangents, tuple | list):
        raise InvalidArgumentError(f"{op}: primals and tangents must be tuples of Tensors, got "
                                   f"{_what(primals)} and {_what(tangents)}")
    if not primals or len(primals) != len(tangents):
        raise InvalidArgumentError(f"{op}: expected one tangent per primal (at least one), got "
                                   f"{_count(len(primals), 'primal')} and "
                                   f"{_count(len(tangents), 'tangent')}")
    for i, (p, t) in enumerate(zip(primals, tangents, strict=True)):
        if not isinstance(p, Tensor):
            raise InvalidArgumentError(f"{op}: primal {i} is {_what(p)}, not a Tensor")
        if t is None:
            continue
        if not isinstance(t, Tensor):
            raise InvalidArgumentError(f"{op}: tangent {i} is {_what(t)}, not a Tensor or None")
        if t.shape != p.shape:
            raise ShapeError(f"{op}: tangent {i} has shape {describe(t.shape)}, its primal "
                             f"{describe(p.shape)}")
    return tuple(primals), tuple(tangents)


def _lift_duals(op: str, primals: tuple[Tensor, ...], tangents: tuple[Tensor | None, ...]
                ) -> tuple[list[Any], type[Backend], type[Backend]]:
    """``(lifted, ForwardAD(X), X)``: the (checked) primals on ``ForwardAD(X)``, each with its
    tangent (untangented where it is None)."""
    moving = tuple(i for i, t in enumerate(tangents) if t is not None)
    base = _common_backend(op, primals, moving) if moving else primals[0].backend
    fad = ForwardAD(base)
    lifted = _lift(op, primals, fad, base)
    for i in moving:
        lifted[i] = make_dual(primals[i], tangents[i])
    return lifted, fad, base


def _tangent_only(out: Tensor, like: Tensor) -> Tensor:
    """The tangent of a tensor of ``ForwardAD(X)`` as a tensor of X (zeros shaped as ``like``
    when it has none), without reading its primal."""
    fad = out.backend
    assert issubclass(fad, ForwardADBackend), fad
    tangent = out.primitive.tangent
    if tangent is None:
        return like.zeros_like()
    return Tensor(fad.InnerBackend, tangent, "float")


def _grad_or_zeros(leaf: Tensor, grads: Any, like: Tensor) -> Tensor:
    """The gradient of a lifted leaf, or zeros shaped as its argument when none reached it."""
    g = leaf.grad(grads)
    return like.zeros_like() if g is None else g


def _tangent_or_zeros(out: Tensor, fad: type[Backend]) -> Tensor:
    """The tangent of one output of a forward pass (zeros when it has none)."""
    if out.backend is not fad:
        return out.zeros_like()
    value, tangent = unpack_dual(out)
    return value.zeros_like() if tangent is None else tangent


def _unlift(obj: Any, target: type[Backend]) -> Any:
    """Tensors of ``target`` (in tuples, lists and dicts too) back on its inner backend."""
    if isinstance(obj, Tensor):
        return obj.inner() if obj.backend is target else obj
    if isinstance(obj, tuple | list):
        return type(obj)(_unlift(o, target) for o in obj)
    if isinstance(obj, dict):
        return {k: _unlift(v, target) for k, v in obj.items()}
    return obj


def _what(obj: Any) -> str:
    """A short description of a value for error messages."""
    if isinstance(obj, Tensor):
        return f"{article(obj.kind)} Tensor of shape {describe(obj.shape)}"
    return f"a {type(obj).__name__}"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"
