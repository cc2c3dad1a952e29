"""More of torch.nn's layers (issue 16): activations, padding, instance and local response
normalization, pixel shuffles, im2col, 3-d / adaptive / power pools and distances, each a
thin wrapper of its ``burnpy.nn.functional`` op."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from burnpy.backend.device import Device
from burnpy.backend.dtype import DTypeLike
from burnpy.backend.errors import ShapeError, describe
from burnpy.nn import functional as F
from burnpy.nn import init
from burnpy.nn.init import constant as _constant  # PReLU's ``init`` argument shadows ``init``
from burnpy.nn.module import Module
from burnpy.nn.norm import ChannelNorm
from burnpy.tensor import Tensor

if TYPE_CHECKING:
    from burnpy.backend.base import Backend

IntOrTuple = int | Sequence[int]


# ---- activations ----------------------------------------------------------------------------
class ReLU6(Module):
    """min(max(x, 0), 6)."""

    def forward(self, x: Tensor) -> Tensor:
        """``x`` of any shape, clamped to [0, 6]."""
        return F.relu6(x)


class ELU(Module):
    """x above 0, ``alpha * (exp(x) - 1)`` below."""

    def __init__(self, alpha: float = 1.0) -> None:
        self.alpha = alpha

    def forward(self, x: Tensor) -> Tensor:
        """``x`` of any shape, activated elementwise."""
        return F.elu(x, self.alpha)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}"


class CELU(ELU):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""

    def forward(self, x: Tensor) -> Tensor:
        """``x`` of any shape, activated elementwise."""
        return F.celu(x, self.alpha)


class SELU(Module):
    """The self-normalizing ``scale * elu(x, alpha)``."""

    def forward(self, x: Tensor) -> Tensor:
        """``x`` of any shape, activated elementwise."""
        return F.selu(x)


class Mish(Module):
    """x * tanh(softplus(x))."""

    def forward(self, x: Tensor) -> Tensor:
        """``x`` of any shape, activated elementwise."""
        return F.mish(x)


class Hardswish(Module):
    """x * clamp(x / 6 + 1/2, 0, 1)."""

    def forward(self, x: Tensor) -> Tensor:
        """``x`` of any shape, activated elementwise."""
        return F.hardswish(x)


class Hardtanh(Module):
    """clamp(x, min_val, max_val)."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0) -> None:
        self.min_val, self.max_val = min_val, max_val

    def forward(self, x: Tensor) -> Tensor:
        """``x`` of any shape, clamped."""
        return F.hardtanh(x, self.min_val, self.max_val)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}"


class Hardshrink(Module):
    """x where |x| > lambd, else 0."""

    def __init__(self, lambd: float = 0.5) -> None:
        self.lambd = lambd

    def forward(self, x: Tensor) -> Tensor:
        """``x`` of any shape, small values zeroed."""
        return F.hardshrink(x, self.lambd)

    def extra_repr(self) -> str:
        return f"lambd={self.lambd}"


class Softshrink(Hardshrink):
    """x shrunk toward 0 by ``lambd`` (0 within it)."""

    def forward(self, x: Tensor) -> Tensor:
        """``x`` of any shape, shrunk elementwise."""
        return F.softshrink(x, self.lambd)


class Tanhshrink(Module):
    """x - tanh(x)."""

    def forward(self, x: Tensor) -> Tensor:
        """``x`` of any shape, activated elementwise."""
        return F.tanhshrink(x)


class Softsign(Module):
    """x / (1 + |x|)."""

    def forward(self, x: Tensor) -> Tensor:
        """``x`` of any shape, activated elementwise."""
        return F.softsign(x)


class Threshold(Module):
    """x where x > threshold, else ``value``."""

    def __init__(self, threshold: float, value: float) -> None:
        self.threshold, self.value = threshold, value

    def forward(self, x: Tensor) -> Tensor:
        """``x`` of any shape, thresholded elementwise."""
        return F.threshold(x, self.threshold, self.value)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}"


class GLU(Module):
    """Gated linear unit: first half of ``dim`` times the sigmoid of the second."""

    def __init__(self, dim: int = -1) -> None:
        self.dim = dim

    def forward(self, x: Tensor) -> Tensor:
        """``x`` with ``dim`` halved."""
        return F.glu(x, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmin(Module):
    """softmax(-x) along ``dim``."""

    def __init__(self, dim: int | None = None) -> None:
        self.dim = dim

    def forward(self, x: Tensor) -> Tensor:
        """Probabilities along ``dim`` favouring small values; same shape."""
        return F.softmin(x, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSigmoid(Module):
    """log(sigmoid(x)), computed stably."""

    def forward(self, x: Tensor) -> Tensor:
        """``x`` of any shape, activated elementwise."""
        return x.log_sigmoid()


class PReLU(Module):
    """Leaky ReLU with a learned negative slope, shared or one per channel (dim 1)."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, *,
                 backend: type[Backend] | None = None, device: Device | None = None,
                 dtype: DTypeLike | None = None) -> None:
        self.num_parameters = num_parameters
        self.weight = _constant((num_parameters,), init, backend=backend, device=device,
                               dtype=dtype)

    def forward(self, x: Tensor) -> Tensor:
        """``x [batch, channels, *]`` (or any shape with one shared slope) activated."""
        return F.prelu(x, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class RReLU(Module):
    """Randomized leaky ReLU: random slopes in [lower, upper) while training, their mean
    in eval."""

    def __init__(self, lower: float = 1.0 / 8.0, upper: float = 1.0 / 3.0) -> None:
        self.lower, self.upper = lower, upper

    def forward(self, x: Tensor) -> Tensor:
        """``x`` of any shape, activated elementwise."""
        return F.rrelu(x, self.lower, self.upper, self.training)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}"


# ---- padding --------------------------------------------------------------------------------
class _Pad(Module):
    """Pads the trailing dims (torch's ``*PadNd`` layers)."""

    _mode = "constant"
    _dims = 1

    def __init__(self, padding: IntOrTuple, value: float = 0.0) -> None:
        self.padding = ((padding,) * (2 * self._dims) if isinstance(padding, int)
                        else tuple(padding))
        self.value = value

    def forward(self, x: Tensor) -> Tensor:
        """``x`` padded along its last dims."""
        return F.pad(x, self.padding, self._mode, self.value if self._mode == "constant"
                     else None)

    def extra_repr(self) -> str:
        return f"padding={self.padding}"


class ConstantPad1d(_Pad):
    """Pads the last dim with ``value``."""

    def forward(self, x: Tensor) -> Tensor:
        """``x`` padded along its last dim."""
        return super().forward(x)


class ConstantPad2d(ConstantPad1d):
    """Pads the last two dims with ``value``."""

    _dims = 2


class ConstantPad3d(ConstantPad1d):
    """Pads the last three dims with ``value``."""

    _dims = 3


class ZeroPad1d(ConstantPad1d):
    """Pads the last dim with zeros."""

    def __init__(self, padding: IntOrTuple) -> None:
        super().__init__(padding, 0.0)


class ZeroPad2d(ZeroPad1d):
    """Pads the last two dims with zeros."""

    _dims = 2


class ZeroPad3d(ZeroPad1d):
    """Pads the last three dims with zeros."""

    _dims = 3


class ReflectionPad1d(ZeroPad1d):
    """Pads the last dim by reflection (the edge is not repeated)."""

    _mode = "reflect"


class ReflectionPad2d(ReflectionPad1d):
    """Pads the last two dims by reflection."""

    _dims = 2


class ReflectionPad3d(ReflectionPad1d):
    """Pads the last three dims by reflection."""

    _dims = 3


class ReplicationPad1d(ZeroPad1d):
    """Pads the last dim by repeating the edge."""

    _mode = "replicate"


class ReplicationPad2d(ReplicationPad1d):
    """Pads the last two dims by repeating the edges."""

    _dims = 2


class ReplicationPad3d(ReplicationPad1d):
    """Pads the last three dims by repeating the edges."""

    _dims = 3


class CircularPad1d(ZeroPad1d):
    """Pads the last dim by wrapping around."""

    _mode = "circular"


class CircularPad2d(CircularPad1d):
    """Pads the last two dims by wrapping around."""

    _dims = 2


class CircularPad3d(CircularPad1d):
    """Pads the last three dims by wrapping around."""

    _dims = 3


# ---- normalization --------------------------------------------------------------------------
class _InstanceNorm(ChannelNorm):
    """Normalizes each channel of each sample over its spatial dims. As torch's, training
    never counts ``num_batches_tracked`` (kept for torch's state dicts), and ``momentum=None``
    (no cumulative average here) leaves the running statistics as they are."""

    _rank = 3

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = False, track_running_stats: bool = False, *,
                 backend: type[Backend] | None = None, device: Device | None = None,
                 dtype: DTypeLike | None = None) -> None:
        self._init_channels(num_features, eps, momentum, affine, track_running_stats,
                            init.Placement(backend=backend, device=device, dtype=dtype))

    def forward(self, x: Tensor) -> Tensor:
        """``x [batch, channels, *spatial]`` (or, unbatched, ``[channels, *spatial]``)
        normalized per sample and channel; same shape."""
        if x.ndim == self._rank - 1 and x.shape[0] == self.num_features:
            return self.forward(x.unsqueeze(0)).squeeze(0)
        if x.ndim != self._rank or x.shape[1] != self.num_features:
            raise ShapeError(f"{type(self).__name__}({self.num_features}): expected a "
                             f"{self._rank}-d input (or an unbatched {self._rank - 1}-d one) "
                             f"with {self.num_features} channels in dim 1, got "
                             f"{describe(x.shape)}")
        tracked = self.track_running_stats
        return F.instance_norm(x, self.running_mean if tracked else None,
                               self.running_var if tracked else None, self.weight, self.bias,
                               self.training or not tracked,
                               0.0 if self.momentum is None else self.momentum, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, track_running_stats={self.track_running_stats}")


class InstanceNorm1d(_InstanceNorm):
    """Instance normalization of ``[batch, channels, length]``."""

    def forward(self, x: Tensor) -> Tensor:
        """``x [batch, channels, length]`` normalized per sample and channel."""
        return super().forward(x)


class InstanceNorm2d(_InstanceNorm):
    """Instance normalization of ``[batch, channels, h, w]``."""

    _rank = 4

    def forward(self, x: Tensor) -> Tensor:
        """``x [batch, channels, h, w]`` normalized per sample and channel."""
        return super().forward(x)


class InstanceNorm3d(_InstanceNorm):
    """Instance normalization of ``[batch, channels, d, h, w]``."""

    _rank = 5

    def forward(self, x: Tensor) -> Tensor:
        """``x [batch, channels, d, h, w]`` normalized per sample and channel."""
        return super().forward(x)


class LocalResponseNorm(Module):
    """Divides each channel by a power of its neighbours' mean square (AlexNet's LRN)."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75,
                 k: float = 1.0) -> None:
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, x: Tensor) -> Tensor:
        """``x [batch, channels, *]`` normalized across channels; same shape."""
        return F.local_response_norm(x, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


# ---- layout ---------------------------------------------------------------------------------
class PixelShuffle(Module):
    """``[*, c * r^2, h, w]`` to ``[*, c, h * r, w * r]``."""

    def __init__(self, upscale_factor: int) -> None:
        self.upscale_factor = upscale_factor

    def forward(self, x: Tensor) -> Tensor:
        """Channels rearranged into an ``upscale_factor`` times larger plane."""
        return F.pixel_shuffle(x, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """``[*, c, h * r, w * r]`` to ``[*, c * r^2, h, w]``."""

    def __init__(self, downscale_factor: int) -> None:
        self.downscale_factor = downscale_factor

    def forward(self, x: Tensor) -> Tensor:
        """The plane folded into ``downscale_factor^2`` times more channels."""
        return F.pixel_unshuffle(x, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"


class Unfold(Module):
    """im2col: sliding blocks of ``[n, c, h, w]`` as columns ``[n, c * kh * kw, blocks]``."""

    def __init__(self, kernel_size: IntOrTuple, dilation: IntOrTuple = 1,
                 padding: IntOrTuple = 0, stride: IntOrTuple = 1) -> None:
        self.kernel_size, self.dilation = kernel_size, dilation
        self.padding, self.stride = padding, stride

    def forward(self, x: Tensor) -> Tensor:
        """The blocks of ``x`` as columns."""
        return F.unfold(x, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")


class Fold(Module):
    """col2im: columns ``[n, c * kh * kw, blocks]`` summed back into ``[n, c, *output]``."""

    def __init__(self, output_size: IntOrTuple, kernel_size: IntOrTuple,
                 dilation: IntOrTuple = 1, padding: IntOrTuple = 0,
                 stride: IntOrTuple = 1) -> None:
        self.output_size, self.kernel_size, self.dilation = output_size, kernel_size, dilation
        self.padding, self.stride = padding, stride

    def forward(self, x: Tensor) -> Tensor:
        """The columns of ``x`` folded into an image (overlaps summed)."""
        return F.fold(x, self.output_size, self.kernel_size, self.dilation, self.padding,
                      self.stride)

    def extra_repr(self) -> str:
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
                f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}")


# ---- pools ----------------------------------------------------------------------------------
class AvgPool3d(Module):
    """3-d average pool (stride defaults to the kernel size)."""

    def __init__(self, kernel_size: IntOrTuple, stride: IntOrTuple | None = None,
                 padding: IntOrTuple = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override: int | None = None) -> None:
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad
        self.divisor_override = divisor_override

    def forward(self, x: Tensor) -> Tensor:
        """``[batch, channels, d, h, w]`` -> the windows' means."""
        return F.avg_pool3d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxPool3d(Module):
    """3-d max pool (stride defaults to the kernel size)."""

    def __init__(self, kernel_size: IntOrTuple, stride: IntOrTuple | None = None,
                 padding: IntOrTuple = 0, dilation: IntOrTuple = 1,
                 return_indices: bool = False, ceil_mode: bool = False) -> None:
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.dilation, self.return_indices, self.ceil_mode = dilation, return_indices, ceil_mode

    def forward(self, x: Tensor) -> Any:
        """``[batch, channels, d, h, w]`` -> the windows' maxima (and their indices)."""
        return F.max_pool3d(x, self.kernel_size, self.stride, self.padding, self.dilation,
                            self.ceil_mode, self.return_indices)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AdaptiveAvgPool3d(Module):
    """Average pool to a fixed output size (None keeps a dim)."""

    def __init__(self, output_size: int | Sequence[int | None] | None) -> None:
        self.output_size = output_size

    def forward(self, x: Tensor) -> Tensor:
        """``[batch, channels, d, h, w]`` -> ``[batch, channels, *output_size]``."""
        return F.adaptive_avg_pool3d(x, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool1d(Module):
    """Max pool to a fixed output length."""

    def __init__(self, output_size: IntOrTuple, return_indices: bool = False) -> None:
        self.output_size, self.return_indices = output_size, return_indices

    def forward(self, x: Tensor) -> Any:
        """``[batch, channels, l]`` -> ``[batch, channels, output_size]`` (and indices)."""
        return F.adaptive_max_pool1d(x, self.output_size, self.return_indices)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool2d(AdaptiveMaxPool1d):
    """Max pool to a fixed output height and width."""

    def forward(self, x: Tensor) -> Any:
        """``[batch, channels, h, w]`` -> ``[batch, channels, *output_size]`` (and indices)."""
        return F.adaptive_max_pool2d(x, self.output_size, self.return_indices)


class LPPool1d(Module):
    """Power-average pool: ``(sum of x^p over each window) ^ (1/p)``."""

    def __init__(self, norm_type: float, kernel_size: IntOrTuple,
                 stride: IntOrTuple | None = None, ceil_mode: bool = False) -> None:
        self.norm_type, self.kernel_size = norm_type, kernel_size
        self.stride, self.ceil_mode = stride, ceil_mode

    def forward(self, x: Tensor) -> Tensor:
        """``[batch, channels, l]`` -> the windows' p-norms."""
        kernel = self.kernel_size if isinstance(self.kernel_size, int) else self.kernel_size[0]
        stride = self.stride if self.stride is None or isinstance(self.stride, int) else (
            self.stride[0])
        return F.lp_pool1d(x, self.norm_type, kernel, stride, self.ceil_mode)

    def extra_repr(self) -> str:
        return f"norm_type={self.norm_type}, kernel_size={self.kernel_size}"


class LPPool2d(LPPool1d):
    """2-d power-average pool."""

    def forward(self, x: Tensor) -> Tensor:
        """``[batch, channels, h, w]`` -> the windows' p-norms."""
        return F.lp_pool2d(x, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)


# ---- distances ------------------------------------------------------------------------------
class CosineSimilarity(Module):
    """Cosine of the angle between ``x1`` and ``x2`` along ``dim``."""

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        self.dim, self.eps = dim, eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        """The cosines; ``dim`` reduced."""
        return F.cosine_similarity(x1, x2, self.dim, self.eps)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, eps={self.eps}"


class PairwiseDistance(Module):
    """``||x1 - x2 + eps||_p`` along the last dim."""

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        """The distances; the last dim reduced (kept with ``keepdim``)."""
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)

    def extra_repr(self) -> str:
        return f"p={self.norm}, eps={self.eps}, keepdim={self.keepdim}"
