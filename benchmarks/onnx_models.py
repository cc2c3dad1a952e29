"""Benchmark: imported ONNX models in burnpy (eager ``CpuBackend``, inference, no autodiff)
against onnxruntime on one CPU thread, and the import time of a ~100 MB model.

- ``bert``: transformers' ``BertModel`` (random weights; 4 layers, hidden 256, 4 heads by
  default) with its pooler, under a padding mask, exported by ``torch.onnx.export`` (the
  TorchScript exporter, opset 17, constants folded as a deployment export does);
- ``resnet``: a ResNet-18 (basic blocks 2-2-2-2, widths 64 to 512) on 224x224 images;
- ``import``: ``bp.onnx.load`` of a 100 MB float32 MLP (six 2048x2048 layers), once with the
  weights inside the ``.onnx`` file and once in external data, beside ``onnx.load`` and
  onnxruntime's session creation.

burnpy runs each model three ways: eager on ``CpuBackend``; ``bp.compile`` of the module
loaded on ``Capture(CpuBackend)`` (one recorded graph replayed: no interpreter, module or
Tensor code per call); and compiled on ``Capture(Fusion(CpuBackend))`` (elementwise runs
replayed as fused kernels). onnxruntime runs with ``intra_op_num_threads=1`` and
``inter_op_num_threads=1`` (in the calling thread); burnpy with one BLAS and numba thread.
Rounds alternate the candidates (the order rotated each round), medians of wall time and of
the calling thread's CPU time (``time.thread_time``, steady on a loaded machine); prints each
burnpy / onnxruntime speed ratio (target >= 1.0x). ``--profile`` prints the cProfile (by own
time) of the compiled replay per model. Run: ``.venv/bin/python benchmarks/onnx_models.py``.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import cProfile  # noqa: E402
import functools  # noqa: E402
import pstats  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402

import _timing  # noqa: E402 - pins glibc's allocator only when asked (BURNPY_BENCH_PIN_MALLOC)
import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnxruntime as ort  # type: ignore[import-untyped]  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import transformers as tf  # noqa: E402

import burnpy as bp  # noqa: E402
import burnpy.onnx  # noqa: E402
from burnpy.capture import Capture  # noqa: E402
from burnpy.fusion import Fusion  # noqa: E402
from burnpy.tensor import Tensor  # noqa: E402
from burnpy_cpu import CpuBackend  # noqa: E402

#: burnpy's candidates: a name, the backend the model loads on, whether it is compiled.
OURS = (("burnpy eager CpuBackend", CpuBackend, False),
        ("burnpy compiled Capture(Cpu)", Capture(CpuBackend), True),
        ("burnpy compiled +Fusion", Capture(Fusion(CpuBackend)), True))
THEIRS = "onnxruntime 1 thread"


class BertOutputs(torch.nn.Module):
    """transformers' BERT called with keywords, returning its two tensors (the exporter passes
    positional arguments, and wants tensors out)."""

    def __init__(self, bert: torch.nn.Module) -> None:
        super().__init__()
        self.bert = bert

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, ...]:
        out = self.bert(input_ids=ids, attention_mask=mask)
        return out.last_hidden_state, out.pooler_output


class BasicBlock(torch.nn.Module):
    """ResNet's basic block: two 3x3 convs with batch norm and a projected shortcut when the
    shape changes."""

    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(cout)
        self.conv2 = torch.nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(cout)
        self.down: torch.nn.Module | None = None
        if stride != 1 or cin != cout:
            self.down = torch.nn.Sequential(torch.nn.Conv2d(cin, cout, 1, stride, bias=False),
                                            torch.nn.BatchNorm2d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
        return F.relu(y + (x if self.down is None else self.down(x)))


class ResNet18(torch.nn.Module):
    """ResNet-18's layout: a 7x7 stem, four stages of two basic blocks, a linear head."""

    def __init__(self, classes: int = 1000) -> None:
        super().__init__()
        self.stem = torch.nn.Sequential(torch.nn.Conv2d(3, 64, 7, 2, 3, bias=False),
                                        torch.nn.BatchNorm2d(64), torch.nn.ReLU(),
                                        torch.nn.MaxPool2d(3, 2, 1))
        blocks, cin = [], 64
        for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            blocks += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
            cin = cout
        self.blocks = torch.nn.Sequential(*blocks)
        self.fc = torch.nn.Linear(512, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.blocks(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def export(model: torch.nn.Module, example: tuple[torch.Tensor, ...], path: Path,
           names: list[str], dynamic: dict[str, dict[int, str]]) -> None:
    """``model`` in eval mode to ``path`` with the TorchScript exporter, opset 17."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model.eval(), example, str(path), dynamo=False, opset_version=17,
                          input_names=names, dynamic_axes=dynamic)


def bert_model(folder: Path, args: argparse.Namespace) -> tuple[Path, list[np.ndarray], str]:
    """The exported BERT, its inputs (the later rows padded) and a description."""
    torch.manual_seed(0)
    config = tf.BertConfig(hidden_size=args.hidden, num_hidden_layers=args.layers,
                           num_attention_heads=args.hidden // 64,
                           intermediate_size=4 * args.hidden)
    bert = tf.BertModel(config).eval()
    bert.set_attn_implementation("eager")
    rng = np.random.default_rng(0)
    ids = rng.integers(1, config.vocab_size, (args.batch, args.length)).astype(np.int64)
    mask = np.ones_like(ids)
    for row in range(1, args.batch):
        mask[row, args.length - 8 * row:] = 0
    path = folder / "bert.onnx"
    axes = {0: "batch", 1: "seq"}
    export(BertOutputs(bert), (torch.from_numpy(ids), torch.from_numpy(mask)), path,
           ["input_ids", "attention_mask"], {"input_ids": axes, "attention_mask": axes})
    what = (f"BERT ({args.layers} layers, hidden {args.hidden}, {args.hidden // 64} heads) "
            f"with the pooler, batch {args.batch} x {args.length} tokens padded")
    return path, [ids, mask], what


def resnet_model(folder: Path, args: argparse.Namespace) -> tuple[Path, list[np.ndarray], str]:
    """The exported ResNet-18 (batch norm statistics randomized), its images, a description."""
    torch.manual_seed(0)
    model = ResNet18().eval()
    with torch.no_grad():
        for layer in model.modules():
            if isinstance(layer, torch.nn.BatchNorm2d):
                assert layer.running_mean is not None and layer.running_var is not None
                layer.running_mean.uniform_(-0.1, 0.1)
                layer.running_var.uniform_(0.5, 1.5)
    x = np.random.default_rng(0).standard_normal(
        (args.images, 3, args.size, args.size)).astype(np.float32)
    path = folder / "resnet.onnx"
    export(model, (torch.from_numpy(x),), path, ["images"], {"images": {0: "batch"}})
    return path, [x], f"ResNet-18, {args.images} images of {args.size}x{args.size}"


def session(path: Path) -> ort.InferenceSession:
    """An onnxruntime CPU session on one thread."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def timed(fn: Callable[[], object]) -> tuple[float, float]:
    """Wall and calling-thread CPU seconds of one call of ``fn``."""
    wall, cpu = time.perf_counter(), time.thread_time()
    fn()
    return time.perf_counter() - wall, time.thread_time() - cpu


def burnpy_runner(path: Path, backend: type, compiled: bool,
                  inputs: list[np.ndarray]) -> Callable[[], list[np.ndarray]]:
    """A call of the imported model (compiled, or eager) on ``inputs``, outputs on the host."""
    module = burnpy.onnx.load(path, backend=backend)
    fn = bp.compile(module, fullgraph=True) if compiled else module
    tensors = [Tensor.from_data(a, backend=backend) for a in inputs]

    def run() -> list[np.ndarray]:
        result = fn(*tensors)
        outs = result if isinstance(result, tuple) else (result,)
        return [o.to_numpy() for o in outs if o is not None]

    return run


def compare(path: Path, inputs: list[np.ndarray], what: str, args: argparse.Namespace) -> float:
    """Time burnpy (eager, compiled, compiled with fusion) against onnxruntime on ``inputs``;
    print the figures and return the compiled / onnxruntime wall-time speed ratio."""
    theirs = session(path)
    names = [i.name for i in theirs.get_inputs()]
    feeds = dict(zip(names, inputs, strict=True))

    def run_theirs() -> list[np.ndarray]:
        return [np.asarray(o) for o in theirs.run(None, feeds)]

    candidates = {name: burnpy_runner(path, backend, compiled, inputs)
                  for name, backend, compiled in OURS}
    expected = run_theirs()
    gaps = {}
    for name, fn in candidates.items():  # also records the compiled graphs
        fn()
        gaps[name] = max(float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-30))
                         for a, b in zip(fn(), expected, strict=True))
    candidates[THEIRS] = run_theirs
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in candidates}
    order = list(candidates)
    for r in range(args.rounds):  # alternating, the order rotated every round
        for name in order[r % len(order):] + order[:r % len(order)]:
            samples[name].append(timed(candidates[name]))
    wall = {name: statistics.median(w for w, _ in s) for name, s in samples.items()}
    cpu = {name: statistics.median(c for _, c in s) for name, s in samples.items()}
    print(f"{what}; float32; median of {args.rounds} alternating runs; "
          f"{_timing.allocator_note()}")
    print(f"  {'':30s} {'wall ms':>9s} {'thread CPU ms':>14s}  {'ORT/ours wall':>13s} "
          f"{'ORT/ours CPU':>12s}  max |diff| / max |ORT|")
    for name in candidates:
        ratios = (f"{wall[THEIRS] / wall[name]:12.2f}x {cpu[THEIRS] / cpu[name]:11.2f}x"
                  if name != THEIRS else "")
        gap = f"  {gaps[name]:.1e}" if name in gaps else ""
        print(f"  {name:30s} {wall[name] * 1e3:9.2f} {cpu[name] * 1e3:14.2f}  {ratios}{gap}")
    if args.profile:
        compiled = candidates[OURS[1][0]]
        profile = cProfile.Profile()
        profile.runcall(lambda: [compiled() for _ in range(3)])
        pstats.Stats(profile).sort_stats("tottime").print_stats(25)
    return wall[THEIRS] / wall[OURS[1][0]]


def import_time(folder: Path, args: argparse.Namespace) -> None:
    """Print the median time of ``bp.onnx.load`` of a ~100 MB MLP, inline and external."""
    rng = np.random.default_rng(0)
    width, layers = 2048, 6
    x = "x"
    nodes, weights = [], []
    for i in range(layers):
        weights += [onnx.numpy_helper.from_array(
            rng.standard_normal((width, width), dtype=np.float32) * 0.02, f"fc{i}.weight"),
            onnx.numpy_helper.from_array(np.zeros(width, np.float32), f"fc{i}.bias")]
        nodes += [onnx.helper.make_node("MatMul", [x, f"fc{i}.weight"], [f"m{i}"]),
                  onnx.helper.make_node("Add", [f"m{i}", f"fc{i}.bias"], [f"a{i}"]),
                  onnx.helper.make_node("Relu", [f"a{i}"], [f"h{i}"])]
        x = f"h{i}"
    graph = onnx.helper.make_graph(
        nodes, "mlp",
        [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["batch", width])],
        [onnx.helper.make_tensor_value_info(x, onnx.TensorProto.FLOAT, ["batch", width])],
        weights)
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 17)])
    inline, external = folder / "mlp.onnx", folder / "mlp_external.onnx"
    onnx.save(model, str(inline))
    onnx.save(model, str(external), save_as_external_data=True, location="mlp_external.data")
    size = inline.stat().st_size
    print(f"import of a {size / 1e6:.0f} MB float32 MLP ({layers} layers {width}x{width}); "
          f"median of {args.rounds} loads")

    def timed(fn: Callable[[], object]) -> float:
        samples = []
        for _ in range(args.rounds):
            start = time.perf_counter()
            fn()
            samples.append(time.perf_counter() - start)
        return statistics.median(samples)

    for label, path in (("weights in the .onnx file", inline),
                        ("weights in external data", external)):
        ours = timed(functools.partial(burnpy.onnx.load, path, backend=CpuBackend))
        parse = timed(functools.partial(onnx.load, str(path)))
        runtime = timed(functools.partial(session, path))
        print(f"  {label}: bp.onnx.load {ours:.3f} s (target < 2 s); onnx.load alone "
              f"{parse:.3f} s; onnxruntime session {runtime:.3f} s")


#: The exported models timed against onnxruntime, by name.
EXPORTED = {"bert": bert_model, "resnet": resnet_model}
#: What the command can run: the models, and ``import``, the load-time check.
PARTS = [*EXPORTED, "import"]


def main() -> None:
    """Run the parts named on the command line."""
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("models", nargs="*", metavar="MODEL",
                   help=f"what to run, of {', '.join(PARTS)} (default: all)")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--batch", type=int, default=4, help="BERT's sequences")
    p.add_argument("--length", type=int, default=128, help="BERT's tokens per sequence")
    p.add_argument("--layers", type=int, default=4, help="BERT's layers")
    p.add_argument("--hidden", type=int, default=256, help="BERT's width (64 per head)")
    p.add_argument("--images", type=int, default=1, help="ResNet's batch")
    p.add_argument("--size", type=int, default=224, help="ResNet's image side")
    p.add_argument("--profile", action="store_true", help="print burnpy's cProfile")
    args = p.parse_args()
    unknown = sorted(set(args.models) - set(PARTS))
    if unknown:
        p.error(f"unknown models {unknown}; choose from {PARTS}")
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        for model in args.models or PARTS:
            if model == "import":
                import_time(folder, args)
            else:
                compare(*EXPORTED[model](folder, args), args)


if __name__ == "__main__":
    main()
