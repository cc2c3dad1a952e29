"""burnpy's layers, read from the imports of its sources (AST): a package imports only the
packages of lower layers, so no import cycle runs between packages.

The rule (CONTRIBUTING.md, "Layers") counts an import as a run-time import wherever it runs:
at module level or inside a function (a function-local import is a run-time dependency that
only hides from ``python -X importtime``). An import under ``if TYPE_CHECKING:`` is type-only:
it never runs, so it may name any burnpy module, a higher layer included (a lower layer types
the objects a higher one hands it: the backend protocol takes a ``QuantScheme``, a tangent
seeds a ``Tensor``). The one run-time exception is a lazy re-export, an import inside a
package's module-level ``__getattr__`` (PEP 562), which runs on first attribute access, after
both packages have loaded; each is listed in ``LAZY_REEXPORTS`` with its reason. No import of
any kind names a backend package (``burnpy_*``): backends register themselves
(``burnpy.backend.registry``).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import burnpy

PACKAGE = Path(burnpy.__file__).parent
ROOT = PACKAGE.parent

#: burnpy's packages (and top-level modules) from the lowest layer up; a package imports only
#: packages of lower layers, never one of its own layer. ``burnpy`` is the root namespace
#: (``burnpy/__init__.py``). Where this differs from the first sketch (issue 28), the code
#: showed why: ``quantization`` sits above ``backend`` (a scheme is made of ``DType``s and
#: raises backend errors; the protocol only types schemes); ``custom_ops`` (``Function``,
#: ``GradFn``) between ``tensor`` and ``linalg``, whose ops are Functions; ``record`` below
#: ``nn`` (``Module.save`` writes records) with ``data`` beside it; ``distributed`` (process
#: groups, differentiable collectives) below ``nn``, as torch's, since ``SyncBatchNorm``
#: reduces over it and ``DistributedDataParallel`` is a Module (``burnpy.nn.parallel``); ``nn``
#: below ``optim`` (optimizers and ``AveragedModel`` take Modules).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("backend",),
    ("quantization",),
    ("ir",),
    ("autodiff", "fusion", "capture"),
    ("tensor",),
    ("custom_ops", "data", "record"),
    ("func", "linalg", "distributed", "amp"),
    ("jit",),
    ("burnpy",),
    ("nn",),
    ("optim",),
    ("models", "onnx"),
    ("train", "testing"),
    ("examples",),
)
LAYER = {unit: level for level, units in enumerate(LAYERS) for unit in units}

#: (importing package, imported package): the lazy re-exports allowed to point upward.
LAZY_REEXPORTS = {
    # ``burnpy.autodiff.Function`` (torch.autograd.Function's place) and the other custom-op
    # names, whose classes are built on Tensor one layer above the autodiff engine.
    ("autodiff", "custom_ops"),
    # ``burnpy.distributed.DistributedDataParallel``, a Module (``burnpy.nn.parallel``).
    ("distributed", "nn"),
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


SOURCES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def unit(module: str) -> str:
    """The package (or top-level module) of burnpy that ``module`` belongs to."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


@dataclass(frozen=True)
class Import:
    """One imported module as an import statement names it."""

    importer: str
    target: str
    line: int
    kind: str  # "module level", "in a function", "type-only" or "lazy re-export"
    #: The burnpy modules the statement runs when imported (``a.b.c`` runs ``a.b``'s
    #: ``__init__`` too, unless it is a package of the importer itself).
    runs: tuple[str, ...] = ()


def _targets(node: ast.Import | ast.ImportFrom) -> list[str]:
    """The modules a statement imports: ``from a import b`` names ``a.b`` when that is a
    module of burnpy, else ``a``."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    assert node.level == 0 and node.module is not None, "burnpy uses absolute imports"
    return list(dict.fromkeys(f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}"
                              in SOURCES else node.module for alias in node.names))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _walk(module: str, body: list[ast.stmt], kind: str) -> Iterator[Import]:
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            for target in _targets(node):
                yield Import(module, target, node.lineno, kind, _runs(module, target))
            continue
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            yield from _walk(module, node.body, "type-only")
            yield from _walk(module, node.orelse, kind)
            continue
        inner = kind
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and kind != "type-only":
            lazy = (kind == "module level" and node.name == "__getattr__"
                    and SOURCES[module].name == "__init__.py")
            inner = "lazy re-export" if lazy else "in a function"
        children = [*getattr(node, "body", ()), *getattr(node, "orelse", ()),
                    *getattr(node, "finalbody", ())]
        children += [s for h in getattr(node, "handlers", ()) for s in h.body]
        children += [s for c in getattr(node, "cases", ()) for s in c.body]
        yield from _walk(module, [c for c in children if isinstance(c, ast.stmt)], inner)


def _runs(importer: str, target: str) -> tuple[str, ...]:
    parts = target.split(".")
    prefixes = (".".join(parts[:i]) for i in range(1, len(parts) + 1))
    return tuple(p for p in prefixes if p in SOURCES
                 and not (importer == p or importer.startswith(p + ".")))


IMPORTS = [imp for module, path in SOURCES.items()
           for imp in _walk(module, ast.parse(path.read_text()).body, "module level")]


def _where(imp: Import) -> str:
    return f"{SOURCES[imp.importer].relative_to(ROOT)}:{imp.line} imports {imp.target} ({imp.kind})"


def test_the_import_reader_sees_every_kind_of_import() -> None:
    tree = ast.parse("import burnpy.tensor\n"
                     "if TYPE_CHECKING:\n    from burnpy.nn import Module\n"
                     "def f():\n    try:\n        import burnpy.func\n"
                     "    except ImportError:\n        from burnpy import linalg\n"
                     "def __getattr__(name):\n    from burnpy import custom_ops\n")
    found = {(i.target, i.kind) for i in _walk("burnpy.autodiff", tree.body, "module level")}
    assert found == {("burnpy.tensor", "module level"), ("burnpy.nn", "type-only"),
                     ("burnpy.func", "in a function"), ("burnpy.linalg", "in a function"),
                     ("burnpy.custom_ops", "lazy re-export")}
    assert _runs("burnpy.autodiff.rules.tangent", "burnpy.autodiff.forward.backend") == (
        "burnpy.autodiff.forward", "burnpy.autodiff.forward.backend")


def test_every_package_has_its_layer() -> None:
    units = {unit(m) for m in SOURCES}
    assert units == set(LAYER), (
        f"place {sorted(units - set(LAYER))} in LAYERS (and CONTRIBUTING.md's Layers); "
        f"{sorted(set(LAYER) - units)} no longer exist")


def test_packages_import_only_lower_layers() -> None:
    wrong = []
    for imp in IMPORTS:
        if not imp.target.startswith("burnpy.") and imp.target != "burnpy":
            continue
        src, dst = unit(imp.importer), unit(imp.target)
        if src == dst or imp.kind == "type-only" or LAYER[dst] < LAYER[src]:
            continue
        if imp.kind == "lazy re-export" and (src, dst) in LAZY_REEXPORTS:
            continue
        wrong.append(f"{_where(imp)}: {src} (layer {LAYER[src]}) may not import {dst} "
                     f"(layer {LAYER[dst]})")
    assert not wrong, "\n".join(wrong)


def test_no_import_names_a_backend_package() -> None:
    named = [_where(imp) for imp in IMPORTS if imp.target.split(".")[0].startswith("burnpy_")]
    assert not named, "burnpy finds backends through burnpy.backend.registry:\n" + "\n".join(
        named)


def test_no_backend_package_is_imported_by_its_name_as_a_string() -> None:
    """``importlib.import_module("burnpy_wgpu")`` hides from the import reader: backends are
    found by name through ``burnpy.backend.registry.backend_named`` instead."""
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                    node.value.split(".")[0].startswith("burnpy_") and \
                    node.value.replace("_", "").replace(".", "").isalnum():
                raise AssertionError(f"{path.relative_to(ROOT)}:{node.lineno} names the "
                                     f"package {node.value!r}; use backend_named")


def test_no_cycle_between_modules_at_import_time() -> None:
    """Module-level imports form no cycle, so a module imports the same whichever is imported
    first (no module imported for its side effect to break a cycle)."""
    graph: dict[str, set[str]] = {m: set() for m in SOURCES}
    for imp in IMPORTS:
        if imp.kind == "module level":
            graph[imp.importer].update(imp.runs)
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = 1
        path.append(module)
        for nxt in sorted(graph[module]):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)) is not None:
                return cycle
        path.pop()
        state[module] = 2
        return None

    for module in sorted(graph):
        if module not in state and (cycle := visit(module)) is not None:
            pytest.fail("import cycle: " + " -> ".join(cycle))


ABOVE_ROOT = [u for u in LAYER if LAYER[u] > LAYER["burnpy"]]


@pytest.mark.parametrize("package", ["record", "data", *ABOVE_ROOT])
def test_importing_a_package_loads_no_higher_layer(package: str) -> None:
    """At run time too: ``import burnpy.X`` loads the root namespace and X's lower layers
    only (the lazy re-exports and ``bp.nn``... load on first use)."""
    limit = max(LAYER[package], LAYER["burnpy"])
    code = (f"import sys, burnpy.{package}\n"
            "print(' '.join(sorted({m.split('.')[1] for m in sys.modules "
            "if m.startswith('burnpy.')})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, check=True)
    above = [u for u in out.stdout.split() if u in LAYER and LAYER[u] > limit]
    assert not above, f"import burnpy.{package} loads {above}"


def test_lazy_reexports_are_the_classes_themselves() -> None:
    import burnpy.distributed as distributed
    from burnpy.nn.parallel import DistributedDataParallel

    assert distributed.DistributedDataParallel is DistributedDataParallel
    assert "DistributedDataParallel" in dir(distributed)


def test_custom_ops_are_attributes_of_autodiff_and_burnpy() -> None:
    import burnpy.autodiff as autodiff
    import burnpy.custom_ops as custom_ops

    for name in custom_ops.__all__:
        assert getattr(autodiff, name) is getattr(custom_ops, name)
        assert name in dir(autodiff) and name in autodiff.__all__
    assert burnpy.Function is custom_ops.Function and burnpy.GradFn is custom_ops.GradFn
    with pytest.raises(AttributeError, match=r"burnpy\.autodiff' has no attribute 'Nope'"):
        _ = autodiff.Nope  # type: ignore[attr-defined]
