"""torch.nn.utils.parametrizations: ``weight_norm`` and ``spectral_norm`` as parametrizations
(``burnpy.nn.utils.parametrize``), with torch's state-dict names
(``parametrizations.weight.original0``/``original1``; ``parametrizations.weight.original``
and ``parametrizations.weight.0._u``/``_v``)."""

from __future__ import annotations

from typing import Any

from burnpy.autodiff.modes import no_grad
from burnpy.backend.errors import IndexOutOfBoundsError, InvalidArgumentError
from burnpy.nn import functional as F
from burnpy.nn import init
from burnpy.nn.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from burnpy.nn.module import Module
from burnpy.nn.utils.parametrize import register_parametrization
from burnpy.tensor import Tensor


def norm_except_dim(v: Tensor, dim: int) -> Tensor:
    """The 2-norm of ``v`` over every dim but ``dim``, kept as size-1 dims (torch's
    ``norm_except_dim(v, 2, dim)``); ``dim=-1`` means over the whole tensor, a scalar."""
    if dim == -1:
        return v.square().sum().sqrt()
    keep = dim % v.ndim
    dims = [d for d in range(v.ndim) if d != keep]
    return v.square().sum(dims, keepdim=True).sqrt() if dims else v.abs()


class _WeightNorm(Module):
    """``weight = g * v / ||v||`` (norm over every dim but ``dim``; ``dim=None``: the whole
    tensor), from the originals ``g`` (``original0``) and ``v`` (``original1``)."""

    def __init__(self, dim: int | None = 0, name: str = "weight") -> None:
        self.dim = -1 if dim is None else dim
        self.name = name

    def _prepare_load(self, state: dict[str, Any], prefix: str) -> None:
        """Read a checkpoint of torch's deprecated ``nn.utils.weight_norm``: its
        ``<name>_g``/``<name>_v`` are ``original0``/``original1`` (torch's compat hook)."""
        owner = prefix.removesuffix(f"parametrizations.{self.name}.0.")
        legacy_g, legacy_v = f"{owner}{self.name}_g", f"{owner}{self.name}_v"
        if legacy_g in state and legacy_v in state:
            originals = f"{owner}parametrizations.{self.name}.original"
            state[f"{originals}0"] = state.pop(legacy_g)
            state[f"{originals}1"] = state.pop(legacy_v)

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        """The weight from its magnitude and direction."""
        return weight_v * (weight_g / norm_except_dim(weight_v, self.dim))

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        """``(g, v)`` giving ``weight``: its norms and itself."""
        return norm_except_dim(weight, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Reparametrize ``module.<name>`` by magnitude and direction (Salimans and Kingma), as
    torch's ``parametrizations.weight_norm``: ``g`` and ``v`` are the trainable originals."""
    register_parametrization(module, name, _WeightNorm(dim, name), unsafe=True)
    return module


class _SpectralNorm(Module):
    """``weight / sigma``, sigma the largest singular value of the weight seen as a matrix
    (dim ``dim`` first), estimated by power iteration on the buffers ``_u`` and ``_v``: one
    step (``n_power_iterations``) per read in training, none in eval. A 1-d weight is
    normalized instead."""

    _u: Tensor  # buffers, with a weight of 2 or more dims
    _v: Tensor

    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        ndim = weight.ndim
        if not -ndim <= dim < ndim:
            raise IndexOutOfBoundsError(f"spectral_norm: dim {dim} is out of range for a "
                                        f"{ndim}-d weight")
        if n_power_iterations <= 0:
            raise InvalidArgumentError(f"spectral_norm: n_power_iterations must be positive, "
                                       f"got {n_power_iterations}")
        self.dim = dim % ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            with no_grad():
                mat = self._matrix(weight.detach())
                h, w = mat.shape
                kw = init.Placement(backend=mat.backend, device=mat.device, dtype=mat.dtype)
                self.register_buffer("_u", F.normalize(Tensor.randn(h, **kw), dim=0, eps=eps))
                self.register_buffer("_v", F.normalize(Tensor.randn(w, **kw), dim=0, eps=eps))
            self._power_method(mat, 15)

    def _matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.ndim) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, mat: Tensor, n_power_iterations: int) -> None:
        """Update ``_u`` and ``_v`` (untracked) by ``n_power_iterations`` steps."""
        with no_grad():
            mat = mat.detach()
            for _ in range(n_power_iterations):
                self._u = F.normalize(mat.mv(self._v), dim=0, eps=self.eps)
                self._v = F.normalize(mat.transpose(0, 1).mv(self._u), dim=0, eps=self.eps)

    def forward(self, weight: Tensor) -> Tensor:
        """The weight divided by its estimated spectral norm."""
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        mat = self._matrix(weight)
        if self.training:
            self._power_method(mat, self.n_power_iterations)
        sigma = (self._u * mat.mv(self._v)).sum()
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        """The original a value comes from: itself (the scale is not recoverable)."""
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    """Divide ``module.<name>`` by its spectral norm at each read (Miyato et al.), as torch's
    ``parametrizations.spectral_norm``; ``dim`` defaults to 1 for transposed convolutions,
    else 0."""
    weight = vars(module).get(name)
    if not isinstance(weight, Tensor):
        raise InvalidArgumentError(f"spectral_norm: {type(module).__name__} has no parameter "
                                   f"or buffer named '{name}'")
    if dim is None:
        transposed = (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)
        dim = 1 if isinstance(module, transposed) else 0
    register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
