"""Knobs never lie: each accepted knob changes the NKI IR as documented (and the kernel stays
correct), every other knob is rejected with an error naming it (docs/lowering.md, "Knobs")."""

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import DmaCopyOp, ForiLoopOp, HbmViewOp

RNG = np.random.default_rng(5)


def _elementwise():
    b = nk.Builder("k")
    x = b.add_input("x", (256, 512), nk.float32)
    b.set_outputs({"y": b.exp(x) * 2.0})
    return b.graph


def _tile_rows(k) -> set[int]:
    return {
        op.access("dst").partitions
        for op in k.nki.walk()
        if isinstance(op, DmaCopyOp) and op.access("dst").space.value == "sbuf"
    }


def _trips(k) -> list[int]:
    return [op.trip_count for op in k.nki.walk() if isinstance(op, ForiLoopOp)]


def _loads(block, times: int = 1) -> int:
    """Executed loads from HBM (loops multiplied out)."""
    n = 0
    for op in block:
        if isinstance(op, ForiLoopOp):
            n += _loads(op.body, times * op.trip_count)
        elif isinstance(op, DmaCopyOp) and op.access("src").space.value == "hbm":
            n += times
    return n


def _correct(k, graph, inputs):
    ref = nk.run(graph, inputs, mode="float64")
    for name, got in k.run(inputs).items():
        np.testing.assert_allclose(got, ref[name], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("rows", [64, 32, 100])
def test_tile_size_sets_the_rows_of_every_tile(rows):
    base = nk.compile(_elementwise())
    k = nk.compile(_elementwise(), knobs={"x": {"tile_size": rows}})
    assert base.ir("nki") != k.ir("nki")
    assert _tile_rows(k) <= {rows, 256 % rows} and rows in _tile_rows(k)
    # one load per row tile (the loop may run them ahead of their use: lower/load_ahead.py)
    assert _loads(k.nki.body) == -(-256 // rows)
    _correct(k, _elementwise(), {"x": RNG.standard_normal((256, 512)).astype(np.float32)})


def test_tile_size_on_a_value_no_group_tiles_is_rejected():
    b = nk.Builder("mm")
    x = b.add_input("x", (256, 128), nk.float32)
    w = b.add_input("w", (128, 64), nk.float32)
    b.set_outputs({"y": x @ w})
    with pytest.raises(nk.BuildError, match="layout knob 'w': tile_size 64 has no effect"):
        nk.compile(b.graph, knobs={"w": {"tile_size": 64}})


def test_partition_dim_changes_which_dim_is_on_the_partitions():
    def g():
        b = nk.Builder("rows")
        x = b.add_input("x", (128, 256), nk.float32)
        b.set_outputs({"y": b.tanh(x)})
        return b.graph

    base = nk.compile(g())
    k = nk.compile(g(), knobs={"x": {"partition_dim": 1}})
    assert base.ir("nki") != k.ir("nki")

    def partition_strides(kernel):
        """HBM element stride of x between consecutive partitions of each load."""
        out = set()
        for op in kernel.nki.walk():
            if isinstance(op, DmaCopyOp) and op.access("dst").space.value == "sbuf":
                src = op.access("src")
                d = src.tensor.defining_op
                view = d if isinstance(d, HbmViewOp) else None
                strides = view.attrs["strides"] if view else (256, 1)
                out.add(strides[0] * src.dims[0].stride)
        return out

    assert partition_strides(base) == {256}  # rows of x on the partitions
    assert 256 not in partition_strides(k)  # columns of x (dim 1) on the partitions
    _correct(k, g(), {"x": RNG.standard_normal((128, 256)).astype(np.float32)})


@pytest.mark.parametrize(
    "knob, message",
    [
        ({"x": {"mem_space": "sbuf"}}, "'mem_space' is not supported: nkigen_lite places every value"),
        ({"x": {"reduction_tile": 32}}, "'reduction_tile' is not supported: reductions are tiled"),
        ({"x": {"tile": 32}}, r"unknown knob 'tile' \(known: partition_dim, tile_size\)"),
        ({"nope": {"tile_size": 32}}, "layout knob 'nope': no value"),
    ],
)
def test_other_knobs_are_rejected_naming_the_knob(knob, message):
    with pytest.raises(nk.BuildError, match=message):
        nk.compile(_elementwise(), knobs=knob)
