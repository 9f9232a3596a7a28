"""Collectives compiled: per-rank kernels lower, verify, emit ``nki.collectives`` calls, and run
across ranks on the rank-parallel NKI interpreter and as simulated ranks on the NumPy
simulator, against NumPy written here (float64 references, fp32 tolerances)."""

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import collective as C
from nkigen_lite.parallel import COLLECTIVE_OPS
from tests.parallel.test_collectives import one_instance

RTOL = 1e-6  # fp32 data, one rounding per op


def _rank_inputs(g, world, seed=0):
    rng = np.random.default_rng(seed)
    return [
        {n: rng.standard_normal(v.type.shape).astype(np.float32) for n, v in zip(g.input_names, g.inputs)}
        for _ in range(world)
    ]


def _numpy(kind, xs, r, world, **a):
    """Rank r's result of a collective, in float64 NumPy."""
    xs = [x.astype(np.float64) for x in xs]
    if kind == "all_reduce":
        return {"sum": sum(xs), "max": np.max(xs, 0), "min": np.min(xs, 0)}[a.get("op", "sum")]
    if kind == "all_gather":
        return np.concatenate(xs, a["axis"])
    if kind == "reduce_scatter":
        return np.split(sum(xs), world, a["axis"])[r]
    return np.concatenate([np.split(x, world, a["split_axis"])[r] for x in xs], a["concat_axis"])


CASES = [
    ("all_reduce", {}),
    ("all_reduce", {"op": "max"}),
    ("all_gather", {"axis": 0}),
    ("all_gather", {"axis": 1}),
    ("reduce_scatter", {"axis": 0}),
    ("reduce_scatter", {"axis": 1}),
    ("all_to_all", {"split_axis": 0, "concat_axis": 1}),
    ("all_to_all", {"split_axis": 1, "concat_axis": 0}),
    ("all_to_all", {"split_axis": 1, "concat_axis": 1}),
]


@pytest.mark.parametrize("world", [2, 4])
@pytest.mark.parametrize(("kind", "attrs"), CASES, ids=lambda c: str(c))
def test_compiled_collective_matches_numpy_on_interpreter_and_simulator(kind, attrs, world):
    b = nk.Builder("coll")
    x = b.add_input("x", (8, 12), nk.float32)
    y = getattr(b, kind)(x, world=world, **attrs)
    b.set_outputs({"y": b.exp(y) + 1.0})  # an ordinary op after it: the result is read back
    g = b.graph
    k = nk.compile(g)
    ins = _rank_inputs(g, world)
    want = [np.exp(_numpy(kind, [i["x"] for i in ins], r, world, **attrs)) + 1.0 for r in range(world)]
    ks = [k] * world
    for outs in (nk.run_kernel_ranks(ks, ins), nk.simulate_ranks(ks, ins)):
        for r in range(world):
            np.testing.assert_allclose(outs[r]["y"], want[r], rtol=RTOL, atol=RTOL)
    names = [op.name for op in k.nki.walk() if isinstance(op, C.CollectiveOp)]
    assert names == [f"nki.{kind}"]
    assert f"ncc.{kind}(" in k.nki_source()


@pytest.mark.parametrize("cls", COLLECTIVE_OPS, ids=lambda c: c.name)
def test_every_collective_lowers_to_its_nki_op_and_emits_the_documented_call(cls):
    k = nk.compile(one_instance(cls))
    short = cls.name.split(".")[1]
    (op,) = [o for o in k.nki.walk() if isinstance(o, C.CollectiveOp)]
    assert op.name == f"nki.{short}" and op.attrs["world"] == 2
    src = k.nki_source()
    assert "import nki.collectives as ncc" in src
    assert "replica_group=ncc.ReplicaGroup([[0, 1]])" in src
    assert ("collective_dim=0" in src) == (short != "all_reduce")
    text = str(k.nki)
    assert str(nk.parse(text)) == text  # the NKI op round-trips as text
    assert k.custom_call()["has_collectives"] is True


def test_all_reduce_of_bf16_folds_in_rank_order_in_fp32_and_every_rank_gets_the_same_bits():
    import ml_dtypes

    world = 4
    b = nk.Builder("ar")
    x = b.add_input("x", (4, 64), nk.bfloat16)
    b.set_outputs({"y": b.all_reduce(x, world=world) * 1.0})
    k = nk.compile(b.graph)
    rng = np.random.default_rng(3)
    ins = [{"x": (rng.standard_normal((4, 64)) * 10.0**r).astype(ml_dtypes.bfloat16)} for r in range(world)]
    acc = ins[0]["x"].astype(np.float32)
    for i in ins[1:]:
        acc = acc + i["x"].astype(np.float32)
    want = acc.astype(ml_dtypes.bfloat16)
    for outs in (nk.run_kernel_ranks([k] * world, ins), nk.simulate_ranks([k] * world, ins)):
        for o in outs:
            assert o["y"].tobytes() == want.tobytes()


def test_a_collective_reading_a_graph_output_copies_it_to_private_hbm_first():
    b = nk.Builder("out_then_reduce")
    x = b.add_input("x", (8, 12), nk.float32)
    y = b.exp(x)
    b.set_outputs({"y": y, "z": b.all_reduce(y, world=2), "g": b.all_gather(y, axis=0, world=2)})
    k = nk.compile(b.graph)  # the verifier refuses a collective on an output (shared HBM)
    ins = _rank_inputs(b.graph, 2)
    ey = [np.exp(i["x"].astype(np.float64)) for i in ins]
    for outs in (nk.run_kernel_ranks([k, k], ins), nk.simulate_ranks([k, k], ins)):
        for r in range(2):
            np.testing.assert_allclose(outs[r]["y"], ey[r], rtol=RTOL)
            np.testing.assert_allclose(outs[r]["z"], ey[0] + ey[1], rtol=RTOL)
            np.testing.assert_allclose(outs[r]["g"], np.concatenate(ey), rtol=RTOL)


def test_single_rank_run_refuses_a_collective_of_several_ranks():
    k = nk.compile(one_instance(C.AllReduceOp and nk.parallel.AllReduceOp))
    x = np.ones((4, 6), np.float32)
    with pytest.raises(
        nk.InterpretError, match=r"nki.all_reduce: a collective across 2 ranks.*nk\.nki\.run_ranks"
    ):
        k.run({"x": x})
    with pytest.raises(Exception, match=r"ncc.all_reduce: replica group \[\[0, 1\]\].*nk\.simulate_ranks"):
        nk.simulate(k, {"x": x})


def test_a_collective_of_one_rank_is_a_copy_everywhere():
    b = nk.Builder("one")
    x = b.add_input("x", (4, 6), nk.float32)
    b.set_outputs({"y": b.all_gather(x, axis=1, world=1) * 2.0})
    k = nk.compile(b.graph)
    x0 = np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32)
    np.testing.assert_array_equal(k.run({"x": x0})["y"], x0 * 2)
    np.testing.assert_array_equal(nk.simulate(k, {"x": x0})["y"], x0 * 2)


def test_ranks_reaching_different_collectives_get_one_error_naming_both():
    ka = nk.compile(one_instance(nk.parallel.AllReduceOp))
    kb = nk.compile(one_instance(nk.parallel.AllGatherOp))
    ins = [{"x": np.ones((4, 6), np.float32)}] * 2
    with pytest.raises(
        nk.InterpretError, match=r"rank 0 reached nki.all_reduce .* rank 1 reached nki.all_gather"
    ):
        nk.run_kernel_ranks([ka, kb], ins)
    with pytest.raises(Exception, match=r"ncc.all_(reduce|gather).*ncc.all_(reduce|gather)"):
        nk.simulate_ranks([ka, kb], ins)
