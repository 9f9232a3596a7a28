"""Unit tests of the lowering's pieces: fusion grouping, HBM homes, plans, deallocs, empty
tensors, reversals, row pipelines and cast elision (each checked on the IR it produces and,
where it computes, against NumPy)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import nkigen_lite as nk
from nkigen_lite.nki.ops import AllocOp, DeallocOp, DmaCopyOp, ForiLoopOp, TensorCopyOp
from nkigen_lite.nki.types import HbmType, TileType
from nkigen_lite.transforms.lower.groups import FusionGroup, form_groups
from nkigen_lite.transforms.lower.homes import nocopy_reshape_strides
from nkigen_lite.workloads import get_workload

from ..workload_kernels import workload_kernel


def _groups(graph):
    return [i for i in form_groups(graph).items if isinstance(i, FusionGroup)]


def test_softmax_is_one_fusion_group():
    assert [len(g.ops) for g in _groups(get_workload("softmax").graph())] == [5]


def test_rope_halves_share_one_group_so_q_is_loaded_once():
    groups = _groups(get_workload("rope").graph())
    assert len(groups) == 1


def test_reductions_over_different_axes_go_to_different_groups():
    b = nk.Builder("t")
    x = b.add_input("x", (4, 6), nk.float32)
    b.set_outputs({"a": b.sum(x, axis=0), "b": b.sum(x)})
    k = nk.compile(b.graph)
    a = np.random.default_rng(0).random((4, 6)).astype(np.float32)
    got = k.run({"x": a})
    np.testing.assert_allclose(got["a"], a.astype(np.float64).sum(0), rtol=1e-6)
    np.testing.assert_allclose(got["b"], a.astype(np.float64).sum(), rtol=1e-6)


@given(st.lists(st.integers(1, 4), min_size=1, max_size=4), st.data())
def test_nocopy_reshape_strides_reproduce_numpy(shape, data):
    a = np.arange(int(np.prod(shape))).reshape(shape)
    v = a.transpose(data.draw(st.permutations(range(len(shape)))))
    new = data.draw(st.permutations(list(v.shape)))
    elem_strides = tuple(s // a.itemsize for s in v.strides)
    strides = nocopy_reshape_strides(v.shape, elem_strides, tuple(new))
    if strides is not None:
        off = (v.__array_interface__["data"][0] - a.__array_interface__["data"][0]) // a.itemsize
        byte_strides = tuple(s * a.itemsize for s in strides)
        got = np.lib.stride_tricks.as_strided(a.ravel()[off:], new, byte_strides)
        assert np.array_equal(got, v.reshape(new))


@pytest.mark.parametrize("name", ["softmax", "layernorm", "attention", "swiglu_mlp", "rope", "matmul"])
def test_every_tile_is_deallocated_once_in_its_block(name):
    k = workload_kernel(name)

    def check(block):
        tiles = {
            op.result for op in block if isinstance(op, AllocOp) and isinstance(op.result.type, TileType)
        }
        freed = [op.operand(0) for op in block if isinstance(op, DeallocOp)]
        assert set(freed) == tiles and len(freed) == len(tiles)
        for op in block:
            if isinstance(op, ForiLoopOp):
                check(op.regions[0].block)

    check(k.nki.body)


def test_empty_outputs_and_reductions_follow_numpy():
    b = nk.Builder("t")
    x = b.add_input("x", (5, 4), nk.float32)
    e = x[3:1]
    b.set_outputs({"y": b.concat([e, x * 2.0], axis=0), "s": b.sum(e, axis=0), "z": e + 1.0})
    a = np.random.default_rng(1).random((5, 4)).astype(np.float32)
    got = nk.compile(b.graph).run({"x": a})
    assert got["z"].shape == (0, 4)
    np.testing.assert_array_equal(got["s"], np.zeros(4, np.float32))
    np.testing.assert_allclose(got["y"], a * 2.0, rtol=0)


def test_reversed_slices_copy_backwards():
    b = nk.Builder("t")
    x = b.add_input("x", (5, 7, 3), nk.float32)
    b.set_outputs({"y": x[::-1, 1:6:2, ::-2] * 2.0})
    a = np.random.default_rng(2).random((5, 7, 3)).astype(np.float32)
    np.testing.assert_array_equal(nk.compile(b.graph).run({"x": a})["y"], a[::-1, 1:6:2, ::-2] * 2.0)


def _hbm_allocs(graph):
    return [op.result for op in graph.body if isinstance(op, AllocOp) and isinstance(op.result.type, HbmType)]


@pytest.mark.parametrize("name", ["attention", "swiglu_mlp"])
def test_row_pipelines_keep_intermediates_on_chip(name):
    k = workload_kernel(name)
    assert [v.name_hint for v in _hbm_allocs(k.nki)] == list(k.output_names)  # no scratch
    loops = [op for op in k.nki.walk() if isinstance(op, ForiLoopOp)]
    assert not loops or all(op.attrs["upper"] - op.attrs["lower"] >= 1 for op in loops)
    assert k.stats().hbm_traffic_ratio == pytest.approx(1.0)


def test_widening_and_narrowing_casts_cost_no_instruction():
    g = get_workload("rmsnorm").graph(shape=(1, 128, 1024), dtype=nk.bfloat16)
    k = nk.compile(g)
    copies = [
        op
        for op in k.nki.walk()
        if isinstance(op, TensorCopyOp) and op.access("src").tensor.type.space.value == "sbuf"
    ]
    assert copies == []  # only PSUM evacuations remain
    w = get_workload("rmsnorm")
    inputs = w.inputs(g)
    from nkigen_lite.testing.tolerance import assert_close

    assert_close(k.run(inputs)["y"], w.reference(**inputs)["y"], nk.bfloat16)


def test_weight_casts_stay_in_the_fusion_group():
    k = nk.compile(get_workload("rmsnorm").graph(shape=(1, 128, 1024), dtype=nk.bfloat16))
    assert [v.name_hint for v in _hbm_allocs(k.nki)] == ["y"]
    dmas = [op for op in k.nki.walk() if isinstance(op, DmaCopyOp)]
    # x and w loaded once each; y stored once, in two column halves (tail_split.py)
    assert len(dmas) == 4 and k.stats().hbm_traffic_ratio == pytest.approx(1.0)
