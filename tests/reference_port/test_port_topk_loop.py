"""Reference-port cases: top-k, a top-k router, and tensor-level loops, written with our API.

Each case is checked through ``nk.run``, ``Kernel.run`` and ``nk.simulate`` against an
independent NumPy float64 reference (``np.argsort(kind="stable")``, never ``nk.topk``'s own
NumPy path):

- ``test_topk`` mirrors ``tests/unit/test_tensor_api.py::test_topk`` of the public reference
  (aws-neuron/nkipy: 1-D and 2-D float32 inputs, k = 1..3, along axis 0 / 1; 6 cases; the
  reference compares with ``torch.topk``, we with NumPy's stable order) and
  ``test_topk_smallest`` its ``test_topk_ascending`` (``is_ascend=True``, our
  ``nk.topk(..., largest=False)``; 2 cases);
- ``test_router`` mirrors ``tests/test_router.py`` (router logits ``x @ W + b``, top-k expert
  indices exact in float32, and the masked expert affinities: the softmax of the top-k logits
  put back at the chosen experts with ``np.put_along_axis``, zeros elsewhere);
- the reference has no unit test of ``for_loop`` (its op list names it, for decode loops and
  repeated layers: shared/reference/nkipy_ops_and_workloads.md §1), so ``test_greedy_decode_loop``
  and ``test_cache_fill_loop`` are decode loops of our own: one ``b.for_loop`` (never
  unrolled) whose body gathers a row at a runtime id (``gather_rows``), picks the next token
  (argmax) and writes at the induction variable (``dynamic_update_slice`` / ``dynamic_slice``).
"""

from __future__ import annotations

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import ForiLoopOp

from .helpers import compare, run_three_ways

R = np.random.default_rng(20260616)


def _topk_reference(a, k, axis, largest=True):
    a64 = a.astype(np.float64)
    order = np.argsort(-a64 if largest else a64, axis=axis, kind="stable")
    idx = np.take(order, np.arange(k), axis=axis)
    return np.take_along_axis(a64, idx, axis=axis), idx


def _check_topk(fn, a, want):
    _, _, runs = run_three_ways(fn, a)
    for how, (vals, idx) in runs.items():
        compare(vals, want[0], np.float32, f"{how}, values")
        compare(idx, want[1], np.int32, f"{how}, indices")


@pytest.mark.parametrize(
    "shape, k, axis",
    [((5,), 1, 0), ((10,), 2, 0), ((15,), 3, 0), ((5, 10), 1, 1), ((10, 20), 2, 1), ((15, 25), 3, 1)],
)
def test_topk(shape, k, axis):
    a = R.random(shape).astype(np.float32)
    _check_topk(lambda a: nk.topk(a, k, axis=axis), a, _topk_reference(a, k, axis))


@pytest.mark.parametrize("shape, k", [((10,), 3), ((5, 10), 2)])
def test_topk_smallest(shape, k):
    a = R.random(shape).astype(np.float32)
    _check_topk(lambda a: nk.topk(a, k, axis=-1, largest=False), a, _topk_reference(a, k, -1, largest=False))


def test_router():
    tokens, hidden, experts, top_k = 32, 64, 16, 4
    x = R.standard_normal((tokens, hidden)).astype(np.float32)
    w = R.normal(scale=np.sqrt(2 / (hidden + experts)), size=(hidden, experts)).astype(np.float32)
    bias = R.standard_normal(experts).astype(np.float32)

    def router(x, w, bias):
        logits = x @ w + bias
        vals, idx = nk.topk(logits, top_k, axis=-1)
        e = np.exp(vals - np.max(vals, axis=-1, keepdims=True))
        masked = np.zeros_like(logits)
        np.put_along_axis(masked, idx, e / np.sum(e, axis=-1, keepdims=True), axis=-1)
        return idx, masked

    logits = x.astype(np.float64) @ w.astype(np.float64) + bias
    want_vals, want_idx = _topk_reference(logits, top_k, -1)
    e = np.exp(want_vals - want_vals.max(axis=-1, keepdims=True))
    want_masked = np.zeros_like(logits)
    np.put_along_axis(want_masked, want_idx, e / e.sum(axis=-1, keepdims=True), axis=-1)
    assert (np.diff(np.sort(logits, axis=-1), axis=-1) > 1e-3).all(), "a near tie would make top-k ill-posed"
    _, _, runs = run_three_ways(router, x, w, bias)
    for how, (idx, masked) in runs.items():
        compare(idx, want_idx, np.int32, f"{how}, expert indices")
        compare(masked, want_masked, np.float32, f"{how}, masked affinities")


def _loops(k):
    return [op for op in k.nki.walk() if isinstance(op, ForiLoopOp) and op.attrs["upper"] > 1]


def test_greedy_decode_loop():
    vocab, d, steps = 64, 16, 6
    table = R.standard_normal((vocab, d)).astype(np.float32)
    w = R.standard_normal((d, vocab)).astype(np.float32)
    b = nk.Builder("greedy_decode")
    t = b.add_input("table", (vocab, d), nk.float32)
    wv = b.add_input("w", (d, vocab), nk.float32)
    tok0 = b.add_input("tok0", (1,), nk.int32)

    def step(i, h, toks):
        nxt = b.cast(nk.ops.argmax(h @ wv, axis=-1), nk.int32)
        return [b.gather_rows(t, nxt), b.dynamic_update_slice(toks, nxt, [i])]

    h, toks = b.for_loop(steps, [b.gather_rows(t, tok0), b.zeros((steps,), nk.int32)], step)
    b.set_outputs({"h": h, "toks": toks})
    g = b.graph

    ref_h, ref_toks = table[[5]].astype(np.float64), []
    for _ in range(steps):
        tok = int(np.argmax(ref_h @ w.astype(np.float64)))
        ref_toks.append(tok)
        ref_h = table[[tok]].astype(np.float64)
    assert len(set(ref_toks)) > 2, "the reference decode must visit several tokens"

    ins = {"table": table, "w": w, "tok0": np.array([5], np.int32)}
    k = nk.compile(g)
    assert _loops(k), "the decode loop must stay a loop"
    for how, out in (
        ("nk.run", nk.run(g, ins, mode="float64")),
        ("Kernel.run", k.run(ins)),
        ("nk.simulate", nk.simulate(k, ins)),
    ):
        compare(out["toks"], np.array(ref_toks, np.int32), np.int32, f"{how}, tokens")
        compare(out["h"], ref_h, np.float32, f"{how}, last hidden row")


def test_cache_fill_loop():
    steps, d = 8, 32
    x = R.standard_normal((steps, d)).astype(np.float32)
    b = nk.Builder("cache_fill")
    xv = b.add_input("x", (steps, d), nk.float32)
    cache = b.add_input("cache", (2, steps, d), nk.float32)

    def step(i, c):
        row = b.dynamic_slice(xv, [i, 0], [1, d])  # the token's row at the runtime position
        k = b.reshape(b.concat([row, row * 2.0], 0), (2, 1, d))
        return b.dynamic_update_slice(c, k, [0, i, 0])

    b.set_outputs({"cache_out": b.for_loop(steps, cache, step)}, aliases={"cache_out": "cache"})
    g = b.graph
    c0 = R.standard_normal((2, steps, d)).astype(np.float32)
    want = np.stack([x, 2 * x]).astype(np.float64)
    ins = {"x": x, "cache": c0}
    k = nk.compile(g)
    assert _loops(k), "the fill loop must stay a loop"
    assert k.io.aliases == {"cache_out": "cache"}
    for how, out in (
        ("nk.run", nk.run(g, ins, mode="float64")),
        ("Kernel.run", k.run(ins)),
        ("nk.simulate", nk.simulate(k, ins)),
    ):
        compare(out["cache_out"], want, np.float32, f"{how}, cache")
