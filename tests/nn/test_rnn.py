"""The recurrent layers and ``nn.utils.rnn`` against torch 2.13 with torch's weights loaded:
forward in float32 and float64, and every parameter's, the input's and the initial states'
gradients in float64, for every configuration (layers, directions, ``batch_first``, ``bias``,
``proj_size``, given initial states, unbatched and packed inputs)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.utils.rnn as trnn

import burnpy.nn as nn
from burnpy import Autodiff, BurnpyError, Tensor
from burnpy.backend.errors import BackendMismatchError, InvalidArgumentError, ShapeError
from burnpy.nn.rnn import _step, lstm_recurrence
from burnpy.nn.utils import rnn as brnn
from burnpy_cpu import CpuBackend

B = Autodiff(CpuBackend)
T, N, IN, H = 5, 3, 4, 6
LENGTHS = [3, 5, 2]  # unsorted, distinct: packed data and permutations are unique

MODES = [("RNN", {}), ("RNN", {"nonlinearity": "relu"}), ("LSTM", {}), ("GRU", {})]
CONFIGS: list[dict[str, Any]] = [
    {},
    {"num_layers": 2, "bidirectional": True},
    {"num_layers": 2, "batch_first": True, "h0": True},
    {"bias": False, "bidirectional": True, "h0": True},
    {"num_layers": 2, "bidirectional": True, "unbatched": True, "h0": True},
    {"num_layers": 2, "bidirectional": True, "packed": "unsorted", "h0": True},
    {"packed": "sorted"},
    {"num_layers": 2, "batch_first": True, "packed": "sorted", "bidirectional": True},
]
LSTM_PROJ: list[dict[str, Any]] = [
    {"proj_size": 2},
    {"proj_size": 3, "num_layers": 2, "bidirectional": True, "h0": True},
    {"proj_size": 3, "num_layers": 2, "bidirectional": True, "packed": "unsorted", "h0": True},
    {"proj_size": 2, "unbatched": True, "h0": True, "batch_first": True},
]
CASES = [(name, {**kw, **cfg}) for name, kw in MODES for cfg in CONFIGS] + [
    ("LSTM", cfg) for cfg in LSTM_PROJ]


def _ids(case: tuple[str, dict[str, Any]]) -> str:
    return case[0] + "-" + "-".join(f"{k}={v}" for k, v in case[1].items())


def _pair(name: str, kw: dict[str, Any], dtype: torch.dtype) -> tuple[Any, Any]:
    """A torch module and a burnpy module holding its weights."""
    ctor = {k: v for k, v in kw.items() if k not in ("h0", "unbatched", "packed")}
    theirs = getattr(torch.nn, name)(IN, H, **ctor).to(dtype)
    ours = getattr(nn, name)(IN, H, **ctor, backend=B, dtype=str(dtype).split(".")[1])
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict(theirs.state_dict())
    return theirs, ours


def _ours(t: torch.Tensor) -> Tensor:
    out = Tensor.from_data(t.detach().numpy(), backend=B)
    return out.require_grad() if t.requires_grad else out


def _run_both(theirs: Any, ours: Any, name: str, kw: dict[str, Any], dtype: torch.dtype
              ) -> tuple[list[torch.Tensor], list[Tensor], list[torch.Tensor], list[Tensor]]:
    """Both modules' outputs (output data, h_n, c_n) and their differentiable inputs."""
    gen = torch.Generator().manual_seed(0)
    dirs = 2 if kw.get("bidirectional") else 1
    layers = kw.get("num_layers", 1) * dirs
    out_size = kw.get("proj_size") or H
    unbatched = kw.get("unbatched", False)
    batch_first = kw.get("batch_first", False)
    shape = (T, IN) if unbatched else ((N, T, IN) if batch_first else (T, N, IN))
    x = torch.randn(*shape, generator=gen, dtype=dtype, requires_grad=True)
    leaves_t, leaves_b = [x], [_ours(x)]
    hx_t: Any = None
    hx_b: Any = None
    if kw.get("h0"):
        state = (layers, out_size) if unbatched else (layers, N, out_size)
        h0 = torch.randn(*state, generator=gen, dtype=dtype, requires_grad=True)
        leaves_t.append(h0)
        leaves_b.append(_ours(h0))
        hx_t, hx_b = h0, leaves_b[-1]
        if name == "LSTM":
            cell = (*state[:-1], H)
            c0 = torch.randn(*cell, generator=gen, dtype=dtype, requires_grad=True)
            leaves_t.append(c0)
            leaves_b.append(_ours(c0))
            hx_t, hx_b = (h0, c0), (hx_b, leaves_b[-1])
    packed = kw.get("packed")
    if packed:
        lengths = sorted(LENGTHS, reverse=True) if packed == "sorted" else LENGTHS
        sorted_ = packed == "sorted"
        inp_t: Any = trnn.pack_padded_sequence(x, torch.tensor(lengths), batch_first,
                                               enforce_sorted=sorted_)
        inp_b: Any = brnn.pack_padded_sequence(leaves_b[0], lengths, batch_first,
                                               enforce_sorted=sorted_)
        np.testing.assert_array_equal(inp_b.batch_sizes.to_numpy(),
                                      inp_t.batch_sizes.numpy())
    else:
        inp_t, inp_b = x, leaves_b[0]
    y_t, s_t = theirs(inp_t, hx_t)
    y_b, s_b = ours(inp_b, hx_b)
    if packed:
        assert isinstance(y_b, brnn.PackedSequence)
        np.testing.assert_array_equal(y_b.batch_sizes.to_numpy(), y_t.batch_sizes.numpy())
        y_t, y_b = y_t.data, y_b.data
    outs_t = [y_t, *(s_t if isinstance(s_t, tuple) else (s_t,))]
    outs_b = [y_b, *(s_b if isinstance(s_b, tuple) else (s_b,))]
    return outs_t, outs_b, leaves_t, leaves_b


def _grads(outs_t: list[torch.Tensor], outs_b: list[Tensor], leaves_t: list[torch.Tensor],
           leaves_b: list[Tensor], theirs: list[torch.Tensor], ours: list[Tensor]) -> None:
    rng = np.random.default_rng(1)
    weights = [rng.standard_normal(tuple(o.shape)) for o in outs_t]
    loss_t = sum((o * torch.from_numpy(w)).sum() for o, w in zip(outs_t, weights, strict=True))
    loss_b = outs_b[0] * Tensor.from_data(weights[0], backend=B)
    total = loss_b.sum()
    for o, w in zip(outs_b[1:], weights[1:], strict=True):
        total = total + (o * Tensor.from_data(w, backend=B)).sum()
    assert isinstance(loss_t, torch.Tensor)
    loss_t.backward()
    grads = total.backward()
    for t, b in zip([*leaves_t, *theirs], [*leaves_b, *ours], strict=True):
        got = b.grad(grads)
        assert t.grad is not None and got is not None
        np.testing.assert_allclose(got.to_numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_forward_and_gradients_match_torch_float64(case: tuple[str, dict[str, Any]]) -> None:
    name, kw = case
    theirs, ours = _pair(name, kw, torch.float64)
    outs_t, outs_b, leaves_t, leaves_b = _run_both(theirs, ours, name, kw, torch.float64)
    assert len(outs_t) == len(outs_b)
    for t, b in zip(outs_t, outs_b, strict=True):
        assert b.shape == tuple(t.shape)
        np.testing.assert_allclose(b.to_numpy(), t.detach().numpy(), rtol=1e-12, atol=1e-14)
    params_t = [p for _, p in theirs.named_parameters()]
    params_b = [p for _, p in ours.named_parameters()]
    assert len(params_t) == len(params_b)
    _grads(outs_t, outs_b, leaves_t, leaves_b, params_t, params_b)


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_forward_matches_torch_float32(case: tuple[str, dict[str, Any]]) -> None:
    name, kw = case
    theirs, ours = _pair(name, kw, torch.float32)
    outs_t, outs_b, _, _ = _run_both(theirs, ours, name, kw, torch.float32)
    for t, b in zip(outs_t, outs_b, strict=True):
        assert b.dtype.name == "float32"
        np.testing.assert_allclose(b.to_numpy(), t.detach().numpy(), rtol=1e-5, atol=1e-6)


CELLS = [("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu"}), ("LSTMCell", {}),
         ("GRUCell", {}), ("GRUCell", {"bias": False}), ("LSTMCell", {"bias": False})]


@pytest.mark.parametrize("unbatched", [False, True])
@pytest.mark.parametrize("given", [False, True])
@pytest.mark.parametrize(("name", "kw"), CELLS)
def test_cells_match_torch(name: str, kw: dict[str, Any], given: bool,
                           unbatched: bool) -> None:
    gen = torch.Generator().manual_seed(2)
    theirs = getattr(torch.nn, name)(IN, H, **kw).double()
    ours = getattr(nn, name)(IN, H, **kw, backend=B, dtype="float64")
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict(theirs.state_dict())
    batch = () if unbatched else (N,)
    x = torch.randn(*batch, IN, generator=gen, dtype=torch.float64, requires_grad=True)
    leaves_t, leaves_b = [x], [_ours(x)]
    hx_t: Any = None
    hx_b: Any = None
    if given:
        for _ in range(2 if name == "LSTMCell" else 1):
            s = torch.randn(*batch, H, generator=gen, dtype=torch.float64, requires_grad=True)
            leaves_t.append(s)
            leaves_b.append(_ours(s))
        hx_t = tuple(leaves_t[1:]) if name == "LSTMCell" else leaves_t[1]
        hx_b = tuple(leaves_b[1:]) if name == "LSTMCell" else leaves_b[1]
    out_t, out_b = theirs(x, hx_t), ours(leaves_b[0], hx_b)
    outs_t = list(out_t) if isinstance(out_t, tuple) else [out_t]
    outs_b = list(out_b) if isinstance(out_b, tuple) else [out_b]
    for t, b in zip(outs_t, outs_b, strict=True):
        assert b.shape == tuple(t.shape)
        np.testing.assert_allclose(b.to_numpy(), t.detach().numpy(), rtol=1e-12, atol=1e-14)
    _grads(outs_t, outs_b, leaves_t, leaves_b, list(theirs.parameters()),
           [p for _, p in ours.named_parameters()])


def test_parameter_names_shapes_and_init_are_torchs() -> None:
    """torch's names and order (layer, direction, then w_ih, w_hh, b_ih, b_hh, w_hr), shapes,
    and values spread over U(-1/sqrt(hidden), 1/sqrt(hidden))."""
    theirs = torch.nn.LSTM(IN, 32, num_layers=2, bidirectional=True, proj_size=5)
    ours = nn.LSTM(IN, 32, num_layers=2, bidirectional=True, proj_size=5)
    want = {k: tuple(v.shape) for k, v in theirs.state_dict().items()}
    assert {k: v.shape for k, v in ours.state_dict().items()} == want
    assert list(ours.state_dict()) == list(want)
    values = np.concatenate([v.to_numpy().ravel() for v in ours.state_dict().values()])
    bound = 1 / math.sqrt(32)
    assert np.abs(values).max() <= bound
    assert np.abs(values).max() > 0.95 * bound and abs(values.mean()) < 0.05 * bound
    gru = nn.GRU(IN, H, bias=False)
    assert list(gru.state_dict()) == list(torch.nn.GRU(IN, H, bias=False).state_dict())
    assert len(ours.all_weights) == 4 and len(ours.all_weights[0]) == 5
    before = {k: v.to_numpy() for k, v in ours.state_dict().items()}
    ours.flatten_parameters()  # torch's cuDNN packing: ported code calls it, nothing changes
    assert all(np.array_equal(v.to_numpy(), before[k]) for k, v in ours.state_dict().items())


def test_dropout_between_layers_in_training_only() -> None:
    """p=1 zeroes the second layer's input in torch and here (deterministic), only while
    training; eval ignores dropout."""
    for train in (True, False):
        theirs, ours = _pair("GRU", {"num_layers": 2, "dropout": 1.0}, torch.float64)
        theirs.train(train)
        ours.train(train)
        x = torch.randn(T, N, IN, dtype=torch.float64)
        (y_t, h_t), (y_b, h_b) = theirs(x), ours(_ours(x))
        np.testing.assert_allclose(y_b.to_numpy(), y_t.detach().numpy(), rtol=1e-12)
        np.testing.assert_allclose(h_b.to_numpy(), h_t.detach().numpy(), rtol=1e-12)
    with pytest.warns(UserWarning, match="num_layers greater than 1"):
        nn.LSTM(IN, H, dropout=0.2)


def test_dropout_draws_a_mask_while_training() -> None:
    ours = nn.LSTM(IN, H, num_layers=2, dropout=0.5)
    x = Tensor.from_data(np.random.default_rng(0).standard_normal((T, N, IN)), dtype="float32")
    ours.eval()
    y_eval = ours(x)[0].to_numpy()
    ours.train()
    assert not np.allclose(ours(x)[0].to_numpy(), y_eval)


def test_pad_sequence_matches_torch() -> None:
    seqs = [torch.randn(n, 2, dtype=torch.float64) for n in (3, 5, 1)]
    ours = [Tensor.from_data(s.numpy()) for s in seqs]
    for batch_first in (False, True):
        for side in ("right", "left"):
            want = trnn.pad_sequence(seqs, batch_first, -1.5, side)
            got = brnn.pad_sequence(ours, batch_first, -1.5, side)
            np.testing.assert_array_equal(got.to_numpy(), want.numpy())
    with pytest.raises(InvalidArgumentError, match="padding_side"):
        brnn.pad_sequence(ours, padding_side="middle")
    with pytest.raises(ShapeError, match=r"sequence 1 has shape \(2, 3\)"):
        brnn.pad_sequence([Tensor.zeros((2, 2)), Tensor.zeros((2, 3))])


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("lengths", [[5, 3, 3, 1], [2, 5, 1, 4]])
def test_pack_and_pad_round_trip_match_torch(batch_first: bool, lengths: list[int]) -> None:
    x = torch.randn(*((4, 5) if batch_first else (5, 4)), 2, dtype=torch.float64,
                    requires_grad=True)
    xb = _ours(x)
    sorted_ = lengths == sorted(lengths, reverse=True)
    p_t = trnn.pack_padded_sequence(x, torch.tensor(lengths), batch_first, sorted_)
    p_b = brnn.pack_padded_sequence(xb, lengths, batch_first, sorted_)
    np.testing.assert_array_equal(p_b.data.to_numpy(), p_t.data.detach().numpy())
    np.testing.assert_array_equal(p_b.batch_sizes.to_numpy(), p_t.batch_sizes.numpy())
    for ours, theirs in ((p_b.sorted_indices, p_t.sorted_indices),
                         (p_b.unsorted_indices, p_t.unsorted_indices)):
        assert (ours is None) == (theirs is None)
        if ours is not None and theirs is not None:
            np.testing.assert_array_equal(ours.to_numpy(), theirs.numpy())
    y_t, len_t = trnn.pad_packed_sequence(p_t, batch_first, 7.0, total_length=6)
    y_b, len_b = brnn.pad_packed_sequence(p_b, batch_first, 7.0, total_length=6)
    np.testing.assert_array_equal(y_b.to_numpy(), y_t.detach().numpy())
    np.testing.assert_array_equal(len_b.to_numpy(), len_t.numpy())
    w = np.random.default_rng(0).standard_normal(tuple(y_t.shape))
    (y_t * torch.from_numpy(w)).sum().backward()
    grads = (y_b * Tensor.from_data(w, backend=B)).sum().backward()
    got = xb.grad(grads)
    assert x.grad is not None and got is not None
    np.testing.assert_array_equal(got.to_numpy(), x.grad.numpy())
    unpacked = brnn.unpack_sequence(p_b)
    for ours_seq, theirs_seq in zip(unpacked, trnn.unpack_sequence(p_t), strict=True):
        np.testing.assert_array_equal(ours_seq.to_numpy(), theirs_seq.detach().numpy())


def test_pack_sequence_and_unpad_match_torch() -> None:
    seqs = [torch.randn(n, 3, dtype=torch.float64) for n in (2, 4, 3)]
    p_t = trnn.pack_sequence(seqs, enforce_sorted=False)
    p_b = brnn.pack_sequence([Tensor.from_data(s.numpy()) for s in seqs], enforce_sorted=False)
    np.testing.assert_array_equal(p_b.data.to_numpy(), p_t.data.numpy())
    padded = brnn.pad_sequence([Tensor.from_data(s.numpy()) for s in seqs], batch_first=True)
    for ours, theirs in zip(brnn.unpad_sequence(padded, [2, 4, 3], batch_first=True), seqs,
                            strict=True):
        np.testing.assert_array_equal(ours.to_numpy(), theirs.numpy())
    perm = brnn.invert_permutation(Tensor.from_data([2, 0, 1]))
    assert perm is not None and perm.tolist() == [1, 2, 0]


def test_packing_refuses_bad_lengths() -> None:
    x = Tensor.zeros((4, 3, 2))
    with pytest.raises(InvalidArgumentError, match=r"sorted in decreasing order.*enforce_sor"):
        brnn.pack_padded_sequence(x, [2, 4, 1])
    with pytest.raises(InvalidArgumentError, match=r"in \[1, 4\]"):
        brnn.pack_padded_sequence(x, [5, 2, 1])
    with pytest.raises(ShapeError, match="2 lengths for a batch of 3"):
        brnn.pack_padded_sequence(x, [4, 2])
    packed = brnn.pack_padded_sequence(x, [4, 2, 1])
    with pytest.raises(InvalidArgumentError, match="total_length=3"):
        brnn.pad_packed_sequence(packed, total_length=3)


def test_bad_input_names_the_module_and_shapes() -> None:
    lstm = nn.LSTM(IN, H, num_layers=2)
    x = Tensor.zeros((T, N, IN))
    with pytest.raises(ShapeError, match=r"LSTM\(4, 6, num_layers=2\).*Expected 4, got 5"):
        lstm(Tensor.zeros((T, N, 5)))
    with pytest.raises(ShapeError, match=r"LSTM\(4, 6, num_layers=2\).*2-d or 3-d.*\(1, 5, "):
        lstm(Tensor.zeros((1, T, N, IN)))
    with pytest.raises(ShapeError, match=r"h_0 of shape \(2, 3, 6\).*got \(2, 2, 6\)"):
        lstm(x, (Tensor.zeros((2, 2, H)), Tensor.zeros((2, N, H))))
    with pytest.raises(ShapeError, match=r"c_0 of shape \(2, 3, 6\).*got \(1, 3, 6\)"):
        lstm(x, (Tensor.zeros((2, N, H)), Tensor.zeros((1, N, H))))
    with pytest.raises(InvalidArgumentError, match=r"hx must be a tuple \(h_0, c_0\)"):
        lstm(x, Tensor.zeros((2, N, H)))
    gru = nn.GRU(IN, H, bidirectional=True)
    with pytest.raises(ShapeError, match=r"GRU.*hx of shape \(2, 6\) \(unbatched.*\(2, 3, 6\)"):
        gru(Tensor.zeros((T, IN)), Tensor.zeros((2, N, H)))
    with pytest.raises(ShapeError, match=r"hx of shape \(2, 3, 6\).*got \(1, 3, 6\)"):
        gru(x, Tensor.zeros((1, N, H)))
    with pytest.raises(BurnpyError, match=r"float64.*float32"):
        gru(Tensor.zeros((T, N, IN), dtype="float64"))
    cell = nn.LSTMCell(IN, H)
    with pytest.raises(ShapeError, match=r"LSTMCell\(4, 6\).*\(3, 6\).*got \(2, 6\)"):
        cell(Tensor.zeros((N, IN)), (Tensor.zeros((2, H)), Tensor.zeros((N, H))))
    with pytest.raises(ShapeError, match=r"GRUCell\(4, 6\).*\[batch, 4\].*\(3, 5\)"):
        nn.GRUCell(IN, H)(Tensor.zeros((N, 5)))
    with pytest.raises(InvalidArgumentError, match="proj_size is only supported for LSTM"):
        nn.RNNBase("GRU", IN, H, proj_size=2)
    with pytest.raises(InvalidArgumentError, match="proj_size must be in"):
        nn.LSTM(IN, H, proj_size=H)
    with pytest.raises(InvalidArgumentError, match="dropout should be a number"):
        nn.GRU(IN, H, dropout=1.5)
    with pytest.raises(InvalidArgumentError, match="nonlinearity 'gelu'"):
        nn.RNN(IN, H, nonlinearity="gelu")


def test_states_and_inputs_on_another_backend_or_empty_are_refused() -> None:
    lstm = nn.LSTM(IN, H, backend=B)
    x = Tensor.from_data(np.zeros((T, N, IN), np.float32), backend=B)
    plain = Tensor.zeros((1, N, H))
    with pytest.raises(BackendMismatchError, match=r"LSTM\(4, 6\): h_0 is on"):
        lstm(x, (plain, plain))
    with pytest.raises(BackendMismatchError, match=r"LSTM\(4, 6\): input on"):
        lstm(Tensor.zeros((T, N, IN)))
    cell = nn.LSTMCell(IN, H, backend=B)
    with pytest.raises(BackendMismatchError, match=r"LSTMCell\(4, 6\): hx on"):
        cell(Tensor.from_data(np.zeros((N, IN), np.float32), backend=B),
             (Tensor.zeros((N, H)), Tensor.zeros((N, H))))
    with pytest.raises(ShapeError, match=r"sequence length larger than 0.*\(0, 3, 4\)"):
        lstm(Tensor.from_data(np.zeros((0, N, IN), np.float32), backend=B))
    with pytest.raises(ShapeError, match=r"lstm_recurrence: gates_x \(2, 3, 24\) needs "
                                         r"weight_hh \(24, 6\)"):
        lstm_recurrence(Tensor.zeros((2, N, 4 * H)), Tensor.zeros((4 * H, 5)),
                        Tensor.zeros((N, H)), Tensor.zeros((N, H)))


def test_the_fused_recurrence_matches_the_step_by_step_composition() -> None:
    """The backend's ``lstm`` op (CpuBackend's compiled loop, float32) against the module's
    step-by-step Tensor composition (the path packed input takes), forward and backward."""
    rng = np.random.default_rng(3)
    gx, w, h0, c0 = (Tensor.from_data(rng.standard_normal(s).astype(np.float32) * 0.7,
                                      backend=B).require_grad()
                     for s in ((7, N, 4 * H), (4 * H, H), (N, H), (N, H)))
    fused = lstm_recurrence(gx, w, h0, c0)
    h, c = h0, c0
    steps = []
    for t in range(7):
        h, c_next = _step("LSTM", gx[t], h, c, w, None, None)
        assert c_next is not None
        c = c_next
        steps.append(h)
    composed = Tensor.stack([*steps, c], 0)
    np.testing.assert_allclose(fused.to_numpy(), composed.to_numpy(), rtol=1e-5, atol=1e-6)
    weights = Tensor.from_data(rng.standard_normal(fused.shape).astype(np.float32), backend=B)
    g_fused = (fused * weights).sum().backward()
    g_composed = (composed * weights).sum().backward()
    for leaf in (gx, w, h0, c0):
        a, b = leaf.grad(g_fused), leaf.grad(g_composed)
        assert a is not None and b is not None
        np.testing.assert_allclose(a.to_numpy(), b.to_numpy(), rtol=1e-4, atol=1e-5)


def test_the_recurrence_leaves_its_operands_unchanged() -> None:
    """A one-sequence batch: ``h0 [1, H]`` transposed is contiguous too, and must still be
    copied before the loop writes the running state."""
    rng = np.random.default_rng(4)
    values = [rng.standard_normal(s) for s in ((4, 1, 4 * H), (4 * H, H), (1, H), (1, H))]
    operands = [Tensor.from_data(v) for v in values]
    lstm_recurrence(*operands)
    for t, v in zip(operands, values, strict=True):
        np.testing.assert_array_equal(t.to_numpy(), v)
