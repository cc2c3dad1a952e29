"""Record files: round trips (bfloat16 included), atomic writes, clear errors on damage."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import safetensors.numpy
import torch
from safetensors.torch import load_file

import burnpy as bp
import burnpy.nn as nn
from burnpy import optim, record
from burnpy.autodiff import Autodiff
from burnpy.backend.errors import RecordError
from burnpy_cpu import CpuBackend

AD = Autodiff(CpuBackend)


def _model(dtype: bp.DType = bp.float32, backend: type = CpuBackend) -> nn.Module:
    return nn.Sequential(nn.Conv2d(1, 3, 3, backend=backend, dtype=dtype),
                         nn.BatchNorm2d(3, backend=backend, dtype=dtype),
                         nn.Linear(4, 2, backend=backend, dtype=dtype))


def _same(a: nn.Module, b: nn.Module) -> None:
    sa, sb = a.state_dict(), b.state_dict()
    assert list(sa) == list(sb)
    for name in sa:
        assert sa[name].dtype is sb[name].dtype, name
        np.testing.assert_array_equal(sa[name].to_numpy(), sb[name].to_numpy(), err_msg=name)


@pytest.mark.parametrize("dtype", [bp.float32, bp.float64, bp.float16, bp.bfloat16])
def test_module_round_trip_keeps_dtypes(tmp_path: Path, dtype: bp.DType) -> None:
    model = _model(dtype)
    model[1].num_batches_tracked = model[1].num_batches_tracked + 7
    path = model.save(tmp_path / "m.safetensors")
    loaded = _model(dtype).load(path)
    _same(model, loaded)
    assert int(loaded[1].num_batches_tracked.item()) == 7
    assert [p.name for p in tmp_path.iterdir()] == ["m.safetensors"]


def test_bfloat16_file_is_plain_safetensors(tmp_path: Path) -> None:
    model = _model(bp.bfloat16)
    record.save(model, tmp_path / "m.safetensors")
    tensors = load_file(tmp_path / "m.safetensors")
    assert tensors["0.weight"].dtype == torch.bfloat16
    np.testing.assert_array_equal(tensors["0.weight"].float().numpy(),
                                  model[0].weight.to_numpy().astype(np.float32))


def test_autodiff_module_loads_tracked(tmp_path: Path) -> None:
    source = _model()
    source.save(tmp_path / "m.safetensors")
    target = _model(backend=AD).load(tmp_path / "m.safetensors")
    assert target.backend is AD and all(p.is_require_grad() for p in target.parameters())
    _same(source, target.valid())


def test_optimizer_and_scheduler_round_trip(tmp_path: Path) -> None:
    model = nn.Linear(3, 2, backend=AD)
    opt = optim.RMSprop(lr=0.01, momentum=0.9, centered=True)
    for _ in range(3):
        loss = model(bp.Tensor.ones((4, 3), backend=AD)).square().sum()
        opt.step(model, loss.backward())
    record.save(opt, tmp_path / "opt.safetensors")
    loaded = record.load(optim.RMSprop(lr=0.01, momentum=0.9, centered=True),
                         tmp_path / "opt.safetensors")
    saved, again = opt.state_dict(), loaded.state_dict()
    assert again["steps"] == saved["steps"] == {"0": 3, "1": 3}
    for position, buffers in saved["state"].items():
        for key, t in buffers.items():
            np.testing.assert_array_equal(again["state"][position][key].to_numpy(),
                                          t.to_numpy())
    sched = optim.StepLR(0.1, 3)
    sched.step()
    record.save(sched, tmp_path / "sched.safetensors")
    again_sched = record.load(optim.StepLR(0.1, 3), tmp_path / "sched.safetensors")
    assert again_sched.last_epoch == sched.last_epoch == 1
    assert again_sched.get_last_lr() == sched.get_last_lr()


def test_mismatches_name_the_entry(tmp_path: Path) -> None:
    path = _model().save(tmp_path / "m.safetensors")
    wrong_shape = nn.Sequential(nn.Conv2d(1, 3, 3), nn.BatchNorm2d(3), nn.Linear(5, 2))
    with pytest.raises(RecordError, match=r"'2\.weight' has shape \(2, 4\) in the state"):
        wrong_shape.load(path)
    wider = _model(bp.float64).load(path)  # values are cast to the module's dtype
    assert wider[0].weight.dtype is bp.float64
    np.testing.assert_array_equal(wider[0].weight.to_numpy(),
                                  record.read_record(path).tensors["0.weight"].array)
    with pytest.raises(RecordError, match=r"missing 3\.weight, 3\.bias"):
        _model().append(nn.Linear(2, 2)).load(path)
    with pytest.raises(RecordError, match="holds a module record, not a optimizer"):
        record.load(optim.SGD(), path)
    record.save(optim.Adam(), tmp_path / "adam.safetensors")
    with pytest.raises(RecordError, match="for Adam, not SGD"):
        record.load(optim.SGD(), tmp_path / "adam.safetensors")


def test_truncated_corrupt_foreign_and_missing_files(tmp_path: Path) -> None:
    path = _model().save(tmp_path / "m.safetensors")
    payload = path.read_bytes()
    truncated = tmp_path / "truncated.safetensors"
    truncated.write_bytes(payload[:-10])
    with pytest.raises(RecordError, match="truncated or corrupt"):
        _model().load(truncated)
    flipped = bytearray(payload)
    flipped[-5] ^= 0xFF
    corrupt = tmp_path / "corrupt.safetensors"
    corrupt.write_bytes(bytes(flipped))
    with pytest.raises(RecordError, match="is corrupt \\(its checksum does not match\\)"):
        _model().load(corrupt)
    garbage = tmp_path / "garbage.safetensors"
    garbage.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00not json at all!")
    with pytest.raises(RecordError, match="truncated or corrupt"):
        _model().load(garbage)
    foreign = tmp_path / "foreign.safetensors"
    safetensors.numpy.save_file({"w": np.zeros(3, dtype=np.float32)}, foreign)
    with pytest.raises(RecordError, match="not a burnpy record"):
        _model().load(foreign)
    with pytest.raises(RecordError, match="no such record file"):
        _model().load(tmp_path / "missing.safetensors")


def test_write_is_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _model().save(tmp_path / "m.safetensors")
    before = path.read_bytes()

    def failing_replace(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError, match="disk full"):
        _model().save(path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["m.safetensors"]


def test_record_parts_and_unknown_objects() -> None:
    combined = record.Record.combine("checkpoint", {"model": record.to_record(_model())},
                                     {"epoch": 3})
    again = record.decode(record.encode(combined))
    assert again.extra["epoch"] == 3 and again.part("model").kind == "module"
    with pytest.raises(RecordError, match="no part 'optimizer'"):
        again.part("optimizer")
    with pytest.raises(RecordError, match="cannot record a dict"):
        record.to_record({})  # type: ignore[arg-type]


def test_first_release_files_still_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Version-1 records (module extra with a class name, optimizer buffers named
    ``<param>/<buffer>``, and a checkpoint holding both) load into today's objects."""
    from burnpy.record import format as fmt

    def grads(m: nn.Linear) -> bp.Gradients:
        return m(bp.Tensor.ones((4, 3), backend=AD)).square().sum().backward()

    model = nn.Linear(3, 2, backend=AD)
    opt = optim.Adam(lr=0.01)
    for _ in range(2):
        opt.step(model, grads(model))
    weights = {n: t.into_data() for n, t in model.state_dict().items()}
    state = opt.state_dict()  # parameters by position; those files named them
    names = {"0": "weight", "1": "bias"}
    buffers = {f"{names[n]}/{k}": t.into_data() for n, b in state["state"].items()
               for k, t in b.items()}
    old_module = fmt.Record("module", weights, {"type": "Linear"})
    old_opt = fmt.Record("optimizer", buffers, {
        "type": "Adam", "steps": {names[n]: s for n, s in state["steps"].items()},
        "hyperparameters": state["hyperparameters"]})
    monkeypatch.setattr(fmt, "VERSION", 1)
    fmt.write_record(tmp_path / "m.safetensors", old_module)
    fmt.write_record(tmp_path / "o.safetensors", old_opt)
    fmt.write_record(tmp_path / "c.safetensors", fmt.Record.combine(
        "checkpoint", {"model": old_module, "optimizer": old_opt}))
    monkeypatch.undo()

    # The third step of the run, from the state of today's layout: what a loaded file gives.
    expected = nn.Linear(3, 2, backend=AD)
    expected.load_state_dict(weights)
    optim.Adam(lr=0.01).load_state_dict(state).step(expected, grads(expected))

    def check(loaded_model: nn.Linear, loaded_opt: optim.Adam) -> None:
        _same(model, loaded_model)
        loaded_opt.step(loaded_model, grads(loaded_model))  # the names find their moments
        assert set(loaded_opt.steps.values()) == {3}
        _same(expected, loaded_model)

    check(nn.Linear(3, 2, backend=AD).load(tmp_path / "m.safetensors"),
          record.load(optim.Adam(lr=0.01), tmp_path / "o.safetensors"))
    both = fmt.read_record(tmp_path / "c.safetensors")
    check(record.from_record(nn.Linear(3, 2, backend=AD), both.part("model")),
          record.from_record(optim.Adam(lr=0.01), both.part("optimizer")))
