"""Attention over many keys (canonical/attention.py -> tensor.flash_attention, lowered by
lower/flash_attention.py with an online softmax over key blocks): the scores never go through
HBM, K and V are read once per batch instance when they fit SBUF (else once per group of query
tiles), and results match float64 NumPy on the NKI interpreter and the simulator. Small shapes
exercise the kernel by lowering the key threshold (``MIN_KEYS``) and the residency budget."""

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import DmaCopyOp, ForiLoopOp, HbmViewOp
from nkigen_lite.testing import assert_close
from nkigen_lite.transforms.canonical import attention as rule
from nkigen_lite.transforms.lower import flash_attention as kernel
from nkigen_lite.workloads import get_workload


def _attention(q, k, v):
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    e = np.exp(s - s.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)) @ v


def _bytes_read(kern) -> dict[str, int]:
    g = kern.nki
    names = {v: n for n, v in zip(g.input_names, g.inputs)}
    out = dict.fromkeys(names.values(), 0)

    def walk(block, mult):
        for op in block:
            if isinstance(op, ForiLoopOp):
                walk(op.body, mult * op.trip_count)
            elif isinstance(op, DmaCopyOp):
                src = op.access("src")
                t = src.tensor
                root = t.defining_op.operand(0) if isinstance(t.defining_op, HbmViewOp) else t
                if root in names:
                    out[names[root]] += mult * int(np.prod([d.size for d in src.dims])) * 4

    walk(g.body, 1)
    return out


def _inputs(batch, m, n, d, dv, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(batch + s).astype(np.float32) for s in ((m, d), (n, d), (n, dv))]


@pytest.mark.parametrize("resident", [True, False], ids=["kv-resident", "kv-streamed"])
def test_flash_attention_matches_float64(resident, monkeypatch):
    """2 heads, 300 queries (two full tiles and 44 rows), 1100 keys (two blocks of 512 and 76),
    head dim 64, value dim 48: both loop structures of the kernel against float64."""
    monkeypatch.setattr(rule, "MIN_KEYS", 256)
    if not resident:
        monkeypatch.setattr(kernel, "RESIDENT_BYTES", 0)
        monkeypatch.setattr(kernel, "QUERY_GROUP", 2)
    q, k, v = _inputs((2,), 300, 1100, 64, 48)
    kern = nk.compile(_attention, q, k, v)
    assert "tensor.flash_attention" in kern.ir("cleanup")
    ref = _attention(*(a.astype(np.float64) for a in (q, k, v)))
    feeds = {"q": q, "k": k, "v": v}
    assert_close(kern.run(feeds)["y"], ref, nk.float32, what="flash attention, interpreter")
    assert_close(nk.simulate(kern, feeds)["y"], ref, nk.float32, what="flash attention, simulator")
    read = _bytes_read(kern)
    assert read["q"] == q.nbytes
    # resident: K and V once; streamed: once per group of 2 query tiles (300 rows -> 2 groups)
    times = 1 if resident else 2
    assert read["k"] == times * k.nbytes and read["v"] == times * v.nbytes


def test_short_attention_is_pipelined_not_online():
    """At or below MIN_KEYS keys no online softmax is needed: s512 becomes flash_attention only
    for the pipelined short kernel (lower/attention_pipelined.py), which has no loop over key
    blocks (tests/lower/test_attention_pipelined.py checks it)."""
    g = get_workload("attention").graph(seq=512, d=128)
    kern = nk.compile(g)
    assert "tensor.flash_attention" in kern.ir("cleanup")
    assert not any(isinstance(op, ForiLoopOp) for op in kern.nki.body)


def test_attention_over_8192_keys_reads_inputs_once():
    """attention s8192 d128 f32: the row pipeline wrote a score row too wide for SBUF through
    HBM (65x the minimum traffic); the online softmax reads q, k, v and writes o once."""
    g = get_workload("attention").graph(seq=8192, d=128)
    kern = nk.compile(g)
    assert kern.stats().hbm_traffic_ratio <= 1.01


def test_intermediate_used_elsewhere_is_not_fused(monkeypatch):
    """The scores are also an output: the pattern must keep them, so no flash_attention."""
    monkeypatch.setattr(rule, "MIN_KEYS", 256)

    def fn(q, k, v):
        s = q @ k.T
        e = np.exp(s - s.max(-1, keepdims=True))
        return (e / e.sum(-1, keepdims=True)) @ v, s

    q, k, v = _inputs((), 128, 512, 32, 32)
    kern = nk.compile(fn, q, k, v)
    assert "tensor.flash_attention" not in kern.ir("cleanup")


def test_unsupported_shapes_are_a_clear_error():
    """flash_attention built directly with a head dim over 128: one BuildError naming the op
    and the rule, not a broken kernel."""
    b = nk.Builder("fa")
    q = b.add_input("q", (128, 192), nk.float32)
    k = b.add_input("k", (256, 192), nk.float32)
    v = b.add_input("v", (256, 64), nk.float32)
    b.set_outputs({"o": b.flash_attention(q, k, v, scale=0.1)})
    with pytest.raises(nk.BuildError, match=r"tensor.flash_attention .*D <= 128"):
        nk.compile(b.graph)


@pytest.mark.parametrize("sq", [128, 512], ids=["one-tile", "pipelined"])
def test_scale_that_is_not_an_fp32_number_built_directly(sq):
    """flash_attention built directly with ``scale=1/np.sqrt(96)`` (a Python float, not exactly
    fp32): rounded to fp32 once like the op's reference (it failed verification before), f32
    against a float64 reference on the interpreter and the simulator."""
    b = nk.Builder("fa_scale")
    q = b.add_input("q", (sq, 96), nk.float32)
    k = b.add_input("k", (512, 96), nk.float32)
    v = b.add_input("v", (512, 64), nk.float32)
    scale = 1 / np.sqrt(96)
    b.set_outputs({"o": b.flash_attention(q, k, v, scale=scale)})
    kern = nk.compile(b.graph)
    rng = np.random.default_rng(sq)
    feeds = {
        n: rng.standard_normal(s).astype(np.float32)
        for n, s in (("q", (sq, 96)), ("k", (512, 96)), ("v", (512, 64)))
    }
    s = feeds["q"].astype(np.float64) @ feeds["k"].astype(np.float64).T * scale
    e = np.exp(s - s.max(-1, keepdims=True))
    ref = (e / e.sum(-1, keepdims=True)) @ feeds["v"].astype(np.float64)
    assert_close(kern.run(feeds)["o"], ref, nk.float32, what="flash attention, interpreter")
    assert_close(nk.simulate(kern, feeds)["o"], ref, nk.float32, what="flash attention, simulator")
