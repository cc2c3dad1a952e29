"""The autocast policy: for each device type, which ops run in the autocast dtype, which in
float32, which at their widest input dtype, and which run as written with autocast paused.

This is the one table autocast reads. Its lists are torch's (``autocast_mode.cpp``'s CPU and
CUDA lists, restricted to the ops burnpy has). The CPU lists are checked against torch by
``tests/amp/test_policy.py``, which runs each op under ``torch.autocast("cpu")``, and by
``tests/amp/test_autocast_ops.py`` over every conformance case; the CUDA lists cannot be
(the test machines' torch has no CUDA). Names are the ones
``burnpy.tensor.autocast_hook.autocast_op`` marks the ops with (torch's names). Torch's CUDA
float32 list also holds pointwise math (``exp``, ``log``, ``pow``...): burnpy leaves those
unmarked, since every marked op pays the hook's check on every backend.

Device types name backend families by ``Device.type``: ``"cpu"`` is ``CpuBackend`` (and any
backend whose devices are CPU devices, decorated or not), ``"cuda"`` is ``CudaBackend``,
``"wgpu"`` is ``WgpuBackend``. WebGPU has no torch counterpart; it takes the CUDA lists, the
policy of a GPU whose half-precision kernels are faster than float32 ones.
"""

from __future__ import annotations

from enum import Enum

from burnpy.backend.dtype import DType


class CastPolicy(Enum):
    """What autocast does to an op's floating inputs (float64 ones are never cast, as torch)."""

    #: Cast to the region's dtype (bfloat16 or float16): the matrix products and convolutions.
    LOWER = "lower_precision_fp"
    #: Cast to float32: ops whose range or accumulation needs it (losses, prod, linalg...).
    FP32 = "fp32"
    #: Cast to the widest floating input dtype: ops taking several tensors (cat, stack...).
    PROMOTE = "promote"
    #: Run as written with autocast paused inside: ops torch runs natively (not autocast)
    #: that burnpy composes from ops of the lists above.
    AS_WRITTEN = "as_written"


_LOWER_COMMON = (
    "matmul", "mm", "bmm", "addmm", "baddbmm", "addbmm", "linear",
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "prelu", "scaled_dot_product_attention",
)

_FP32_LOSSES = (
    "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "nll_loss", "cross_entropy",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div",
    "margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss", "triplet_margin_loss",
    "multi_margin_loss", "multilabel_margin_loss", "poisson_nll_loss", "cosine_embedding_loss",
    "ctc_loss",
)

_FP32_LINALG = (
    "linalg.inv", "linalg.cholesky", "linalg.qr", "linalg.svd", "linalg.svdvals",
    "linalg.eigh", "linalg.eigvalsh", "linalg.lstsq", "linalg.solve",
)

_CPU: dict[str, CastPolicy] = {
    **dict.fromkeys(_LOWER_COMMON, CastPolicy.LOWER),
    **dict.fromkeys(_FP32_LOSSES + _FP32_LINALG, CastPolicy.FP32),
    **dict.fromkeys((
        "prod", "trace", "cdist", "avg_pool3d", "max_pool3d",
        "adaptive_avg_pool3d", "adaptive_max_pool3d", "max_unpool2d", "max_unpool3d",
        "fractional_max_pool2d", "fractional_max_pool3d", "grid_sample", "reflection_pad",
        "replication_pad",
        # composites whose torch decomposition runs avg_pool3d (float32 list)
        "local_response_norm", "lp_pool3d",
    ), CastPolicy.FP32),
    **dict.fromkeys(("cat", "stack", "index_copy"), CastPolicy.PROMOTE),
    **dict.fromkeys(("mv", "dot", "outer", "kron", "addmv", "addr", "scatter_reduce"),
                    CastPolicy.AS_WRITTEN),
}

_CUDA: dict[str, CastPolicy] = {
    **dict.fromkeys(_LOWER_COMMON + ("mv", "addmv", "addr"), CastPolicy.LOWER),
    **dict.fromkeys(_FP32_LOSSES + _FP32_LINALG, CastPolicy.FP32),
    **dict.fromkeys((
        "prod", "cdist", "softmax", "log_softmax", "layer_norm", "group_norm", "cumsum",
        "cumprod", "logsumexp",
    ), CastPolicy.FP32),
    **dict.fromkeys(("cat", "stack", "index_copy", "dot", "grid_sample"), CastPolicy.PROMOTE),
    **dict.fromkeys(("outer", "kron", "scatter_reduce"), CastPolicy.AS_WRITTEN),
}

#: device type -> op name -> policy; an op a device type does not list runs as written.
POLICY: dict[str, dict[str, CastPolicy]] = {"cpu": _CPU, "cuda": _CUDA, "wgpu": _CUDA}

#: The dtype a region casts to when ``autocast`` is given none (torch's defaults).
DEFAULT_DTYPE: dict[str, DType] = {
    "cpu": DType.bfloat16, "cuda": DType.float16, "wgpu": DType.float16,
}
