"""What torch's ``module_db`` samples (``test_module_db.py``) found, each pinned by a small
check against torch in float64: ``input=`` by keyword, int labels promoted in the margin
losses, torch's variance shapes (and a float variance) in ``gaussian_nll_loss``, and
``linear_cross_entropy``'s ``options`` (chunking taken, an accumulation dtype refused)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import burnpy.nn as nn
import burnpy.nn.functional as F
from burnpy import Tensor
from burnpy.backend.errors import InvalidArgumentError, ShapeError
from tests.nn.test_nn_layers import AD, F64, _close, _copy_weights

RNG = np.random.default_rng(29)


def _pair(a: np.ndarray, grad: bool = True) -> tuple[Tensor, torch.Tensor]:
    ours = Tensor.from_data(a, backend=AD)
    return (ours.require_grad() if grad else ours,
            torch.tensor(a, requires_grad=grad and a.dtype.kind == "f"))


def test_linear_and_identity_take_input_by_keyword() -> None:
    ours, ref = nn.Linear(4, 3, **F64), torch.nn.Linear(4, 3).double()
    _copy_weights(ours, ref)
    x, tx = _pair(RNG.standard_normal((2, 4)))
    _close(ours(input=x), ref(input=tx), "Linear(input=)")
    _close(nn.Identity()(input=x), tx, "Identity(input=)")


@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_margin_losses_promote_int_labels(reduction: str) -> None:
    x1, t1 = _pair(RNG.standard_normal(6))
    x2, t2 = _pair(RNG.standard_normal(6))
    y, ty = _pair(np.array([1, -1, 1, 1, -1, -1]), grad=False)
    out = F.margin_ranking_loss(x1, x2, y, 0.3, reduction=reduction)
    ref = torch.nn.functional.margin_ranking_loss(t1, t2, ty, 0.3, reduction=reduction)
    _close(out, ref, "margin_ranking_loss")
    grads = out.sum().backward()
    ref.sum().backward()
    _close(x1.grad(grads), t1.grad, "grad of input1")

    x, tx = _pair(RNG.standard_normal((3, 5)))
    labels, tlabels = _pair(RNG.integers(0, 2, (3, 5)), grad=False)
    out = F.multilabel_soft_margin_loss(x, labels, reduction=reduction)
    ref = torch.nn.functional.multilabel_soft_margin_loss(tx, tlabels, reduction=reduction)
    _close(out, ref, "multilabel_soft_margin_loss")
    grads = out.sum().backward()
    ref.sum().backward()
    _close(x.grad(grads), tx.grad, "grad of input")


@pytest.mark.parametrize(("shape", "var_shape"), [((4, 3), (1, 3)), ((4, 3, 5), (4, 1, 5)),
                                                  ((4, 3), (4, 1)), ((4, 3), (4,))])
def test_gaussian_nll_loss_takes_torch_s_variance_shapes(shape: tuple[int, ...],
                                                         var_shape: tuple[int, ...]) -> None:
    x, tx = _pair(RNG.standard_normal(shape))
    y, ty = _pair(RNG.standard_normal(shape), grad=False)
    var, tvar = _pair(RNG.random(var_shape) + 0.5)
    out = F.gaussian_nll_loss(x, y, var, reduction="sum")
    ref = torch.nn.functional.gaussian_nll_loss(tx, ty, tvar, reduction="sum")
    _close(out, ref, "loss")
    grads = out.backward()
    ref.backward()
    _close(var.grad(grads), tvar.grad, "grad of var")
    _close(x.grad(grads), tx.grad, "grad of input")


def test_gaussian_nll_loss_takes_a_float_variance_and_refuses_torch_s_bad_shapes() -> None:
    x, tx = _pair(RNG.standard_normal((4, 3)))
    y, ty = _pair(RNG.standard_normal((4, 3)), grad=False)
    _close(nn.GaussianNLLLoss(full=True)(x, y, 0.7),
           torch.nn.GaussianNLLLoss(full=True)(tx, ty, 0.7), "float var")
    for bad in ((1, 1), (2, 3), (4, 3, 1)):  # torch: "var is of incorrect size"
        with pytest.raises(ValueError, match="incorrect size"):
            torch.nn.functional.gaussian_nll_loss(tx, ty, torch.ones(bad, dtype=torch.float64))
        with pytest.raises(ShapeError, match=r"gaussian_nll_loss: var .* does not fit input"):
            F.gaussian_nll_loss(x, y, Tensor.ones(bad, backend=AD, dtype=x.dtype))
    with pytest.raises(InvalidArgumentError, match="var must not be negative"):
        F.gaussian_nll_loss(x, y, -1.0)


def test_linear_cross_entropy_takes_chunking_options_and_refuses_accumulation_ones() -> None:
    """torch's options only choose how to chunk (same result): taken, as None is; an
    accumulation dtype would change the numbers, so it is refused."""
    chunked = torch.nn.LinearCrossEntropyOptions(batch_chunk_size=2)
    ratio = torch.nn.LinearCrossEntropyOptions(chunking_method="aspect_ratio:2")
    w = Tensor.from_data(RNG.standard_normal((4, 5)), backend=AD)
    x, tx = _pair(RNG.standard_normal((3, 5)))
    y, ty = _pair(np.array([0, 3, 1]), grad=False)
    for options in (None, chunked, ratio):
        ours = nn.LinearCrossEntropyLoss(5, 4, options=options, **F64)
        ref = torch.nn.LinearCrossEntropyLoss(5, 4, options=options).double()
        _copy_weights(ours, ref)
        _close(ours(x, y), ref(tx, ty), f"loss {options}")
        _close(F.linear_cross_entropy(x, w, y, options=options),
               torch.nn.functional.linear_cross_entropy(tx, torch.from_numpy(w.to_numpy()), ty,
                                                        options=options), f"F {options}")
    wide = torch.nn.LinearCrossEntropyOptions(acc_dtype=torch.float64)
    with pytest.raises(InvalidArgumentError, match=r"LinearCrossEntropyLoss: options=.*"
                       "accumulation dtype"):
        nn.LinearCrossEntropyLoss(5, 4, options=wide)
    with pytest.raises(InvalidArgumentError, match="linear_cross_entropy: options="):
        F.linear_cross_entropy(x, w, y, options=wide)
