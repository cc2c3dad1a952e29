"""The Backend protocol's op families, one module per tensor kind, as in Burn.

Each op is ``@required`` (a declaration every concrete backend implements) or ``@provided``
(a default composed from other ops); ``required_ops`` and ``provided_ops`` list them.
"""

from burnpy.backend.ops._marker import (
    backend_classmethod,
    is_provided,
    is_required,
    provided,
    provided_ops,
    required,
    required_ops,
)

__all__ = [
    "backend_classmethod", "is_provided", "is_required", "provided", "provided_ops", "required",
    "required_ops",
]
