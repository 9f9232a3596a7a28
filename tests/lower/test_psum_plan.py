"""PSUM planning by liveness (transforms/lower/psum_plan.py): matmul N blocks, transposes and
rotating PSUM buffers share the 8 banks by the peak of live tiles; the verifier rejects programs
whose live PSUM exceeds 16 KiB/partition or whose matmul writes more than one bank."""

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.ir.graph import Graph
from nkigen_lite.nki import ds
from nkigen_lite.nki.ops import AllocOp, DeallocOp, ForiLoopOp, MatmulOp, TransposeOp
from nkigen_lite.transforms.lower.deallocs import insert_deallocs
from nkigen_lite.transforms.lower.psum_plan import matmul_block_banks
from nkigen_lite.transforms.lower.rotation import plan_rotation

BF16 = ml_dtypes.bfloat16
F32 = nk.float32
BANK = nk.TRN2.psum_bank_bytes


def _psum_walk(block, live=0, peak=0):
    """Peak PSUM bytes per partition live at once, read off the NKI IR independently of the
    compiler: an alloc holds bufs x one bank from itself to its dealloc; a loop body once."""
    held = {}
    for op in block:
        if isinstance(op, AllocOp) and op.result.type.space.value == "psum":
            assert op.result.type.bytes_per_partition <= BANK
            held[op.result] = op.bufs * BANK
            live += held[op.result]
            peak = max(peak, live)
        elif isinstance(op, DeallocOp) and op.operand(0) in held:
            live -= held.pop(op.operand(0))
        elif isinstance(op, ForiLoopOp):
            peak = max(peak, _psum_walk(op.body, live, peak))
    return peak


def _several_matmuls(x, w1, w2, w3):
    """Three matmuls in one row pipeline: x transposed on chip (K contiguous), a 3-bank N block,
    two 1-bank ones, and w3ᵀ transposed on chip (B with K contiguous)."""
    return (x @ w1) @ w2 + x @ w3.T


def _inputs():
    rng = np.random.default_rng(0)
    return (
        rng.standard_normal((256, 384)).astype(BF16),
        (rng.standard_normal((384, 1536)) / 20).astype(BF16),
        (rng.standard_normal((1536, 128)) / 40).astype(BF16),
        (rng.standard_normal((128, 384)) / 20).astype(BF16),
    )


def test_matmuls_and_transposes_share_eight_banks_by_liveness():
    args = _inputs()
    k = nk.compile(_several_matmuls, *args)
    ops = list(k.nki.walk())
    assert any(isinstance(op, TransposeOp) for op in ops)
    assert sum(isinstance(op, MatmulOp) for op in ops) >= 3
    peak = _psum_walk(k.nki.body)
    assert peak <= 8 * BANK  # 16 KiB per partition
    assert k.stats().peak_psum_bytes == peak
    psum = [op for op in ops if isinstance(op, AllocOp) and op.result.type.space.value == "psum"]
    depth = {(op.loc, op.result.name_hint): op.bufs for op in psum}
    # the 3-bank N block of x @ w1 double-buffers (3 x 2 + its transposes' 2 banks = 8);
    # the 1-bank blocks of the two other matmuls find free banks and rotate 4 deep
    assert depth[("tensor.matmul %matmul", "acc")] == 2
    assert depth[("tensor.matmul %matmul_1", "acc")] == 4
    assert depth[("tensor.matmul %matmul_2", "acc")] == 4
    x, w1, w2, w3 = (a.astype(np.float64) for a in args)
    ref = (x @ w1).astype(BF16).astype(np.float64) @ w2 + x @ w3.T
    # bf16 operands, fp32 accumulation, bf16 intermediate and result: 2^-8 relative per rounding
    np.testing.assert_allclose(k(*args).astype(np.float64), ref, rtol=2e-2, atol=2e-2 * np.abs(ref).max())


@pytest.mark.parametrize(
    ("n", "transposes", "reserved", "banks"),
    [
        (4096, False, 0, 4),  # 4 banks x 2 buffers = 8
        (4096, True, 0, 3),  # B transposed per K chunk: 3 x 2 + 2 = 8
        (1536, False, 0, 3),  # N needs only 3 banks
        (100, False, 0, 1),
        (4096, False, 4, 2),  # 4 banks held by enclosing code
        (4096, True, 6, 1),  # nothing left: one bank, the verifier judges the program
    ],
)
def test_matmul_block_banks(n, transposes, reserved, banks):
    assert matmul_block_banks(nk.TRN2, n, transposes=transposes, reserved=reserved) == banks


def _psum_loop(n_tiles: int, bufs: int = 1) -> Graph:
    """A loop whose body runs one matmul into each of ``n_tiles`` one-bank PSUM tiles, then
    evacuates them all (all ``n_tiles`` are live at once)."""
    b = nk.nki.Builder("banks")
    x = b.add_input("x", (128, 512), F32)
    y = b.alloc((128, 512 * n_tiles), F32, "hbm", name="y")
    with b.fori_loop(0, 4):
        xs = b.alloc((128, 512), F32, "sbuf")
        b.dma_copy(xs, x)
        banks = [b.alloc((128, 512), F32, "psum", bufs=bufs, name="acc") for _ in range(n_tiles)]
        for ps in banks:
            b.nc_matmul(ps, xs[:, 0:128], xs)
        for j, ps in enumerate(banks):
            o = b.alloc((128, 512), F32, "sbuf")
            b.tensor_copy(o, ps)
            b.dma_copy(y[:, ds(512 * j, 512)], o)
    b.set_outputs({"y": y})
    return b.graph


@pytest.mark.parametrize(("tiles", "depth"), [(1, 4), (2, 4), (3, 2), (4, 2), (5, 1)])
def test_rotation_depth_grows_where_banks_are_free(tiles, depth):
    """Tiles of one role deepen together while the loop's live banks stay within 8 (all
    ``tiles`` accumulators are live at once): 1 or 2 tiles x 4, 3 or 4 tiles x 2, 5 tiles x 1."""
    g = _psum_loop(tiles)
    insert_deallocs(g.body)
    plan_rotation(g, nk.TRN2)
    got = {op.bufs for op in g.walk() if isinstance(op, AllocOp) and op.result.type.space.value == "psum"}
    assert got == {depth}
    assert _psum_walk(g.body) <= 8 * BANK
    nk.nki.verify(g)
    x = np.random.default_rng(2).standard_normal((128, 512)).astype(np.float32)
    ref = x[:, :128].astype(np.float64).T @ x
    out = nk.nki.run(g, {"x": x})["y"]
    for j in range(tiles):
        np.testing.assert_allclose(out[:, 512 * j : 512 * (j + 1)], ref, rtol=1e-4, atol=1e-3)


def test_verifier_rejects_live_psum_over_16_kib():
    g = _psum_loop(3, bufs=3)  # 3 tiles x 3 rotating buffers = 9 banks
    msg = r"PSUM peak 9 banks \(18,432 B/partition\) > 8 banks \(16,384\)"
    with pytest.raises(nk.VerifyError, match=msg):
        nk.nki.verify(g)


def test_verifier_rejects_a_matmul_group_over_two_banks():
    """A 1,024-column fp32 accumulator would make one accumulation group span two banks."""
    b = nk.nki.Builder("two_banks")
    x = b.add_input("x", (128, 512), F32)
    xs = b.alloc((128, 512), F32, "sbuf")
    b.dma_copy(xs, x)
    ps = b.alloc((128, 1024), F32, "psum")
    b.nc_matmul(ps[:, 256:768], xs[:, 0:128], xs)
    b.set_outputs({})
    with pytest.raises(nk.VerifyError, match="PSUM tile uses 4,096 B/partition > one bank of 2,048 B"):
        nk.nki.verify(b.graph)
