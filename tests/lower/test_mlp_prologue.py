"""A decoder layer's back half — O projection + residual, rmsnorm, gated MLP, residual — as one
row / weights pipeline (mlp_prologue.py + mlp_block.py): the residual ``o2`` and the
normalised rows never reach HBM, every weight is read once. Bounds are DMA byte counts per
HBM tensor (perf/traffic.py); numerics against float64 NumPy on the NKI interpreter and the
simulator."""

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import (
    ActivationOp,
    DmaCopyOp,
    ForiLoopOp,
    HbmViewOp,
    MatmulOp,
    TensorCopyOp,
    TransposeOp,
)
from nkigen_lite.perf.traffic import bytes_by_tensor
from nkigen_lite.transforms.lower import mlp_block

BF16 = ml_dtypes.bfloat16


def _rmsnorm(x, w, eps=1e-6):
    xf = x.astype(np.float32)
    ms = (xf * xf).mean(axis=-1, keepdims=True)
    return (xf / np.sqrt(ms + eps) * w.astype(np.float32)).astype(x.dtype)


def _silu(x):
    return x * (1 / (1 + np.exp(-x)))


def back(o, h, w_o, w_post, w_gu, w_dn):
    """Qwen3's layer after attention: o (1, S, H·hd), h (1, S, D) bf16."""
    o2 = o @ w_o + h
    x = _rmsnorm(o2, w_post)
    g, u = np.split(x @ w_gu, 2, axis=-1)
    return (_silu(g) * u) @ w_dn + o2


def _inputs(seq, e, d, inter, seed=0):
    rng = np.random.default_rng(seed)
    return [
        rng.standard_normal((1, seq, e)).astype(BF16),
        rng.standard_normal((1, seq, d)).astype(BF16),
        (rng.standard_normal((e, d)) / np.sqrt(e)).astype(BF16),
        (1 + 0.1 * rng.standard_normal(d)).astype(BF16),
        (rng.standard_normal((d, 2 * inter)) / np.sqrt(d)).astype(BF16),
        (rng.standard_normal((inter, d)) / np.sqrt(inter)).astype(BF16),
    ]


def _reference(o, h, w_o, w_post, w_gu, w_dn):
    """float64, rounded to bf16 where the program stores a bf16 value the rest depends on."""

    def r(a):
        return a.astype(BF16).astype(np.float64)

    o, h, w_o, w_post, w_gu, w_dn = (a.astype(np.float64) for a in (o, h, w_o, w_post, w_gu, w_dn))
    o2 = r(r(o @ w_o) + h)
    x = r(o2 / np.sqrt((o2 * o2).mean(-1, keepdims=True) + 1e-6) * w_post)
    g, u = np.split(r(x @ w_gu), 2, axis=-1)
    act = r(r(g / (1 + np.exp(-g))) * u)
    return r(act @ w_dn) + o2


def _scratch(kern) -> dict:
    return {t: d for t, d in bytes_by_tensor(kern.nki).items() if t.startswith("scratch")}


def _check_reads_once(kern, args):
    by = bytes_by_tensor(kern.nki)
    for name, a in zip(("o", "h", "w_o", "w_post", "w_gu", "w_dn"), args):
        assert by[name] == {"read": a.nbytes, "write": 0}, (name, by[name])
    assert not _scratch(kern), _scratch(kern)


@pytest.mark.parametrize("seq", [128, 512, 2048])
def test_qwen3_sized_back_half_reads_each_tensor_once(seq):
    """Hidden 1024, O width 2048, intermediate 3072 (Qwen3-0.6B), bf16: o, h and every weight
    read once, y written once, nothing else crosses HBM (was o2 stored and read back at every
    size, and the normalised rows at 512 and 2048 (4 MiB at 512, 16 MiB at 2048), the
    (128, 3072) MLP intermediate at 128)."""
    shapes = [(1, seq, 2048), (1, seq, 1024), (2048, 1024), (1024,), (1024, 6144), (3072, 1024)]
    args = [np.zeros(s, BF16) for s in shapes]
    kern = nk.compile(back, *args)
    _check_reads_once(kern, args)
    assert bytes_by_tensor(kern.nki)["y"] == {"read": 0, "write": seq * 1024 * 2}
    assert kern.stats().hbm_traffic_ratio == pytest.approx(1.0)
    assert kern.stats().peak_sbuf_bytes <= nk.TRN2.sbuf_bytes_per_partition


@pytest.mark.parametrize("seq", [304, 100])
def test_back_half_matches_float64_with_a_partial_row_tile(seq):
    """304 rows (two full row tiles and 48 rows) or one partial row tile of 100, two
    intermediate blocks."""
    args = _inputs(seq, 256, 256, 1024, seed=3)
    g = nk.trace(back).trace(*args)
    kern = nk.compile(g)
    _check_reads_once(kern, args)
    ins = dict(zip(g.input_names, args))
    want = _reference(*args)
    # bf16 outputs: the program rounds o2, x, g, u, silu, act and y to bf16; a few bf16 ulps
    # of max|y| (differences in where fp32 sums round)
    tol = 0.03 * np.abs(want).max()
    for got in (kern.run(ins)["y"], nk.simulate(kern, ins)["y"]):
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=0, atol=tol)


def test_residual_read_elsewhere_is_still_stored():
    """o2 returned as a second output: it is stored once (an output), the MLP input still
    stays on chip."""

    def two(o, h, w_o, w_post, w_gu, w_dn):
        o2 = o @ w_o + h
        x = _rmsnorm(o2, w_post)
        g, u = np.split(x @ w_gu, 2, axis=-1)
        return (_silu(g) * u) @ w_dn + o2, o2

    args = _inputs(256, 256, 256, 512, seed=4)
    g = nk.trace(two).trace(*args)
    kern = nk.compile(g)
    assert not _scratch(kern), _scratch(kern)
    ins = dict(zip(g.input_names, args))
    names = list(g.outputs)
    assert bytes_by_tensor(kern.nki)[names[1]] == {"read": 0, "write": 256 * 256 * 2}
    out = kern.run(ins)
    want = _reference(*args)
    tol = 0.03 * np.abs(want).max()
    np.testing.assert_allclose(out[names[0]].astype(np.float64), want, rtol=0, atol=tol)
    o, h, w_o = (a.astype(np.float64) for a in args[:3])
    o2 = (o @ w_o).astype(BF16).astype(np.float64) + h
    np.testing.assert_allclose(out[names[1]].astype(np.float64), o2, rtol=0, atol=0.02 * np.abs(o2).max())


def _hbm_base(v):
    while isinstance(v.defining_op, HbmViewOp):
        v = v.defining_op.operand(0)
    return v


def test_o_projection_rows_are_pipelined_in_two_stages():
    """512 rows (4 row tiles): the prologue's row loop (O projection; residual, rmsnorm, xᵀ) is
    pipelined in two stages (stage_pipeline.prefers_stages), not interleaved: tile 0's xᵀ is
    staged into ``hᵀ`` before the last tile's O projection (interleaving all four tiles issued
    every O projection first, and the MLP's up projections waited for the last tile's chain).
    Results close to float64 NumPy on the interpreter and the simulator."""
    args = _inputs(512, 256, 256, 1024, seed=7)
    g = nk.trace(back).trace(*args)
    kern = nk.compile(g)
    w_o = kern.nki.inputs[g.input_names.index("w_o")]
    wo_tiles = {
        op.access("dst").tensor
        for op in kern.nki.body.walk()
        if isinstance(op, DmaCopyOp) and _hbm_base(op.access("src").tensor) is w_o
    }
    events = []  # o: an O-projection matmul; x: a copy of xᵀ into hᵀ
    for op in kern.nki.body.walk():
        if isinstance(op, MatmulOp) and op.access("moving").tensor in wo_tiles:
            events.append("o")
        elif isinstance(op, TensorCopyOp) and op.access("dst").tensor.name_hint.startswith("h_t"):
            events.append("x")
    assert events.count("x") == 4, events
    assert events.index("x") < len(events) - 1 - events[::-1].index("o"), "".join(events)
    _check_reads_once(kern, args)
    ins = dict(zip(g.input_names, args))
    want = _reference(*args)
    tol = 0.03 * np.abs(want).max()  # as in the partial-row-tile test above
    for got in (kern.run(ins)["y"], nk.simulate(kern, ins)["y"]):
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=0, atol=tol)


def test_o_staging_runs_a_tile_further_ahead():
    """512 rows (4 row tiles, straight): tile t+2's Oᵀ staging (the O projection's A
    transposes) is issued before tile t+1's O projection, so VectorE meets its PSUM copies
    before tile t+1's evacuation, which waits for those matmuls (stage_pipeline._straight_ahead):
    between the first and second tiles' O projections run two tiles' Oᵀ transposes, not one.
    Results close to float64 NumPy (the interpreter)."""
    args = _inputs(512, 256, 256, 1024, seed=10)
    g = nk.trace(back).trace(*args)
    kern = nk.compile(g)
    w_o = kern.nki.inputs[g.input_names.index("w_o")]
    wo_tiles = {
        op.access("dst").tensor
        for op in kern.nki.body.walk()
        if isinstance(op, DmaCopyOp) and _hbm_base(op.access("src").tensor) is w_o
    }
    o_locs = {
        op.loc
        for op in kern.nki.body.walk()
        if isinstance(op, MatmulOp) and op.access("moving").tensor in wo_tiles
    }
    events = ""  # o: an O-projection matmul; t: a transpose of its A operand
    for op in kern.nki.body.walk():
        if isinstance(op, MatmulOp) and op.access("moving").tensor in wo_tiles:
            events += "o"
        elif isinstance(op, TransposeOp) and op.loc in o_locs:
            events += "t"
    first_t = len(events) - len(events.lstrip("t"))
    after_first_o = events.lstrip("t").lstrip("o")
    between = len(after_first_o) - len(after_first_o.lstrip("t"))
    assert first_t > 0 and between == 2 * first_t, events
    ins = dict(zip(g.input_names, args))
    want = _reference(*args)
    tol = 0.03 * np.abs(want).max()  # as in the partial-row-tile test above
    np.testing.assert_allclose(kern.run(ins)["y"].astype(np.float64), want, rtol=0, atol=tol)


def test_row_tiles_are_skewed_in_the_block_loop():
    """In the loop over row tiles of an intermediate block, a row tile's element-wise chain
    is emitted right after its up projections, before the next row tile's (each engine runs
    its stream in order: ScalarE's silu of row tile 0 must not queue behind the PSUM copies of
    row tile 1), and its down projection after the next row tile's up projections."""
    args = _inputs(512, 256, 256, 1024, seed=5)
    kern = nk.compile(back, *args)
    bodies = [
        list(op.body)
        for op in kern.nki.body.walk()
        if isinstance(op, ForiLoopOp) and any(isinstance(o, TransposeOp) for o in op.body)
    ]
    assert bodies
    for body in bodies:

        def row_of(o):
            if isinstance(o, MatmulOp) and o.access("stationary").tensor.name_hint.startswith("h_t"):
                return str(o.access("stationary").dims[-1])
            return None

        rows = list(dict.fromkeys(r for r in map(row_of, body) if r is not None))
        assert len(rows) == 2, rows
        second_up = next(i for i, o in enumerate(body) if row_of(o) == rows[1])
        first_act = next(i for i, o in enumerate(body) if isinstance(o, ActivationOp))
        first_t = next(i for i, o in enumerate(body) if isinstance(o, TransposeOp))
        assert first_act < second_up < first_t


def test_act_transposes_run_between_projections():
    """512 rows, D = 1024 (two PSUM banks per down projection): in the block loop, row tile 0's
    actᵀ transposes run between row tile 1's first and second up projections, and row tile
    1's between the two banks of row tile 0's down projection — not each right before the
    down projection that reads it, where TensorE waited for their PSUM copy (mlp_block.skewed).
    Results close to float64 NumPy (the interpreter)."""
    args = _inputs(512, 256, 1024, 512, seed=8)
    g = nk.trace(back).trace(*args)
    kern = nk.compile(g)
    bodies = [
        list(op.body)
        for op in kern.nki.body.walk()
        if isinstance(op, ForiLoopOp) and any(isinstance(o, TransposeOp) for o in op.body)
    ]
    assert bodies
    for body in bodies:
        ups: dict = {}  # row (the h_t rows read) -> positions of its up projections
        downs = []  # (position, actᵀ tile read)
        for i, o in enumerate(body):
            if isinstance(o, MatmulOp):
                st = o.access("stationary")
                if st.tensor.name_hint.startswith("h_t"):
                    ups.setdefault(str(st.dims[-1]), []).append(i)
                elif st.tensor.name_hint.startswith("act_t"):
                    downs.append((i, st.tensor))
        trans = [i for i, o in enumerate(body) if isinstance(o, TransposeOp)]
        (up0, up1) = ups.values()
        half = len(up1) // 2  # gate, then up: one half each
        assert up1[half - 1] < trans[0] < up1[half], (up1, trans)
        first_act_t = downs[0][1]
        down0 = [i for i, t in downs if t is first_act_t]
        assert down0[0] < trans[-1] < down0[-1], (down0, trans)
    ins = dict(zip(g.input_names, args))
    want = _reference(*args)
    tol = 0.03 * np.abs(want).max()  # as in the partial-row-tile test above
    np.testing.assert_allclose(kern.run(ins)["y"].astype(np.float64), want, rtol=0, atol=tol)


def test_epilogue_rows_follow_the_last_blocks_down_projections():
    """512 rows, two intermediate blocks: the last block runs after the block loop, and each row
    tile's epilogue (rounding, residual add, store) right after that block's down projection of
    it — the first row tile's store of ``y`` comes before the last down projection, not after
    the whole loop. Results close to float64 NumPy (the interpreter)."""
    args = _inputs(512, 256, 256, 2048, seed=9)
    g = nk.trace(back).trace(*args)
    kern = nk.compile(g)
    y = next(iter(kern.nki.outputs.values()))
    events = []  # d: a down-projection matmul; s: a store of y
    for op in kern.nki.body.walk():
        if isinstance(op, MatmulOp) and op.access("stationary").tensor.name_hint.startswith("act_t"):
            events.append("d")
        elif isinstance(op, DmaCopyOp) and _hbm_base(op.access("dst").tensor) is y:
            events.append("s")
    assert "s" in events and events.index("s") < len(events) - 1 - events[::-1].index("d"), "".join(events)
    _check_reads_once(kern, args)
    ins = dict(zip(g.input_names, args))
    want = _reference(*args)
    tol = 0.03 * np.abs(want).max()  # as in the partial-row-tile test above
    np.testing.assert_allclose(kern.run(ins)["y"].astype(np.float64), want, rtol=0, atol=tol)


def _cap_rows(monkeypatch, most: int):
    """All the rows fit SBUF only up to ``most`` (as 2048 rows of Qwen3-0.6B do, 4096 not)."""
    orig = mlp_block.choose_block
    monkeypatch.setattr(
        mlp_block, "choose_block", lambda ctx, blk, plans, s: None if s > most else orig(ctx, blk, plans, s)
    )


def test_rows_that_do_not_fit_go_in_row_groups(monkeypatch):
    """1024 rows of which only 512 fit: two row groups, each staging its rows through the
    prologue and reading every weight (w_post too) once per group; o and h once, nothing else
    through HBM."""
    _cap_rows(monkeypatch, 512)
    args = _inputs(1024, 256, 256, 512, seed=6)
    g = nk.trace(back).trace(*args)
    kern = nk.compile(g)
    by = bytes_by_tensor(kern.nki)
    for name, a in zip(("o", "h"), args[:2]):
        assert by[name] == {"read": a.nbytes, "write": 0}, (name, by[name])
    for name, a in zip(("w_o", "w_post", "w_gu", "w_dn"), args[2:]):
        assert by[name] == {"read": 2 * a.nbytes, "write": 0}, (name, by[name])
    assert not _scratch(kern), _scratch(kern)
    ins = dict(zip(g.input_names, args))
    want = _reference(*args)
    tol = 0.03 * np.abs(want).max()  # as above
    for got in (kern.run(ins)["y"], nk.simulate(kern, ins)["y"]):
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=0, atol=tol)


def test_row_groups_without_a_prologue(monkeypatch):
    """A gated MLP on a kernel input (hᵀ loaded and transposed per row group) in two row
    groups: the weights read twice, no other change in traffic."""

    def mlp(x, w_gu, w_dn):
        g, u = np.split(x @ w_gu, 2, axis=-1)
        return (_silu(g) * u) @ w_dn + x

    rng = np.random.default_rng(7)
    x = rng.standard_normal((512, 256)).astype(BF16)
    w_gu = (rng.standard_normal((256, 1024)) / 16).astype(BF16)
    w_dn = (rng.standard_normal((512, 256)) / np.sqrt(512)).astype(BF16)
    g = nk.trace(mlp).trace(x, w_gu, w_dn)
    whole = bytes_by_tensor(nk.compile(g).nki)
    _cap_rows(monkeypatch, 256)
    kern = nk.compile(g)
    by = bytes_by_tensor(kern.nki)
    assert by["w_gu"]["read"] == 2 * w_gu.nbytes and by["w_dn"]["read"] == 2 * w_dn.nbytes
    assert whole["w_gu"]["read"] == w_gu.nbytes and whole["w_dn"]["read"] == w_dn.nbytes
    assert {t: d for t, d in by.items() if not t.startswith("w_")} == {
        t: d for t, d in whole.items() if not t.startswith("w_")
    }

    def r(a):
        return a.astype(BF16).astype(np.float64)

    xf, wg, wd = (a.astype(np.float64) for a in (x, w_gu, w_dn))
    gg, uu = np.split(r(xf @ wg), 2, axis=-1)
    want = r(r(r(gg / (1 + np.exp(-gg))) * uu) @ wd) + xf
    ins = {"x": x, "w_gu": w_gu, "w_dn": w_dn}
    tol = 0.03 * np.abs(want).max()  # bf16 roundings of g, u, act and y
    for got in (kern.run(ins)["y"], nk.simulate(kern, ins)["y"]):
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=0, atol=tol)
