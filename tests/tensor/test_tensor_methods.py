"""Every Tensor method is a real, documented definition in burnpy/tensor: what an IDE, help()
and pdoc show, and what go-to-definition reaches (issue 14: none may be generated at run time).
Each is written in ``Tensor``'s class body or in the class body of one of its topic mixins."""

from __future__ import annotations

import importlib
import inspect
import pydoc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from burnpy import Backend, Tensor
from burnpy.tensor.arithmetic import BINARY_SPECS
from burnpy.tensor.grad_method import GradMethod

# ``burnpy.tensor`` as an attribute is the ``tensor()`` shorthand; the package is imported by name.
TENSOR_DIR = Path(str(importlib.import_module("burnpy.tensor").__file__)).resolve().parent


def _own_functions() -> dict[str, Callable[..., Any]]:
    """Tensor's methods, static methods and property getters, by name (object's excluded)."""
    out: dict[str, Callable[..., Any]] = {}
    for name in dir(Tensor):
        if not any(name in vars(k) for k in Tensor.__mro__ if k is not object):
            continue
        attr = inspect.getattr_static(Tensor, name)
        if isinstance(attr, staticmethod | classmethod):
            attr = attr.__func__
        elif isinstance(attr, property):
            attr = attr.fget
        elif isinstance(attr, GradMethod):  # ``grad``: a method guarded against w.grad.numpy()
            attr = attr.__wrapped__
        if inspect.isfunction(attr):
            out[name] = attr
    return out


METHODS = _own_functions()
PUBLIC = sorted(n for n in METHODS if not n.startswith("_") or n.endswith("__"))


def test_the_walk_finds_the_api() -> None:
    for name in ("add", "__add__", "__radd__", "exp", "relu", "sum", "reshape", "backward",
                 "shape", "T", "float", "slice", "from_data", "__getitem__"):
        assert name in METHODS


#: Tensor's public methods and properties when it was one 2,500-line class (issue 28 split it
#: into topic mixins): each must still be on Tensor, documented.
SURFACE_TEXT = """
    T __abs__ __add__ __and__ __array__ __bool__ __dlpack__ __dlpack_device__ __eq__
    __float__ __floordiv__ __ge__ __getitem__ __gt__ __index__ __init__ __int__
    __invert__ __iter__ __le__ __len__ __lt__ __matmul__ __mod__ __mul__ __ne__ __neg__
    __or__ __pos__ __pow__ __radd__ __rand__ __repr__ __rfloordiv__ __rmatmul__ __rmod__
    __rmul__ __ror__ __rpow__ __rsub__ __rtruediv__ __rxor__ __setitem__ __sub__ __truediv__
    __xor__ abs acos acosh add add_ addbmm addcdiv addcmul addmm addmv addr all allclose
    amax amin aminmax any arange arccos arccosh arcsin arcsinh arctan arctanh argmax argmin
    argsort argwhere asin asinh atan atan2 atanh backward baddbmm bernoulli bincount
    bitwise_and bitwise_not bitwise_or bitwise_xor bmm bool broadcast_to cast cat ceil chunk
    clamp clamp_ clamp_max clamp_min clip clone copy_ copysign cos cosh count_nonzero cross
    cummax cummax_with_indices cummin cummin_with_indices cumprod cumsum deg2rad dequantize
    detach device diag diag_embed diagonal digamma dim dist div div_ dot double dtype empty
    eq equal erf erfc erfinv exp exp2 expand expand_as expm1 eye fake_quantize fill_ flatten
    flip fliplr flipud float float_power floor floor_div fmax fmin fmod frac from_data
    from_dlpack from_inner from_numpy full full_like gather ge gelu grad grad_remove
    grad_replace greater greater_equal gt half hard_sigmoid heaviside histc hypot i0
    index_add index_copy index_fill index_put index_put_ index_select inner int into_data
    is_inf is_nan is_require_grad isclose isfinite isinf isnan item kron kthvalue le
    leaky_relu lerp lgamma linspace log log10 log1p log2 log_sigmoid log_softmax logaddexp
    logcumsumexp logical_and logical_not logical_or logical_xor logit logspace logsumexp
    long lower lower_equal lt mT mask_fill mask_where masked_fill masked_fill_ masked_select
    matmul max max_with_indices maximum mean median min min_with_indices minimum mm mode
    moveaxis movedim msort mul mul_ multinomial mv nan_to_num nanmean nanmedian nansum
    narrow narrow_copy ndim ne neg nonzero norm not_equal numel numpy ones ones_like outer
    permute polygamma positive pow prod quantize quantize_dynamic rad2deg rand randint randn
    random randperm ravel recip reciprocal relu remainder repeat repeat_dim
    repeat_interleave require_grad requires_grad requires_grad_ reshape reshape_as
    retain_grad roll rot90 round rsqrt rsub scatter scatter_add scatter_reduce scheme select
    select_add select_assign select_scatter sgn shape sigmoid sign signbit silu sin sinc
    sinh size slice slice_assign slice_dim slice_scatter softmax softplus sort
    sort_with_indices split split_with_sizes sqrt square squeeze stack std sub sub_ sum
    swap_dims t take take_along_dim tan tanh tensor_split tile to to_backend to_numpy tolist
    topk topk_with_indices trace transpose tril triu true_divide trunc unbind unflatten
    unfold unique unique_consecutive unsqueeze var view view_as xlogy zero_ zeros zeros_like
"""
SURFACE = SURFACE_TEXT.split()
CLASSES = {k.__name__ for k in Tensor.__mro__ if k is not object}


def test_the_surface_of_the_single_class_is_kept_with_docstrings() -> None:
    missing = [n for n in SURFACE if n not in METHODS]
    assert not missing, f"no longer on Tensor: {missing}"
    undocumented = [n for n in SURFACE if not (METHODS[n].__doc__ or "").strip()]
    assert not undocumented, f"no docstring: {undocumented}"


def test_help_shows_every_method_of_every_topic() -> None:
    text = pydoc.render_doc(Tensor, renderer=pydoc.plaintext)
    missing = [n for n in SURFACE if not any(f" {n}{end}" in text for end in ("(", "\n", " = "))]
    assert not missing, f"help(Tensor) does not show {missing}"
    assert "Sum over ``dim``" in text and "Elementwise ``self + alpha * other``" in text


@pytest.mark.parametrize("name", PUBLIC)
def test_method_is_defined_in_the_tensor_class_or_a_topic_mixin(name: str) -> None:
    fn = METHODS[name]
    assert fn.__qualname__.split(".")[0] in CLASSES, fn.__qualname__
    assert "<locals>" not in fn.__qualname__
    source = inspect.getsourcefile(inspect.unwrap(fn))  # an autocast op's forwarder is generated
    assert source is not None and Path(source).resolve().parent == TENSOR_DIR


@pytest.mark.parametrize("name", PUBLIC)
def test_method_has_a_docstring(name: str) -> None:
    doc = METHODS[name].__doc__  # not inspect.getdoc: it falls back to object's docstrings
    assert doc and doc.strip(), f"Tensor.{name} has no docstring"


@pytest.mark.parametrize("name", PUBLIC)
def test_method_has_a_real_typed_signature(name: str) -> None:
    sig = inspect.signature(METHODS[name])
    params = [p for p in sig.parameters.values() if p.name != "self"]
    kinds = [p.kind for p in params]
    assert kinds != [inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD], (
        f"Tensor.{name}{sig} takes only *args/**kwargs")
    for p in params:
        assert p.annotation is not inspect.Parameter.empty, f"Tensor.{name}: {p.name} untyped"
    assert sig.return_annotation is not inspect.Signature.empty, f"Tensor.{name}: no return type"


def test_autodiff_methods_name_gradients() -> None:
    assert inspect.signature(Tensor.backward).return_annotation == "Gradients"
    for name in ("grad", "grad_remove", "grad_replace"):
        assert inspect.signature(METHODS[name]).parameters["grads"].annotation == "Gradients"


@pytest.mark.parametrize("spec", BINARY_SPECS, ids=lambda s: s.name)
def test_operator_tables_name_backend_ops(spec: Any) -> None:
    """The operator table dispatches by op name: every name must be an op of the protocol."""
    names = [spec.float_op, spec.float_scalar, spec.int_op, spec.int_scalar, spec.bool_op]
    for op in filter(None, names):
        assert callable(getattr(Backend, op, None)), f"{spec.name}: Backend has no {op}"
