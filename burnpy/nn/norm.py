"""Normalization layers: ``BatchNorm1d/2d/3d``, ``SyncBatchNorm``, ``LayerNorm``,
``GroupNorm``, ``RMSNorm``, ``InstanceNorm1d/2d/3d`` and ``LocalResponseNorm``, and the lazy
batch and instance norms (``num_features`` from the first input).

Statistics use the biased variance, as torch; BatchNorm's running variance is the unbiased
one. Running statistics are buffers updated without recording a graph.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from burnpy.backend.device import Device
from burnpy.backend.dtype import DTypeLike
from burnpy.backend.errors import InvalidArgumentError, ShapeError, describe
from burnpy.distributed.collectives import all_reduce
from burnpy.distributed.group import ProcessGroup, current_group, is_initialized
from burnpy.nn import functional as F
from burnpy.nn import init
from burnpy.nn.lazy import LazyModuleMixin, state_dim
from burnpy.nn.module import Module
from burnpy.tensor import Tensor

if TYPE_CHECKING:
    from burnpy.backend.base import Backend


class ChannelNorm(Module):
    """What batch and instance norms share: their settings, per-channel affine parameters
    (ones and zeros) and, with ``track_running_stats``, running statistics (zeros and ones)
    and the ``num_batches_tracked`` count, torch's buffers and state-dict keys."""

    num_features: int
    eps: float
    momentum: float | None
    affine: bool
    track_running_stats: bool
    weight: Tensor | None
    bias: Tensor | None
    running_mean: Tensor  # the buffers, present with ``track_running_stats``
    running_var: Tensor
    num_batches_tracked: Tensor

    def _init_channels(self, num_features: int, eps: float, momentum: float | None,
                       affine: bool, track_running_stats: bool, kw: init.Placement,
                       bias: bool = True) -> None:
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        self.weight = init.ones((num_features,), **kw) if affine else None
        self.bias = init.zeros((num_features,), **kw) if affine and bias else None
        if track_running_stats:
            self.register_buffer("running_mean", init.zeros((num_features,), **kw))
            self.register_buffer("running_var", init.ones((num_features,), **kw))
            self.register_buffer("num_batches_tracked", Tensor.full(
                (), 0, backend=kw["backend"], device=kw["device"]))


class _BatchNorm(ChannelNorm):
    """Normalizes each channel (dim 1) over the batch and spatial dims."""

    _ranks: tuple[int, ...] = (4,)

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, *,
                 backend: type[Backend] | None = None, device: Device | None = None,
                 dtype: DTypeLike | None = None, bias: bool = True) -> None:
        kw = init.Placement(backend=backend, device=device, dtype=dtype)
        self._init_channels(num_features, eps, momentum, affine, track_running_stats, kw, bias)

    def _check(self, x: Tensor) -> None:
        if x.ndim not in self._ranks or x.shape[1] != self.num_features:
            ranks = " or ".join(f"{r}-d" for r in self._ranks)
            raise ShapeError(f"{type(self).__name__}({self.num_features}): expected a {ranks} "
                             f"input with {self.num_features} channels in dim 1, got "
                             f"{describe(x.shape)}")

    def forward(self, x: Tensor) -> Tensor:
        """``x [batch, channels, *]`` normalized per channel: by the batch's statistics in
        training (updating the running ones), by the running ones in eval."""
        self._check(x)
        if self.training and x.numel() == 0:  # torch's empty batch: counted, stats kept
            if self.track_running_stats:
                self.num_batches_tracked = self.num_batches_tracked + 1
            return F.batch_norm(x, None, None, self.weight, self.bias, training=True)
        if self.training or not self.track_running_stats:
            y, mean, var = F.batch_norm_train(x, self.weight, self.bias, self.eps)
            if self.training and self.track_running_stats:
                self._update_running(mean, var, x.numel() // self.num_features)
            return y
        return F.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                            eps=self.eps)

    def _update_running(self, mean: Tensor, var: Tensor, count: int) -> None:
        """Exponential (or, with ``momentum=None``, cumulative) averages of the statistics."""
        self.num_batches_tracked = self.num_batches_tracked + 1
        factor = (1.0 / int(self.num_batches_tracked.item()) if self.momentum is None
                  else self.momentum)
        self.running_mean, self.running_var = F.running_averages(
            self.running_mean, self.running_var, mean, var, count, factor)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Batch normalization of ``[batch, channels]`` or ``[batch, channels, length]``."""

    _ranks = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalization of ``[batch, channels, height, width]``."""

    _ranks = (4,)


class BatchNorm3d(_BatchNorm):
    """Batch normalization of ``[batch, channels, depth, height, width]``."""

    _ranks = (5,)


class SyncBatchNorm(_BatchNorm):
    """Batch normalization whose training statistics cover every rank's batch: the
    per-channel sums and counts are all-reduced (``burnpy.distributed``, differentiable, so
    each rank's gradients account for the others' samples). Without an initialised process
    group, in eval, or on one rank, it is a plain BatchNorm."""

    def _check(self, x: Tensor) -> None:
        if x.ndim < 2 or x.shape[1] != self.num_features:
            raise ShapeError(f"SyncBatchNorm({self.num_features}): expected an input [batch, "
                             f"{self.num_features}, *], got {describe(x.shape)}")

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True,
                 process_group: ProcessGroup | None = None, *,
                 backend: type[Backend] | None = None, device: Device | None = None,
                 dtype: DTypeLike | None = None, bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats,
                         backend=backend, device=device, dtype=dtype, bias=bias)
        self.process_group = process_group

    def _synced(self) -> bool:
        """Whether this forward all-reduces: training under a group of several ranks."""
        if not self.training or not is_initialized():
            return False
        group = current_group("SyncBatchNorm")
        if self.process_group is not None and self.process_group is not group:
            raise InvalidArgumentError("SyncBatchNorm: process_group must be the group "
                                       "init_process_group made (burnpy has one)")
        return group.size > 1

    def forward(self, x: Tensor) -> Tensor:
        """``x [batch, channels, *]`` normalized per channel by the statistics of every
        rank's batch in training; as BatchNorm otherwise."""
        self._check(x)
        if not self._synced():
            return super().forward(x)
        c = self.num_features
        dims = (0, *range(2, x.ndim))
        shape = (1, c) + (1,) * (x.ndim - 2)
        count = Tensor.full((1,), x.numel() // c, backend=x.backend, device=x.device,
                            dtype=x.dtype)
        sums = all_reduce(Tensor.cat([x.sum(dims), count], 0))
        total = int(sums[c].item())
        if total <= 1:
            raise ShapeError(f"SyncBatchNorm({c}): need more than 1 value per channel over "
                             f"all ranks in training, got {total}")
        mean = sums[:c] / float(total)
        centered = x - mean.reshape(shape)
        var = all_reduce(centered.square().sum(dims)) / float(total)
        y = centered * (var + self.eps).rsqrt().reshape(shape)
        if self.track_running_stats:
            self._update_running(mean.detach(), var.detach(), total)
        if self.weight is not None:
            y = y * self.weight.reshape(shape)
        if self.bias is not None:
            y = y + self.bias.reshape(shape)
        return y

    @classmethod
    def convert_sync_batchnorm(cls, module: Module,
                               process_group: ProcessGroup | None = None) -> Module:
        """``module`` with every BatchNorm layer in it (itself included) replaced by a
        SyncBatchNorm holding the same parameters and buffers (torch's helper)."""
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            out = object.__new__(cls)
            out.__dict__.update(vars(module))
            out.process_group = process_group
            return out
        for name, value in list(vars(module).items()):
            if isinstance(value, Module):
                object.__setattr__(module, name, cls.convert_sync_batchnorm(value,
                                                                            process_group))
            elif isinstance(value, list):
                value[:] = [cls.convert_sync_batchnorm(v, process_group)
                            if isinstance(v, Module) else v for v in value]
            elif isinstance(value, dict):
                for key, v in value.items():
                    if isinstance(v, Module):
                        value[key] = cls.convert_sync_batchnorm(v, process_group)
        return module


def _shape_tuple(normalized_shape: int | Sequence[int]) -> tuple[int, ...]:
    return (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)


def _check_trailing(layer: str, x: Tensor, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The trailing dims normalized over; ShapeError unless ``x`` ends with ``shape``."""
    x_shape, n = x.shape, len(shape)
    if len(x_shape) < n or x_shape[len(x_shape) - n:] != shape:
        raise ShapeError(f"{layer}: normalized_shape {describe(shape)} does not match the "
                         f"input's trailing dims (input {describe(x.shape)})")
    return tuple(range(len(x_shape) - n, len(x_shape)))


class LayerNorm(Module):
    """Normalizes over the trailing ``normalized_shape`` dims, then scales and shifts."""

    def __init__(self, normalized_shape: int | Sequence[int], eps: float = 1e-5,
                 elementwise_affine: bool = True, bias: bool = True, *,
                 backend: type[Backend] | None = None, device: Device | None = None,
                 dtype: DTypeLike | None = None) -> None:
        self.normalized_shape = _shape_tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        kw = init.Placement(backend=backend, device=device, dtype=dtype)
        self.weight = init.ones(self.normalized_shape, **kw) if elementwise_affine else None
        self.bias = (init.zeros(self.normalized_shape, **kw)
                     if elementwise_affine and bias else None)

    def forward(self, x: Tensor) -> Tensor:
        """``x [*, *normalized_shape]`` normalized over its trailing dims; same shape."""
        _check_trailing("LayerNorm", x, self.normalized_shape)
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class GroupNorm(Module):
    """Normalizes groups of channels of ``[batch, channels, *]`` per sample."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, *, backend: type[Backend] | None = None,
                 device: Device | None = None, dtype: DTypeLike | None = None,
                 bias: bool = True) -> None:
        if num_groups < 1 or num_channels % num_groups:
            raise InvalidArgumentError(f"GroupNorm: num_channels={num_channels} must be "
                                       f"divisible by num_groups={num_groups}")
        self.num_groups, self.num_channels, self.eps, self.affine = (
            num_groups, num_channels, eps, affine)
        kw = init.Placement(backend=backend, device=device, dtype=dtype)
        self.weight = init.ones((num_channels,), **kw) if affine else None
        self.bias = init.zeros((num_channels,), **kw) if affine and bias else None

    def forward(self, x: Tensor) -> Tensor:
        """``x [batch, channels, *]`` normalized per sample and group; same shape."""
        if x.ndim < 2 or x.shape[1] != self.num_channels:
            raise ShapeError(f"GroupNorm({self.num_groups}, {self.num_channels}): expected "
                             f"[batch, {self.num_channels}, *], got {describe(x.shape)}")
        return F.group_norm(x, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}"


class RMSNorm(Module):
    """``x / sqrt(mean(x^2) + eps) * weight`` over the trailing dims (torch.nn.RMSNorm).

    ``eps=None`` uses the machine epsilon of the input's dtype, as torch.
    """

    def __init__(self, normalized_shape: int | Sequence[int], eps: float | None = None,
                 elementwise_affine: bool = True, *, backend: type[Backend] | None = None,
                 device: Device | None = None, dtype: DTypeLike | None = None) -> None:
        self.normalized_shape = _shape_tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        self.weight = (init.ones(self.normalized_shape, backend=backend, device=device,
                                 dtype=dtype) if elementwise_affine else None)

    def forward(self, x: Tensor) -> Tensor:
        """``x [*, *normalized_shape]`` scaled by its trailing dims' RMS; same shape."""
        _check_trailing("RMSNorm", x, self.normalized_shape)
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class _InstanceNorm(ChannelNorm):
    """Normalizes each channel of each sample over its spatial dims. As torch's, training
    never counts ``num_batches_tracked`` (kept for torch's state dicts), and ``momentum=None``
    (no cumulative average here) leaves the running statistics as they are."""

    _rank = 3

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = False, track_running_stats: bool = False, *,
                 backend: type[Backend] | None = None, device: Device | None = None,
                 dtype: DTypeLike | None = None, bias: bool = True) -> None:
        self._init_channels(num_features, eps, momentum, affine, track_running_stats,
                            init.Placement(backend=backend, device=device, dtype=dtype), bias)

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


class _LazyNorm(LazyModuleMixin):
    """A lazy batch or instance norm: torch's arguments without ``num_features`` (affine and
    tracking by default, for both), which its first input's channel dim or a state dict's
    per-channel entries give."""

    def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, *, backend: type[Backend] | None = None,
                 device: Device | None = None, dtype: DTypeLike | None = None,
                 bias: bool = True) -> None:
        self._start_lazy(eps, momentum, affine, track_running_stats, backend=backend,
                         device=device, dtype=dtype, bias=bias)

    def _features_in_state(self, state: Mapping[str, Any], prefix: str) -> int | None:
        for name in ("weight", "bias", "running_mean", "running_var"):
            features = state_dim(state, prefix + name, 0)
            if features is not None:
                return features
        return None


class _LazyBatchNorm(_LazyNorm, _BatchNorm):

    def _input_features(self, input: Tensor) -> int:
        if input.ndim not in self._ranks:
            ranks = " or ".join(f"{r}-d" for r in self._ranks)
            raise ShapeError(f"{type(self).__name__}: expected a {ranks} input to infer "
                             f"num_features from, got {describe(input.shape)}")
        return input.shape[1]


class _LazyInstanceNorm(_LazyNorm, _InstanceNorm):

    def _input_features(self, input: Tensor) -> int:
        if input.ndim not in (self._rank - 1, self._rank):
            raise ShapeError(f"{type(self).__name__}: expected a {self._rank}-d input (or an "
                             f"unbatched {self._rank - 1}-d one) to infer num_features from, "
                             f"got {describe(input.shape)}")
        return input.shape[input.ndim - self._rank + 1]


class LazyBatchNorm1d(_LazyBatchNorm, BatchNorm1d):
    """A ``BatchNorm1d`` whose ``num_features`` comes from its first input; it then becomes
    one."""

    cls_to_become = BatchNorm1d


class LazyBatchNorm2d(_LazyBatchNorm, BatchNorm2d):
    """A ``BatchNorm2d`` whose ``num_features`` comes from its first input; it then becomes
    one."""

    cls_to_become = BatchNorm2d


class LazyBatchNorm3d(_LazyBatchNorm, BatchNorm3d):
    """A ``BatchNorm3d`` whose ``num_features`` comes from its first input; it then becomes
    one."""

    cls_to_become = BatchNorm3d


class LazyInstanceNorm1d(_LazyInstanceNorm, InstanceNorm1d):
    """An ``InstanceNorm1d`` whose ``num_features`` comes from its first input (unbatched
    too); it then becomes one."""

    cls_to_become = InstanceNorm1d


class LazyInstanceNorm2d(_LazyInstanceNorm, InstanceNorm2d):
    """An ``InstanceNorm2d`` whose ``num_features`` comes from its first input (unbatched
    too); it then becomes one."""

    cls_to_become = InstanceNorm2d


class LazyInstanceNorm3d(_LazyInstanceNorm, InstanceNorm3d):
    """An ``InstanceNorm3d`` whose ``num_features`` comes from its first input (unbatched
    too); it then becomes one."""

    cls_to_become = InstanceNorm3d
