"""The last store of a straight-line kernel in column halves (transforms/lower/tail_split.py):
LayerNorm 512x1024 stores its last row tile in two DMAs from two half tiles, its results are
bit for bit those of the kernel without the split (elementwise instructions by columns) and
close to float64 NumPy on the NKI interpreter and the simulator (fp32: 1e-5 absolute for
|y| ≲ 5), and the scheduled estimate drops."""

from __future__ import annotations

import numpy as np

import nkigen_lite as nk
from nkigen_lite.nki.ops import DmaCopyOp
from nkigen_lite.nki.target import TRN2
from nkigen_lite.nki.types import HbmType
from nkigen_lite.transforms.lower import deallocs, tail_split
from nkigen_lite.workloads import get_workload

LN = get_workload("layernorm")


def _unsplit(monkeypatch, graph) -> nk.Kernel:
    with monkeypatch.context() as m:
        m.setattr(deallocs, "split_last_store", lambda *a: False)
        return nk.compile(graph)


def _stores(k) -> list:
    return [
        op
        for op in k.nki.walk()
        if isinstance(op, DmaCopyOp) and isinstance(op.access("dst").tensor.type, HbmType)
    ]


def _inputs(shape):
    rng = np.random.default_rng(11)
    return {
        "x": (3.0 + 2.0 * rng.standard_normal(shape)).astype(np.float32),
        "w": rng.standard_normal(shape[-1]).astype(np.float32),
        "b": rng.standard_normal(shape[-1]).astype(np.float32),
    }


def test_layernorm_last_tile_is_stored_in_halves(monkeypatch):
    g = LN.graph(shape=(512, 1024))
    k, plain = nk.compile(g), _unsplit(monkeypatch, g)
    stores, before = _stores(k), _stores(plain)
    assert len(before) == 4 and len(stores) == 5
    halves = [s for s in stores if s.access("src").free_size == 512]
    assert len(halves) == 2
    rows = {(h.access("dst").dims[0].offset.const, h.access("dst").dims[1].offset.const) for h in halves}
    assert rows == {(384, 0), (384, 512)}
    assert k.stats().dma_bytes == plain.stats().dma_bytes
    assert k.estimate().scheduled_ns < plain.estimate().scheduled_ns
    ins = _inputs((512, 1024))
    want = LN.reference(**ins)["y"]
    np.testing.assert_array_equal(k.run(ins)["y"], plain.run(ins)["y"])
    for where, got in (("interpreter", k.run(ins)["y"]), ("simulator", nk.simulate(k, ins)["y"])):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-5, err_msg=where)


def _small(width: int):
    """x -> exp(x) * 2 of one (128, width) tile, straight-line, deallocations inserted."""
    b = nk.nki.Builder("small")
    x = b.add_input("x", (128, width), nk.float32)
    y = b.alloc((128, width), nk.float32, "hbm", name="y")
    t, u, v = (b.alloc((128, width)) for _ in range(3))
    b.dma_copy(dst=t, src=x)
    b.activation(dst=u, op="exp", data=t)
    b.tensor_scalar(dst=v, data=u, op0="multiply", operand0=2.0, engine="vector")
    b.dma_copy(dst=y, src=v)
    b.set_outputs({"y": y})
    deallocs.insert_deallocs(b.graph.body)
    return b.graph


def test_a_split_that_does_not_shorten_the_kernel_is_undone(monkeypatch):
    """(128, 4): two 2-column stores cost a second DMA's fixed cost for nothing; the split is
    made, then undone: the kernel prints as before (order, instructions, deallocations)."""
    made = []
    split = tail_split._split
    monkeypatch.setattr(tail_split, "_split", lambda *a: made.append(split(*a)) or made[-1])
    g = _small(4)
    text = str(g)
    assert not tail_split.split_last_store(g, TRN2, deallocs.insert_deallocs)
    assert made == [True]
    assert str(g) == text
    nk.nki.verify(g)


def test_a_kept_split_splits_the_whole_chain():
    """(128, 2048): exp and the multiply run per half into half tiles, each half stored."""
    g = _small(2048)
    x = np.random.default_rng(4).standard_normal((128, 2048)).astype(np.float32)
    want = nk.nki.run(g, {"x": x})["y"]
    assert tail_split.split_last_store(g, TRN2, deallocs.insert_deallocs)
    nk.nki.verify(g)
    names = [op.name for op in g.walk()]
    assert names.count("nki.activation") == names.count("nki.tensor_scalar") == 2
    assert names.count("nki.dma_copy") == 3
    np.testing.assert_array_equal(nk.nki.run(g, {"x": x})["y"], want)
