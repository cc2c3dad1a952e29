"""``python -m burnpy.fusion.show OP [BACKEND]``: print the source of ``Fusion(B)``'s op ``OP``
(``float_exp``, ``float_matmul``...), generated or written; B is the backend of that name
(``cpu``, ``wgpu``, ``cuda``), ``cpu`` unless named."""

from __future__ import annotations

import argparse
import inspect

from burnpy.backend.registry import backend_named
from burnpy.fusion.backend import Fusion


def op_source(op: str, backend: str = "cpu") -> str:
    """The source of ``Fusion(B)``'s op ``op``, B the backend named ``backend``."""
    inner = backend_named(backend)
    found = inspect.getattr_static(Fusion(inner), op)
    function = getattr(found, "__func__", found)
    return inspect.getsource(function)


def main() -> None:
    """Print the op named on the command line."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("op")
    parser.add_argument("backend", nargs="?", default="cpu")
    args = parser.parse_args()
    print(op_source(args.op, args.backend), end="")


if __name__ == "__main__":
    main()
