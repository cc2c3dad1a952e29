"""The autocast policy table against torch: every entry names an op burnpy marks, the CPU
lists agree with torch's own test lists (``AutocastCPUTestLists``), and each CPU entry is run
under ``torch.autocast("cpu")`` to see that torch treats the op as the table says."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn.functional as tf
from torch.testing._internal.autocast_test_lists import AutocastCPUTestLists

import burnpy.linalg
import burnpy.nn.functional  # noqa: F401 - marks the functional ops
from burnpy.amp.policy import DEFAULT_DTYPE, POLICY, CastPolicy
from burnpy.tensor.autocast_hook import MARKED_OPS

CPU = POLICY["cpu"]
#: torch's names for ops burnpy spells otherwise (one burnpy op for both).
TORCH_ALIASES = {"nll_loss2d": "nll_loss", "reflection_pad1d": "reflection_pad"}


def _r(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.rand(*shape, dtype=dtype) + 0.5


def _spd(dtype: torch.dtype) -> torch.Tensor:
    a = torch.rand(3, 3) + torch.eye(3) * 3
    return (a @ a.T).to(dtype)


_LONG = torch.long
#: name -> a torch call of the op on float inputs of the given dtype.
PROBES: dict[str, Callable[[torch.dtype], Any]] = {
    "matmul": lambda d: _r(3, 4, dtype=d) @ _r(4, 2, dtype=d),
    "mm": lambda d: _r(3, 4, dtype=d).mm(_r(4, 2, dtype=d)),
    "bmm": lambda d: _r(2, 3, 4, dtype=d).bmm(_r(2, 4, 2, dtype=d)),
    "addmm": lambda d: _r(3, 2, dtype=d).addmm(_r(3, 4, dtype=d), _r(4, 2, dtype=d)),
    "baddbmm": lambda d: _r(2, 3, 2, dtype=d).baddbmm(_r(2, 3, 4, dtype=d),
                                                      _r(2, 4, 2, dtype=d)),
    "addbmm": lambda d: _r(3, 2, dtype=d).addbmm(_r(2, 3, 4, dtype=d), _r(2, 4, 2, dtype=d)),
    "linear": lambda d: tf.linear(_r(3, 4, dtype=d), _r(2, 4, dtype=d)),
    "conv1d": lambda d: tf.conv1d(_r(1, 2, 5, dtype=d), _r(3, 2, 2, dtype=d)),
    "conv2d": lambda d: tf.conv2d(_r(1, 2, 5, 5, dtype=d), _r(3, 2, 2, 2, dtype=d)),
    "conv3d": lambda d: tf.conv3d(_r(1, 2, 4, 4, 4, dtype=d), _r(3, 2, 2, 2, 2, dtype=d)),
    "conv_transpose1d": lambda d: tf.conv_transpose1d(_r(1, 2, 5, dtype=d),
                                                      _r(2, 3, 2, dtype=d)),
    "conv_transpose2d": lambda d: tf.conv_transpose2d(_r(1, 2, 5, 5, dtype=d),
                                                      _r(2, 3, 2, 2, dtype=d)),
    "conv_transpose3d": lambda d: tf.conv_transpose3d(_r(1, 2, 3, 3, 3, dtype=d),
                                                      _r(2, 3, 2, 2, 2, dtype=d)),
    "prelu": lambda d: tf.prelu(_r(2, 3, dtype=d), _r(1, dtype=d)),
    "scaled_dot_product_attention": lambda d: tf.scaled_dot_product_attention(
        _r(1, 2, 3, 4, dtype=d), _r(1, 2, 3, 4, dtype=d), _r(1, 2, 3, 4, dtype=d)),
    "mse_loss": lambda d: tf.mse_loss(_r(3, 4, dtype=d), _r(3, 4, dtype=d)),
    "l1_loss": lambda d: tf.l1_loss(_r(3, 4, dtype=d), _r(3, 4, dtype=d)),
    "smooth_l1_loss": lambda d: tf.smooth_l1_loss(_r(3, 4, dtype=d), _r(3, 4, dtype=d)),
    "huber_loss": lambda d: tf.huber_loss(_r(3, 4, dtype=d), _r(3, 4, dtype=d)),
    "nll_loss": lambda d: tf.nll_loss(_r(3, 4, dtype=d), torch.tensor([0, 1, 3])),
    "cross_entropy": lambda d: tf.cross_entropy(_r(3, 4, dtype=d), torch.tensor([0, 1, 3])),
    "binary_cross_entropy": lambda d: tf.binary_cross_entropy(
        torch.rand(3, 4).to(d), torch.rand(3, 4).to(d)),
    "binary_cross_entropy_with_logits": lambda d: tf.binary_cross_entropy_with_logits(
        _r(3, 4, dtype=d), torch.rand(3, 4).to(d)),
    "kl_div": lambda d: tf.kl_div(_r(3, 4, dtype=d), _r(3, 4, dtype=d), reduction="batchmean"),
    "margin_ranking_loss": lambda d: tf.margin_ranking_loss(_r(4, dtype=d), _r(4, dtype=d),
                                                            torch.ones(4).to(d)),
    "hinge_embedding_loss": lambda d: tf.hinge_embedding_loss(_r(3, 4, dtype=d),
                                                              torch.ones(3, 4).to(d)),
    "soft_margin_loss": lambda d: tf.soft_margin_loss(_r(3, 4, dtype=d), torch.ones(3, 4).to(d)),
    "triplet_margin_loss": lambda d: tf.triplet_margin_loss(_r(3, 4, dtype=d), _r(3, 4, dtype=d),
                                                            _r(3, 4, dtype=d)),
    "multi_margin_loss": lambda d: tf.multi_margin_loss(_r(3, 4, dtype=d),
                                                        torch.tensor([0, 1, 3])),
    "multilabel_margin_loss": lambda d: tf.multilabel_margin_loss(
        _r(3, 4, dtype=d), torch.tensor([[0, 1, -1, 0]] * 3)),
    "poisson_nll_loss": lambda d: tf.poisson_nll_loss(_r(3, 4, dtype=d), _r(3, 4, dtype=d)),
    "cosine_embedding_loss": lambda d: tf.cosine_embedding_loss(
        _r(3, 4, dtype=d), _r(3, 4, dtype=d), torch.tensor([1, -1, 1])),
    "linalg.inv": lambda d: torch.linalg.inv(_spd(d)),
    "linalg.solve": lambda d: torch.linalg.solve(_spd(d), _r(3, 2, dtype=d)),
    "linalg.cholesky": lambda d: torch.linalg.cholesky(_spd(d)),
    "linalg.qr": lambda d: torch.linalg.qr(_spd(d)),
    "linalg.svd": lambda d: torch.linalg.svd(_spd(d)),
    "linalg.svdvals": lambda d: torch.linalg.svdvals(_spd(d)),
    "linalg.eigh": lambda d: torch.linalg.eigh(_spd(d)),
    "linalg.eigvalsh": lambda d: torch.linalg.eigvalsh(_spd(d)),
    "linalg.lstsq": lambda d: torch.linalg.lstsq(_spd(d), _r(3, 2, dtype=d)).solution,
    "prod": lambda d: _r(3, 4, dtype=d).prod(),
    "trace": lambda d: _r(3, 3, dtype=d).trace(),
    "cdist": lambda d: torch.cdist(_r(3, 4, dtype=d), _r(2, 4, dtype=d)),
    "avg_pool3d": lambda d: tf.avg_pool3d(_r(1, 1, 4, 4, 4, dtype=d), 2),
    "max_pool3d": lambda d: tf.max_pool3d(_r(1, 1, 4, 4, 4, dtype=d), 2),
    "adaptive_avg_pool3d": lambda d: tf.adaptive_avg_pool3d(_r(1, 1, 4, 4, 4, dtype=d), 2),
    "adaptive_max_pool3d": lambda d: tf.adaptive_max_pool3d(_r(1, 1, 4, 4, 4, dtype=d), 2),
    "max_unpool2d": lambda d: tf.max_unpool2d(*tf.max_pool2d(
        _r(1, 1, 4, 4, dtype=d), 2, return_indices=True), [2, 2]),
    "max_unpool3d": lambda d: tf.max_unpool3d(*tf.max_pool3d(
        _r(1, 1, 4, 4, 4, dtype=d), 2, return_indices=True), [2, 2, 2]),
    "fractional_max_pool2d": lambda d: tf.fractional_max_pool2d(
        _r(1, 1, 6, 6, dtype=d), 2, output_size=3),
    "fractional_max_pool3d": lambda d: tf.fractional_max_pool3d(
        _r(1, 1, 6, 6, 6, dtype=d), 2, output_size=3),
    "grid_sample": lambda d: tf.grid_sample(_r(1, 1, 4, 4, dtype=d),
                                            torch.rand(1, 2, 2, 2).to(d) * 2 - 1,
                                            align_corners=False),
    "ctc_loss": lambda d: tf.ctc_loss(_r(6, 2, 4, dtype=d).log_softmax(2),
                                      torch.tensor([[1, 2], [3, 1]]), torch.tensor([6, 6]),
                                      torch.tensor([2, 2])),
    "reflection_pad": lambda d: tf.pad(_r(1, 2, 5, dtype=d), (2, 1), mode="reflect"),
    "replication_pad": lambda d: tf.pad(_r(1, 2, 5, dtype=d), (2, 1), mode="replicate"),
    "local_response_norm": lambda d: tf.local_response_norm(_r(1, 4, 5, 5, dtype=d), 3),
    "lp_pool3d": lambda d: tf.lp_pool3d(_r(1, 1, 4, 4, 4, dtype=d), 2.0, 2),
    "cat": lambda d: torch.cat([_r(2, dtype=d), _r(2)]),
    "stack": lambda d: torch.stack([_r(2, dtype=d), _r(2)]),
    "index_copy": lambda d: _r(3, 2, dtype=d).index_copy(0, torch.tensor([0, 2]), _r(2, 2)),
    "mv": lambda d: _r(3, 4, dtype=d).mv(_r(4, dtype=d)),
    "dot": lambda d: _r(4, dtype=d).dot(_r(4, dtype=d)),
    "outer": lambda d: _r(3, dtype=d).outer(_r(4, dtype=d)),
    "kron": lambda d: _r(2, 2, dtype=d).kron(_r(2, 2, dtype=d)),
    "addmv": lambda d: _r(3, dtype=d).addmv(_r(3, 4, dtype=d), _r(4, dtype=d)),
    "addr": lambda d: _r(3, 4, dtype=d).addr(_r(3, dtype=d), _r(4, dtype=d)),
    "scatter_reduce": lambda d: _r(3, 2, dtype=d).scatter_reduce(
        0, torch.tensor([[0, 1], [2, 0]]), _r(2, 2, dtype=d), "prod"),
}


def _dtypes(out: Any) -> set[torch.dtype]:
    items = out if isinstance(out, tuple | list) else (out,)
    return {t.dtype for t in items if t.is_floating_point()}


def test_every_entry_names_a_marked_op() -> None:
    for device_type, table in POLICY.items():
        unknown = sorted(set(table) - MARKED_OPS)
        assert not unknown, f"{device_type}: {unknown} are not marked with autocast_op"


def test_default_dtypes_are_torchs() -> None:
    assert DEFAULT_DTYPE["cpu"].value == str(torch.get_autocast_dtype("cpu")).split(".")[1]
    assert DEFAULT_DTYPE["cuda"].value == "float16"


def test_cpu_lists_agree_with_torchs_test_lists() -> None:
    lists = AutocastCPUTestLists("cpu")
    expected = {
        CastPolicy.LOWER: [n for n, *_ in lists.torch_16 + lists.nn_16],
        CastPolicy.FP32: [n for n, *_ in lists.torch_fp32 + lists.nn_fp32],
        CastPolicy.PROMOTE: [n for n, *_ in lists.torch_need_autocast_promote],
    }
    checked = 0
    for policy, names in expected.items():
        for name in names:
            ours = CPU.get(TORCH_ALIASES.get(name, name))
            if ours is None and TORCH_ALIASES.get(name, name) not in MARKED_OPS:
                continue  # an op burnpy does not have (conv_tbc, reflection_pad1d...)
            assert ours is policy, f"{name}: torch lists it {policy}, the table says {ours}"
            checked += 1
    assert checked >= 25


def test_every_cpu_entry_has_a_probe() -> None:
    assert sorted(set(CPU) - set(PROBES)) == []


@pytest.mark.parametrize("name", sorted(CPU))
def test_torch_autocast_treats_the_op_as_the_table_says(name: str) -> None:
    """Lower: float32 inputs come out bfloat16; float32: bfloat16 inputs come out float32;
    promote: bfloat16 with float32 comes out float32; as
    written: float32 stays float32 and bfloat16 stays bfloat16."""
    probe, policy = PROBES[name], CPU[name]
    torch.manual_seed(0)
    with torch.autocast("cpu", torch.bfloat16):
        from_fp32 = _dtypes(probe(torch.float32))
        from_bf16 = _dtypes(probe(torch.bfloat16))
    if policy is CastPolicy.LOWER:
        assert from_fp32 == {torch.bfloat16}
    elif policy is CastPolicy.FP32 or policy is CastPolicy.PROMOTE:
        assert from_bf16 == {torch.float32}
    else:
        assert from_fp32 == {torch.float32} and from_bf16 == {torch.bfloat16}
