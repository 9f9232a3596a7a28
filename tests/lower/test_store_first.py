"""Store-first list order (transforms/lower/emit_order.py ``store_window``, tried by
straight_order.py): among instructions that can start within the window of the earliest, the
work of the earliest output store goes first. A kernel whose second row tile arrives first runs
the first tile's chain first; LayerNorm 512x1024 and 512x1000 and RMSNorm 256x1024 (f32) keep a
store-first finish (scheduled estimate 19.75 -> 19.43, 20.75 -> 20.20, 12.35 -> 11.53 us, same
DMAs); results are unchanged (bit for bit on the interpreter for the reordered block; the norms
close to float64 NumPy on the interpreter and the simulator, fp32: 2e-5 absolute for |y| of a
few units, |x| up to ~12) and the emitted IR is deterministic."""

from __future__ import annotations

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki import TRN2, Builder, run, verify
from nkigen_lite.nki.ops import ActivationOp
from nkigen_lite.transforms.lower import straight_order
from nkigen_lite.transforms.lower.deallocs import insert_deallocs
from nkigen_lite.transforms.lower.emit_order import _ListScheduler, list_order
from nkigen_lite.workloads import get_workload


def _two_tiles():
    """y0 = exp(x0), y1 = exp(x1) on ScalarE, stored y0 first; x1 is loaded first, so x1's
    exp could start ~1.5 us before x0's."""
    b = Builder("k")
    xs = [b.add_input(f"x{i}", (128, 1024)) for i in range(2)]
    ys = [b.alloc((128, 1024), space="hbm", name=f"y{i}") for i in range(2)]
    tiles = [b.alloc((128, 1024), name=f"t{i}") for i in range(2)]
    b.dma_copy(dst=tiles[1][:, :], src=xs[1][:, :])
    b.dma_copy(dst=tiles[0][:, :], src=xs[0][:, :])
    outs = [b.alloc((128, 1024), name=f"e{i}") for i in range(2)]
    for i in range(2):
        b.activation(dst=outs[i][:, :], op="exp", data=tiles[i][:, :])
    for i in range(2):
        b.dma_copy(dst=ys[i][:, :], src=outs[i][:, :])
    b.set_outputs({"y0": ys[0], "y1": ys[1]})
    return b.graph


class _StoreFirst(_ListScheduler):
    store_window = 2000.0


def _exp_inputs(g) -> list[str]:
    return [op.access("data").tensor.name_hint for op in g.body if isinstance(op, ActivationOp)]


def test_the_earliest_store_goes_first_within_the_window():
    plain, first = _two_tiles(), _two_tiles()
    list_order(plain.body, TRN2)
    list_order(first.body, TRN2, _StoreFirst)
    assert _exp_inputs(plain) == ["t1", "t0"]  # earliest start: the tile that arrives first
    assert _exp_inputs(first) == ["t0", "t1"]  # store first: the tile of the first store
    x = np.random.default_rng(0).standard_normal((2, 128, 1024)).astype(np.float32)
    ins = {"x0": x[0], "x1": x[1]}
    results = []
    for g in (plain, first):
        insert_deallocs(g.body)
        verify(g)
        results.append(run(g, ins))
    for name in ("y0", "y1"):
        np.testing.assert_array_equal(results[0][name], results[1][name])


# (workload, shape, scheduled ns: with store-first finishes at most, without at least)
KEPT = [
    ("layernorm", (512, 1024), 19_500, 19_700),
    ("layernorm", (512, 1000), 20_300, 20_700),
    ("rmsnorm", (256, 1024), 11_600, 12_300),
]


@pytest.mark.parametrize(("name", "shape", "most", "least"), KEPT)
def test_norms_keep_a_store_first_finish(monkeypatch, name, shape, most, least):
    wl = get_workload(name)
    g = wl.graph(shape=shape)
    k = nk.compile(g)
    with monkeypatch.context() as m:
        m.setattr(straight_order, "STORE_WINDOWS_NS", ())
        plain = nk.compile(g)
    assert k.stats().dma_count == plain.stats().dma_count
    assert k.stats().dma_bytes == plain.stats().dma_bytes
    assert k.estimate().scheduled_ns < most < least < plain.estimate().scheduled_ns
    assert str(nk.compile(g).nki) == str(k.nki)
    rng = np.random.default_rng(5)
    rows, cols = shape
    ins = {
        "x": (3.0 + 2.0 * rng.standard_normal((rows, cols))).astype(np.float32),
        "w": rng.standard_normal(cols).astype(np.float32),
    }
    if name == "layernorm":
        ins["b"] = rng.standard_normal(cols).astype(np.float32)
    want = wl.reference(**{n: a.astype(np.float64) for n, a in ins.items()})["y"]
    for where, got in (("interpreter", k.run(ins)["y"]), ("simulator", nk.simulate(k, ins)["y"])):
        np.testing.assert_allclose(got, want, rtol=0, atol=2e-5, err_msg=where)
