"""The front of a Qwen3 decoder layer — rmsnorm(h), the q / k / v projections, the per-head
rmsnorm of q and k and RoPE (rotate halves) — is one row pipeline (pipeline_views.py): the head
split of a projection and the RoPE halves are views of SBUF tiles, so q, k and v reach HBM once
each and nothing else does. Bounds are HBM byte counts per tensor (perf/traffic.py); numerics
on the NKI interpreter and the simulator against float64 NumPy."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import ActivationOp, DmaCopyOp, HbmViewOp, MatmulOp
from nkigen_lite.perf.layout import contiguous_run
from nkigen_lite.perf.traffic import bytes_by_tensor
from nkigen_lite.transforms.lower import pipeline_skew
from tests.trace.numpy_workloads import rmsnorm, rope

BF16 = ml_dtypes.bfloat16
D, HEADS, KV, HD = 256, 4, 2, 64
NAMES = ["h", "w_in", "wq", "wk", "wv", "wqn", "wkn", "cos", "sin"]


def front(h, w_in, wq, wk, wv, wqn, wkn, cos, sin):
    """q, k after per-head rmsnorm and RoPE, v: h (1, S, D) bf16."""
    _, s, _ = h.shape
    x = rmsnorm(h, w_in)
    q = rmsnorm((x @ wq).reshape(1, s, HEADS, HD), wqn)
    k = rmsnorm((x @ wk).reshape(1, s, KV, HD), wkn)
    v = (x @ wv).reshape(1, s, KV, HD)
    q, k = rope(q, k, cos, sin)
    return q, k, v


def _inputs(seq: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    pos = np.arange(seq)[:, None] / 10000 ** (np.arange(HD // 2)[None] / (HD // 2))
    return [
        rng.standard_normal((1, seq, D)).astype(BF16),
        (1 + 0.1 * rng.standard_normal(D)).astype(BF16),
        (rng.standard_normal((D, HEADS * HD)) / np.sqrt(D)).astype(BF16),
        (rng.standard_normal((D, KV * HD)) / np.sqrt(D)).astype(BF16),
        (rng.standard_normal((D, KV * HD)) / np.sqrt(D)).astype(BF16),
        (1 + 0.1 * rng.standard_normal(HD)).astype(BF16),
        (1 + 0.1 * rng.standard_normal(HD)).astype(BF16),
        np.cos(pos).astype(BF16),
        np.sin(pos).astype(BF16),
    ]


def _reference(h, w_in, wq, wk, wv, wqn, wkn, cos, sin):
    """float64, rounding to bf16 only where the program stores a bf16 value that a matmul
    reads (x) — every other rounding is inside the tolerance."""
    f = [a.astype(np.float64) for a in (h, w_in, wq, wk, wv, wqn, wkn, cos, sin)]
    h, w_in, wq, wk, wv, wqn, wkn, cos, sin = f
    s = h.shape[1]

    def rms(x, w):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * w

    def rot(t):
        lo, hi = t[..., : HD // 2], t[..., HD // 2 :]
        c, sn = cos[None, :, None, :], sin[None, :, None, :]
        return np.concatenate([lo * c - hi * sn, lo * sn + hi * c], axis=-1)

    x = rms(h, w_in).astype(BF16).astype(np.float64)
    q = rot(rms((x @ wq).reshape(1, s, HEADS, HD), wqn))
    k = rot(rms((x @ wk).reshape(1, s, KV, HD), wkn))
    return q, k, (x @ wv).reshape(1, s, KV, HD)


@pytest.mark.parametrize("seq", [256, 130])
def test_front_moves_each_tensor_through_hbm_once(seq):
    args = _inputs(seq)
    k = nk.compile(front, *args)
    by = bytes_by_tensor(k.nki)
    scratch = {t: d for t, d in by.items() if t.startswith("scratch")}
    # was: q's projection, its norm and its RoPE output each written and read back (k too)
    assert scratch == {}, scratch
    for name, a in zip(NAMES, args):
        # cos and sin are loaded by q's RoPE and by k's (one row tile each time; 2 x 16 KiB)
        times = 2 if name in ("cos", "sin") else 1
        assert by[name]["read"] == times * a.nbytes, (name, by[name])
    q_bytes, kv_bytes = seq * HEADS * HD * 2, seq * KV * HD * 2
    writes = sorted(d["write"] for t, d in by.items() if d["write"])
    assert writes == sorted([q_bytes, kv_bytes, kv_bytes]), by
    assert k.stats().hbm_traffic_ratio <= 1.07, k.stats().summary()


def test_rope_halves_are_stored_as_whole_rows():
    """q and k after RoPE leave SBUF as whole rows (HEADS x HD, KV x HD contiguous elements per
    row), one DMA per row tile, not as the two halves (HD / 2 elements per run) RoPE computes."""
    seq = 256
    k = nk.compile(front, *_inputs(seq))
    outs = set(k.nki.outputs.values())
    runs = {}
    for op in k.nki.body.walk():
        if isinstance(op, DmaCopyOp):
            dst = op.access("dst")
            base = dst.tensor
            while isinstance(base.defining_op, HbmViewOp):
                base = base.defining_op.operand(0)
            if base in outs:
                runs.setdefault(base.name_hint, []).append(contiguous_run(dst))
    # one DMA per output and row tile (2 tiles of 128 rows), each a contiguous block of whole
    # rows (was 2 DMAs of runs of HD / 2 = 32 elements per q and k tile)
    assert sorted(len(r) for r in runs.values()) == [2, 2, 2], runs
    assert sorted(min(r) for r in runs.values()) == [128 * KV * HD] * 2 + [128 * HEADS * HD], runs


def _hbm_base(v):
    while isinstance(v.defining_op, HbmViewOp):
        v = v.defining_op.operand(0)
    return v


def test_row_tiles_are_skewed():
    """6 row tiles emitted straight in skewed steps (pipeline_skew.py): tile t+1's h load is
    issued before tile t's q store, and tile t's q store before tile t+4's h load (a loop, even
    one whose iterations are interleaved, loads every h before storing any q; the rmsnorm of h
    runs two tiles ahead of the per-head norms, so 4 tiles load every h first)."""
    k = nk.compile(front, *_inputs(768))
    h = k.nki.inputs[NAMES.index("h")]
    q = next(iter(k.nki.outputs.values()))
    events = []
    for op in k.nki.body:
        for inner in op.walk():
            if isinstance(inner, DmaCopyOp):
                src, dst = _hbm_base(inner.access("src").tensor), _hbm_base(inner.access("dst").tensor)
                if src is h:
                    assert inner.parent is k.nki.body, "h is loaded inside a loop"
                    events.append("h")
                elif dst is q:
                    events.append("q")
    assert events.count("h") == 6 and events.count("q") == 6, events
    for t in range(5):
        assert _nth(events, "h", t + 1) < _nth(events, "q", t), events
    assert _nth(events, "q", 0) < _nth(events, "h", 4), events


def test_next_rmsnorm_runs_ahead_of_the_norms():
    """4 row tiles (pipeline_skew._hoist_heads): the rmsnorm of h for tile t+2 is emitted right
    after tile t+1's xᵀ, before the per-head norms of tile t, so that TensorE finds every tile's
    x normalised when its projections end (was: tile t+2's rmsnorm after tile t's norms, behind
    them on ScalarE and GpSimd). Order of the h squares (2-D) and q's per-head squares."""
    k = nk.compile(front, *_inputs(512))
    events = []
    for op in k.nki.body:
        if isinstance(op, ActivationOp) and op.attrs["op"] == "square":
            dims = op.access("dst").dims
            if len(dims) == 2:
                events.append("h")
            elif dims[1].size == HEADS:
                events.append("q")
    assert events.count("h") == 4, events
    for t in range(2):
        assert _nth(events, "h", t + 2) < _nth(events, "q", t), events


def test_hoist_refuses_a_conflict():
    """A head is not moved past an op writing a value it reads, nor past one reading a value
    it writes (pipeline_skew._conflict); two loads of h into tiles of their own commute."""
    k = nk.compile(front, *_inputs(512))
    h = k.nki.inputs[NAMES.index("h")]
    loads = [op for op in k.nki.body if isinstance(op, DmaCopyOp) and _hbm_base(op.access("src").tensor) is h]
    load = loads[0]
    readers = [u.op for u in load.access("dst").tensor.uses if u.op is not load]
    assert readers
    assert pipeline_skew._conflict(readers, [load])
    assert pipeline_skew._conflict([load], readers)
    assert not pipeline_skew._conflict([load], [loads[1]])


def test_projection_read_first_runs_first():
    """4 row tiles, skewed (pipeline_skew.read_order): the projections run, and tile 0 loads
    their weights, in the order the per-head chain reads them — q (its norm comes first), k,
    then v (read by no norm) — not k, v, q as they are lowered (item_order.py moves k and v
    next to x); the chain of tile 0 then waits for one weight, not three. Results close to
    float64 NumPy."""
    seq = 512
    args = _inputs(seq, seed=5)
    k = nk.compile(front, *args)
    names = dict(zip(k.nki.inputs, NAMES))
    weight_of, loads = {}, []
    for op in k.nki.body.walk():
        if isinstance(op, DmaCopyOp):
            name = names.get(_hbm_base(op.access("src").tensor))
            if name in ("wq", "wk", "wv"):
                weight_of[op.access("dst").tensor] = name
                loads.append(name)
    first = []
    for op in k.nki.body.walk():
        name = weight_of.get(op.access("moving").tensor) if isinstance(op, MatmulOp) else None
        if name is not None and name not in first:
            first.append(name)
    assert first == ["wq", "wk", "wv"], first
    assert list(dict.fromkeys(loads)) == ["wq", "wk", "wv"], loads
    got = list(k.run(dict(zip(NAMES, args))).values())
    for g, want in zip(got, _reference(*args)):
        # as in test_front_matches_float64 below
        np.testing.assert_allclose(np.asarray(g, np.float64), want, rtol=0, atol=0.03 * np.abs(want).max())


def _nth(seq, x, n):
    return [i for i, y in enumerate(seq) if y == x][n]


@pytest.mark.parametrize("seq", [256, 130])
def test_front_matches_float64(seq):
    args = _inputs(seq, seed=seq)
    k = nk.compile(front, *args)
    ins = dict(zip(NAMES, args))
    refs = _reference(*args)
    for how, run in (("Kernel.run", k.run), ("nk.simulate", lambda i: nk.simulate(k, i))):
        got = list(run(ins).values())
        assert len(got) == 3, how
        for g, want in zip(got, refs):
            # bf16 results of bf16 products and norms: a few bf16 ulps (2^-8 relative) of the
            # largest value (|q|, |k| ~ 3 after the norms, |v| ~ 3)
            np.testing.assert_allclose(
                np.asarray(g, np.float64), want, rtol=0, atol=0.03 * np.abs(want).max(), err_msg=how
            )
