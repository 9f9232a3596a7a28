"""Interleaved loop iterations (transforms/lower/interleave.py): pairs of independent
iterations of a Tensor-engine loop run with their instructions alternating. The transformation
moves no work (same executed instructions and DMA bytes), changes no result (bit-identical
outputs on the NKI interpreter and the simulator, and float64 agreement), and leaves loops with
loop-carried state alone."""

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import ForiLoopOp, MatmulOp
from nkigen_lite.testing import assert_close
from nkigen_lite.transforms.lower import grouped_attention, interleave
from nkigen_lite.workloads import get_workload

BF16 = ml_dtypes.bfloat16


def _compile(graph, rounds, monkeypatch):
    monkeypatch.setattr(interleave, "ROUNDS", rounds)
    return nk.compile(graph)


def _static(kern, cls) -> int:
    return sum(1 for op in kern.nki.body.walk() if isinstance(op, cls))


def _gqa_graph():
    def gqa(q, k, v):
        k = np.repeat(k, 2, axis=0).astype(np.float32)
        v = np.repeat(v, 2, axis=0).astype(np.float32)
        s = q.astype(np.float32) @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
        e = np.exp(s - s.max(-1, keepdims=True))
        return (e / e.sum(-1, keepdims=True) @ v).astype(q.dtype)

    rng = np.random.default_rng(4)
    args = [rng.standard_normal((h, 256, 64)).astype(BF16) for h in (4, 2, 2)]
    return nk.trace(gqa).trace(*args), dict(zip("qkv", args))


def _attention_graph():
    # over 512 keys: the row pipeline (at most 512 keys with several query tiles is the
    # software-pipelined kernel of lower/attention_pipelined.py, which has no loop to interleave)
    w = get_workload("attention")
    g = w.graph(seq=1024, d=64)
    return g, w.inputs(g, seed=2), w


@pytest.mark.parametrize("which", ["attention", "gqa"])
def test_interleaving_moves_no_work_and_changes_no_result(which, monkeypatch):
    g, ins = (_attention_graph()[:2]) if which == "attention" else _gqa_graph()

    def keep_row_pipeline():  # 256 keys would make it one tensor.grouped_attention kernel
        if which == "gqa":
            monkeypatch.setattr(grouped_attention, "MAX_KEYS", 128)

    keep_row_pipeline()
    plain = _compile(g, 0, monkeypatch)
    monkeypatch.undo()
    keep_row_pipeline()
    woven = nk.compile(g)
    # the loop over query blocks / heads now holds two iterations' matmuls
    assert _static(woven, MatmulOp) > _static(plain, MatmulOp)
    sp, sw = plain.stats(), woven.stats()
    assert sw.instructions_dynamic == sp.instructions_dynamic
    assert sw.dma_bytes == sp.dma_bytes and sw.hbm_bytes == sp.hbm_bytes
    for run in (lambda k: k.run(ins), lambda k: nk.simulate(k, ins)):
        a, b = run(plain), run(woven)
        for name in a:
            np.testing.assert_array_equal(np.asarray(a[name]), np.asarray(b[name]))


def test_interleaved_attention_matches_float64():
    g, ins, w = _attention_graph()
    kern = nk.compile(g)
    ref = w.reference(**ins)["o"]
    assert_close(kern.run(ins)["o"], ref, nk.float32, what="attention, interpreter")
    assert_close(nk.simulate(kern, ins)["o"], ref, nk.float32, what="attention, simulator")


def test_loop_carried_accumulation_is_not_interleaved():
    """A matmul with K = 512 accumulates its K chunks in PSUM in a loop: that loop writes a
    tile allocated outside it, so it is not independent; a loop storing one HBM window every
    iteration is not either."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((256, 512)).astype(np.float32)
    wt = rng.standard_normal((512, 256)).astype(np.float32)
    kern = nk.compile(lambda a, b: a @ b, x, wt)
    loops = [op for op in kern.nki.body.walk() if isinstance(op, ForiLoopOp)]
    accumulating = [
        lp for lp in loops if any(isinstance(o, MatmulOp) and o.attrs["accumulate"] for o in lp.body)
    ]
    assert accumulating and not any(interleave._independent(lp) for lp in accumulating)
    # f32 accumulation of 512 unit-normal products: absolute error grows like sqrt(K)
    got = kern.run({"a": x, "b": wt})["y"]
    assert_close(got, x.astype(np.float64) @ wt, nk.float32, atol=1e-5 * np.sqrt(512), what="K=512 matmul")


def test_disjoint_windows_rule():
    """Writes of one HBM tensor are disjoint across iterations only when, in some dim, all
    writers move together by at least their joint span."""
    from nkigen_lite.nki.types import Access, Affine, DimSlice

    b = nk.nki.Builder("k")
    out = b.add_input("o", (8, 16), nk.float32)
    with b.fori_loop(0, 4) as i:
        pass

    def acc(off, size):
        return Access(out, (DimSlice(off, size, 1), DimSlice(Affine.of(0), 16, 1)))

    two_rows = [acc(Affine.of(i) * 2, 1), acc(Affine.of(i) * 2 + 1, 1)]
    assert interleave._disjoint(two_rows, i, 1, set())  # rows 2i and 2i+1: disjoint per i
    overlapping = [acc(Affine.of(i), 1), acc(Affine.of(i) + 1, 1)]
    assert not interleave._disjoint(overlapping, i, 1, set())  # row i+1 is next i's row
    wide = [acc(Affine.of(i) * 2, 3)]
    assert not interleave._disjoint(wide, i, 1, set())  # 3 rows moving by 2


def test_sbuf_tile_filled_slot_by_slot_is_independent():
    """A loop that writes each iteration's slot of an SBUF tile allocated before it (a buffer
    holding every row tile, mlp_prologue.py) is independent when nothing in it reads that
    tile; reading it (or writing overlapping slots) makes it loop-carried."""
    from nkigen_lite.nki.types import Access, Affine, DimSlice

    def loop(read_back: bool, step: int):
        b = nk.nki.Builder("k")
        x = b.add_input("x", (128, 64), nk.float32)
        whole = b.alloc((128, 64), "f32", "sbuf", name="whole")
        with b.fori_loop(0, 4) as i:
            t = b.alloc((128, 16), "f32", "sbuf", name="t")
            cols = DimSlice(Affine.of(i) * 16, 16, 1)
            b.dma_copy(dst=t, src=Access(x, (DimSlice(Affine.of(0), 128, 1), cols)))
            if read_back:
                b.tensor_copy(dst=t, src=Access(whole, (DimSlice(Affine.of(0), 128, 1), cols)))
            slot = DimSlice(Affine.of(i) * step, 16, 1)
            b.tensor_copy(dst=Access(whole, (DimSlice(Affine.of(0), 128, 1), slot)), src=t)
        return next(op for op in b.graph.body.walk() if isinstance(op, ForiLoopOp))

    assert interleave._independent(loop(False, 16))
    assert not interleave._independent(loop(True, 16))  # reads what an earlier iteration wrote
    assert not interleave._independent(loop(False, 8))  # 16 columns moving by 8: overlapping
