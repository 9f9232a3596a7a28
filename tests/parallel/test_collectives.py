"""Collective tensor ops: shape inference, verifier errors, text round trip, the single-rank
refusal and the rank-parallel interpreter against NumPy written here (their lowering:
test_collective_lowering.py)."""

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.parallel import AllReduceOp


def _graph(world, fn, shape=(4, 6), dtype=nk.float32):
    b = nk.Builder("coll")
    x = b.add_input("x", shape, dtype)
    b.set_outputs({"y": fn(b, x, world)})
    return b.graph


def _inputs(world, shape=(4, 6), dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    return [{"x": rng.standard_normal(shape).astype(dtype)} for _ in range(world)]


@pytest.mark.parametrize("world", [1, 2, 4])
@pytest.mark.parametrize("op", ["sum", "max", "min"])
def test_all_reduce_matches_numpy_and_is_bit_identical_on_every_rank(world, op):
    g = _graph(world, lambda b, x, w: b.all_reduce(x, op=op, world=w))
    ins = _inputs(world)
    outs = nk.run_ranks(g, ins, world=world, mode="float64")
    stack = np.stack([i["x"].astype(np.float64) for i in ins])
    want = {"sum": stack.sum(0), "max": stack.max(0), "min": stack.min(0)}[op]
    for o in outs:
        np.testing.assert_allclose(o["y"], want, rtol=1e-15, atol=1e-15)
        assert o["y"].tobytes() == outs[0]["y"].tobytes()


def test_all_reduce_sums_in_rank_order_so_results_are_bit_identical():
    # bf16 values whose sum depends on the order: every rank must see the rank-0..N-1 fold
    world = 4
    g = _graph(world, lambda b, x, w: b.all_reduce(x, world=w), shape=(64,), dtype=nk.bfloat16)
    rng = np.random.default_rng(1)
    import ml_dtypes

    ins = [{"x": (rng.standard_normal(64) * 10.0**r).astype(ml_dtypes.bfloat16)} for r in range(world)]
    outs = nk.run_ranks(g, ins, world=world)
    acc = ins[0]["x"].astype(np.float32)
    for i in ins[1:]:
        acc = acc + i["x"].astype(np.float32)  # fp32 accumulation, rank order
    want = acc.astype(ml_dtypes.bfloat16)
    for o in outs:
        assert o["y"].dtype == ml_dtypes.bfloat16
        assert o["y"].tobytes() == want.tobytes()


@pytest.mark.parametrize("world", [2, 3])
def test_all_gather_reduce_scatter_all_to_all_match_numpy(world):
    shape = (6, 12)
    ins = _inputs(world, shape)
    xs = [i["x"].astype(np.float64) for i in ins]
    gathered = nk.run_ranks(
        _graph(world, lambda b, x, w: b.all_gather(x, axis=-1, world=w), shape),
        ins,
        world=world,
        mode="float64",
    )
    rs = nk.run_ranks(
        _graph(world, lambda b, x, w: b.reduce_scatter(x, 0, world=w), shape),
        ins,
        world=world,
        mode="float64",
    )
    a2a = nk.run_ranks(
        _graph(world, lambda b, x, w: b.all_to_all(x, 1, 0, world=w), shape), ins, world=world, mode="float64"
    )
    total = sum(xs[1:], xs[0])
    for r in range(world):
        np.testing.assert_array_equal(gathered[r]["y"], np.hstack(xs))
        np.testing.assert_allclose(rs[r]["y"], total[r * 6 // world : (r + 1) * 6 // world], rtol=1e-15)
        blk = 12 // world
        np.testing.assert_array_equal(a2a[r]["y"], np.vstack([x[:, r * blk : (r + 1) * blk] for x in xs]))
        assert gathered[r]["y"].shape == (6, 12 * world)


def test_shapes_are_inferred():
    b = nk.Builder("s")
    x = b.add_input("x", (8, 12), nk.bfloat16)
    assert b.all_reduce(x, "max", world=4).type == x.type
    assert b.all_gather(x, 0, world=4).shape == (32, 12)
    assert b.reduce_scatter(x, 1, world=4).shape == (8, 3)
    assert b.all_to_all(x, 1, 0, world=4).shape == (32, 3)


def test_bad_collectives_get_clear_errors():
    b = nk.Builder("e")
    x = b.add_input("x", (6, 5), nk.float32)
    with pytest.raises(
        nk.BuildError,
        match=r"tensor\.reduce_scatter: axis 1 of .* has size 5, not "
        r"divisible by world 2",
    ):
        b.reduce_scatter(x, 1, world=2)
    with pytest.raises(
        nk.BuildError,
        match=r"tensor\.all_to_all: split_axis 1 .* size 5, not "
        r"divisible by world 4",
    ):
        b.all_to_all(x, 1, 0, world=4)
    with pytest.raises(nk.BuildError, match=r"tensor\.all_reduce: unknown reduction op 'prod'"):
        b.all_reduce(x, "prod", world=2)
    with pytest.raises(nk.BuildError, match=r"tensor\.all_gather: axis 2 is out of range"):
        b.all_gather(x, 2, world=2)
    with pytest.raises(nk.BuildError, match=r"tensor\.all_reduce: world 0 must be at least 1"):
        b.all_reduce(x, world=0)
    with pytest.raises(nk.BuildError, match=r"op"):  # the op class itself rejects unknown ops
        AllReduceOp([x], {"world": 2, "op": "mean"})


def test_text_round_trip_and_verifier():
    b = nk.Builder("rt")
    x = b.add_input("x", (8, 4), nk.float32)
    y = b.all_to_all(
        b.reduce_scatter(b.all_gather(b.all_reduce(x, "min", world=2), 1, world=2), 0, world=2), 0, 1, world=2
    )
    b.set_outputs({"y": y})
    text = str(b.graph)
    for name in ("all_reduce", "all_gather", "reduce_scatter", "all_to_all"):
        assert f"tensor.{name}" in text
    g2 = nk.parse(text)
    assert str(g2) == text
    g2.verify()
    bad = text.replace("{world = 2, axis = 0} : tensor<4x8xf32>", "{world = 3, axis = 0} : tensor<4x8xf32>")
    assert bad != text
    with pytest.raises(
        (nk.VerifyError, nk.ParseError),
        match=r"tensor\.reduce_scatter: axis 0 .*"
        r"not divisible by world 3",
    ):
        nk.parse(bad).verify()
    bad = text.replace("op = min", "op = mean")
    with pytest.raises((nk.VerifyError, nk.ParseError), match=r"tensor\.all_reduce"):
        nk.parse(bad).verify()


def test_single_rank_run_refuses_and_points_at_run_ranks():
    g = _graph(2, lambda b, x, w: b.all_gather(x, 0, world=w))
    with pytest.raises(
        nk.InterpretError,
        match=r"tensor\.all_gather is a collective across 2 "
        r"ranks.*nk\.run_ranks",
    ):
        nk.run(g, _inputs(1)[0])


def one_instance(cls, world=2):
    """A graph with one ``cls`` collective (followed by an ordinary op)."""
    short = cls.name.split(".")[1]
    args = {
        "all_reduce": {},
        "all_gather": {"axis": 0},
        "reduce_scatter": {"axis": 0},
        "all_to_all": {"split_axis": 0, "concat_axis": 1},
    }[short]
    return _graph(world, lambda b, x, w: getattr(b, short)(x, world=w, **args) * 2.0)


def test_ranks_that_disagree_get_a_clear_error():
    g1 = _graph(2, lambda b, x, w: b.all_reduce(x, world=w))
    g2 = _graph(2, lambda b, x, w: b.all_reduce(x, "max", world=w))
    with pytest.raises(
        nk.InterpretError,
        match=r"ranks disagree at a collective: rank 0 reached "
        r"tensor\.all_reduce .*rank 1",
    ):
        nk.run_ranks([g1, g2], _inputs(2), world=2)
    g3 = _graph(2, lambda b, x, w: x * 2.0)
    with pytest.raises(
        nk.InterpretError,
        match=r"finished while another rank waits at "
        r"tensor\.all_reduce",
    ):
        nk.run_ranks([g1, g3], _inputs(2), world=2)
    with pytest.raises(nk.InterpretError, match=r"world 2, but run_ranks runs world=3"):
        nk.run_ranks(g1, _inputs(3), world=3)
    with pytest.raises(nk.InterpretError, match=r"expected inputs for 2 ranks, got 3"):
        nk.run_ranks(g1, _inputs(3), world=2)
