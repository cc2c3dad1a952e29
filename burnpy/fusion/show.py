"""``python -m burnpy.fusion.show OP [MODULE:BACKEND]``: print the source of ``Fusion(B)``'s op
``OP`` (``float_exp``, ``float_matmul``...), generated or written; B is ``burnpy_cpu:CpuBackend``
unless named."""

from __future__ import annotations

import argparse
import importlib
import inspect

from burnpy.fusion.backend import Fusion


def op_source(op: str, backend: str = "burnpy_cpu:CpuBackend") -> str:
    """The source of ``Fusion(B)``'s op ``op``, B named ``module:class``."""
    module, _, name = backend.partition(":")
    inner = getattr(importlib.import_module(module), name)
    found = inspect.getattr_static(Fusion(inner), op)
    function = getattr(found, "__func__", found)
    return inspect.getsource(function)


def main() -> None:
    """Print the op named on the command line."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("op")
    parser.add_argument("backend", nargs="?", default="burnpy_cpu:CpuBackend")
    args = parser.parse_args()
    print(op_source(args.op, args.backend), end="")


if __name__ == "__main__":
    main()
