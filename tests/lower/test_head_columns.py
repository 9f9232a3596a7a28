"""Per-head columns on ScalarE, one head at a time (lower/head_columns.py): the per-head
``rsqrt`` products of q's and k's norms become one ``tensor_scalar`` per head reading that
head's ``[P, 1]`` column, and their sums of squares one ``square`` activation per head with
``reduce_res``. On the 4 / 2-head layer of tests/lower/test_attention_out.py (one row tile)
the rewrite is applied to the compiled kernel: the NKI interpreter and the simulator give
results within bf16 tolerance (``TOL``) of float64 NumPy. On the Qwen3-0.6B layer at seq 2048
(the kernel the pass runs on) the counts of the rewritten instructions."""

from __future__ import annotations

import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import ActivationOp, TensorReduceOp, TensorScalarOp, TensorTensorOp
from nkigen_lite.nki.target import TRN2
from nkigen_lite.nki.verify import verify as nki_verify
from nkigen_lite.testing import assert_close
from nkigen_lite.transforms.lower import deallocs, head_columns

from .qwen3_kernels import qwen3_layer_kernel
from .test_attention_out import HEADS, KV, NAMES, TOL, _inputs, _reference, _run, layer


def _per_head_products(body) -> list:
    return [
        op
        for op in body
        if isinstance(op, TensorScalarOp)
        and op.access("operand0") is not None
        and len(op.access("dst").dims) == 3
    ]


def _per_head_squares(body) -> list:
    return [
        op
        for op in body
        if isinstance(op, ActivationOp)
        and op.attrs["reduce_res"] is not None
        and len(op.access("dst").dims) == 3
    ]


@pytest.fixture(scope="module")
def rewritten():
    """The one-tile layer compiled without the pass (nor head_halves.py), then rewritten by
    its plan."""
    args = _inputs(128, seed=11)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(deallocs, "split_head_columns", lambda *a: 0)
        m.setattr(deallocs, "split_head_chains", lambda *a: False)  # whole-head instructions
        kern = nk.compile(layer, *args)
    before = [op for op in kern.nki.body if isinstance(op, (TensorTensorOp, TensorReduceOp))]
    plans = head_columns.plan(kern.nki.body, TRN2)
    head_columns.apply(kern.nki.body, plans)
    for old, _, _ in plans:
        for o in old:
            o.drop_operand_uses()
    nki_verify(kern.nki)
    return kern, args, before, plans


def test_plan_rewrites_the_per_head_norms(rewritten):
    """q's and k's rsqrt products (4 and 2 heads) and their squares-and-sums are rewritten:
    6 tensor_scalar and 6 square activations, one per head, on ScalarE; the sums' reduces
    are gone. The input's and the post-attention norms (per row, 2-D) are not touched."""
    kern, _, before, plans = rewritten
    body = list(kern.nki.body)
    products, squares = _per_head_products(body), _per_head_squares(body)
    assert len(products) == HEADS + KV and len(squares) == HEADS + KV
    assert {op.engine for op in products + squares} == {"scalar"}
    assert all(op.access("operand0").free_size == 1 for op in products)
    assert all(op.access("dst").shape[1] == 1 for op in products + squares)
    reduces = [op for op in body if isinstance(op, TensorReduceOp)]
    assert all(op not in reduces for old, _, _ in plans for op in old)
    assert len(plans) == 4
    assert sum(isinstance(op, TensorReduceOp) for op in before) - 2 == len(reduces)


def test_rewritten_layer_matches_float64(rewritten):
    kern, args, _, _ = rewritten
    want = _reference(args)
    assert_close(_run(kern, args), want, nk.bfloat16, what="head columns, interpreter", **TOL)
    got = next(iter(nk.simulate(kern, dict(zip(NAMES, args))).values()))
    assert_close(got, want, nk.bfloat16, what="head columns, simulator", **TOL)


def test_what_is_rewritten():
    """A multiply by a column broadcast over D is rewritten, whichever operand holds it; one by
    a full tile (RoPE's cos, broadcast over the heads) is not; nor is a sum whose square also
    feeds another reader."""
    args = _inputs(128, seed=3)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(deallocs, "split_head_columns", lambda *a: 0)
        m.setattr(deallocs, "split_head_chains", lambda *a: False)  # whole-head instructions
        kern = nk.compile(layer, *args)
    tts = [op for op in kern.nki.body if isinstance(op, TensorTensorOp) and op.attrs["op"] == "multiply"]
    found = [op for op in tts if head_columns.column_multiply(op, TRN2) is not None]
    assert len(found) == 2  # q's and k's rsqrt products
    for op in found:
        full, col = head_columns.column_multiply(op, TRN2)
        assert op.access(col).dims[2].stride == 0 and op.access(full).dims[2].stride == 1
    sums = [op for op in kern.nki.body if head_columns.square_sum(op) is not None]
    assert len(sums) == 2


def test_layer_at_seq_2048_runs_per_head_columns_on_scalar():
    """The Qwen3-0.6B layer at seq 2048 (16 / 8 heads, 16 row tiles): per row tile 16 + 8
    per-head products and 16 + 8 per-head squares (ScalarE or, where the engine balance moved
    them, VectorE for the products); no per-head sum is left to VectorE's tensor_reduce."""
    kern = qwen3_layer_kernel(2048)
    body = list(kern.nki.body)
    products, squares = _per_head_products(body), _per_head_squares(body)
    assert len(products) == 16 * (16 + 8), len(products)
    assert len(squares) == 16 * (16 + 8), len(squares)
    assert {op.engine for op in squares} == {"scalar"}
    assert {op.engine for op in products} <= {"scalar", "vector"}
    per_head_reduces = [
        op for op in body if isinstance(op, TensorReduceOp) and len(op.access("data").dims) == 3
    ]
    assert per_head_reduces == []


def test_layer_at_seq_512_runs_per_head_columns_on_scalar():
    """The Qwen3-0.6B layer at seq 512 (4 row tiles, below balance_windows' cap: decided on
    copies after the staged engine balance, which is shorter with the rewrite): per row tile
    16 + 8 per-head products and squares, no per-head tensor_reduce left."""
    kern = qwen3_layer_kernel(512)
    body = list(kern.nki.body)
    products, squares = _per_head_products(body), _per_head_squares(body)
    assert len(products) == 4 * (16 + 8), len(products)
    assert len(squares) == 4 * (16 + 8), len(squares)
    assert {op.engine for op in squares} == {"scalar"}
    per_head_reduces = [
        op for op in body if isinstance(op, TensorReduceOp) and len(op.access("data").dims) == 3
    ]
    assert per_head_reduces == []


def _same_tile_neighbours(body) -> int:
    """Per-head ScalarE instructions (squares with ``reduce_res``, column products) directly
    followed in program order by one writing the same ``dst`` allocation."""
    ops = list(body)
    per_head = set(map(id, _per_head_products(ops) + _per_head_squares(ops)))
    return sum(
        1
        for x, y in zip(ops, ops[1:])
        if id(x) in per_head and id(y) in per_head and x.access("dst").tensor is y.access("dst").tensor
    )


def test_adjacent_head_halves_interleave():
    """With the chain in head halves (head_halves.py), the two halves' per-head runs follow each
    other and write different tiles: ``apply`` alternates them (q's 2 + 2 heads here; k's
    halves of one head each are runs too short to interleave). Numerics unchanged: the
    interpreter against float64 within bf16 tolerance (``TOL``)."""
    args = _inputs(128, seed=5)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(deallocs, "split_head_columns", lambda *a: 0)
        kern = nk.compile(layer, *args)
    plans = head_columns.plan(kern.nki.body, TRN2)
    runs = [new for _, new, _ in plans]
    assert sorted(len(r) for r in runs) == [1, 1, 1, 1, 2, 2, 2, 2]  # halves: q 2 + 2, k 1 + 1
    head_columns.apply(kern.nki.body, plans)
    for old, _, _ in plans:
        for o in old:
            o.drop_operand_uses()
    nki_verify(kern.nki)
    body = list(kern.nki.body)
    for r in runs:
        if len(r) == 2:  # q's halves: each of its instructions next to the other half's
            for op in r:
                i = body.index(op)
                assert body[i + 1] not in r and body[i - 1] not in r
    assert _same_tile_neighbours(body) == 0
    assert_close(_run(kern, args), _reference(args), nk.bfloat16, what="interleaved halves", **TOL)


@pytest.mark.parametrize("seq, tiles", [(512, 4), (2048, 16)])
def test_layer_alternates_head_halves(seq, tiles):
    """At seq 512 and 2048 (the chain in head halves at both since head_halves.py has no
    instruction cap) no per-head ScalarE instruction is followed by one writing the same tile
    (each would wait ~83 ns, the same-engine latency, after the other's write): every run of
    q's and k's per-head squares and products alternates between the two halves' tiles."""
    body = list(qwen3_layer_kernel(seq).nki.body)
    assert len(_per_head_products(body)) == tiles * (16 + 8)
    assert _same_tile_neighbours(body) == 0
