"""The registry of concrete backends: burnpy imports no backend package, ``burnpy_cpu``
registers itself, and the default comes from the ``burnpy.backends`` entry points."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

import burnpy as bp
from burnpy.backend import registry
from burnpy_cpu import CpuBackend

ROOT = Path(__file__).resolve().parents[2]


def run(code: str) -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh interpreter, from the checkout's root."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)


def test_the_default_is_cpu_backend_registered_by_burnpy_cpu() -> None:
    assert registry.default_backend() is CpuBackend
    assert registry.registered_backends()["cpu"] is CpuBackend
    assert bp.tensor([1.0, 2.0]).backend is CpuBackend
    assert bp.data.DataLoader(bp.data.ArrayDataset(bp.tensor([1.0]).numpy())).backend \
        is CpuBackend


def test_import_burnpy_loads_no_backend_until_a_tensor_needs_the_default() -> None:
    out = run("import sys, burnpy as bp\n"
              "before = [m for m in sys.modules if m.startswith('burnpy_')]\n"
              "t = bp.Tensor.zeros(2)\n"
              "print(before, type(t.primitive).__module__, 'burnpy_cpu' in sys.modules)")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["[]", "numpy", "True"]


def test_the_installed_metadata_declares_the_cpu_entry_point() -> None:
    points = {p.name: p.value for p in entry_points(group=registry.ENTRY_POINT_GROUP)}
    assert points.get("cpu") == "burnpy_cpu:CpuBackend", (
        "reinstall burnpy (pip install -e .) so its metadata has the entry point")


def test_a_source_checkout_without_the_metadata_reads_its_pyproject() -> None:
    out = run("import burnpy.backend.registry as r\n"
              "r.entry_points = lambda group: ()  # metadata from before the group existed\n"
              "print(r.default_backend().__name__)")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "CpuBackend"


def test_pyproject_of_another_project_declares_nothing(tmp_path: Path) -> None:
    other = tmp_path / "pyproject.toml"
    other.write_text('[project]\nname = "other"\n[project.entry-points."burnpy.backends"]\n'
                     'cpu = "burnpy_cpu:CpuBackend"\n')
    assert registry._checkout_entry_points(other) == []
    assert registry._checkout_entry_points(tmp_path / "missing.toml") == []
    points = registry._checkout_entry_points(ROOT / "pyproject.toml")
    assert [(p.name, p.value, p.group) for p in points] == [
        ("cpu", "burnpy_cpu:CpuBackend", "burnpy.backends"),
        ("cuda", "burnpy_cuda:CudaBackend", "burnpy.backends"),
        ("wgpu", "burnpy_wgpu:WgpuBackend", "burnpy.backends")]


def test_no_backend_found_names_what_to_install() -> None:
    blocked = ("import sys\n"
               "class Block:\n"
               "    def find_spec(self, name, path=None, target=None):\n"
               "        if name.split('.')[0] == 'burnpy_cpu':\n"
               "            raise ImportError('No module named burnpy_cpu (blocked)')\n"
               "sys.meta_path.insert(0, Block())\n"
               "import burnpy as bp\n"
               "try:\n"
               "    bp.tensor([1.0])\n"
               "except bp.backend.BackendNotFoundError as e:\n"
               "    print(e)\n")
    out = run(blocked)
    assert out.returncode == 0, out.stderr
    message = out.stdout
    assert "no default backend" in message
    assert "cpu = burnpy_cpu:CpuBackend failed to import" in message
    assert "pip install -e ." in message and "backend=" in message


def test_a_registered_default_stays_the_default() -> None:
    out = run("from burnpy.backend import registry as r\n"
              "from burnpy_cpu import CpuBackend\n"
              "from burnpy.autodiff import Autodiff\n"
              "r.register_backend('other', Autodiff(CpuBackend), default=True)\n"
              "print(r.default_backend() is CpuBackend, sorted(r.registered_backends()))")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "True ['cpu', 'other']"


def test_backends_are_found_by_name_without_naming_their_package() -> None:
    from burnpy_cuda import CudaBackend
    from burnpy_wgpu import WgpuBackend

    assert registry.backend_named("cpu") is CpuBackend
    assert registry.backend_named("cuda") is CudaBackend  # importable without CuPy
    assert registry.backend_named("wgpu") is WgpuBackend
    assert {"cpu", "cuda", "wgpu"} <= set(registry.backend_names())
    with pytest.raises(registry.BackendNotFoundError,
                       match=r"no backend named 'tpu': the entry points of 'burnpy.backends' "
                             r"are \['cpu', 'cuda', 'wgpu'\]"):
        registry.backend_named("tpu")


def test_a_backend_whose_package_fails_to_import_says_what_to_install() -> None:
    out = run("import sys\n"
              "class Block:\n"
              "    def find_spec(self, name, path=None, target=None):\n"
              "        if name.split('.')[0] == 'burnpy_wgpu':\n"
              "            raise ImportError('No module named wgpu (blocked)')\n"
              "sys.meta_path.insert(0, Block())\n"
              "from burnpy.backend import registry as r\n"
              "try:\n"
              "    r.backend_named('wgpu')\n"
              "except r.BackendNotFoundError as e:\n"
              "    print(e)\n")
    assert out.returncode == 0, out.stderr
    assert "backend 'wgpu' (burnpy_wgpu:WgpuBackend) failed to import" in out.stdout
    assert "install burnpy[wgpu]" in out.stdout
