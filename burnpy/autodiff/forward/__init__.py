"""Forward-mode automatic differentiation as a decorator backend.

``ForwardAD(B)`` / ``ForwardAD[B]`` wraps any backend ``B``; its float primitive is a
``DualTensor`` (primal and tangent). ``make_dual`` / ``unpack_dual`` seed and read tangents on
Tensors; ``burnpy.func`` builds ``jvp``, ``hvp``, ``jacfwd`` and ``hessian`` on it.
"""

from burnpy.autodiff.dual_tensor import DualTensor
from burnpy.autodiff.forward.backend import ForwardAD, ForwardADBackend
from burnpy.autodiff.forward.dual import UnpackedDual, make_dual, unpack_dual

__all__ = ["DualTensor", "ForwardAD", "ForwardADBackend", "UnpackedDual", "make_dual",
           "unpack_dual"]
