"""Text format of NKI IR: every op round-trips exactly; registries cover every op."""

import pytest

import nkigen_lite as nk
from nkigen_lite.ir.op import OP_REGISTRY
from nkigen_lite.nki import ds, ts
from nkigen_lite.nki.interpret import NkiInterpreter
from nkigen_lite.nki.verify import PROGRAM_OPS
from nkigen_lite.nki.verify_ops import OP_RULES


def every_op_graph() -> nk.Graph:
    """A legal program that uses every NKI op (with optional operands in both forms)."""
    b = nk.nki.Builder("every_op")
    x = b.add_input("x", (256, 64), nk.float32)
    ids = b.add_input("ids", (128, 64), nk.int32)
    y = b.alloc((256, 64), nk.float32, "hbm", name="y")
    z = b.alloc((128, 64), nk.int32, "hbm", name="z")
    row = b.hbm_view(x, (128, 64), (0, 1), offset=64, name="row")  # row 1 broadcast
    with b.fori_loop(0, 2) as i:
        t = b.alloc((128, 64), nk.float32, name="t")
        u = b.alloc((128, 64), nk.float32, name="u")
        col = b.alloc((128, 1), nk.float32, name="col")
        ps = b.alloc((128, 128), nk.float32, "psum", name="ps")
        sq = b.alloc((128, 128), nk.float32, name="sq")
        pr = b.alloc((128, 64), nk.uint8, name="pred")
        b.dma_copy(dst=t, src=x[ts(i, 128), :])
        b.dma_copy(dst=u, src=row)
        b.memset(dst=col, value=0.5)
        b.iota(dst=sq, pattern=[[1, 128]], offset=i * 128 - 3, channel_multiplier=-1)
        b.activation(dst=u, op="exp", data=u, bias=col, scale=col, reduce_res=col)
        b.activation(dst=u, op="tanh", data=u, scale=-0.5)
        b.tensor_tensor(dst=t, data1=t, data2=u, op="maximum")
        b.tensor_scalar(
            dst=t,
            data=t,
            op0="subtract",
            operand0=col,
            reverse0=True,
            op1="multiply",
            operand1=2.0,
            engine="vector",
        )
        b.tensor_reduce(dst=col, op="add", data=t, axis=(1,), negate=True, keepdims=True)
        b.tensor_scalar(dst=pr, data=t, op0="greater", operand0=0.0)
        b.select(dst=u, predicate=pr, on_true=u, on_false=-1.0)
        b.select(dst=u, predicate=pr, on_true=u, on_false=t[:, 0:1], reverse_pred=True)
        b.affine_select(
            dst=t,
            pattern=[[-1, 64]],
            channel_multiplier=1,
            on_true_tile=t,
            on_false_value=-3.4028234663852886e38,
            cmp_op="greater_equal",
            offset=i,
        )
        b.nc_matmul(dst=ps[:, 0:64], stationary=sq, moving=t)
        b.nc_matmul(dst=ps[:, 0:64], stationary=sq, moving=t, accumulate=True)
        b.tensor_copy(dst=sq[:, 0:64], src=ps[:, 0:64], engine="scalar")
        b.nc_transpose(dst=ps[0:64, :], data=t)
        b.nc_transpose(dst=sq[0:32, ds(i * 32, 32)], data=t[0:32, 0:32], engine="vector")
        m8 = b.alloc((128, 8), nk.float32, name="m8")
        p8 = b.alloc((128, 8), nk.uint32, name="p8")
        b.max8(dst=m8, src=t)
        b.find_index8(dst=p8, data=t, vals=m8)
        b.match_replace8(dst=u, data=t, vals=m8, imm=-1.0)
        b.tensor_tensor_scan(dst=u, data0=t, data1=u, initial=col, op0="multiply", op1="add", reverse1=True)
        b.stream_shuffle(dst=u, src=t, mask=[(i + 1) % 32 for i in range(32)])
        st = b.alloc((128, 6), nk.float32, name="st")
        mv = b.alloc((128, 2), nk.float32, name="mv")
        b.bn_stats(dst=st, data=t)
        b.bn_aggr(dst=mv, data=st)
        b.dma_copy(dst=y[i * 128 : i * 128 + 128, :], src=t)
        for v in (t, u, col, ps, sq, pr, m8, p8, st, mv):
            b.dealloc(v)
    with b.fori_loop(0, 1) as i:
        with b.fori_loop(0, 2, step=1) as j:
            w = b.alloc((128, 32), nk.int32, name="w")
            b.dma_copy(dst=w, src=ids[:, ds(j * 32, 32)])
            b.tensor_tensor(dst=w, data1=w, data2=w, op="bitwise_xor")
            b.tensor_scalar(dst=w, data=w, op0="left_shift", operand0=3, op1="bitwise_or", operand1=1)
            b.dma_copy(dst=z[:, ds(2 * i + j * 32, 32, 1)], src=w)
            b.dealloc(w)
            rows = b.alloc((128, 1), nk.int32, name="rows")
            g = b.alloc((128, 32), nk.float32, name="g")
            b.iota(dst=rows, pattern=[[0, 1]], offset=j * 64, channel_multiplier=1)
            b.dma_gather(dst=g, src=x[:, ds(j * 32, 32)], index=rows)
            b.dma_scatter(dst=y[:, ds(j * 32, 32)], src=g, index=rows)
            b.dealloc(g)
            b.dealloc(rows)
    pid = b.program_id(1)  # a launch on one core: the id is 0
    rows16 = b.alloc((16, 128), nk.bfloat16, name="rows16")  # x[0:32] as 16 rows of 128, cast
    b.dma_copy(dst=rows16, src=b.hbm_view(x, (16, 128), (128, 1), name="x16"))
    cols16 = b.alloc((128, 16), nk.bfloat16, name="cols16")
    b.dma_transpose(dst=cols16, src=rows16)  # SBUF -> SBUF
    b.dealloc(cols16)
    b.dealloc(rows16)
    c = [b.alloc((128, 64), nk.int32, "hbm", name=f"c{k}") for k in range(5)]
    out = b.alloc((128, 64), nk.int32, "hbm", name="c")
    b.dma_copy(dst=c[0], src=ids[ds(pid * 128, 128), :])
    b.all_reduce(c[1], c[0], world=1, op="maximum")  # collectives of one rank: copies
    b.all_gather(c[2], c[1], world=1)
    b.reduce_scatter(c[3], c[2], world=1)
    b.all_to_all(c[4], c[3], world=1)
    b.dma_copy(dst=out, src=c[4])
    b.set_outputs({"y": y, "z": z, "c": out})
    return b.graph


def test_every_op_round_trips_exactly():
    g = every_op_graph()
    nk.nki.verify(g)
    text = str(g)
    g2 = nk.parse(text)
    assert str(g2) == text
    nk.nki.verify(g2)


def test_every_op_program_runs():
    import numpy as np

    rng = np.random.default_rng(0)
    out = nk.nki.run(
        every_op_graph(),
        {
            "x": rng.standard_normal((256, 64)).astype(np.float32),
            "ids": rng.integers(-9, 9, (128, 64)).astype(np.int32),
        },
    )
    np.testing.assert_array_equal(out["z"], np.ones((128, 64), np.int32))  # ((w ^ w) << 3) | 1
    assert out["y"].shape == (256, 64) and np.isfinite(out["y"]).all()


def test_every_nki_op_is_covered_by_text_interpreter_and_verifier():
    used = {op.name for op in every_op_graph().walk()}
    nki_ops = {name: cls for name, cls in OP_REGISTRY.items() if name.startswith("nki.")}
    assert set(nki_ops) == {c.name for c in nk.nki.ALL_OPS}
    for name, cls in nki_ops.items():
        assert name in used, f"{name} is missing from the round-trip program"
        assert NkiInterpreter.rule_for(cls) is not None, f"{name} has no interpreter rule"
        assert cls in OP_RULES or cls in PROGRAM_OPS, f"{name} has no verifier rule"


def test_handwritten_text_with_sugar_parses():
    text = """graph @k(%x: hbm<256x64xf32>) {
  %y = nki.alloc : hbm<256x64xf32>
  nki.fori_loop {lower = 0, upper = 2, step = 1} (%i: index) {
    %t = nki.alloc : tile<128x64xf32, sbuf>
    nki.dma_copy %t, %x[ts(%i, 128), 0:64]
    nki.tensor_scalar %t[0:128, 0:64:2], %t[0:128, ds(2*%i - %i*2 + 1, 32, 2)] {op0 = add, \
operand0 = 1.0, engine = vector}
    nki.tensor_scalar %t[0:128, 1:64:2], %t[0:128, 0:32] {op0 = add, operand0 = 1.0, engine = vector}
    nki.dma_copy %y[%i*128-0 : %i*128 + 128, 0:64], %t
    nki.dealloc %t
  }
  return y = %y
}
"""
    g = nk.parse(text)
    printed = str(g)
    assert "ds(%i*128, 128)" in printed and "ds(1, 32, 2)" in printed
    assert "%t[0:128, ds(0, 32, 2)]" in printed
    assert str(nk.parse(printed)) == printed


@pytest.mark.parametrize(
    "body,msg",
    [
        ("nki.dma_copy %t, %x[0:128]", "has 1 dims but the tensor has 2"),
        ("nki.dma_copy %t, %x[0:128, ds(%q, 64)]", "undefined value %q"),
        ("nki.dma_copy %t, %x[ds(%t, 128), 0:64]", "is not a loop index"),
        ("nki.dma_copy %t, %x[4:4, 0:64]", "must differ by a positive constant"),
        ("nki.tensor_tensor %t, %t, %t {op = divide, engine = vector}", "expected one of add"),
        ("nki.tensor_tensor %t, %t, %t {op = add}", "missing required attribute 'engine'"),
        ("nki.memset %t {value = 1.0, value = 2.0, engine = vector}", "given twice"),
    ],
)
def test_parse_errors_name_the_problem(body, msg):
    text = f"""graph @k(%x: hbm<128x64xf32>) {{
  %t = nki.alloc : tile<128x64xf32, sbuf>
  {body}
  nki.dealloc %t
  return
}}
"""
    with pytest.raises(nk.ParseError, match=msg):
        nk.parse(text)


def test_types_print_and_compare_by_value():
    from nkigen_lite.nki import HbmType, IndexType, TileType

    t = TileType((128, 512), nk.bfloat16, "psum")
    assert str(t) == "tile<128x512xbf16, psum>" and t == TileType([128, 512], "bf16", "psum")
    assert t != TileType((128, 512), nk.bfloat16, "sbuf")
    assert hash(t) == hash(TileType((128, 512), nk.bfloat16, "psum"))
    assert str(HbmType((2048, 4096), nk.float32)) == "hbm<2048x4096xf32>"
    assert str(IndexType()) == "index" and IndexType() == IndexType()
    with pytest.raises(nk.BuildError, match="partition dim and at least one free dim"):
        TileType((128,), nk.float32, "sbuf")
    with pytest.raises(nk.BuildError, match="use HbmType"):
        TileType((128, 4), nk.float32, "hbm")
