"""Engine choice for elementwise chains (transforms/lower/engine_balance.py, straight_order.py)
and the ScalarE form of the centred multiply (elementwise.centred_multiply).

Counts on the NKI IR (instructions per engine, which instructions may move where); results bit
for bit equal to the kernel without the moves and reordering, and close to float64 NumPy on the
NKI interpreter and the simulator (fp32: 1e-5 relative and absolute, times 4 for row sums whose
order differs from NumPy's; the LayerNorm of inputs with a large mean is bounded by the fp32 row
sum, below)."""

from __future__ import annotations

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import ActivationOp, ForiLoopOp, TensorScalarOp, TensorTensorOp
from nkigen_lite.nki.target import TRN2
from nkigen_lite.testing.tolerance import assert_close, tolerance_for
from nkigen_lite.transforms.lower import deallocs, engine_balance, scale_last, straight_order
from nkigen_lite.workloads import get_workload
from nkigen_lite.workloads.norms import layernorm_reference

F32 = nk.float32


def _plain(monkeypatch, graph) -> nk.Kernel:
    """The kernel without engine moves and without the straight-line reordering."""
    with monkeypatch.context() as m:
        m.setattr(deallocs, "balance_engines", lambda *a: 0)
        m.setattr(deallocs, "reorder_straight", lambda *a: False)
        return nk.compile(graph)


def _executed(block, out=None) -> list:
    out = [] if out is None else out
    for op in block:
        if isinstance(op, ForiLoopOp):
            for _ in range(op.trip_count):
                _executed(op.body, out)
        elif op.name not in ("nki.alloc", "nki.dealloc", "nki.hbm_view"):
            out.append(op)
    return out


def _full_tile(op) -> bool:
    return op.access("dst").free_size > 1


def _feeds(name: str, graph, seed=0) -> dict:
    rng = np.random.default_rng(seed)
    return {v.name_hint: rng.standard_normal(v.type.shape).astype(np.float32) for v in graph.inputs}


# ---- LayerNorm 512x1024: the issue-12 row ----------------------------------------------------


def test_layernorm_affine_passes_on_both_engines():
    """The × w and + b passes (8 passes of 1,024 columns, some split per PSUM bank) run on both
    VectorE and GpSimd (before: all 8 on GpSimd), and the centred multiply runs on ScalarE for
    at least one tile."""
    k = nk.compile(get_workload("layernorm").graph(shape=(512, 1024)))
    stream = _executed(k.nki.body)
    tt = [op for op in stream if isinstance(op, TensorTensorOp) and _full_tile(op)]
    cols = {e: sum(op.access("dst").free_size for op in tt if op.engine == e) for e in ("vector", "gpsimd")}
    assert sum(cols.values()) == 8 * 1024
    assert min(cols.values()) >= 1024, cols
    norms = [op for op in stream if op.loc == "tensor.mul %mul_2" and _full_tile(op)]
    assert sum(op.access("dst").free_size for op in norms) == 4 * 1024  # the last tile in halves
    assert any(isinstance(op, ActivationOp) for op in norms)


def test_layernorm_no_engine_above_its_share():
    """Busy time per engine (cost model, executed instructions): no compute engine holds more
    than 47% of the kernel's VectorE + ScalarE + GpSimd work, and that work is below 26 us
    (before: GpSimd 14.7 of 29.5 us, 50%; then VectorE 10.7 of 24.5 us, 44%, fewer VectorE
    cycles where a broadcast row is read from PSUM; with the store-first list order, which
    gives VectorE one more pass and ends 0.3 us earlier, VectorE 10.9 of 23.5 us, 46%)."""
    k = nk.compile(get_workload("layernorm").graph(shape=(512, 1024)))
    busy = k.estimate().by_engine_ns
    work = {e: busy[e] for e in ("vector", "scalar", "gpsimd")}
    total = sum(work.values())
    assert max(work.values()) <= 0.47 * total, work
    assert total < 26_000, work


def test_layernorm_instructions_and_bytes_unchanged_by_moves(monkeypatch):
    """Moving and reordering changes neither the DMAs nor what runs per NKI op, except that a
    × w / + b pass reading a row from PSUM is one instruction per bank (same columns in all)
    and copies of a row nothing reads any more are dropped; the schedule is shorter."""
    g = get_workload("layernorm").graph(shape=(512, 1024))
    a, b = nk.compile(g), _plain(monkeypatch, g)
    assert a.stats().dma_bytes == b.stats().dma_bytes
    ea, eb = _executed(a.nki.body), _executed(b.nki.body)

    def same(ops):
        return sorted(op.name for op in ops if op.name not in ("nki.tensor_tensor", "nki.tensor_copy"))

    def cols(ops):
        return sum(op.access("dst").free_size for op in ops if op.name == "nki.tensor_tensor")

    def copies(ops):
        return sum(op.name == "nki.tensor_copy" for op in ops)

    assert same(ea) == same(eb)
    assert cols(ea) == cols(eb) == 8 * 1024
    assert copies(ea) <= copies(eb) == 4
    assert a.estimate().scheduled_ns < b.estimate().scheduled_ns


@pytest.mark.parametrize(
    "name,opts",
    [
        ("layernorm", {"shape": (512, 1024)}),
        ("layernorm", {"shape": (640, 96)}),
        ("gelu_tanh", {"shape": (256, 512)}),
        ("clamped_swiglu", {"shape": (128, 1440)}),
        ("rope", {"batch": 1, "seq": 128, "heads": 4, "d": 64}),
        ("rmsnorm", {"shape": (1, 128, 1024)}),
    ],
)
def test_bitwise_equal_to_unmoved_and_close_to_float64(monkeypatch, name, opts):
    w = get_workload(name)
    g = w.graph(**opts)
    feeds = _feeds(name, g)
    with monkeypatch.context() as m:  # engine moves only: not the row-scale swap, which reorders a product
        m.setattr(scale_last, "swap_row_scale", lambda *a: False)
        k = nk.compile(g)
        plain = _plain(monkeypatch, g).run(feeds)
    got = k.run(feeds)
    ref = w.reference(**feeds)
    rtol, atol = tolerance_for(F32)
    for out, r in ref.items():
        np.testing.assert_array_equal(got[out], plain[out])
        assert_close(got[out], r, F32, what=f"{name} {out}", rtol=4 * rtol, atol=4 * atol)
        assert_close(
            nk.simulate(k, feeds)[out], r, F32, what=f"{name} simulator", rtol=4 * rtol, atol=4 * atol
        )


@pytest.mark.parametrize("offset", [100.0, 1000.0])
def test_layernorm_large_mean_bounded_by_the_row_sum(offset):
    """x = offset + N(0, 1): the fp32 row sum's rounding (about u·offset per row) bounds the
    error of any order of evaluation; the ScalarE form x·r + (−mean·r) rounds terms of size
    offset·r, adding about as much again. Tolerance: 4 · 2^-24 · offset · sqrt(1024) · 4
    (measured 5.0e-5 at offset 100, 4.1e-4 at 1000; the VectorE form (x − mean)·r gave 3.1e-5
    and 2.9e-4)."""
    g = get_workload("layernorm").graph(shape=(512, 1024))
    rng = np.random.default_rng(3)
    feeds = {
        "x": (rng.standard_normal((512, 1024)) + offset).astype(np.float32),
        "w": rng.standard_normal(1024).astype(np.float32),
        "b": rng.standard_normal(1024).astype(np.float32),
    }
    ref = layernorm_reference(**feeds)["y"]
    tol = 4 * 2.0**-24 * offset * 32 * 4
    k = nk.compile(g)
    for got in (k.run(feeds)["y"], nk.simulate(k, feeds)["y"]):
        assert_close(got, ref, F32, what=f"layernorm offset {offset}", rtol=tol, atol=tol)


# ---- which instructions may move --------------------------------------------------------------


def _ops_of(k, cls):
    return [op for op in k.nki.walk() if isinstance(op, cls)]


def test_integer_and_power_tensor_tensor_stay():
    """Integer arithmetic (exact on GpSimd) and power (GpSimd only) are never candidates."""
    b = nk.Builder("ints")
    x = b.add_input("x", (128, 256), nk.int32)
    y = b.add_input("y", (128, 256), nk.int32)
    f = b.add_input("f", (128, 256), F32)
    b.set_outputs({"s": x + y, "p": f**f})
    k = nk.compile(b.graph)
    tts = _ops_of(k, TensorTensorOp)
    assert tts
    assert all(engine_balance.candidates(op, TRN2) == () for op in tts)


def test_candidates_follow_the_engine_rules():
    """Float tensor_tensor: VectorE or GpSimd (SBUF only); one-op or multiply-add tensor_scalar:
    VectorE or ScalarE; a two-multiply tensor_scalar stays on VectorE (ScalarE's forms)."""
    b = nk.Builder("f")
    x = b.add_input("x", (128, 512), F32)
    y = b.add_input("y", (128, 512), F32)
    b.set_outputs({"z": (x * y + 1.0) * 3.0})
    k = nk.compile(b.graph)
    for op in _ops_of(k, TensorTensorOp):
        assert engine_balance.candidates(op, TRN2) == ("vector", "gpsimd")
    for op in _ops_of(k, TensorScalarOp):
        chain = (op.attrs["op0"],) + ((op.attrs["op1"],) if op.attrs["op1"] else ())
        want = ("vector", "scalar") if chain in TRN2.scalar_tensor_scalar_ops else ()
        assert engine_balance.candidates(op, TRN2) == want


def test_psum_operand_never_moves_to_gpsimd():
    """A tensor_tensor reading PSUM (a matmul result) is not a GpSimd candidate."""
    a = np.zeros((128, 128), np.float32)
    k = nk.compile(lambda p, q, r: (p @ q) * r, a, a, a)
    for op in _ops_of(k, TensorTensorOp):
        if any(op.access(n).space.value == "psum" for n, _ in op.access_attrs()):
            assert "gpsimd" not in engine_balance.candidates(op, TRN2)


def test_reorder_refuses_hbm_round_trips():
    """A straight-line kernel whose DMAs read an HBM tensor it also writes keeps program order
    (list_order keeps no order through HBM)."""
    text = """graph @k(%x: hbm<128x64xf32>) {
  %s = nki.alloc : hbm<128x64xf32>
  %t = nki.alloc : tile<128x64xf32, sbuf>
  nki.dma_copy %t, %x[0:128, 0:64]
  nki.dma_copy %s[0:128, 0:64], %t
  %u = nki.alloc : tile<128x64xf32, sbuf>
  nki.dma_copy %u, %s[0:128, 0:64]
  nki.dealloc %t
  nki.dealloc %u
  return y = %s
}"""
    g = nk.parse(text)
    before = str(g)
    assert not straight_order.reorder_straight(g, TRN2, deallocs.insert_deallocs)
    assert str(g) == before


def test_deterministic():
    for name, opts in (("layernorm", {"shape": (512, 1024)}), ("gelu_tanh", {"shape": (1024, 2048)})):
        a, b = (nk.compile(get_workload(name).graph(**opts)) for _ in range(2))
        assert str(a.nki) == str(b.nki)


def test_secondary_rows_improve(monkeypatch):
    """gelu_tanh (1024, 2048), clamped_swiglu (128, 1440) and rope (1, 128, 16, 128): the
    scheduled estimate with the moves is shorter than without."""
    for name, opts in (
        ("gelu_tanh", {"shape": (1024, 2048)}),
        ("clamped_swiglu", {"shape": (128, 1440)}),
        ("rope", {"batch": 1, "seq": 128, "heads": 16, "d": 128}),
    ):
        g = get_workload(name).graph(**opts)
        assert nk.compile(g).estimate().scheduled_ns < _plain(monkeypatch, g).estimate().scheduled_ns


# ---- broadcast rows read from PSUM (psum_rows.py) -----------------------------------------------


def test_layernorm_reads_broadcast_rows_from_psum():
    """Some VectorE × w / + b passes read the broadcast rows from their PSUM banks (one
    instruction per 512-column bank, N cycles instead of 2N); every one of them reads a PSUM
    tile written by a ones-matmul."""
    k = nk.compile(get_workload("layernorm").graph(shape=(512, 1024)))
    stream = _executed(k.nki.body)
    from_psum = [
        op
        for op in stream
        if isinstance(op, TensorTensorOp)
        and any(op.access(n).space.value == "psum" for n in ("data1", "data2"))
    ]
    assert from_psum
    assert all(op.engine == "vector" and op.access("dst").free_size == 512 for op in from_psum)
    banks = {
        op.access(n).tensor
        for op in from_psum
        for n in ("data1", "data2")
        if op.access(n).space.value == "psum"
    }
    writers = [op for op in stream if op.name == "nki.nc_matmul" and op.access("dst").tensor in banks]
    assert len(writers) == len(banks) <= 4


def test_no_psum_rows_when_banks_are_short():
    """broadcast_rows finds nothing when the kernel's PSUM tiles exceed the banks at once."""
    from nkigen_lite.transforms.lower.psum_rows import broadcast_rows

    k = nk.compile(get_workload("layernorm").graph(shape=(512, 1024)))
    stream = _executed(k.nki.body)
    small = TRN2.__class__(**{**TRN2.__dict__, "psum_num_banks": 2})
    assert broadcast_rows(stream, small) == {}
