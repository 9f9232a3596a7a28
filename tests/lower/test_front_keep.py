"""A decoder layer's front (rmsnorm, q / k / v projections, per-head norms, RoPE) hands q, k and
v to the causal attention on chip (lower/front_keep.py): they never reach HBM. Bounds are HBM
byte counts per tensor (perf/traffic.py); numerics on the NKI interpreter and the simulator
against float64 NumPy (bf16 tolerance: the program's q, k, v, P and output are bf16)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import MatmulOp
from nkigen_lite.perf.traffic import bytes_by_tensor
from nkigen_lite.testing import assert_close
from tests.trace.numpy_workloads import softmax

from .qwen3_kernels import qwen3_layer_kernel
from .test_front_pipeline import HD, HEADS, KV, NAMES, _inputs, _reference, front

BF16 = ml_dtypes.bfloat16
# bf16 output tolerance doubled: q and k pass three bf16 roundings in the program (the head
# norm, RoPE's products, their sum) that the reference leaves out, and a row with few keys
# turns a score error into a probability error of the same size (2 keys: up to 1.5e-2)
TOL = {"rtol": 2e-2, "atol": 2e-2}


def _attend(q, k, v):
    """Causal GQA attention as the Qwen3 layer writes it: bf16 matmuls, fp32 softmax."""
    seq = q.shape[1]
    k = np.repeat(k, HEADS // KV, axis=2)
    v = np.repeat(v, HEADS // KV, axis=2)
    q, k, v = (t.transpose(0, 2, 1, 3) for t in (q, k, v))
    s = (q @ k.transpose(0, 1, 3, 2)) / np.sqrt(HD)
    s = s + np.triu(np.full((seq, seq), -1e4, np.float32), 1)[None, None]
    p = softmax(s.astype(np.float32)).astype(q.dtype)
    return (p @ v).transpose(0, 2, 1, 3).reshape(1, seq, HEADS * HD)


def front_attention(h, w_in, wq, wk, wv, wqn, wkn, cos, sin):
    """The layer from h to the attention output O (1, S, H·D) bf16."""
    return _attend(*front(h, w_in, wq, wk, wv, wqn, wkn, cos, sin))


def front_attention_and_q(h, w_in, wq, wk, wv, wqn, wkn, cos, sin):
    """As front_attention, also returning q (so q must reach HBM)."""
    q, k, v = front(h, w_in, wq, wk, wv, wqn, wkn, cos, sin)
    return _attend(q, k, v), q


def _attention_reference(args):
    """float64 attention of the float64 front, rounding q, k, v to bf16 (the program's matmul
    operands) and P to bf16 (written in the program)."""
    q, k, v = (t.astype(BF16).astype(np.float64) for t in _reference(*args))
    seq = q.shape[1]
    k, v = np.repeat(k, HEADS // KV, axis=2), np.repeat(v, HEADS // KV, axis=2)
    q, k, v = (t.transpose(0, 2, 1, 3) for t in (q, k, v))
    s = (q @ k.transpose(0, 1, 3, 2)) / np.sqrt(HD)
    s = np.where(np.triu(np.ones((seq, seq), bool), 1), -np.inf, s)
    e = np.exp(s - s.max(-1, keepdims=True))
    p = (e / e.sum(-1, keepdims=True)).astype(BF16).astype(np.float64)
    return (p @ v).transpose(0, 2, 1, 3).reshape(1, seq, HEADS * HD)


def _scratch(kern) -> dict:
    return {t: d for t, d in bytes_by_tensor(kern.nki).items() if t.startswith("scratch")}


@pytest.mark.parametrize("seq", [256, 300])
def test_front_and_attention_match_float64(seq):
    """Interpreter and simulator against float64 NumPy; 300 rows end in a partial row tile."""
    args = _inputs(seq, seed=seq)
    kern = nk.compile(front_attention, *args)
    assert _scratch(kern) == {}, "q, k or v went through HBM"
    feeds = dict(zip(NAMES, args))
    ref = _attention_reference(args)
    out = next(iter(kern.run(feeds).values()))
    assert_close(out, ref, nk.bfloat16, what="front + attention, interpreter", **TOL)
    out = next(iter(nk.simulate(kern, feeds).values()))
    assert_close(out, ref, nk.bfloat16, what="front + attention, simulator", **TOL)


def test_q_k_v_never_reach_hbm():
    """Every input is read once (cos and sin by q's and k's RoPE: twice), O written once,
    nothing else moves: q, k and v were written by the front and read back by the attention
    (256 rows: 2 x (64 + 32 + 32) KiB more)."""
    seq = 256
    args = _inputs(seq)
    kern = nk.compile(front_attention, *args)
    by = bytes_by_tensor(kern.nki)
    assert _scratch(kern) == {}, by
    for name, a in zip(NAMES, args):
        times = 2 if name in ("cos", "sin") else 1
        assert by[name]["read"] == times * a.nbytes, (name, by[name])
    writes = [d["write"] for d in by.values() if d["write"]]
    assert writes == [seq * HEADS * HD * 2], by
    # the attention ran as tensor.causal_attention, reading the kept buffers
    assert any(isinstance(op, MatmulOp) and "causal_attention" in str(op.loc) for op in kern.nki.body.walk())


def test_a_value_read_elsewhere_goes_through_hbm():
    """q is also returned: it is stored once (the output) and the attention reads it from
    there; k and v stay on chip. Results still match float64."""
    seq = 256
    args = _inputs(seq, seed=3)
    kern = nk.compile(front_attention_and_q, *args)
    by = bytes_by_tensor(kern.nki)
    q_bytes = seq * HEADS * HD * 2
    assert _scratch(kern) == {}, by
    assert sorted(d["write"] for d in by.values() if d["write"]) == [q_bytes, q_bytes], by
    feeds = dict(zip(NAMES, args))
    outs = list(kern.run(feeds).values())
    assert_close(outs[0], _attention_reference(args), nk.bfloat16, what="O with q returned", **TOL)


@pytest.mark.parametrize("seq, kept", [(512, ("q", "k", "v")), (2048, ("q", "k"))])
def test_qwen3_layer_keeps_what_fits(seq, kept):
    """The Qwen3-0.6B layer: at seq 512 q, k and v stay on chip; at seq 2048 the buffers of q
    (64 KiB per partition) and k (32 KiB) fit beside the resident weights, v (32 KiB) does not:
    its first 5 KV heads stay on chip, the other 3 are written and read once
    (tests/lower/test_front_keep_partial.py). attention_out.py keeps all of O on chip at both
    (tests/lower/test_attention_out.py; at seq 512 it went through HBM, 2 MiB written and
    read)."""
    kern = qwen3_layer_kernel(seq)
    scratch = _scratch(kern)
    v_bytes = seq * 1024 * 2 * 3 // 8
    want = [v_bytes] if "v" not in kept else []
    assert sorted(d["write"] for d in scratch.values()) == sorted(want), scratch
    assert sorted(d["read"] for d in scratch.values()) == sorted(want), scratch
