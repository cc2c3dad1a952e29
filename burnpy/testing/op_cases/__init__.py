"""The conformance cases of every float, int and bool Tensor op, one module per topic, as
``burnpy/tensor/`` (module ops have their own, ``burnpy.testing.module_cases``).

Each module registers cases with ``case``; the spelling is shared with torch wherever burnpy
follows it, and ``torch_fn`` gives torch's spelling where burnpy keeps Burn's (``mask_where``,
``select_assign``, ``repeat_dim``, the ``*_with_indices`` names...). ``max(dim)``, ``sort``,
``topk``... return torch's ``(values, indices)`` named tuple: both fields are compared.
A new op's case goes into its topic's module.
"""

from burnpy.testing.op_cases import (  # noqa: F401 - each registers its cases
    activation,
    arithmetic,
    conversion,
    creation,
    elementwise,
    indexing,
    layout,
    linalg,
    reduction,
    statistics,
)
