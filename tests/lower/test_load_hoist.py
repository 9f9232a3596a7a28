"""Loads of kernel inputs issued earlier where the scheduled time drops
(transforms/lower/load_hoist.py): counts and order on the NKI IR of the Qwen3-0.6B layer of
benchmarks/model_targets.py, the same instructions and bytes, and results bit for bit equal to
the kernel without the move on the NKI interpreter (the move only reorders loads of inputs
nothing writes into tiles nothing reads before)."""

from __future__ import annotations

import functools

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import DmaCopyOp
from nkigen_lite.transforms.lower import deallocs, driver, front_keep, load_hoist

from .qwen3_kernels import model_targets, qwen3_layer_kernel, qwen3_layer_kernel_unhoisted


@functools.lru_cache(maxsize=2)
def _front_stored(hoist: bool) -> nk.Kernel:
    """The layer at seq 128 with q, k, v and O going through HBM (front_keep.py off, as before
    it kept one row tile's front): the attention's loads and stores then queue behind the
    weights' on the DMA queues and load_hoist.py's moves pay; ``hoist`` False: without them.
    The default kernel at seq 128 keeps them on chip and needs no move. The per-head columns
    (head_columns.py, decided on schedules taken after the move) are off in both, which would
    otherwise differ in them (722 against 758 executed instructions)."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(driver, "match_front_keep", lambda *a: None)
        m.setattr(deallocs, "split_head_columns", lambda *a: 0)
        if not hoist:
            m.setattr(deallocs, "hoist_loads", lambda *a: 0)
        return nk.compile(model_targets._qwen(128))


@functools.lru_cache(maxsize=2)
def _o_stored(hoist: bool) -> nk.Kernel:
    """The layer at seq 512 with O going through HBM (``front_keep.out_groups`` off, as before
    O stayed on chip with every KV head in one list-scheduled block): Wo's loads then wait
    behind the attention's and load_hoist.py's moves pay; ``hoist`` False: without them. The
    default kernel at seq 512 keeps O on chip and needs no move."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(front_keep, "out_groups", lambda *a: None)
        if not hoist:
            m.setattr(deallocs, "hoist_loads", lambda *a: 0)
        return nk.compile(model_targets._qwen(512))


def _kernels(seq: int) -> tuple[nk.Kernel, nk.Kernel]:
    """(hoisted, unhoisted) layer kernels whose loads load_hoist.py moves at ``seq``."""
    if seq == 128:
        return _front_stored(True), _front_stored(False)
    if seq == 512:
        return _o_stored(True), _o_stored(False)
    return qwen3_layer_kernel(seq), qwen3_layer_kernel_unhoisted(seq)


def _src_root(op):
    v = op.access("src").tensor
    d = v.defining_op
    return d.operand(0) if d is not None and d.name == "nki.hbm_view" else v


def _wo_loads(kern) -> list[int]:
    """Top-level positions of the DMAs loading the O projection's weight (input 5, w_o)."""
    w_o = kern.nki.body.args[5]
    return [i for i, op in enumerate(kern.nki.body) if isinstance(op, DmaCopyOp) and _src_root(op) is w_o]


def _attention(kern) -> list[int]:
    """Top-level positions of the attention's instructions (its exp or its softmax's row
    blocks, or the causal attention op's; loops included)."""
    return [
        i
        for i, top in enumerate(kern.nki.body)
        for op in (top.body.walk() if top.regions else [top])
        if (op.loc or "").startswith(("tensor.causal_attention", "tensor.exp", "row blocks"))
    ]


@pytest.mark.parametrize("seq", [128, 512])
def test_o_projection_weight_is_loaded_before_attention(seq):
    """The resident Wo is loaded by the same DMAs before the causal attention's instructions
    instead of after them, with the same executed instructions and bytes, and the schedule is
    shorter."""
    k, plain = _kernels(seq)
    assert k.input_names[5] == "w_o"
    wo_k, wo_p = _wo_loads(k), _wo_loads(plain)
    assert len(wo_k) == len(wo_p) > 0
    assert max(wo_k) < min(_attention(k))
    assert min(wo_p) > max(_attention(plain))
    assert k.stats().instructions_dynamic == plain.stats().instructions_dynamic
    assert k.stats().dma_bytes == plain.stats().dma_bytes
    assert k.estimate().scheduled_ns < plain.estimate().scheduled_ns


def _input_loads(kern, i: int) -> list[int]:
    """Top-level positions of the DMAs loading kernel input ``i``."""
    arg = kern.nki.body.args[i]
    return [j for j, op in enumerate(kern.nki.body) if isinstance(op, DmaCopyOp) and _src_root(op) is arg]


def test_groups_move_one_at_a_time():
    """seq 128 with the front stored (``_front_stored``), the MLP's blocks unrolled (their
    weights in top-level tiles): each group is placed from a schedule of the kernel as the
    groups before it left it and kept only when the schedule gets shorter. Wo and the first
    block's gate/up weights (input 11, w_gu) go before the attention; moved together from one
    schedule (as before), the MLP's weights took the DMA engines' idle time ahead of Wo, which
    stayed after the attention."""
    k, plain = _kernels(128)
    att = min(_attention(k))
    assert max(_input_loads(k, 5)) < att  # w_o
    assert min(_input_loads(k, 11)) < att  # w_gu, block 0
    assert min(_input_loads(plain, 11)) > max(_attention(plain))
    assert k.stats().dma_bytes == plain.stats().dma_bytes
    assert k.estimate().scheduled_ns < plain.estimate().scheduled_ns


def test_groups_are_loads_of_unwritten_inputs():
    """Every load the pass may move reads a kernel input nothing writes into a top-level tile."""
    k = qwen3_layer_kernel(128)
    groups = load_hoist._groups(k.nki)
    assert groups
    written = load_hoist._written_hbm(k.nki)
    for grp in groups:
        for op in grp.loads:
            assert _src_root(op) in set(k.nki.body.args) - written
            assert op.parent is k.nki.body


def test_hoisted_layer_is_bitwise_equal():
    """seq 128 (the front stored) on the NKI interpreter: the same outputs bit for bit as
    without the move."""
    g = model_targets._qwen(128)
    rng = np.random.default_rng(0)
    ins = {
        n: (rng.standard_normal(v.type.shape) * 0.05).astype(ml_dtypes.bfloat16)
        for n, v in zip(g.input_names, g.inputs)
    }
    k, plain = _kernels(128)
    assert _wo_loads(k) != _wo_loads(plain)
    (name,) = list(g.outputs)
    np.testing.assert_array_equal(k.run(ins)[name], plain.run(ins)[name])


def test_loads_with_a_runtime_index_stay():
    """A decode step's KV-cache loads take a runtime position (an operand defined by another
    instruction): they are never moved, and the kernel verifies."""
    from nkigen_lite.workloads import get_workload

    w = get_workload("qwen3_decode")
    k = nk.compile(w.graph())
    for grp in load_hoist._groups(k.nki):
        for op in grp.loads:
            src = op.access("src").tensor
            assert all(v is op.access("dst").tensor or v is src or v is _src_root(op) for v in op.operands)


def test_an_hbm_view_two_hoisted_groups_load_from_is_placed_once():
    """norm and einsum of one (1, 1) input: two hoisted load groups read through the same HBM
    view, which was appended twice (before: BuildError "nki.hbm_view is already in a block" at
    compile). Values vs float64 NumPy, f32 tolerance 1e-6 (one product, one square root)."""

    def fn(a):
        return np.linalg.norm(a, axis=-1), np.einsum("ki,kj->ij", a, a)

    x = np.array([[1.5]], np.float32)
    k = nk.compile(fn, x)
    want = fn(x.astype(np.float64))
    for got in (k.run({"a": x}), nk.simulate(k, {"a": x})):
        for g, w in zip(got.values(), want):
            np.testing.assert_allclose(g, w, rtol=1e-6)
