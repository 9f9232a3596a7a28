"""Few long rows of an element-wise group spread over all the partitions
(transforms/lower/long_rows.py): a decode-sized ``(8, 1440)`` chain runs on 128 partitions of
90 elements instead of 8 partitions of 1,440. Counts are read off the NKI IR (compile only for
the model size); results on small shapes against float64 NumPy on the NKI interpreter and the
simulator, with the per-dtype tolerances of nkigen_lite.testing (f32: 1e-5; bf16 clamped
SwiGLU: 2e-2, five bf16 roundings in the chain)."""

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import AllocOp, DeallocOp
from nkigen_lite.nki.target import TRN2
from nkigen_lite.testing import assert_close
from nkigen_lite.transforms.lower.long_rows import min_row, split_long_rows
from nkigen_lite.transforms.lower.plan import GroupPlan

BF16 = ml_dtypes.bfloat16


def _compute(kern):
    """The kernel's compute instructions (no DMAs, allocations or constant fills)."""
    return [
        op
        for op in kern.nki.walk()
        if not isinstance(op, (AllocOp, DeallocOp))
        and op.name not in ("nki.dma_copy", "nki.memset")
        and (op.loc or "").startswith("tensor.")
    ]


def _clamped_swiglu(g, u):
    g = np.minimum(g, 7.0)
    u = np.clip(u, -7.0, 7.0)
    return (u + 1.0) * (g * (1 / (1 + np.exp(-1.702 * g))))


def _swiglu_reference(g, u):
    g = np.minimum(np.asarray(g, np.float64), 7.0)
    u = np.clip(np.asarray(u, np.float64), -7.0, 7.0)
    return (u + 1.0) * g / (1.0 + np.exp(-1.702 * g))


def _check(kern, feeds, ref, dtype, **tol):
    feeds = dict(zip(kern.input_names, feeds))
    for how, got in (("NKI interpreter", kern.run(feeds)), ("simulator", nk.simulate(kern, feeds))):
        assert_close(next(iter(got.values())), ref, dtype, what=how, **tol)


def test_gpt_oss_clamped_swiglu_runs_on_all_partitions():
    spec = nk.TensorType((8, 1440), nk.bfloat16)
    kern = nk.compile(nk.trace(_clamped_swiglu).trace(spec, spec))
    ops = _compute(kern)
    assert ops and all(op.access("dst").partitions == 128 for op in ops)
    assert all(op.access("dst").free_size == 90 for op in ops)
    assert len(ops) <= 9  # one instruction per op, no row halves
    loads = [op for op in kern.nki.walk() if op.name == "nki.dma_copy"]
    assert len(loads) == 3 and all(op.access("dst").partitions == 128 for op in loads[:2])


def test_clamped_swiglu_small_bf16_matches_numpy():
    rng = np.random.default_rng(0)
    g = (3 * rng.standard_normal((4, 512))).astype(BF16)
    u = (3 * rng.standard_normal((4, 512))).astype(BF16)
    kern = nk.compile(_clamped_swiglu, g, u)
    assert all(op.access("dst").partitions == 128 for op in _compute(kern))  # 4 rows x 32 chunks of 16
    _check(kern, (g, u), _swiglu_reference(g, u), nk.bfloat16, rtol=2e-2, atol=2e-2)


def test_per_column_vectors_are_read_with_a_stride_zero_row_dim():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 512)).astype(np.float32)
    w = rng.standard_normal(512).astype(np.float32)
    b = rng.standard_normal(512).astype(np.float32)
    kern = nk.compile(lambda x, w, b: x * w + b, x, w, b)
    assert all(op.access("dst").partitions == 128 for op in _compute(kern))
    ref = x.astype(np.float64) * w.astype(np.float64) + b.astype(np.float64)
    _check(kern, (x, w, b), ref, nk.float32)


def test_per_row_columns_are_replicated_over_their_rows_chunks():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 512)).astype(np.float32)
    c = rng.standard_normal((4, 1)).astype(np.float32)
    kern = nk.compile(lambda x, c: x * c + 1.0, x, c)
    assert all(op.access("dst").partitions == 128 for op in _compute(kern))
    _check(kern, (x, c), x.astype(np.float64) * c.astype(np.float64) + 1.0, nk.float32)


def test_three_dim_rows_and_uneven_chunk_counts():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 360)).astype(np.float32)
    y = rng.standard_normal((2, 3, 360)).astype(np.float32)
    kern = nk.compile(lambda x, y: x * y - x, x, y)
    # 6 rows: at most 21 chunks a row; 20 divides 360 -> 120 partitions of 18 elements
    assert all(op.access("dst").partitions == 120 for op in _compute(kern))
    xd, yd = x.astype(np.float64), y.astype(np.float64)
    _check(kern, (x, y), xd * yd - xd, nk.float32)


def _plan(domain, roles):
    p = tuple(d for d, r in enumerate(roles) if r == "P")
    f = tuple(d for d, r in enumerate(roles) if r == "F")
    return GroupPlan(tuple(domain), tuple(roles), (), p, f, domain[p[0]], None)


class _Group:
    ops = ()


@pytest.mark.parametrize(
    "domain, loads, stores, why",
    [
        ((65, 1440), [(65, 1440)], [(65, 1440)], "more than half the partitions used already"),
        ((8, 1447), [(8, 1447)], [(8, 1447)], "no chunk count divides a prime row"),
        ((8, 1440), [(8, 1440)], [(8, 1)], "a stored value broadcast along the row"),
        ((8, 256), [(8, 256)], [(8, 256)], "a row of at most min_row(TRN2) = 256 elements"),
    ],
)
def test_plans_left_alone(domain, loads, stores, why):
    plan = _plan(domain, ("P", "F"))
    assert split_long_rows(plan, _Group(), 128, loads, stores, min_row(TRN2)) is plan, why


def test_split_plan_shape():
    plan = split_long_rows(_plan((8, 1440), ("P", "F")), _Group(), 128, [(1, 1440)], [(8, 1440)])
    assert plan.domain == (8, 16, 90) and plan.p_dims == (0, 1) and plan.f_dims == (2,)
    assert plan.rows == 128 and plan.split == (1, 90)
