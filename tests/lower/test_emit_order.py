"""Straight-line kernels reordered by a list schedule (transforms/lower/emit_order.py): work
that does not wait for a DMA moves ahead of work that does, every dependency through a tile keeps
its order (same results on the NKI interpreter), the scheduled estimate does not grow, PSUM stays
within its banks, and a block that cannot keep the budgets keeps its order."""

import numpy as np
import pytest

from nkigen_lite.ir.errors import VerifyError
from nkigen_lite.nki import TRN2, Builder, run, ts, verify
from nkigen_lite.perf import estimate
from nkigen_lite.transforms.lower import emit_order
from nkigen_lite.transforms.lower.deallocs import insert_deallocs
from nkigen_lite.transforms.lower.emit_order import list_order


def _kernel(n_psum: int = 1):
    """y = exp(x) + 1 from a DMA'd x, then z = an on-chip constant chain that never waits for
    a DMA, written after it; ``n_psum`` PSUM tiles, one after the other, in the z chain."""
    b = Builder("k")
    x = b.add_input("x", (128, 512))
    y = b.alloc((128, 512), space="hbm", name="y")
    z = b.alloc((128, 64), space="hbm", name="z")
    t = b.alloc((128, 512), name="t")
    b.dma_copy(dst=t[:, :], src=x[:, :])
    e = b.alloc((128, 512), name="e")
    b.activation(dst=e[:, :], op="exp", data=t[:, :])
    b.tensor_scalar(dst=e[:, :], data=e[:, :], op0="add", operand0=1.0)
    b.dma_copy(dst=y[:, :], src=e[:, :])
    c = b.alloc((128, 64), name="c")
    b.memset(dst=c[:, :], value=2.0)
    ident = b.alloc((128, 128), name="ident")
    b.memset(dst=ident[:, :], value=0.0)
    for _ in range(n_psum):
        ps = b.alloc((128, 64), space="psum", name="ps")
        b.nc_matmul(dst=ps[:, :], stationary=ident[:, :], moving=c[:, :])
        b.tensor_tensor(dst=c[:, :], data1=c[:, :], data2=ps[:, :], op="add")
    b.dma_copy(dst=z[:, :], src=c[:, :])
    b.set_outputs({"y": y, "z": z})
    return b


def _order(g) -> list[str]:
    return [op.name for op in g.body if op.name not in ("nki.alloc", "nki.hbm_view", "return")]


def test_work_without_a_dma_moves_ahead_and_results_stay():
    plain = _kernel().graph
    insert_deallocs(plain.body)
    moved_b = _kernel()
    list_order(moved_b.graph.body, TRN2)
    moved = moved_b.graph
    insert_deallocs(moved.body)
    verify(moved)
    before, after = _order(plain), _order(moved)
    assert sorted(before) == sorted(after)
    # the memsets ran after the exp chain; now they come before the activation waiting on x
    assert after.index("nki.memset") < after.index("nki.activation")
    assert before.index("nki.memset") > before.index("nki.activation")
    x = np.random.default_rng(0).standard_normal((128, 512)).astype(np.float32)
    a, b = run(plain, {"x": x}), run(moved, {"x": x})
    for name in ("y", "z"):
        np.testing.assert_array_equal(a[name], b[name])
    assert estimate(moved).scheduled_ns <= estimate(plain).scheduled_ns


def _independent_psum(n: int):
    """A long VectorE memset, then n independent matmuls into their own PSUM tiles (one bank
    each), each read out by its own VectorE copy: in program order one bank is live at a time; a
    list schedule left alone would run every matmul while VectorE is busy and hold n banks."""
    b = Builder("k")
    y = b.alloc((128, 64 * n), space="hbm", name="y")
    busy = b.alloc((128, 8192), name="busy")
    b.memset(dst=busy[:, :], value=0.0)
    ident = b.alloc((128, 128), name="ident")
    b.memset(dst=ident[:, :], value=1.0, engine="gpsimd")
    for i in range(n):
        ps = b.alloc((128, 64), space="psum", name="ps")
        b.nc_matmul(dst=ps[:, :], stationary=ident[:, :], moving=ident[:, ts(0, 64)])
        part = b.alloc((128, 64), name="part")
        b.tensor_copy(dst=part[:, :], src=ps[:, :])
        b.dma_copy(dst=y[:, ts(i, 64)], src=part[:, :])
    b.set_outputs({"y": y})
    return b


def test_psum_stays_within_its_banks(monkeypatch):
    b = _independent_psum(12)
    list_order(b.graph.body, TRN2)
    insert_deallocs(b.graph.body)
    assert verify(b.graph).psum_banks <= TRN2.psum_num_banks
    # without the budget the same schedule would break the PSUM limit
    monkeypatch.setattr(emit_order, "_footprint", lambda v, t: ("sbuf", 0))
    b = _independent_psum(12)
    list_order(b.graph.body, TRN2)
    insert_deallocs(b.graph.body)
    with pytest.raises(VerifyError, match="PSUM peak"):
        verify(b.graph)


def test_a_block_with_deallocations_is_refused():
    b = _kernel()
    insert_deallocs(b.graph.body)
    with pytest.raises(ValueError, match="before insert_deallocs"):
        list_order(b.graph.body, TRN2)


def test_a_block_that_cannot_keep_the_budget_keeps_its_order(monkeypatch):
    monkeypatch.setattr(emit_order, "SBUF_SHARE", 0.0)  # no tile fits: nothing can be placed
    b = _kernel()
    before = [id(op) for op in b.graph.body]
    list_order(b.graph.body, TRN2)
    assert [id(op) for op in b.graph.body] == before
