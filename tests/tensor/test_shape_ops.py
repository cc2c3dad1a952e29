"""torch's shape, indexing and matrix-product ops beyond the conformance table: gradients that
finite differences cannot check (repeated ``index_copy`` indices) and the refusals."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import burnpy as bp
from burnpy import Autodiff, Tensor
from burnpy_cpu import CpuBackend

AD = Autodiff(CpuBackend)


def test_index_copy_gives_every_repeated_index_its_slot_gradient_as_torch() -> None:
    rng = np.random.default_rng(0)
    base, src, w = rng.standard_normal((3, 3)), rng.standard_normal((4, 3)), rng.random((3, 3))
    idx = np.array([0, 1, 1, 0])
    tb = torch.tensor(base, requires_grad=True)
    ts = torch.tensor(src, requires_grad=True)
    (tb.index_copy(0, torch.from_numpy(idx), ts) * torch.from_numpy(w)).sum().backward()
    b = Tensor.from_data(base, backend=AD).require_grad()
    s = Tensor.from_data(src, backend=AD).require_grad()
    out = b.index_copy(0, Tensor.from_data(idx, backend=AD), s) * Tensor.from_data(w, backend=AD)
    grads = out.sum().backward()
    np.testing.assert_allclose(s.grad(grads).to_numpy(), ts.grad.numpy())
    np.testing.assert_allclose(b.grad(grads).to_numpy(), tb.grad.numpy())


@pytest.mark.parametrize(("call", "error"), [
    (lambda x: x.mm(x.reshape(-1)), bp.ShapeError),
    (lambda x: x.bmm(x), bp.ShapeError),
    (lambda x: x.reshape(-1).dot(x.reshape(-1).float()), bp.DTypeError),
    (lambda x: bp.einsum("ij,jk", x), bp.InvalidArgumentError),
    (lambda x: bp.einsum("ijk", x), bp.ShapeError),
    (lambda x: bp.einsum("ij,ij->k", x, x), bp.InvalidArgumentError),
    (lambda x: x.diagonal(0, 1, -1), bp.InvalidArgumentError),
    (lambda x: x.reshape(-1).trace(), bp.ShapeError),
    (lambda x: x.scatter_reduce(0, x.long(), x, "median"), bp.InvalidArgumentError),
    (lambda x: x.roll((1, 2), 0), bp.InvalidArgumentError),
    (lambda x: x.unflatten(1, (2, 2)), bp.ShapeError),
    (lambda x: x.select_scatter(x[0], 0, 5), bp.IndexOutOfBoundsError),
    (lambda x: x.reshape(2, 3, 1).t(), bp.ShapeError),
])
def test_bad_arguments_raise_burnpy_errors_naming_the_op(call: object, error: type) -> None:
    x = Tensor.from_data(np.arange(6.0).reshape(2, 3))
    with pytest.raises(error):
        call(x)  # type: ignore[operator]


def test_einsum_matches_torch_on_a_four_operand_chain() -> None:
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal(s) for s in ((2, 3), (3, 4), (4, 4), (4, 2))]
    ours = bp.einsum("ab,bc,cc,cd->ad", *[Tensor.from_data(a) for a in arrays])
    theirs = torch.einsum("ab,bc,cc,cd->ad", *[torch.from_numpy(a) for a in arrays])
    np.testing.assert_allclose(ours.to_numpy(), theirs.numpy(), rtol=1e-5)
