"""The prepared GPU check: burnpy's GPU suites, examples and benchmarks in one device command.

A GPU is lent to a session now and then, for 15 minutes in all, one command at most 10, so the
check is one command, ordered by importance, each part under its own time limit, with every
result written to the output folder as soon as its part ends (a time-out still returns what
came before). Time a part leaves unused passes on to the parts after it.

Run by ``scripts/gpu_check.sh`` (which installs the carried wgpu wheel and Vulkan loader
first) on the device machine: ``python3 scripts/gpu_check.py --out "$OUT"``. ``--dry-run``
runs the same logic here without a GPU: the pytest parts only collect, the commands run and
fail fast where they need a GPU; ``tests/test_gpu_check.py`` runs it.

The output folder gets at most ``MAX_FILES`` files: ``summary.txt`` (the environment, each
part's outcome and its failure digest: test id and one-line error), ``log.txt`` (everything
printed), ``junit.tar.gz`` (one junit XML per pytest part) and ``benchmarks.json`` (each
benchmark's figures, or why it gave none).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import signal
import subprocess
import sys
import tarfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_FILES = 8
#: Seconds a part's pytest is given, after SIGINT at its limit, to write its junit XML.
GRACE = 15
#: pytest workers on the device machine's 16 cores.
WORKERS = 8


@dataclass(frozen=True)
class Part:
    """One step of the check: pytest over ``tests`` or ``commands`` run one after another,
    given ``budget`` seconds (plus whatever earlier parts left unused)."""

    name: str
    title: str
    budget: int
    tests: tuple[str, ...] = ()
    commands: tuple[tuple[str, ...], ...] = ()
    env: tuple[tuple[str, str], ...] = ()


#: Written to ``$BURNPY_BENCH_JSON`` by the benchmarks (``benchmarks/cuda_timing.record``).
FIGURES_ENV = "BURNPY_BENCH_JSON"
WGPU_ON_GPU = (("BURNPY_WGPU_BACKEND", "Vulkan"),
               ("BURNPY_WGPU_POWER_PREFERENCE", "high-performance"))

PARTS: tuple[Part, ...] = (
    Part("cuda", "CudaBackend: backend, kernels, and the conformance suite in float64, float32, "
         "float16 and bfloat16", 120,
         tests=("tests/cuda/test_cuda_backend.py", "tests/cuda/test_cuda_kernels.py",
                "tests/cuda/test_cuda_kernel_sources.py", "tests/cuda/test_cuda_half_scalars.py")),
    Part("graphs", "bp.compile replays as CUDA graphs: the graph path and each fallback", 30,
         tests=("tests/cuda/test_cuda_graphs.py",)),
    Part("autodiff", "Autodiff(CudaBackend) gradients under both checkpoint strategies, "
         "ForwardAD(CudaBackend) tangents", 120, tests=("tests/cuda/test_cuda_autodiff.py",)),
    Part("fusion", "Fusion(CudaBackend) suites and the CUDA fuser", 75,
         tests=("tests/cuda/test_cuda_fusion.py", "tests/fusion/test_cuda_fuser.py")),
    Part("quantization", "Quantized tensors on CudaBackend; NCCL collectives on one rank", 30,
         tests=("tests/cuda/test_cuda_quantization.py", "tests/cuda/test_cuda_nccl.py")),
    Part("examples", "The digits example and the GPT example's short run on CUDA", 60,
         commands=(("-m", "burnpy.examples.digits", "--backend", "cuda", "--no-progress",
                    "--out", "/tmp/gpu-check/digits"),
                   ("-m", "burnpy.examples.gpt", "--backend", "cuda", "--short",
                    "--out", "/tmp/gpu-check/gpt"))),
    Part("benchmarks", "GPU benchmarks against torch CUDA in the same command", 115,
         commands=(("benchmarks/cuda_mlp_step.py",), ("benchmarks/cuda_compile_step.py",),
                   ("benchmarks/cuda_matmul.py",),
                   ("benchmarks/cuda_overhead.py",),
                   ("benchmarks/cuda_train_digits.py", "--batch-size", "256", "--epochs", "3"),
                   ("benchmarks/cuda_gpt_step.py", "--rounds", "9"),
                   ("benchmarks/wgpu_on_gpu.py",)),
         env=WGPU_ON_GPU),
    Part("wgpu", "The WebGPU conformance suite on the GPU's Vulkan adapter", 60,
         tests=("tests/backend/test_conformance.py", "-k", "WgpuBackend"), env=WGPU_ON_GPU),
)


@dataclass
class Outcome:
    """What one part gave: its status, counts, seconds, and failure digest lines."""

    part: Part
    status: str = "not run"
    seconds: float = 0.0
    counts: dict[str, int] = field(default_factory=dict)
    digest: list[str] = field(default_factory=list)

    def line(self) -> str:
        """One line of the summary's table."""
        counts = ", ".join(f"{n} {k}" for k, n in self.counts.items() if n)
        return (f"{self.part.name:<13} {self.status:<28} {self.seconds:6.0f} s"
                + (f"  {counts}" if counts else ""))


def limits(parts: Sequence[Part], total: float) -> list[float]:
    """Each part's own budget, scaled down together if they exceed ``total`` seconds."""
    scale = min(1.0, total / max(1, sum(p.budget for p in parts)))
    return [p.budget * scale for p in parts]


def time_for(index: int, budgets: Sequence[float], remaining: float) -> float:
    """Seconds part ``index`` may take: its budget, or more when earlier parts left time
    unused, but never eating into what the later parts are budgeted."""
    later = sum(budgets[index + 1:])
    return max(0.0, min(remaining, max(budgets[index], remaining - later)))


def junit_digest(xml: bytes) -> tuple[dict[str, int], list[str]]:
    """Counts (passed, failed, errors, skipped) and one ``id: message`` line per failure or
    error of a junit XML document."""
    counts = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
    lines = []
    root = ET.fromstring(xml)
    for case in root.iter("testcase"):
        if case.get("name") is None:  # pytest's placeholder for a run stopped by SIGINT
            continue
        test_id = f"{case.get('classname', '')}::{case.get('name', '')}"
        bad = case.find("failure")
        kind = "failed"
        if bad is None:
            bad = case.find("error")
            kind = "errors"
        if bad is not None:
            counts[kind] += 1
            message = (bad.get("message") or bad.text or "").strip().splitlines()
            lines.append(f"{test_id}: {message[0][:300] if message else kind}")
        elif case.find("skipped") is not None:
            counts["skipped"] += 1
        else:
            counts["passed"] += 1
    return counts, lines


class Check:
    """Runs the parts in order, writing the output files after each."""

    def __init__(self, out: Path, python: str, dry_run: bool, deadline: float,
                 parts: Sequence[Part] = PARTS, workers: int = WORKERS) -> None:
        self.out, self.python, self.dry_run, self.parts = out, python, dry_run, parts
        self.workers = workers
        self.started = time.monotonic()
        self.deadline = deadline
        self.budgets = limits(parts, deadline)
        self.outcomes = [Outcome(p) for p in parts]
        self.environment = ""
        self.junit: dict[str, bytes] = {}
        self.figures: dict[str, list[object]] = {}
        out.mkdir(parents=True, exist_ok=True)
        self.log = open(out / "log.txt", "w", encoding="utf-8")  # noqa: SIM115 - whole run

    def say(self, text: str) -> None:
        """Print ``text`` and keep it in the log."""
        print(text, flush=True)
        self.log.write(text + "\n")
        self.log.flush()

    def remaining(self) -> float:
        """Seconds left of the whole check's deadline."""
        return self.deadline - (time.monotonic() - self.started)

    def run(self) -> int:
        """Every part in order; the exit status is 0 when the check itself ran through."""
        self.environment = describe_environment(self.python)
        self.say(self.environment)
        self.write()
        for i, outcome in enumerate(self.outcomes):
            limit = time_for(i, self.budgets, self.remaining())
            self.say(f"\n=== part {i + 1}/{len(self.parts)}: {outcome.part.name}: "
                     f"{outcome.part.title} (limit {limit:.0f} s)")
            began = time.monotonic()
            if limit < 5:
                outcome.status = "skipped: no time left"
            elif outcome.part.tests:
                self.run_pytest(outcome, limit)
            else:
                self.run_commands(outcome, limit)
            outcome.seconds = time.monotonic() - began
            self.say(f"--- {outcome.line()}")
            self.write()
        self.log.close()
        return 0

    def env(self, part: Part, **extra: str) -> dict[str, str]:
        """The environment of a part's processes: this tree first on PYTHONPATH, unbuffered
        output, the part's own variables and ``extra``."""
        path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
        return {**os.environ, "PYTHONPATH": path, "PYTHONUNBUFFERED": "1", **dict(part.env),
                **extra}

    def run_pytest(self, outcome: Outcome, limit: float) -> None:
        """The part's tests (only collected in a dry run), their junit XML kept and digested."""
        part = outcome.part
        xml = self.out / f".junit-{part.name}.xml"
        args = [self.python, "-m", "pytest", *part.tests, "-q", "-p", "no:cacheprovider",
                f"--junitxml={xml}", "-o", "junit_family=xunit1"]
        if self.dry_run:
            args.append("--collect-only")
        else:
            args += ["-rfE"] + (["-n", str(self.workers)] if self.workers > 1 else [])
        rc, text = self.spawn(args, self.env(part), limit)
        if xml.exists():
            self.junit[part.name] = xml.read_bytes()
            xml.unlink()
            outcome.counts, outcome.digest = junit_digest(self.junit[part.name])
        if self.dry_run:
            outcome.counts = {"collected": count_collected(text)}
        outcome.status = status_of(rc, self.dry_run)

    def run_commands(self, outcome: Outcome, limit: float) -> None:
        """The part's commands in order, sharing its time; each benchmark's figures kept."""
        part = outcome.part
        statuses = []
        began = time.monotonic()
        figures_file = self.out / f".figures-{part.name}.jsonl"
        for i, command in enumerate(part.commands):
            left = limit - (time.monotonic() - began)
            share = left / (len(part.commands) - i)
            name = (command[1].rsplit(".", 1)[-1] if command[0] == "-m"
                    else Path(command[0]).stem)
            figures_file.unlink(missing_ok=True)
            rc, text = self.spawn([self.python, *command],
                                  self.env(part, **{FIGURES_ENV: str(figures_file)}), share)
            status = status_of(rc, False)
            statuses.append(status)
            tail = [line for line in text.strip().splitlines() if line.strip()][-1:]
            if status != "ok":
                outcome.digest.append(f"{name}: {status}: {tail[0][:300] if tail else ''}")
            if figures_file.exists():
                rows = [json.loads(line) for line in
                        figures_file.read_text(encoding="utf-8").splitlines() if line]
                figures_file.unlink()
                self.figures[name] = rows
            elif command[0].startswith("benchmarks/"):
                self.figures[name] = [{"status": status, "output": tail}]
            self.write()
        outcome.counts = {"ok": statuses.count("ok"),
                          "failed": len(statuses) - statuses.count("ok")}
        outcome.status = "ok" if all(s == "ok" for s in statuses) else "failures"

    def spawn(self, args: list[str], env: dict[str, str], limit: float) -> tuple[int, str]:
        """Run ``args`` in its own process group, its output into the log; at ``limit`` it
        gets SIGINT (pytest then still writes its report), GRACE seconds later SIGKILL.
        Returns the exit status (``TIMED_OUT`` when stopped) and the output."""
        self.say(f"$ {' '.join(args[1:])}")
        proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, start_new_session=True)
        try:
            text, _ = proc.communicate(timeout=max(1.0, limit - GRACE))
            rc = proc.returncode
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGINT)
            try:
                text, _ = proc.communicate(timeout=GRACE)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                text, _ = proc.communicate()
            rc = TIMED_OUT
        self.log.write(text)
        self.log.flush()
        tail = text.strip().splitlines()[-3:]
        for line in tail:
            print(f"  | {line}", flush=True)
        return rc, text

    def write(self) -> None:
        """The summary, the junit archive and the figures, as they stand now."""
        lines = [self.environment, "", f"parts (dry run: {self.dry_run}):"]
        lines += [f"  {o.line()}" for o in self.outcomes]
        for o in self.outcomes:
            if o.digest:
                lines += ["", f"[{o.part.name}] {o.part.title}"]
                lines += [f"  {line}" for line in o.digest]
        (self.out / "summary.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
            for name, data in self.junit.items():
                info = tarfile.TarInfo(f"junit-{name}.xml")
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))
        (self.out / "junit.tar.gz").write_bytes(buffer.getvalue())
        (self.out / "benchmarks.json").write_text(json.dumps(self.figures, indent=1) + "\n",
                                                  encoding="utf-8")


#: The exit status recorded for a command stopped at its time limit.
TIMED_OUT = 124


def status_of(rc: int, dry_run: bool) -> str:
    """A part's status word from its exit status (pytest's 5, nothing collected, is bad)."""
    if rc == TIMED_OUT:
        return "timed out"
    if rc == 0:
        return "ok" if not dry_run else "collected"
    return f"failures (exit {rc})"


def count_collected(text: str) -> int:
    """The number in pytest's ``N tests collected`` line (0 when absent)."""
    for line in reversed(text.splitlines()):
        words = line.split()
        if "collected" in words and words[0].isdigit():
            return int(words[0])
    return 0


PROBE = r"""
import importlib, subprocess
def v(name):
    try:
        return importlib.import_module(name).__version__
    except Exception as exc:
        return f"missing ({type(exc).__name__}: {exc})"
for name in ("numpy", "numba", "scipy", "ml_dtypes", "cupy", "torch", "wgpu", "pytest", "xdist"):
    print(f"{name:10s} {v(name)}")
try:
    import cupy
    rt = cupy.cuda.runtime
    print(f"CUDA       runtime {rt.runtimeGetVersion()}, driver {rt.driverGetVersion()}, "
          f"{rt.getDeviceCount()} device(s), {cupy.cuda.Device(0).compute_capability}")
except Exception as exc:
    print(f"CUDA       not usable through CuPy: {type(exc).__name__}: {exc}")
try:
    import torch
    print(f"torch CUDA {torch.version.cuda}, available {torch.cuda.is_available()}"
          + (f", {torch.cuda.get_device_name()}" if torch.cuda.is_available() else ""))
except Exception as exc:
    print(f"torch CUDA {type(exc).__name__}: {exc}")
from burnpy_cuda import cuda_available, unavailable_reason
print(f"burnpy     CudaBackend usable: {cuda_available()} {unavailable_reason() or ''}")
try:
    from burnpy_wgpu import list_adapters
    for a in list_adapters():
        print(f"webgpu     adapter {a.index}: {a.name} ({a.backend_type}, {a.adapter_type})")
except Exception as exc:
    print(f"webgpu     no adapter: {type(exc).__name__}: {exc}")
"""


def describe_environment(python: str) -> str:
    """What the check relies on: the machine, the driver, CUDA, CuPy, torch, the adapters."""
    lines = [f"burnpy GPU check, {time.strftime('%Y-%m-%d %H:%M:%S %Z')}, "
             f"{platform.node()} ({platform.machine()}, {os.cpu_count()} cores)"]
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                              "--format=csv,noheader"], capture_output=True, text=True,
                             timeout=30, check=False)
        lines.append(f"nvidia-smi {smi.stdout.strip() or smi.stderr.strip()}")
    except (OSError, subprocess.TimeoutExpired) as exc:
        lines.append(f"nvidia-smi unavailable: {exc}")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])), **dict(WGPU_ON_GPU)}
    probe = subprocess.run([python, "-c", PROBE], capture_output=True, text=True, cwd=ROOT,
                           env=env, timeout=120, check=False)
    lines.append(f"python     {python}: "
                 + subprocess.run([python, "--version"], capture_output=True, text=True,
                                  check=False).stdout.strip())
    lines += (probe.stdout + probe.stderr).strip().splitlines()
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "out/gpu-check")),
                   help="output folder (default $OUT, else out/gpu-check)")
    p.add_argument("--python", default=sys.executable, help="the Python that runs the parts")
    p.add_argument("--deadline", type=float, default=420,
                   help="seconds for the whole check (default 420: with a machine's start, it "
                        "leaves a session's 15 device minutes room for one rerun of --only parts)")
    p.add_argument("--dry-run", action="store_true",
                   help="no GPU needed: pytest parts only collect, commands fail fast")
    p.add_argument("--only", nargs="+", choices=[part.name for part in PARTS],
                   help="run only these parts")
    args = p.parse_args(argv)
    parts = [part for part in PARTS if not args.only or part.name in args.only]
    return Check(args.out, args.python, args.dry_run, args.deadline, parts).run()


if __name__ == "__main__":
    sys.exit(main())
