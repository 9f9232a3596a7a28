"""RMSNorm of one bf16 row block (1×128×1024, a decode-sized norm): the × w pass reads the
broadcast weight row from its PSUM banks on VectorE (psum_rows.py: the bf16 copy of the fp32
broadcast of a bf16 row is exact, so the bank holds the same numbers) instead of GpSimd reading
an SBUF copy, and the last store goes out in column halves (tail_split.py: a 3-D output of one
row block qualifies), and the row scale comes after × w (scale_last.py: ``(x · w) · rsqrt``, so
× w runs while ScalarE computes the statistics). Results close to float64 NumPy on the NKI
interpreter and the simulator (bf16 output: 2⁻⁷ relative + 1e-2 absolute for |y| ≲ 4); without
the swap, bit for bit those of the kernel without the PSUM reads and the split."""

from __future__ import annotations

import ml_dtypes
import numpy as np

import nkigen_lite as nk
from nkigen_lite.nki.ops import DmaCopyOp, TensorCopyOp, TensorScalarOp, TensorTensorOp
from nkigen_lite.nki.types import HbmType, MemorySpace
from nkigen_lite.transforms.lower import deallocs, psum_rows, scale_last
from nkigen_lite.workloads import get_workload

RMS = get_workload("rmsnorm")


def _graph():
    return RMS.graph(shape=(1, 128, 1024), dtype=nk.bfloat16)


def _executed(k) -> list:
    return [op for op in k.nki.walk() if hasattr(op, "access_attrs")]


def _inputs():
    rng = np.random.default_rng(5)
    return {
        "x": (1.5 * rng.standard_normal((1, 128, 1024))).astype(ml_dtypes.bfloat16),
        "w": rng.standard_normal(1024).astype(ml_dtypes.bfloat16),
    }


def _psum_reads(k) -> list:
    return [
        op
        for op in _executed(k)
        if isinstance(op, TensorTensorOp)
        and any(op.access(n).space is MemorySpace.PSUM for n in ("data1", "data2"))
    ]


def _stores(k) -> list:
    return [
        op
        for op in _executed(k)
        if isinstance(op, DmaCopyOp) and isinstance(op.access("dst").tensor.type, HbmType)
    ]


def test_times_w_reads_the_broadcast_row_from_psum_on_vector():
    k = nk.compile(_graph())
    reads = _psum_reads(k)
    assert len(reads) == 2 and all(op.engine == "vector" for op in reads)  # one per 512-column bank
    assert not [op for op in _executed(k) if getattr(op, "engine", None) == "gpsimd"]
    psum_copies = [
        op
        for op in _executed(k)
        if isinstance(op, TensorCopyOp) and op.access("src").space is MemorySpace.PSUM
    ]
    assert psum_copies == []  # the bf16 copies of the row are dropped


def test_last_store_in_halves():
    k = nk.compile(_graph())
    stores = _stores(k)
    assert len(stores) == 2
    assert sorted(s.access("dst").dims[-1].offset.const for s in stores) == [0, 512]
    assert all(s.access("src").free_size == 512 for s in stores)


def _no_swap(m):
    m.setattr(scale_last, "swap_row_scale", lambda *a: False)


def test_results_match_float64_and_the_kernel_without_the_changes(monkeypatch):
    g = _graph()
    k = nk.compile(g)
    with monkeypatch.context() as m:
        _no_swap(m)
        unswapped = nk.compile(g)
        m.setattr(deallocs, "split_last_store", lambda *a: False)
        m.setattr(psum_rows, "_exact_cast", lambda *a: False)
        plain = nk.compile(g)
    assert len(_stores(plain)) == 1 and not _psum_reads(plain)
    assert k.estimate().scheduled_ns < unswapped.estimate().scheduled_ns < plain.estimate().scheduled_ns
    assert k.stats().dma_bytes == plain.stats().dma_bytes
    ins = _inputs()
    want = RMS.reference(**{n: a.astype(np.float64) for n, a in ins.items()})["y"]
    got = k.run(ins)["y"]
    np.testing.assert_array_equal(unswapped.run(ins)["y"], plain.run(ins)["y"])
    for where, y in (("interpreter", got), ("simulator", nk.simulate(k, ins)["y"])):
        np.testing.assert_allclose(y.astype(np.float64), want, rtol=2**-7, atol=1e-2, err_msg=where)


def test_times_w_before_the_row_scale():
    """The × w passes read x's loaded tile (not a scaled copy); the stored halves are written by
    tensor_scalars by the rsqrt column, on ScalarE."""
    k = nk.compile(_graph())
    ops = _executed(k)
    x_tile = next(op for op in ops if isinstance(op, DmaCopyOp) and op.loc == "load %x").access("dst").tensor
    assert all(any(op.access(n).tensor is x_tile for n in ("data1", "data2")) for op in _psum_reads(k))
    stored = {s.access("src").tensor for s in _stores(k)}
    writers = [op for op in ops if op.writes and op.access("dst").tensor in stored]
    assert len(writers) == 2
    assert all(isinstance(op, TensorScalarOp) and op.engine == "scalar" for op in writers)
    assert all(isinstance(op.access("operand0"), type(op.access("data"))) for op in writers)
