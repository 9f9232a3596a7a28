"""onchip_rows.py: small values a top-level fusion group stores are read back from its SBUF
tile by later items, and scratch buffers nothing reads are dropped with their stores. A row
read at a runtime position (``dynamic_slice``: the clamped index computed on chip, then a
``gather_rows``) and a row written at one (``dynamic_update_slice`` into an input updated in
place, the rows computed by the kernel) move no HBM scratch bytes for the index or the
written rows; results agree bit for bit with NumPy written here (the ops move values; the
written rows are ``2 * x``, exact in f32), at the first, a middle and the last position."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import DmaCopyOp, DmaScatterOp
from nkigen_lite.testing.tolerance import assert_close
from nkigen_lite.workloads import get_workload

from ..workloads.helpers import scratch_dmas

SMALL = {"hidden": 256, "heads": 4, "kv_heads": 2, "head_dim": 64, "inter": 512, "max_seq": 256}


def _row_at(rows=64, width=32):
    b = nk.Builder("row_at")
    t = b.add_input("table", (rows, width), nk.float32)
    pos = b.add_input("pos", (), nk.int32)
    b.set_outputs({"y": b.dynamic_slice(t, [pos, 0], [1, width])})
    return b.graph


@pytest.mark.parametrize("pos", [0, 37, 63])
def test_gathered_row_index_never_reaches_hbm(pos):
    g = _row_at()
    k = nk.compile(g)
    table = np.random.default_rng(pos).standard_normal((64, 32)).astype(np.float32)
    ins = {"table": table, "pos": np.asarray(pos, np.int32)}
    want = table[pos][None]
    for got in (k.run(ins)["y"], nk.simulate(k, ins)["y"]):
        np.testing.assert_array_equal(got, want)
    assert scratch_dmas(k) == (0, 0)  # was 2 DMAs: the index stored, then loaded for the gather


def _append(heads=4, seq=16, d=32):
    b = nk.Builder("append")
    cache = b.add_input("cache", (heads, seq, d), nk.float32)
    x = b.add_input("x", (heads, d), nk.float32)
    pos = b.add_input("pos", (), nk.int32)
    row = b.reshape(x * 2.0, (heads, 1, d))
    b.set_outputs(
        {"cache_out": b.dynamic_update_slice(cache, row, [0, pos, 0])}, aliases={"cache_out": "cache"}
    )
    return b.graph


@pytest.mark.parametrize("pos", [0, 9, 15])
def test_appended_rows_are_written_from_sbuf(pos):
    g = _append()
    k = nk.compile(g)
    rng = np.random.default_rng(pos)
    cache = rng.standard_normal((4, 16, 32)).astype(np.float32)
    x = rng.standard_normal((4, 32)).astype(np.float32)
    want = cache.copy()
    want[:, pos] = 2 * x
    ins = {"cache": cache, "x": x, "pos": np.asarray(pos, np.int32)}
    for got in (k.run(dict(ins))["cache_out"], nk.simulate(k, dict(ins))["cache_out"]):
        np.testing.assert_array_equal(got, want)
    rows = sum(
        1
        for op in k.nki.body.walk()
        if isinstance(op, DmaScatterOp) and op.access("src").tensor.type.shape == (4, 32)
    )
    assert rows == 1
    count, nbytes = scratch_dmas(k)
    assert nbytes < 4 * 32 * 4, (count, nbytes)  # the rows (512 B) never reach HBM scratch


def test_registered_lowering_reads_a_held_input_from_sbuf():
    """tensor.decode_attention's hand-written body loads q whole into a (heads, D) tile; in a
    reduced Qwen3 decode step q (roped, cast to bf16) comes from a top-level group, whose tile
    the inlined body reads instead (custom.inline_body): no DMA fills a (heads, D) tile in the
    attention (numerics: tests/workloads/test_qwen3_decode.py)."""
    k = nk.compile(get_workload("qwen3_decode").graph(**SMALL))
    reads_q = [
        op
        for op in k.nki.body
        if isinstance(op, DmaCopyOp)
        and "decode_attention" in (op.loc or "")
        and op.access("dst").space.value == "sbuf"
        and op.access("dst").tensor.type.shape == (4, 64)
    ]
    assert reads_q == []


def test_projection_row_relaid_per_head_on_chip():
    """A one-row projection reshaped to heads for a per-head reduction (the decode step's
    ``(h @ Wq).reshape(heads, d)``): the heads group takes the row from the matmul's SBUF tile
    by one SBUF -> SBUF DMA (the row on 1 partition -> one head per partition) instead of a
    store and a load through HBM scratch. f32; tolerance 1e-5 relative to max|reference| (a
    256-term f32 dot product)."""
    b = nk.Builder("heads")
    x = b.add_input("x", (1, 256), nk.float32)
    w = b.add_input("w", (256, 512), nk.float32)
    z = b.reshape(x @ w, (4, 128))
    b.set_outputs({"y": z - b.max(z, axis=-1, keepdims=True)})
    g = b.graph
    k = nk.compile(g)
    rng = np.random.default_rng(5)
    ins = {
        "x": rng.standard_normal((1, 256)).astype(np.float32),
        "w": rng.standard_normal((256, 512)).astype(np.float32),
    }
    zz = (ins["x"].astype(np.float64) @ ins["w"].astype(np.float64)).reshape(4, 128)
    want = zz - zz.max(-1, keepdims=True)
    for got in (k.run(ins)["y"], nk.simulate(k, ins)["y"]):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * np.abs(want).max())
    assert scratch_dmas(k) == (0, 0)
    on_chip = [
        op
        for op in k.nki.body
        if isinstance(op, DmaCopyOp)
        and op.access("src").space.value == "sbuf"
        and op.access("dst").space.value == "sbuf"
    ]
    assert len(on_chip) == 1 and on_chip[0].access("dst").partitions == 4


_CHILD = """
import sys
sys.path.insert(0, {root!r})
import nkigen_lite as nk
from nkigen_lite.workloads import get_workload
g = get_workload("qwen3_decode").graph(**{small!r})
sys.stdout.write(str(nk.compile(g).nki))
"""


def test_reduced_decode_step_ir_is_byte_identical_across_processes():
    """The on-chip bookkeeping (dicts keyed by values, scratch dropped in program order) gives
    the same NKI IR under different hash seeds."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    outs = {
        seed: subprocess.run(
            [sys.executable, "-c", _CHILD.format(root=root, small=SMALL)],
            env=dict(os.environ, PYTHONHASHSEED=seed),
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("1", "12345")
    }
    assert outs["1"] == outs["12345"] and "dma_scatter" in outs["1"]


def test_attention_output_feeds_the_o_projection_on_chip():
    """tensor.decode_attention's body stores its output rows (heads, D) from one tile; that tile
    is noted when the body is inlined (custom.inline_body), and the O projection of the one-row
    ``o.reshape(1, heads·D) @ Wo`` gets its Aᵀ [D, heads] by one TensorE transpose of it
    (MatmulEmitter._held_a) instead of storing o and loading it back K-major. Reduced Qwen3
    decode step with head dim 128 (Aᵀ chunks are whole rows of o); numerics on both
    interpreters against the float64 reference, bf16 tolerance as tests/workloads/test_qwen3_decode.py."""
    w = get_workload("qwen3_decode")
    g = w.graph(**{**SMALL, "head_dim": 128})
    k = nk.compile(g)
    ins = w.inputs(g, seed=2)
    ref = w.reference(**ins)
    for got in (k.run(ins), nk.simulate(k, ins)):
        for name, want in ref.items():
            scale = max(1.0, float(np.abs(want).max()))
            assert_close(got[name], want, nk.bfloat16, what=name, rtol=2e-2, atol=2e-2 * scale)
    count, nbytes = scratch_dmas(k)
    assert count <= 3, (count, nbytes)  # was 5: o stored and loaded back
    assert not any(
        isinstance(op, DmaCopyOp) and op.access("src").tensor.name_hint in ("o", "o_rows")
        for op in k.nki.body
    )


@pytest.mark.parametrize(
    ("fn", "table"),
    [
        (lambda t, ids: (t[ids], ids.sum(0)), (56, 1)),
        (
            lambda t, ids: (np.take_along_axis(t, np.argmax(t, -1, keepdims=True), -1), t.sum(0) + ids[0, 0]),
            (7, 2, 4),
        ),
    ],
    ids=["gather_with_column_sum_of_ids", "take_argmax_with_sum_over_axis_0"],
)
def test_a_value_held_transposed_is_not_read_as_rows(fn, table):
    """A group that lays a small value out with a later axis on the partitions (a sum over
    axis 0 puts axis 1 there) holds it transposed; a later gather must not take that tile as
    the ids' rows (before: the (7, 2) gathered result came out transposed). Exact: the ops
    move values, the sums are of small integers and multiples of 1/4."""
    rng = np.random.default_rng(0)
    t = (rng.integers(-8, 8, size=table) / 4).astype(np.float32)
    ids = rng.integers(0, table[0], size=(7, 2)).astype(np.int32)
    g = nk.trace(fn).trace(t, ids)
    feed = dict(zip(g.input_names, (t, ids)))
    k = nk.compile(g)
    want = fn(t, ids)
    for got in (k.run(feed), nk.simulate(k, feed)):
        for name, w in zip(g.outputs, want):
            np.testing.assert_array_equal(got[name], w, err_msg=name)
